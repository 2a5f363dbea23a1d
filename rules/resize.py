"""Resize (11, 13, 18, 19) lowered per resized axis: in modes linear and cubic to a Gather of taps and
their weighted sum (antialias and half_pixel_symmetric, which no older Resize says; tf_crop_and_resize,
which few runtimes run); in mode nearest to a Gather of the nearest pixel, bit for bit."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.conversion.adapters import as_text
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted
from .gathering import gather_along
from .nearest_points import MOST_ELEMENTS as MOST_POINTS
from .nearest_points import nearest_points

EMITS = (
    "Shape", "Gather", "Cast", "Range", "Add", "Sub", "Mul", "Div", "Ceil", "Floor", "Abs", "Max", "Min", "Where",
    "Less", "Greater", "Equal", "Not", "And", "ReduceSum", "Unsqueeze", "Squeeze", "Round", "Constant",
    "GatherElements", "Expand", "Slice", "Concat", "Reshape", "Or",
)  # fmt: skip
# The rule writes ops as they are from this opset on (Range from 11), int64 Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

FILTERED = ("linear", "cubic")
COORDINATE_MODES = (
    "half_pixel", "half_pixel_symmetric", "asymmetric", "pytorch_half_pixel", "tf_crop_and_resize", "align_corners",
)  # fmt: skip
# Mode nearest: where each output point lies in the input (onnxruntime's formulas, in float32),
# and how it is taken to a pixel.
NEAREST_COORDINATE_MODES = (
    "half_pixel", "half_pixel_symmetric", "asymmetric", "pytorch_half_pixel", "align_corners", "tf_half_pixel_for_nn",
)  # fmt: skip
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
SUPPORT = {"linear": 1.0, "cubic": 2.0}  # the filter's half width at scale 1
RESIZED_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)

# How far the lowered Resize may stray from the op, per float type, on finite values. The rule
# takes the op's taps and weights (the ONNX reference's formulas: ceil(support / s') taps on
# each side of the point, the filter's weights at (tap - point) · s', normalized to sum 1 under
# antialias or where exclude_outside drops taps) but computes coordinates, weights and sums in
# float32 (double for double X) and sums each axis' taps (ReduceSum) in its own order; the
# reference computes in float64 from float32 scales. Measured (tests/rules/test_resize_policies.py)
# against onnx.reference's Resize on standard normal inputs of shapes up to 12 per axis, two
# axes resized by scales 0.3 to 3 or sizes 1 to 24, linear and cubic, antialias, exclude_outside
# (cubic), every coordinate mode served: float at most 4.5e-6 beyond rtol 1e-5, double 9.4e-6,
# float16 2.9e-6 beyond one unit in the last place; on the
# ONNX backend cases within onnx's own backend tolerance; bfloat16 goes the same float32 path, rounded once
# (not measured: onnxruntime runs no bfloat16 Resize). Antialias with exclude_outside and
# upsampling, where onnx.reference 1.23 strays from onnxruntime (by up to 1.2 on unit values),
# was measured against onnxruntime's kernel instead (float: 3.5e-6), as were tf_crop_and_resize
# and pytorch_half_pixel (crops reversed and past X, scales 0.3 to 3 with scales of 1, sizes 1
# to 11 with lengths kept; float, float16, double against its float kernel) and align_corners
# (scales 0.2 to 3.5, sizes 1 to 24, antialias, exclude_outside; float at most 7.4e-6), whose
# points onnx.reference places by s · d where onnxruntime and the rule take o (by up to 0.86 on
# unit values: verify's onnx.reference side, for a double X, parts from the rule there).
RESIZE_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=2e-5),
    TensorProto.DOUBLE: Tolerance(rtol=1e-5, atol=2e-5),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-4),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-3),
}


def resize_reference(x: np.ndarray, roi=None, scales=None, sizes=None, **attributes) -> np.ndarray:
    """The op as onnx.reference computes it (float64 coordinates and weights, rounded to X's type once)."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    names, feeds, infos = ["x"], {"x": x}, []
    for name, value in (("roi", roi), ("scales", scales), ("sizes", sizes)):
        names.append(name if value is not None else "")
        if value is not None:
            feeds[name] = value
    for name, value in feeds.items():
        element_type = helper.np_dtype_to_tensor_dtype(value.dtype)
        infos.append(helper.make_tensor_value_info(name, element_type, list(value.shape)))
    while not names[-1]:
        names.pop()
    node = helper.make_node("Resize", names, ["y"], **attributes)
    element_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "resize", infos, [helper.make_tensor_value_info("y", element_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return ReferenceEvaluator(model).run(None, feeds)[0]


@rule(
    "Resize",
    versions=(11, 13, 18, 19),
    emits=EMITS,
    rounding_invariant=False,
    reference=resize_reference,
    tolerance=RESIZE_TOLERANCE,
)
def resize_by_weighted_taps(
    b: Builder,
    x: Value,
    roi: Value | None = None,
    scales: Value | None = None,
    sizes: Value | None = None,
    *,
    antialias: int = 0,
    axes: list[int] | None = None,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    keep_aspect_ratio_policy: str = "stretch",
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> Value:
    """Resize(X, s or z) = per resized axis a: ReduceSum(Gather(X, clamp(b + t, 0, d - 1), axis=a) · w(t - r), over t).

    Per axis a of length d, in float32 (double for double X): the output length o = floor(s · d)
    (scales) or z (sizes, s = z / d); each output point i placed at x = (i + 0.5) / s - 0.5
    (half_pixel; pytorch_half_pixel the same where o > 1, else 0), i / s (asymmetric),
    i · (d - 1) / max(o - 1, 1) (align_corners: 0 where o = 1),
    half_pixel's shifted by d / 2 · (1 - o / (s · d)) (half_pixel_symmetric), or in the crop
    [c0, c1] of the axis that roi gives (tf_crop_and_resize) at
    c0 · (d - 1) + i · (c1 - c0) · (d - 1) / (o - 1), or (c0 + c1) / 2 · (d - 1) where o = 1, an
    output point whose x on some axis lies outside [0, d - 1] being extrapolation_value; as
    onnxruntime's kernels do (measured), x = i on an axis of s = 1 (its crop unread) and on every
    axis where no o differs from its d (X comes back whole, where the reference resizes it);
    b = Ceil(x) - 1 and r = x - b in (0, 1]; the taps t = 1 - m … m,
    m = Ceil(support / s'), support 1 (linear) or 2 (cubic), s' = min(s, 1) under antialias,
    else 1; the weights the filter at (t - r) · s' (linear 1 - |u| clipped at 0; cubic Keys'
    convolution with A = cubic_coeff_a), those of taps outside the axis set to 0 where
    exclude_outside, normalized to sum 1 under antialias or exclude_outside; a tap outside the
    axis reads its nearest end (the reference's edge padding); a tap of weight 0 adds -0,
    whatever it reads. 16-bit X is computed in float32 and rounded once. Within the stated
    tolerance of the op: the ONNX reference, which computes in float64, where it and
    onnxruntime agree; onnxruntime's kernel where they part (tf_crop_and_resize with scales,
    whose points the reference places by s · d, not o; align_corners with scales, whose length
    the reference takes as s · d, where the spec's formula names the resized length and
    onnxruntime reads o; an axis of scale 1; no length changed).
    An axis whose scale is a constant 1 (or size a constant equal to its static length) is not
    resized at all: X comes through it as it is.
    Not lowered: tf_crop_and_resize without a roi or with antialias, in modes linear and cubic a
    keep_aspect_ratio_policy with sizes, exclude_outside in mode linear without antialias, X of
    unknown rank or not a float type, opsets below 11 (Range). Mode nearest: :func:`_nearest`.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    mode, coordinates = as_text(mode), as_text(coordinate_transformation_mode)
    if mode == "nearest":
        return _nearest(
            b, x, scales, sizes, axes, coordinates, as_text(nearest_mode), as_text(keep_aspect_ratio_policy), antialias,
            exclude_outside,
        )  # fmt: skip
    if mode not in FILTERED:
        raise NotLowered(f"mode {mode} is neither nearest nor a filter ({' nor '.join(FILTERED)})")
    if coordinates not in COORDINATE_MODES:
        raise NotLowered(
            f"coordinate_transformation_mode {coordinates} is none of {', '.join(COORDINATE_MODES)}, which the rule "
            "lowers"
        )
    if mode == "linear" and exclude_outside and not antialias:
        raise NotLowered("exclude_outside=1 in mode linear without antialias (onnxruntime refuses it)")
    if coordinates == "tf_crop_and_resize" and (roi is None or antialias):
        raise NotLowered("tf_crop_and_resize is lowered with a roi and without antialias only")
    if x.element_type not in RESIZED_TYPES:
        raise NotLowered(f"X is {schemas.type_name(x.element_type)}; the rule resizes float types only")
    rank, resized, scales, sizes = _resized_axes(b, x, scales, sizes, axes)
    if sizes is not None and as_text(keep_aspect_ratio_policy) != "stretch":
        raise NotLowered(f"keep_aspect_ratio_policy {as_text(keep_aspect_ratio_policy)} is not lowered by the rule")
    compute = TensorProto.DOUBLE if x.element_type == TensorProto.DOUBLE else TensorProto.FLOAT
    value = x if x.element_type == compute else b.Cast(x, to=compute)
    lengths = _static_lengths(b, x, scales, resized)
    unit = _unit_scales(b, scales, sizes, lengths)
    crops = None
    if coordinates == "tf_crop_and_resize":
        crops = _crops(b, roi, len(resized), [i for i in range(len(resized)) if not unit[i]], compute)
    x_shape = b.Shape(x) if None in lengths else None
    steps = []
    # innermost axis first, as the reference combines them
    for i, axis in sorted(enumerate(resized), key=lambda pair: -pair[1]):
        if unit[i]:  # (an axis of scale 1 comes out as it is: see below)
            continue
        length, out_length = _axis_lengths(b, x_shape, axis, lengths[i], f"{i}")
        length_float = b.Cast(length, to=compute)
        if scales is not None:
            scale = b.Cast(b.Gather(scales, b.ints([i], f"scale_{i}")), to=compute)
            if out_length is None:  # onnxruntime's and the reference's output length: floor(s · d), in float32
                product = b.Mul(b.Cast(scale, to=TensorProto.FLOAT), b.Cast(length, to=TensorProto.FLOAT))
                out_length = b.Cast(b.Floor(product), to=TensorProto.INT64)
        else:
            out_length = b.Gather(sizes, b.ints([i], f"size_{i}"))
            scale = b.Div(b.Cast(out_length, to=compute), length_float)
        crop = None if crops is None else crops[i]
        steps.append(_Axis(axis, length, length_float, out_length, scale, crop))
    if not steps:  # (every axis of scale 1)
        return b.Identity(x)
    # onnxruntime's kernels leave an axis of scale 1 as it is, and X whole where no length changes
    # (measured: its crop unread, its scale, where not 1, unused); the formulas agree but for the crop
    whole = None
    for step in steps:
        stays = b.Equal(step.out_length, step.length)
        whole = stays if whole is None else b.And(whole, stays)
    one = b.constant(1.0, Value("", compute), "1")
    outside = None  # where some axis places the output point outside X (tf_crop_and_resize)
    for step in steps:
        stays = b.Or(whole, b.Equal(step.scale, one))
        value, beyond = _resized_axis(
            b, value, step, stays, rank, compute, mode, coordinates,
            bool(antialias), bool(exclude_outside), float(cubic_coeff_a),
        )  # fmt: skip
        if beyond is not None:
            beyond = b.over_axes("Unsqueeze", beyond, [a for a in range(rank) if a != step.axis])
            outside = beyond if outside is None else b.Or(outside, beyond)
    if outside is not None:
        extrapolated = b.constant(float(extrapolation_value), Value("", compute), "extrapolation_value")
        value = b.Where(outside, extrapolated, value)
    return value if value.element_type == x.element_type else b.Cast(value, to=x.element_type)


@dataclass(frozen=True)
class _Axis:
    """One resized axis: its index, its input length d ([1] int64, and in the compute type), its
    output length o ([1] int64), its scale s ([1], compute type) and its crop (c0, c1), if any."""

    axis: int
    length: Value
    length_float: Value
    out_length: Value
    scale: Value
    crop: tuple[Value, Value] | None


def _resized_axis(
    b: Builder,
    value: Value,
    step: _Axis,
    stays: Value,
    rank: int,
    compute: int,
    mode: str,
    coordinates: str,
    antialias: bool,
    exclude_outside: bool,
    a: float,
) -> tuple[Value, Value | None]:
    """``value`` resized along ``step.axis``, each output point i placed at i where ``stays``
    ([1] bool), and where a crop is given, which output points it places outside the axis ([o] bool)."""
    axis, length, length_float, out_length, scale = (
        step.axis,
        step.length,
        step.length_float,
        step.out_length,
        step.scale,
    )

    def number(v: float) -> Value:
        return b.constant(v, Value("", compute), f"{v:g}".replace("-", "minus_").replace(".", "_"))

    def int64(v: int) -> Value:
        return b.constant(v, Value("", TensorProto.INT64), f"{v}".replace("-", "minus_"))

    one = number(1.0)
    zero_int, one_int = int64(0), int64(1)
    if antialias:
        filter_scale = b.Min(scale, one)
        # at most support · d + 1 taps a side: more only where s < 1 / d, whose output is empty
        # (a scale of 0 would ask for infinitely many)
        widest = b.Add(b.Mul(number(SUPPORT[mode]), length_float), one)
        reach = b.Min(b.Ceil(b.Div(number(SUPPORT[mode]), filter_scale)), widest)
        reach = b.Cast(reach, to=TensorProto.INT64)
        reach = b.over_axes("Squeeze", reach, [0])
        taps = counted(b, b.Sub(one_int, reach), b.Add(reach, one_int), one_int)  # [2m]
    else:
        filter_scale, reach = one, int(SUPPORT[mode])
        taps = b.ints(list(range(1 - reach, reach + 1)), "taps")
    points = b.Cast(b.Range(zero_int, b.over_axes("Squeeze", out_length, [0]), one_int), to=compute)  # [o]
    half, zero = number(0.5), number(0.0)
    last_place, beyond = b.Sub(length_float, one), None
    if coordinates == "asymmetric":
        place = b.Div(points, scale)
    elif coordinates == "align_corners":
        place = _corners_aligned(b, points, last_place, b.Cast(out_length, to=compute), one)
    elif coordinates == "tf_crop_and_resize":
        start, end = step.crop
        spread = b.Div(b.Mul(b.Mul(points, b.Sub(end, start)), last_place), b.Sub(b.Cast(out_length, to=compute), one))
        middle = b.Mul(b.Mul(half, b.Add(start, end)), last_place)
        place = b.Where(b.Greater(out_length, one_int), b.Add(b.Mul(start, last_place), spread), middle)
        beyond = b.And(b.Not(stays), b.Or(b.Less(place, zero), b.Greater(place, last_place)))
    else:
        place = b.Sub(b.Div(b.Add(points, half), scale), half)
        if coordinates == "half_pixel_symmetric":
            adjustment = b.Div(b.Cast(out_length, to=compute), b.Mul(scale, length_float))
            offset = b.Mul(b.Div(length_float, number(2.0)), b.Sub(one, adjustment))
            place = b.Add(offset, place)
        if coordinates == "pytorch_half_pixel":
            place = b.Where(b.Greater(out_length, one_int), place, zero)
    place = b.Where(stays, points, place)
    below = b.Sub(b.Ceil(place), one)
    ratio = b.over_axes("Unsqueeze", b.Sub(place, below), [1])  # [o, 1]
    u = b.Mul(b.Sub(b.Cast(taps, to=compute), ratio), filter_scale)  # [o, 2m]
    distance = b.Abs(u)
    if mode == "linear":
        weights = b.Max(b.Sub(one, distance), zero)
    else:
        square = b.Mul(distance, distance)
        cube = b.Mul(square, distance)
        near = b.Add(b.Sub(b.Mul(number(a + 2), cube), b.Mul(number(a + 3), square)), one)
        far = b.Sub(
            b.Add(b.Sub(b.Mul(number(a), cube), b.Mul(number(5 * a), square)), b.Mul(number(8 * a), distance)),
            number(4 * a),
        )
        weights = b.Where(b.Greater(distance, one), b.Where(b.Less(distance, number(2.0)), far, zero), near)
    indices = b.Add(b.over_axes("Unsqueeze", b.Cast(below, to=TensorProto.INT64), [1]), taps)  # [o, 2m]
    last = b.Sub(length, one_int)
    if exclude_outside:
        inside = b.And(b.Not(b.Less(indices, zero_int)), b.Not(b.Greater(indices, last)))
        weights = b.Where(inside, weights, zero)
    if antialias or exclude_outside:
        weights = b.Div(weights, b.over_axes("ReduceSum", weights, [1], keepdims=1))
    indices = b.Where(b.Less(indices, zero_int), zero_int, indices)
    indices = b.Where(b.Greater(indices, last), last, indices)
    gathered = b.Gather(value, indices, axis=axis)  # [..., o, 2m, ...]
    inner = rank - axis - 1
    if inner:
        weights = b.over_axes("Unsqueeze", weights, list(range(2, 2 + inner)))
    terms = b.Where(b.Equal(weights, zero), number(-0.0), b.Mul(gathered, weights))
    return b.over_axes("ReduceSum", terms, [axis + 1], keepdims=0), beyond


def _corners_aligned(b: Builder, points: Value, last_place: Value, out_length: Value, one: Value) -> Value:
    """align_corners' x = i · (d - 1) / max(o - 1, 1) (0 where o = 1, without the 0 / 0 a Where
    would leave in its untaken lane: tract 0.21 folds that NaN constant and fails)."""
    return b.Div(b.Mul(points, last_place), b.Max(b.Sub(out_length, one), one))


def _crops(b: Builder, roi: Value, count: int, wanted: list[int], compute: int) -> dict[int, tuple[Value, Value]]:
    """Per resized axis i among ``wanted``, the crop (c0, c1) = (roi[i], roi[count + i]) in
    ``compute`` ([1] each); NotLowered where a constant roi is not of 2 · count values."""
    given = b.constant_value(roi)
    if given is not None and given.shape != (2 * count,):
        raise NotLowered(f"roi has shape {list(given.shape)}, not [{2 * count}] (a start and an end per resized axis)")

    def bound(position: int) -> Value:
        value = b.Gather(roi, b.ints([position], f"roi_{position}"))
        return value if value.element_type == compute else b.Cast(value, to=compute)

    return {i: (bound(i), bound(count + i)) for i in wanted}


def _static_lengths(b: Builder, x: Value, scales, resized: list[int]) -> list[tuple[int, int | None] | None]:
    """Per resized axis, (d, o) where its length d is static: o = floor(float32(s) · float32(d))
    where the scales are a constant (one float32 product and a floor, as onnxruntime and the
    reference compute the output length), else None; None where d is not static."""
    shape = b.shape_of(x) or []
    given = b.constant_value(scales) if scales is not None else None
    if given is not None and given.shape != (len(resized),):
        given = None
    lengths = []
    for i, axis in enumerate(resized):
        d = shape[axis] if axis < len(shape) else None
        if d is None:
            lengths.append(None)
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            product = None if given is None else np.float32(given[i]) * np.float32(d)
        if product is not None and np.isfinite(product) and product >= 2.0**62:
            raise NotLowered(f"scale {given[i]} makes axis {axis} {product:g} long: the op fails")
        lengths.append((d, int(np.floor(product)) if product is not None and np.isfinite(product) else None))
    return lengths


def _unit_scales(b: Builder, scales, sizes, lengths: list) -> list[bool]:
    """Per resized axis, whether its scale is known to be 1 before run time: a constant scale
    of 1, or a constant size equal to the axis's static length."""
    if scales is not None:
        given = b.constant_value(scales)
        if given is None or given.shape != (len(lengths),):
            return [False] * len(lengths)
        return [float(v) == 1.0 for v in given.tolist()]
    given = b.constant_value(sizes)
    if given is None or given.shape != (len(lengths),):
        return [False] * len(lengths)
    return [known is not None and int(v) == known[0] for v, known in zip(given.tolist(), lengths, strict=True)]


def _axis_lengths(b: Builder, x_shape, axis: int, static, hint: str) -> tuple[Value, Value | None]:
    """An axis's input length ([1] int64) and its output length where known before run time."""
    if static is None:
        return b.Gather(x_shape, b.ints([axis], f"axis_{axis}")), None
    d, out = static
    return b.ints([d], f"length_{hint}"), (None if out is None else b.ints([out], f"out_length_{hint}"))


def _resized_axes(b: Builder, x: Value, scales, sizes, axes) -> tuple[int, list[int], Value | None, Value | None]:
    """X's rank, the axes resized (``axes``, else all), and the scales or sizes that say how
    (an empty constant scales beside sizes dropped); NotLowered where the rank is unknown,
    neither or both are given, or an axis is outside [-r, r - 1] or named twice (the op fails)."""
    shape = b.shape_of(x)
    if shape is None:
        raise NotLowered("the rank of X is unknown, so the axes to resize are unknown")
    rank = len(shape)
    if scales is not None and sizes is not None:
        given = b.constant_value(scales)
        if given is None or given.size:
            raise NotLowered("both scales and sizes are given")
        scales = None
    if scales is None and sizes is None:
        raise NotLowered("neither scales nor sizes is given")
    if axes is not None and any(not -rank <= a < rank for a in axes):
        raise NotLowered(f"the axes {list(axes)} are not all axes of X's rank {rank}: the op fails")
    resized = [a + rank if a < 0 else a for a in axes] if axes is not None else list(range(rank))
    if len(set(resized)) != len(resized):
        raise NotLowered(f"the axes {list(axes)} name an axis twice: the op fails")
    return rank, resized, scales, sizes


def _nearest(
    b: Builder, x: Value, scales, sizes, axes, coordinates: str, nearest_mode: str, policy: str, antialias: int = 0,
    exclude_outside: int = 0,
) -> Value:  # fmt: skip
    """Resize(X, s or z, mode=nearest) = per resized axis a: Gather(X, clamp(n(x), 0, d - 1), axis=a).

    As onnxruntime's kernel computes it, in float32 whatever X's type: the output length
    o = floor(s · d); where o = d each output point i is input point i; else at x = (i + 0.5) / s - 0.5
    (half_pixel; pytorch_half_pixel the same where o > 1, else 0), i / s (asymmetric),
    (i + 0.5) / s (tf_half_pixel_for_nn), i · (d - 1) / max(o - 1, 1) (align_corners) or
    half_pixel's shifted by d / 2 · (1 - o / (s · d)) (half_pixel_symmetric); n(x) = Floor(x),
    Ceil(x), or Round(x) but Floor(x) (round_prefer_floor) or Ceil(x) (round_prefer_ceil) where
    x = Floor(x) + 0.5. X's values are only gathered: bit for bit, of every type (but a float16
    signalling NaN, which onnxruntime's float16 kernel quiets, going through float32). So where
    the scales are constants of whole numbers (an upsampling by 2, as exports write it) or of
    halvings 1 / 2^k of static lengths divisible by 2^k (a downsampling by 2), or the sizes
    constants giving such scales of X's static lengths (keep_aspect_ratio_policy stretch):
    there s = o / d exactly, one float32 number either way, and onnxruntime's kernels, which
    place the points by the scale at some ranks and by o / d at others, agree (measured: every
    coordinate and nearest mode, ranks 2 to 5).
    Other constant scales or sizes (a downsampling by 0.6, a keep_aspect_ratio_policy) of X of
    a static shape: Gather(X, i_a, axis=a) per axis a whose points move, i_a the constant indices
    onnxruntime's kernel reads for that shape (:func:`rules.nearest_points.nearest_points`).
    Not lowered: scales or sizes fed at run time (but whole-number scales), tf_crop_and_resize, X of
    unknown rank; of the rest, X of a type onnxruntime resizes not, a node it fails (antialias,
    exclude_outside), points not per axis, X or the output of over 2^24 elements."""
    if coordinates not in NEAREST_COORDINATE_MODES:
        raise NotLowered(f"coordinate_transformation_mode {coordinates} in mode nearest is not lowered by the rule")
    if nearest_mode not in NEAREST_MODES:
        raise NotLowered(f"nearest_mode {nearest_mode} is none of {', '.join(NEAREST_MODES)}")
    if antialias or exclude_outside:
        raise NotLowered("antialias or exclude_outside in mode nearest: onnxruntime fails the node")
    rank, resized, scales, sizes = _resized_axes(b, x, scales, sizes, axes)
    given = _exact_scales(b, x, scales, sizes, resized) if sizes is None or policy == "stretch" else None
    if given is None:
        attributes = {"coordinate_transformation_mode": coordinates, "nearest_mode": nearest_mode}
        if axes is not None:
            attributes["axes"] = list(axes)
        if policy != "stretch":
            attributes["keep_aspect_ratio_policy"] = policy
        return _gathered_at_points(b, x, rank, scales, sizes, attributes)
    if sizes is not None:
        scales = b.tensor(given, "scales")
    lengths = _static_lengths(b, x, scales, resized)
    x_shape, value = (b.Shape(x) if None in lengths else None), x
    for i, axis in sorted(enumerate(resized), key=lambda pair: -pair[1]):
        length, out_length = _axis_lengths(b, x_shape, axis, lengths[i], f"{i}")
        length_float = b.Cast(length, to=TensorProto.FLOAT)
        scale = b.Cast(b.Gather(scales, b.ints([i], f"scale_{i}")), to=TensorProto.FLOAT)
        if out_length is None:
            out_length = b.Cast(b.Floor(b.Mul(scale, length_float)), to=TensorProto.INT64)
        place = _nearest_place(b, length_float, out_length, scale, coordinates)
        # an axis whose length stays maps each point to itself (onnxruntime's kernel: measured)
        points, out_float = place.points, b.Cast(out_length, to=TensorProto.FLOAT)
        pixel = b.Where(b.Equal(out_float, length_float), points, _nearest_pixel(b, place.value, nearest_mode))
        zero = b.constant(0.0, Value("", TensorProto.FLOAT), "0")
        last = b.Sub(length_float, b.constant(1.0, Value("", TensorProto.FLOAT), "1"))
        index = b.Cast(b.Min(b.Max(pixel, zero), last), to=TensorProto.INT64)
        value = gather_along(b, value, index, axis, rank)
    return value


def _gathered_at_points(b: Builder, x: Value, rank: int, scales, sizes, attributes: dict) -> Value:
    """Gather(X, i_a, axis=a) for each axis a whose points onnxruntime's nearest Resize moves, i_a
    the indices it reads for X's static shape, its constant scales or sizes and ``attributes``
    (:func:`rules.nearest_points.nearest_points`); NotLowered where they cannot be known ahead."""
    shape = b.shape_of(x)
    given = b.constant_value(scales if sizes is None else sizes)
    version = b.source_version("Resize")
    if given is None or shape is None or None in shape or version is None or x.element_type is None:
        raise NotLowered(
            "mode nearest is lowered for constant whole-number or halving scales, or for constant scales or sizes of "
            "X of a static shape (and known type): onnxruntime's kernels place the points by the scale or by the "
            "lengths' ratio, by rank (measured), which no one formula matches"
        )
    points = nearest_points(
        shape,
        x.element_type,
        version,
        given.astype(np.float32) if sizes is None else None,
        None if sizes is None else given.astype(np.int64),
        attributes,
    )
    if points is None:
        raise NotLowered(
            f"onnxruntime's nearest Resize of X of shape {shape} reads no points per axis that can be known ahead "
            f"(X empty, X or the output above {MOST_POINTS} elements, the node failing or of a type onnxruntime "
            "resizes not, or points not per axis)"
        )
    value = x
    for axis, indices in enumerate(points):
        if not np.array_equal(indices, np.arange(shape[axis])):
            value = gather_along(b, value, b.ints(indices.tolist(), f"points_{axis}"), axis, rank)
    return value if value is not x else b.Identity(x)


def _exact_scales(b: Builder, x: Value, scales, sizes, resized: list[int]) -> np.ndarray | None:
    """Per resized axis a scale s for which o = s · d and s = o / d exactly in float32
    (onnxruntime's kernels, placing points by either, then agree): from constant scales, a
    whole number s >= 1, or a halving s = 1 / 2^k of a static length d divisible by 2^k; from
    constant sizes z of a static length d, z / d a whole number or d / z a power of two. Else None."""
    given = b.constant_value(scales if sizes is None else sizes)
    if given is None or given.shape != (len(resized),):
        return None
    shape = b.shape_of(x)  # (of a known rank: _resized_axes)
    found = []
    for value, axis in zip(given.tolist(), resized, strict=True):
        d = shape[axis]
        if sizes is None:
            scale = float(np.float32(value))
            if not np.isfinite(scale):
                return None
            if scale >= 1 and scale == int(scale):
                found.append(scale)
                continue
            halvings = _halvings(scale)
        else:
            z = int(value)
            if not d or z <= 0:
                return None
            if z % d == 0:
                found.append(float(z // d))
                continue
            halvings = _halvings(z / d) if d % z == 0 else None
        if halvings is None or not d or d % 2**halvings:
            return None
        found.append(2.0**-halvings)
    return np.array(found, np.float32)


def _halvings(scale: float) -> int | None:
    """k where ``scale`` is 1 / 2^k (k >= 1, 2^k at most 2^24), else None."""
    for k in range(1, 25):
        if scale == 2.0**-k:
            return k
    return None


@dataclass(frozen=True)
class _Place:
    """Each output point's index (float32, [o]) and where it lies in the input (``value``)."""

    points: Value
    value: Value


def _nearest_place(b: Builder, length: Value, out_length: Value, scale: Value, coordinates: str) -> _Place:
    """Where each output point lies along the axis, in float32 (shapes [o], [1] for the rest)."""

    def number(v: float) -> Value:
        return b.constant(v, Value("", TensorProto.FLOAT), f"{v:g}".replace("-", "minus_").replace(".", "_"))

    zero_int = b.constant(0, Value("", TensorProto.INT64), "0")
    one_int = b.constant(1, Value("", TensorProto.INT64), "1")
    points = b.Cast(b.Range(zero_int, b.over_axes("Squeeze", out_length, [0]), one_int), to=TensorProto.FLOAT)
    out_float = b.Cast(out_length, to=TensorProto.FLOAT)
    half, one = number(0.5), number(1.0)
    if coordinates == "asymmetric":
        return _Place(points, b.Div(points, scale))
    if coordinates == "tf_half_pixel_for_nn":
        return _Place(points, b.Div(b.Add(points, half), scale))
    if coordinates == "align_corners":
        return _Place(points, _corners_aligned(b, points, b.Sub(length, one), out_float, one))
    place = b.Div(b.Add(points, half), scale)
    if coordinates == "half_pixel_symmetric":
        adjustment = b.Div(out_float, b.Mul(scale, length))
        offset = b.Mul(b.Div(length, number(2.0)), b.Sub(one, adjustment))
        place = b.Add(offset, place)
    place = b.Sub(place, half)
    if coordinates == "pytorch_half_pixel":
        place = b.Where(b.Greater(out_float, one), place, number(0.0))
    return _Place(points, place)


def _nearest_pixel(b: Builder, place: Value, nearest_mode: str) -> Value:
    """The pixel nearest_mode takes ``place`` to (float32, before clamping)."""
    if nearest_mode == "floor":
        return b.Floor(place)
    if nearest_mode == "ceil":
        return b.Ceil(place)
    below = b.Floor(place)
    tie = b.Equal(place, b.Add(below, b.constant(0.5, Value("", TensorProto.FLOAT), "0_5")))
    return b.Where(tie, below if nearest_mode == "round_prefer_floor" else b.Ceil(place), b.Round(place))
