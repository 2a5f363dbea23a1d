"""MatMulInteger and ConvInteger (version 10, no function body) lowered to MatMul and Conv of
float32 values exact by construction: each product of offsets and each sum of a chunk of them
is an integer of magnitude at most 2^24, which float32 holds, so every order of summing gives
the same integer; the chunks' sums are added as int32, as the op accumulates."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

# Every integer of magnitude at most 2^24 is a float32, and so is every sum of such integers
# that stays within it.
FLOAT32_EXACT = 2**24
# The most chunks a product is split into (each one a MatMul or a Conv).
MOST_CHUNKS = 64
EMITS = ("Cast", "Sub", "Unsqueeze", "Reshape", "Slice", "MatMul", "Conv", "Add", "Constant")


def largest_offset(b: Builder, element_type: int, zero_point: Value | None) -> int:
    """The largest ``|v - z|`` for v of the 8-bit type and z the zero point's values (any of the
    type where it is given at run time; 0 where absent)."""
    info = np.iinfo(floats.numpy_dtype(element_type))
    if zero_point is None:
        points = [0]
    else:
        constant = b.constant_value(zero_point)
        points = [info.min, info.max] if constant is None else [int(z) for z in constant.reshape(-1)]
    return max(max(info.max - z, z - info.min) for z in points)


def chunk_length(b: Builder, a_type: int, a_zero: Value | None, b_type: int, b_zero: Value | None) -> int:
    """How many terms one float32 sum may hold: ``floor(2^24 / (largest offset of a · of b))``."""
    return FLOAT32_EXACT // (largest_offset(b, a_type, a_zero) * largest_offset(b, b_type, b_zero))


def offsets(b: Builder, x: Value, zero_point: Value | None) -> Value:
    """``Cast(x, float) - Cast(zero_point, float)``: exact (integers of at most 9 bits)."""
    values = b.Cast(x, to=onnx.TensorProto.FLOAT)
    if zero_point is None:
        return values
    return b.Sub(values, b.Cast(zero_point, to=onnx.TensorProto.FLOAT))


def int32_sum(b: Builder, parts: list[Value]) -> Value:
    """Each exact float32 sum cast to int32, added in int32 (wrapping, as the op's accumulation may)."""
    total = b.Cast(parts[0], to=onnx.TensorProto.INT32)
    for part in parts[1:]:
        total = b.Add(total, b.Cast(part, to=onnx.TensorProto.INT32))
    return total


def chunk_bounds(length: int, chunk: int) -> list[tuple[int, int]]:
    if chunk < 1:
        raise NotLowered("a single product of offsets exceeds 2^24, which float32 holds exactly")
    count = math.ceil(length / chunk)
    if count > MOST_CHUNKS:
        raise NotLowered(f"the sum of {length} terms would take {count} exact float32 chunks, more than {MOST_CHUNKS}")
    return [(start, min(start + chunk, length)) for start in range(0, length, chunk)]


def matmul_integer_reference(
    a: np.ndarray, b: np.ndarray, a_zero_point: np.ndarray | None = None, b_zero_point: np.ndarray | None = None
) -> np.ndarray:
    """numpy's matmul of the offsets in int64, wrapped to int32 (per-row zero points of a matrix
    A as a column)."""
    a_zero = np.zeros((), np.int64) if a_zero_point is None else a_zero_point.astype(np.int64)
    if a_zero.ndim == 1 and a.ndim >= 2:
        a_zero = a_zero[:, None]
    b_zero = np.zeros((), np.int64) if b_zero_point is None else b_zero_point.astype(np.int64)
    return np.matmul(a.astype(np.int64) - a_zero, b.astype(np.int64) - b_zero).astype(np.int32)


@rule("MatMulInteger", versions=(10,), reference=matmul_integer_reference, emits=EMITS)
def matmul_integer_by_exact_float_chunks(
    b: Builder, a: Value, b_matrix: Value, a_zero_point: Value | None = None, b_zero_point: Value | None = None
) -> Value:
    """MatMulInteger(A, B, za, zb) = Σ_chunks Cast(MatMul(A_c - za, B_c - zb), int32), in float32.

    The offsets ``A - za`` and ``B - zb`` are cast to float32 exactly (za of a 2-D A per row is
    a column, ``Unsqueeze(za, 1)``); the K terms of each dot product are split into chunks of
    at most ``floor(2^24 / (|A - za|max · |B - zb|max))`` (258 for uint8 against uint8 of zero
    points given at run time, 1024 for uint8 about 128 against int8 about 0), sliced along A's
    last axis and B's second to last, so each chunk's sum is an integer float32 holds whatever
    order the MatMul adds in; the chunks' sums are cast to int32 and added there. So the result
    is the op's bit for bit, and wraps as its int32 accumulation may. Needs K known, and a zero
    point of A of known rank; at most 64 chunks.
    """
    return exact_matmul(b, a, b_matrix, a_zero_point, b_zero_point)


def per_row(b: Builder, a_shape: list | None, value: Value) -> Value:
    """A's zero point or scale as it broadcasts against A: a 1-D one of a matrix A (per row) as
    a column, ``Unsqueeze(v, 1)``; a scalar, or one of A's own rank (``[D1, D2, M, 1]``), as it
    is; a 1-D one of a 1-D A (one value) as it is."""
    shape = b.shape_of(value)
    if shape is None:
        raise NotLowered(f"the rank of '{value.name}', per tensor or per row of A, is unknown")
    if len(shape) != 1:
        return value
    if a_shape is None:
        raise NotLowered(f"A's rank, which decides whether '{value.name}' is per row, is unknown")
    return b.over_axes("Unsqueeze", value, [1]) if len(a_shape) >= 2 else value


def exact_matmul(
    b: Builder, a: Value, b_matrix: Value, a_zero_point: Value | None, b_zero_point: Value | None
) -> Value:
    """The int32 ``MatMul(A - za, B - zb)`` by exact float32 chunks (:func:`matmul_integer_by_exact_float_chunks`)."""
    a_shape, b_shape = b.shape_of(a), b.shape_of(b_matrix)
    lengths = {s[-1] for s in [a_shape] if s} | {s[-2 if len(s) > 1 else -1] for s in [b_shape] if s}
    lengths.discard(None)
    if len(lengths) != 1:
        raise NotLowered("the length K that each dot product sums over is unknown")
    (length,) = lengths
    bounds = chunk_bounds(length, chunk_length(b, a.element_type, a_zero_point, b_matrix.element_type, b_zero_point))
    if a_zero_point is not None:
        a_zero_point = per_row(b, a_shape, a_zero_point)
    left, right = offsets(b, a, a_zero_point), offsets(b, b_matrix, b_zero_point)
    if len(bounds) == 1:
        return int32_sum(b, [b.MatMul(left, right)])
    if b_shape is None:
        raise NotLowered(f"B's rank, which places the axis its {len(bounds)} chunks are sliced along, is unknown")
    right_axis = -2 if len(b_shape) > 1 else -1
    parts = [
        b.MatMul(
            b.Slice(left, b.ints([start], "start"), b.ints([end], "end"), b.ints([-1], "last_axis")),
            b.Slice(right, b.ints([start], "start"), b.ints([end], "end"), b.ints([right_axis], "sum_axis")),
        )
        for start, end in bounds
    ]
    return int32_sum(b, parts)


def conv_integer_reference(
    x: np.ndarray, w: np.ndarray, x_zero_point: np.ndarray | None = None, w_zero_point: np.ndarray | None = None,
    **attributes,
) -> np.ndarray:  # fmt: skip
    """onnx.reference's Conv of the offsets in float64 (every sum an integer below 2^53, exact),
    wrapped to int32; w's zero point per output channel as ``[M, 1, ..., 1]``."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    inputs = x.astype(np.float64) - (0 if x_zero_point is None else x_zero_point.astype(np.float64))
    w_zero = np.zeros((), np.float64) if w_zero_point is None else w_zero_point.astype(np.float64)
    weights = w.astype(np.float64) - w_zero.reshape([-1] + [1] * (w.ndim - 1))
    node = helper.make_node("Conv", ["x", "w"], ["y"], **attributes)
    (sums,) = ReferenceEvaluator(node).run(None, {"x": inputs, "w": weights})
    return np.rint(sums).astype(np.int64).astype(np.int32)


@rule("ConvInteger", versions=(10,), reference=conv_integer_reference, emits=EMITS)
def conv_integer_by_exact_float_chunks(
    b: Builder, x: Value, w: Value, x_zero_point: Value | None = None, w_zero_point: Value | None = None, *,
    auto_pad="NOTSET", dilations=None, group: int = 1, kernel_shape=None, pads=None, strides=None,
) -> Value:  # fmt: skip
    """ConvInteger(x, w, zx, zw) = Σ_chunks Cast(Conv(x_c - zx, w_c - zw), int32), in float32.

    As MatMulInteger: the offsets cast to float32 exactly (zw per output channel reshaped to
    ``[M, 1, ..., 1]``), the input channels split into chunks whose window sums hold at most
    ``floor(2^24 / (|x - zx|max · |w - zw|max))`` terms (channels · kernel elements), each
    chunk's Conv an integer float32 holds in any order, cast to int32 and added there. Padding
    adds zeros to the offsets, so a padded position adds nothing, as the op pads x with its zero
    point. The Conv takes the node's attributes (pads, strides, dilations, group, auto_pad).
    Needs w's shape known; with group above 1 only one chunk (the group's channels); at most 64.
    Bit for bit wherever the runtime's float32 Conv multiplies and adds (onnxruntime's); a
    runtime whose Conv transforms the windows (Winograd) rounds.
    """
    attributes = conv_attributes(auto_pad, dilations, group, kernel_shape, pads, strides)
    return exact_conv(b, x, w, x_zero_point, w_zero_point, attributes)


def conv_attributes(auto_pad, dilations, group: int, kernel_shape, pads, strides) -> dict:
    """The Conv attributes a node states, to be written on the float32 Conv (its defaults left out)."""
    given = {"dilations": dilations, "kernel_shape": kernel_shape, "pads": pads, "strides": strides}
    attributes = {name: value for name, value in given.items() if value is not None}
    if (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) != "NOTSET":
        attributes["auto_pad"] = auto_pad
    if group != 1:
        attributes["group"] = group
    return attributes


def exact_conv(
    b: Builder, x: Value, w: Value, x_zero_point: Value | None, w_zero_point: Value | None, attributes
) -> Value:
    """The int32 ``Conv(x - zx, w - zw)`` by exact float32 chunks (:func:`conv_integer_by_exact_float_chunks`)."""
    w_shape = b.shape_of(w)
    if w_shape is None or None in w_shape or len(w_shape) < 3:
        raise NotLowered("w's shape, which gives the terms of each window's sum, is unknown")
    channels, window = w_shape[1], math.prod(w_shape[2:])
    chunk = chunk_length(b, x.element_type, x_zero_point, w.element_type, w_zero_point)
    bounds = chunk_bounds(channels, chunk // window if chunk >= window else 0)
    group = int(attributes.get("group", 1))
    if group != 1 and len(bounds) > 1:
        raise NotLowered(
            f"a group's {channels * window} terms need {len(bounds)} exact float32 chunks, with group {group}"
        )
    if w_zero_point is not None:
        w_zero_point = b.Reshape(w_zero_point, b.ints([-1] + [1] * (len(w_shape) - 1), "per_channel"))
    inputs, weights = offsets(b, x, x_zero_point), offsets(b, w, w_zero_point)
    if len(bounds) == 1:
        return int32_sum(b, [b.Conv(inputs, weights, **attributes)])
    parts = []
    for start, end in bounds:
        channel_slice = (b.ints([start], "start"), b.ints([end], "end"), b.ints([1], "channel_axis"))
        parts.append(b.Conv(b.Slice(inputs, *channel_slice), b.Slice(weights, *channel_slice), **attributes))
    return int32_sum(b, parts)


# The requantized outputs may differ by one step from the op's formula computed in float64 (the
# rules' references): onnxruntime's kernels, and the rules, form the scales' ratio and multiply
# each int32 sum by it in float32.
REQUANTIZED_TOLERANCE = {onnx.TensorProto.UINT8: Tolerance(0.0, 1.0), onnx.TensorProto.INT8: Tolerance(0.0, 1.0)}
EIGHT_BIT_INTEGERS = frozenset({onnx.TensorProto.UINT8, onnx.TensorProto.INT8})
REQUANTIZED_EMITS = (*EMITS, "Mul", "Div", "Round", "Max", "Min", "QuantizeLinear")
ROUND_OPSET = schemas.first_opset("Round")


def scale_in_float32(b: Builder, scale: Value) -> Value:
    return scale if scale.element_type == onnx.TensorProto.FLOAT else b.Cast(scale, to=onnx.TensorProto.FLOAT)


def requantized(b: Builder, sums: Value, multiplier: Value, y_zero_point: Value) -> Value:
    """``saturate(round(float32(sums) · multiplier) + zy)`` in zy's type, ties to even: Round, Add,
    Max and Min in float32 (integers there, exact) and a Cast; at opset 10, which has no Round,
    QuantizeLinear of scale 1 (dividing by 1 is exact)."""
    scaled = b.Mul(b.Cast(sums, to=onnx.TensorProto.FLOAT), multiplier)
    if b.opset < ROUND_OPSET:
        return b.QuantizeLinear(scaled, b.scalar(1.0, onnx.TensorProto.FLOAT, "one"), y_zero_point)
    info = np.iinfo(floats.numpy_dtype(y_zero_point.element_type))
    shifted = b.Add(b.Round(scaled), b.Cast(y_zero_point, to=onnx.TensorProto.FLOAT))
    lowest = b.scalar(float(info.min), onnx.TensorProto.FLOAT, "lowest")
    highest = b.scalar(float(info.max), onnx.TensorProto.FLOAT, "highest")
    return b.Cast(b.Min(b.Max(shifted, lowest), highest), to=y_zero_point.element_type)


def refuse_unless_eight_bit(*values: Value) -> None:
    for value in values:
        if value.element_type not in EIGHT_BIT_INTEGERS:
            raise NotLowered(f"'{value.name}' is not uint8 or int8 (float8 has no exact integer product)")


def refuse_unless_one_value(b: Builder, *values: Value) -> None:
    """The output's scale and zero point, per tensor: one value (a per-row output is not placed)."""
    for value in values:
        shape = b.shape_of(value)
        if shape is None or math.prod(d if d is not None else 2 for d in shape) != 1:
            raise NotLowered(f"'{value.name}' is not known to hold one value (per tensor)")


