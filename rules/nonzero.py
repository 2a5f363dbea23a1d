"""NonZero (versions 9 and 13, no function body) lowered to the positions TopK picks out of the
flattened input, written as coordinates by Div and Mod."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .ordering import MOST_PAIRED_ELEMENTS

EMITS = (
    "Cast", "Reshape", "Size", "Range", "Sub", "Where", "ReduceSum", "TopK", "Div", "Mod", "Mul", "Shape", "Gather",
    "Equal", "Unsqueeze", "Concat", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on (Range, and TopK's k input with largest and
# sorted, from 11), int64 Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)
# The types NonZero takes that Cast does not make bool of (strings are nonzero where not empty,
# which no Cast says; complex types have no arithmetic in ONNX).
NOT_CAST_TO_BOOL = frozenset({onnx.TensorProto.STRING, onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128})


def nonzero_reference(x: np.ndarray) -> np.ndarray:
    """The coordinates of x's nonzero elements (NaN among them, ±0 not), one column each, in
    row-major order: int64 of shape [rank, count]."""
    return np.array(np.nonzero(x), dtype=np.int64).reshape(x.ndim, -1)


@rule("NonZero", versions=(9, 13), emits=EMITS, reference=nonzero_reference)
def nonzero_by_topk(b: Builder, x: Value) -> Value:
    """NonZero(x) = [⌊p / sⱼ⌋ mod dⱼ]ⱼ, p = n - TopK(Where(f, n - i, 0), k = Σ f).values.

    f = Cast(Reshape(x, [-1]), bool), x's n elements flattened (a NaN is nonzero, ±0 is not, as
    onnxruntime's kernel reads them); i their positions (Range); the key n - i of a nonzero
    element is at least 1 and of no other element, the key of a zero one 0, so the k = Σ f
    largest keys, sorted, are those of the nonzero elements in ascending position p = n - key.
    Each p gives its coordinate along axis j of length dⱼ by ⌊p / sⱼ⌋ mod dⱼ, sⱼ = ∏_{m>j} dₘ
    (int64 Div of non-negative values is the floor); a constant of shape [rank, 0] where a
    stated length is 0. x's rank must be known and not 0; strings and complex values, which no
    Cast makes bool, are declined; so is x where the target lowers TopK too and the lengths
    known make more than MOST_PAIRED_ELEMENTS pairs (the TopK rule compares every pair of keys,
    and bounds them so only where the lengths are known, as here); not below opset 11 (Range)."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"Range exists from opset {FIRST_OPSET}, not {b.opset}")
    if x.element_type in NOT_CAST_TO_BOOL:
        raise NotLowered(f"no Cast makes bool of {schemas.type_name(x.element_type)}")
    shape = b.shape_of(x)
    if not shape:
        raise NotLowered("x's rank is unknown" if shape is None else "x is a scalar")
    if 0 in shape:  # (no element: no coordinate, and a constant length of 0 no Mod takes)
        return b.tensor(np.zeros([len(shape), 0], np.int64), "none")
    paired = math.prod(d for d in shape if d is not None) ** 2  # (at least: an unknown length is at least 1)
    if "TopK" in b.target.lowered_ops and paired > MOST_PAIRED_ELEMENTS:
        raise NotLowered(
            f"TopK is lowered too, comparing every pair of x's elements: at least {paired} pairs, "
            f"more than {MOST_PAIRED_ELEMENTS}"
        )
    flat = b.Reshape(x, b.ints([-1], "flat"))
    nonzero = flat if x.element_type == onnx.TensorProto.BOOL else b.Cast(flat, to=onnx.TensorProto.BOOL)
    int64 = onnx.TensorProto.INT64
    count = b.Size(nonzero) if None in shape else b.scalar(math.prod(shape), int64, "count")  # (no Size of bfloat16)
    positions = b.Range(b.scalar(0, int64, "zero"), count, b.scalar(1, int64, "one"))
    keys = b.Where(nonzero, b.Sub(count, positions), b.scalar(0, int64, "zero"))
    k = b.over_axes("ReduceSum", b.Cast(nonzero, to=int64), [0], keepdims=1)
    picked = b.Sub(count, _largest(b, keys, k))
    lengths = [None] + [_length(b, x, shape, axis) for axis in range(1, len(shape))]  # (d₀ divides nothing)
    coordinates, stride = [], None
    for axis in reversed(range(len(shape))):
        quotient = picked if stride is None else b.Div(picked, stride)
        coordinate = quotient if axis == 0 else b.Mod(quotient, lengths[axis])
        coordinates.insert(0, b.over_axes("Unsqueeze", coordinate, [0]))
        if axis > 0:
            stride = lengths[axis] if stride is None else b.Mul(stride, lengths[axis])
    return coordinates[0] if len(coordinates) == 1 else b.Concat(*coordinates, axis=0)


def _largest(b: Builder, keys: Value, k: Value) -> Value:
    """TopK(keys, k, largest, sorted).values: written with both its outputs, or its rule's
    expansion where the target lowers TopK too (values and indices)."""
    if "TopK" in b.target.lowered_ops:
        return b.TopK(keys, k, axis=0, largest=1, sorted=1)[0]
    return b.op("TopK", keys, k, outputs=[b.fresh("largest"), b.fresh("largest_at")], axis=0, largest=1, sorted=1)


def _length(b: Builder, x: Value, shape: list[int | None], axis: int) -> Value:
    """x's length d along ``axis``, an int64 scalar: a constant where the shape states it, else
    Where(d = 0, 1, d), d = Gather(Shape(x), axis) (where some d is 0 no position is picked,
    but Div and Mod by a 0 fail even so)."""
    int64 = onnx.TensorProto.INT64
    if shape[axis] is not None:
        return b.scalar(shape[axis], int64, f"length_{axis}")
    length = b.Gather(b.Shape(x), b.scalar(axis, int64, f"axis_{axis}"), axis=0)
    one = b.scalar(1, int64, "one")
    return b.Where(b.Equal(length, b.scalar(0, int64, "zero")), one, length)
