"""MaxUnpool lowered to a scatter into zeros (rules/maxunpool.py): the values and indices of a
MaxPool (overlapping windows among them, whose indices meet), 1-D to 3-D, pads and strides,
output_shape absent, the default or a larger constant (the indices placed in it as onnxruntime
places them), shapes known or not, NaN payloads and -0, at opsets 9, 11, 13 and the newest, bit
for bit against onnxruntime's kernel where it has one and the rule's numpy reference; an output
too small for the indices fails as the op fails; an output_shape onnxruntime fails, or one given
at run time, is declined. The
backend cases are checked against their expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
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

# (input's spatial shape, the MaxPool's and MaxUnpool's attributes)
POOLS = [
    ([7], {"kernel_shape": [2], "strides": [2]}),
    ([5, 6], {"kernel_shape": [3, 3], "strides": [1, 1]}),  # (overlapping: indices meet)
    ([6, 6], {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ([5, 6], {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ([4, 5, 4], {"kernel_shape": [2, 2, 2], "strides": [2, 1, 2]}),
]


def pool_unpool_model(element_type, spatial, attributes, opset, *, output_shape=None, shape_known=True):
    """y = MaxUnpool(MaxPool(x)); output_shape None, "Shape(x)" (x's own shape at run time), or a
    list (a constant)."""
    nodes = [helper.make_node("MaxPool", ["x"], ["p", "i"], **attributes)]
    unpool_inputs, initializer = ["p", "i"], []
    if output_shape == "Shape(x)":
        nodes.append(helper.make_node("Shape", ["x"], ["s"]))
        unpool_inputs.append("s")
    elif output_shape is not None:
        initializer.append(helper.make_tensor("s", TensorProto.INT64, [len(output_shape)], output_shape))
        unpool_inputs.append("s")
    nodes.append(helper.make_node("MaxUnpool", unpool_inputs, ["y"], name="unpool", **attributes))
    shape = [2, 3, *spatial] if shape_known else [None] * (len(spatial) + 2)
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, [None] * (len(spatial) + 2))],
        opset=opset,
        initializer=initializer,
    )


def outputs_or_error(model, feeds):
    try:
        return runs_in_onnxruntime(model, feeds)
    except Exception as error:  # (onnxruntime's own error: an index past the output)
        return type(error).__name__


def default_shape(spatial, attributes):
    return rule_for("", "MaxUnpool").body.__globals__["unpooled_shape"](
        [2, 3, *pooled(spatial, attributes)], attributes["kernel_shape"],
        attributes.get("pads", [0] * 2 * len(spatial)), attributes.get("strides", [1] * len(spatial)),
    )  # fmt: skip


def pooled(spatial, attributes):
    """MaxPool's output lengths (floor mode)."""
    kernel, n = attributes["kernel_shape"], len(spatial)
    pads, strides = attributes.get("pads", [0] * 2 * n), attributes.get("strides", [1] * n)
    return [(spatial[i] + pads[i] + pads[i + n] - kernel[i]) // strides[i] + 1 for i in range(n)]


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize(("spatial", "attributes"), POOLS, ids=[str(a) for _, a in POOLS])
@pytest.mark.parametrize("opset", [9, 11, 13, None])
def test_maxunpool_is_bit_for_bit(spatial, attributes, opset):
    opset = opset or schemas.newest_opset()
    rng = np.random.default_rng(opset + len(spatial))
    if opset < 11 and "pads" in attributes:
        return  # (MaxPool below 11 takes its pads too, but its indices then count no padding either)
    default = default_shape(spatial, attributes)
    larger = default[:2] + [length + 1 + axis for axis, length in enumerate(default[2:])]
    for output_shape in (None, default, larger):
        for shape_known in (True, False):
            model = pool_unpool_model(
                TensorProto.FLOAT, spatial, attributes, opset, output_shape=output_shape, shape_known=shape_known
            )
            if output_shape is not None and not shape_known:
                continue  # (declined: below)
            lowered = lowered_wholly(model, "MaxUnpool")
            x = random_elements(TensorProto.FLOAT, [2, 3, *spatial], rng)  # (NaN payloads, -0, infinities)
            got, kernel = outputs_or_error(lowered, {"x": x}), outputs_or_error(model, {"x": x})
            if isinstance(kernel, str):  # the default output may be too small for x's indices
                assert got == kernel
                continue
            assert_same_bits(got[0], kernel[0], f"output_shape {output_shape}, shape known: {shape_known}")


@pytest.mark.parametrize(
    ("output_shape", "shape_known", "reason"),
    [
        ("Shape(x)", False, "given at run time"),
        ([2, 3, 6, 7], False, "X's shape is not known"),
        ([2, 3, 6, 2], True, "at least the unpooled [2, 3, 6, 6]: onnxruntime fails"),
        ([2, 4, 6, 6], True, "not X's N and C"),
        ([2, 3, 36], True, "not of X's rank 4"),
    ],
    ids=["run time", "shape unknown", "smaller", "another C", "another rank"],
)
def test_an_output_shape_onnxruntime_fails_or_checks_as_it_runs_is_declined(output_shape, shape_known, reason):
    """onnxruntime checks output_shape against X's shape: the rule takes only one it knows passes."""
    spatial, attributes = POOLS[2]
    model = pool_unpool_model(
        TensorProto.FLOAT, spatial, attributes, 13, output_shape=output_shape, shape_known=shape_known
    )
    result = lowering.lower_model(model, ops=["MaxUnpool"])
    assert reason in " ".join(result.report.lines())
    if output_shape != "Shape(x)" and shape_known:
        x = np.zeros([2, 3, *spatial], np.float32)
        assert isinstance(outputs_or_error(model, {"x": x}), str), "onnxruntime runs what the rule declines"


@pytest.mark.parametrize("element_type", [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_other_types_against_the_reference(element_type):
    rng = np.random.default_rng(element_type)
    spatial, attributes = POOLS[1]
    opset = schemas.newest_opset()
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", **attributes)
    model = make_model(
        [node],
        [
            helper.make_tensor_value_info("x", element_type, [1, 2, 3, 4]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [1, 2, 3, 4]),
        ],
        [helper.make_tensor_value_info("y", element_type, [None] * 4)],
        opset=opset,
    )
    lowered = lowered_wholly(model, "MaxUnpool")
    x = random_elements(element_type, [1, 2, 3, 4], rng)
    indices = rng.integers(0, 2 * 5 * 6, [1, 2, 3, 4]).astype(np.int64)  # (any indices: some meet)
    want = rule_for("", "MaxUnpool").reference(x, indices, **attributes)
    got = runs_in_onnxruntime(lowered, {"x": x, "i": indices})
    assert got is not None, "the lowered model does not run in onnxruntime"
    assert got[0].dtype == floats.numpy_dtype(element_type)
    assert_same_bits(got[0], want)


def test_inside_if_branches_and_local_functions():
    model = pool_unpool_model(TensorProto.FLOAT, [6, 6], POOLS[2][1], 13)
    for label, nested in nested_forms(model).items():
        assert "MaxUnpool" not in str(lowering.lower(nested, ops=["MaxUnpool"])), label


def test_each_value_is_written_at_its_given_index():
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2], strides=[2])
    model = make_model(
        [helper.make_node("Identity", ["a"], ["x"]), node],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 1, 3]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)],
        opset=13,
    )  # fmt: skip
    lowered = lowered_wholly(model, "MaxUnpool")
    x = np.array([[[1.0, -0.0, 3.0]]], np.float32)
    (got,) = runs_in_onnxruntime(lowered, {"a": x, "i": np.array([[[1, 2, 5]]], np.int64)})
    assert_same_bits(got, np.array([[[0, 1, -0.0, 0, 0, 3]]], np.float32))


