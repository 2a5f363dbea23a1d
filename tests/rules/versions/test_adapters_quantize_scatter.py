"""QuantizeLinear per axis, in blocks, on float16 or to 16-bit integers as its formula, and
TensorScatter as ScatterElements (issue 13): each converts bit for bit against onnxruntime's kernel for
the original (every float16 pattern, NaN, ±inf, ±0, ties, extremes), or is refused by a sentence
of ours naming the op, its version, the target opset and what cannot be said there."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)
from test_adapters_resize_quantize import assert_converts_bit_for_bit, edge_array, of_unknown_rank, refusal
from version_cases import feeds_of, node_cases

import lowering
from lowering.verification.runtime import run_onnxruntime

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16
INTEGERS = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, TensorProto.INT16: np.int16,
            TensorProto.UINT16: np.uint16}  # fmt: skip


def lowered(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lowering.lower(model, target_opset=target, ops=[])


# -- QuantizeLinear as its formula ---------------------------------------------------------------------


def quantize(opset: int, x_type: int, scale: np.ndarray, zero: np.ndarray | None, shape, **attrs) -> onnx.ModelProto:
    """QuantizeLinear of x (a graph input of ``shape``) by constant scale and zero point."""
    initializer = [numpy_helper.from_array(scale, "scale")]
    inputs = ["x", "scale"]
    y_type = TensorProto.UINT8
    if zero is not None:
        initializer.append(numpy_helper.from_array(zero, "zero"))
        inputs.append("zero")
        y_type = helper.np_dtype_to_tensor_dtype(zero.dtype)
    y_type = attrs.get("output_dtype", y_type)
    return make_model(
        [helper.make_node("QuantizeLinear", inputs, ["y"], name="q", **attrs)],
        [helper.make_tensor_value_info("x", x_type, shape)],
        [helper.make_tensor_value_info("y", y_type, shape)],
        opset=opset,
        initializer=initializer,
    )


def quantize_inputs(shape, dtype, seed: int) -> list[dict]:
    """Edge values; ties (k + 0.5, which round half to even) and the range's bounds ± a half
    around the integer range, in units of the scale; huge and tiny values."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    ties = (np.arange(-70000, 70000, 0.5)[rng.integers(0, 280000, size)]).astype(dtype)
    bounds = np.array([-128.5, -127.5, 127.5, 128.5, 255.5, 254.5, -0.5, 0.5, 1.5, 2.5, -32768.5, 32767.5,
                       65535.5, 65534.5, 3e38, -3e38, 1e-30, -1e-45], np.float64)  # fmt: skip
    with np.errstate(over="ignore"):
        picked = np.resize(bounds, size).astype(dtype)
    shuffled = rng.permutation(picked).reshape(shape)
    return [{"x": edge_array(shape, dtype, seed)}, {"x": ties.reshape(shape)}, {"x": shuffled}]


def per_axis_scales(length: int, dtype, seed: int) -> np.ndarray:
    """Scales of several magnitudes and both signs (the op does not forbid negative ones)."""
    pool = np.array([1.0, 0.5, 0.25, 3.0, 1e-3, 7.5, -2.0, 1e4, 0.1, 1e-4], np.float64)
    return np.random.default_rng(seed).permutation(np.resize(pool, length)).astype(dtype)


@slow_but_a_sample()
@pytest.mark.parametrize("y_type", sorted(INTEGERS))
@pytest.mark.parametrize("axis, shape", [(1, (2, 3, 4)), (0, (5, 6)), (-1, (3, 2, 4)), (-2, (2, 5, 3))])
def test_quantize_per_axis_goes_to_11_as_its_formula(y_type, axis, shape):
    dtype = INTEGERS[y_type]
    length = shape[axis]
    rng = np.random.default_rng(length)
    info = np.iinfo(dtype)
    zero = rng.integers(info.min, info.max, length, endpoint=True).astype(dtype)
    zero[0] = info.min if length > 2 else zero[0]
    opset = 13 if y_type in (TensorProto.INT8, TensorProto.UINT8) else 21
    model = quantize(opset, FLOAT, per_axis_scales(length, np.float32, 1), zero, shape, axis=axis)
    for target in (11, 12) if opset == 13 else (11, 13, 17):
        result = assert_converts_bit_for_bit(model, target, quantize_inputs(shape, np.float32, 3), "QuantizeLinear-")
        assert not any(n.op_type == "QuantizeLinear" for n in result.model.graph.node)


