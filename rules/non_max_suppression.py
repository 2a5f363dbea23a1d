"""NonMaxSuppression (versions 10, 11, no function body) lowered to the overlap of every pair of
boxes and a greedy selection unrolled over the boxes' ranks."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted
from .failing import zero_unless
from .ordering import MOST_PAIRED_ELEMENTS, first_where, larger_of, numbers

EMITS = (
    "Gather", "Reshape", "Unsqueeze", "Squeeze", "Less", "Greater", "Equal", "IsNaN", "And", "Or", "Not",
    "Where", "Sub", "Add", "Mul", "Div", "Cast", "MatMul", "ReduceSum", "ReduceMin", "Range", "Mod",
    "Concat", "Expand", "Shape", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on (Equal on floats and Range from 11), int64
# Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)
# The most boxes whose selection the rule unrolls: one step per rank.
MOST_BOXES = 256


@rule("NonMaxSuppression", versions=(10, 11), emits=EMITS)
def nms_by_greedy_ranks(
    b: Builder,
    boxes: Value,
    scores: Value,
    max_output_boxes_per_class: Value | None = None,
    iou_threshold: Value | None = None,
    score_threshold: Value | None = None,
    *,
    center_point_box: int = 0,
) -> Value:
    """NonMaxSuppression(boxes [B, n, 4], scores [B, C, n], K, t, s) = selected_indices [M, 3].

    Per batch b and class c, box i is a candidate where ``score_i > s`` (every box where s is not
    given); candidates are taken in order of score, highest first, and box i is selected where no
    box selected before it suppresses it, at most K per class (none where K is not given):
    ``sel_i = cand_i ∧ ¬∃ j: ahead[i, j] ∧ sel_j ∧ suppress[i, j]``, one step per rank (the box of
    rank r is settled after r steps, n - 1 steps in all). ``ahead[i, j]`` where score_j > score_i,
    or they tie and j < i (NaN, a candidate only where s is not given, below every number).
    ``suppress[i, j]`` (box j suppresses box i) is onnxruntime's IoU test of selected box j against box i, in float32 as
    it computes: each box's extent per axis ordered by ``lhs >= rhs`` (corners) or centre ∓ half
    the size (``center_point_box=1``); the intersection from std::max/std::min (a < b ? b : a);
    suppressed where the extents overlap (not ``max <= min``), the intersection, both areas and
    ``union = (area_j + area_i) - intersection`` are not ``<= 0``, and ``intersection / union > t``.
    The rows, per batch then class, the selected boxes in order of selection: the box of selected
    rank k in (b, c) is output row ``offset[b, c] + k``, offset the selections of the earlier
    pairs. K below 0 selects none, as K = 0; K, t and s are read from their first element, as the
    kernel reads them.
    As onnxruntime's kernel answers (it takes equal scores by index, measured), but for NaN
    scores where s is not given: its heap orders them by no rule (measured), the rule below
    every number.
    Fails where the kernel fails: t outside [0, 1] (NaN too), boxes not [B, n, 4] for scores
    [B, C, n] (checked at run time where the shapes do not say).
    Not lowered: n unknown or above 256 (the steps are unrolled), (B·C·n)² known to pass 2^24
    (every score matched with every output row), shapes that say the op fails,
    center_point_box other than 0 and 1, a constant t outside [0, 1], opsets below 11.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    if center_point_box not in (0, 1):
        raise NotLowered(f"center_point_box={center_point_box}: the op takes 0 or 1 only")
    batches, n, classes = _sizes(b.shape_of(boxes), b.shape_of(scores))
    if n is None or n > MOST_BOXES:
        said = "unknown" if n is None else f"{n}, more than the {MOST_BOXES} it unrolls"
        raise NotLowered(f"the number of boxes is {said}: the rule takes one step per box")
    scored = math.prod(d for d in (batches, classes) if d is not None) * n
    if scored * scored > MOST_PAIRED_ELEMENTS:
        raise NotLowered(
            f"at least {scored} scores, each matched with every output row, make at least {scored * scored} "
            "pairs, more than the 2^24 this rule compares at once"
        )
    int64, float32 = TensorProto.INT64, TensorProto.FLOAT
    threshold, checks = _checked_iou_threshold(b, iou_threshold)
    checks += _shapes_checked(b, boxes, scores)
    if max_output_boxes_per_class is None or n == 0:  # K = 0, or no box: no row
        return _failing_where(b, b.tensor(np.zeros((0, 3), np.int64), "no_rows"), checks)
    suppress = _suppressing(b, boxes, threshold, center_point_box)  # [B, 1, n (i), n (j)]
    ahead = _ahead(b, scores, n)  # [B, C, n (i), n (j)]
    one = b.constant(1, like=scores, hint="one")
    candidate = None
    if score_threshold is not None:
        candidate = b.Greater(scores, _first(b, score_threshold, "score_threshold"))
    blocking = b.Cast(b.And(ahead, suppress), to=float32)  # [B, C, n, n]
    every = b.Expand(one, b.Shape(scores))  # [B, C, n]
    selected = every if candidate is None else b.Cast(candidate, to=float32)
    for _ in range(n - 1):
        blocked = b.MatMul(blocking, b.over_axes("Unsqueeze", selected, [3]))  # [B, C, n, 1]: selected ahead
        unblocked = b.Less(b.over_axes("Squeeze", blocked, [3]), b.constant(0.5, like=scores, hint="half"))
        kept = unblocked if candidate is None else b.And(candidate, unblocked)
        selected = b.Cast(kept, to=float32)
    selected_ahead = b.MatMul(b.Cast(ahead, to=float32), b.over_axes("Unsqueeze", selected, [3]))
    rank = b.Cast(b.over_axes("Squeeze", selected_ahead, [3]), to=int64)  # [B, C, n]
    limit = _first(b, max_output_boxes_per_class, "max_output_boxes_per_class")
    kept = b.And(b.Equal(selected, one), b.Less(rank, limit))  # [B, C, n]
    return _failing_where(b, _rows(b, kept, rank, n), checks)


