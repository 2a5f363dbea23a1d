"""rules/quantize_linear.py: QuantizeLinear and DequantizeLinear lowered to their formulas at the
node's own opset, bit for bit against onnxruntime's kernels (every float16 pattern, every 8- and
16-bit x, NaN, ±inf, ±0, ties, the bounds) per tensor, per axis and in blocks; what they cannot
say (float8, 4- and 2-bit types, int32 x, below opset 11) left with the reason; and --target
lowering them for a runtime that lacks them."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import lowered_wholly, nested_forms
from version_cases import feeds_of, node_cases

import lowering
from lowering.runtime_profiles import profile_from_data
from lowering.samples import edge_values
from lowering.verification.runtime import run_onnxruntime

INTEGERS = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
            TensorProto.UINT16: np.uint16}  # fmt: skip
# (axis, block_size, x shape) per layout; None: per tensor
LAYOUTS = {"per tensor": (None, 0, (2, 3, 4)), "per axis": (1, 0, (2, 3, 4)), "last axis": (-1, 0, (3, 2, 5)),
           "in blocks": (1, 2, (3, 5))}  # fmt: skip


def _model(op_type: str, opset: int, x_type: int, scale: np.ndarray, zero: np.ndarray | None, shape, **attributes):
    """One QuantizeLinear or DequantizeLinear of x (a graph input of ``shape``), its scale and zero
    point initializers."""
    initializers, inputs = [numpy_helper.from_array(scale, "scale")], ["x", "scale"]
    if zero is not None:
        initializers.append(numpy_helper.from_array(zero, "zero"))
        inputs.append("zero")
    if op_type == "QuantizeLinear":
        y_type = helper.np_dtype_to_tensor_dtype(zero.dtype) if zero is not None else TensorProto.UINT8
    else:
        y_type = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node(op_type, inputs, ["y"], name="q", **attributes)], "g",
        [helper.make_tensor_value_info("x", x_type, shape)], [helper.make_tensor_value_info("y", y_type, shape)],
        initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _scale_and_zero(axis: int | None, block_size: int, shape, dtype, seed: int = 0):
    """Scales of several magnitudes and both signs, and zero points over the type's range (its
    least value among them), of the shape the layout gives them."""
    if axis is None:
        scale_shape = []
    elif block_size:
        scale_shape = list(shape)
        scale_shape[axis] = -(-shape[axis] // block_size)
    else:
        scale_shape = [shape[axis]]
    size = int(np.prod(scale_shape))
    rng = np.random.default_rng(seed)
    pool = np.array([0.5, 1.0, 0.25, 3.0, 1e-3, 7.5, -2.0, 1e4, 0.1, 1e-4], np.float64)
    scale = rng.permutation(np.resize(pool, size)).astype(np.float32).reshape(scale_shape)
    info = np.iinfo(dtype)
    zero = rng.integers(info.min, info.max, size, endpoint=True).astype(dtype)
    zero[0] = info.min
    return scale, zero.reshape(scale_shape)


def _attributes(axis: int | None, block_size: int) -> dict:
    attributes = {} if axis is None else {"axis": axis}
    return attributes | ({"block_size": block_size} if block_size else {})


def _quantize_feeds(shape, seed: int) -> list[dict]:
    """Edge values; ties (k + 0.5) around and beyond the 16-bit range; the bounds ± a half."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    edges = rng.permutation(np.resize(edge_values(TensorProto.FLOAT), size))
    ties = np.arange(-70000, 70000, 0.5)[rng.integers(0, 280000, size)]
    bounds = np.array([-128.5, -127.5, 127.5, 128.5, 255.5, 254.5, -0.5, 0.5, 1.5, 2.5, -32768.5, 32767.5,
                       65535.5, 65534.5, 3e38, -3e38, 1e-30, -1e-45])  # fmt: skip
    picked = rng.permutation(np.resize(bounds, size))
    with np.errstate(over="ignore"):
        return [{"x": values.astype(np.float32).reshape(shape)} for values in (edges, ties, picked)]


def _lowered(model: onnx.ModelProto, op_type: str) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=[op_type])
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert op_type not in {node.op_type for node in result.model.graph.node}
    return result.model


