"""The ONNX backend node test models taken to a target opset by onnx's converter and by us,
each result checked and run against the case's expected outputs (shared by the tests and
benchmarks/version_sweep.py)."""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from lowering.rules.dft import DFT_TOLERANCE

import lowering
from lowering.function_bodies import Tolerance
from lowering.verification.runtime import ReferenceRunner, run_onnxruntime

RTOL, ATOL = 1e-3, 1e-7  # the tolerances onnx's own backend tests use


@functools.cache
def node_cases() -> tuple:
    """Every backend node test case (``collect_testcases`` called once per session, for every op:
    None, which every onnx the package declares takes), kept between sessions in the user's cache
    folder, in a file named by onnx's and numpy's versions (collecting builds every case's
    expected outputs, seconds; reading them back takes a fraction of one)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "onnx-lower"
    kept = folder / f"backend-cases-onnx{onnx.__version__}-numpy{np.__version__}.pkl"
    with contextlib.suppress(Exception):  # (absent, or unreadable: collected again)
        return pickle.loads(kept.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        cases = tuple(collect_testcases(None))
    with contextlib.suppress(OSError):  # (written whole, then renamed: a reader never sees half)
        folder.mkdir(parents=True, exist_ok=True)
        partial = kept.with_suffix(f".{os.getpid()}.part")
        partial.write_bytes(pickle.dumps(cases))
        partial.replace(kept)
    return cases


def node_cases_of(op_type: str) -> dict:
    """The backend node cases holding an ``op_type`` node, by name, without the cases of its
    function body expanded (``_expanded``)."""
    return {
        case.name: case
        for case in node_cases()
        if any(node.op_type == op_type for node in case.model.graph.node) and "_expanded" not in case.name
    }


def fed_data_sets(case):
    """A backend case's data sets as (feeds by input name, expected outputs)."""
    for inputs, expected in case.data_sets:
        yield {info.name: value for info, value in zip(case.model.graph.input, inputs, strict=True)}, expected


@dataclass
class CaseOutcome:
    converter: str  # "runs", "fails", "invalid" (checker refuses its model), "does not run"
    ours: str  # "converts", "refuses", "crashes", "invalid" (the full checker refuses it), "does not run"
    original_runs: bool = False  # onnxruntime runs the case's own model
    comparable: bool = False  # ... and gives the expected outputs, so converted models are checked
    converter_wrong: bool = False  # it runs but gives other outputs than the case expects
    ours_wrong: bool = False
    detail: str = ""  # ours: the refusal, the crash, onnxruntime's error, or where the outputs differ
    converter_detail: str = ""  # the converter's error, the checker's, onnxruntime's, or the difference
    # sweep_case(..., reference=True), where onnxruntime left ours unverified (it does not run ours,
    # or the case is not comparable): "right", "wrong" or "cannot" by onnx.reference (see reference_verdict)
    reference: str = ""
    reference_detail: str = ""


def _feed(value):
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, list):
        return [_feed(item) for item in value]
    return value


def feeds_of(model: onnx.ModelProto, inputs: list) -> dict:
    return {info.name: _feed(value) for info, value in zip(model.graph.input, inputs, strict=False)}


def _numeric(value):
    """An output or expected value as numpy sees it: a TensorProto (how the cases store bfloat16,
    float8 and 4-bit values) read into an array, and ml_dtypes' types widened to float64 or int64
    so that numpy compares them as numbers."""
    value = _feed(value)
    if isinstance(value, np.ndarray) and value.dtype.type.__module__ == "ml_dtypes":
        try:
            ml_dtypes.finfo(value.dtype)
        except ValueError:
            return value.astype(np.int64)
        return value.astype(np.float64)
    return value


def same_outputs(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        a, b = _numeric(a), _numeric(b)
        if isinstance(b, list) or isinstance(a, list):
            if not (isinstance(a, list) and isinstance(b, list)) or not same_outputs(a, b):
                return False
            continue
        if a is None or b is None:
            if (a is None) != (b is None):
                return False
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def _first_line(error: Exception, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:limit]}{'...' * (len(text) > limit)}"


