"""Resize going down: to 13 across 18 (antialias at its default dropped, axes spread over every
axis, keep_aspect_ratio_policy as one common scale, constant or computed at run time) and to
11/12 across 13 (roi and scales given as empty tensors); and up across 13 and 18 as it is
(tf_half_pixel_for_nn refused)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from lowering import schemas
from lowering.adapters import (
    AdapterContext,
    NodeWriter,
    adapter,
    attribute_in,
    attribute_of,
    int64_constant,
    known_change,
    moved,
    text_attribute,
)
from lowering.errors import NotLowered

RESIZE_13 = "version 13 drops the coordinate mode tf_half_pixel_for_nn and makes roi and scales optional"
RESIZE_18 = "version 18 adds antialias, axes and keep_aspect_ratio_policy"
NEW_AT_18 = ("antialias", "axes", "keep_aspect_ratio_policy")

known_change(
    ("Resize",),
    19,
    "version 19 adds the coordinate mode half_pixel_symmetric",
    down_only=True,
    affects=attribute_in("coordinate_transformation_mode", frozenset({"half_pixel_symmetric"})),
)


def _mode(node: onnx.NodeProto, context: AdapterContext) -> str:
    """The node's coordinate_transformation_mode, its default where not set."""
    return text_attribute(node, "coordinate_transformation_mode", context.source_opset)


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    version = schemas.version_in_force("Resize", context.source_opset)
    return NotLowered(f"Resize-{version} {why}, so it cannot go to opset {context.target_opset}")


def _without_18_attributes(
    node: onnx.NodeProto, context: AdapterContext
) -> tuple[list[onnx.NodeProto], onnx.NodeProto, list[onnx.NodeProto]]:
    """The node without Resize-18/19's attributes, where they say what Resize-13 says, between
    the nodes that spread its roi, scales and sizes over every axis (or compute a policy's scale
    and pad its input) and those that cut its output (a policy's sizes); a refusal naming what
    cannot be said before 18 otherwise (and half_pixel_symmetric before 19)."""
    if _mode(node, context) == "half_pixel_symmetric":
        raise _refused(node, context, "uses coordinate_transformation_mode half_pixel_symmetric (from version 19)")
    if attribute_of(node, "antialias"):
        raise _refused(node, context, "filters with antialias=1 (from version 18)")
    axes = attribute_of(node, "axes")
    policy = text_attribute(node, "keep_aspect_ratio_policy", context.source_opset)
    sized_by_policy = policy != "stretch" and len(node.input) > 3 and bool(node.input[3])
    # The rank only where axes or a policy need it (else it may cost inference of the whole graph).
    rank = context.rank_of(node.input[0]) if axes is not None or sized_by_policy else None
    if axes is not None:
        if rank is None:
            raise _refused(node, context, f"resizes along axes {list(axes)} of an input of unknown rank")
        axes = [a + rank if a < 0 else a for a in axes]
    made: list[onnx.NodeProto] = []
    result = moved(node, dropped=NEW_AT_18)
    inputs = list(result.input) + [""] * (4 - len(result.input))
    hint = node.name or node.output[0]
    mode = _mode(node, context)
    after: list[onnx.NodeProto] = []
    if sized_by_policy:  # with scales onnx ignores the policy
        if mode == "tf_crop_and_resize":  # Resize-13 would size the output by the roi too
            raise _refused(node, context, f"keeps the aspect ratio of its sizes ({policy}) in tf_crop_and_resize")
        if rank is None:
            raise _refused(node, context, f"keeps the aspect ratio of its sizes ({policy}) of an input of unknown rank")
        policy_axes = list(range(rank)) if axes is None else axes
        try:
            scales = _policy_scales(node, context, policy_axes, policy)
        except NotLowered:
            if not _policy_at_run_time_exact(node, context):
                raise
            made, result, after = _policy_at_run_time(node, context, result, inputs, policy_axes, rank, policy)
            return made, result, after
        constant, inputs[2] = _float_constant(context, f"{hint}_scales", scales)
        made.append(constant)
        inputs[1] = inputs[3] = ""  # roi is read by tf_crop_and_resize only
    elif axes is not None and axes != list(range(rank)):
        made += _spread_over_every_axis(node, context, inputs, axes, rank)
    del result.input[:]
    result.input.extend(inputs)
    while result.input and not result.input[-1]:
        result.input.pop()
    return made, result, after


