"""OneHot lowered to an Equal of the indices with the classes and a Gather of the values
(rules/onehot.py): random indices in and outside [-depth, depth-1] of every index type, values of
several types (NaN payloads, -0, strings), every axis, depth constant and given at run time, at
opsets 9, 11 and the newest, bit for bit against onnxruntime's kernel where it has one and the
rule's numpy reference; what is declined and why. The backend cases are checked against their
expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_elements,
    assert_same_values,
    lowered_wholly,
    make_model,
    nested_forms,
    random_elements,
    runs_in_onnxruntime,
    slow_but_a_sample,
)

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for

INDEX_TYPES = [
    TensorProto.INT64,
    TensorProto.INT32,
    TensorProto.INT8,
    TensorProto.UINT8,
    TensorProto.UINT64,
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.FLOAT16,
]
VALUE_TYPES = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING, TensorProto.FLOAT16]


def reference(indices, depth, values, axis=-1):
    return rule_for("", "OneHot").reference(indices, depth, values, axis=axis)


def onehot_model(index_type, value_type, shape, opset, *, axis=-1, depth=None, depth_type=TensorProto.INT64):
    """y = OneHot(i, d, v, axis); d an input or a constant of one element."""
    node = helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="onehot", axis=axis)
    inputs = [helper.make_tensor_value_info("i", index_type, shape)]
    initializer = []
    if depth is None:
        inputs.append(helper.make_tensor_value_info("d", depth_type, []))
    else:
        initializer.append(floats.tensor(np.array([depth], floats.numpy_dtype(depth_type)), "d"))
    inputs.append(helper.make_tensor_value_info("v", value_type, [2]))
    output = helper.make_tensor_value_info("y", value_type, [None] * (len(shape) + 1))
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def indices_of(index_type, shape, depth, rng):
    """Indices in and around [-depth, depth-1] (floats with fractions), and the type's extremes."""
    dtype = np.dtype(floats.numpy_dtype(index_type))
    if dtype.kind == "f":  # (fractions only where they truncate within range: see test_float_indices_*)
        whole = rng.integers(-depth - 2, depth + 3, shape)
        interior = (whole > -depth) & (whole < depth - 1)
        values = whole + np.where(interior, np.sign(whole) * rng.uniform(0, 0.9, shape), 0)
    else:
        low = 0 if dtype.kind == "u" else -depth - 2
        values = rng.integers(low, depth + 3, shape)
    values = values.astype(dtype)
    flat = values.reshape(-1)
    if flat.size >= 2 and dtype.kind != "f":
        flat[:2] = [np.iinfo(dtype).min, np.iinfo(dtype).max]
    return values


def values_of(value_type, rng):
    if value_type in (TensorProto.FLOAT, TensorProto.FLOAT16):
        dtype = floats.numpy_dtype(value_type)
        bits = np.array([0x8000, 0x7E01] if value_type == TensorProto.FLOAT16 else [0x80000000, 0xFFC00123])
        return bits.astype(f"u{np.dtype(dtype).itemsize}").view(dtype)  # -0 off, a NaN with a payload on
    return random_elements(value_type, [2], rng)


def check_lowered(model, feeds, axis, where):
    lowered = lowered_wholly(model, "OneHot")
    got = runs_in_onnxruntime(lowered, feeds)
    assert got is not None, f"{where}: the lowered model does not run in onnxruntime"
    depth = feeds["d"] if "d" in feeds else onnx.numpy_helper.to_array(model.graph.initializer[0])
    want = reference(feeds["i"], depth, feeds["v"], axis)
    assert_same_elements(got[0], want)
    kernel = runs_in_onnxruntime(model, feeds)
    if (
        kernel is not None and want.dtype.kind == "f"
    ):  # (its float16 kernel quiets a NaN's payload: 0x7E01 gives 0x7E00)
        assert_same_values(got[0], kernel[0], where)
    elif kernel is not None:
        assert_same_elements(got[0], kernel[0])
    return lowered


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("index_type", INDEX_TYPES, ids=lambda t: schemas.type_name(t))
@pytest.mark.parametrize("axis", [-1, 0, 1, 2, -2, -3])
def test_onehot_is_bit_for_bit_on_every_index_type_and_axis(index_type, axis):
    rng = np.random.default_rng(axis + 10 * index_type)
    for value_type in VALUE_TYPES:
        for opset in (11, schemas.newest_opset()):
            for depth in (None, 5):
                model = onehot_model(index_type, value_type, [3, 4], opset, axis=axis, depth=depth)
                feeds = {"i": indices_of(index_type, [3, 4], 5, rng), "v": values_of(value_type, rng)}
                if depth is None:
                    feeds["d"] = np.array(5, np.int64)
                check_lowered(model, feeds, axis, f"{schemas.type_name(value_type)} at {opset}, depth {depth}")