def _run(model: onnx.ModelProto, case) -> tuple[list[list] | None, str]:
    """The model's outputs on every data set of the case, or None and onnxruntime's error."""
    try:
        return [run_onnxruntime(model, feeds_of(model, inputs)) for inputs, _ in case.data_sets], ""
    except Exception as error:
        return None, _first_line(error)


def _outputs(model: onnx.ModelProto, case) -> list[list] | None:
    """The model's outputs on every data set of the case, or None where onnxruntime fails."""
    return _run(model, case)[0]


def _value_difference(got, want) -> str | None:
    """How one output differs from the expected one, or None where they agree."""
    if same_outputs([got], [want]):
        return None
    got, want = _numeric(got), _numeric(want)
    if isinstance(got, list) or isinstance(want, list) or got is None or want is None:
        return f"got {type(got).__name__}, expected {type(want).__name__}"
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} ({got.dtype}), expected {want.shape} ({want.dtype})"
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
        close = np.isclose(wide_got, wide_want, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        close = np.asarray(got == want)
    if close.ndim == 0:
        return f"{got} ({got.dtype}), expected {want} ({want.dtype})"
    where = tuple(int(i) for i in np.argwhere(~close)[0])
    return (
        f"{int((~close).sum())} of {close.size} values differ ({got.dtype}, expected {want.dtype}); "
        f"first at {where}: {got[where]}, expected {want[where]}"
    )


def difference(outputs: list[list], case) -> str:
    """Where a model's outputs first differ from the case's expected outputs."""
    return _difference_from(outputs, [want for _, want in case.data_sets])


def _difference_from(outputs: list[list], wanted: list[list]) -> str:
    for number, (got, want) in enumerate(zip(outputs, wanted, strict=True)):
        if len(got) != len(want):
            return f"data set {number}: {len(got)} outputs, expected {len(want)}"
        for index, (value, expected) in enumerate(zip(got, want, strict=True)):
            if (text := _value_difference(value, expected)) is not None:
                return f"data set {number}, output {index}: {text}"
    return ""


def _matches(outputs: list[list] | None, case) -> bool:
    return outputs is not None and all(
        same_outputs(got, want) for got, (_, want) in zip(outputs, case.data_sets, strict=True)
    )


@functools.cache
def _original(name: str) -> tuple[bool, bool]:
    """Whether onnxruntime runs the case's own model, and whether it gives the expected outputs
    (random ops and gaps in onnxruntime do not): only then are converted models compared."""
    case = next(c for c in node_cases() if c.name == name)
    outputs = _outputs(case.model, case)
    return outputs is not None, bool(case.data_sets) and _matches(outputs, case)


@functools.cache
def _fully_valid(name: str) -> bool:
    """Whether onnx's full checker takes the case's own model (a few, such as test_mvn, it
    does not: a conversion keeping such a node as it is cannot pass it either)."""
    case = next(c for c in node_cases() if c.name == name)
    try:
        onnx.checker.check_model(case.model, full_check=True)
    except Exception:
        return False
    return True


# onnx.reference, the second oracle: where onnxruntime cannot run ours or the case's own model does
# not give its expected outputs there, ours runs in onnx.reference instead.
REFERENCE_SECONDS = 5.0  # per model and case (all its data sets); past it, "cannot"

_RANDOM_DRAWS = (
    "Bernoulli draws random values: unseeded, every run draws anew; seeded, onnx.reference's Bernoulli "
    "and the RandomUniformLike of its body (what ours holds below 15) draw differently; only the "
    "distribution can agree"
)
_ROIALIGN_10 = (
    "onnx.reference runs RoiAlign-10 (ours) with RoiAlign-16's default coordinate_transformation_mode "
    "half_pixel, where version 10 has no such attribute and computes output_half_pixel (onnxruntime's "
    "RoiAlign-10 gives the expected outputs)"
)
# Cases onnx.reference cannot judge (it gives other outputs than onnx's semantics for ours, or
# the outputs are random), each with why: where ours misses there, the pair counts as "cannot",
# not "wrong".
KNOWN_REFERENCE_GAPS: dict[str, str] = {
    **dict.fromkeys(
        (f"test_bernoulli{kind}{twin}" for kind in ("", "_double", "_seed") for twin in ("", "_expanded")),
        _RANDOM_DRAWS,
    ),
    "test_range_bfloat16_type_positive_delta": (
        "ours holds Range's body, whose Loop stacks a scalar per iteration; onnx.reference's Loop stacks "
        "them with np.vstack, shape (n, 1) where ONNX says (n,) (onnxruntime's Loop gives (n,))"
    ),
    "test_roialign_aligned_false": _ROIALIGN_10,
    "test_roialign_mode_max": _ROIALIGN_10,
}

# Cases where ours is judged by the tolerance the rule lowering them states (its docstring and
# the adapter table of docs/target-opsets.md), not by the backend's, with the rule: its answer rounds differently.
STATED_TOLERANCES: dict[str, tuple[dict[int, Tolerance], str]] = {
    **dict.fromkeys(
        ("test_dft_inverse", "test_dft_inverse_opset19"),
        (DFT_TOLERANCE, "DFT below 17 or 20 as a MatMul by cosine and sine matrices (rules/dft.py)"),
    ),
}


class ReferenceTimeout(BaseException):
    """onnx.reference ran past REFERENCE_SECONDS (a BaseException: no ``except Exception`` in
    onnx.reference's own code can swallow it)."""


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Raise ReferenceTimeout in the main thread after ``seconds`` (elsewhere: no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise ReferenceTimeout(f"onnx.reference took over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _run_reference(model: onnx.ModelProto, case) -> tuple[list[list] | None, str]:
    """The model's outputs in onnx.reference on every data set of the case, or None and its error."""
    try:
        with _time_limit(REFERENCE_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner = ReferenceRunner(model)
            return [runner(feeds_of(model, inputs)) for inputs, _ in case.data_sets], ""
    except (Exception, ReferenceTimeout) as error:
        return None, _first_line(error)


@functools.cache
def _reference_original(name: str) -> tuple[list[list] | None, str, bool]:
    """The case's own model in onnx.reference: its outputs (or None and the error), and whether
    they are the expected ones."""
    case = next(c for c in node_cases() if c.name == name)
    outputs, error = _run_reference(case.model, case)
    return outputs, error, bool(case.data_sets) and _matches(outputs, case)


def reference_verdict(model: onnx.ModelProto, case) -> tuple[str, str]:
    """Whether ``model`` (ours, converted from the case) is right by onnx.reference: "right" where
    it gives the expected outputs there, or (where the case's own model does not either) the
    outputs the case's own model gives there (by the backend's tolerance, or the one its rule
    states for a case in STATED_TOLERANCES); else "wrong"; "cannot" where onnx.reference fails on
    either model, runs past its time, or ours misses for a case in KNOWN_REFERENCE_GAPS. The reason comes
    second (for "right", where the stated tolerance was needed)."""
    outputs, error = _run_reference(model, case)
    if outputs is None:
        return "cannot", f"onnx.reference fails on ours: {error}"
    if _matches(outputs, case):
        return "right", ""
    expected = [want for _, want in case.data_sets]
    original, original_error, original_matches = _reference_original(case.name)
    if not original_matches and original is not None:
        expected = original
    elif not original_matches:
        return "cannot", f"ours misses the expected outputs; the case's own model fails there: {original_error}"
    if all(same_outputs(got, want) for got, want in zip(outputs, expected, strict=True)):
        return "right", ""
    if case.name in STATED_TOLERANCES and _within_stated(outputs, expected, STATED_TOLERANCES[case.name][0]):
        return "right", f"within the stated tolerance of {STATED_TOLERANCES[case.name][1]}"
    if case.name in KNOWN_REFERENCE_GAPS:
        return "cannot", f"onnx.reference cannot judge this case: {KNOWN_REFERENCE_GAPS[case.name]}"
    if original_matches:
        return (
            "wrong",
            f"in onnx.reference, {_difference_from(outputs, expected)} (the case's own model gives them there)",
        )
    return "wrong", f"in onnx.reference, against the case's own model there: {_difference_from(outputs, expected)}"


def _within_stated(outputs: list[list], wanted: list[list], tolerances: dict[int, Tolerance]) -> bool:
    """Every float output within the tolerance stated for its element type, the rest equal."""
    for got_set, want_set in zip(outputs, wanted, strict=True):
        if len(got_set) != len(want_set):
            return False
        for got, want in zip(got_set, want_set, strict=True):
            got, want = np.asarray(_feed(got)), np.asarray(_feed(want))
            tolerance = tolerances.get(onnx.helper.np_dtype_to_tensor_dtype(want.dtype))
            if tolerance is None:
                if not same_outputs([got], [want]):
                    return False
            elif got.shape != want.shape or tolerance.mismatches(got, want).any():
                return False
    return True


def sweep_case(case, target: int, reference: bool = False) -> CaseOutcome:
    """Convert the case to ``target`` by onnx's converter and by us; run and compare each in
    onnxruntime. With ``reference``, where onnxruntime leaves ours unverified (it does not run
    ours, or the case is not comparable there), also judge ours by onnx.reference."""
    runs, comparable = _original(case.name)
    outcome = CaseOutcome(converter="fails", ours="crashes", original_runs=runs, comparable=comparable)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = onnx.version_converter.convert_version(case.model, target)
        except Exception as error:
            outcome.converter, outcome.converter_detail = "fails", _first_line(error)
        else:
            try:
                onnx.checker.check_model(converted, full_check=True)
            except Exception as error:
                outcome.converter, outcome.converter_detail = "invalid", _first_line(error)
            else:
                outputs, outcome.converter_detail = _run(converted, case)
                outcome.converter = "runs" if outputs is not None else "does not run"
                outcome.converter_wrong = outputs is not None and comparable and not _matches(outputs, case)
                if outcome.converter_wrong:
                    outcome.converter_detail = difference(outputs, case)
        try:
            ours = lowering.lower(case.model, target_opset=target, ops=[])
        except lowering.LoweringError as error:
            outcome.ours, outcome.detail = "refuses", str(error)
            return outcome
        except Exception as error:  # a bug: every failure must be a LoweringError
            outcome.ours, outcome.detail = "crashes", f"{type(error).__name__}: {error}"
            return outcome
    outcome.ours, outcome.detail, outcome.ours_wrong = judged(ours, case)
    unverified = outcome.ours == "does not run" or (outcome.ours == "converts" and not comparable)
    if reference and unverified:
        outcome.reference, outcome.reference_detail = reference_verdict(ours, case)
    return outcome


def ours_where_it_converts(case, target: int) -> CaseOutcome | None:
    """What ``sweep_case(case, target)`` says of ours where ours converts, else None: ours
    lowered and judged exactly as sweep_case lowers and judges it, without running onnx's
    converter, checking its model and running it first (most of a sweep's time). For a caller
    that reads what the converter does only where ours does not convert: ``ours_where_it_converts(
    case, target) or sweep_case(case, target)`` (where ours refuses, crashes, is invalid or does
    not run, the case is swept in full). The outcome's ``converter`` is then "not run"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ours = lowering.lower(case.model, target_opset=target, ops=[])
        except Exception:  # refused or crashed: sweep_case says which, and what the converter does
            return None
    verdict, detail, wrong = judged(ours, case)
    if verdict != "converts":
        return None
    runs, comparable = original_outcome(case)
    return CaseOutcome(
        converter="not run", ours=verdict, original_runs=runs, comparable=comparable, ours_wrong=wrong, detail=detail
    )


def original_outcome(case) -> tuple[bool, bool]:
    """Whether onnxruntime runs the case's own model, and whether it gives the expected outputs."""
    return _original(case.name)


def judged(ours: onnx.ModelProto, case) -> tuple[str, str, bool]:
    """A model made from the case (converted), checked in full and run on the case's data sets:
    ("invalid", the checker's message, False) where the checker refuses it and not the case's own
    model; ("does not run", onnxruntime's error, False); else ("converts", where its outputs first
    differ or "", whether they differ from the expected ones where the case's own model gives them)."""
    try:
        onnx.checker.check_model(ours, full_check=True)
    except Exception as error:  # refused where the case's own model is not: a bug
        if _fully_valid(case.name):
            return "invalid", _first_line(error), False
    outputs, detail = _run(ours, case)
    if outputs is None:
        return "does not run", detail, False
    wrong = _original(case.name)[1] and not _matches(outputs, case)
    return "converts", difference(outputs, case) if wrong else detail, wrong