@slow_but_a_sample()
@pytest.mark.parametrize("y_type", sorted(INTEGERS))
def test_quantize_float16_every_pattern_goes_to_13_and_11_as_its_formula(y_type):
    """Every float16 bit pattern as x, per axis and per tensor, against onnxruntime's
    QuantizeLinear-21 (which divides in float32, as the formula does)."""
    dtype = INTEGERS[y_type]
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(4, 16384)
    scales = np.array([1.0, 0.0999755859375, -3.0, 6.103515625e-05], np.float16)
    zero = np.array([0, 1, np.iinfo(dtype).max, np.iinfo(dtype).min], dtype)
    for scale, zero_point, attrs in ((scales, zero, {"axis": 0}), (np.array(0.5, np.float16), zero[1], {})):
        model = quantize(21, FLOAT16, scale, np.asarray(zero_point), every.shape, **attrs)
        for target in (13, 11):
            assert_converts_bit_for_bit(model, target, [{"x": every}], "QuantizeLinear-21→")


@slow_but_a_sample()
@pytest.mark.parametrize("y_type", sorted(INTEGERS))
@pytest.mark.parametrize("axis, block_size, shape", [(1, 2, (3, 4)), (0, 3, (7, 2)), (-1, 4, (2, 3, 6))])
def test_quantize_in_blocks_goes_to_17_and_11_as_its_formula(y_type, axis, block_size, shape):
    dtype = INTEGERS[y_type]
    scale_shape = list(shape)
    scale_shape[axis] = -(-shape[axis] // block_size)
    rng = np.random.default_rng(block_size)
    info = np.iinfo(dtype)
    scale = per_axis_scales(int(np.prod(scale_shape)), np.float32, 2).reshape(scale_shape)
    zero = rng.integers(info.min, info.max, scale_shape, endpoint=True).astype(dtype)
    model = quantize(21, FLOAT, scale, zero, shape, axis=axis, block_size=block_size)
    for target in (17, 13, 11):
        assert_converts_bit_for_bit(model, target, quantize_inputs(shape, np.float32, 5), "QuantizeLinear-21→")


@pytest.mark.parametrize("target", [20, 19])
def test_quantize_stating_later_attributes_goes_to_19_and_20_bit_for_bit(target):
    """Going down across 21 and 23 (not 19): QuantizeLinear-25 in blocks to int8, and stating
    block_size=0 and output_dtype=0 (their defaults) to uint16, which version 19 takes only as its
    formula; and to 22, across 23, stating precision float (its scale's type): bit for bit."""
    shape = (3, 4)
    scale = per_axis_scales(6, np.float32, 2).reshape(3, 2)
    zero = np.random.default_rng(3).integers(-128, 127, (3, 2), endpoint=True).astype(np.int8)
    feeds = quantize_inputs(shape, np.float32, 5)
    blocked = quantize(25, FLOAT, scale, zero, shape, axis=1, block_size=2)
    assert_converts_bit_for_bit(blocked, target, feeds, "QuantizeLinear-25→")
    wide = quantize(25, FLOAT, np.array(0.5, np.float32), np.array(7, np.uint16), shape, block_size=0)
    wide.graph.node[0].attribute.append(helper.make_attribute("output_dtype", 0))
    assert_converts_bit_for_bit(wide, target, feeds, "QuantizeLinear-25→")
    in_float = quantize(25, FLOAT, scale, zero, shape, axis=1, block_size=2, precision=FLOAT)
    assert_converts_bit_for_bit(in_float, 22, feeds, "QuantizeLinear-25→")


@pytest.mark.parametrize("y_type", [TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2])
@pytest.mark.parametrize("saturate", [0, 1])
def test_quantize_to_float8_by_output_dtype_goes_to_20_bit_for_bit(y_type, saturate):
    """QuantizeLinear-25 of float16 values to float8 by output_dtype, no zero point: at 20 (19's
    version, which lacks output_dtype) a zero point of float8 zeros says the type; saturate kept;
    every float16 pattern, bit for bit."""
    shape = (256, 256)  # (precision float: 25 divides in float32, as 20 does; unset, float16 would differ)
    model = quantize(25, FLOAT16, np.array(0.75, np.float16), None, shape, output_dtype=y_type, saturate=saturate,
                     precision=FLOAT)  # fmt: skip
    every = np.arange(2**16, dtype=np.uint16).view(np.float16).reshape(shape)
    assert_converts_bit_for_bit(model, 20, [{"x": every}], "QuantizeLinear-25→")


@pytest.mark.parametrize("target", [22, 21, 19, 13, 10])
@pytest.mark.parametrize("zero", [np.array(3, np.uint8), np.array(-5, np.int8)])
def test_quantize_23_of_float16_values_by_a_float_scale_goes_down_with_x_cast_first(zero, target):
    """QuantizeLinear-23 types x and the scale apart and divides in the scale's type: float16
    values by a float scale are divided in float32. Versions before 23 give x and the scale one
    type (or the scale float alone), so x goes as Cast(x, float) first: every float16 pattern,
    bit for bit with
    onnxruntime's QuantizeLinear-23 (onnx.reference's takes +inf to 0)."""
    shape = (256, 256)
    model = quantize(23, FLOAT16, np.array(0.37, np.float32), zero, shape)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16).reshape(shape)
    result = assert_converts_bit_for_bit(model, target, [{"x": every}], "QuantizeLinear-23→")
    assert [node.op_type for node in result.model.graph.node] == ["Cast", "QuantizeLinear"]


