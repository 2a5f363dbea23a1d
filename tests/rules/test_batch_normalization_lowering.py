"""BatchNormalization lowered to its formula (rules/batch_normalization.py): inference with the
statistics constant and given at run time, training mode with and without its running statistics,
ranks 2 to 5, float, double and float16 X, scale and statistics of other types (version 15), within
the rule's stated tolerance of onnxruntime's kernel and the rule's float64 reference; what is
declined. The backend cases are checked against their expected outputs by
tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, runs_in_onnxruntime

import lowering
from lowering import floats
from lowering.registry import rule_for

RULE = rule_for("", "BatchNormalization")
PARAMETERS = ["scale", "bias", "mean", "var"]


def batch_norm_model(x_type, shape, opset, *, parameter_types=None, constant=None, outputs=1, **attributes):
    """Y (and the running statistics) = BatchNormalization(x, scale, bias, mean, var); the four
    per-channel inputs initializers where ``constant`` holds their values, else inputs."""
    parameter_types = parameter_types or [x_type] * 4
    names = ["y", "running_mean", "running_var"][:outputs]
    node = helper.make_node("BatchNormalization", ["x", *PARAMETERS], names, name="norm", **attributes)
    inputs = [helper.make_tensor_value_info("x", x_type, shape)]
    initializer = []
    for name, element_type in zip(PARAMETERS, parameter_types, strict=True):
        if constant is not None:
            initializer.append(floats.tensor(constant[name], name))
        else:
            inputs.append(helper.make_tensor_value_info(name, element_type, [shape[1]]))
    types = [x_type, parameter_types[2], parameter_types[3]]
    shapes = [[None] * len(shape), [shape[1]], [shape[1]]]
    outputs_info = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(names, types, shapes, strict=False)]
    return make_model([node], inputs, outputs_info, opset=opset, initializer=initializer)


def parameters(channels, parameter_types, rng):
    dtypes = [floats.numpy_dtype(t) for t in parameter_types]
    return {
        "scale": rng.uniform(0.5, 2.0, channels).astype(dtypes[0]),
        "bias": rng.uniform(-1.0, 1.0, channels).astype(dtypes[1]),
        "mean": rng.uniform(-0.5, 0.5, channels).astype(dtypes[2]),
        "var": rng.uniform(0.2, 3.0, channels).astype(dtypes[3]),
    }


def assert_within(got, want, where, x_type=None):
    """Within the tolerance the rule states for X's type (that of the output where not given)."""
    assert got.dtype == want.dtype and got.shape == want.shape, where
    tolerance = RULE.tolerance[x_type or helper.np_dtype_to_tensor_dtype(want.dtype)]
    wrong = tolerance.mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"


@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
@pytest.mark.parametrize("shape", [[4, 3], [2, 3, 7], [2, 3, 4, 5], [1, 2, 3, 2, 3]], ids=str)
@pytest.mark.parametrize("training_mode", [0, 1])
def test_batch_normalization_within_the_stated_tolerance(x_type, shape, training_mode):
    rng = np.random.default_rng(x_type + len(shape) + training_mode)
    outputs = 3 if training_mode else 1
    for opset in (14, 15):
        for constant in (False, True):
            values = parameters(shape[1], [x_type] * 4, rng)
            model = batch_norm_model(
                x_type, shape, opset, constant=values if constant else None, outputs=outputs,
                epsilon=1e-3, momentum=0.8, training_mode=training_mode,
            )  # fmt: skip
            lowered = lowered_wholly(model, "BatchNormalization")
            x = (rng.standard_normal(shape) * 2 + 0.5).astype(floats.numpy_dtype(x_type))
            feeds = {"x": x} | ({} if constant else values)
            got = runs_in_onnxruntime(lowered, feeds)
            want = RULE.reference(x, *values.values(), epsilon=1e-3, momentum=0.8, training_mode=training_mode)
            want = want if isinstance(want, tuple) else (want,)
            kernel = runs_in_onnxruntime(model, feeds)
            for index, (value, expected) in enumerate(zip(got, want, strict=True)):
                where = f"output {index} at {opset}, constant {constant}"
                assert_within(value, expected, f"{where}, against the reference")
                if kernel is not None:
                    assert_within(value, kernel[index], f"{where}, against onnxruntime's kernel")


