"""MatMulInteger and ConvInteger (version 10, no function body) lowered to MatMul and Conv of
float32 values exact by construction: each product of offsets and each sum of a chunk of them
is an integer of magnitude at most 2^24, which float32 holds, so every order of summing gives
the same integer; the chunks' sums are added as int32, as the op accumulates."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import floats
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
    """numpy's matmul of the offsets in int64, wrapped to int32 (per-row zero points of a 2-D A
    as a column)."""
    a_zero = np.zeros((), np.int64) if a_zero_point is None else a_zero_point.astype(np.int64)
    if a_zero.ndim == 1:
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
    a_shape, b_shape = b.shape_of(a), b.shape_of(b_matrix)
    lengths = {s[-1] for s in [a_shape] if s} | {s[-2 if len(s) > 1 else -1] for s in [b_shape] if s}
    lengths.discard(None)
    if len(lengths) != 1:
        raise NotLowered("the length K that each dot product sums over is unknown")
    (length,) = lengths
    bounds = chunk_bounds(length, chunk_length(b, a.element_type, a_zero_point, b_matrix.element_type, b_zero_point))
    if a_zero_point is not None:
        zero_shape = b.shape_of(a_zero_point)
        if zero_shape is None:
            raise NotLowered("the rank of A's zero point, per tensor or per row, is unknown")
        if len(zero_shape) == 1:  # (per row of a 2-D A: a column)
            a_zero_point = b.over_axes("Unsqueeze", a_zero_point, [1])
    left, right = offsets(b, a, a_zero_point), offsets(b, b_matrix, b_zero_point)
    if len(bounds) == 1:
        return int32_sum(b, [b.MatMul(left, right)])
    right_axis = -2 if b_shape is None or len(b_shape) > 1 else -1
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
    w_shape = b.shape_of(w)
    if w_shape is None or None in w_shape or len(w_shape) < 3:
        raise NotLowered("w's shape, which gives the terms of each window's sum, is unknown")
    given = {"dilations": dilations, "kernel_shape": kernel_shape, "pads": pads, "strides": strides}
    attributes = {name: value for name, value in given.items() if value is not None}
    if (auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad) != "NOTSET":
        attributes["auto_pad"] = auto_pad
    if group != 1:
        attributes["group"] = group
    channels, window = w_shape[1], math.prod(w_shape[2:])
    chunk = chunk_length(b, x.element_type, x_zero_point, w.element_type, w_zero_point)
    bounds = chunk_bounds(channels, chunk // window if chunk >= window else 0)
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