def _unpool_model(x_shape, i_shape, attributes, *, opset=13, output_shape=None):
    """y = MaxUnpool(x, i[, output_shape constant]): x and i fed, of the declared shapes."""
    inputs, initializer = ["x", "i"], []
    if output_shape is not None:
        initializer.append(helper.make_tensor("s", TensorProto.INT64, [len(output_shape)], output_shape))
        inputs.append("s")
    node = helper.make_node("MaxUnpool", inputs, ["y"], name="unpool", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
         helper.make_tensor_value_info("i", TensorProto.INT64, i_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(x_shape or [0, 0, 0]))],
        opset=opset, initializer=initializer,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("model", "feeds"),
    [
        (_unpool_model([1, 1, 3], [1, 1, 3], {"kernel_shape": [2], "pads": [2, 0]}, output_shape=[1, 1, 4]),
         {"x": np.ones([1, 1, 3], np.float32), "i": np.zeros([1, 1, 3], np.int64)}),
        (_unpool_model([1, 1, 1], [1, 1, 1], {"kernel_shape": [2], "pads": [1, 1]}, output_shape=[1, 1, 3]),
         {"x": np.ones([1, 1, 1], np.float32), "i": np.zeros([1, 1, 1], np.int64)}),
        (_unpool_model([1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1], {"kernel_shape": [1, 1, 1, 1]}),
         {"x": np.ones([1] * 6, np.float32), "i": np.zeros([1] * 6, np.int64)}),
        (_unpool_model([1, 1, 2, 2], [1, 1, 4, 1], {"kernel_shape": [2, 2], "strides": [2, 2]}),
         {"x": np.ones([1, 1, 2, 2], np.float32), "i": np.zeros([1, 1, 4, 1], np.int64)}),
    ],
    ids=["pads not below the kernel", "no positive unpooled length", "4 spatial axes", "I not of X's shape"],
)  # fmt: skip
def test_what_onnxruntime_refuses_is_declined(model, feeds):
    result = lowering.lower_model(model, ops=["MaxUnpool"])
    assert "MaxUnpool" in {node.op_type for node in result.model.graph.node}, result.report.lines()
    assert isinstance(outputs_or_error(model, feeds), str)


