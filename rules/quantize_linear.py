"""QuantizeLinear and DequantizeLinear (8- and 16-bit integers; per tensor, per axis or in
blocks) lowered to the arithmetic of their formulas: saturate(Round(x / s) + z) and (x - z) · s."""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

# The integer types of 8 and 16 bits the ops take (onnx.defs), whose (x - z) is exact in int32
# and then in float32, and whose every value and bound a float32 holds exactly.
WHOLE_NUMBERS = frozenset(
    t for t in schemas.input_element_types("DequantizeLinear", schemas.newest_opset())
    if floats.is_integer(t) and ml_dtypes.iinfo(floats.numpy_dtype(t)).bits in (8, 16)
)  # fmt: skip
# The x (and scale) types quantized by float32 arithmetic as onnxruntime quantizes them.
QUANTIZED_FROM = frozenset({TensorProto.FLOAT, TensorProto.FLOAT16})

QUANTIZE_EMITS = ("Cast", "Div", "Round", "Add", "Clip", "Where", "Equal", "Reshape", "Gather", "Constant")
DEQUANTIZE_EMITS = ("Cast", "Sub", "Mul", "Reshape", "Gather", "Constant")
# Round and Clip's bounds as inputs exist from opset 11 (onnx.defs); DequantizeLinear's ops and
# int64 Constants exist before its version 10.
QUANTIZE_FIRST_OPSET = schemas.first_opset_writing(QUANTIZE_EMITS, int64_constants=True)


