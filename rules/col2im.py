"""Col2Im (version 18, no function body) lowered to one padded, shifted Add per kernel offset."""

from __future__ import annotations

import itertools
import math

import numpy as np
from onnx import TensorProto
from onnx import helper as onnx_helper

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

# The most kernel offsets (the product of block_shape) the rule unrolls: a Gather, a Pad and an
# Add each.
LARGEST_BLOCK = 64

EMITS = ("Reshape", "Gather", "Pad", "Sum", "Add", "Slice", "Cast", "Constant")
# ... and, where image_shape and block_shape are given at run time, from opset 11:
LOOP_EMITS = ("Shape", "Concat", "Sub", "Mul", "Div", "Mod", "ReduceProd", "Greater", "Where", "ConstantOfShape",
              "Loop", "Identity")  # fmt: skip
# The rule writes ops as they are from this opset on: each of them exists and Constant holds
# its int64 indices and shapes (from 9), onnx.defs says; Pad and Slice take their pads, starts
# and ends as attributes where their version in force does (below 11 and 10).
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)


def col2im_reference(
    x: np.ndarray,
    image_shape: np.ndarray,
    block_shape: np.ndarray,
    *,
    dilations: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> np.ndarray:
    """The image from +0, each kernel offset's column block added in turn (kernel offsets in
    row-major order, every channel at once), in x's type (each sum rounded to it; integers
    wrap around); float16 in float32 rounded once at the end, as onnxruntime runs it (its
    float32 kernel between Casts). Pixels in the padding are dropped."""
    if x.dtype == np.float16:
        with np.errstate(all="ignore"):
            wide = col2im_reference(
                x.astype(np.float32), image_shape, block_shape, dilations=dilations, pads=pads, strides=strides
            )
            return wide.astype(np.float16)
    image, block = [int(v) for v in np.asarray(image_shape)], [int(v) for v in np.asarray(block_shape)]
    rank = len(image)
    dilations, strides = list(dilations or [1] * rank), list(strides or [1] * rank)
    pads = list(pads or [0] * 2 * rank)
    counts = _block_counts(image, block, dilations, pads, strides)
    batch, channels = x.shape[0], x.shape[1] // math.prod(block)
    columns = x.reshape(batch, channels, math.prod(block), *counts)
    result = np.zeros((batch, channels, *image), x.dtype)
    for k, offset in enumerate(itertools.product(*[range(b) for b in block])):
        targets, sources = [], []
        for d in range(rank):
            position = np.arange(counts[d]) * strides[d] + offset[d] * dilations[d] - pads[d]
            inside = (position >= 0) & (position < image[d])
            targets.append(position[inside])
            sources.append(np.flatnonzero(inside))
        with np.errstate(all="ignore"):
            result[(slice(None), slice(None), *np.ix_(*targets))] += columns[:, :, k][
                (slice(None), slice(None), *np.ix_(*sources))
            ]
    return result


def _block_counts(image, block, dilations, pads, strides) -> list[int]:
    """How many blocks fit along each spatial axis of the padded image."""
    rank = len(image)
    return [
        (image[d] + pads[d] + pads[rank + d] - (dilations[d] * (block[d] - 1) + 1)) // strides[d] + 1
        for d in range(rank)
    ]


@rule(
    "Col2Im",
    versions=(18,),
    emits=EMITS + LOOP_EMITS,
    rounding_invariant=False,
    reference=col2im_reference,
)
def col2im_by_shifted_adds(
    b: Builder,
    x: Value,
    image_shape: Value | None = None,
    block_shape: Value | None = None,
    *,
    dilations: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Value:
    """Col2Im(x) = Slice(0 + P_0 + ... + P_{B-1}), P_k = Pad(Gather(Reshape(x), k)): kernel offset k's blocks in place.

    x, of shape [N, C·B, L], is read as [N, C, B, c_1, ..., c_D] (c_d blocks along spatial axis
    d, B = prod(block_shape)); the k-th kernel offset o (row-major over block_shape) is taken by
    Gather, and one Pad spreads its blocks by the stride and moves them to o·dilation in the
    padded image: a spatial axis with a stride s > 1 is laid out as [c_d, 1] (by the Reshape of
    x) and padded to [M_d, s] (q zeros before the blocks and r before each, where o·dilation =
    q·s + r), which a Reshape at the end reads as M_d·s positions. The slabs are added to +0
    (Sum) in kernel order, the operands and order of onnxruntime's kernel (the image from +0,
    plus each offset's column in turn; a slab's zeros add nothing, x + 0 being x but for -0,
    which +0 + -0 makes +0 in both), so the answer is its own bit for bit on float, -0,
    infinities and subnormals included, except which payload survives where two NaNs meet, which
    onnxruntime's Add and its Col2Im kernel choose apart; one Slice at the end cuts the padding
    off. onnxruntime's kernel runs only float, and on images of other than 2 axes with a
    dilation above 1 and more than one channel it is wrong (it takes the dilated block for the
    block): the rule follows the op's definition there, as onnx.reference does. double and
    integers are added in their own type (integers wrap around; those Add or Pad does not run on
    at the opset in int32 or int64, cast back exactly); float16 and bfloat16 in float32: float16
    rounded once at the end, as onnxruntime runs Col2Im on it (its float32 kernel between
    Casts); bfloat16, which no onnxruntime kernel runs, each sum rounded, as onnx.reference
    adds. With image_shape and block_shape constants the offsets are unrolled (B at most 64);
    given at run time (from opset 11), a Loop over the B offsets does the same Gather, Pad and
    Add per iteration, the block counts, canvas and pads computed from them. x's rank must be
    known (and its second dimension, where the offsets are unrolled). Not lowered on bool,
    string or complex values, or below opset 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    if image_shape is None or block_shape is None:
        raise NotLowered("Col2Im needs its image_shape and block_shape inputs")
    image, block = b.constant_value(image_shape), b.constant_value(block_shape)
    if image is None or block is None:
        return _by_loop(b, x, image_shape, block_shape, dilations, pads, strides)
    image, block = [int(v) for v in image.reshape(-1)], [int(v) for v in block.reshape(-1)]
    if len(block) != len(image):
        raise NotLowered(f"image_shape has {len(image)} values and block_shape {len(block)}: they must be as many")
    attributes = _attributes(len(image), dilations, pads, strides)
    if isinstance(attributes, str):
        raise NotLowered(attributes)
    dilations, pads, strides = attributes
    if min(image) < 1 or min(block) < 1:
        raise NotLowered(f"image_shape {image} and block_shape {block} must be positive")
    counts = _block_counts(image, block, dilations, pads, strides)
    if min(counts) < 1:
        raise NotLowered(
            f"the block {block} does not fit in the padded image {image} (pads {pads}, dilations {dilations})"
        )
    shape = b.shape_of(x)
    if shape is None or len(shape) != 3:
        raise NotLowered("the rank of the input is unknown" if shape is None else "the input is not of rank 3")
    blocks = math.prod(block)
    if shape[1] is None:
        raise NotLowered("the input's second dimension (channels times the block's size) is unknown")
    if shape[1] % blocks:
        raise NotLowered(f"the input's second dimension {shape[1]} is no multiple of the block's size {blocks}")
    if shape[2] is not None and shape[2] != math.prod(counts):
        raise NotLowered(f"the input holds {shape[2]} blocks, not the {math.prod(counts)} the image takes")
    if blocks > LARGEST_BLOCK:
        raise NotLowered(f"the block has {blocks} kernel offsets, more than the {LARGEST_BLOCK} this rule unrolls")
    types = _compute_types(b, x)
    compute_type, rounds_each_sum = types
    wide = x if compute_type == x.element_type else b.Cast(x, to=compute_type)
    rank = len(image)
    # [N, C, B, c_1 (, 1), ..., c_D (, 1)]: an axis of length 1 after each strided spatial axis.
    spread = [strides[d] > 1 for d in range(rank)]
    laid_out = [length for d in range(rank) for length in ([counts[d], 1] if spread[d] else [counts[d]])]
    columns = b.Reshape(wide, b.ints([0, shape[1] // blocks, blocks, *laid_out], "blocks_shape"))
    # The canvas: M_d strides along axis d, enough for every offset's blocks and for the image.
    canvas = [
        max((block[d] - 1) * dilations[d] // strides[d] + counts[d], -(-(pads[d] + image[d]) // strides[d]))
        for d in range(rank)
    ]
    zero = b.constant(0, like=wide, hint="zero") if floats.is_float(compute_type) else None
    image_sum = None
    for k, offset in enumerate(itertools.product(*[range(length) for length in block])):
        slab = columns if blocks == 1 else b.Gather(columns, b.ints([k], f"offset{k}"), axis=2)
        before, after = [0, 0, 0], [0, 0, 0]
        for d in range(rank):
            whole, part = divmod(offset[d] * dilations[d], strides[d])
            before.append(whole)
            after.append(canvas[d] - counts[d] - whole)
            if spread[d]:
                before.append(part)
                after.append(strides[d] - 1 - part)
        placed = _padded(b, slab, before + after) if any(before + after) else slab
        if image_sum is None:
            # Sum, not Add: onnxruntime drops an Add of a one-element 0 (NoopElimination), which
            # would keep -0 and signalling NaNs the kernel's +0 + x turns into +0 and quiet NaNs.
            image_sum = b.Sum(zero, placed) if zero is not None else placed
        else:
            image_sum = _rounded(b, b.Add(image_sum, placed), x.element_type, rounds_each_sum)
    image_sum = b.Reshape(image_sum, b.ints([0, 0, *[canvas[d] * strides[d] for d in range(rank)]], "image_shape"))
    if any(pads[d] or canvas[d] * strides[d] != image[d] for d in range(rank)):
        image_sum = _sliced(b, image_sum, [pads[d] for d in range(rank)], [pads[d] + image[d] for d in range(rank)])
    return image_sum if image_sum.element_type == x.element_type else b.Cast(image_sum, to=x.element_type)


def _by_loop(b: Builder, x: Value, image_shape: Value, block_shape: Value, dilations, pads, strides):
    """Col2Im with image_shape and block_shape known only at run time: the same Pads and Adds,
    one kernel offset per iteration of a Loop (its offset, the blocks along each axis and the
    canvas computed from the two inputs), from a canvas of +0."""
    if b.opset < 11:
        raise NotLowered(
            f"image_shape or block_shape is no constant, and Pad takes its pads as an attribute at opset {b.opset}"
        )
    lengths = [b.shape_of(image_shape), b.shape_of(block_shape)]
    if any(length is None or len(length) != 1 or length[0] is None for length in lengths):
        raise NotLowered("image_shape or block_shape is no constant and its length (the image's rank) is unknown")
    rank = lengths[0][0]
    if lengths[1][0] != rank or rank == 0:
        raise NotLowered(f"image_shape has {rank} values and block_shape {lengths[1][0]}: they must be as many")
    attributes = _attributes(rank, dilations, pads, strides)
    if isinstance(attributes, str):
        raise NotLowered(attributes)
    dilations, pads, strides = attributes
    shape = b.shape_of(x)
    if shape is None or len(shape) != 3:
        raise NotLowered("the rank of the input is unknown" if shape is None else "the input is not of rank 3")
    types = _compute_types(b, x)
    compute_type, rounds_each_sum = types
    wide = x if compute_type == x.element_type else b.Cast(x, to=compute_type)
    spread = [strides[d] > 1 for d in range(rank)]

    ints = b.ints
    image = b.Cast(image_shape, to=TensorProto.INT64) if image_shape.element_type != TensorProto.INT64 else image_shape
    block = b.Cast(block_shape, to=TensorProto.INT64) if block_shape.element_type != TensorProto.INT64 else block_shape
    one = ints([1], "one")
    begin_pads, end_pads = ints(pads[:rank], "pads_begin"), ints(pads[rank:], "pads_end")
    dilation, stride = ints(dilations, "dilations"), ints(strides, "strides")
    # c = (image + pads - (dilation * (block - 1) + 1)) / stride + 1, as the op counts blocks
    reach = b.Add(b.Mul(dilation, b.Sub(block, one)), one)
    counts = b.Add(b.Div(b.Sub(b.Add(b.Add(image, begin_pads), end_pads), reach), stride), one)
    block_size = b.over_axes("ReduceProd", block, [0], keepdims=1)
    # [N, C, B, c_1 (, 1), ..., c_D (, 1)]: the counts with a 1 after each strided axis.
    with_one = b.Concat(counts, one, axis=0)
    picks = [index for d in range(rank) for index in ([d, rank] if spread[d] else [d])]
    columns_shape = b.Concat(
        ints([0, -1], "batch_channels"), block_size, b.Gather(with_one, ints(picks, "layout"), axis=0), axis=0
    )
    columns = b.Reshape(wide, columns_shape)
    # The canvas: M = max((block - 1) * dilation / stride + c, ceil((pad + image) / stride)).
    farthest = b.Div(b.Mul(b.Sub(block, one), dilation), stride)
    reached = b.Add(farthest, counts)
    covered = b.Div(b.Add(b.Add(begin_pads, image), b.Sub(stride, one)), stride)
    canvas = b.Where(b.Greater(reached, covered), reached, covered)  # Max takes no integers below 12
    # Row-major offsets: o_d = k / prod(block[d+1:]) % block[d].
    inner = [ints([1], "inner_last")]
    for d in range(rank - 1, 0, -1):
        inner.insert(0, b.Mul(inner[0], b.Gather(block, ints([d], f"axis{d}"), axis=0)))
    inner_sizes = b.Concat(*inner, axis=0) if rank > 1 else inner[0]
    shape_of_x = b.Shape(wide)
    batch = b.Gather(shape_of_x, ints([0], "batch_axis"), axis=0)
    channels = b.Div(b.Gather(shape_of_x, ints([1], "channel_axis"), axis=0), block_size)
    canvas_picks = [i for d in range(rank) for i in ([d, rank + d] if spread[d] else [d])]
    canvas_layout = b.Gather(b.Concat(canvas, stride, axis=0), ints(canvas_picks, "canvas_layout"), axis=0)
    start = b.ConstantOfShape(
        b.Concat(batch, channels, one, canvas_layout, axis=0),
        value=onnx_helper.make_tensor("zero", compute_type, [1], [0]),
    )

    body = b.nested("offset")
    step, keep = body.fresh_value("k", TensorProto.INT64), body.fresh_value("cond", TensorProto.BOOL)
    so_far = body.fresh_value("image", compute_type)
    k = body.Reshape(step, ints([1], "k_shape"))
    offset = body.Mod(body.Div(k, inner_sizes), block)
    place = body.Mul(offset, dilation)
    whole, part = body.Div(place, stride), body.Mod(place, stride)
    after_whole = body.Sub(body.Sub(canvas, counts), whole)
    after_part = body.Sub(body.Sub(stride, one), part)
    # pads: [0, 0, 0, q_1 (, r_1), ...,  0, 0, 0, M_1 - c_1 - q_1 (, s_1 - 1 - r_1), ...]
    every = body.Concat(ints([0], "zero"), whole, part, after_whole, after_part, axis=0)
    begins = [1 + i for d in range(rank) for i in ([d, rank + d] if spread[d] else [d])]
    ends = [1 + i for d in range(rank) for i in ([2 * rank + d, 3 * rank + d] if spread[d] else [2 * rank + d])]
    pad_amounts = body.Gather(every, ints([0, 0, 0, *begins, 0, 0, 0, *ends], "pad_picks"), axis=0)
    placed = body.Pad(body.Gather(columns, k, axis=2), pad_amounts)
    added = _rounded(body, body.Add(so_far, placed), x.element_type, rounds_each_sum)
    kept = body.Identity(keep)
    graph = onnx_helper.make_graph(
        body.nodes,
        body.fresh_value("body", compute_type).name,
        [
            onnx_helper.make_tensor_value_info(step.name, TensorProto.INT64, []),
            onnx_helper.make_tensor_value_info(keep.name, TensorProto.BOOL, []),
            onnx_helper.make_tensor_value_info(so_far.name, compute_type, None),
        ],
        [
            onnx_helper.make_tensor_value_info(kept.name, TensorProto.BOOL, []),
            onnx_helper.make_tensor_value_info(added.name, compute_type, None),
        ],
    )
    trips = b.Reshape(block_size, ints([], "scalar"))
    image_sum = b.Loop(trips, Value("", None), start, body=graph)
    image_sum = b.Reshape(image_sum, b.Concat(ints([0, 0], "copied"), b.Mul(canvas, stride), axis=0))
    image_sum = b.Slice(image_sum, begin_pads, b.Add(begin_pads, image), ints(list(range(2, 2 + rank)), "axes"))
    return image_sum if image_sum.element_type == x.element_type else b.Cast(image_sum, to=x.element_type)


def _rounded(b: Builder, value: Value, element_type: int, rounds: bool) -> Value:
    """The sum rounded to the op's type and widened back, where the op keeps each sum in it."""
    return b.Cast(b.Cast(value, to=element_type), to=value.element_type) if rounds else value


def _attributes(rank: int, dilations, pads, strides):
    """dilations, pads and strides with their defaults; or why the op does not take them (a sentence)."""
    dilations = list(dilations) if dilations else [1] * rank
    strides = list(strides) if strides else [1] * rank
    pads = list(pads) if pads else [0] * 2 * rank
    if len(dilations) != rank or len(strides) != rank or len(pads) != 2 * rank:
        return f"dilations, strides and pads must hold {rank}, {rank} and {2 * rank} values for an image of {rank} axes"
    if min(dilations) < 1 or min(strides) < 1 or min(pads) < 0:
        return f"dilations {dilations} and strides {strides} must be positive and pads {pads} not negative"
    return dilations, pads, strides


def _compute_types(b: Builder, x: Value) -> tuple[int, bool]:
    """The type the blocks are added in, and whether each sum is rounded to x's type: x's own;
    float16 and bfloat16 widened exactly to float32 (as the target computes them), rounded
    once at the end where the runtime runs Col2Im so (float16 in onnxruntime), else each sum;
    integers Add or Pad does not run on at the opset in int32 (8- and 16-bit ones) or int64,
    from which a Cast brings the sum back wrapped around."""
    element_type = x.element_type
    if floats.is_float(element_type):
        candidates = [b.computable(x, emit=False).element_type]
    elif element_type in _INTEGER_BITS:
        candidates = [element_type, *([TensorProto.INT32] if _INTEGER_BITS[element_type] <= 16 else []),
                      TensorProto.INT64]  # fmt: skip
    else:
        candidates = []
    for candidate in candidates:
        value = Value(x.name, candidate)
        if b.runs("Add", value) and b.runs("Pad", value):
            rounds_each_sum = (
                candidate != element_type
                and floats.is_float(element_type)
                and not b.target.runs_widened("Col2Im", schemas.op_versions("Col2Im")[-1], element_type)
            )
            return candidate, rounds_each_sum
    raise NotLowered(
        f"Col2Im adds its blocks, and Add or Pad does not run on {schemas.type_name(element_type)} at opset {b.opset}"
    )


_INTEGER_BITS = {
    TensorProto.INT8: 8, TensorProto.UINT8: 8, TensorProto.INT16: 16, TensorProto.UINT16: 16,
    TensorProto.INT32: 32, TensorProto.UINT32: 32, TensorProto.INT64: 64, TensorProto.UINT64: 64,
}  # fmt: skip


def _padded(b: Builder, x: Value, pads: list[int]) -> Value:
    """x padded with zeros: the pads an attribute where the Pad in force takes them so (below 11)."""
    schema = schemas.schema_in_force("Pad", b.opset)
    if schema is not None and "pads" in schema.attributes:
        return b.Pad(x, pads=pads)
    return b.Pad(x, b.ints(pads, "pads"))


def _sliced(b: Builder, x: Value, starts: list[int], ends: list[int]) -> Value:
    """x cut to [starts, ends) along its spatial axes (from 2 on)."""
    axes = list(range(2, 2 + len(starts)))
    if b.opset < 10:
        return b.Slice(x, starts=starts, ends=ends, axes=axes)
    return b.Slice(x, b.ints(starts, "starts"), b.ints(ends, "ends"), b.ints(axes, "axes"))