@pytest.mark.parametrize("target", [21, 19, 13])
@pytest.mark.parametrize(("x_type", "scale"), [(FLOAT16, 0.37), (FLOAT16, 0.1), (FLOAT, 0.37)])
def test_quantize_23_by_a_float16_scale_divides_in_float16_where_older_versions_do_not(x_type, scale, target):
    """QuantizeLinear-23 of a float16 scale, precision unset, divides in float16 (x taken to it),
    where QuantizeLinear-21 and older divide float16 in float32 (1.666 / 0.37: 4.5 in float16,
    4.5013 in float32, quantized to 7 and 8 by a zero point of 3): going down it is its formula,
    the quotient rounded to float16; every float16 pattern (float x: those as float), bit for
    bit with onnxruntime's QuantizeLinear-23."""
    shape = (256, 256)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16).reshape(shape)
    x = every if x_type == FLOAT16 else every.astype(np.float32)
    model = quantize(23, x_type, np.array(scale, np.float16), np.array(3, np.uint8), shape)
    result = assert_converts_bit_for_bit(model, target, [{"x": x}], "QuantizeLinear-23→")
    assert "Round" in {node.op_type for node in result.model.graph.node}


@pytest.mark.parametrize("x_type", [FLOAT16, FLOAT])
def test_quantize_23_by_a_float16_scale_lowered_by_its_rule_divides_in_float16(x_type):
    """The QuantizeLinear rule (--ops QuantizeLinear) at version 23 divides a float16 scale's
    quotient in float16 as the op does there: every float16 pattern, bit for bit."""
    shape = (256, 256)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16).reshape(shape)
    x = every if x_type == FLOAT16 else every.astype(np.float32)
    model = quantize(23, x_type, np.array(0.37, np.float16), np.array(3, np.uint8), shape)
    lowered = lowering.lower(model, ops=["QuantizeLinear"], strict=True)
    onnx.checker.check_model(lowered, full_check=True)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(lowered, {"x": x})
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("target", [23, 25])
@pytest.mark.parametrize("source", [19, 21])
def test_quantize_by_a_float16_scale_going_up_across_23_states_precision_float(source, target):
    """QuantizeLinear-19/21 of float16 values and scale divide in float32 (onnxruntime); 23 and
    later divide in the scale's type where precision is unset: going up, precision float is
    stated. Every float16 pattern, bit for bit; a float scale goes as it is."""
    shape = (256, 256)
    every = np.arange(2**16, dtype=np.uint16).view(np.float16).reshape(shape)
    model = quantize(source, FLOAT16, np.array(0.37, np.float16), np.array(3, np.uint8), shape)
    result = assert_converts_bit_for_bit(model, target, [{"x": every}], "QuantizeLinear-")
    [node] = result.model.graph.node
    assert [(a.name, a.i) for a in node.attribute] == [("precision", FLOAT)]
    as_float = quantize(source, FLOAT, np.array(0.37, np.float32), np.array(3, np.uint8), shape)
    [node] = lowering.lower(as_float, target_opset=target, ops=[]).graph.node
    assert not node.attribute
    # (a scale of no inferred type, given by another domain's node: x's type, which 19 to 22 tie it to)
    unknown = quantize(source, FLOAT16, np.array(0.37, np.float16), np.array(3, np.uint8), shape)
    unknown.graph.initializer.remove(next(t for t in unknown.graph.initializer if t.name == "scale"))
    unknown.graph.node.insert(0, helper.make_node("Scale", ["x"], ["scale"], domain="custom"))
    unknown.opset_import.append(helper.make_opsetid("custom", 1))
    [_, node] = lowering.lower(unknown, target_opset=target, ops=[]).graph.node
    assert [(a.name, a.i) for a in node.attribute] == [("precision", FLOAT)]


