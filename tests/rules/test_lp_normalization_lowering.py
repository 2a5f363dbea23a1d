"""LpNormalization lowered to a reduced norm and a division (rules/lp_normalization.py): random
data with rows of zeros (±0), infinities, NaN, values whose squares overflow or underflow, every
axis of ranks 1 to 4, p 1 and 2, at opsets 9, 13, 18 (axes as an input) and the newest, within
the rule's stated tolerance of onnxruntime's kernel (float, double) and of the rule's reference
(every type); what is declined. The backend cases are checked against their expected outputs by
tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, runs_in_onnxruntime, slow_but_a_sample

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for

RULE = rule_for("", "LpNormalization")


def lp_model(element_type, shape, opset, **attributes):
    node = helper.make_node("LpNormalization", ["x"], ["y"], name="norm", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, shape)],
        opset=opset,
    )


def assert_within(got, want, element_type, where):
    assert got.dtype == want.dtype and got.shape == want.shape, where
    wrong = RULE.tolerance[element_type].mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"


def data(element_type, shape, axis, rng):
    """Random values with, along the axis, a line of zeros (-0 among them) and lines holding
    an infinity, a NaN, values whose squares overflow and values whose squares underflow."""
    dtype = floats.numpy_dtype(element_type)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    moved = np.moveaxis(x, axis, -1).reshape(-1, shape[axis])
    info = np.finfo(dtype)
    lines = [
        np.where(np.arange(shape[axis]) % 2, -0.0, 0.0),
        np.full(shape[axis], float(info.max) / 2),
        np.full(shape[axis], float(info.smallest_subnormal) * 4),
        np.r_[np.inf, np.zeros(shape[axis] - 1)],
        np.r_[np.nan, np.ones(shape[axis] - 1)],
    ]
    for row, line in zip(range(moved.shape[0]), lines, strict=False):
        moved[row] = np.asarray(line).astype(dtype)
    return np.moveaxis(moved.reshape(np.moveaxis(x, axis, -1).shape), -1, axis)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("shape", [[7], [6, 5], [3, 4, 9], [2, 3, 4, 5]], ids=str)
def test_lp_normalization_within_the_stated_tolerance(element_type, p, shape):
    rng = np.random.default_rng(p + len(shape) + element_type)
    for axis in range(-len(shape), len(shape)):
        for opset in (9, 13, 18, schemas.newest_opset()):
            model = lp_model(element_type, shape, opset, axis=axis, p=p)
            lowered = lowered_wholly(model, "LpNormalization")
            x = data(element_type, shape, axis, rng)
            (got,) = runs_in_onnxruntime(lowered, {"x": x})
            where = f"axis {axis} at opset {opset}"
            assert_within(got, RULE.reference(x, axis=axis, p=p), element_type, f"{where}, against the reference")
            kernel = runs_in_onnxruntime(model, {"x": x})
            if kernel is not None:
                assert_within(got, kernel[0], element_type, f"{where}, against onnxruntime's kernel")


def test_bfloat16_at_22_is_computed_in_float32():
    rng = np.random.default_rng(22)
    model = lp_model(TensorProto.BFLOAT16, [4, 6], 22, axis=1)
    lowered = lowered_wholly(model, "LpNormalization")
    x = data(TensorProto.BFLOAT16, [4, 6], 1, rng)
    got = runs_in_onnxruntime(lowered, {"x": x})
    assert got is not None, "the lowered model does not run in onnxruntime"
    assert_within(got[0], RULE.reference(x, axis=1, p=2), TensorProto.BFLOAT16, "bfloat16")


def test_a_zero_line_gives_positive_zeros_and_a_negative_zero_elsewhere_keeps_its_sign():
    model = lp_model(TensorProto.FLOAT, [2, 3], 13, axis=1)
    lowered = lowered_wholly(model, "LpNormalization")
    x = np.array([[-0.0, 0.0, -0.0], [-0.0, 3.0, -4.0]], np.float32)
    (got,) = runs_in_onnxruntime(lowered, {"x": x})
    assert got.view(np.uint32).tolist() == np.array([[0, 0, 0], [-0.0, 0.6, -0.8]], np.float32).view(np.uint32).tolist()


def test_inside_if_branches_and_local_functions():
    model = lp_model(TensorProto.FLOAT, [2, 3], 13, axis=0, p=1)
    for label, nested in nested_forms(model).items():
        assert "LpNormalization" not in str(lowering.lower(nested, ops=["LpNormalization"])), label


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (lp_model(TensorProto.FLOAT, [2, 3], 13, p=3), "p 3 is not 1 or 2"),
        (lp_model(TensorProto.FLOAT, [2, 3], 8), "does not exist at opset 8"),
    ],
    ids=["p 3", "opset 8"],
)
def test_declined(model, why):
    result = lowering.lower_model(model, ops=["LpNormalization"])
    assert why in " ".join(result.report.lines())
