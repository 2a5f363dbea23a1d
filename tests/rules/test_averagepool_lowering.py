"""AveragePool lowered by its rule (rules/averagepool.py) to a depthwise Conv of ones divided by
each window's count: random forms (1-D to 3-D kernels, strides, dilations, explicit pads,
auto_pad, ceil_mode, count_include_pad, opsets 7 to 22) with edge values (±0, ±inf, NaN)
against onnxruntime's AveragePool kernel (float) and onnx.reference (float16 and bfloat16),
within the tolerance the rule states; the refusals. The backend cases are checked against their
expected outputs by tests/test_backend_node_cases.py."""

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

AVERAGE_POOL_TOLERANCE = rule_for("", "AveragePool").tolerance


def pool_model(shape, *, element_type=TensorProto.FLOAT, opset=22, **attributes) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool", **attributes)],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, [None] * len(shape))],
        opset=opset,
    )


def assert_within(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """Within the tolerance the rule states for the type (NaN meets NaN, an infinity the same one)."""
    assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.dtype}{got.shape} {want.shape}"
    wrong = AVERAGE_POOL_TOLERANCE[helper.np_dtype_to_tensor_dtype(want.dtype)].mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size}, e.g. {got[wrong][:3]} for {want[wrong][:3]}"


def edged(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``x`` with a few of its elements ±0, ±inf and NaN. (Not ±the largest finite value: a window
    holding both sums to what the order of its terms makes it, in the kernel as in the Conv.)"""
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], x.dtype)
    flat = x.reshape(-1).copy()
    count = min(len(specials), flat.size // 8)
    flat[rng.choice(flat.size, size=count, replace=False)] = specials[:count]
    return flat.reshape(x.shape)


def random_form(rng: np.random.Generator) -> tuple[int, list[int], dict]:
    """An opset, a spatial shape and AveragePool attributes that version takes, drawn at random."""
    opset = int(rng.choice([7, 10, 11, 19, 22]))
    rank = int(rng.integers(1, 4))
    spatial = [int(v) for v in rng.integers(2, 9, rank)]
    kernel = [int(v) for v in rng.integers(1, 5, rank)]
    attributes = {"kernel_shape": kernel, "strides": [int(v) for v in rng.integers(1, 4, rank)],
                  "count_include_pad": int(rng.integers(0, 2))}  # fmt: skip
    if opset >= 19 and rng.random() < 0.4:
        attributes["dilations"] = [int(v) for v in rng.integers(1, 3, rank)]
    if opset >= 10:
        attributes["ceil_mode"] = int(rng.integers(0, 2))
    padding = str(rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if padding == "NOTSET":
        attributes["pads"] = [int(rng.integers(0, k)) for k in kernel * 2]
    else:
        attributes["auto_pad"] = padding
    return opset, spatial, attributes


@pytest.mark.parametrize("seed", range(6))
def test_average_pool_is_a_conv_of_ones_over_the_counts_within_the_stated_tolerance(seed):
    """Every form the rule lowers of 40 drawn at random: a Conv with explicit pads and a Div, no
    AveragePool left, onnxruntime's kernel met within the tolerance (edge values included)."""
    rng = np.random.default_rng(seed)
    lowered_count = 0
    for _ in range(40):
        opset, spatial, attributes = random_form(rng)
        model = pool_model([2, 3, *spatial], opset=opset, **attributes)
        x = edged((rng.standard_normal([2, 3, *spatial]) * 3).astype(np.float32), rng)
        result = lowering.lower_model(model, ops=["AveragePool"])
        if "AveragePool" in op_type_set(result.model):
            assert result.report.remaining, attributes  # (refused, and said why)
            continue
        onnx.checker.check_model(result.model, full_check=True)
        [conv] = [node for node in result.model.graph.node if node.op_type == "Conv"]
        assert "auto_pad" not in {a.name for a in conv.attribute} and "Div" in op_type_set(result.model)
        (got,) = run_onnxruntime(result.model, {"x": x})
        (want,) = run_onnxruntime(model, {"x": x})
        assert_within(got, want, f"opset {opset}, {spatial}, {attributes}")
        lowered_count += 1
    assert lowered_count >= 12  # (the others refused: no window, or an auto_pad form counted apart)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_average_pool_of_16_bit_floats_meets_onnx_reference(element_type):
    """float16 and bfloat16 in float32, rounded once (AveragePool-22 takes bfloat16)."""
    rng = np.random.default_rng(element_type)
    dtype = floats.numpy_dtype(element_type)
    forms = [([6, 7], {"kernel_shape": [2, 3], "pads": [1, 2, 1, 2]}),
             ([7, 7], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1}),
             ([6, 7], {"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER"})]  # fmt: skip
    for spatial, attributes in forms:
        model = pool_model([2, 3, *spatial], element_type=element_type, **attributes)
        lowered = lowering.lower(model, ops=["AveragePool"])
        onnx.checker.check_model(lowered, full_check=True)
        x = (rng.standard_normal([2, 3, *spatial]) * 2).astype(dtype)
        (got,) = run_onnxruntime(lowered, {"x": x})
        (want,) = run_reference(pool_model([2, 3, *spatial], **attributes), {"x": x.astype(np.float32)})
        assert_within(got, want.astype(dtype), f"{attributes}")


