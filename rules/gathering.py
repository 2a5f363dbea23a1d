"""Gather along any axis, strings included: onnxruntime's Gather of a string tensor along an axis
other than the last gives '' for every string of a slice but the first (measured: x [3, 2] of
strings, axis 0, index 1 gives [x[1, 0], '']), and its graph optimizations move a Transpose
around a Gather back there; its GatherElements of strings is right along every axis."""

from __future__ import annotations

from collections.abc import Callable

from onnx import TensorProto

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value

STRINGS_FROM = schemas.first_opset("GatherElements")


def gather_along(
    b: Builder,
    x: Value | str,
    indices: Value,
    axis: int,
    rank: int | None,
    indices_rank: int | None = 1,
    *,
    element_type: int | None = None,
    outputs: list[str] | None = None,
) -> Value:
    """Gather(x, indices, axis); strings along an axis not the last as
    GatherElements(x, Expand(Reshape(indices, [1, .., k, .., 1]), s), axis), s = x's shape with 1
    along the axis, so each of the k positions is read at every place of the other axes (a 0-D
    index read as [1], its axis squeezed after). ``rank``: x's, ``indices_rank`` the indices'
    (0 or 1; None where unknown); ``element_type``: x's where ``x`` is a name or a value of no
    known type. Strings along another axis than the last are not gathered below opset 11 (no
    GatherElements) or where a rank is unknown."""
    kind = x.element_type if isinstance(x, Value) and x.element_type is not None else element_type
    if kind != TensorProto.STRING or axis == -1 or (rank is not None and axis == rank - 1):
        return b.Gather(x, indices, axis=axis, outputs=outputs)
    if rank is None or indices_rank not in (0, 1):
        raise NotLowered("strings are gathered along another axis than the last by GatherElements, and a rank "
                         "is unknown (onnxruntime's Gather of strings there keeps each slice's first)")  # fmt: skip
    if b.opset < STRINGS_FROM:
        raise NotLowered(
            f"strings are gathered along another axis than the last by GatherElements, which does not exist at "
            f"opset {b.opset} (onnxruntime's Gather of strings there keeps each slice's first)"
        )
    axis = axis + rank if axis < 0 else axis
    shape = b.Shape(x)
    pieces = [b.Slice(shape, b.ints([0], "before_from"), b.ints([axis], "before_to"))] if axis > 0 else []
    pieces.append(b.ints([1], "one"))
    if axis < rank - 1:
        pieces.append(b.Slice(shape, b.ints([axis + 1], "after_from"), b.ints([rank], "after_to")))
    spread = b.Concat(*pieces, axis=0)
    along = b.Reshape(indices, b.ints([1] * axis + [-1] + [1] * (rank - 1 - axis), "along_axis"))
    if indices_rank == 1:
        return b.GatherElements(x, b.Expand(along, spread), axis=axis, outputs=outputs)
    gathered = b.GatherElements(x, b.Expand(along, spread), axis=axis)
    squeezed = b.over_axes("Squeeze", gathered, [axis])
    if outputs:
        return b.Identity(squeezed, outputs=outputs)
    return squeezed


def row_numbers(b: Builder, dims: Value, depth: int, coordinate: Callable[[int], Value]) -> Value:
    """The row of Flatten(x, k) that each index tuple (i₀, ..., i_{k-1}) names, x's shape ``dims``,
    k = ``depth``, i_j = ``coordinate(j)``: r = (···(n₀·d₁ + n₁)·d₂ + ···)·d_{k-1} + n_{k-1},
    n_j = Gather(Range(0, d_j, 1), i_j): i_j itself, i_j + d_j where negative, and an error
    where outside [-d_j, d_j), as the ops that take such tuples (GatherND, ScatterND) fail.
    Integers only: exact."""
    int64 = TensorProto.INT64
    zero, one = b.scalar(0, int64, "zero"), b.scalar(1, int64, "one")
    row = None
    for j in range(depth):
        size = b.Gather(dims, b.scalar(j, int64, f"axis_{j}"), axis=0)
        checked = b.Gather(b.Range(zero, size, one), coordinate(j), axis=0)
        row = checked if row is None else b.Add(b.Mul(row, size), checked)
    return row
