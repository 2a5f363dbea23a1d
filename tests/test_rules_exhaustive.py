"""Every rule at every opset from the op's first to the newest, every input type, every
attribute combination: valid at full check, runs in onnxruntime, bit-identical answers
(every bit pattern for 8/16-bit types, edge values plus random patterns for wider ones)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support import every_op_case, oracle, runs_in_onnxruntime, type_name, unary_model

import lowering
from lowering.registry import all_rules
from lowering.runtime import run_onnxruntime, run_reference
from lowering.samples import sample_values

# Every rule that states its reference, from the registry: a new one is tested without a line here.
CASES = [
    (rule.op_type, opset, element_type, attributes)
    for rule in all_rules()
    if rule.reference is not None
    for opset, element_type in every_op_case(rule.op_type)
    for attributes in rule.attribute_combinations()
]


def test_every_rule_states_its_reference_or_depends_on_the_graph():
    for rule in all_rules():
        assert rule.reference is not None or rule.emits is not None, f"{rule.op_type}: no reference to check it by"
    assert {case[0] for case in CASES} >= {"IsNaN", "IsInf"}


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
