"""BitShift lowered to integer arithmetic (rules/bitshift.py): every type, both directions, at
opsets 11, 13 and the newest (signed types from 28), bit for bit against the rule's reference
(version 28's meaning) on every pair of 8-bit patterns and amounts, the extremes and powers of
two of the wider types by every amount from -70 to 70 (and the largest unsigned ones), and
against onnxruntime's kernel where it runs the original on amounts in range; broadcasting; the
opset below which it declines; and a runtime that gets signed shifts wrong (OpenVINO 2024.6's
profile) given the rule's nodes. The backend cases are checked by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from lowering.rules.bitshift import FIRST_OPSET, bitshift_reference
from onnx import TensorProto, helper
from support import assert_same_bits, lowered_wholly, make_model, nested_forms, runs_in_onnxruntime, slow_but_a_sample

import lowering
from lowering import schemas
from lowering.opcount import count_ops

UNSIGNED = [TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64]
SIGNED = [TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64]
NEWEST = schemas.newest_opset()
CASES = [
    (element_type, direction, opset)
    for element_type in UNSIGNED + SIGNED
    for direction in ("LEFT", "RIGHT")
    for opset in ((11, 13, NEWEST) if element_type in UNSIGNED else (NEWEST,))
    if element_type in schemas.input_element_types("BitShift", opset)
]


def shift_model(element_type: int, direction: str, opset: int, x_shape=("n",), y_shape=("n",), z_shape=("n",)):
    """z = BitShift(x, y, direction) at ``opset``."""
    node = helper.make_node("BitShift", ["x", "y"], ["z"], name="shift", direction=direction)
    inputs = [
        helper.make_tensor_value_info("x", element_type, list(x_shape)),
        helper.make_tensor_value_info("y", element_type, list(y_shape)),
    ]
    return make_model([node], inputs, [helper.make_tensor_value_info("z", element_type, list(z_shape))], opset=opset)


def shift_pairs(element_type: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, y) of an 8-bit type; else the extremes, 0, ±1, the powers of two and their
    neighbours, and random values, each by every amount from -70 to 70 and the type's largest."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    info = np.iinfo(dtype)
    if info.bits == 8:
        every = np.arange(info.min, info.max + 1).astype(dtype)
        return np.repeat(every, every.size), np.tile(every, every.size)
    chosen = {info.min, info.max, 0, 1, 2, 3, -1, -2, -3}
    chosen |= {s * 2**k + d for k in range(info.bits) for s in (1, -1) for d in (-1, 0, 1)}
    rng = np.random.default_rng(info.bits + (info.min < 0))
    bases = np.concatenate(
        [
            np.array(sorted(v for v in chosen if info.min <= v <= info.max), dtype),
            rng.integers(info.min, info.max, size=32, dtype=dtype, endpoint=True),
        ]
    )
    amounts = np.array(
        sorted({a for a in range(-70, 71) if info.min <= a <= info.max} | {int(info.max), int(info.max) - 1}),
        dtype,
    )
    return np.repeat(bases, amounts.size), np.tile(amounts, bases.size)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize(
    ("element_type", "direction", "opset"),
    CASES,
    ids=[f"{schemas.type_name(t)}-{d}-opset{o}" for t, d, o in CASES],
)
def test_shift_is_bit_for_bit(element_type, direction, opset):
    model = shift_model(element_type, direction, opset)
    lowered = lowered_wholly(model, "BitShift")
    x, y = shift_pairs(element_type)
    (got,) = runs_in_onnxruntime(lowered, {"x": x, "y": y})
    want = bitshift_reference(x, y, direction=direction)
    assert_same_bits(got, want)
    bits = x.dtype.itemsize * 8
    in_range = (y.astype(np.float64) >= 0) & (y.astype(np.float64) < bits)
    kernel = runs_in_onnxruntime(model, {"x": x[in_range], "y": y[in_range]})
    if kernel is not None:  # (onnxruntime has no BitShift-28; version 11 is defined in range only)
        assert_same_bits(got[in_range], kernel[0])


def test_the_reference_says_version_28s_examples():
    """The spec's own examples, and its words on amounts out of range."""
    uint = np.uint8
    assert bitshift_reference(np.array([1, 4], uint), np.array([1, 1], uint), direction="RIGHT").tolist() == [0, 2]
    assert bitshift_reference(np.array([1, 2], uint), np.array([1, 2], uint), direction="LEFT").tolist() == [2, 8]
    x, y = np.array([-128, -1, 5, 64], np.int8), np.array([8, -1, 9, 1], np.int8)
    assert bitshift_reference(x, y, direction="RIGHT").tolist() == [-1, -1, 0, 32]
    assert bitshift_reference(x, y, direction="LEFT").tolist() == [0, 0, 0, -128]
    assert bitshift_reference(np.array([-7], np.int16), np.array([1], np.int16), direction="RIGHT").tolist() == [-4]


