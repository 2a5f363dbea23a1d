"""LpPool lowered by its rule (rules/lppool.py) to a depthwise Conv of ones over |x|^p: random
inputs with edge values (±0, ±inf, NaN, the largest finite) over kernels, strides, dilations,
pads and auto_pad, 1-D to 3-D, p of 1 to 4, against onnxruntime's LpPool kernel (float) and
onnx.reference (every type), within the tolerance the rule states; the refusals. The backend
cases are checked against their expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, op_type_set

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime, run_reference

LP_POOL_TOLERANCE = rule_for("", "LpPool").tolerance


def lp_pool_model(shape, *, element_type=TensorProto.FLOAT, opset=18, **attributes) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("LpPool", ["x"], ["y"], name="pool", **attributes)],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, [None] * len(shape))],
        opset=opset,
    )


def assert_within(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """Within the tolerance the rule states for the type (NaN meets NaN, an infinity the same one)."""
    assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.dtype}{got.shape} {want.shape}"
    tolerance = LP_POOL_TOLERANCE[helper.np_dtype_to_tensor_dtype(want.dtype)]
    wrong = tolerance.mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"


def edged(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``x`` with a few of its elements ±0, ±inf, NaN and ±the largest finite value."""
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float64)
    largest = float(np.finfo(x.dtype).max)
    specials = np.concatenate([specials, [largest, -largest]]).astype(x.dtype)
    flat = x.reshape(-1).copy()
    flat[rng.choice(flat.size, size=min(len(specials), flat.size // 8), replace=False)] = specials[: flat.size // 8]
    return flat.reshape(x.shape)


# (spatial shape, attributes): kernels, strides, dilations, explicit pads up to the kernel's
# size, auto_pad; ceil_mode=1 where it adds no window
POOLS = [
    ([9], {"kernel_shape": [3]}),
    ([9], {"kernel_shape": [2], "strides": [2], "pads": [1, 0]}),
    ([6, 7], {"kernel_shape": [2, 3], "pads": [1, 2, 1, 2]}),
    ([6, 7], {"kernel_shape": [3, 3], "strides": [2, 1], "dilations": [1, 2]}),
    ([6, 7], {"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ([6, 7], {"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER"}),
    ([6, 7], {"kernel_shape": [2, 2], "auto_pad": "VALID", "strides": [2, 3]}),
    ([7, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ([4, 5, 3], {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
]


@pytest.mark.parametrize("p", [1, 2, 3, 4])
@pytest.mark.parametrize(("spatial", "attributes"), POOLS, ids=[str(a) for _, a in POOLS])
def test_lp_pool_is_a_conv_of_ones_within_the_stated_tolerance(spatial, attributes, p):
    rng = np.random.default_rng(p)
    model = lp_pool_model([2, 3, *spatial], p=p, **attributes)
    lowered = lowering.lower(model, ops=["LpPool"])
    onnx.checker.check_model(lowered, full_check=True)
    assert "LpPool" not in op_type_set(lowered) and "Conv" in op_type_set(lowered)
    [conv] = [node for node in lowered.graph.node if node.op_type == "Conv"]
    assert "auto_pad" not in {a.name for a in conv.attribute}  # (explicit pads, the sizes being known)
    x = edged(rng.standard_normal([2, 3, *spatial]).astype(np.float32) * 3, rng)
    (got,) = run_onnxruntime(lowered, {"x": x})
    (kernel,) = run_onnxruntime(model, {"x": x})
    assert_within(got, kernel, "against onnxruntime's LpPool")
    # (onnx.reference's LpPool sums with nansum, a NaN in a window skipped: compared without them)
    x = np.nan_to_num(x, nan=0.0, posinf=np.inf, neginf=-np.inf)
    (got,) = run_onnxruntime(lowered, {"x": x})
    (reference,) = run_reference(model, {"x": x})
    assert_within(got, reference.astype(np.float32), "against onnx.reference")


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_lp_pool_of_16_bit_floats_meets_onnx_reference(element_type):
    """float16 and bfloat16 in float32, rounded once (LpPool-22 takes bfloat16)."""
    rng = np.random.default_rng(element_type)
    dtype = floats.numpy_dtype(element_type)
    for spatial, attributes in POOLS[2:6]:
        model = lp_pool_model([2, 3, *spatial], element_type=element_type, opset=22, p=3, **attributes)
        lowered = lowering.lower(model, ops=["LpPool"])
        onnx.checker.check_model(lowered, full_check=True)
        x = (rng.standard_normal([2, 3, *spatial]) * 2).astype(dtype)
        (got,) = run_onnxruntime(lowered, {"x": x})
        (want,) = run_reference(
            lp_pool_model([2, 3, *spatial], opset=22, p=3, **attributes), {"x": x.astype(np.float64)}
        )
        assert_within(got, want.astype(dtype), f"{attributes}")


@pytest.mark.parametrize("p", [2.0, 2.5])
def test_lp_pool_1_with_a_float_p_is_lowered(p):
    model = lp_pool_model([1, 2, 5], opset=1, kernel_shape=[2], p=p)
    lowered = lowering.lower(model, ops=["LpPool"], target_opset=7)
    x = np.arange(10, dtype=np.float32).reshape(1, 2, 5) - 4
    want = ((np.abs(x[..., :-1]) ** p + np.abs(x[..., 1:]) ** p) ** (1 / p)).astype(np.float32)
    assert_within(run_onnxruntime(lowered, {"x": x})[0], want, f"p={p}")


def _refusal(model: onnx.ModelProto) -> str:
    report = lowering.lower_model(model, ops=["LpPool"]).report
    assert not report.complete
    return report.remaining[0].reason


def test_refusals_name_what_is_missing():
    assert "channel count is unknown" in _refusal(lp_pool_model([2, "c", 5], kernel_shape=[2]))
    # 7 - 2 = 5 is no multiple of the stride 2: ceil mode pools a third window, floor mode two
    assert "ceil_mode=1" in _refusal(lp_pool_model([1, 1, 6], kernel_shape=[2], strides=[2], ceil_mode=1, pads=[0, 1]))
    assert "ceil_mode=1" in _refusal(lp_pool_model([1, 1, "n"], kernel_shape=[2], ceil_mode=1))
    dilated_same = lp_pool_model([1, 1, "n"], kernel_shape=[3], dilations=[2], auto_pad="SAME_UPPER")
    assert "with dilations [2]" in _refusal(dilated_same)  # (onnxruntime's Conv refuses SAME with dilations)
    short_same = lp_pool_model([1, 1, 7], kernel_shape=[1], strides=[4], auto_pad="SAME_UPPER")
    assert "shorter than its stride" in _refusal(short_same)  # (onnxruntime's LpPool reads [2, 6], the spec [1, 5])
    valid_ceil = lp_pool_model([1, 1, 3], kernel_shape=[2], strides=[2], auto_pad="VALID", ceil_mode=1)
    assert "VALID with ceil_mode=1" in _refusal(valid_ceil)  # (the schema counts 1 window, onnxruntime 2)
    strided_before_11 = lp_pool_model([1, 1, 5], opset=10, kernel_shape=[2], strides=[2], auto_pad="SAME_UPPER")
    assert "before opset 11 it pads to the input's length" in _refusal(strided_before_11)
    double = lp_pool_model([1, 1, 4], element_type=TensorProto.DOUBLE, kernel_shape=[2])
    assert "runs no Conv-18 on double" in _refusal(double)  # (onnxruntime has no double Conv kernel)


@pytest.mark.parametrize("form", ["if", "function"])
def test_lp_pool_is_lowered_in_an_if_branch_and_a_local_function(form):
    model = nested_forms(lp_pool_model([2, 3, 6, 7], p=3, kernel_shape=[2, 3], pads=[1, 2, 1, 2]))[form]
    lowered = lowered_wholly(model, "LpPool")
    x = np.random.default_rng(7).standard_normal([2, 3, 6, 7]).astype(np.float32)
    for taken in (True, False):
        feeds = {"x": x, "branch": np.array(taken)}
        assert_within(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0], f"{form} {taken}")