def requantized_reference(sums: np.ndarray, ratio: np.ndarray, y_zero_point: np.ndarray) -> np.ndarray:
    """``saturate(rint(sums · ratio) + zy)``, the product in float64."""
    info = np.iinfo(y_zero_point.dtype)
    shifted = np.rint(sums.astype(np.float64) * ratio) + y_zero_point.astype(np.float64)
    return np.clip(shifted, info.min, info.max).astype(y_zero_point.dtype)


def qlinear_matmul_reference(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point):
    """The op in numpy: the exact sums, times ``sa·sb/sy`` in float64 (sa per row as a column)."""
    a_ratio = a_scale.astype(np.float64)
    if a_ratio.ndim == 1 and a.ndim >= 2:
        a_ratio = a_ratio[:, None]
    ratio = a_ratio * b_scale.astype(np.float64) / y_scale.astype(np.float64)
    sums = matmul_integer_reference(a, b, a_zero_point, b_zero_point)
    return requantized_reference(sums, ratio, y_zero_point)


def qlinear_conv_reference(
    x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B=None, **attributes  # noqa: N803
):  # fmt: skip
    """The op in numpy: the exact sums plus B, times ``sx·sw/sy`` in float64 (B and sw per output channel)."""
    per_channel = [1, -1] + [1] * (w.ndim - 2)
    sums = conv_integer_reference(x, w, x_zero_point, w_zero_point, **attributes).astype(np.int64)
    if B is not None:
        sums = (sums + B.astype(np.int64).reshape(per_channel)).astype(np.int32)
    ratio = x_scale.astype(np.float64) * w_scale.astype(np.float64).reshape(per_channel) / y_scale.astype(np.float64)
    return requantized_reference(sums, ratio, y_zero_point)