def test_quantize_without_zero_point_to_uint16_by_output_dtype_goes_to_11():
    model = quantize(21, FLOAT, np.array([0.5, 2.0, -1.0], np.float32), None, (2, 3), axis=1,
                     output_dtype=TensorProto.UINT16)  # fmt: skip
    assert_converts_bit_for_bit(model, 11, quantize_inputs((2, 3), np.float32, 7), "QuantizeLinear-21→")


def test_quantize_per_axis_below_11_and_of_unknown_rank_is_refused_naming_why():
    scale = np.array([0.5, 0.25, 2.0, 1e-3], np.float32)
    model = quantize(13, FLOAT, scale, np.zeros(4, np.uint8), (3, 4), axis=1)
    message = refusal(model, 10)
    assert "QuantizeLinear-13 quantizes per axis, and Round" in message and "opset 10" in message, message
    message = refusal(of_unknown_rank(model, "x"), 11)
    assert "ranks of its scale and input are not known" in message, message


def test_quantize_dividing_in_float16_goes_as_its_formula_and_in_bfloat16_is_refused():
    """precision float16 (or, unset, a float16 scale) divides in float16 from version 23, where
    older versions divide in float32: its formula rounds the quotient to float16 first, bit for
    bit; bfloat16, which no formula here divides in, is refused naming it."""
    scale = np.array([0.37, 0.1], np.float32)
    model = quantize(25, FLOAT, scale, np.zeros(2, np.int16), (3, 2), axis=1, precision=FLOAT16)
    assert_converts_bit_for_bit(model, 11, quantize_inputs((3, 2), np.float32, 3), "QuantizeLinear-25→")
    model = quantize(25, FLOAT, scale, np.zeros(2, np.int16), (3, 2), axis=1, precision=TensorProto.BFLOAT16)
    message = refusal(model, 11)
    assert "QuantizeLinear-25 quantizes to int16" in message and "divided in float32 or float16" in message, message


QUANTIZE_CASES = {
    11: ("test_quantizelinear_axis", "test_quantizelinear_int16", "test_quantizelinear_uint16",
         "test_quantizelinear_blocked_asymmetric", "test_quantizelinear_blocked_symmetric"),
    13: ("test_quantizelinear_int16", "test_quantizelinear_uint16", "test_quantizelinear_blocked_asymmetric",
         "test_quantizelinear_blocked_symmetric"),
}  # fmt: skip