def _policy_scales(node: onnx.NodeProto, context: AdapterContext, axes: list[int], policy: str) -> list[float]:
    """The scales of every axis that Resize-18's keep_aspect_ratio_policy gives with constant
    sizes on an input of known shape: ``s = min`` (not_larger) or ``max`` (not_smaller) of
    ``sizes[i] / d[axes[i]]`` in float32, output size ``round(s * d)``; a refusal where those
    sizes are not known statically, or where Resize-13's ``floor(s * d)`` would not give them."""
    sizes = _constant_values(context, node.input[3])
    shape = context.shape_of(node.input[0])
    if sizes is None or shape is None or not all(isinstance(shape[a], int) for a in axes):
        unknown = f"sizes '{node.input[3]}' computed at run time" if sizes is None else "an input shape not known"
        raise _refused(
            node,
            context,
            f"keeps the aspect ratio of its sizes ({policy}, from version 18) with {unknown}; Resize-13 can say "
            "that only as one common scale, from constant sizes and a static input shape, or, at run time, in mode "
            f"nearest with coordinate mode {' or '.join(LENGTH_FREE_MODES)}",
        )
    ratios = [np.float32(size) / np.float32(shape[axis]) for size, axis in zip(sizes, axes, strict=True)]
    scale = np.float32(min(ratios) if policy == "not_larger" else max(ratios))
    full = [np.float32(1.0)] * len(shape)
    for axis in axes:
        wanted = int(np.floor(scale * np.float32(shape[axis]) + np.float32(0.5)))
        given = int(np.float32(scale * np.float32(shape[axis])))  # Resize-13: floor(scale * d)
        if wanted != given:
            raise _refused(
                node,
                context,
                f"keeps the aspect ratio of its sizes ({policy}, from version 18) with the common scale {scale}, "
                f"which sizes axis {axis} to round({scale} * {shape[axis]}) = {wanted} where Resize-13 gives "
                f"floor(...) = {given}",
            )
        full[axis] = scale
    return [float(v) for v in full]


# Coordinate modes in which an output point's place in the input reads neither the input's nor the
# output's length: ``(x + 0.5) / s - 0.5`` and ``x / s``.
LENGTH_FREE_MODES = ("half_pixel", "asymmetric")


def _policy_at_run_time_exact(node: onnx.NodeProto, context: AdapterContext) -> bool:
    """Whether the policy's scale and sizes may be computed at run time (:func:`_policy_at_run_time`)."""
    return text_attribute(node, "mode", context.source_opset) == "nearest" and _mode(node, context) in LENGTH_FREE_MODES