@rule(
    "QLinearMatMul",
    versions=(10, 21),
    reference=qlinear_matmul_reference,
    tolerance=REQUANTIZED_TOLERANCE,
    emits=REQUANTIZED_EMITS,
)
def qlinear_matmul_by_exact_sums(
    b: Builder, a: Value, a_scale: Value, a_zero_point: Value, b_matrix: Value, b_scale: Value,
    b_zero_point: Value, y_scale: Value, y_zero_point: Value,
) -> Value:  # fmt: skip
    """QLinearMatMul(a, sa, za, b, sb, zb, sy, zy) = saturate(round(MatMulInteger(a, b, za, zb)·(sa·sb/sy)) + zy).

    The int32 sums exactly as MatMulInteger's rule makes them; the ratio ``sa·sb/sy`` in float32
    (scales of other types cast to float32 first; sa per row as a column), multiplied in
    float32, rounded ties to even, zy added and saturated to zy's type (:func:`requantized`:
    Round, Add, Max, Min and a Cast; QuantizeLinear of scale 1 at opset 10). onnxruntime's kernel
    computes so; within one step of the formula in float64 (the tolerance). 8-bit integers only
    (not float8); sy and zy per tensor.
    """
    refuse_unless_eight_bit(a, b_matrix, y_zero_point)
    refuse_unless_one_value(b, y_scale, y_zero_point)
    left = per_row(b, b.shape_of(a), a_scale)
    sums = exact_matmul(b, a, b_matrix, a_zero_point, b_zero_point)
    left = scale_in_float32(b, left)
    ratio = b.Div(b.Mul(left, scale_in_float32(b, b_scale)), scale_in_float32(b, y_scale))
    return requantized(b, sums, ratio, y_zero_point)


