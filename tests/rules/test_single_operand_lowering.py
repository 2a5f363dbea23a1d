"""Max, Min, Sum and Mean of one operand lowered to an Identity (rules/single_operand.py): every
version from 6 at the opsets it is in force, every input type onnx.defs gives it, every bit
pattern of the 8- and 16-bit floats, edge values and random patterns of the wider ones, integers
over their whole range: bit for bit the operand, and onnxruntime's kernel but
where it quiets a signalling NaN (its float16 Sum and float Mean compute, measured: the Identity
keeps it, NaN for NaN, as the copying rules do); two operands declined in the rule's words;
inside If branches and a local function."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from lowering.rules.single_operand import OPS
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, random_elements, runs_in_onnxruntime, slow_but_a_sample

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for
from lowering.samples import sample_values

CASES = [
    (op_type, opset, element_type)
    for op_type in OPS
    for opset in rule_for("", op_type).since_versions  # (version v is in force at opset v)
    for element_type in sorted(schemas.input_element_types(op_type, opset))
]


def one_operand_model(op_type: str, opset: int, element_type: int, operands: int = 1):
    """y = op_type(x, ..., x) of ``operands`` operands, x 1-D of any length."""
    node = helper.make_node(op_type, ["x"] * operands, ["y"], name=f"{op_type.lower()}_node")
    x = helper.make_tensor_value_info("x", element_type, ["N"])
    return make_model([node], [x], [helper.make_tensor_value_info("y", element_type, ["N"])], opset=opset)


def operand_values(element_type: int) -> np.ndarray:
    """Every bit pattern of 8- and 16-bit floats, edge values and random patterns of wider ones;
    integers over their whole range with their extremes (the ops take numbers alone)."""
    if floats.is_float(element_type):
        return sample_values(element_type)
    drawn = random_elements(element_type, (4096,), np.random.default_rng(element_type))
    limits = np.iinfo(drawn.dtype)
    return np.concatenate([np.array([limits.min, limits.max, 0, 1], drawn.dtype), drawn])


def bits(values: np.ndarray) -> bytes | list:
    return values.tolist() if values.dtype == object else np.ascontiguousarray(values).tobytes()


def quieted(values: np.ndarray, element_type: int) -> np.ndarray:
    """``values`` with each signalling NaN made quiet (the top bit of its payload set), sign and
    payload kept; anything else as it is."""
    if not floats.is_float(element_type):
        return values
    unsigned = values.view(f"u{values.itemsize}").copy()
    mantissa = ml_dtypes.finfo(values.dtype).nmant
    with np.errstate(invalid="ignore"):
        nan = np.isnan(values.astype(np.float64))
    unsigned[nan] |= np.array(1 << (mantissa - 1), unsigned.dtype)
    return unsigned.view(values.dtype)


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize(
    ("op_type", "opset", "element_type"), CASES, ids=[f"{o}-opset{s}-{schemas.type_name(t)}" for o, s, t in CASES]
)
def test_one_operand_is_the_answer_bit_for_bit(op_type, opset, element_type):
    original = one_operand_model(op_type, opset, element_type)
    lowered = lowered_wholly(original, op_type)
    assert [node.op_type for node in lowered.graph.node] == ["Identity"]
    x = operand_values(element_type)
    (got,) = runs_in_onnxruntime(lowered, {"x": x})
    assert got.dtype == x.dtype and bits(got) == bits(x)
    kernel = runs_in_onnxruntime(original, {"x": x})
    if kernel is not None:  # (onnxruntime has no kernel of some versions and types)
        assert bits(kernel[0]) in (bits(got), bits(quieted(got, element_type)))


@pytest.mark.parametrize("op_type", OPS)
def test_two_operands_are_declined_in_the_rules_words(op_type):
    model = one_operand_model(op_type, 13, TensorProto.FLOAT, operands=2)
    result = lowering.lower_model(model, ops=[op_type])
    assert [node.op_type for node in result.model.graph.node] == [op_type]
    assert "2 operands are the op's own work: one alone is its answer" in "\n".join(result.report.lines())


def test_version_1_is_left_with_its_legacy_attribute():
    for op_type in OPS:
        assert rule_for("", op_type).since_versions == schemas.op_versions(op_type)[1:]
    model = one_operand_model("Max", 5, TensorProto.FLOAT)
    result = lowering.lower_model(model, ops=["Max"])
    assert [node.op_type for node in result.model.graph.node] == ["Max"]


def test_inside_if_branches_and_local_functions():
    x = sample_values(TensorProto.FLOAT16)
    for label, nested in nested_forms(one_operand_model("Max", 13, TensorProto.FLOAT16)).items():
        lowered = lowered_wholly(nested, "Max")
        for branch in (True, False):
            (got,) = runs_in_onnxruntime(lowered, {"x": x, "branch": np.array(branch)})
            assert bits(got) == bits(x), (label, branch)
