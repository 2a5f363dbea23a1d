"""The golden cases: each original under golden/ is lowered and compared, as text, with its
expected ``.lowered.onnxtxt`` beside it; both models then run on shared edge-value inputs and
must agree bit for bit, compared by ``lowering.verify`` as ``onnx-lower verify`` compares.
``pytest tests/test_golden.py --update-golden`` rewrites the expected files (read the diff
before committing)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import onnx.printer
import pytest

import lowering
from lowering import floats
from lowering.samples import sample_values
from lowering.verification import verify

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LOWERED_SUFFIX = ".lowered.onnxtxt"
ORIGINALS = sorted(p for p in GOLDEN.rglob("*.onnxtxt") if not p.name.endswith(LOWERED_SUFFIX))


VERSION_CASE = re.compile(r"_to(\d+)(_keep)?$")


def lowering_options(original: Path) -> dict:
    """``NAME_to{N}`` lowers to opset N; ``NAME_to{N}_keep`` also keeps every op it can."""
    match = VERSION_CASE.search(original.name.removesuffix(".onnxtxt"))
    if match is None:
        return {}
    return {"target_opset": int(match.group(1)), **({"ops": []} if match.group(2) else {})}


def expected_path(original: Path) -> Path:
    return original.with_name(original.name.removesuffix(".onnxtxt") + LOWERED_SUFFIX)


def input_sets(model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
    """Edge-value feeds: every float input gets its type's samples; bools take both values."""
    fixed: dict[str, np.ndarray] = {}
    choices: dict[str, list[np.ndarray]] = {}
    for info in model.graph.input:
        element_type = info.type.tensor_type.elem_type
        if element_type == onnx.TensorProto.BOOL:
            choices[info.name] = [np.array(True), np.array(False)]
        elif floats.is_float(element_type):
            fixed[info.name] = _shaped(sample_values(element_type), info.type.tensor_type.shape)
        else:
            raise AssertionError(f"golden input {info.name} needs a sample generator")
    names = sorted(choices)
    return [
        {**fixed, **dict(zip(names, combination, strict=True))}
        for combination in itertools.product(*(choices[n] for n in names))
    ]


def _shaped(values: np.ndarray, shape: onnx.TensorShapeProto) -> np.ndarray:
    """The samples in the declared shape: the first symbolic dimension takes them all."""
    static = int(np.prod([d.dim_value for d in shape.dim if d.HasField("dim_value")] or [1]))
    dims, filled = [], False
    for dim in shape.dim:
        if dim.HasField("dim_value"):
            dims.append(dim.dim_value)
        else:
            dims.append(1 if filled else values.size // static)
            filled = True
    count = int(np.prod(dims)) if dims else 1
    return values[:count].reshape(dims)


def test_golden_cases_exist():
    assert len(ORIGINALS) >= 40
    assert {p.parent.name for p in ORIGINALS} >= {"isnan", "isinf", "subgraphs", "functions", "optional", "versions"}


@pytest.mark.parametrize("original_path", ORIGINALS, ids=[str(p.relative_to(GOLDEN)) for p in ORIGINALS])
def test_golden_case(original_path, request):
    original = onnx.parser.parse_model(original_path.read_text())
    result = lowering.lower_model(original, **lowering_options(original_path))
    lowered_text = onnx.printer.to_text(result.model) + "\n"
    expected = expected_path(original_path)
    if request.config.getoption("--update-golden"):
        expected.write_text(lowered_text)
    assert expected.exists(), f"no expected file; run pytest {__file__} --update-golden"
    assert lowered_text == expected.read_text()
    plain = lowering.lower(original, fast=False, **lowering_options(original_path))
    assert plain.SerializeToString() == result.model.SerializeToString(), "the plain algorithm gives the same bytes"

    assert result.report.complete, result.report.lines()
    lowered = onnx.parser.parse_model(expected.read_text())
    onnx.checker.check_model(lowered, full_check=True)
    report = verify(original, lowered, inputs=input_sets(original))
    assert report.match, "\n".join(report.lines())