@rule(
    "QLinearConv",
    versions=(10,),
    reference=qlinear_conv_reference,
    tolerance=REQUANTIZED_TOLERANCE,
    emits=REQUANTIZED_EMITS,
)
def qlinear_conv_by_exact_sums(
    b: Builder, x: Value, x_scale: Value, x_zero_point: Value, w: Value, w_scale: Value, w_zero_point: Value,
    y_scale: Value, y_zero_point: Value, bias: Value | None = None, *, auto_pad="NOTSET", dilations=None,
    group: int = 1, kernel_shape=None, pads=None, strides=None,
) -> Value:  # fmt: skip
    """QLinearConv(x, sx, zx, w, sw, zw, sy, zy, B) = saturate(round((ConvInteger(x, w, zx, zw)+B)·(sx·sw/sy)) + zy).

    The int32 sums exactly as ConvInteger's rule makes them, the bias B added in int32 (per
    output channel, ``[1, M, 1, ...]``), then as QLinearMatMul's rule: the ratio in float32
    (sw per output channel), the product rounded ties to even, zy added and saturated. 8-bit
    integers only; sy and zy per tensor.
    """
    refuse_unless_eight_bit(x, w, y_zero_point)
    refuse_unless_one_value(b, y_scale, y_zero_point)
    attributes = conv_attributes(auto_pad, dilations, group, kernel_shape, pads, strides)
    sums = exact_conv(b, x, w, x_zero_point, w_zero_point, attributes)
    spatial = len(b.shape_of(w)) - 2  # (known: exact_conv needs w's shape)
    per_channel = b.ints([1, -1] + [1] * spatial, "per_output_channel")
    if bias is not None:
        sums = b.Add(sums, b.Reshape(bias, per_channel))
    weights_scale = b.Reshape(scale_in_float32(b, w_scale), per_channel)
    ratio = b.Div(b.Mul(scale_in_float32(b, x_scale), weights_scale), scale_in_float32(b, y_scale))
    return requantized(b, sums, ratio, y_zero_point)