def _sizes(
    boxes_shape: list[int | None] | None, scores_shape: list[int | None] | None
) -> tuple[int | None, int | None, int | None]:
    """(B, n, C) as far as the shapes say; refused where they say the op fails: a rank other
    than 3, boxes' last axis not 4, B or n apart between boxes and scores."""
    for name, shape in (("boxes", boxes_shape), ("scores", scores_shape)):
        if shape is not None and len(shape) != 3:
            raise NotLowered(f"{name} is of rank {len(shape)}, not 3: the op fails")
    boxes_shape, scores_shape = boxes_shape or [None] * 3, scores_shape or [None] * 3
    if boxes_shape[2] not in (4, None):
        raise NotLowered(f"boxes hold {boxes_shape[2]} coordinates each, not 4: the op fails")
    sizes = []
    for what, pair in (("batches", (boxes_shape[0], scores_shape[0])), ("boxes", (boxes_shape[1], scores_shape[2]))):
        known = {d for d in pair if d is not None}
        if len(known) > 1:
            raise NotLowered(f"boxes and scores give {' and '.join(map(str, pair))} {what}: the op fails")
        sizes.append(next(iter(known), None))
    return sizes[0], sizes[1], scores_shape[1]


def _shapes_checked(b: Builder, boxes: Value, scores: Value) -> list[Value]:
    """Where the shapes do not say so, a check that boxes is [B, n, 4] for scores [B, C, n]:
    0, or a failure where it is not (the kernel fails)."""
    boxes_shape, scores_shape = b.shape_of(boxes) or [None] * 3, b.shape_of(scores) or [None] * 3
    pairs = ((boxes_shape[0], scores_shape[0]), (boxes_shape[1], scores_shape[2]), (boxes_shape[2], 4))
    if all(None not in pair for pair in pairs):  # (known alike: _sizes refuses them apart)
        return []
    int64 = TensorProto.INT64
    wanted = b.Concat(b.Gather(b.Shape(scores), b.ints([0, 2], "batches_and_boxes")), b.ints([4], "four"), axis=0)
    apart = b.Cast(b.Not(b.Equal(b.Shape(boxes), wanted)), to=int64)
    return [zero_unless(b, b.over_axes("ReduceSum", apart, [0], keepdims=1))]


def _failing_where(b: Builder, rows: Value, checks: list[Value]) -> Value:
    """``rows`` plus each check (0 as [1], or a failure): the output depends on every check, so
    none is left out as unused."""
    for check in checks:
        rows = b.Add(rows, check)
    return rows


def _first(b: Builder, value: Value, name: str) -> Value:
    """The first element of ``value`` as [1], as the kernel reads a scalar input."""
    return b.Gather(b.Reshape(value, b.ints([-1], "flat")), b.ints([0], f"first_{name}"))


