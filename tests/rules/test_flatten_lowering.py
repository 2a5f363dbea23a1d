"""Flatten lowered to a Reshape (rules/flatten.py): every ONNX backend case, and shapes known or
not, axes from the end, empty tensors and every kind of element, bit for bit against
onnxruntime's kernel and the rule's reference at opsets 11, 13, 14 and the newest; what is
declined below opset 14 and why."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_elements,
    lowered_wholly,
    make_model,
    nested_forms,
    random_elements,
    runs_in_onnxruntime,
    slow_but_a_sample,
)
from version_cases import fed_data_sets, node_cases

import lowering
from lowering import schemas
from lowering.registry import rule_for

BACKEND_CASES = [case for case in node_cases() if case.name.startswith("test_flatten")]
TYPES = [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.INT64,
         TensorProto.UINT8, TensorProto.BOOL, TensorProto.STRING]  # fmt: skip


def flatten_model(element_type, shape, opset, axis=None):
    attributes = {} if axis is None else {"axis": axis}
    node = helper.make_node("Flatten", ["x"], ["y"], name="flatten", **attributes)
    x = helper.make_tensor_value_info("x", element_type, shape)
    y = helper.make_tensor_value_info("y", element_type, [None, None])
    return make_model([node], [x], [y], opset=opset)


def lowered(model):
    return lowered_wholly(model, "Flatten")


@pytest.mark.parametrize("case", BACKEND_CASES, ids=[case.name for case in BACKEND_CASES])
def test_backend_cases_give_their_expected_outputs(case):
    assert len(BACKEND_CASES) >= 8
    result = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        for got, want in zip(runs_in_onnxruntime(result, feeds), expected, strict=True):
            assert_same_bits(got, want, case.name)


SHAPES = [((2, 8), 2), ((2, 3, 4), 1), ((2, 3, 4), -1), ((2, 3, 4), 0), ((2, 3, 4), 3), ((5,), 1), ((), 0),
          ((3, 0, 2), 1), ((0, 4), 2), ((2, 3, 4, 5), -3)]  # fmt: skip
CASES = [
    (shape, axis, element_type, opset, known)
    for (shape, axis), element_type, opset, known in itertools.product(SHAPES, TYPES, (11, 13, 14, 21), (True, False))
    if (known and not (opset < 14 and 0 in shape)) or opset >= 14
    if schemas.accepts("Flatten", opset, element_type)
]


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize(("shape", "axis", "element_type", "opset", "known"), CASES)
def test_random_cases_bit_for_bit(shape, axis, element_type, opset, known):
    """Against onnxruntime's kernel (where it has it) and the reference; the shape stated, or
    every dimension unknown."""
    x = random_elements(element_type, shape, np.random.default_rng(7))
    model = flatten_model(element_type, list(shape) if known else [None] * len(shape), opset, axis)
    want = rule_for("", "Flatten").reference(x, axis=axis)
    original = runs_in_onnxruntime(model, {"x": x})
    if original is not None:
        assert_same_elements(original[0], want)
    result = lowered(model)
    assert_same_elements(runs_in_onnxruntime(result, {"x": x})[0], want)
    if known and 0 not in want.shape:  # (a constant shape holding no 0: no allowzero, which onnx2torch refuses)
        assert not [a for n in result.graph.node for a in n.attribute if a.name == "allowzero" and a.i]


def test_below_opset_14_a_shape_not_known_or_holding_a_0_is_declined():
    for model, why in [
        (flatten_model(TensorProto.FLOAT, [None, 3], 13), "shape is not known"),
        (flatten_model(TensorProto.FLOAT, [0, 3], 13), r"new shape \[0, 3\] holds a 0"),
    ]:
        with pytest.raises(lowering.LoweringError, match=why):
            lowering.lower(model, ops=["Flatten"], strict=True)


def test_what_the_rule_cannot_write_as_the_op_means_it_is_declined():
    """Below opset 9 no int64 Constant holds the new shape; an axis outside x's known rank is
    refused as the op refuses it, with the dimensions unknown too."""
    for model, why in [
        (flatten_model(TensorProto.FLOAT, [2, 3, 4], 8), "exists from opset 9"),
        (flatten_model(TensorProto.FLOAT, [None, None, None], 14, axis=5), "axis 5 lies outside x's rank 3"),
        (flatten_model(TensorProto.FLOAT, [None, None, None], 14, axis=-5), "axis -5 lies outside"),
    ]:
        with pytest.raises(lowering.LoweringError, match=why):
            lowering.lower(model, ops=["Flatten"], strict=True)


@pytest.mark.parametrize("axis", [2, 3, -2, -3])
def test_an_axis_outside_a_rank_known_only_at_run_time_fails_as_the_op_fails(axis):
    """x = Reshape(data, s), s fed (x's rank unknown): axis 2 or -2 of a rank-2 x runs, 3 or -3
    fails, in onnxruntime's Flatten and in the lowered model alike."""
    nodes = [helper.make_node("Reshape", ["data", "s"], ["x"]), helper.make_node("Flatten", ["x"], ["y"], axis=axis)]
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [24]),
              helper.make_tensor_value_info("s", TensorProto.INT64, [None])]  # fmt: skip
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], opset=14)
    result = lowered(model)
    feeds = {"data": np.arange(24, dtype=np.float32), "s": np.array([6, 4], np.int64)}
    if abs(axis) <= 2:
        want = rule_for("", "Flatten").reference(feeds["data"].reshape(6, 4), axis=axis)
        assert_same_elements(runs_in_onnxruntime(result, feeds)[0], want)
        assert_same_elements(runs_in_onnxruntime(model, feeds)[0], want)
        return
    for candidate in (model, result):
        with pytest.raises(Exception, match="(?i)axis|indices|out of (range|bounds)"):
            runs_in_onnxruntime(candidate, feeds)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN])
@pytest.mark.parametrize("where", ["if", "function"])
def test_lowered_inside_if_branches_and_a_local_function(where, element_type):
    """The rule lowers Flatten in both branches of an If and in a local function's body, bit
    for bit against the reference on either branch."""
    x = random_elements(element_type, (2, 3, 4), np.random.default_rng(3))
    model = nested_forms(flatten_model(element_type, [2, 3, 4], 21, axis=-1))[where]
    result = lowered(model)
    want = rule_for("", "Flatten").reference(x, axis=-1)
    for branch in (True, False):
        assert_same_elements(runs_in_onnxruntime(result, {"x": x, "branch": np.array(branch)})[0], want)
