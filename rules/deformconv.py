"""DeformConv (versions 19, 22, no function body) lowered to bilinear samples gathered as rows and a grouped MatMul."""

from __future__ import annotations

import itertools
import math

import numpy as np
from onnx import TensorProto

from lowering import floats, schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .gridsample import index_within, stacked_neighbours, weighted_rows

EMITS = (
    "Shape", "Gather", "Concat", "Reshape", "Range", "Cast", "Add", "Sub", "Mul", "Floor", "Greater", "Less", "And",
    "Equal", "Where", "Unsqueeze", "Transpose", "Flatten", "ReduceSum", "ReduceProd", "MatMul", "Constant",
)  # fmt: skip
# The rule writes ops as they are from this opset on: each of them exists (Range from 11) and
# Constant holds its int64 indices and shapes, onnx.defs says.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# How far the lowered DeformConv may stray from the op, per float type. Measured
# (tests/rules/test_deformconv_lowering.py) against onnxruntime's DeformConv kernel (float, double;
# float16 by its float32 kernel between Casts) and the numpy reference below (float64, rounded
# once), on standard normal inputs, weights and biases, masks in [0, 1], offsets within ±0.5, ±3
# and ±20 pixels (most points outside the image) and whole pixels, with groups, offset groups,
# strides, dilations and pads, 1-D to 3-D: the sampling points and bilinear weights are the
# kernel's (the integer grid point plus the offset, one rounding); the products and sums come
# in another order (the mask multiplied into the weights, the channels and kernel positions
# summed by one MatMul). Outputs reach about 10: float at most 9.5e-7 from onnxruntime's kernel
# and 2.7e-6 from the reference, double 1.8e-15; float16 at most one unit in the last place
# (9.8e-4), bfloat16 likewise computed in float32 and rounded once (2^-7 of the value). atol
# covers sums of about 20 unit-scale products that cancel to near 0.
DEFORM_CONV_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-5),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-3),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-2),
}


