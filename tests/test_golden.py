"""The golden cases: each original under golden/ is lowered and compared, as text, with its
expected ``.lowered.onnxtxt`` beside it; both models then run on shared edge-value inputs and
must agree bit for bit, compared by ``lowering.verify`` as ``onnx-lower verify`` compares.
``pytest tests/test_golden.py --update-golden`` rewrites the expected files (read the diff
before committing) and records the onnx that wrote them in ``golden/ONNX_VERSION``: under any
other onnx (CI's job on the oldest declared dependencies) the text is not compared, as onnx's
printer and its function bodies differ between versions, and cases of an opset newer than the
installed onnx knows are skipped; every other check holds under every onnx."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import onnx.printer
import onnxruntime
import pytest
from support import newest_opset_onnxruntime_loads, slow_but_a_sample  # noqa: E402

import lowering
from lowering import floats, function_bodies
from lowering.function_bodies import Tolerance
from lowering.samples import sample_values
from lowering.verification import verify

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
LOWERED_SUFFIX = ".lowered.onnxtxt"
ORIGINALS = sorted(p for p in GOLDEN.rglob("*.onnxtxt") if not p.name.endswith(LOWERED_SUFFIX))
WRITTEN_BY = GOLDEN / "ONNX_VERSION"  # the onnx whose printer and bodies wrote the expected files


VERSION_CASE = re.compile(r"_to(\d+)(_keep)?$")
OPS_CASE = re.compile(r"_lower-([A-Za-z0-9-]+?)(?=_to\d|$)")


def lowering_options(original: Path) -> dict:
    """``NAME_to{N}`` lowers to opset N; ``NAME_to{N}_keep`` also keeps every op it can;
    ``NAME_lower-A-B`` (before any ``_to{N}``) lowers ops A and B instead of the seed ops."""
    stem = original.name.removesuffix(".onnxtxt")
    named = OPS_CASE.search(stem)
    options = {"ops": named.group(1).split("-")} if named else {}
    match = VERSION_CASE.search(stem)
    if match is None:
        return options
    return {**options, "target_opset": int(match.group(1)), **({"ops": []} if match.group(2) else {})}


def body_tolerance(original: Path) -> Tolerance | None:
    """The loosest tolerance the function bodies a case lowers state for float32 (None where the
    case lowers none: those compare bit for bit)."""
    found = [function_bodies.expansion_for("", op) for op in lowering_options(original).get("ops", [])]
    tolerances = [e.tolerance_for(onnx.TensorProto.FLOAT) for e in found if e is not None]
    return max(tolerances, key=lambda t: (t.rtol, t.atol), default=None)


def normal_inputs(model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
    """Standard normal float32 feeds (a body departs from a fused kernel at overflow and on
    NaN rows by design, as its formula states: edge values are for the bit-exact rules)."""
    rng = np.random.default_rng(0)
    feeds = {}
    for info in model.graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else 5 for d in info.type.tensor_type.shape.dim]
        feeds[info.name] = rng.standard_normal(dims).astype(np.float32)
    return [feeds]


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


@slow_but_a_sample()
@pytest.mark.parametrize("original_path", ORIGINALS, ids=[str(p.relative_to(GOLDEN)) for p in ORIGINALS])
def test_golden_case(original_path, request):
    original = onnx.parser.parse_model(original_path.read_text())
    opset = next(o.version for o in original.opset_import if o.domain in ("", "ai.onnx"))
    if opset > onnx.defs.onnx_opset_version():
        pytest.skip(f"opset {opset} is newer than onnx {onnx.__version__} knows")
    if opset > newest_opset_onnxruntime_loads():
        pytest.skip(f"onnxruntime {onnxruntime.__version__} loads no model of opset {opset}")
    result = lowering.lower_model(original, **lowering_options(original_path))
    lowered_text = onnx.printer.to_text(result.model) + "\n"
    expected = expected_path(original_path)
    if request.config.getoption("--update-golden"):
        expected.write_text(lowered_text)
        WRITTEN_BY.write_text(onnx.__version__ + "\n")
    assert expected.exists(), f"no expected file; run pytest {__file__} --update-golden"
    if WRITTEN_BY.read_text().strip() == onnx.__version__:
        assert lowered_text == expected.read_text()
    plain = lowering.lower(original, fast=False, **lowering_options(original_path))
    assert plain.SerializeToString() == result.model.SerializeToString(), "the plain algorithm gives the same bytes"

    assert result.report.complete, result.report.lines()
    lowered = result.model
    onnx.checker.check_model(lowered, full_check=True)
    tolerance = body_tolerance(original_path)
    if tolerance is None:
        report = verify(original, lowered, inputs=input_sets(original))
    else:
        report = verify(original, lowered, inputs=normal_inputs(original), rtol=tolerance.rtol, atol=tolerance.atol)
    assert report.match, "\n".join(report.lines())


def test_function_body_cases_exist():
    lowered_ops = {op for p in ORIGINALS for op in lowering_options(p).get("ops", [])}
    assert {"LayerNormalization", "Gelu", "Attention"} <= lowered_ops
