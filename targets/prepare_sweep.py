"""The proof of a target on its real runtime, part 1 (in this package's environment): for each
corpus export (golden/corpus) and each single-op backend case, write the model as exported, the
model made for the target (``lowering.lower_model(model, target=NAME, input_shapes=...)``,
the inputs' shapes stated) or why onnx-lower refused it, the inputs, and the outputs the model
must give (onnxruntime's on the export; the case's expected ones). Part 2,
``targets/run_sweep.py``, runs both through the runtime.

    python targets/prepare_sweep.py NAME FOLDER [--cases-only | --corpus-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import backend_cases, feed, main_node  # noqa: E402

import lowering  # noqa: E402
from lowering.verification.runtime import run_onnxruntime  # noqa: E402

CORPUS = HERE.parent / "golden" / "corpus"
CORPUS_RTOL, CORPUS_ATOL = 1e-3, 1e-5  # (an export's outputs against onnxruntime's: other kernels' sums)


def corpus_feeds(path: Path) -> dict[str, np.ndarray]:
    """The inputs an export of golden/corpus is run on (``input:NAME`` in the .npz beside it)."""
    data = np.load(path.with_suffix(".npz"))
    return {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}


def corpus_items():
    for path in sorted(CORPUS.glob("*.onnx")):
        model = onnx.load(path)
        feeds = corpus_feeds(path)
        yield path.stem, model, feeds, run_onnxruntime(model, feeds), CORPUS_RTOL, CORPUS_ATOL


def case_items():
    for case in backend_cases():
        if "_expanded" in case.name or main_node(case.model) is None or not case.data_sets:
            continue
        inputs, expected = case.data_sets[0]
        feeds = {info.name: feed(value) for info, value in zip(case.model.graph.input, inputs, strict=False)}
        if any(not _plain(value) for value in [*feeds.values(), *(feed(v) for v in expected)]):
            continue  # (sequences, optionals and ml_dtypes' types, which .npz files do not carry: not swept)
        yield case.name, case.model, feeds, [feed(value) for value in expected], case.rtol, case.atol


def dynamic(model: onnx.ModelProto) -> bool:
    """Whether an input's shape has a dimension that is not a number."""
    return any(not d.HasField("dim_value") for info in model.graph.input for d in info.type.tensor_type.shape.dim)


def _plain(value) -> bool:
    """An array of numbers or bools of one of numpy's own element types."""
    return isinstance(value, np.ndarray) and value.dtype.type.__module__ == "numpy" and value.dtype.kind in "biufc"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--cases-only", action="store_true")
    parser.add_argument("--corpus-only", action="store_true")
    args = parser.parse_args()
    items = []
    if not args.cases_only:
        items += list(corpus_items())
    if not args.corpus_only:
        items += list(case_items())
    index = []
    for name, model, feeds, expected, rtol, atol in items:
        folder = args.folder / name
        folder.mkdir(parents=True, exist_ok=True)
        onnx.save(model, folder / "exported.onnx")
        np.savez(folder / "inputs.npz", **feeds)
        if any(not isinstance(value, np.ndarray) for value in expected):
            continue
        np.savez(folder / "expected.npz", *[np.asarray(value) for value in expected])
        entry = {"name": name, "rtol": rtol, "atol": atol}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # (the inputs' shapes stated, as one deploying to a runtime of static shapes states them)
                shapes = {key: list(value.shape) for key, value in feeds.items()}
                result = lowering.lower_model(model, target=args.name, input_shapes=shapes if dynamic(model) else None)
            onnx.save(result.model, folder / "target.onnx")
        except lowering.LoweringError as error:
            entry["refused"] = " ".join(str(error).split())[:300]
        index.append(entry)
        print(name, "refused" if "refused" in entry else "lowered", flush=True)
    (args.folder / "index.json").write_text(json.dumps({"target": args.name, "items": index}, indent=1))


if __name__ == "__main__":
    main()
