"""TopK (versions 1, 10, 11, 24, no function body) lowered to the rank of every element, from
comparisons of every pair along the axis."""

from __future__ import annotations

import math
from dataclasses import dataclass

from onnx import TensorProto

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted
from .failing import zero_unless
from .ordering import MOST_PAIRED_ELEMENTS, comparable, first_where, numbers

EMITS = (
    "Transpose", "Cast", "Unsqueeze", "Squeeze", "Less", "IsNaN", "And", "Or", "Not", "Where", "Equal",
    "ReduceSum", "ReduceMin", "Range", "Shape", "Gather", "GatherElements", "Add", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on (GatherElements and Range from 11), int64
# Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)


@rule("TopK", versions=(1, 10, 11, 24), emits=EMITS)
def topk_by_ranking(
    b: Builder,
    x: Value,
    k_input: Value | None = None,
    *,
    axis: int = -1,
    largest: int = 1,
    sorted: int = 1,  # noqa: A002
    k: int | None = None,
) -> tuple[Value, Value]:
    """TopK(X, K) = (values, indices): along ``axis`` (n elements), the K elements of rank 0 to K - 1.

    Element j comes ahead of element i where it comes strictly first (largest: x_j > x_i, else
    x_j < x_i; NaN above every number), or ties with it (NaN with NaN, -0 with 0) and j < i:
    ``ahead[i, j] = before(j, i) ∨ (j < i ∧ ¬after(j, i))``; ``rank_i = Σ_j ahead[i, j]``, a
    permutation of 0..n-1. ``indices[r]`` = ReduceMin(Where(rank = r, j, n)) for r < K, ``values``
    = GatherElements(X, indices): X's own bits. As onnxruntime's kernel answers, measured on
    every element type, lengths 5 to 3000 and K from 1 to n (heap and sort alike), NaN and ±0
    among the values: ties in order of index, NaN first when largest, last when smallest (its
    float16 kernel answers a NaN of another payload, 0x7E01 as 0x7E00: the rule X's own bits).
    Fails where the kernel fails: K < 0 or K > n, K not shaped [1] (at run time where they are
    not known; a constant K so is not lowered).
    Quadratic in n: not lowered where (elements of X)·n passes 2^24, unknown lengths taken as 1.
    Not lowered: sorted=0 (the order is the kernel's selection order, which no rewrite follows;
    onnxruntime's is neither sorted nor by index), an axis outside X's rank or X's rank unknown,
    types the target compares in no exact way (uint64 where it lacks Less on it), opsets below 11.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    if not sorted:
        raise NotLowered(
            "sorted=0 leaves the order to the kernel (onnxruntime answers in its selection order, "
            "neither sorted nor by index), which no rewrite follows"
        )
    shape = b.shape_of(x)
    if shape is None:
        raise NotLowered("X's rank is unknown, so the axis TopK orders along is unknown")
    rank = len(shape)
    if not -rank <= axis < rank:
        raise NotLowered(f"axis {axis} is outside X's rank {rank}")
    last = rank - 1
    along = axis % rank
    length = shape[along]
    elements = math.prod(d for d in shape if d is not None)  # (at least: an unknown length is at least 1)
    if length is not None and elements * length > MOST_PAIRED_ELEMENTS:
        raise NotLowered(
            f"at least {elements} elements each compared with the {length} along the axis make at least "
            f"{elements * length} pairs, more than the 2^24 this rule compares at once"
        )
    perm = [*range(along), *range(along + 1, rank), along]  # the axis moved last
    moved = x if along == last else b.Transpose(x, perm=perm)
    keys = comparable(b, moved)
    count = _wanted(b, moved, k_input, k, length)
    mine, theirs = b.over_axes("Unsqueeze", keys, [rank]), b.over_axes("Unsqueeze", keys, [last])  # x_i, x_j
    above, below = b.Less(mine, theirs), b.Less(theirs, mine)  # x_j > x_i, x_j < x_i
    if floats.is_float(keys.element_type):  # NaN above every number
        mine_nan, theirs_nan = b.IsNaN(mine), b.IsNaN(theirs)
        above = b.Or(above, b.And(theirs_nan, b.Not(mine_nan)))
        below = b.Or(below, b.And(mine_nan, b.Not(theirs_nan)))
    before, after = (above, below) if largest else (below, above)
    positions = numbers(b, moved, last, length)  # j along the last axis
    earlier = b.Less(positions, b.over_axes("Unsqueeze", positions, [1]))  # [n, n]: j < i
    ahead = b.Or(before, b.And(earlier, b.Not(after)))
    ranks = b.over_axes("ReduceSum", b.Cast(ahead, to=TensorProto.INT64), [rank], keepdims=0)  # [..., n]
    wanted = b.over_axes("Unsqueeze", count.ranks, [1])  # [K, 1]
    of_rank = b.Equal(b.over_axes("Unsqueeze", ranks, [last]), wanted)  # [..., K, n]
    indices = first_where(b, of_rank, positions, count.length, rank)  # [..., K]
    values = b.GatherElements(moved, indices, axis=last)
    if along == last:
        return values, indices
    back = [perm.index(d) for d in range(rank)]
    return b.Transpose(values, perm=back), b.Transpose(indices, perm=back)


@dataclass(frozen=True)
class _Wanted:
    """The ranks wanted, 0 to K - 1 ([K]), and n as a scalar (the index no rank matches)."""

    ranks: Value
    length: Value


def _wanted(b: Builder, moved: Value, k_input: Value | None, k: int | None, length: int | None) -> _Wanted:
    """0 to K - 1, K from the attribute (TopK-1) or the input: a constant where K is known, else
    Range(0, K); checked against [0, n] at run time where K or n is not known (Gather([0], [1])
    reads past its one element: the lowered model fails where the kernel fails), K fed as [1]
    (Squeeze of its axis 0, then Range of a scalar, fail otherwise)."""
    int64 = TensorProto.INT64
    if k_input is None and k is None:
        raise NotLowered("TopK-1 without its k attribute")
    known = k if k_input is None else _constant_k(b, k_input)
    if known is not None and (known < 0 or length is not None and known > length):
        bound = "n" if length is None else length
        raise NotLowered(f"K = {known} is outside [0, {bound}], the length along the axis: the op fails")
    if known is not None and length is not None:
        return _Wanted(b.ints(list(range(known)), "ranks"), b.scalar(length, int64, "length"))
    n = (
        b.scalar(length, int64, "length")
        if length is not None
        else b.over_axes("Squeeze", b.Gather(b.Shape(moved), b.ints([-1], "last")), [0])
    )
    wanted = b.scalar(known, int64, "k") if known is not None else _fed_k(b, k_input)
    outside = b.Less(n, wanted)
    if known is None:
        outside = b.Or(b.Less(wanted, b.scalar(0, int64, "zero")), outside)
    checked = zero_unless(b, outside)
    ranks = counted(b, checked, b.Add(wanted, checked), b.scalar(1, int64, "one"))
    return _Wanted(ranks, n)


def _fed_k(b: Builder, k_input: Value) -> Value:
    """K fed at run time as a scalar: Squeeze of its axis 0, which fails unless that axis is 1,
    and, where K's rank is not known to be 1, a failure unless it is (Gather([0], [1]))."""
    shape = b.shape_of(k_input)
    if shape is not None and (len(shape) != 1 or shape[0] not in (1, None)):
        raise NotLowered(f"K is declared {shape}, not [1]: the op fails")
    k_value = b.over_axes("Squeeze", k_input, [0])
    if shape is not None:
        return k_value
    not_rank_one = b.Not(b.Equal(b.Shape(b.Shape(k_input)), b.ints([1], "rank_one")))
    return b.Add(k_value, zero_unless(b, not_rank_one))


def _constant_k(b: Builder, k_input: Value) -> int | None:
    """K where it is a constant; a constant not shaped [1] is refused, as the op refuses it."""
    value = b.constant_value(k_input)
    if value is None:
        return None
    if value.shape != (1,):
        raise NotLowered(f"K is shaped {list(value.shape)}, not [1]: the op fails")
    return int(value[0])