def _assert_same_bits(model: onnx.ModelProto, lowered: onnx.ModelProto, feeds: list[dict]) -> None:
    for feed in feeds:
        [want], [got] = run_onnxruntime(model, feed), run_onnxruntime(lowered, feed)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("y_type", sorted(INTEGERS))
def test_quantize_is_its_formula_bit_for_bit(y_type, layout):
    """QuantizeLinear-21 (and -13 on 8-bit types, per tensor or axis), with and without a zero
    point, against onnxruntime's kernel on edge values, ties and bounds."""
    dtype = INTEGERS[y_type]
    axis, block_size, shape = LAYOUTS[layout]
    scale, zero = _scale_and_zero(axis, block_size, shape, dtype)
    opsets = [21] + ([13] if dtype().itemsize == 1 and not block_size else [])
    for opset in opsets:
        for zero_point in (zero, None) if y_type == TensorProto.UINT8 else (zero,):
            attributes = _attributes(axis, block_size)
            model = _model("QuantizeLinear", opset, TensorProto.FLOAT, scale, zero_point, shape, **attributes)
            _assert_same_bits(model, _lowered(model, "QuantizeLinear"), _quantize_feeds(shape, opset))


@pytest.mark.parametrize("y_type", sorted(INTEGERS))
def test_quantize_of_every_float16_pattern_is_its_formula(y_type):
    """Every float16 bit pattern as x, per axis and per tensor (QuantizeLinear-21 divides a
    float16 x by its float16 scale in float32, as the formula does)."""
    dtype = INTEGERS[y_type]
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(4, 16384)
    scales = np.array([1.0, 0.0999755859375, -3.0, 6.103515625e-05], np.float16)
    zero = np.array([0, 1, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype)
    for scale, zero_point, attributes in ((scales, zero, {"axis": 0}), (np.array(0.5, np.float16), zero[1], {})):
        model = _model("QuantizeLinear", 21, TensorProto.FLOAT16, scale, np.asarray(zero_point), every.shape,
                       **attributes)  # fmt: skip
        _assert_same_bits(model, _lowered(model, "QuantizeLinear"), [{"x": every}])


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("x_type", sorted(INTEGERS))
def test_dequantize_of_every_value_is_its_formula(x_type, layout):
    """Every value of x's type (tiled along a leading axis), with and without a zero point,
    DequantizeLinear-21 (and -13 on 8-bit types), against onnxruntime's kernel."""
    dtype = INTEGERS[x_type]
    axis, block_size, base = LAYOUTS[layout]
    info = np.iinfo(dtype)
    every = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)
    shape = (-(-every.size // int(np.prod(base))), *base)
    axis = axis + 1 if axis is not None and axis >= 0 else axis
    x = np.resize(every, int(np.prod(shape))).reshape(shape)
    scale, zero = _scale_and_zero(axis, block_size, shape, dtype, seed=1)
    opsets = [21] + ([13] if dtype().itemsize == 1 and not block_size else [])
    for opset in opsets:
        for zero_point in (zero, None):
            model = _model("DequantizeLinear", opset, x_type, scale, zero_point, shape, **_attributes(axis, block_size))
            _assert_same_bits(model, _lowered(model, "DequantizeLinear"), [{"x": x}])


def _declined(model: onnx.ModelProto, op_type: str, said: str) -> None:
    onnx.checker.check_model(model, full_check=True)
    result = lowering.lower_model(model, ops=[op_type])
    assert [node.op_type for node in result.model.graph.node] == [op_type]
    assert any(said in remaining.reason for remaining in result.report.remaining), result.report.lines()


def test_what_the_formulas_cannot_say_is_left_with_the_reason():
    """A QuantizeLinear to float8, a DequantizeLinear of int32, a QuantizeLinear at opset 10
    (which has no Round): each left, the report saying why."""
    scale = np.array(0.5, np.float32)
    to_float8 = _model("QuantizeLinear", 21, TensorProto.FLOAT, scale, None, (2, 3))
    to_float8.graph.initializer.append(helper.make_tensor("zero", TensorProto.FLOAT8E4M3FN, [], [0]))
    to_float8.graph.node[0].input.append("zero")
    to_float8.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT8E4M3FN
    _declined(to_float8, "QuantizeLinear", "it quantizes to float8e4m3fn")
    of_int32 = _model("DequantizeLinear", 21, TensorProto.INT32, scale, np.array(0, np.int32), (2, 3))
    _declined(of_int32, "DequantizeLinear", "its x is int32")
    at_10 = _model("QuantizeLinear", 10, TensorProto.FLOAT, scale, np.array(0, np.uint8), (2, 3))
    _declined(at_10, "QuantizeLinear", "exists from opset 11")


def test_target_lowers_quantize_and_dequantize_where_the_runtime_lacks_them():
    """A runtime that fails QuantizeLinear and DequantizeLinear (onnx2torch fails every case):
    --target writes their formulas, which mean the same, bit for bit."""
    profile = profile_from_data({
        "name": "no-quantize", "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [21],
        "cases": {"test_quantizelinear": {"op": "QuantizeLinear", "version": 21, "type": "FLOAT", "verdict": "fails"},
                  "test_dequantizelinear": {"op": "DequantizeLinear", "version": 21, "type": "UINT8",
                                            "verdict": "fails"}},
    })  # fmt: skip
    scale, zero = _scale_and_zero(1, 0, (2, 3, 4), np.uint8)
    quantize = _model("QuantizeLinear", 21, TensorProto.FLOAT, scale, zero, (2, 3, 4), axis=1)
    dequantize = _model("DequantizeLinear", 21, TensorProto.UINT8, scale, zero, (2, 3, 4), axis=1)
    for model, feeds in ((quantize, _quantize_feeds((2, 3, 4), 5)),
                         (dequantize, [{"x": np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 10}])):  # fmt: skip
        result = lowering.lower_model(model, target=profile)
        assert not {"QuantizeLinear", "DequantizeLinear"} & {node.op_type for node in result.model.graph.node}
        _assert_same_bits(model, result.model, feeds)


@pytest.mark.parametrize("form", ["if", "function"])
def test_the_formulas_hold_in_an_if_branch_and_a_local_function(form):
    """QuantizeLinear and DequantizeLinear per axis on int8, in both branches of an If and in a
    local function: lowered wherever they are, bit for bit."""
    axis, block_size, shape = LAYOUTS["per axis"]
    scale, zero = _scale_and_zero(axis, block_size, shape, np.int8)
    dequantize_feeds = [{"x": np.arange(-12, 12, dtype=np.int8).reshape(shape)}]
    for op_type, x_type, feeds in (("QuantizeLinear", TensorProto.FLOAT, _quantize_feeds(shape, 3)),
                                   ("DequantizeLinear", TensorProto.INT8, dequantize_feeds)):  # fmt: skip
        model = nested_forms(_model(op_type, 21, x_type, scale, zero, shape, **_attributes(axis, block_size)))[form]
        lowered = lowered_wholly(model, op_type)
        _assert_same_bits(
            model, lowered, [feed | {"branch": np.array(taken)} for feed in feeds for taken in (True, False)]
        )


@pytest.mark.parametrize("name", ["test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted"])
def test_a_quantize_linear_inside_a_function_body_is_lowered_by_its_rule_with_its_constants(name):
    """DynamicQuantizeLinear's body holds a QuantizeLinear: both lowered in one pass, the
    QuantizeLinear by its rule inside the body, whose shared constants (the integer type's least
    and greatest values) are written before its nodes; bit for bit the op's outputs."""
    case = next(c for c in node_cases() if c.name == name)
    result = lowering.lower_model(case.model, ops=["DynamicQuantizeLinear", "QuantizeLinear"])
    assert not result.report.remaining
    assert not {"DynamicQuantizeLinear", "QuantizeLinear"} & {node.op_type for node in result.model.graph.node}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_of(case.model, case.data_sets[0][0])
    got, want = run_onnxruntime(result.model, feeds), run_onnxruntime(case.model, feeds)
    assert [a.tobytes() for a in got] == [b.tobytes() for b in want]