@pytest.mark.parametrize("target", [11, 13, 17])
def test_backend_quantize_cases_onnxruntime_has_no_kernel_for_give_the_expected_outputs(target):
    """onnxruntime has no QuantizeLinear-28 kernel (the cases' own version), so the sweep cannot
    compare them: the lowered models are compared with the cases' expected outputs, bit for bit."""
    compared = set()
    for case in node_cases():
        if case.name not in QUANTIZE_CASES[min(target, 13)]:
            continue
        compared.add(case.name)
        model = lowered(case.model, target)
        for inputs, expected in case.data_sets:
            got = run_onnxruntime(model, feeds_of(model, inputs))
            for value, want in zip(got, expected, strict=True):
                want = numpy_helper.to_array(want) if isinstance(want, onnx.TensorProto) else np.asarray(want)
                assert value.dtype == want.dtype and np.array_equal(value, want), case.name
    assert compared == set(QUANTIZE_CASES[min(target, 13)])  # every case named was found and compared


def test_adapters_write_no_op_the_caller_asks_to_lower():
    """With the default ops (IsNaN and IsInf among them), the formulas that find NaN (QuantizeLinear
    per axis, ArgMax with select_last_index, Mod-28 on floats) write it as Equal(Equal(x, x),
    false), not IsNaN: the conversion succeeds, no requested op is left, and the outputs are
    those of the conversion that lowers nothing, bit for bit."""
    zero = np.array([0, 128, 255], np.uint8)
    models = {
        "QuantizeLinear": (quantize(13, FLOAT, per_axis_scales(3, np.float32, 1), zero, (2, 3), axis=1),
                           {"x": edge_array((2, 3), np.float32, 5)}),
        "ArgMax": (make_model([helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0, select_last_index=1)],
                              [helper.make_tensor_value_info("x", FLOAT, [4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, [4])], opset=13),
                   {"x": edge_array((4, 6), np.float32, 6)}),
        "Mod": (make_model([helper.make_node("Mod", ["a", "b"], ["y"])],
                           [helper.make_tensor_value_info(name, FLOAT, [8]) for name in ("a", "b")],
                           [helper.make_tensor_value_info("y", FLOAT, [8])], opset=28),
                {"a": edge_array((8,), np.float32, 7), "b": np.array([2, -2, 0.5, -0.5, 3, -3, 1e-3, 7], np.float32)}),
    }  # fmt: skip
    for op_type, (model, feeds) in models.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            defaults = lowering.lower(model, target_opset=11)
            nothing = lowering.lower(model, target_opset=11, ops=[])
        ops = {n.op_type for n in defaults.graph.node}
        assert not ops & {"IsNaN", "IsInf"} and "QuantizeLinear" not in ops, (op_type, ops)
        for got, want in zip(run_onnxruntime(defaults, feeds), run_onnxruntime(nothing, feeds), strict=True):
            assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8)), op_type


# -- TensorScatter-24 as ScatterElements ------------------------------------------------------------


def tensorscatter(cache_shape, update_shape, element_type: int, with_indices: bool = True, **attrs):
    inputs = [helper.make_tensor_value_info("past_cache", element_type, cache_shape),
              helper.make_tensor_value_info("update", element_type, update_shape)]  # fmt: skip
    if with_indices:
        inputs.append(helper.make_tensor_value_info("write_indices", TensorProto.INT64, [cache_shape[0]]))
    node = helper.make_node("TensorScatter", [i.name for i in inputs], ["present_cache"], name="ts", **attrs)
    output = helper.make_tensor_value_info("present_cache", element_type, cache_shape)
    return make_model([node], inputs, [output], opset=24)