def test_the_counts_are_a_constant_of_the_output_s_shape_where_they_differ_and_a_scalar_where_not():
    """count_include_pad=0 at a padded border averages fewer positions; without padding every
    window averages k positions, one scalar."""
    padded = lowering.lower(pool_model([1, 1, 4], kernel_shape=[3], pads=[1, 1]), ops=["AveragePool"])
    x = np.array([[[1.0, 2.0, 3.0, 4.0]]], np.float32)
    assert run_onnxruntime(padded, {"x": x})[0].tolist() == [[[1.5, 2.0, 3.0, 3.5]]]
    plain = lowering.lower(pool_model([1, 1, 4], kernel_shape=[2]), ops=["AveragePool"])
    constants = [n for n in plain.graph.node if n.op_type == "Constant"]
    assert any(not onnx.numpy_helper.to_array(n.attribute[0].t).shape for n in constants)


def _refusal(model: onnx.ModelProto) -> str:
    report = lowering.lower_model(model, ops=["AveragePool"]).report
    assert not report.complete
    return report.remaining[0].reason


def test_refusals_name_what_is_missing():
    assert "spatial sizes are not all known" in _refusal(pool_model([1, 1, "n"], kernel_shape=[2]))
    dilated_same = pool_model([1, 1, 7], kernel_shape=[3], dilations=[2], auto_pad="SAME_UPPER")
    assert "pads those otherwise than the spec" in _refusal(dilated_same)
    short_same = pool_model([1, 1, 7], kernel_shape=[1], strides=[4], auto_pad="SAME_UPPER")
    assert "shorter than its stride" in _refusal(short_same)
    valid_ceil = pool_model([1, 1, 3], kernel_shape=[2], strides=[2], auto_pad="VALID", ceil_mode=1)
    assert "VALID with ceil_mode=1" in _refusal(valid_ceil)
    assert "from opset 7, not 6" in _refusal(pool_model([1, 1, 5], opset=6, kernel_shape=[2]))
    ceil_on_pad = pool_model([1, 1, 4], opset=19, kernel_shape=[2], strides=[2], pads=[0, 1], ceil_mode=1)
    assert "a ceil_mode window starting in the end padding" in _refusal(ceil_on_pad)  # (kept before 22)
    assert "has no window" in _refusal(pool_model([1, 1, 2], kernel_shape=[4]))
    assert "holds no element of x" in _refusal(pool_model([1, 1, 2], kernel_shape=[2], pads=[3, 0], strides=[1]))
    double = pool_model([1, 1, 4], element_type=TensorProto.DOUBLE, kernel_shape=[2])
    assert "runs no Conv-22 on double" in _refusal(double)  # (onnxruntime has no double Conv kernel)


@pytest.mark.parametrize("form", ["if", "function"])
def test_average_pool_is_lowered_in_an_if_branch_and_a_local_function(form):
    model = nested_forms(pool_model([2, 3, 6, 7], kernel_shape=[2, 3], pads=[1, 2, 1, 2], count_include_pad=1))[form]
    lowered = lowered_wholly(model, "AveragePool")
    x = np.random.default_rng(7).standard_normal([2, 3, 6, 7]).astype(np.float32)
    for taken in (True, False):
        feeds = {"x": x, "branch": np.array(taken)}
        assert_within(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0], f"{form} {taken}")


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("size", [4, 5])
def test_auto_pad_at_version_11_is_counted_as_onnxruntime_counts_it(auto_pad, size):
    """AveragePool-11 states its auto_pad count two ways (floor and, in the attribute, ceil);
    onnxruntime counts the ceil ones, as later versions restate: so does the rule (kernel 3 or 2,
    stride 2), window for window."""
    kernel = [2] if auto_pad == "VALID" else [3]
    model = pool_model([1, 2, size], opset=11, kernel_shape=kernel, strides=[2], auto_pad=auto_pad)
    lowered = lowering.lower(model, ops=["AveragePool"])
    x = np.random.default_rng(size).standard_normal([1, 2, size]).astype(np.float32)
    assert_within(run_onnxruntime(lowered, {"x": x})[0], run_onnxruntime(model, {"x": x})[0], auto_pad)
