"""Unique (versions 11, 28, no function body) lowered to comparisons of every pair of rows."""

from __future__ import annotations

import math

from onnx import TensorProto

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted
from .ordering import MOST_PAIRED_ELEMENTS, comparable, first_where, numbers

EMITS = (
    "Reshape", "Unsqueeze", "Transpose", "Flatten", "Cast", "Equal", "Less", "IsNaN", "And", "Or", "Not",
    "ReduceSum", "ReduceMin", "Where", "Shape", "Gather", "Squeeze", "Range", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on (Range from 11), int64 Constants
# among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)


@rule("Unique", versions=(11, 28), emits=EMITS)
def unique_by_comparing_rows(b: Builder, x: Value, *, axis: int | None = None, sorted: int = 1):  # noqa: A002
    """Unique(X) = (Y, indices, inverse_indices, counts) from X's rows (its slices along ``axis``,
    or its elements: [n, m]) compared pairwise.

    Rows i and j are equal where no element differs (NaN equal to NaN, -0 to 0); row j is below
    row i where, at the first element k where they differ, r_jk < r_ik (NaN above every number):
    ``below[i, j] = Σ_k [k = k*] · [r_jk < r_ik]``, k* = min{k : differ[i, j, k]} (rows of one
    element: r_j < r_i). Row i comes first where no earlier row equals it (``first``). Its rank,
    ``inverse_indices[i]``, is the number of first rows below it (sorted) or before its first
    equal (sorted=0); ``counts[r]`` the rows of rank r; ``indices[r]`` the first row of rank r.
    A first column where a condition holds is ReduceMin(Where(condition, j, n)), no running sum
    (:func:`rules.ordering.first_where`).
    ``Y = Gather(X, indices)`` along the axis (or of X's elements), X's bits as they are: the
    first of equal rows (-0 where it comes first).
    As onnxruntime's kernel answers inputs free of NaN; one holding NaN it answers by its map's
    balance (NaN neither below nor above anything: [2, NaN, NaN, NaN, 1] gives [1, 2] and counts
    [1, 4], measured), which no rewrite follows: the rule takes every NaN as one value above
    every number, as onnx.reference does without an axis. Rows of no elements (m = 0) are all
    equal, one unique row, as onnx.reference answers (onnxruntime's kernel aborts the process).
    Quadratic in the rows: not lowered where n²·max(m, 1) is known to pass 2^24. Not lowered: an axis
    outside X's rank, X's rank unknown with an axis, strings and complex values, types the
    target compares in no exact way, opsets below 11.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    if axis is None:  # X's elements as rows of one
        source, gathered_axis = b.Reshape(x, b.ints([-1], "every_element")), 0
        rows = b.over_axes("Unsqueeze", source, [1])
        known = [math.prod(shape) if shape is not None and None not in shape else None, 1]
    else:
        if shape is None:
            raise NotLowered("X's rank is unknown, so the axis its slices lie along is unknown")
        rank = len(shape)
        if not -rank <= axis < rank:
            raise NotLowered(f"axis {axis} is outside X's rank {rank}")
        gathered_axis = axis % rank
        others = [d for k, d in enumerate(shape) if k != gathered_axis]
        moved = (
            x
            if gathered_axis == 0
            else b.Transpose(x, perm=[gathered_axis, *range(gathered_axis), *range(gathered_axis + 1, rank)])
        )
        source, rows = x, b.Flatten(moved, axis=1)  # [n, m]
        known = [shape[gathered_axis], math.prod(others) if None not in others else None]
    rows_known, per_row = known[0], max(known[1] or 1, 1)  # (an unknown or empty row: at least 1)
    if rows_known is not None and rows_known**2 * per_row > MOST_PAIRED_ELEMENTS:
        raise NotLowered(
            f"{rows_known} rows make at least {rows_known**2 * per_row} pairs of elements to compare, more than "
            f"the 2^24 this rule compares at once"
        )
    rows = comparable(b, rows)
    int64 = TensorProto.INT64
    mine, theirs = b.over_axes("Unsqueeze", rows, [1]), b.over_axes("Unsqueeze", rows, [0])  # r_i·, r_j·
    same = b.Equal(mine, theirs)  # [n, n, m]
    below = b.Less(theirs, mine)
    if floats.is_float(rows.element_type):  # NaN equal to NaN, above every number
        mine_nan, theirs_nan = b.IsNaN(mine), b.IsNaN(theirs)
        same = b.Or(same, b.And(mine_nan, theirs_nan))
        below = b.Or(below, b.And(mine_nan, b.Not(theirs_nan)))
    differ = b.Cast(b.Not(same), to=int64)
    equal = b.Equal(_summed(b, differ, 2), b.constant(0, like=differ, hint="zero"))  # [n, n]
    count = b.over_axes("Squeeze", b.Gather(b.Shape(rows), b.ints([0], "rows")), [0])
    zero, one = b.constant(0, like=differ, hint="zero"), b.constant(1, like=differ, hint="one")
    row_numbers = numbers(b, rows, 0, known[0])
    earlier = b.Less(b.over_axes("Unsqueeze", row_numbers, [0]), b.over_axes("Unsqueeze", row_numbers, [1]))  # j < i
    first = b.Equal(_summed(b, b.Cast(b.And(equal, earlier), to=int64), 1), zero)  # [n]
    firsts = b.over_axes("Unsqueeze", first, [0])  # [1, n]
    if not sorted:  # the first rows before row i's first equal
        first_equal = first_where(b, equal, b.over_axes("Unsqueeze", row_numbers, [0]), count, 1)
        ranked_before = b.And(firsts, b.Less(b.over_axes("Unsqueeze", row_numbers, [0]),
                                             b.over_axes("Unsqueeze", first_equal, [1])))  # fmt: skip
    elif known[1] == 1:  # rows of one element: below where less
        ranked_before = b.And(firsts, b.over_axes("Squeeze", below, [2]))
    else:  # below at the first element that differs, k*: ReduceMin(Where(differs, k, m))
        columns = numbers(b, rows, 1, known[1])
        width = b.over_axes("Squeeze", b.Gather(b.Shape(rows), b.ints([1], "columns")), [0])
        numbered = b.Where(b.Not(same), b.over_axes("Unsqueeze", columns, [0, 1]), width)
        first_difference = b.over_axes("ReduceMin", numbered, [2], keepdims=1)  # [n, n, 1]
        at_first_difference = b.Equal(b.over_axes("Unsqueeze", columns, [0, 1]), first_difference)
        is_below = b.Less(zero, _summed(b, b.Cast(b.And(at_first_difference, below), to=int64), 2))
        ranked_before = b.And(firsts, is_below)
    inverse_indices = _summed(b, b.Cast(ranked_before, to=int64), 1)  # [n]
    ranks = counted(b, zero, _summed(b, b.Cast(first, to=int64), 0), one)  # [u]: 0 to u - 1
    of_rank = b.Equal(b.over_axes("Unsqueeze", inverse_indices, [0]), b.over_axes("Unsqueeze", ranks, [1]))  # [u, n]
    counts = _summed(b, b.Cast(of_rank, to=int64), 1)
    indices = first_where(b, of_rank, b.over_axes("Unsqueeze", row_numbers, [0]), count, 1)
    y = b.Gather(source, indices, axis=gathered_axis)
    return y, indices, inverse_indices, counts


def _summed(b: Builder, value: Value, axis: int) -> Value:
    return b.over_axes("ReduceSum", value, [axis], keepdims=0)