@pytest.mark.parametrize(
    ("i_shape", "indices"),
    [([1, 1, 2], [[[1, -1]]]), ([None, None, None], [[[1], [2]]])],
    ids=["an index below 0", "I not of X's shape, known as it runs"],
)
def test_indices_onnxruntime_refuses_fail_the_lowered_model_too(i_shape, indices):
    model = _unpool_model([1, 1, 2], i_shape, {"kernel_shape": [2], "strides": [2]}, output_shape=[1, 1, 5])
    lowered = lowered_wholly(model, "MaxUnpool")
    feeds = {"x": np.ones([1, 1, 2], np.float32), "i": np.array(indices, np.int64)}
    assert isinstance(outputs_or_error(model, feeds), str)
    assert isinstance(outputs_or_error(lowered, feeds), str)


def test_no_channel_gives_an_output_of_no_element_from_opset_14():
    model = _unpool_model([1, 0, 2], [1, 0, 2], {"kernel_shape": [2], "strides": [2]}, opset=14,
                          output_shape=[1, 0, 4])  # fmt: skip
    lowered = lowered_wholly(model, "MaxUnpool")
    feeds = {"x": np.ones([1, 0, 2], np.float32), "i": np.zeros([1, 0, 2], np.int64)}
    [want], [got] = runs_in_onnxruntime(model, feeds), runs_in_onnxruntime(lowered, feeds)
    assert got.shape == want.shape == (1, 0, 4)
    declined = lowering.lower_model(
        _unpool_model([1, 0, 2], [1, 0, 2], {"kernel_shape": [2]}, opset=13), ops=["MaxUnpool"]
    )
    assert "Reshape reads a 0" in " ".join(declined.report.lines())


def test_float16_signalling_nans_are_kept_where_onnxruntime_quiets_them():
    x = np.array([[[0x7C49, 0x3C00]]], np.uint16).view(np.float16)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2], strides=[2])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 1, 2]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [1, 1, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [None] * 3)], opset=11,
    )  # fmt: skip
    feeds = {"x": x, "i": np.array([[[0, 3]]], np.int64)}
    [want], [got] = runs_in_onnxruntime(model, feeds), runs_in_onnxruntime(lowered_wholly(model, "MaxUnpool"), feeds)
    assert want.view(np.uint16)[0, 0, 0] != 0x7C49 and got.view(np.uint16)[0, 0, 0] == 0x7C49
    assert np.array_equal(np.isnan(want), np.isnan(got))
    assert np.array_equal(want[~np.isnan(want)], got[~np.isnan(got)])
