"""Pytest options: ``--update-golden`` rewrites the expected files under golden/. The cases of a
test decorated with ``support.slow_but_a_sample`` are marked slow but for its sample. tests/fast/
is collected where the speed add-on is there. The sessions onnx-lower makes in the tests' process
run on one thread, and what collection made is kept out of the garbage collector's full passes
(the suite's time)."""

import gc
from pathlib import Path

import onnx
import pytest

FAST_TESTS = Path(__file__).parent / "fast"


def speed_add_on_present() -> bool:
    try:
        import lowering.fast  # noqa: F401
    except ImportError:
        return False
    return True


def pytest_ignore_collect(collection_path, config):
    """tests/fast/ tests the speed add-on (lowering/fast/): where it is deleted, nothing is there to test."""
    if Path(collection_path) == FAST_TESTS:
        return not speed_add_on_present() or None
    return None


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/**/*.lowered.onnxtxt from the current rules (review the diff!)",
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items):
    cases = {}
    for item in items:
        keep = getattr(getattr(item, "function", None), "fast_sample", None)
        if keep is not None:
            cases.setdefault(item.function, (keep, []))[1].append(item)
    for keep, group in cases.values():
        step = max(1, -(-len(group) // keep))
        for index, item in enumerate(group):
            if index % step:
                item.add_marker(pytest.mark.slow)


@pytest.fixture
def whole_inferences(monkeypatch) -> list[str]:
    """The graph name of each model onnx inference is asked about (the whole model's graph, or a
    function body's, "body", inferred alone), read from the model or its bytes as given."""
    asked: list[str] = []
    infer_shapes = onnx.shape_inference.infer_shapes

    def counting(model, *args, **kwargs):
        parsed = onnx.ModelProto.FromString(model) if isinstance(model, bytes) else model
        asked.append(parsed.graph.name)
        return infer_shapes(model, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counting)
    return asked


def pytest_configure(config):
    """The sessions onnx-lower makes in the tests' process (``runtime.session_options``: its
    verification, the command line run in-process) run on one thread: the tests' models are
    small, and starting a session's thread pool costs more than the pool saves. Sessions a test
    makes itself, and the command line run in a subprocess or in ``-j`` workers, keep
    onnxruntime's default."""
    from lowering.verification import runtime

    shipped = runtime.session_options

    def on_one_thread(optimized: bool = False):
        options = shipped(optimized)
        options.intra_op_num_threads = 1
        return options

    runtime.session_options = on_one_thread


def pytest_collection_finish(session):
    """What collection made (the backend cases, their data) lives to the end: kept out of the
    garbage collector's full passes."""
    gc.freeze()
