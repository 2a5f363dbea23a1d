"""Sinh, Cosh, Asinh, Acosh and Atanh lowered to Exp, Log and Sqrt in float64
(rules/hyperbolic.py): edge values (NaN, ±inf, ±0, subnormals, the extremes), normal values,
magnitudes from e^-30 to e^5 of both signs, values around ±1 and just above 1, at opsets 9, 13 and
22, within the stated tolerance of the rules' references and of onnxruntime's kernels; the values
each op defines exactly; double declined; nested graphs. The backend cases are checked against
their expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, runs_in_onnxruntime, type_name

import lowering
from lowering.registry import rule_for
from lowering.samples import edge_values

OPS = ("Sinh", "Cosh", "Asinh", "Acosh", "Atanh")
CASES = [
    (op_type, opset, element_type)
    for op_type in OPS
    for opset, element_types in (
        (9, (TensorProto.FLOAT, TensorProto.FLOAT16)),
        (13, (TensorProto.FLOAT, TensorProto.FLOAT16)),
        (22, (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16)),
    )
    for element_type in element_types
]


def unary(op_type: str, element_type: int, size: int, opset: int) -> onnx.ModelProto:
    return make_model(
        [helper.make_node(op_type, ["x"], ["y"], name=op_type.lower())],
        [helper.make_tensor_value_info("x", element_type, [size])],
        [helper.make_tensor_value_info("y", element_type, [size])],
        opset=opset,
    )


def values(element_type: int, rng) -> np.ndarray:
    """Edge values, normal ones, magnitudes e^-30 to e^5 of both signs, values in [-1.1, 1.1] and
    1 + e^-20 to 1 + e^2: where each formula cancels, overflows or nears a pole."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    signs = rng.choice([-1.0, 1.0], 400)
    wide = np.concatenate([
        edge_values(element_type).astype(np.float64), rng.standard_normal(400) * 3,
        np.exp(rng.uniform(-30, 5, 400)) * signs, rng.uniform(-1.1, 1.1, 400), 1 + np.exp(rng.uniform(-20, 2, 300)),
    ])  # fmt: skip
    with np.errstate(over="ignore"):
        return wide.astype(dtype)


@pytest.mark.parametrize(
    "op_type, opset, element_type", CASES, ids=[f"{op}-{opset}-{type_name(t)}" for op, opset, t in CASES]
)
def test_within_the_stated_tolerance_of_the_reference_and_the_kernel(op_type, opset, element_type):
    rule = rule_for("", op_type)
    x = values(element_type, np.random.default_rng(opset + element_type))
    model = unary(op_type, element_type, x.size, opset)
    lowered = lowered_wholly(model, op_type)
    (got,) = runs_in_onnxruntime(lowered, {"x": x})
    tolerance = rule.tolerance[element_type]
    wrong = tolerance.mismatches(got, rule.reference(x))
    assert not wrong.any(), f"{x[wrong][:3]} give {got[wrong][:3]}, not {rule.reference(x)[wrong][:3]}"
    kernel = runs_in_onnxruntime(model, {"x": x})
    if kernel is not None:
        wrong = tolerance.mismatches(got, kernel[0])
        assert not wrong.any(), f"{x[wrong][:3]} give {got[wrong][:3]}, the kernel {kernel[0][wrong][:3]}"


# (op, x, the answer's bits as float32): where each op is exact
EXACT = [
    ("Sinh", [0.0, -0.0, np.inf, -np.inf], [0.0, -0.0, np.inf, -np.inf]),
    ("Cosh", [0.0, -0.0, np.inf, -np.inf], [1.0, 1.0, np.inf, np.inf]),
    ("Asinh", [0.0, -0.0, np.inf, -np.inf], [0.0, -0.0, np.inf, -np.inf]),
    ("Acosh", [1.0, np.inf, 0.5, -1.0, -3.4e38, -np.inf], [0.0, np.inf, np.nan, np.nan, np.nan, np.nan]),
    ("Atanh", [0.0, -0.0, 1.0, -1.0, 1.5, -np.inf], [0.0, -0.0, np.inf, -np.inf, np.nan, np.nan]),
]


@pytest.mark.parametrize("op_type, x, want", EXACT, ids=[case[0] for case in EXACT])
def test_zeros_infinities_poles_and_the_undefined_come_out_exactly(op_type, x, want):
    """Signed zeros keep their sign (the odd ops), infinities and poles give infinities, values
    outside the domain NaN, and NaN gives NaN."""
    x = np.array([*x, np.nan], np.float32)
    model = unary(op_type, TensorProto.FLOAT, x.size, 22)
    (got,) = runs_in_onnxruntime(lowered_wholly(model, op_type), {"x": x})
    want = np.array([*want, np.nan], np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    number = ~np.isnan(want)
    assert got[number].tobytes() == want[number].tobytes()


@pytest.mark.parametrize("op_type", OPS)
def test_double_is_declined(op_type):
    result = lowering.lower_model(unary(op_type, TensorProto.DOUBLE, 4, 22), ops=[op_type])
    [left] = result.report.remaining
    assert "float64 is the widest type" in left.reason


@pytest.mark.parametrize("op_type", OPS)
def test_lowered_in_branches_and_a_local_function_too(op_type):
    x = values(TensorProto.FLOAT, np.random.default_rng(3))
    model = unary(op_type, TensorProto.FLOAT, x.size, 13)
    tolerance = rule_for("", op_type).tolerance[TensorProto.FLOAT]
    for label, nested in nested_forms(model).items():
        lowered = lowered_wholly(nested, op_type)
        for branch in (True, False):
            feeds = {"x": x, "branch": np.array(branch)}
            (got,), (want,) = runs_in_onnxruntime(lowered, feeds), runs_in_onnxruntime(nested, feeds)
            assert not tolerance.mismatches(got, want).any(), label


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("target", [21, 18, 13])
def test_bfloat16_taken_below_22_is_lowered_not_widened(op_type, target):
    """A bfloat16 node at 22 taken to an opset whose version takes no bfloat16: lowered (its
    answer on a float32 x is not its answer on x rounded), its output still bfloat16, within the
    tolerance of the reference."""
    x = values(TensorProto.BFLOAT16, np.random.default_rng(target))
    model = unary(op_type, TensorProto.BFLOAT16, x.size, 22)
    result = lowering.lower_model(model, target_opset=target)
    onnx.checker.check_model(result.model, full_check=True)
    assert op_type not in {node.op_type for node in result.model.graph.node}
    (got,) = runs_in_onnxruntime(result.model, {"x": x})
    rule = rule_for("", op_type)
    assert got.dtype == x.dtype and not rule.tolerance[TensorProto.BFLOAT16].mismatches(got, rule.reference(x)).any()