@pytest.mark.parametrize("element_type", [TensorProto.INT16, TensorProto.UINT64], ids=schemas.type_name)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_inputs_broadcast(element_type, direction):
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = np.resize(np.array([np.iinfo(dtype).max, 1, 6, np.iinfo(dtype).min + 1], dtype), (3, 1, 4))
    y = np.arange(5, dtype=dtype).reshape(5, 1)
    opset = NEWEST if element_type == TensorProto.INT16 else 13
    model = shift_model(element_type, direction, opset, [3, 1, 4], [5, 1], [3, 5, 4])
    (got,) = runs_in_onnxruntime(lowered_wholly(model, "BitShift"), {"x": x, "y": y})
    assert got.shape == (3, 5, 4)
    assert_same_bits(got, bitshift_reference(x, y, direction=direction))


def test_converted_below_11_by_the_rule_and_refused_below_its_first_opset():
    """BitShift has no version below 11: converting down lowers it; below opset 10 (no Mod) the
    conversion is refused in the rule's words."""
    model = shift_model(TensorProto.UINT32, "LEFT", 11)
    converted = lowering.lower(model, target_opset=FIRST_OPSET, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    assert converted.opset_import[0].version == FIRST_OPSET and "BitShift" not in count_ops(converted)
    x, y = shift_pairs(TensorProto.UINT32)
    (got,) = runs_in_onnxruntime(converted, {"x": x, "y": y})
    assert_same_bits(got, bitshift_reference(x, y, direction="LEFT"))
    with pytest.raises(lowering.LoweringError, match=f"from opset {FIRST_OPSET}, not {FIRST_OPSET - 1}"):
        lowering.lower(model, target_opset=FIRST_OPSET - 1, ops=[])


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_openvino_2024_gets_the_rules_nodes_where_it_shifts_signed_types_wrong(direction):
    """OpenVINO 2024.6 shifts int8 by amounts in range right and gets negative inputs, negative
    amounts and amounts of the bit width wrong (its probed profile: partly); with --target the
    node is lowered by the rule, whose nodes its profile refuses none of, and means version 28."""
    model = shift_model(TensorProto.INT8, direction, 28)
    result = lowering.lower_model(model, target="openvino-2024.6")
    onnx.checker.check_model(result.model, full_check=True)
    assert "BitShift" not in count_ops(result.model)
    assert result.report.rewritten.get("BitShift-28") == 1
    x, y = shift_pairs(TensorProto.INT8)
    (got,) = runs_in_onnxruntime(result.model, {"x": x, "y": y})
    assert_same_bits(got, bitshift_reference(x, y, direction=direction))


def test_a_direction_neither_left_nor_right_is_left():
    model = shift_model(TensorProto.UINT8, "UP", 13)
    result = lowering.lower_model(model, ops=["BitShift"])
    assert "BitShift" in count_ops(result.model)
    assert "neither LEFT nor RIGHT" in "\n".join(result.report.lines())


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_inside_if_branches_and_local_functions(direction):
    """The node in both branches of an If and in a local function: lowered in each, the full
    checker passing, and bit for bit on int8's every pair, whichever branch runs."""
    model = shift_model(TensorProto.INT8, direction, NEWEST)
    x, y = shift_pairs(TensorProto.INT8)
    want = bitshift_reference(x, y, direction=direction)
    for label, nested in nested_forms(model).items():
        lowered = lowered_wholly(nested, "BitShift")
        for branch in (True, False):
            (got,) = runs_in_onnxruntime(lowered, {"x": x, "y": y, "branch": np.array(branch)})
            assert_same_bits(got, want, f"{label}, branch {branch}")