@pytest.mark.parametrize("depth_type", [TensorProto.FLOAT, TensorProto.INT32, TensorProto.UINT8])
def test_a_depth_of_any_type_given_at_run_time_counts_the_classes(depth_type):
    rng = np.random.default_rng(depth_type)
    model = onehot_model(TensorProto.INT64, TensorProto.FLOAT, [6], 13, depth_type=depth_type)
    for depth in (1, 3, 7):
        feeds = {
            "i": indices_of(TensorProto.INT64, [6], depth, rng),
            "d": np.array(depth, floats.numpy_dtype(depth_type)),
            "v": np.array([0.0, 1.0], np.float32),
        }
        lowered = check_lowered(model, feeds, -1, f"depth {depth}")
        assert "Range" in {node.op_type for node in lowered.graph.node}


@pytest.mark.parametrize("shape", [[0], [2, 0, 3], [1, 1, 1, 5]])
def test_empty_and_higher_rank_indices(shape):
    rng = np.random.default_rng(len(shape))
    for axis in range(-len(shape) - 1, len(shape) + 1):
        model = onehot_model(TensorProto.INT32, TensorProto.INT64, shape, 11, axis=axis, depth=4)
        feeds = {"i": indices_of(TensorProto.INT32, shape, 4, rng), "v": np.array([7, -9], np.int64)}
        check_lowered(model, feeds, axis, f"axis {axis}")


def test_at_opset_9_a_constant_depth_gives_a_constant_of_classes():
    model = onehot_model(TensorProto.INT64, TensorProto.FLOAT, [3, 4], 9, axis=-2, depth=6)
    feeds = {"i": indices_of(TensorProto.INT64, [3, 4], 6, np.random.default_rng(9)), "v": values_of(1, None)}
    lowered = check_lowered(model, feeds, -2, "opset 9")
    [unsqueeze] = [node for node in lowered.graph.node if node.op_type == "Unsqueeze"]
    assert [a.ints for a in unsqueeze.attribute] == [[1]]  # (Unsqueeze-1 takes no negative axis)
    assert "Range" not in {node.op_type for node in lowered.graph.node}


def test_inside_if_branches_and_local_functions():
    model = onehot_model(TensorProto.INT64, TensorProto.FLOAT, [3, 4], 13, axis=1, depth=5)
    for label, nested in nested_forms(model).items():
        result = lowering.lower(nested, ops=["OneHot"])
        assert "OneHot" not in str(result), label


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (onehot_model(TensorProto.INT64, TensorProto.FLOAT, [3], 9), "Range, which counts its classes"),
        (onehot_model(TensorProto.INT64, TensorProto.FLOAT, [3], 13, depth=0), "depth 0 is below 1"),
        (onehot_model(TensorProto.INT64, TensorProto.FLOAT, [None], 13, axis=3), "outside the 2 axes"),
        (onehot_model(TensorProto.INT64, TensorProto.FLOAT, [], 13, depth=3), "the indices are a scalar"),
    ],
    ids=["run-time depth at opset 9", "depth 0", "axis outside", "scalar indices"],
)
def test_declined(model, why):
    result = lowering.lower_model(model, ops=["OneHot"])
    assert "OneHot" in {node.op_type for node in result.model.graph.node}
    assert why in " ".join(result.report.lines())


def test_an_unknown_rank_with_a_leading_axis_is_declined():
    """Indices reshaped to a shape given at run time: onnx's inference leaves their rank open."""
    model = make_model(
        [
            helper.make_node("Reshape", ["i", "s"], ["r"]),
            helper.make_node("OneHot", ["r", "d", "v"], ["y"], axis=0),
        ],
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, [6]),
            helper.make_tensor_value_info("s", TensorProto.INT64, [None]),
            helper.make_tensor_value_info("d", TensorProto.INT64, []),
            helper.make_tensor_value_info("v", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])],
        opset=13,
    )
    result = lowering.lower_model(model, ops=["OneHot"])
    assert "the rank of the indices is unknown" in " ".join(result.report.lines())


def test_float_indices_outside_the_range_before_truncation_are_off():
    """The spec: an index outside [-depth, depth-1] is all off; -3.5 and 2.9 of depth 3 are,
    though onnxruntime's kernel truncates them to -3 and 2, in range. A fraction within range
    takes the class it truncates to, as that kernel does (the spec does not say)."""
    indices = np.array([-3.5, 2.9, -0.5, 1.5, -3.0, 3.0, -2.5], np.float32)
    model = onehot_model(TensorProto.FLOAT, TensorProto.FLOAT, [7], 13, depth=3, depth_type=TensorProto.FLOAT)
    lowered = lowered_wholly(model, "OneHot")
    feeds = {"i": indices, "v": np.array([0.0, 1.0], np.float32)}
    (got,) = runs_in_onnxruntime(lowered, feeds)
    hot = [None, None, 0, 1, 0, None, 1]  # (-0.5 truncates to 0; -2.5 to -2, counted from the end: 1)
    want = np.zeros([7, 3], np.float32)
    for row, column in enumerate(hot):
        if column is not None:
            want[row, column] = 1.0
    assert_same_elements(got, want)
    assert_same_elements(got, reference(indices, np.array(3), feeds["v"]))
    (kernel,) = runs_in_onnxruntime(model, feeds)
    assert kernel[0].tolist() == [1.0, 0.0, 0.0] and kernel[1].tolist() == [0.0, 0.0, 1.0]  # (its truncation)