def lined_up(
    b: Builder, scale_shape: list | None, x_shape: list | None, axis: int, block_size: int
) -> Callable[[Value | str], Value] | None:
    """A function lining a scale (or zero point) up with x, None where it already is (a scalar,
    or per axis along x's last axis): reshaped to ``[D, 1, ..., 1]`` per axis, gathered along
    the axis block by block (``indices[i] = i // block_size``). ValueError, saying what is not
    known, where the shapes it needs are not."""
    if scale_shape is None or (scale_shape != [] and x_shape is None):
        raise ValueError("the ranks of its scale and input are not known")
    if scale_shape == []:
        return None
    rank = len(x_shape)
    axis = axis + rank if axis < 0 else axis
    if block_size:
        length = x_shape[axis]
        if not isinstance(length, int):
            raise ValueError(f"the length of its input along axis {axis} is not known")
        indices = b.ints([i // block_size for i in range(length)], "block_indices")
        return lambda value: b.Gather(value, indices, axis=axis)
    if axis == rank - 1 or len(scale_shape) != 1:
        return None
    shape = b.ints([-1] + [1] * (rank - axis - 1), "per_axis_shape")
    return lambda value: b.Reshape(value, shape)


def division_type(precision: int, scale_type: int | None, version: int | None) -> int | None:
    """The type QuantizeLinear-``version`` divides x by its scale in: ``precision`` where stated;
    else, from the version whose schema has precision (23, onnx.defs), the scale's type, as its
    description says; before it float32, as onnxruntime's kernels divide float16 values by a
    float16 scale (measured: every float16 pattern, scales 0.1 and 0.37, differ from 23's)."""
    if precision:
        return precision
    schema = schemas.schema_in_force("QuantizeLinear", version) if version is not None else None
    return scale_type if schema is not None and "precision" in schema.attributes else TensorProto.FLOAT


def quantized(
    b: Builder, x: Value | str, scale: Value | str, zero: Value | str, x_type: int, y_type: int,
    outputs: list[str] | None = None, *, scale_type: int | None = None, divided_in: int = TensorProto.FLOAT,
) -> Value:  # fmt: skip
    """``y = Cast(Where(q == q, Clip(Round(q) + Cast(z, float), lo, hi), lo), T)``,
    ``q = Cast(x, P) / Cast(s, P)`` rounded to P, P the type it divides in (float32 or
    float16: ``divided_in``), ``[lo, hi]`` the range of y's type T: what onnxruntime's
    QuantizeLinear computes (the quotient in P, rounded half to even, the zero point added,
    saturated; NaN to the least value). The scale (of ``scale_type``, x's where None) and zero
    point are lined up with x already; ``zero`` "" where there is none."""
    float32 = TensorProto.FLOAT
    scale_type = x_type if scale_type is None else scale_type
    if divided_in != float32:  # x and the scale taken to P first: as P, then in float32 (exactly)
        x = b.Cast(x if x_type == divided_in else b.Cast(x, to=divided_in), to=float32)
        scale = b.Cast(scale if scale_type == divided_in else b.Cast(scale, to=divided_in), to=float32)
    else:
        x = x if x_type == float32 else b.Cast(x, to=float32)
        scale = scale if scale_type == float32 else b.Cast(scale, to=float32)
    q = b.Div(x, scale)
    if divided_in != float32:
        # the float32 quotient rounded to float16 is the float16 quotient (24 >= 2 · 11 + 2 bits: no
        # double rounding), as onnxruntime's float16 Div, which runs in float32, would not give where
        # a Cast to float32 follows it (its own casts removed: measured)
        q = b.Cast(b.Cast(q, to=divided_in), to=float32)
    value = b.Round(q)
    if zero:
        value = b.Add(value, b.Cast(zero, to=float32))
    info = np.iinfo(helper.tensor_dtype_to_np_dtype(y_type))
    low, high = b.scalar(float(info.min), float32, "least"), b.scalar(float(info.max), float32, "greatest")
    saturated = b.Clip(value, low, high)
    # onnxruntime's kernel sends NaN to the least value; Clip and Cast leave NaN to the kernel.
    # (q == q is false just for NaN: IsNaN is not written, as it may be an op to lower.)
    return b.Cast(b.Where(b.Equal(q, q), saturated, low), to=y_type, outputs=outputs)


def dequantized(
    b: Builder, x: Value | str, scale: Value | str, zero: Value | str, outputs: list[str] | None = None
) -> Value:
    """``y = Mul(Cast(Sub(Cast(x, int32), Cast(z, int32)), float), s)`` (``Cast(x, float) · s``
    without a zero point), the scale and zero point lined up with x already."""
    if zero:
        int32 = TensorProto.INT32
        value = b.Cast(b.Sub(b.Cast(x, to=int32), b.Cast(zero, to=int32)), to=TensorProto.FLOAT)
    else:
        value = b.Cast(x, to=TensorProto.FLOAT)
    return b.Mul(value, scale, outputs=outputs)


def _aligned(b: Builder, x: Value, scale: Value, zero: Value | None, axis: int, block_size: int):
    """The scale and zero point ("" where none) lined up with x (:func:`lined_up`)."""
    try:
        line_up = lined_up(b, b.shape_of(scale), b.shape_of(x), axis, block_size)
    except ValueError as unknown:
        raise NotLowered(str(unknown)) from None
    if line_up is None:
        return scale, zero or ""
    return line_up(scale), line_up(zero) if zero else ""


@rule(
    "QuantizeLinear",
    versions=schemas.op_versions("QuantizeLinear"),
    emits=QUANTIZE_EMITS,
    rounding_invariant=False,
)
def quantize_by_its_formula(
    b: Builder, x: Value, y_scale: Value, y_zero_point: Value | None = None, *, axis: int = 1, saturate: int = 1,
    block_size: int = 0, output_dtype: int = 0, precision: int = 0,
) -> Value:  # fmt: skip
    """QuantizeLinear(x, s, z) = Cast(Where(q = q, Clip(Round(q) + z, lo, hi), lo), T), q = x / s in P.

    Bit for bit what onnxruntime's kernel gives, NaN (sent to T's least value), ±inf, ties (half
    to even) and saturation included (:func:`quantized`): for T an 8- or 16-bit integer (the zero
    point's type, else ``output_dtype``, else uint8), x and the scale float32 or float16 (of one
    type before version 23), divided in P, float32 or float16 (:func:`division_type`: ``precision``,
    from 23 the scale's type where unset); per tensor, per axis (the scale
    reshaped to ``[D, 1, ..., 1]``) or in blocks (gathered block by block). ``saturate`` only says
    how float8 overflows. Not lowered otherwise (float8, 4- and 2-bit outputs, bfloat16 or int32
    x, a bfloat16 P), nor where the ranks it needs are unknown, nor below opset 11 (Round)."""
    if b.opset < QUANTIZE_FIRST_OPSET:
        raise NotLowered(f"the formula writes Round, which exists from opset {QUANTIZE_FIRST_OPSET}, not {b.opset}")
    y_type = y_zero_point.element_type if y_zero_point is not None else (output_dtype or TensorProto.UINT8)
    if y_type not in WHOLE_NUMBERS:
        kind = "an unknown type" if y_type is None else schemas.type_name(y_type)
        raise NotLowered(f"it quantizes to {kind}, which is not an 8- or 16-bit integer")
    if x.element_type not in QUANTIZED_FROM or y_scale.element_type not in QUANTIZED_FROM:
        raise NotLowered("its x and scale are not float32 or float16")
    divided_in = division_type(precision, y_scale.element_type, b.source_version("QuantizeLinear") or b.opset)
    if divided_in not in QUANTIZED_FROM:
        kind = "an unknown type" if divided_in is None else schemas.type_name(divided_in)
        raise NotLowered(f"it divides in {kind}, not in float32 or float16")
    scale, zero = _aligned(b, x, y_scale, y_zero_point, axis, block_size)
    return quantized(b, x, scale, zero, x.element_type, y_type, scale_type=y_scale.element_type, divided_in=divided_in)


@rule("DequantizeLinear", versions=schemas.op_versions("DequantizeLinear"), emits=DEQUANTIZE_EMITS)
def dequantize_by_its_formula(
    b: Builder, x: Value, x_scale: Value, x_zero_point: Value | None = None, *, axis: int = 1, block_size: int = 0,
    output_dtype: int = 0,
) -> Value:  # fmt: skip
    """DequantizeLinear(x, s, z) = Cast(Cast(x, int32) - Cast(z, int32), float) · s.

    x an 8- or 16-bit integer, so x - z is exact in int32 and then in float32, and the one
    rounding is the product's, as in onnxruntime's kernel; a float32 scale and output
    (``output_dtype`` unset or float); per tensor, per axis or in blocks as QuantizeLinear.
    Not lowered otherwise (int32, float8, 4- and 2-bit x, float16 or bfloat16 scales)."""
    if x.element_type not in WHOLE_NUMBERS:
        kind = "an unknown type" if x.element_type is None else schemas.type_name(x.element_type)
        raise NotLowered(f"its x is {kind}, which is not an 8- or 16-bit integer")
    if x_scale.element_type != TensorProto.FLOAT or output_dtype not in (0, TensorProto.FLOAT):
        raise NotLowered("its scale or output is not float32")
    scale, zero = _aligned(b, x, x_scale, x_zero_point, axis, block_size)
    return dequantized(b, x, scale, zero)