def cache_values(shape, dtype, seed: int) -> np.ndarray:
    """Every bit pattern of an 8- or 16-bit type (NaN payloads, -0), edge values of the others."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    if dtype == np.bool_:
        return np.random.default_rng(seed).integers(0, 2, count).astype(bool).reshape(shape)
    if dtype.itemsize <= 2:
        patterns = np.arange(1 << (8 * dtype.itemsize), dtype=f"u{dtype.itemsize}").view(dtype)
        return np.random.default_rng(seed).permutation(np.resize(patterns, count)).reshape(shape)
    if dtype.kind == "f":
        return edge_array(shape, dtype, seed)
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, count, dtype=dtype, endpoint=True).reshape(shape)


TYPES = [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT8, TensorProto.UINT16,
         TensorProto.INT64, TensorProto.BOOL]  # fmt: skip


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", TYPES)
@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize(
    "cache_shape, update_shape, axis",
    [((2, 3, 64, 8), (2, 3, 5, 8), -2), ((3, 40, 16), (3, 40, 1), 2), ((4, 17, 6), (4, 17, 6), 1),
     ((2, 9, 3, 5), (2, 4, 3, 5), 1)],
)  # fmt: skip
def test_tensorscatter_goes_down_as_scatter_elements_bit_for_bit(element_type, mode, cache_shape, update_shape, axis):
    from lowering.rules.tensorscatter import tensorscatter_reference

    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    length, written = cache_shape[axis], update_shape[axis]
    rng = np.random.default_rng(len(cache_shape) + written)
    for with_indices in (True, False):
        model = tensorscatter(cache_shape, update_shape, element_type, with_indices, mode=mode, axis=axis)
        feeds = {"past_cache": cache_values(cache_shape, dtype, 1), "update": cache_values(update_shape, dtype, 2)}
        if with_indices:  # circular: any start, past the end included; linear: within the cache
            high = length - written if mode == "linear" else 3 * length
            feeds["write_indices"] = rng.integers(0, high, cache_shape[0], endpoint=True)
            feeds["write_indices"][0] = high if mode == "linear" else length - 1
        expected = tensorscatter_reference(**feeds, mode=mode, axis=axis)
        native = run_onnxruntime(model, feeds)[0]
        assert np.array_equal(native.view(np.uint8), expected.view(np.uint8))
        for target in (21, 17, 13, 11):
            converted = lowered(model, target)
            onnx.checker.check_model(converted, full_check=True)
            assert not any(n.op_type == "TensorScatter" for n in converted.graph.node)
            (got,) = run_onnxruntime(converted, feeds)
            assert got.dtype == native.dtype and np.array_equal(got.view(np.uint8), native.view(np.uint8)), target


def test_tensorscatter_on_the_batch_axis_or_of_unknown_rank_is_refused_in_our_words():
    model = tensorscatter((3, 4), (3, 4), FLOAT, axis=0)
    message = refusal(model, 17)
    assert "TensorScatter-24 cannot be expressed at opset 17" in message and "axis 0 is not a sequence axis" in message
    model = of_unknown_rank(tensorscatter((3, 4, 5), (3, 2, 5), FLOAT), "past_cache")
    message = refusal(model, 17)
    assert "TensorScatter" in message and "rank of past_cache is unknown" in message, message
    message = refusal(tensorscatter((3, 4, 5), (3, 2, 5), FLOAT), 10)
    assert "do not exist at opset 10" in message, message


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensorscatter_negative_write_indices_go_as_the_schema_pseudocode_says(mode):
    """onnxruntime's kernel refuses negative write indices; the lowered graph indexes as the
    schema's pseudocode does (Python's negative indexing, and ``%`` when circular)."""
    from lowering.rules.tensorscatter import tensorscatter_reference

    model = tensorscatter((3, 7, 2), (3, 3, 2), FLOAT, mode=mode, axis=1)
    starts = np.array([-3, -7, -5], np.int64) if mode == "linear" else np.array([-1, -20, -7], np.int64)
    feeds = {
        "past_cache": edge_array((3, 7, 2), seed=4),
        "update": edge_array((3, 3, 2), seed=5),
        "write_indices": starts,
    }
    expected = tensorscatter_reference(**feeds, mode=mode, axis=1)
    (got,) = run_onnxruntime(lowered(model, 17), feeds)
    assert np.array_equal(got.view(np.uint32), expected.view(np.uint32))