def deform_conv_reference(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    bias: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    *,
    dilations=None,
    group: int = 1,
    kernel_shape=None,
    offset_group: int = 1,
    pads=None,
    strides=None,
) -> np.ndarray:
    """The op as its specification states it (onnx.reference's DeformConv, vectorized, on any
    number of spatial axes): each kernel position sampled at the strided, dilated, padded grid
    point plus its offset, bilinearly, neighbours outside X read as 0, times the mask; the
    weighted sum over the group's channels and kernel positions, plus the bias; in float64,
    rounded to x's type once."""
    spatial = x.ndim - 2
    kernel = list(kernel_shape) if kernel_shape is not None else list(w.shape[2:])
    dilations = list(dilations) if dilations is not None else [1] * spatial
    strides = list(strides) if strides is not None else [1] * spatial
    pads = list(pads) if pads is not None else [0] * 2 * spatial
    n, channels = x.shape[:2]
    out_channels, group_channels = w.shape[:2]
    outputs = offset.shape[2:]
    positions = math.prod(kernel)
    values = x.astype(np.float64).reshape(n, offset_group, channels // offset_group, -1)  # [N, G, Cg, P]
    offsets = offset.astype(np.float64).reshape(n, offset_group, positions, spatial, *outputs)
    weights = np.ones((n, offset_group, positions, *outputs))
    if mask is not None:
        weights = mask.astype(np.float64).reshape(n, offset_group, positions, *outputs)
    columns = np.zeros((n, offset_group, channels // offset_group, positions, *outputs))
    per_axis = []  # per spatial axis: its two neighbours' indices, weights and validity
    with np.errstate(all="ignore"):
        for axis in range(spatial):
            grid = np.arange(outputs[axis]) * strides[axis] - pads[axis]
            grid = grid.reshape((-1,) + (1,) * (spatial - 1 - axis))
            taps = np.array([k[axis] for k in itertools.product(*[range(s) for s in kernel])]) * dilations[axis]
            point = offsets[:, :, :, axis] + (taps.reshape((-1,) + (1,) * spatial) + grid)
            floor = np.floor(point)
            neighbours = []
            for index, weight in ((floor, floor + 1 - point), (floor + 1, point - floor)):
                valid = (index > -1) & (index < x.shape[2 + axis])
                neighbours.append((np.where(valid, index, 0).astype(np.int64), weight, valid))
            per_axis.append(neighbours)
        strides_of_x = [math.prod(x.shape[3 + axis :]) for axis in range(spatial)]
        batch = np.arange(n).reshape((-1, 1) + (1,) * (1 + spatial))
        groups = np.arange(offset_group).reshape((1, -1) + (1,) * (1 + spatial))
        for choice in itertools.product(*per_axis):
            flat = sum(index * stride for (index, _, _), stride in zip(choice, strides_of_x, strict=True))
            weight = np.prod([weight for _, weight, _ in choice], axis=0)
            valid = np.logical_and.reduce([valid for _, _, valid in choice])
            picked = np.moveaxis(values, 2, -1)[batch, groups, flat]  # [N, G, K, o..., Cg]
            picked = np.where(valid[..., None], picked, 0)
            columns += np.moveaxis(picked * (weight * weights)[..., None], -1, 2)
        columns = columns.reshape(n, group, group_channels * positions, -1)
        matrix = w.astype(np.float64).reshape(group, out_channels // group, group_channels * positions)
        y = (matrix @ columns).reshape(n, out_channels, *outputs)
        if bias is not None:
            y = y + bias.astype(np.float64).reshape((-1,) + (1,) * spatial)
    return y.astype(x.dtype)


@rule(
    "DeformConv",
    versions=(19, 22),
    emits=EMITS,
    rounding_invariant=False,
    reference=deform_conv_reference,
    tolerance=DEFORM_CONV_TOLERANCE,
)
def deform_conv_by_gathering(
    b: Builder,
    x: Value,
    w: Value,
    offset: Value,
    bias: Value | None = None,
    mask: Value | None = None,
    *,
    dilations=None,
    group: int = 1,
    kernel_shape=None,
    offset_group: int = 1,
    pads=None,
    strides=None,
) -> Value:
    """DeformConv(X, W, offset, B, mask) = Reshape(MatMul(W as [g, oC/g, C/g·K], S as [N, g, C/g·K, O])) + B.

    S, the sampled columns [N, C, K, o_1, ..., o_r] (K = k_1·…·k_r kernel positions, O =
    o_1·…·o_r output points, both from offset's shape): per offset group G_j, kernel position k
    and output point o, on each spatial axis a the sampling point ``p_a = o_a·s_a - pad_a +
    k_a·d_a + offset[n, j, k, a, o]`` (the integer grid point plus the offset, one rounding, as
    the op's kernel); its neighbours Floor(p_a) and Floor(p_a) + 1 weighted ``Floor(p_a) + 1 -
    p_a`` and ``p_a - Floor(p_a)``; the 2^r combinations read at once, a row of the group's
    C/G channels, by Gather on X laid out as rows [N·P·G, C/G] (P = d_1·…·d_r) at ``(n·P +
    Σ_a i_a·t_a)·G + j`` (t_a the axis' stride); a neighbour outside X reads 0 (Where, on the
    value: an infinity elsewhere in X is not multiplied by 0); the products of the weights
    times the mask (1 where absent) weigh the rows, summed by ReduceSum. The weighted sum over
    the group's channels and kernel positions is one MatMul (W's groups as a batch), the bias
    added after. float16 and bfloat16 computed in float32, rounded once. Follows the spec (and
    onnx.reference) where onnxruntime's kernel departs from it: its points partly outside X read
    an element of X times weight 0 for the outside neighbours (an infinity there makes NaN).

    Tolerance (floats added in another order than a fused kernel): float rtol 1e-5, atol 1e-5;
    double 1e-12; float16 rtol 2^-10, atol 1e-3; bfloat16 rtol 2^-7, atol 1e-2. W's shape must
    be known (its output channels, channels per group and kernel), and X's rank; X's spatial
    lengths, the batch and offset's output lengths may be given at run time. Not lowered below
    opset 11 (Range).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    x_shape, w_shape, offset_shape = b.shape_of(x), b.shape_of(w), b.shape_of(offset)
    if x_shape is None:
        raise NotLowered("the rank of X is unknown, so the number of spatial axes to sample is unknown")
    spatial = len(x_shape) - 2
    if spatial < 1:
        raise NotLowered(f"X of rank {len(x_shape)} has no spatial axis to sample")
    if w_shape is None or len(w_shape) != spatial + 2 or any(length is None for length in w_shape):
        raise NotLowered(
            f"W's shape is {_shape_text(w_shape)}; the rule needs all {spatial + 2} of its lengths known: "
            f"output channels, channels per group, kernel"
        )
    out_channels, group_channels, kernel = w_shape[0], w_shape[1], [int(length) for length in w_shape[2:]]
    checked = _checked_attributes(spatial, kernel, kernel_shape, dilations, pads, strides, group, offset_group)
    if isinstance(checked, str):
        raise NotLowered(checked)
    dilations, pads, strides = checked
    channels = group_channels * group
    if x_shape[1] is not None and x_shape[1] != channels:
        raise NotLowered(
            f"X has {x_shape[1]} channels, and W's {group_channels} per group times {group} groups is {channels}"
        )
    if out_channels % group or channels % offset_group or min(out_channels, group_channels, *kernel) < 1:
        raise NotLowered(
            f"W's shape {w_shape} does not divide into {group} groups, or its {channels} channels into "
            f"{offset_group} offset groups"
        )
    positions = math.prod(kernel)
    if offset_shape is not None:
        expected = offset_group * positions * spatial
        if len(offset_shape) != spatial + 2 or offset_shape[1] not in (None, expected):
            raise NotLowered(
                f"offset's shape is {_shape_text(offset_shape)}; it must be [N, {expected}, o_1, ..., o_{spatial}]"
            )
    for value, name in ((x, "X"), (w, "W"), (offset, "offset"), (bias, "B"), (mask, "mask")):
        if value is not None and not floats.is_float(value.element_type):
            raise NotLowered(f"{name} is {schemas.type_name(value.element_type)}, not a float type")
    return _sampled(b, x, w, offset, bias, mask, kernel, out_channels, channels, group, offset_group,
                    dilations, pads, strides)  # fmt: skip


def _shape_text(shape) -> str:
    if shape is None:
        return "unknown"
    return "[" + ", ".join("?" if length is None else str(length) for length in shape) + "]"


def _checked_attributes(spatial, kernel, kernel_shape, dilations, pads, strides, group, offset_group):
    """dilations, pads and strides with their defaults; or why the op does not take them (a sentence)."""
    if kernel_shape is not None and list(kernel_shape) != kernel:
        return f"kernel_shape {list(kernel_shape)} is not W's kernel {kernel}"
    dilations = list(dilations) if dilations else [1] * spatial
    strides = list(strides) if strides else [1] * spatial
    pads = list(pads) if pads else [0] * 2 * spatial
    if len(dilations) != spatial or len(strides) != spatial or len(pads) != 2 * spatial:
        return (
            f"dilations, strides and pads must hold {spatial}, {spatial} and {2 * spatial} values for X of "
            f"{spatial} spatial axes"
        )
    if min(dilations) < 1 or min(strides) < 1 or min(pads) < 0 or group < 1 or offset_group < 1:
        return (
            f"dilations {dilations}, strides {strides}, group {group} and offset_group {offset_group} must be "
            f"positive and pads {pads} not negative"
        )
    return dilations, pads, strides


def _sampled(b: Builder, x, w, offset, bias, mask, kernel, out_channels, channels, group, offset_group,
             dilations, pads, strides) -> Value:  # fmt: skip
    spatial = len(kernel)
    positions = math.prod(kernel)
    group_channels = channels // offset_group  # channels per offset group
    data = b.computable(x)
    real = data.element_type
    dtype = floats.numpy_dtype(real)
    ints = b.ints
    x_shape, offset_shape = b.Shape(data), b.Shape(offset)
    batch = b.Gather(offset_shape, ints([0], "batch_axis"), axis=0)
    outputs = b.Gather(offset_shape, ints(list(range(2, 2 + spatial)), "output_axes"), axis=0)
    # offset as [N, G, K, r, o_1, ..., o_r]; mask as [N, G, K, o_1, ..., o_r]
    offsets = b.Reshape(b.computable(offset), b.Concat(batch, ints([offset_group, positions, spatial], "offset_layout"),
                                                       outputs, axis=0))  # fmt: skip
    one = b.constant(1, like=data, hint="one")
    point_rank = 3 + spatial  # [N, G, K, o_1, ..., o_r]
    stack_axis = point_rank  # the first neighbours' axis after them

    def placed(pair: list[Value], axis: int) -> Value:
        return stacked_neighbours(b, pair, axis, stack_axis, spatial)

    kernel_taps = list(itertools.product(*[range(length) for length in kernel]))
    flat_index = weight = valid = None
    stride = None
    for axis in reversed(range(spatial)):  # the last axis first: its stride is 1
        size = b.Gather(x_shape, ints([2 + axis], f"axis{axis}"), axis=0)  # [1], int64
        length = b.Cast(size, to=real)
        # the integer grid point: o_a·s_a - pad_a (along o_a) + k_a·d_a (along K), exact in the type
        along = b.Range(
            b.constant(0, like=size, hint="zero"),
            b.Gather(outputs, b.constant(axis, like=size, hint=f"output{axis}"), axis=0),
            b.constant(1, like=size, hint="one"),
        )
        grid = b.Sub(
            b.Mul(b.Cast(along, to=real), b.constant(strides[axis], like=data, hint=f"stride{axis}")),
            b.constant(pads[axis], like=data, hint=f"pad{axis}"),
        )
        if spatial - 1 - axis:
            grid = b.over_axes("Unsqueeze", grid, list(range(1, spatial - axis)))
        taps = np.array([tap[axis] * dilations[axis] for tap in kernel_taps], dtype).reshape((-1,) + (1,) * spatial)
        base = b.Add(grid, b.tensor(taps, f"taps{axis}"))
        moved = b.Gather(offsets, b.constant(axis, like=size, hint=f"offset_axis{axis}"), axis=3)
        point = b.Add(moved, base)
        floor = b.Floor(point)
        after = b.Add(floor, one)
        indices, weights = [floor, after], [b.Sub(after, point), b.Sub(point, floor)]
        checked, inside = zip(*[index_within(b, index, length) for index in indices], strict=True)
        axis_index = b.Cast(placed(list(checked), axis), to=TensorProto.INT64)
        if stride is not None:
            axis_index = b.Mul(axis_index, stride)
        flat_index = axis_index if flat_index is None else b.Add(flat_index, axis_index)
        stride = size if stride is None else b.Mul(stride, size)
        axis_valid = placed(list(inside), axis)
        valid = axis_valid if valid is None else b.And(valid, axis_valid)
        axis_weight = placed(weights, axis)
        weight = axis_weight if weight is None else b.Mul(weight, axis_weight)
    neighbour_axes = list(range(stack_axis, stack_axis + spatial))
    if mask is not None:
        masks = b.Reshape(b.computable(mask), b.Concat(batch, ints([offset_group, positions], "mask_layout"), outputs,
                                                      axis=0))  # fmt: skip
        weight = b.Mul(weight, b.over_axes("Unsqueeze", masks, neighbour_axes))
    # X's elements as rows of one offset group's channels, [N·P·G, C/G]; row (n·P + p)·G + j
    rows = b.Flatten(b.Transpose(data, perm=[0, *range(2, spatial + 2), 1]), axis=spatial + 1)
    batch_length = b.Gather(offset_shape, b.constant(0, like=x_shape, hint="zero"), axis=0)
    first = b.Range(b.constant(0, like=x_shape, hint="zero"), batch_length, b.constant(1, like=x_shape, hint="one"))
    first = b.over_axes("Unsqueeze", b.Mul(first, stride), list(range(1, point_rank + spatial)))
    flat_index = b.Add(flat_index, first)
    if offset_group > 1:
        rows = b.Reshape(rows, ints([-1, group_channels], "rows_shape"))
        groups = np.arange(offset_group, dtype=np.int64).reshape((1, -1) + (1,) * (1 + 2 * spatial))
        flat_index = b.Add(b.Mul(flat_index, b.constant(offset_group, like=x_shape, hint="offset_groups")),
                           b.tensor(groups, "offset_group_rows"))  # fmt: skip
    sampled = weighted_rows(b, rows, flat_index, valid, weight, neighbour_axes)  # [N, G, K, o..., C/G]
    # the columns [N, g, C/g·K, O], channel-major as W's [oC, C/g, k_1, ..., k_r]
    columns = b.Transpose(sampled, perm=[0, 1, point_rank, 2, *range(3, point_rank)])
    points = b.over_axes("ReduceProd", outputs, [0], keepdims=1)
    columns = b.Reshape(columns, b.Concat(batch, ints([group, channels // group * positions], "column_layout"), points,
                                          axis=0))  # fmt: skip
    matrix = b.Reshape(b.computable(w), ints([group, out_channels // group, channels // group * positions], "w_layout"))
    y = b.Reshape(b.MatMul(matrix, columns), b.Concat(batch, ints([out_channels], "out_channels"), outputs, axis=0))
    if bias is not None:
        y = b.Add(y, b.over_axes("Unsqueeze", b.computable(bias), list(range(1, spatial + 1))))
    return y if y.element_type == x.element_type else b.Cast(y, to=x.element_type)