def _policy_at_run_time(
    node: onnx.NodeProto,
    context: AdapterContext,
    result: onnx.NodeProto,
    inputs: list[str],
    axes: list[int],
    rank: int,
    policy: str,
) -> tuple[list[onnx.NodeProto], onnx.NodeProto, list[onnx.NodeProto]]:
    """Resize-18 nearest with sizes z and a keep_aspect_ratio_policy, at run time: the common scale
    ``s = Min`` (not_larger) or ``Max`` (not_smaller) of ``Cast(z_i) / Cast(d_i)`` in float32 over
    the named axes; Resize-13 with scales s on them (1 elsewhere) of X edge-padded to 2·d on them
    (Gather at Range(0, 2·d), past d - 1 at d - 1);
    a Slice cutting each to ``round(s · d)`` (half away from zero: Round, or Ceil at a fraction of
    exactly 0.5). ``floor(s · 2d) = floor(2 · (s · d)) >= round(s · d)``, so the cut output is
    all there; nearest with coordinate mode half_pixel or asymmetric places an output point by
    x and s alone, and a point the original would clamp to d - 1 reads the padding, which is
    the value at d - 1."""
    writer = NodeWriter(node, context)
    count = len(axes)
    shape = writer.add("Shape", [node.input[0]], "input_shape")
    lengths = writer.add("Gather", [shape, writer.int64s("axes", axes)], "axis_lengths")
    lengths_float = writer.add("Cast", [lengths], "axis_lengths_float", to=onnx.TensorProto.FLOAT)
    sizes_float = writer.add("Cast", [inputs[3]], "sizes_float", to=onnx.TensorProto.FLOAT)
    ratios = writer.add("Div", [sizes_float, lengths_float], "ratios")
    each = [writer.add("Gather", [ratios, writer.int64s(f"ratio_{i}", [i])], f"ratio_{i}") for i in range(count)]
    scale = writer.add("Min" if policy == "not_larger" else "Max", each, "policy_scale")
    one, writer_one = _float_constant(context, f"{writer.hint}_scale_one", [1.0])
    writer.nodes.append(one)
    joined = writer.add("Concat", [writer_one, scale], "scales_joined", axis=0)
    in_axes = set(axes)
    spread = writer.int64s("scales_indices", [1 if a in in_axes else 0 for a in range(rank)])
    scales = writer.add("Gather", [joined, spread], "scales")
    # the sizes the policy gives: round half away from zero of s * d, in float32 as onnxruntime does
    product = writer.add("Mul", [scale, lengths_float], "scaled_lengths")
    fraction = writer.add("Sub", [product, writer.add("Floor", [product], "floor")], "fraction")
    half = writer.add("Equal", [fraction, writer.scalar("half", 0.5, onnx.TensorProto.FLOAT)], "at_half")
    rounded = writer.add(
        "Where", [half, writer.add("Ceil", [product], "ceil"), writer.add("Round", [product], "round")], "rounded"
    )
    sizes = writer.add("Cast", [rounded], "policy_sizes", to=onnx.TensorProto.INT64)
    # X edge-padded to 2·d on each named axis: Gather at Range(0, 2·d) with indices past d - 1 at
    # d - 1 (Gather moves bits; Pad on float16 runs in float32 in onnxruntime, quieting a
    # signalling NaN, which its Resize turns into the canonical NaN instead)
    padded = node.input[0]
    for i, axis in enumerate(axes):
        length = writer.add("Gather", [lengths, writer.scalar(f"axis_{i}", i, onnx.TensorProto.INT64)], f"length_{i}")
        last = writer.add("Sub", [length, writer.scalar(f"one_{i}", 1, onnx.TensorProto.INT64)], f"last_{i}")
        doubled = writer.add("Add", [length, length], f"doubled_{i}")
        places = writer.add(
            "Range",
            [
                writer.scalar(f"start_{i}", 0, onnx.TensorProto.INT64),
                doubled,
                writer.scalar(f"step_{i}", 1, onnx.TensorProto.INT64),
            ],
            f"places_{i}",
        )
        inside = writer.add("Less", [places, length], f"inside_{i}")
        indices = writer.add("Where", [inside, places, last], f"indices_{i}")
        padded = writer.add("Gather", [padded, indices], f"padded_{i}", axis=axis)
    resized = context.fresh(f"{writer.hint}_resized")
    del result.input[:]
    result.input.extend([padded, "", scales])
    result.output[0] = resized
    before = writer.nodes
    cut = NodeWriter(node, context)
    cut.last("Slice", [resized, cut.int64s("starts", [0] * count), sizes, cut.int64s("axes", axes)], [node.output[0]])
    return before, result, cut.nodes


def _constant_values(context: AdapterContext, name: str) -> list | None:
    tensor = context.constant_of(name) if name else None
    if tensor is None:
        return None
    try:
        return onnx.numpy_helper.to_array(tensor).reshape(-1).tolist()
    except Exception:  # external data: not a constant this adapter can read
        return None


