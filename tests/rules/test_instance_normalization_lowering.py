"""InstanceNormalization lowered to its formula (rules/instance_normalization.py): ranks 3 to 5,
spatial lengths static and known only at run time, float, double, float16 and bfloat16, scale and
bias constant and fed, within the rule's stated tolerance of onnxruntime's kernel and the rule's
float64 reference; what is declined. The backend cases are checked against their expected
outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, runs_in_onnxruntime

import lowering
from lowering import floats
from lowering.registry import rule_for

RULE = rule_for("", "InstanceNormalization")


def instance_norm_model(x_type, shape, opset, *, constant=None, **attributes):
    """y = InstanceNormalization(x, scale, bias); scale and bias initializers where ``constant``
    holds their values, else inputs."""
    node = helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], name="norm", **attributes)
    inputs = [helper.make_tensor_value_info("x", x_type, shape)]
    initializer = []
    for name in ("scale", "bias"):
        if constant is not None:
            initializer.append(floats.tensor(constant[name], name))
        else:
            inputs.append(helper.make_tensor_value_info(name, x_type, [shape[1]]))
    output = helper.make_tensor_value_info("y", x_type, [None] * len(shape))
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def parameters(channels, dtype, rng):
    return {
        "scale": rng.uniform(0.5, 2.0, channels).astype(dtype),
        "bias": rng.uniform(-1.0, 1.0, channels).astype(dtype),
    }


def assert_within(got, want, where, x_type):
    assert got.dtype == want.dtype and got.shape == want.shape, where
    wrong = RULE.tolerance[x_type].mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"


@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
@pytest.mark.parametrize(
    ("shape", "stated"),
    [([2, 3, 7], [2, 3, 7]), ([2, 3, 4, 5], [2, 3, 4, 5]), ([1, 2, 3, 2, 3], [1, 2, 3, 2, 3]),
     ([2, 3, 4, 5], [None, 3, None, None]), ([3, 2, 6], ["n", 2, "l"])],
    ids=["rank3", "rank4", "rank5", "spatial-unknown", "spatial-symbolic"],
)  # fmt: skip
def test_instance_normalization_within_the_stated_tolerance(x_type, shape, stated):
    rng = np.random.default_rng(x_type + len(shape))
    dtype = floats.numpy_dtype(x_type)
    for opset in (9, 13, 18, 22):
        for constant in (False, True):
            values = parameters(shape[1], dtype, rng)
            model = instance_norm_model(x_type, stated, opset, constant=values if constant else None, epsilon=1e-3)
            lowered = lowered_wholly(model, "InstanceNormalization")
            x = (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)
            feeds = {"x": x} | ({} if constant else values)
            (got,) = runs_in_onnxruntime(lowered, feeds)
            where = f"opset {opset}, constant {constant}"
            assert_within(got, RULE.reference(x, *values.values(), epsilon=1e-3), f"{where}, reference", x_type)
            kernel = runs_in_onnxruntime(model, feeds)  # (None: no kernel of double)
            if kernel is not None:
                assert_within(got, kernel[0], f"{where}, onnxruntime's kernel", x_type)


def test_bfloat16_at_22_computed_in_float():
    """onnxruntime has no InstanceNormalization of bfloat16: the lowered model runs there, within
    the tolerance of the float64 reference."""
    rng = np.random.default_rng(22)
    dtype = ml_dtypes.bfloat16
    values = parameters(3, dtype, rng)
    model = instance_norm_model(TensorProto.BFLOAT16, [2, 3, 8], 22)
    lowered = lowered_wholly(model, "InstanceNormalization")
    assert "Cast" in [node.op_type for node in lowered.graph.node]
    x = rng.standard_normal([2, 3, 8]).astype(dtype)
    (got,) = runs_in_onnxruntime(lowered, {"x": x} | values)
    assert_within(got, RULE.reference(x, *values.values()), "bfloat16", TensorProto.BFLOAT16)


def test_a_constant_channel_gives_bias():
    """Where every spatial element of a channel is alike its variance is 0 and y is B (0 / Sqrt(eps))."""
    values = {"scale": np.array([2.0, 3.0], np.float32), "bias": np.array([0.25, -1.5], np.float32)}
    model = instance_norm_model(TensorProto.FLOAT, [1, 2, 4], 13, constant=values)
    x = np.array([[[7.0] * 4, [-2.0] * 4]], np.float32)
    (got,) = runs_in_onnxruntime(lowered_wholly(model, "InstanceNormalization"), {"x": x})
    np.testing.assert_array_equal(got, np.array([[[0.25] * 4, [-1.5] * 4]], np.float32))


@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_data_offset_ten_times_its_spread_within_the_stated_tolerance(x_type):
    """x = 10 + N(0, 1) over 4096 spatial elements: the stated tolerance holds where the mean is
    of the order of the spread (the rule's comment: far offsets round the mean, in the kernel too)."""
    rng = np.random.default_rng(10)
    dtype = floats.numpy_dtype(x_type)
    values = parameters(3, dtype, rng)
    model = instance_norm_model(x_type, [2, 3, 64, 64], 18)
    x = (10 + rng.standard_normal([2, 3, 64, 64])).astype(dtype)
    (got,) = runs_in_onnxruntime(lowered_wholly(model, "InstanceNormalization"), {"x": x} | values)
    assert_within(got, RULE.reference(x, *values.values()), "offset 10, reference", x_type)
    kernel = runs_in_onnxruntime(model, {"x": x} | values)  # (None: no kernel of double)
    if kernel is not None:
        assert_within(got, kernel[0], "offset 10, onnxruntime's kernel", x_type)


@pytest.mark.parametrize("stated", [[1, 3, 4], [1, None, 4]], ids=["channels-stated", "channels-unknown"])
def test_scale_of_another_length_than_the_channels_fails_as_the_op_fails(stated):
    model = instance_norm_model(TensorProto.FLOAT, stated, 18)
    for info in model.graph.input[1:]:
        info.type.tensor_type.shape.dim[0].Clear()
    lowered = lowered_wholly(model, "InstanceNormalization")
    x = np.ones([1, 3, 4], np.float32)
    feeds = {"x": x, "scale": np.ones(1, np.float32), "bias": np.zeros(1, np.float32)}
    for candidate in (model, lowered):  # (the op checks the lengths; the lowered Reshape to [C, 1] fails)
        with pytest.raises(Exception, match="."):
            runs_in_onnxruntime(candidate, feeds)
    (right,) = runs_in_onnxruntime(lowered, feeds | {"scale": np.ones(3, np.float32), "bias": np.zeros(3, np.float32)})
    assert right.shape == (1, 3, 4)


def test_inside_if_branches_and_local_functions():
    model = instance_norm_model(TensorProto.FLOAT, [2, 3, 4], 18)
    for label, nested in nested_forms(model).items():
        assert "InstanceNormalization" not in str(lowering.lower(nested, ops=["InstanceNormalization"])), label


@pytest.mark.parametrize(
    ("shape", "phrase"),
    [(None, "X's rank, which places the spatial axes, is unknown"), ([2, 12], "X has no spatial axis")],
    ids=["rank-unknown", "rank-2"],
)
def test_declined_in_its_words(shape, phrase):
    """X reshaped by a shape fed at run time (its rank unknown) or to a stated rank 2."""
    fed_shape = helper.make_tensor_value_info("s", TensorProto.INT64, [None])
    initializer = [] if shape is None else [onnx.numpy_helper.from_array(np.array(shape, np.int64), "s")]
    model = make_model(
        [helper.make_node("Reshape", ["a", "s"], ["x"]),
         helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [24]), *([fed_shape] if shape is None else [])]
        + [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in ("scale", "bias")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * (3 if shape is None else len(shape)))],
        opset=18, initializer=initializer,
    )  # fmt: skip
    result = lowering.lower_model(model, ops=["InstanceNormalization"])
    assert phrase in " ".join(result.report.lines())
    assert "InstanceNormalization" in [n.op_type for n in result.model.graph.node]
    assert onnx.checker.check_model(result.model, full_check=True) is None


def test_below_opset_9_it_is_declined_in_its_words():
    model = instance_norm_model(TensorProto.FLOAT, [2, 3, 4], 9)
    result = lowering.lower_model(model, target_opset=8, ops=["InstanceNormalization"])
    assert "Constant does not hold at opset 8" in " ".join(result.report.lines())
    assert [n.op_type for n in result.model.graph.node] == ["InstanceNormalization"]
