"""GridSample (versions 16, 20, 22, no function body) lowered to coordinates, neighbour indices and a Gather of rows."""

from __future__ import annotations

import itertools

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.conversion.adapters import as_text
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = (
    "Shape", "Gather", "Cast", "Add", "Sub", "Mul", "Div", "Round", "Floor", "Less", "Greater", "Equal", "Or", "And",
    "Xor", "Where", "Max", "Min", "Unsqueeze", "Squeeze", "Concat", "Transpose", "Flatten", "Range", "ReduceSum",
    "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on: each of them exists (Range from 11) and
# Constant holds its int64 indices and axes, onnx.defs says.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# The interpolation each mode name means: version 16's names and version 20's (rules/versions/grid_sample.py).
INTERPOLATION = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic", "cubic": "cubic"}
PADDING_MODES = ("zeros", "border", "reflection")
# Neighbours read per output point and spatial axis, and the most the rule gathers per point.
NEIGHBOURS_PER_AXIS = {"nearest": 1, "linear": 2, "cubic": 4}
MOST_NEIGHBOURS = 64
CUBIC_A = -0.75  # the cubic convolution's coefficient (Keys), as the op states it
SAMPLED_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)

# How far the lowered GridSample may stray from the op, per float type. Measured
# (tests/rules/test_gridsample_lowering.py) against onnxruntime's kernel (float, double; where it
# follows the spec: not 5-D cubic, nor cubic with border padding, where it clamps every coordinate
# of a point one of whose coordinates is past the borders) and the numpy reference below (every
# type), on 4-D and 5-D inputs of standard normal values with grids within
# [-2.5, 2.5], out to ±750 and on the borders, every mode, padding and align_corners. The rule
# takes the kernel's coordinates and neighbours (its formulas, in the grid's type, float32 for
# 16-bit grids) and only adds the weighted neighbours in another order (ReduceSum): float at most
# 7.2e-7 apart (cubic, whose weights reach 1.3 and cancel), double 1.3e-15; float16 and bfloat16
# are computed in float32 and rounded once, within one unit in the last place of a reference
# rounded from float64 (2^-10 and 2^-7 of the value). float's atol is the backend's own
# test_gridsample_bicubic, whose expected outputs are written to 4 decimals (-0.1406 for
# -0.140625: 5e-5 from the op's answer, which onnxruntime's kernel gives too).
GRID_SAMPLE_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-4),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-4),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-3),
}


def onnxruntime_follows_the_spec(rank: int, mode: str | bytes, padding_mode: str | bytes) -> bool:
    """Whether onnxruntime's GridSample kernel (16, 20 and 22 alike) computes the op as the spec
    states it for inputs of ``rank``: it has no 5-D cubic, and with cubic and border padding it
    clamps every coordinate of a point where one is past the borders (the spec, onnx.reference
    and this rule clamp that one only). Elsewhere onnx.reference is the oracle."""
    return INTERPOLATION.get(as_text(mode)) != "cubic" or (rank == 4 and as_text(padding_mode) != "border")


