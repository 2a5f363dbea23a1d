"""Every rule at every opset from the op's first to the newest, every input type, every
attribute combination: valid at full check, runs in onnxruntime, bit-identical answers
(every bit pattern for 8/16-bit types, edge values plus random patterns for wider ones)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support import every_op_case, oracle, runs_in_onnxruntime, type_name, unary_model

import lowering
from lowering.runtime import run_onnxruntime, run_reference
from lowering.samples import sample_values

ISINF_FLAGS = [(1, 1), (1, 0), (0, 1), (0, 0)]

CASES = [("IsNaN", opset, t, {}) for opset, t in every_op_case("IsNaN")] + [
    ("IsInf", opset, t, {"detect_positive": pos, "detect_negative": neg})
    for opset, t in every_op_case("IsInf")
    for pos, neg in ISINF_FLAGS
]


def _case_id(case) -> str:
    op_type, opset, element_type, attributes = case
    flags = "".join(f"_{k[7:10]}{v}" for k, v in attributes.items())
    return f"{op_type}-opset{opset}-{type_name(element_type)}{flags}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_lowering_is_exact(case):
    op_type, opset, element_type, attributes = case
    original = unary_model(op_type, opset, element_type, **attributes)
    result = lowering.lower_model(original)

    lowered = result.model
    onnx.checker.check_model(lowered, full_check=True)
    assert all(node.op_type != op_type for node in lowered.graph.node)
    assert result.report.complete and sum(result.report.rewritten.values()) == 1
    assert lowered.opset_import == original.opset_import

    values = sample_values(element_type)
    expected = oracle(op_type, values, **attributes)
    (got,) = run_onnxruntime(lowered, {"x": values})
    assert got.dtype == np.bool_
    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, (
        f"{mismatches.size} mismatches, first at bits {values[mismatches[:3]].view(f'u{values.itemsize}')}"
    )

    native = runs_in_onnxruntime(original, {"x": values})
    reference = native if native is not None else run_reference(original, {"x": values})
    assert np.array_equal(reference[0], got)