def test_training_mode_without_its_running_statistics_writes_no_nodes_for_them():
    model = batch_norm_model(TensorProto.FLOAT, [2, 3, 4], 15, training_mode=1)
    lowered = lowered_wholly(model, "BatchNormalization")
    assert [node.op_type for node in lowered.graph.node].count("Mul") == 2  # (the squares and the scale)
    rng = np.random.default_rng(3)
    values = parameters(3, [TensorProto.FLOAT] * 4, rng)
    x = rng.standard_normal([2, 3, 4]).astype(np.float32)
    (got,) = runs_in_onnxruntime(lowered, {"x": x} | values)
    assert_within(got, RULE.reference(x, *values.values(), training_mode=1)[0], "Y alone")


def test_scale_and_statistics_of_other_types_at_15():
    types = [TensorProto.FLOAT, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.DOUBLE]
    model = batch_norm_model(TensorProto.FLOAT16, [2, 3, 5], 15, parameter_types=types, outputs=3, training_mode=1)
    lowered = lowered_wholly(model, "BatchNormalization")
    rng = np.random.default_rng(15)
    values = parameters(3, types, rng)
    x = rng.standard_normal([2, 3, 5]).astype(np.float16)
    got = runs_in_onnxruntime(lowered, {"x": x} | values)
    want = RULE.reference(x, *values.values(), training_mode=1)
    for value, expected in zip(got, want, strict=True):
        assert_within(value, expected, "mixed types", TensorProto.FLOAT16)
    assert [value.dtype for value in got] == [np.float16, np.float64, np.float64]


def test_inside_if_branches_and_local_functions():
    model = batch_norm_model(TensorProto.FLOAT, [2, 3, 4], 15)
    for label, nested in nested_forms(model).items():
        assert "BatchNormalization" not in str(lowering.lower(nested, ops=["BatchNormalization"])), label


def test_an_x_of_unknown_rank_is_declined():
    model = make_model(
        [helper.make_node("Reshape", ["a", "s"], ["x"]),
         helper.make_node("BatchNormalization", ["x", *PARAMETERS], ["y"])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [24]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [None])]
        + [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in PARAMETERS],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None, None])],
        opset=15,
    )  # fmt: skip
    result = lowering.lower_model(model, ops=["BatchNormalization"])
    assert "X's rank, which places the channels' axis, is unknown" in " ".join(result.report.lines())
    assert onnx.checker.check_model(result.model, full_check=True) is None


@pytest.mark.parametrize("shape", [[0, 2, 3], [2, 2, 0], [None, 2, 3]], ids=["no batch", "no length", "batch unknown"])
def test_an_empty_batch_gives_nan_statistics_as_the_spec(shape):
    """The mean and variance of no elements are 0/0: NaN, as the reference's and onnxruntime's
    kernel's (its ReduceMean of nothing is 0)."""
    model = batch_norm_model(TensorProto.FLOAT, shape, 15, outputs=3, training_mode=1)
    lowered = lowered_wholly(model, "BatchNormalization")
    values = parameters(2, [TensorProto.FLOAT] * 4, np.random.default_rng(0))
    x = np.zeros([d if d is not None else 0 for d in shape], np.float32)
    got = runs_in_onnxruntime(lowered, {"x": x} | values)
    assert got[0].shape == x.shape
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    kernel = runs_in_onnxruntime(model, {"x": x} | values)
    assert np.isnan(kernel[1]).all() and np.isnan(kernel[2]).all()


def test_partly_named_running_statistics():
    rng = np.random.default_rng(4)
    values = parameters(3, [TensorProto.FLOAT] * 4, rng)
    x = rng.standard_normal([2, 3, 4]).astype(np.float32)
    want = RULE.reference(x, *values.values(), training_mode=1)
    for names, picked in ((["y", "", "running_var"], [0, 2]), (["y", "running_mean", ""], [0, 1])):
        node = helper.make_node("BatchNormalization", ["x", *PARAMETERS], names, training_mode=1)
        outputs = [helper.make_tensor_value_info(names[i], TensorProto.FLOAT, None) for i in picked]
        for info, i in zip(outputs, picked, strict=True):
            info.type.tensor_type.shape.dim.extend(
                [onnx.TensorShapeProto.Dimension(dim_value=d) for d in ([2, 3, 4] if i == 0 else [3])]
            )
        model = make_model(
            [node],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])]
            + [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in PARAMETERS],
            outputs,
            opset=15,
        )
        got = runs_in_onnxruntime(lowered_wholly(model, "BatchNormalization"), {"x": x} | values)
        for value, i in zip(got, picked, strict=True):
            assert_within(value, want[i], f"{names}, output {i}")


def test_below_opset_9_it_is_declined_in_its_words():
    model = batch_norm_model(TensorProto.FLOAT, [2, 3, 4], 15, outputs=3, training_mode=1)
    with pytest.raises(lowering.LoweringError, match="Constant does not hold at opset 8"):
        lowering.lower(model, target_opset=8, ops=[])