def gridsample_reference(
    x: np.ndarray, grid: np.ndarray, *, align_corners: int = 0, mode: str = "linear", padding_mode: str = "zeros"
) -> np.ndarray:
    """The op as its specification states it (onnx.reference's GridSample, vectorized): the
    coordinates unnormalized and padded in the grid's type (float32 for 16-bit grids), as the
    kernels compute them; the neighbours' weighted sum in float64, rounded to x's type once."""
    interpolation, padding_mode = INTERPOLATION[as_text(mode)], as_text(padding_mode)
    coordinate_type = np.float64 if grid.dtype == np.float64 else np.float32
    spatial = x.ndim - 2
    values = np.moveaxis(x.astype(np.float64), 1, -1)  # [N, d1, ..., dr, C]
    one, two, half = (coordinate_type(v) for v in (1, 2, 0.5))
    axes = []  # per spatial axis of x (d1 first): its neighbours' indices, weights and validity
    with np.errstate(all="ignore"):
        for axis in range(spatial):
            size = x.shape[2 + axis]
            g = grid[..., spatial - 1 - axis].astype(coordinate_type)
            length = coordinate_type(size)
            if align_corners:
                v = (g + one) / two * (length - one)
                lo, hi = coordinate_type(0), length - one
            else:
                v = ((g + one) * length - one) / two
                lo, hi = coordinate_type(-0.5), length - half
            if interpolation == "nearest":
                v = np.rint(v)
            if padding_mode == "border":
                v = np.where((v < lo) | (v > hi), np.clip(v, 0, length - one), v)
            elif padding_mode == "reflection":
                v = _reflect(v, lo, hi)
            floor = np.floor(v)
            if interpolation == "nearest":
                indices, weights = [v], [np.ones_like(v, np.float64)]
            elif interpolation == "linear":
                indices, weights = [floor, floor + one], [(floor + one - v), (v - floor)]
            else:
                t = (v - (floor - one)) - one
                indices, weights = [floor - one, floor, floor + one, floor + two], _cubic_coefficients(t)
            neighbours = []
            for index, weight in zip(indices, weights, strict=True):
                if padding_mode == "border":
                    index = np.clip(index, 0, length - one)
                elif padding_mode == "reflection":
                    index = _reflect(index, lo, hi)
                valid = (index > -1) & (index < length)
                neighbours.append((np.where(valid, index, 0).astype(np.int64), np.asarray(weight, np.float64), valid))
            axes.append(neighbours)
        batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * spatial)
        total = np.zeros(grid.shape[:-1] + (x.shape[1],), np.float64)
        for choice in itertools.product(*axes):
            index = tuple(index for index, _, _ in choice)
            weight = np.prod([weight for _, weight, _ in choice], axis=0)
            valid = np.logical_and.reduce([valid for _, _, valid in choice])
            picked = values[(batch, *index)]
            if padding_mode == "zeros":
                picked = np.where(valid[..., None], picked, 0)
            total = total + (weight[..., None] * picked if interpolation != "nearest" else picked)
    return np.moveaxis(total, -1, 1).astype(x.dtype)


def _reflect(v: np.ndarray, lo, hi) -> np.ndarray:
    """v reflected about lo and hi until it lies between them (the op's reflect), in v's type."""
    span = max(hi - lo, type(hi)(1))
    below, above = v < lo, v > hi
    beyond = np.where(below, lo - v, v - hi)
    turns = np.floor(beyond / span)
    rest = beyond - turns * span
    odd = (turns - np.floor(turns * type(hi)(0.5)) * type(hi)(2)) > 0.5
    reflected = np.clip(np.where(below ^ odd, lo + rest, hi - rest), lo, hi)
    return np.where(below | above, reflected, v)


def _cubic_coefficients(t):
    """The four cubic convolution weights of the neighbours at -1, 0, 1, 2 from the point's
    offset t past its floor, as the op's kernels write them."""
    a = CUBIC_A
    return [
        ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
        ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
    ]


