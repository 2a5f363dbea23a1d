"""RoiAlign (versions 10, 16, 22, no function body) lowered to sampling points, four neighbours
gathered as rows, and their weighted sum (avg) or running maximum (max) per bin."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.conversion.adapters import as_text, text_attribute
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .failing import zero_unless
from .ordering import larger_of

EMITS = (
    "Shape", "Gather", "Range", "Cast", "Add", "Sub", "Mul", "Div", "Ceil", "Floor", "Less", "Greater",
    "LessOrEqual", "GreaterOrEqual", "Equal", "Not", "And", "Or", "Where", "Concat", "ReduceMax", "ReduceSum",
    "Unsqueeze", "Squeeze", "Transpose", "Flatten", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on: each of them exists (GreaterOrEqual and
# LessOrEqual from 12) and Constant holds its int64 indices and axes, onnx.defs says.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

MODES = ("avg", "max")
COORDINATE_MODES = ("half_pixel", "output_half_pixel")
# How RoiAlign-10, which has no coordinate_transformation_mode, places its points (version 16's
# name for it; the default from 16 on is onnx.defs')
VERSION_10_COORDINATES = "output_half_pixel"
# The most samples per bin whose running maximum the rule writes as a chain (max mode).
MOST_MAX_SAMPLES = 64

# How far the lowered RoiAlign may stray from the op, per float type. The rule places the
# sampling points and weighs the four neighbours with the kernel's formulas, in its order and in
# x's type (float32 for 16-bit x, rounded once); max mode takes the kernel's running maximum in
# its order (the same values; a zero's sign aside, which onnxruntime's Where drops). Only avg's
# sum of a bin's samples may come in another order (ReduceSum, where the kernel adds them one
# after another). Measured (the FORMS of tests/rules/test_roialign_lowering.py, 6 seeds, 4 kinds of
# rois each) against onnxruntime's kernel (float, double) and the reference below (every type):
# no value apart at all, outputs up to 3.2. The tolerance allows a reordered sum of up to 16
# samples; float's atol is the backend's own test_roialign_aligned_false, whose expected
# outputs are written to 4 decimals (8.4e-5 from the op's answer, which onnxruntime's kernel
# gives too).
ROI_ALIGN_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-4),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-3),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-2),
}


def roi_align_reference(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """The op as onnxruntime's kernel computes it (and onnx.reference, which follows it), one bin
    at a time: the sampling points and neighbours' weights in x's type (float32 for 16-bit x),
    a bin's samples added (avg, then divided by their count) or their running maximum taken
    (max: of each sample's four weighted neighbours) in the kernel's order; rounded to x's type
    once. ``coordinate_transformation_mode`` is version 16's (RoiAlign-10 means output_half_pixel)."""
    compute = np.float64 if x.dtype == np.float64 else np.float32
    values, boxes = x.astype(compute), rois.astype(compute)
    half_pixel, mode = as_text(coordinate_transformation_mode) == "half_pixel", as_text(mode)
    height, width = x.shape[2], x.shape[3]
    y = np.zeros((len(rois), x.shape[1], output_height, output_width), compute)
    if not np.isfinite(boxes).all():
        raise ValueError("a roi is not finite: the kernel fails")
    with np.errstate(all="ignore"):
        for r, (box, n) in enumerate(zip(boxes, batch_indices, strict=True)):
            offset = compute(0.5 if half_pixel else 0)
            x1, y1, x2, y2 = (c * compute(spatial_scale) - offset for c in box)
            roi_w, roi_h = x2 - x1, y2 - y1
            if not half_pixel:
                roi_w, roi_h = (v if not v < 1 else compute(1) for v in (roi_w, roi_h))
            bin_h, bin_w = roi_h / compute(output_height), roi_w / compute(output_width)
            grid_h = sampling_ratio if sampling_ratio > 0 else int(np.ceil(bin_h))
            grid_w = sampling_ratio if sampling_ratio > 0 else int(np.ceil(bin_w))
            if grid_h * grid_w < 0:  # (the kernel's count of samples overflows)
                raise ValueError(f"roi {r}'s sampling grid is {grid_h}×{grid_w}: the kernel fails")
            count = compute(max(grid_h * grid_w, 1))
            for ph in range(output_height):
                for pw in range(output_width):
                    total, maximum = np.zeros(x.shape[1], compute), None
                    for iy in range(grid_h):
                        v = y1 + compute(ph) * bin_h + compute(iy + 0.5) * bin_h / compute(grid_h)
                        for ix in range(grid_w):
                            u = x1 + compute(pw) * bin_w + compute(ix + 0.5) * bin_w / compute(grid_w)
                            terms = _weighted_neighbours(values[n], v, u, height, width)
                            if mode == "avg":
                                total = total + (((terms[0] + terms[1]) + terms[2]) + terms[3])
                            else:
                                sample = terms[0]
                                for term in terms[1:]:
                                    sample = np.where(sample < term, term, sample)
                                maximum = sample if maximum is None else np.where(maximum < sample, sample, maximum)
                    if mode == "avg":
                        y[r, :, ph, pw] = total / count
                    elif maximum is not None:
                        y[r, :, ph, pw] = maximum
    return y.astype(x.dtype)


def _weighted_neighbours(plane: np.ndarray, v, u, height: int, width: int) -> list[np.ndarray]:
    """The four neighbours of point (v, u) in ``plane`` [C, H, W] times their bilinear weights,
    as the kernel computes them; a point past the image by more than one pixel weighs
    element (0, 0) by 0."""
    one = type(v)(1)
    if v < -1 or v > height or u < -1 or u > width:
        return [type(v)(0) * plane[:, 0, 0]] * 4
    v, u = max(v, type(v)(0)), max(u, type(u)(0))
    low_v, low_u = int(v), int(u)
    if low_v >= height - 1:
        low_v = high_v = height - 1
        v = type(v)(low_v)
    else:
        high_v = low_v + 1
    if low_u >= width - 1:
        low_u = high_u = width - 1
        u = type(u)(low_u)
    else:
        high_u = low_u + 1
    ly, lx = v - type(v)(low_v), u - type(u)(low_u)
    hy, hx = one - ly, one - lx
    return [
        hy * hx * plane[:, low_v, low_u],
        hy * lx * plane[:, low_v, high_u],
        ly * hx * plane[:, high_v, low_u],
        ly * lx * plane[:, high_v, high_u],
    ]


@rule(
    "RoiAlign",
    versions=(10, 16, 22),
    emits=EMITS,
    rounding_invariant=False,
    reference=roi_align_reference,
    tolerance=ROI_ALIGN_TOLERANCE,
)
def roi_align_by_gathering(
    b: Builder,
    x: Value,
    rois: Value,
    batch_indices: Value,
    *,
    coordinate_transformation_mode: str | None = None,
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> Value:
    """RoiAlign(X, rois, n)[r, c, i, j] = avg or max over the bin's samples (v, u) of the four
    neighbours X[n_r, c, ⌊v⌋ or ⌊v⌋+1, ⌊u⌋ or ⌊u⌋+1] weighted by (1 - l_v or l_v)·(1 - l_u or l_u).

    Per roi, in x's type (float32 for 16-bit x), as onnxruntime's kernel computes it: its
    corners scaled, ``x1 = rois[r, 0]·spatial_scale - o`` (o = 0.5 with half_pixel, the default
    from version 16, else 0), its extent ``w = x2 - x1`` (at least 1 with output_half_pixel),
    bins of ``w / output_width``, ``g = sampling_ratio`` samples per bin and axis (or
    ⌈bin⌉ where it is 0, the samples beyond a roi's own count left out); sample i of bin j at
    ``x1 + j·bin + (i + 0.5)·bin / g``. A sample past the image by more than a pixel weighs
    element (0, 0) by 0; else clamped at 0, its neighbours ⌊u⌋ and ⌊u⌋ + 1 (both the last
    pixel from it on) weighted ``1 - l`` and ``l``, l its distance past ⌊u⌋. The four
    neighbours of every sample are read at once as rows of C channels, X laid out as rows
    [N·H·W, C] (Transpose, Flatten), at ``n_r·H·W + v_index·W + u_index``; the batch index
    checked against N (Gather of Range(0, N): outside it fails, as the kernel does, and so do a
    roi not finite, a roi whose adaptive grid is negative along one axis only, as the kernel's
    count overflows, and rois not [R, 4] or batch indices not [R]).
    avg: ((w1·v1 + w2·v2) + w3·v3) + w4·v4 per sample, summed over the bin (ReduceSum) and
    divided by max(g_h·g_w, 1). max: the kernel's running maximum (a value replaces what is held
    only where it is greater: Where(Less(held, value))), over each sample's four weighted
    neighbours, then over the bin's samples in order; not divided.
    An adaptive grid pads every roi's samples to the most any roi takes: R·h·w·g²·C values.
    Not lowered: a mode or coordinate_transformation_mode the op does not name, X not of a float
    type, a negative sampling_ratio, max with an adaptive grid (sampling_ratio 0: the samples per
    bin are known at run time only) or more than 64 samples per bin, opsets below 12
    (GreaterOrEqual, LessOrEqual).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    version = b.source_version("RoiAlign") or schemas.version_in_force("RoiAlign", b.opset)
    if coordinate_transformation_mode is None:
        stated = text_attribute(helper.make_node("RoiAlign", [], []), "coordinate_transformation_mode", version)
        coordinate_transformation_mode = stated or VERSION_10_COORDINATES
    coordinates, mode = as_text(coordinate_transformation_mode), as_text(mode)
    if coordinates not in COORDINATE_MODES:
        raise NotLowered(f"coordinate_transformation_mode {coordinates!r} is none of {', '.join(COORDINATE_MODES)}")
    if mode not in MODES:
        raise NotLowered(f"mode {mode!r} is none of {', '.join(MODES)}")
    if not floats.is_float(x.element_type):
        raise NotLowered(f"X is {schemas.type_name(x.element_type)}, not of a float type")
    if output_height < 1 or output_width < 1:
        raise NotLowered(f"an output of {output_height}×{output_width} bins has none")
    if sampling_ratio < 0:
        raise NotLowered(f"sampling_ratio {sampling_ratio} is negative (onnxruntime's kernel refuses it)")
    adaptive = sampling_ratio == 0
    if mode == "max" and adaptive:
        raise NotLowered(
            "max mode with sampling_ratio 0: each roi's samples per bin are known at run time only, and the "
            "kernel's running maximum over them (NaN, signed zeros) is no reduction onnx names"
        )
    if mode == "max" and sampling_ratio**2 > MOST_MAX_SAMPLES:
        raise NotLowered(
            f"max mode with {sampling_ratio**2} samples per bin, more than the {MOST_MAX_SAMPLES} whose running "
            f"maximum this rule writes"
        )
    return _aligned(
        b,
        x,
        rois,
        batch_indices,
        coordinates == "half_pixel",
        mode,
        (output_height, output_width),
        sampling_ratio,
        spatial_scale,
    )


class _Roi:
    """One axis of every roi (y: rois' columns 1 and 3; x: 0 and 2) and of X (H or W): each bin's
    sampling points [R, bins, g], their neighbours' indices and weights, whether they lie in
    the image, and (adaptive grids) whether the roi samples them at all."""

    def __init__(
        self,
        b: Builder,
        boxes: Value,
        shape: Value,
        axis: int,
        bins: int,
        half_pixel: bool,
        sampling_ratio: int,
        spatial_scale: float,
    ) -> None:
        def c(value: float, hint: str) -> Value:
            return b.constant(value, like=boxes, hint=hint)

        zero, one = c(0, "zero"), c(1, "one")

        def corner(column: int) -> Value:  # [R, 1, 1]
            scaled = b.Mul(
                b.over_axes("Unsqueeze", b.Gather(boxes, b.ints([column], f"column{column}"), axis=1), [2]),
                c(spatial_scale, "spatial_scale"),
            )
            return b.Sub(scaled, c(0.5, "half")) if half_pixel else scaled

        first = 1 - axis % 2  # rois are [x1, y1, x2, y2]: H (axis 2) reads columns 1 and 3
        start = corner(first)
        extent = b.Sub(corner(first + 2), start)
        if not half_pixel:  # (std::max(extent, 1): NaN stays)
            extent = b.Where(b.Less(extent, one), one, extent)
        bin_size = b.Div(extent, c(bins, f"bins{axis}"))
        placed = b.tensor(
            np.arange(bins, dtype=floats.numpy_dtype(boxes.element_type)).reshape(1, bins, 1), f"bin{axis}"
        )
        self.sampled = None
        if sampling_ratio > 0:
            grid = c(sampling_ratio, "sampling_ratio")
            steps = np.arange(sampling_ratio, dtype=floats.numpy_dtype(boxes.element_type)) + 0.5
            offsets = b.tensor(steps.reshape(1, 1, sampling_ratio), f"samples{sampling_ratio}")
        else:  # each roi's own ⌈bin⌉ samples, as many as the most any roi takes (at least 1)
            grid = b.Ceil(bin_size)
            most = b.over_axes(
                "ReduceMax",
                b.Concat(
                    b.Flatten(grid, axis=0),
                    b.tensor(np.ones((1, 1), floats.numpy_dtype(boxes.element_type)), "one_sample"),
                    axis=1,
                ),
                [0, 1],
                keepdims=0,
            )
            steps = b.Range(zero, most, one)
            self.sampled = b.Less(b.over_axes("Unsqueeze", steps, [0, 1]), grid)  # [R, 1, g]
            offsets = b.over_axes("Unsqueeze", b.Add(steps, c(0.5, "half")), [0, 1])
        self.grid = grid  # [R, 1, 1] or a scalar
        point = b.Add(b.Add(start, b.Mul(placed, bin_size)), b.Div(b.Mul(offsets, bin_size), grid))  # [R, bins, g]
        self.size = b.Gather(shape, b.ints([axis], f"axis{axis}"))  # [1], int64
        length = b.Cast(self.size, to=boxes.element_type)
        last = b.Sub(length, one)
        self.inside = b.And(b.GreaterOrEqual(point, c(-1, "minus_one")), b.LessOrEqual(point, length))
        clamped = b.Where(b.Greater(point, zero), point, zero)
        low = b.Floor(clamped)
        before_last = b.Less(low, last)
        low = b.Where(before_last, low, last)
        high = b.Where(before_last, b.Add(low, one), last)
        self.far = b.Sub(b.Where(before_last, clamped, last), low)  # l: the weight of the high neighbour
        self.near = b.Sub(one, self.far)
        self.low, self.high = b.Cast(low, to=TensorProto.INT64), b.Cast(high, to=TensorProto.INT64)


def _aligned(
    b: Builder,
    x: Value,
    rois: Value,
    batch_indices: Value,
    half_pixel: bool,
    mode: str,
    bins: tuple[int, int],
    sampling_ratio: int,
    spatial_scale: float,
) -> Value:
    data, boxes = b.computable(x), b.computable(rois)
    if boxes.element_type != data.element_type:
        boxes = b.Cast(boxes, to=data.element_type)
    shape = b.Shape(x)
    along_y = _Roi(b, boxes, shape, 2, bins[0], half_pixel, sampling_ratio, spatial_scale)
    along_x = _Roi(b, boxes, shape, 3, bins[1], half_pixel, sampling_ratio, spatial_scale)

    # every sample as [R, bins_h, g_h, bins_w, g_w]: y's values on axes 1-2, x's on axes 3-4
    def of_y(value: Value) -> Value:
        return b.over_axes("Unsqueeze", value, [3, 4])

    def of_x(value: Value) -> Value:
        return b.over_axes("Unsqueeze", value, [1, 2])

    inside = b.And(of_y(along_y.inside), of_x(along_x.inside))
    zero = b.constant(0, like=data, hint="zero")
    zero_index = b.constant(0, like=shape, hint="zero")
    count = b.Mul(along_y.grid, along_x.grid)
    # a roi fails where its batch index is outside [0, N), a corner is not finite (x - x is 0 but
    # for ±inf and NaN) or (adaptive grids) the kernel's count of samples overflows, one grid
    # being negative; the inputs fail where rois are not [R, 4] or batch_indices not [R]
    finite = b.Equal(b.over_axes("ReduceSum", b.Sub(boxes, boxes), [1], keepdims=0), zero)
    outside = b.Or(b.Less(batch_indices, zero_index), b.Not(finite))
    if along_y.sampled is not None:
        outside = b.Or(outside, b.over_axes("Squeeze", b.Less(count, zero), [1, 2]))
    batches = b.over_axes("Squeeze", b.Gather(shape, b.ints([0], "axis0")), [0])
    batch = b.Gather(
        b.Range(zero_index, batches, b.constant(1, like=shape, hint="one")), b.Where(outside, batches, batch_indices)
    )  # n_r
    if not _shapes_known_right(b, rois, batch_indices):
        batch = b.Add(batch, _shapes_checked(b, rois, batch_indices))
    plane = b.Mul(along_y.size, along_x.size)
    first_row = b.over_axes("Unsqueeze", b.Mul(batch, plane), [1, 2, 3, 4])
    rows = b.Flatten(b.Transpose(data, perm=[0, 2, 3, 1]), axis=3)  # [N·H·W, C]

    def neighbour(v_index: Value, u_index: Value, v_weight: Value, u_weight: Value) -> Value:
        index = b.Add(b.Mul(of_y(v_index), along_x.size), of_x(u_index))
        index = b.Add(first_row, b.Where(inside, index, zero_index))
        weight = b.Where(inside, b.Mul(of_y(v_weight), of_x(u_weight)), zero)
        return b.Mul(b.Gather(rows, index, axis=0), b.over_axes("Unsqueeze", weight, [5]))  # [R, h, g, w, g, C]

    terms = [
        neighbour(along_y.low, along_x.low, along_y.near, along_x.near),
        neighbour(along_y.low, along_x.high, along_y.near, along_x.far),
        neighbour(along_y.high, along_x.low, along_y.far, along_x.near),
        neighbour(along_y.high, along_x.high, along_y.far, along_x.far),
    ]
    if mode == "avg":
        sample = b.Add(b.Add(b.Add(terms[0], terms[1]), terms[2]), terms[3])
        if along_y.sampled is not None:  # the samples beyond a roi's own count, left out
            sampled = b.And(of_y(along_y.sampled), of_x(along_x.sampled))
            sample = b.Where(b.over_axes("Unsqueeze", sampled, [5]), sample, zero)
        count = b.Where(
            b.Less(count, b.constant(1, like=data, hint="one")), b.constant(1, like=data, hint="one"), count
        )
        if along_y.sampled is not None:  # [R, 1, 1] → [R, 1, 1, 1]
            count = b.over_axes("Unsqueeze", count, [3])
        pooled = b.Div(b.over_axes("ReduceSum", sample, [2, 4], keepdims=0), count)  # [R, h, w, C]
    else:
        sample = terms[0]
        for term in terms[1:]:
            sample = larger_of(b, sample, term)
        pooled = None
        for iy in range(sampling_ratio):
            row = b.Gather(sample, b.constant(iy, like=shape, hint=f"sample{iy}"), axis=2)  # [R, h, w, g, C]
            for ix in range(sampling_ratio):
                taken = b.Gather(row, b.constant(ix, like=shape, hint=f"sample{ix}"), axis=3)
                pooled = taken if pooled is None else larger_of(b, pooled, taken)
    y = b.Transpose(pooled, perm=[0, 3, 1, 2])
    return y if y.element_type == x.element_type else b.Cast(y, to=x.element_type)


def _shapes_known_right(b: Builder, rois: Value, batch_indices: Value) -> bool:
    """Whether rois are known to be [R, 4] and batch_indices [R], R the same length."""
    rois_shape, indices_shape = b.shape_of(rois), b.shape_of(batch_indices)
    return (
        rois_shape is not None
        and indices_shape is not None
        and len(rois_shape) == 2
        and len(indices_shape) == 1
        and rois_shape[1] == 4
        and rois_shape[0] is not None
        and rois_shape[0] == indices_shape[0]
    )


def _shapes_checked(b: Builder, rois: Value, batch_indices: Value) -> Value:
    """[0], or a failure where rois are not [R, 4] or batch_indices not [R] (as the kernel fails):
    Gather([0], [1]) reads past its one element."""
    rois_shape = b.Shape(rois)
    right = b.And(
        b.Equal(b.Gather(rois_shape, b.ints([1], "columns")), b.ints([4], "four")),
        b.Equal(b.Gather(rois_shape, b.ints([0], "axis0")), b.Shape(batch_indices)),
    )
    return zero_unless(b, b.Not(right))
