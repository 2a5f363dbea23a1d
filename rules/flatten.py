"""Flatten lowered to a Reshape to [d₀···d_{a-1}, d_a···d_{r-1}]."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = ("Add", "Concat", "Gather", "Range", "ReduceProd", "Reshape", "Shape", "Slice", "Constant")
FIRST_OPSET = schemas.first_opset("Constant", onnx.TensorProto.INT64)  # (the new shape: an int64 Constant)


def flatten_reference(x: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """x as a matrix: the dimensions before ``axis`` (counted from the end where negative) make
    its rows, the rest its columns; one row of all of x where axis is 0."""
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@rule("Flatten", versions=schemas.op_versions("Flatten"), emits=EMITS, reference=flatten_reference)
def flatten_by_reshape(b: Builder, x: Value, *, axis: int = 1) -> Value:
    """Flatten(x, axis=a) = Reshape(x, [∏ d[:a], ∏ d[a:]]), a counted from the end where negative.

    With x's shape known, the two products are a constant; else ReduceProd(Slice(Shape(x), 0, a))
    and ReduceProd(Slice(Shape(x), a, ∞)) at run time (a negative a slices from the end as it
    counts; the product of no dimensions is 1), which needs Slice's inputs (opset 10) and
    Reshape's allowzero=1 (14): without it a 0 in the new shape would copy x's own dimension
    there. A constant shape holds allowzero=1 only where it holds a 0 (declined below 14), and
    is an int64 Constant (opset 9). An axis outside x's rank fails as the op fails: refused where
    the rank is known, else the cut is Gather(Range(0, r + 1), a) (a >= 0) or Gather(Range(0, r), a)
    (a < 0) at run time, which fails there. Moves no value: exact on every type."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"its new shape is an int64 Constant, which exists from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    cut = None if shape is None else axis + len(shape) if axis < 0 else axis
    if shape is not None and not 0 <= cut <= len(shape):
        raise NotLowered(f"axis {axis} lies outside x's rank {len(shape)}")
    if shape is not None and None not in shape:
        new_shape = [math.prod(shape[:cut]), math.prod(shape[cut:])]
        if 0 not in new_shape:
            return b.Reshape(x, b.ints(new_shape, "shape"))
        if b.opset >= 14:
            return b.Reshape(x, b.ints(new_shape, "shape"), allowzero=1)
        raise NotLowered(f"its new shape {new_shape} holds a 0, which a Reshape at opset {b.opset} would copy")
    if b.opset < 14:
        raise NotLowered(f"x's shape is not known, and a Reshape at opset {b.opset} (no allowzero) would copy a 0")
    dims = b.Shape(x)
    if shape is not None:
        at = b.ints([axis], "axis")
    else:  # the cut checked at run time: Gather(Range(0, r + 1), a) for a >= 0, Gather(Range(0, r), a) below
        rank = b.Reshape(b.Shape(dims), b.ints([], "scalar"))
        zero, one = b.scalar(0, onnx.TensorProto.INT64, "zero"), b.scalar(1, onnx.TensorProto.INT64, "one")
        cuts = b.Range(zero, b.Add(rank, one) if axis >= 0 else rank, one)
        at = b.Gather(cuts, b.ints([axis], "axis"), axis=0)
    rows = b.ReduceProd(b.Slice(dims, b.ints([0], "start"), at), keepdims=1)
    columns = b.ReduceProd(b.Slice(dims, at, b.ints([np.iinfo(np.int64).max], "end")), keepdims=1)
    return b.Reshape(x, b.Concat(rows, columns, axis=0), allowzero=1)