@rule(
    "GridSample",
    versions=(16, 20, 22),
    emits=EMITS,
    rounding_invariant=False,
    reference=gridsample_reference,
    tolerance=GRID_SAMPLE_TOLERANCE,
)
def grid_sample_by_gathering(
    b: Builder, x: Value, grid: Value, *, align_corners: int = 0, mode: str = "linear", padding_mode: str = "zeros"
) -> Value:
    """GridSample(X, grid) = Transpose(ReduceSum(Gather(X as rows [N·P, C], n·P + Σ_k i_k·s_k) · Π_k w_k)).

    Per spatial axis k (grid's coordinate r-1-k), as the op's kernels compute it in the grid's
    type (float32 for 16-bit grids): the coordinate unnormalized, ``(g + 1) / 2 · (d - 1)``
    with align_corners, else ``((g + 1) · d - 1) / 2``; nearest rounds it half to even (Round);
    a coordinate past the borders (-0.5 and d - 0.5, or 0 and d - 1 with align_corners) is
    clamped to [0, d - 1] (border) or reflected about them, as often as it takes (reflection).
    The neighbours i_k: the point itself (nearest), Floor and Floor + 1 weighted 1 - t and t
    (linear), Floor - 1 to Floor + 2 weighted by cubic convolution with A = -0.75 (cubic);
    each one clamped (border) or reflected (reflection) into the axis. Every combination of
    neighbours is read at once, as a row of C channels, from X laid out as rows [N·P, C]
    (Transpose, Flatten; P = d_1·…·d_r) at n·P + Σ i_k·s_k (s_k the axis' stride), with zeros
    padding a neighbour outside X read as 0 (Where), and the weighted rows summed (ReduceSum) in
    X's type, float32 for 16-bit X, rounded once; no Reshape, so empty grids and batches pass.
    Not lowered: X or grid of unknown rank, X or grid not of a float type, more than 64
    neighbours per point (cubic beyond 3 spatial axes), opsets below 11 (Range).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    interpolation = INTERPOLATION.get(as_text(mode))
    if interpolation is None:
        raise NotLowered(f"mode {as_text(mode)!r} is none of {', '.join(sorted(INTERPOLATION))}")
    padding_mode = as_text(padding_mode)
    if padding_mode not in PADDING_MODES:
        raise NotLowered(f"padding_mode {padding_mode!r} is none of {', '.join(PADDING_MODES)}")
    for value, name in ((x, "X"), (grid, "grid")):
        if value.element_type not in SAMPLED_TYPES:
            raise NotLowered(
                f"{name} is {schemas.type_name(value.element_type)}; the rule samples float, double, float16 "
                f"and bfloat16 values only"
            )
    shapes = [b.shape_of(x), b.shape_of(grid)]
    ranks = {len(shape) for shape in shapes if shape is not None}
    if not ranks:
        raise NotLowered("the ranks of X and grid are unknown, so the number of spatial axes to sample is unknown")
    if len(ranks) > 1:
        raise NotLowered(f"X and grid have ranks {shapes[0] and len(shapes[0])} and {shapes[1] and len(shapes[1])}")
    (rank,) = ranks
    spatial = rank - 2
    if spatial < 1:
        raise NotLowered(f"X of rank {rank} has no spatial axis to sample")
    per_axis = NEIGHBOURS_PER_AXIS[interpolation]
    if per_axis**spatial > MOST_NEIGHBOURS:
        raise NotLowered(
            f"{interpolation} sampling of {spatial} spatial axes reads {per_axis**spatial} neighbours per point, "
            f"more than the {MOST_NEIGHBOURS} this rule gathers"
        )
    return _sampled(b, x, grid, spatial, interpolation, padding_mode, bool(align_corners))


class _Axis:
    """One spatial axis of X, in the grid's computing type: its length, and the borders a
    coordinate is padded against."""

    def __init__(self, b: Builder, shape: Value, axis: int, real: Value, align_corners: bool) -> None:
        self.size = b.Gather(shape, b.ints([2 + axis], f"axis{axis}"))  # [1], int64
        self.length = b.Cast(self.size, to=real.element_type)
        one = b.constant(1, like=real, hint="one")
        self.last = b.Sub(self.length, one)
        if align_corners:
            self.lo, self.hi = b.constant(0, like=real, hint="zero"), self.last
        else:
            self.lo = b.constant(-0.5, like=real, hint="minus_half")
            self.hi = b.Sub(self.length, b.constant(0.5, like=real, hint="half"))
        # reflection's period, at least 1: an axis of length 1 with align_corners has none
        self.span = b.Max(b.Sub(self.hi, self.lo), one)


def _sampled(b: Builder, x: Value, grid: Value, spatial: int, interpolation: str, padding_mode: str, align_corners):
    data = b.computable(x)
    real = b.computable(grid)
    shape = b.Shape(x)
    one, two = b.constant(1, like=real, hint="one"), b.constant(2, like=real, hint="two")
    zero = b.constant(0, like=real, hint="zero")
    stack_axis = spatial + 1  # the neighbours' axis after [N, o_1, ..., o_r]

    def placed(values: list[Value], axis: int) -> Value:
        return stacked_neighbours(b, values, axis, stack_axis, spatial)

    flat_index = weight = valid = None
    stride = None
    for axis in reversed(range(spatial)):  # the last axis first: its stride is 1
        geometry = _Axis(b, shape, axis, real, align_corners)
        g = b.Gather(real, b.constant(spatial - 1 - axis, like=shape, hint=f"coordinate{spatial - 1 - axis}"), axis=-1)
        if align_corners:
            v = b.Mul(b.Div(b.Add(g, one), two), geometry.last)
        else:
            v = b.Div(b.Sub(b.Mul(b.Add(g, one), geometry.length), one), two)
        if interpolation == "nearest":
            v = b.Round(v)
        if padding_mode == "border":
            outside = b.Or(b.Less(v, geometry.lo), b.Greater(v, geometry.hi))
            v = b.Where(outside, b.Min(b.Max(v, zero), geometry.last), v)
        elif padding_mode == "reflection":
            v = _reflected(b, v, geometry, real)
        if interpolation == "nearest":
            indices, weights = [v], []
        else:
            floor = b.Floor(v)
            if interpolation == "linear":
                after = b.Add(floor, one)
                indices, weights = [floor, after], [b.Sub(after, v), b.Sub(v, floor)]
            else:
                before = b.Sub(floor, one)
                t = b.Sub(b.Sub(v, before), one)
                indices = [before, floor, b.Add(floor, one), b.Add(floor, two)]
                weights = _cubic_weights(b, t, real)
        checked = []
        inside = []
        for index in indices:
            if padding_mode == "border":
                index = b.Min(b.Max(index, zero), geometry.last)
            elif padding_mode == "reflection":
                index = _reflected(b, index, geometry, real)
            index, within = index_within(b, index, geometry.length)
            checked.append(index)
            inside.append(within)
        axis_index = b.Cast(placed(checked, axis), to=TensorProto.INT64)
        if stride is not None:
            axis_index = b.Mul(axis_index, stride)
        flat_index = axis_index if flat_index is None else b.Add(flat_index, axis_index)
        stride = geometry.size if stride is None else b.Mul(stride, geometry.size)
        if padding_mode == "zeros":
            axis_valid = placed(inside, axis)
            valid = axis_valid if valid is None else b.And(valid, axis_valid)
        if weights:
            axis_weight = placed(weights, axis)
            weight = axis_weight if weight is None else b.Mul(weight, axis_weight)
    # X's elements as rows of C channels, [N·P, C] (P = d_1·…·d_r, the last axis' stride 1), and
    # each point's neighbours read as whole rows by Gather at n·P + Σ i_k·s_k: [N, o..., K..., C].
    # No Reshape: its 0 copies an input length, which an empty grid would meet.
    rows = b.Flatten(b.Transpose(data, perm=[0, *range(2, spatial + 2), 1]), axis=spatial + 1)
    first = b.Range(
        b.constant(0, like=shape, hint="zero"),
        b.Gather(shape, b.constant(0, like=shape, hint="zero")),
        b.constant(1, like=shape, hint="one"),
    )
    first = b.over_axes("Unsqueeze", b.Mul(first, stride), list(range(1, 2 * spatial + 1)))
    neighbour_axes = list(range(spatial + 1, 2 * spatial + 1))
    gathered = weighted_rows(b, rows, b.Add(flat_index, first), valid, weight, neighbour_axes)
    y = b.Transpose(gathered, perm=[0, spatial + 1, *range(1, spatial + 1)])
    return y if y.element_type == x.element_type else b.Cast(y, to=x.element_type)


def stacked_neighbours(b: Builder, values: list[Value], axis: int, stack_axis: int, spatial: int) -> Value:
    """Spatial axis ``axis``'s neighbours (one value each, [..., points...]) stacked on their own
    axis among the ``spatial`` neighbour axes from ``stack_axis`` on: [..., points..., 1, K, 1...]."""
    if len(values) == 1:
        stacked = b.over_axes("Unsqueeze", values[0], [stack_axis])
    else:
        stacked = b.Concat(*[b.over_axes("Unsqueeze", v, [stack_axis]) for v in values], axis=stack_axis)
    others = [stack_axis + other for other in range(spatial) if other != axis]
    return b.over_axes("Unsqueeze", stacked, others) if others else stacked


def index_within(b: Builder, index: Value, length: Value) -> tuple[Value, Value]:
    """A neighbour's index where it lies in its axis (above -1 and below its length; NaN is
    neither), else 0 (it then reads element 0, and its validity says to read 0 instead); and
    that validity."""
    within = b.And(b.Greater(index, b.constant(-1, like=index, hint="minus_one")), b.Less(index, length))
    return b.Where(within, index, b.constant(0, like=index, hint="zero")), within


def weighted_rows(
    b: Builder, rows: Value, index: Value, valid: Value | None, weight: Value | None, neighbour_axes: list[int]
) -> Value:
    """The rows [R, C] gathered at ``index`` [..., neighbours...], those not ``valid`` read as 0
    (on the value, so an infinity in another row is never multiplied by 0), weighted by
    ``weight`` (in the rows' type) and summed over the neighbour axes (ReduceSum); without a
    weight the one neighbour per axis squeezed out: [..., C]."""
    channel_axis = neighbour_axes[-1] + 1
    gathered = b.Gather(rows, index, axis=0)
    if valid is not None:
        # the row's value third, where onnxruntime's Where keeps its bits (-0); negated by Equal,
        # not Not, which its NotWhere fusion would turn back
        outside = b.Equal(b.over_axes("Unsqueeze", valid, [channel_axis]), b.constant_bool(False))
        gathered = b.Where(outside, b.constant(0, like=rows, hint="zero"), gathered)
    if weight is None:
        return b.over_axes("Squeeze", gathered, neighbour_axes)
    if weight.element_type != rows.element_type:
        weight = b.Cast(weight, to=rows.element_type)
    products = b.Mul(gathered, b.over_axes("Unsqueeze", weight, [channel_axis]))
    return b.over_axes("ReduceSum", products, neighbour_axes, keepdims=0)


def _reflected(b: Builder, v: Value, geometry: _Axis, real: Value) -> Value:
    """v reflected about the axis' borders until it lies between them (the op's reflect): the
    distance past the near border, less whole periods, taken from that border (an even number
    of periods) or the other one (odd); clamped to the borders against rounding."""
    half, two = b.constant(0.5, like=real, hint="half"), b.constant(2, like=real, hint="two")
    lo, hi = geometry.lo, geometry.hi
    below, above = b.Less(v, lo), b.Greater(v, hi)
    beyond = b.Where(below, b.Sub(lo, v), b.Sub(v, hi))
    turns = b.Floor(b.Div(beyond, geometry.span))
    rest = b.Sub(beyond, b.Mul(turns, geometry.span))
    odd = b.Greater(b.Sub(turns, b.Mul(b.Floor(b.Mul(turns, half)), two)), half)
    reflected = b.Where(b.Xor(below, odd), b.Add(lo, rest), b.Sub(hi, rest))
    reflected = b.Min(b.Max(reflected, lo), hi)
    return b.Where(b.Or(below, above), reflected, v)


def _cubic_weights(b: Builder, t: Value, real: Value) -> list[Value]:
    """The cubic convolution weights of the neighbours at -1, 0, 1, 2 (A = -0.75), written as
    the op's kernels write them."""

    def c(value: float, hint: str) -> Value:
        return b.constant(value, like=real, hint=hint)

    a = CUBIC_A
    one, two = c(1, "one"), c(2, "two")
    t1, u, u2 = b.Add(t, one), b.Sub(one, t), b.Sub(two, t)
    five_a, eight_a, four_a = c(5 * a, "five_a"), c(8 * a, "eight_a"), c(4 * a, "four_a")
    a_v, a2, a3 = c(a, "cubic_a"), c(a + 2, "a_plus_two"), c(a + 3, "a_plus_three")

    def outer(s: Value) -> Value:  # ((A·s - 5A)·s + 8A)·s - 4A
        return b.Sub(b.Mul(b.Add(b.Mul(b.Sub(b.Mul(a_v, s), five_a), s), eight_a), s), four_a)

    def inner(s: Value) -> Value:  # ((A + 2)·s - (A + 3))·s·s + 1
        return b.Add(b.Mul(b.Mul(b.Sub(b.Mul(a2, s), a3), s), s), one)

    return [outer(t1), inner(t), inner(u), outer(u2)]