def _checked_iou_threshold(b: Builder, iou_threshold: Value | None) -> tuple[Value, list[Value]]:
    """t as [1] (0 where not given), and its check: a constant t outside [0, 1] refused, a fed one
    checked at run time (Gather([0], [1]) reads past its one element where not
    ``t >= 0 && t <= 1``)."""
    if iou_threshold is None:
        return b.tensor(np.zeros(1, np.float32), "iou_threshold"), []
    known = b.constant_value(iou_threshold)
    if known is not None and known.size and not 0 <= float(known.reshape(-1)[0]) <= 1:
        raise NotLowered(f"iou_threshold {float(known.reshape(-1)[0])} is outside [0, 1]: the op fails")
    threshold = _first(b, iou_threshold, "iou_threshold")
    if known is not None:
        return threshold, []
    zero, one = b.constant(0, like=threshold, hint="zero"), b.constant(1, like=threshold, hint="one")
    inside = b.And(_at_least(b, threshold, zero), _at_least(b, one, threshold))
    return threshold, [zero_unless(b, b.Not(inside))]


def _at_least(b: Builder, a: Value, c: Value) -> Value:
    """``a >= c`` as C++ answers it: false where either is NaN."""
    return b.Or(b.Greater(a, c), b.Equal(a, c))


def _not_at_most(b: Builder, a: Value, c: Value) -> Value:
    """``!(a <= c)``: true where either is NaN."""
    return b.Not(b.Or(b.Less(a, c), b.Equal(a, c)))


def _extents(b: Builder, boxes: Value, center_point_box: int) -> tuple[Value, Value, Value, Value]:
    """Each box's (x_min, x_max, y_min, y_max), [B, n]: corners [y1, x1, y2, x2] ordered by
    ``lhs >= rhs ? (rhs, lhs) : (lhs, rhs)``; centres [x, y, w, h] as x ∓ w / 2, y ∓ h / 2."""
    coordinate = [b.Gather(boxes, b.scalar(k, TensorProto.INT64, f"coordinate{k}"), axis=2) for k in range(4)]
    if center_point_box:
        two = b.constant(2, like=boxes, hint="two")
        x, y, half_w, half_h = coordinate[0], coordinate[1], b.Div(coordinate[2], two), b.Div(coordinate[3], two)
        return b.Sub(x, half_w), b.Add(x, half_w), b.Sub(y, half_h), b.Add(y, half_h)

    def ordered(lhs: Value, rhs: Value) -> tuple[Value, Value]:
        swapped = _at_least(b, lhs, rhs)
        return b.Where(swapped, rhs, lhs), b.Where(swapped, lhs, rhs)

    return *ordered(coordinate[1], coordinate[3]), *ordered(coordinate[0], coordinate[2])


def _suppressing(b: Builder, boxes: Value, threshold: Value, center_point_box: int) -> Value:
    """``suppress[b, 0, i, j]``: selected box j suppresses box i (SuppressByIOU(j, i))."""
    x_min, x_max, y_min, y_max = _extents(b, boxes, center_point_box)

    def as_selected(v: Value) -> Value:  # box j: [B, 1, n]
        return b.over_axes("Unsqueeze", v, [1])

    def as_candidate(v: Value) -> Value:  # box i: [B, n, 1]
        return b.over_axes("Unsqueeze", v, [2])

    def smaller(a: Value, c: Value) -> Value:  # std::min(a, c) = c < a ? c : a
        return b.Where(b.Less(c, a), c, a)

    low_x = larger_of(b, as_selected(x_min), as_candidate(x_min))  # std::max(a, c) = a < c ? c : a
    high_x = smaller(as_selected(x_max), as_candidate(x_max))
    low_y = larger_of(b, as_selected(y_min), as_candidate(y_min))
    high_y = smaller(as_selected(y_max), as_candidate(y_max))
    zero = b.constant(0, like=boxes, hint="zero")
    intersection = b.Mul(b.Sub(high_x, low_x), b.Sub(high_y, low_y))
    area = b.Mul(b.Sub(x_max, x_min), b.Sub(y_max, y_min))  # [B, n]
    area_selected, area_candidate = as_selected(area), as_candidate(area)
    union = b.Sub(b.Add(area_selected, area_candidate), intersection)
    conditions = [
        _not_at_most(b, high_x, low_x),
        _not_at_most(b, high_y, low_y),
        _not_at_most(b, intersection, zero),
        _not_at_most(b, area_selected, zero),
        _not_at_most(b, area_candidate, zero),
        _not_at_most(b, union, zero),
        b.Greater(b.Div(intersection, union), threshold),
    ]
    suppress = conditions[0]
    for condition in conditions[1:]:
        suppress = b.And(suppress, condition)
    return b.over_axes("Unsqueeze", suppress, [1])