def _spread_over_every_axis(
    node: onnx.NodeProto, context: AdapterContext, inputs: list[str], axes: list[int], rank: int
) -> list[onnx.NodeProto]:
    """Nodes that spread roi, scales and sizes given along ``axes`` over every axis, in place in
    ``inputs``: an axis not among them keeps its size (scale 1, roi [0, 1], its own length).
    Each becomes ``Gather(Concat(defaults, given), indices)``: pure data movement."""
    hint = node.name or node.output[0]
    made: list[onnx.NodeProto] = []
    where = {axis: i for i, axis in enumerate(axes)}
    count = len(axes)

    def gather(part: str, defaults: str, given: str, indices: list[int]) -> str:
        joined = context.fresh(f"{hint}_{part}_joined")
        made.append(
            helper.make_node("Concat", [defaults, given], [joined], name=context.fresh(f"{hint}_Concat"), axis=0)
        )
        constant, index_name = int64_constant(context, f"{hint}_{part}_indices", indices)
        made.append(constant)
        spread = context.fresh(f"{hint}_{part}")
        made.append(helper.make_node("Gather", [joined, index_name], [spread], name=context.fresh(f"{hint}_Gather")))
        return spread

    mode = _mode(node, context)
    if inputs[1] and mode != "tf_crop_and_resize":
        inputs[1] = ""  # read by tf_crop_and_resize only
    if inputs[1]:
        roi_type = _element_type(context, inputs[1])
        if roi_type is None:
            raise _refused(node, context, f"resizes along axes {axes} with a roi of unknown type")
        name = context.fresh(f"{hint}_roi_defaults")
        value = helper.make_tensor(name, roi_type, [2], [0, 1])
        made.append(helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value))
        starts = [2 + where[a] if a in where else 0 for a in range(rank)]
        ends = [2 + count + where[a] if a in where else 1 for a in range(rank)]
        inputs[1] = gather("roi", name, inputs[1], starts + ends)
    if len(inputs) > 2 and inputs[2]:
        constant, ones = _float_constant(context, f"{hint}_scale_one", [1.0])
        made.append(constant)
        inputs[2] = gather("scales", ones, inputs[2], [1 + where[a] if a in where else 0 for a in range(rank)])
    if len(inputs) > 3 and inputs[3]:
        shape = context.fresh(f"{hint}_input_shape")
        made.append(helper.make_node("Shape", [node.input[0]], [shape], name=context.fresh(f"{hint}_Shape")))
        inputs[3] = gather("sizes", shape, inputs[3], [rank + where[a] if a in where else a for a in range(rank)])
    return made


def _element_type(context: AdapterContext, name: str) -> int | None:
    type_proto = context.type_of(name)
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    return type_proto.tensor_type.elem_type or None


def _float_constant(context: AdapterContext, hint: str, values: list[float]) -> tuple[onnx.NodeProto, str]:
    name = context.fresh(hint)
    value = helper.make_tensor(name, onnx.TensorProto.FLOAT, [len(values)], values)
    return helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value), name


def _empty_float(context: AdapterContext, hint: str) -> tuple[onnx.NodeProto, str]:
    name = context.fresh(hint)
    value = helper.make_tensor(name, onnx.TensorProto.FLOAT, [0], [])
    return helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value), name


# Cases: backend and explicit cases; antialias and half_pixel_symmetric refused; a policy's sizes whose
# rounding Resize-13's floor(scale * d) misses computed at run time (nearest half_pixel/asymmetric)
@adapter(("Resize",), 13, "down", "roi and scales given", versions=(11, 25), reason=RESIZE_13, cases=80)
def optional_inputs_given(node: onnx.NodeProto, context: AdapterContext):
    """Resize-13+(x, roi?, scales?, sizes?) = Resize-11(x, roi or [], scales or [], sizes); 18's attributes at defaults.

    Resize-11 requires roi and scales; Resize-13 lets either be missing. An empty float tensor
    is what Resize-11 reads as no scales ("If 'sizes' is needed, the user must set 'scales' to
    an empty tensor") and roi is read only by coordinate_transformation_mode tf_crop_and_resize
    (refused without one). Every coordinate and nearest mode of 13 exists at 11 (13 only drops
    tf_half_pixel_for_nn). From 18, the node first goes as ``new_attributes_at_defaults_dropped`` says."""
    made: list[onnx.NodeProto] = []
    if schemas.version_in_force("Resize", context.source_opset) >= 18:
        made, node, after = _without_18_attributes(node, context)
    else:
        after = []
    mode = _mode(node, context)
    result = moved(node)
    inputs = list(result.input) + [""] * (3 - len(result.input))
    hint = node.name or node.output[0]
    if not inputs[1]:
        if mode == "tf_crop_and_resize":
            raise _refused(node, context, "has coordinate_transformation_mode tf_crop_and_resize and no roi")
        constant, inputs[1] = _empty_float(context, f"{hint}_roi")
        made.append(constant)
    if not inputs[2]:
        constant, inputs[2] = _empty_float(context, f"{hint}_scales")
        made.append(constant)
    del result.input[:]
    result.input.extend(inputs)
    return [*made, result, *after]


