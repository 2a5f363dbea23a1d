"""Compress lowered to a Gather of NonZero's positions (rules/compress.py): values of every kind
of type (NaN payloads, -0, strings, bools), no axis, each axis and a negative one, conditions
shorter than, as long as and longer than the axis (true past it too), empty and all false, the
shapes known and not, at opsets 10, 11 and the newest, bit for bit against onnxruntime's kernel
and the rule's numpy reference; the opset below which it declines. The backend cases are checked
by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from lowering.rules.compress import FIRST_OPSET, compress_reference
from onnx import TensorProto, helper
from support import (
    assert_same_elements,
    lowered_wholly,
    make_model,
    nested_forms,
    random_elements,
    runs_in_onnxruntime,
    slow_but_a_sample,
)

import lowering
from lowering import schemas

TYPES = [
    TensorProto.FLOAT,
    TensorProto.FLOAT16,
    TensorProto.DOUBLE,
    TensorProto.INT8,
    TensorProto.INT64,
    TensorProto.BOOL,
    TensorProto.STRING,
    TensorProto.BFLOAT16,
]
CASES = [
    (element_type, opset)
    for element_type in TYPES
    for opset in (FIRST_OPSET, 11, schemas.newest_opset())
    if element_type in schemas.input_element_types("Compress", opset)  # (bfloat16 from version 28)
]
DIMS = [3, 4, 2]
CONDITIONS = {
    "shorter": [True, False],
    "as long": [False, True, True],
    "longer, true past the axis": [True, False, True, False, True, True, False, True, False, False, True, False, True,
                                   True, False, True, False, False, True, False, True, False, True, True, True],
    "empty": [],
    "all false": [False, False, False],
}  # fmt: skip


def compress_model(element_type: int, opset: int, axis: int | None, stated: list | None) -> object:
    """y = Compress(x, condition[, axis]) at ``opset``, x of ``stated`` dimensions (None: unknown)."""
    node = helper.make_node(
        "Compress", ["x", "condition"], ["y"], name="compress", **({} if axis is None else {"axis": axis})
    )
    inputs = [
        helper.make_tensor_value_info("x", element_type, stated),
        helper.make_tensor_value_info("condition", TensorProto.BOOL, [None]),
    ]
    rank = 1 if axis is None else len(DIMS)
    return make_model([node], inputs, [helper.make_tensor_value_info("y", element_type, [None] * rank)], opset=opset)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize(("element_type", "opset"), CASES, ids=[f"{schemas.type_name(t)}-opset{o}" for t, o in CASES])
def test_compress_is_bit_for_bit(element_type, opset):
    rng = np.random.default_rng(element_type + opset)
    x = random_elements(element_type, DIMS, rng)
    for axis in (None, 0, 1, 2, -1, -3):
        if axis is not None and axis < 0 and opset < 11:
            continue  # (Compress-9 takes no negative axis)
        if element_type == TensorProto.STRING and axis in (0, 1) and opset < 11:
            continue  # (declined: test_strings_along_another_axis_than_the_last_need_gather_elements)
        for stated in (DIMS, [None] * len(DIMS)):
            model = compress_model(element_type, opset, axis, stated)
            lowered = lowered_wholly(model, "Compress")
            for said, condition in CONDITIONS.items():
                feeds = {"x": x, "condition": np.array(condition, dtype=bool)}
                (got,) = runs_in_onnxruntime(lowered, feeds)
                want = compress_reference(x, feeds["condition"], axis=axis)
                assert got.shape == want.shape, (axis, stated, said)
                assert_same_elements(got, want)
                kernel = runs_in_onnxruntime(model, feeds)
                if kernel is not None:
                    assert_same_elements(got, kernel[0])


def test_the_cut_is_left_out_where_the_condition_is_known_not_longer():
    node = helper.make_node("Compress", ["x", "condition"], ["y"], name="compress", axis=1)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, DIMS),
        helper.make_tensor_value_info("condition", TensorProto.BOOL, [3]),
    ]
    model = make_model([node], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, None, 2])], opset=13)
    lowered = lowered_wholly(model, "Compress")
    assert [n.op_type for n in lowered.graph.node if n.op_type != "Constant"] == ["NonZero", "Reshape", "Gather"]
    x = np.arange(24, dtype=np.float32).reshape(DIMS)
    feeds = {"x": x, "condition": np.array([True, False, True])}
    (got,) = runs_in_onnxruntime(lowered, feeds)
    assert got.tolist() == x[:, [0, 2]].tolist()


@pytest.mark.parametrize("condition_shape", [[], [1, 2], [2, 2]], ids=["0-D", "1x2", "2x2"])
def test_a_condition_of_another_rank_is_read_flattened(condition_shape):
    """The checker takes a condition of any rank; onnxruntime's kernel reads it flattened."""
    node = helper.make_node("Compress", ["x", "condition"], ["y"], name="compress", axis=0)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        helper.make_tensor_value_info("condition", TensorProto.BOOL, condition_shape),
    ]
    model = make_model([node], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])], opset=13)
    lowered = lowered_wholly(model, "Compress")
    x = np.array([1, 2, 3], np.float32)
    condition = np.resize(np.array([True, False, False, True]), condition_shape)
    (got,) = runs_in_onnxruntime(lowered, {"x": x, "condition": condition})
    (kernel,) = runs_in_onnxruntime(model, {"x": x, "condition": condition})
    assert got.tolist() == kernel.tolist() == compress_reference(x, condition, axis=0).tolist()


def test_strings_along_another_axis_than_the_last_need_gather_elements():
    """onnxruntime's Gather of strings along an axis not the last keeps each slice's first string
    (rules/gathering.py): there strings are gathered by GatherElements, from opset 11."""
    for axis, lowered in ((None, True), (2, True), (0, False), (1, False)):
        model = compress_model(TensorProto.STRING, 10, axis, DIMS)
        result = lowering.lower_model(model, ops=["Compress"])
        assert ("Compress" not in [n.op_type for n in result.model.graph.node]) == lowered, axis
    assert "GatherElements, which does not exist at opset 10" in "\n".join(result.report.lines())


def test_declined_below_opset_10_in_its_words():
    model = compress_model(TensorProto.FLOAT, 9, 0, DIMS)
    result = lowering.lower_model(model, ops=["Compress"])
    assert [n.op_type for n in result.model.graph.node] == ["Compress"]
    assert "Slice takes no ends as an input at opset 9" in "\n".join(result.report.lines())


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.STRING], ids=schemas.type_name)
def test_inside_if_branches_and_local_functions(element_type):
    """The node in both branches of an If and in a local function: lowered in each, the full
    checker passing, and bit for bit with the reference, whichever branch runs."""
    x = random_elements(element_type, DIMS, np.random.default_rng(7))
    condition = np.array([True, False, True])
    want = compress_reference(x, condition, axis=0)
    for label, nested in nested_forms(compress_model(element_type, 13, 0, DIMS)).items():
        lowered = lowered_wholly(nested, "Compress")
        for branch in (True, False):
            (got,) = runs_in_onnxruntime(lowered, {"x": x, "condition": condition, "branch": np.array(branch)})
            assert got.shape == want.shape, (label, branch)
            assert_same_elements(got, want)