def _ahead(b: Builder, scores: Value, n: int) -> Value:
    """``ahead[b, c, i, j]``: box j is taken before box i, score_j > score_i or a tie (NaN with
    NaN) and j < i, NaN below every number: ``above(j, i) ∨ (j < i ∧ ¬above(i, j))``."""
    mine, theirs = b.over_axes("Unsqueeze", scores, [3]), b.over_axes("Unsqueeze", scores, [2])  # s_i, s_j
    mine_nan, theirs_nan = b.IsNaN(mine), b.IsNaN(theirs)
    above = b.Or(b.Less(mine, theirs), b.And(mine_nan, b.Not(theirs_nan)))  # j above i
    below = b.Or(b.Less(theirs, mine), b.And(theirs_nan, b.Not(mine_nan)))  # i above j
    positions = numbers(b, scores, 2, n)
    earlier = b.Less(positions, b.over_axes("Unsqueeze", positions, [1]))  # [n (i), n (j)]: j < i
    return b.Or(above, b.And(earlier, b.Not(below)))


def _rows(b: Builder, kept: Value, rank: Value, n: int) -> Value:
    """The rows [b, c, i] of the kept boxes, per (b, c) in order, then by rank: the box kept at
    flat position f = (b·C + c)·n + i is row ``offset[b, c] + rank``, offset the kept boxes of
    the pairs before (b, c); row m is the first f whose row is m (:func:`first_where`)."""
    int64 = TensorProto.INT64
    counts = b.over_axes("ReduceSum", b.Cast(kept, to=int64), [2], keepdims=0)  # [B, C]
    per_pair = b.Reshape(counts, b.ints([-1], "flat"))  # [P]
    pair_numbers = numbers(b, per_pair, 0, None)
    earlier_pair = b.Less(b.over_axes("Unsqueeze", pair_numbers, [0]), b.over_axes("Unsqueeze", pair_numbers, [1]))
    zero = b.scalar(0, int64, "zero")
    offsets = b.over_axes(
        "ReduceSum", b.Where(earlier_pair, b.over_axes("Unsqueeze", per_pair, [0]), zero), [1], keepdims=0
    )  # [P]: Σ_{q < p} counts[q]
    row_of = b.Add(b.over_axes("Unsqueeze", offsets, [1]), b.Reshape(rank, b.ints([-1, n], "pair_rows")))  # [P, n]
    flat_kept = b.Reshape(kept, b.ints([-1], "flat"))
    flat_row = b.Where(flat_kept, b.Reshape(row_of, b.ints([-1], "flat")), b.scalar(-1, int64, "none"))  # [P·n]
    total = b.over_axes("ReduceSum", per_pair, [0], keepdims=0)
    one = b.scalar(1, int64, "one")
    row_numbers = counted(b, zero, total, one)  # [M]
    flat_numbers = numbers(b, flat_row, 0, None)
    size = b.over_axes("Squeeze", b.Shape(flat_row), [0])
    matched = b.Equal(b.over_axes("Unsqueeze", flat_row, [0]), b.over_axes("Unsqueeze", row_numbers, [1]))  # [M, P·n]
    flat = first_where(b, matched, b.over_axes("Unsqueeze", flat_numbers, [0]), size, 1)  # [M]
    classes = b.Gather(b.Shape(kept), b.ints([1], "classes"))
    classes = b.Where(b.Equal(classes, zero), b.ints([1], "one_class"), classes)  # (C = 0: no rows, no division)
    box = b.Mod(flat, b.scalar(n, int64, "boxes"))
    pair = b.Div(flat, b.scalar(n, int64, "boxes"))
    batch, class_ = b.Div(pair, classes), b.Mod(pair, classes)
    columns = [b.over_axes("Unsqueeze", v, [1]) for v in (batch, class_, box)]
    return b.Concat(*columns, axis=1)