# Cases: as optional_inputs_given
@adapter(("Resize",), 18, "down", "new attributes at defaults", versions=(13, 25), reason=RESIZE_18, cases=80)
def new_attributes_at_defaults_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Resize-18/19(x, r, s, z, axes=a), antialias=0 = Resize-13(x, r, s, z, all axes); policy: s or Slice(Resize).

    Axes naming some axes, or out of order, spread roi, scales and sizes over every axis (an
    axis not named keeps roi [0, 1], scale 1 and its own length): ``Gather(Concat(defaults,
    given), indices)``, pure data movement, so they may be computed at run time; the input's rank
    must be known. ``keep_aspect_ratio_policy`` not_larger/not_smaller with constant sizes and a
    static input shape becomes Resize-13's scales: the common scale ``s = min`` (or ``max``) of
    ``sizes[i] / d[axes[i]]`` in float32 on the named axes, where ``floor(s * d)`` (Resize-13's
    size) is the policy's ``round(s * d)`` on each. Otherwise, in mode nearest with coordinate
    mode half_pixel or asymmetric (which place an output point by its index and s alone), s is
    computed at run time, X edge-padded to 2·d on the named axes by a Gather, resized by s and
    cut to ``round(s · d)`` (half away from zero, as onnxruntime rounds) by a Slice. antialias=1
    (a filter when downscaling), any other policy with sizes known only at run time or whose
    rounding floor misses, and, from 19, coordinate_transformation_mode half_pixel_symmetric
    cannot be said at 13: refused, naming what."""
    made, result, after = _without_18_attributes(node, context)
    return [*made, result, *after]


def _empty_scales_dropped(node: onnx.NodeProto, context: AdapterContext) -> onnx.NodeProto:
    """``node`` moved; where it gives sizes, its scales (empty: Resize-11's way to say none) with
    an empty name instead, as from 13 "it is an error if both are specified". Scales beside
    sizes that are not empty statically (a shape without a 0, or unknown) are refused: Resize-11
    fails on them when it runs, and no newer Resize can hold them."""
    result = moved(node)
    inputs = list(result.input)
    if len(inputs) > 3 and inputs[3] and inputs[2]:
        shape = context.shape_of(inputs[2])
        if shape is None or 0 not in shape:
            said = "of unknown shape" if shape is None else f"of shape {shape}"
            raise _refused(
                node,
                context,
                f"gives sizes '{inputs[3]}' beside scales '{inputs[2]}' {said}, which must be empty there and "
                "cannot be given beside sizes from version 13",
            )
        result.input[2] = ""
    return result


# Cases: the same cases taken down to 11 (or 13) and back up; tf_half_pixel_for_nn refused (its own test)
@adapter(("Resize",), 13, "up", "as it is", versions=(11, 25), cases=80)
def resize_11_as_it_is(node: onnx.NodeProto, context: AdapterContext):
    """Resize-11(x, r, s, z) = Resize-13+(x, r, s, z) in every coordinate mode but tf_half_pixel_for_nn.

    Version 13 drops tf_half_pixel_for_nn and makes roi and scales optional; every other
    coordinate mode reads the same points, and 18's attributes at their defaults (antialias 0,
    every axis, stretch) are 13's behaviour. Scales of static shape [0] beside sizes go as no
    scales (13's empty name), others beside sizes are refused. tf_half_pixel_for_nn is refused:
    half_pixel reads each point ``(x + 0.5) / s`` half a pixel lower, and a nearest rounding of
    that picks the same input in real numbers (``ceil`` for round_prefer_floor), but not in
    onnxruntime, whose float evaluation of the two modes rounds points landing on a half pixel
    otherwise (measured: 26 points from 10, the 20th)."""
    if _mode(node, context) == "tf_half_pixel_for_nn":
        raise _refused(
            node,
            context,
            "uses coordinate_transformation_mode tf_half_pixel_for_nn, which version 13 drops, and no mode there "
            "picks the same input for every point (half_pixel with a nearest rounding one lower does in real "
            "numbers, not in onnxruntime's float evaluation at points on a half pixel)",
        )
    return [_empty_scales_dropped(node, context)]


# Cases: as resize_11_as_it_is
@adapter(("Resize",), 18, "up", "new attributes at defaults", versions=(13, 25), cases=80)
def new_attributes_left_at_defaults(node: onnx.NodeProto, context: AdapterContext):
    """Resize-13(x, r, s, z) = Resize-18+(x, r, s, z) with antialias=0, every axis and keep_aspect_ratio_policy=stretch.

    Version 18's new attributes are left at their defaults, which are version 13's behaviour:
    no antialiasing, roi, scales and sizes over every axis, the sizes taken as they are. Scales
    of static shape [0] beside sizes go as no scales (13's empty name), others are refused."""
    return [_empty_scales_dropped(node, context)]
