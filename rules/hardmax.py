"""Hardmax (versions 1, 11, 13, no function body) lowered to the one-hot of ArgMax's index, the
first NaN's where a line holds one."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

# Versions 1 and 11 take x as a matrix cut before ``axis`` (default 1); 13 takes one axis (default -1).
ONE_AXIS_VERSION = 13
FIRST_OPSET = schemas.first_opset("Constant", onnx.TensorProto.INT64)  # (the positions: an int64 Constant)
# ArgMax compares 16-bit floats as float32, which holds each exactly, where it takes none
WIDENED = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


def hardmax_reference(x: np.ndarray, *, axis: int = -1, coerced: bool = False) -> np.ndarray:
    """Along ``axis`` (of x as a matrix cut there where ``coerced``, versions 1 and 11), 1 at
    numpy's argmax and 0 elsewhere: the first largest value, a NaN counting as larger than any
    number (the first NaN where a line holds one), as onnx.reference computes Hardmax-13 (it
    takes versions 1 and 11 along the axis alone, not as a matrix)."""
    shape = x.shape
    axis = axis + x.ndim if axis < 0 else axis
    lines = x.reshape(math.prod(shape[:axis]), -1) if coerced else np.moveaxis(x, axis, -1)
    wide = lines.astype(np.float64)
    hot = np.arange(wide.shape[-1]) == np.argmax(wide, axis=-1)[..., None]
    out = hot.astype(x.dtype)
    return out.reshape(shape) if coerced else np.moveaxis(out, -1, axis)


@rule(
    "Hardmax",
    versions=schemas.op_versions("Hardmax"),
    reference=hardmax_reference,
    emits=(
        "ArgMax",
        "Cast",
        "Equal",
        "Greater",
        "Abs",
        "Not",
        "ReduceMax",
        "Where",
        "Flatten",
        "Reshape",
        "Shape",
        "Constant",
    ),  # fmt: skip
)
def hardmax_by_argmax(b: Builder, x: Value, *, axis: int | None = None) -> Value:
    """Hardmax(x, axis=a) = Cast(Equal(Where(any n, ArgMax(Cast(n, int32)), ArgMax(x)), k), T),
    n = Not(Equal(x, x)) (x is NaN), k the index along a, the ArgMaxes and the any (ReduceMax of
    Cast(n, int32)) along a, kept.

    The first largest value marked, a NaN counting as larger than any number (the first NaN
    where a line holds one), as onnx.reference computes Hardmax-13: ArgMax of a line holding no
    NaN is its first largest (ties, ±0 and infinities as the op's kernel marks them), and ArgMax
    of where the NaNs are, its first NaN. ArgMax of a line holding a NaN is not used: runtimes take
    NaNs otherwise (onnxruntime's float kernels max by lanes). Below opset 11 Equal takes no
    floats: a number is Greater(Abs(x), -1). 16-bit floats go as float32 where ArgMax takes none
    (exactly). Versions 1 and 11 take x as the matrix cut before a (default 1): the line is the
    whole matrix row, so x is flattened there and the one-hot reshaped back. Declined where the
    line's length is not known or is 0 (ArgMax of an empty line fails; Hardmax gives an empty
    output), and below opset 9 (no int64 Constant)."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"its positions are an int64 Constant, which exists from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    if shape is None:
        raise NotLowered("x's rank is not known, and the line along the axis is read from it")
    coerced = (b.source_version("Hardmax") or schemas.version_in_force("Hardmax", b.opset)) < ONE_AXIS_VERSION
    axis = (1 if coerced else -1) if axis is None else axis
    cut = axis + len(shape) if axis < 0 else axis
    if not 0 <= cut < len(shape):
        raise NotLowered(f"axis {axis} lies outside x's rank {len(shape)}")
    line = shape[cut:] if coerced else shape[cut : cut + 1]
    if None in line or math.prod(line) == 0:
        raise NotLowered("the length of x's lines along the axis is not known or is 0 (ArgMax of no value fails)")
    length = math.prod(line)
    lines = b.Flatten(x, axis=cut) if coerced else x
    along = 1 if coerced else cut
    widen = lines.element_type in WIDENED and not b.runs("ArgMax", lines)
    compared = b.Cast(lines, to=onnx.TensorProto.FLOAT) if widen else lines
    if b.accepts("Equal", compared):
        nan = b.Not(b.Equal(compared, compared))
    else:
        nan = b.Not(b.Greater(b.Abs(compared), b.constant(-1.0, like=compared, hint="minus_one")))
    nans = b.Cast(nan, to=onnx.TensorProto.INT32)
    any_nan = b.Cast(b.over_axes("ReduceMax", nans, [along], keepdims=1), to=onnx.TensorProto.BOOL)
    first_nan = b.ArgMax(nans, axis=along, keepdims=1)
    first_largest = b.ArgMax(compared, axis=along, keepdims=1)
    index = b.Where(any_nan, first_nan, first_largest)
    trailing = 0 if coerced else len(shape) - cut - 1  # (the axes after the line, kept as 1)
    positions = b.tensor(np.arange(length, dtype=np.int64).reshape([length] + [1] * trailing), "positions")
    one_hot = b.Cast(b.Equal(index, positions), to=x.element_type)
    if coerced:
        return b.Reshape(one_hot, b.Shape(x))
    return one_hot
