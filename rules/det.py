"""Det (versions 11, 22, no function body) lowered to Gaussian elimination with partial pivoting,
unrolled over the matrices' known order."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

MOST_ORDER = 16  # the elimination is written out step by step: matrices of up to this order
# 16-bit floats are eliminated in float32 (which holds each exactly), rounded once at the end
WIDENED = (TensorProto.FLOAT16, TensorProto.BFLOAT16)


def det_reference(x: np.ndarray) -> np.ndarray:
    """The determinant of each matrix of x (its last two axes) by Doolittle's elimination with
    partial pivoting in x's type (float32 for 16-bit floats, rounded once), as onnxruntime's
    kernel (Eigen's partial-pivot LU) computes it: at step k the first row at or below k whose
    |entry| in column k is largest is swapped up, the entries below the pivot divided by it
    (unless it is 0), the rest of the corner less their product with the pivot's row; then
    (−1)^swaps times the product of the pivots, taken in order."""
    compute = np.float32 if x.dtype.itemsize == 2 else x.dtype  # (float16, bfloat16)
    n = x.shape[-1]
    if n == 0:  # (the empty product: 1)
        return np.ones(x.shape[:-2], x.dtype)
    corner = x.reshape(-1, n, n).astype(compute)
    batch = np.arange(corner.shape[0])
    sign = np.ones(corner.shape[0], compute)
    product = np.ones(corner.shape[0], compute)
    with np.errstate(all="ignore"):
        for _ in range(n):
            pivot_row = np.argmax(np.abs(corner[:, :, 0]), axis=1)
            swapped = pivot_row != 0
            sign = np.where(swapped, -sign, sign)
            first = corner[batch, pivot_row].copy()
            corner[batch, pivot_row] = corner[:, 0]
            corner[:, 0] = first
            pivot = corner[:, 0, 0]
            below = corner[:, 1:, 0]
            below = np.where((pivot != 0)[:, None], below / pivot[:, None], below)
            product = (product * pivot).astype(compute)
            corner = (corner[:, 1:, 1:] - below[:, :, None] * corner[:, 0:1, 1:]).astype(compute)
    return (sign * product).astype(x.dtype).reshape(x.shape[:-2])


@rule(
    "Det",
    versions=schemas.op_versions("Det"),
    reference=det_reference,
    emits=(
        "Abs",
        "ArgMax",
        "Cast",
        "Constant",
        "Div",
        "Equal",
        "Expand",
        "GatherElements",
        "Mul",
        "Neg",
        "Shape",
        "Slice",
        "Squeeze",
        "Sub",
        "Where",
    ),  # fmt: skip
)
def det_by_elimination(b: Builder, x: Value) -> Value:
    """Det(X) = (−1)^s · u₀·u₁·…·u_{n−1}, the pivots of Doolittle's elimination with partial pivoting.

    Step k on the corner C (X at first): p = ArgMax(|C[:, 0]|) (the first largest), rows 0 and p
    of C swapped (GatherElements by the permutation), s counting the swaps; the pivot u = C[0, 0],
    the column below it divided by u where u ≠ 0 (by 1 where u = 0: its entries are then ±0, kept
    with their signs), and the next corner C[1:, 1:] − C[1:, 0] ⊗ C[0, 1:].
    The pivots' product is taken in order, the sign applied last, as onnxruntime's kernel (Eigen's
    partial-pivot LU) does, bit for bit on float. 16-bit floats are eliminated in float32 and
    rounded once. The order n must be known (the steps are written out, up to 16; order 0 gives
    1, the empty product); the batch dimensions may be unknown."""
    shape = b.shape_of(x)
    if shape is None or len(shape) < 2:
        raise NotLowered("x's rank is not known or is below 2, and the matrices are its last two axes")
    n = shape[-1]
    if n is None or shape[-2] is None:
        raise NotLowered("the order of x's matrices is not known, and the elimination is written out row by row")
    if n > MOST_ORDER:
        raise NotLowered(f"the matrices are of order {n}, and the elimination is written out up to order {MOST_ORDER}")
    if n == 0:  # (matrices of order 0: the empty product, 1, for each)
        batch = b.Slice(b.Shape(x), b.ints([0], "start"), b.ints([-2], "end"))
        return b.Expand(b.scalar(1.0, x.element_type, "one"), batch)
    compute = TensorProto.FLOAT if x.element_type in WIDENED else x.element_type
    # the matrices' axes counted from the front (onnx2torch's converters fail some negative axes)
    rows_axis, columns_axis = len(shape) - 2, len(shape) - 1
    matrix = b.ints([rows_axis, columns_axis], "axes")
    corner = b.Cast(x, to=compute) if compute != x.element_type else x
    zero = b.scalar(0.0, compute, "zero")
    one = b.scalar(1.0, compute, "one")
    sign = one
    product = None
    for k in range(n):
        size = n - k
        first_column = b.Slice(corner, b.ints([0, 0], "start"), b.ints([size, 1], "end"), matrix)
        pivot_row = b.ArgMax(b.Abs(first_column), axis=rows_axis, keepdims=1)  # [..., 1, 1]
        rows = b.tensor(np.arange(size, dtype=np.int64).reshape(size, 1), "rows")
        top = b.scalar(0, TensorProto.INT64, "top")
        order = b.Where(b.Equal(rows, top), pivot_row, b.Where(b.Equal(rows, pivot_row), top, rows))
        corner = b.GatherElements(corner, b.Expand(order, b.Shape(corner)), axis=rows_axis)
        sign = b.Where(b.Equal(pivot_row, top), sign, b.Neg(sign))
        pivot = b.Slice(corner, b.ints([0, 0], "start"), b.ints([1, 1], "end"), matrix)
        product = pivot if product is None else b.Mul(product, pivot)
        if size == 1:
            break
        below = b.Slice(corner, b.ints([1, 0], "start"), b.ints([size, 1], "end"), matrix)
        # (a pivot of 0 is the column's largest |entry|: the entries below are ±0, divided by 1, kept)
        below = b.Div(below, b.Where(b.Equal(pivot, zero), one, pivot))
        right = b.Slice(corner, b.ints([0, 1], "start"), b.ints([1, size], "end"), matrix)
        rest = b.Slice(corner, b.ints([1, 1], "start"), b.ints([size, size], "end"), matrix)
        corner = b.Sub(rest, b.Mul(below, right))
    determinant = b.over_axes("Squeeze", b.Mul(sign, product), [rows_axis, columns_axis])
    return b.Cast(determinant, to=x.element_type) if compute != x.element_type else determinant
