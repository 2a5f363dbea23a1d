"""Resize going down: to 13 across 18 (antialias at its default dropped, axes spread over every
axis, keep_aspect_ratio_policy as one common scale, constant or computed at run time) and to
11/12 across 13 (roi and scales given as empty tensors); and up across 13 and 18 as it is
(tf_half_pixel_for_nn refused)."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.builder import Builder, Value
from lowering.conversion.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    attribute_of,
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


# Where a policy's sizes are computed at run time: those sizes, and the axes the Resize's output is cut along.
_Cut = tuple[Value, list[int]]


def _without_18_attributes(b: Builder, node: onnx.NodeProto, context: AdapterContext) -> tuple[list[str], _Cut | None]:
    """The inputs of the node without Resize-18/19's attributes, where they say what Resize-13
    says, after ``b`` holds the nodes that spread its roi, scales and sizes over every axis (or
    compute a policy's scale and pad its input), and the cut of its output (a policy's sizes,
    :func:`_resized`); a refusal naming what cannot be said before 18 otherwise (and
    half_pixel_symmetric before 19)."""
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
    inputs = list(node.input) + [""] * (4 - len(node.input))
    mode = _mode(node, context)
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
            return _policy_at_run_time(b, node, context, inputs, policy_axes, rank, policy)
        inputs[2] = _floats(b, scales, "scales").name
        inputs[1] = inputs[3] = ""  # roi is read by tf_crop_and_resize only
    elif axes is not None and axes != list(range(rank)):
        _spread_over_every_axis(b, node, context, inputs, axes, rank)
    while inputs and not inputs[-1]:
        inputs.pop()
    return inputs, None


def _resized(b: Builder, node: onnx.NodeProto, inputs: list[str], cut: _Cut | None, dropped: tuple[str, ...]) -> None:
    """Emit the node itself, reading ``inputs``, without the attributes in ``dropped``; where a
    policy's sizes are computed at run time, writing a fresh value that
    ``Slice(resized, 0, sizes, axes)`` cuts to the node's output."""
    if cut is None:
        b.moved(node, inputs=inputs, dropped=dropped)
        return
    sizes, axes = cut
    resized = b.moved(node, inputs=inputs, outputs=[b.fresh("resized")], dropped=dropped)
    b.Slice(resized.output[0], b.ints([0] * len(axes), "starts"), sizes, b.ints(axes, "axes"), outputs=[node.output[0]])


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
    b: Builder,
    node: onnx.NodeProto,
    context: AdapterContext,
    inputs: list[str],
    axes: list[int],
    rank: int,
    policy: str,
) -> tuple[list[str], _Cut]:
    """Resize-18 nearest with sizes z and a keep_aspect_ratio_policy, at run time: the common scale
    ``s = Min`` (not_larger) or ``Max`` (not_smaller) of ``Cast(z_i) / Cast(d_i)`` in float32 over
    the named axes; Resize-13 with scales s on them (1 elsewhere) of X edge-padded to 2·d on them
    (Gather at Range(0, 2·d), past d - 1 at d - 1);
    a Slice cutting each to ``round(s · d)`` (half away from zero: Round, or Ceil at a fraction of
    exactly 0.5). ``floor(s · 2d) = floor(2 · (s · d)) >= round(s · d)``, so the cut output is
    all there; nearest with coordinate mode half_pixel or asymmetric places an output point by
    x and s alone, and a point the original would clamp to d - 1 reads the padding, which is
    the value at d - 1."""
    count = len(axes)
    lengths = b.Gather(b.Shape(node.input[0]), b.ints(axes, "axes"))
    lengths_float = b.Cast(lengths, to=onnx.TensorProto.FLOAT)
    sizes_float = b.Cast(inputs[3], to=onnx.TensorProto.FLOAT)
    ratios = b.Div(sizes_float, lengths_float)
    each = [b.Gather(ratios, b.ints([i], f"ratio_{i}")) for i in range(count)]
    scale = b.op("Min" if policy == "not_larger" else "Max", *each)
    joined = b.Concat(_floats(b, [1.0], "scale_one"), scale, axis=0)
    in_axes = set(axes)
    scales = b.Gather(joined, b.ints([1 if a in in_axes else 0 for a in range(rank)], "scales_indices"))
    # the sizes the policy gives: round half away from zero of s * d, in float32 as onnxruntime does
    product = b.Mul(scale, lengths_float)
    fraction = b.Sub(product, b.Floor(product))
    half = b.Equal(fraction, b.scalar(0.5, onnx.TensorProto.FLOAT, "half"))
    sizes = b.Cast(b.Where(half, b.Ceil(product), b.Round(product)), to=onnx.TensorProto.INT64)
    # X edge-padded to 2·d on each named axis: Gather at Range(0, 2·d) with indices past d - 1 at
    # d - 1 (Gather moves bits; Pad on float16 runs in float32 in onnxruntime, quieting a
    # signalling NaN, which its Resize turns into the canonical NaN instead)
    int64 = onnx.TensorProto.INT64
    padded = Value(node.input[0], None)
    for i, axis in enumerate(axes):
        length = b.Gather(lengths, b.scalar(i, int64, f"axis_{i}"))
        last = b.Sub(length, b.scalar(1, int64, f"one_{i}"))
        doubled = b.Add(length, length)
        places = b.Range(b.scalar(0, int64, f"start_{i}"), doubled, b.scalar(1, int64, f"step_{i}"))
        inside = b.Less(places, length)
        padded = b.Gather(padded, b.Where(inside, places, last), axis=axis)
    return [padded.name, "", scales.name], (sizes, axes)


def _constant_values(context: AdapterContext, name: str) -> list | None:
    tensor = context.constant_of(name) if name else None
    if tensor is None:
        return None
    try:
        return onnx.numpy_helper.to_array(tensor).reshape(-1).tolist()
    except Exception:  # external data: not a constant this adapter can read
        return None


def _spread_over_every_axis(
    b: Builder, node: onnx.NodeProto, context: AdapterContext, inputs: list[str], axes: list[int], rank: int
) -> None:
    """Nodes that spread roi, scales and sizes given along ``axes`` over every axis, in place in
    ``inputs``: an axis not among them keeps its size (scale 1, roi [0, 1], its own length).
    Each becomes ``Gather(Concat(defaults, given), indices)``: pure data movement."""
    where = {axis: i for i, axis in enumerate(axes)}
    count = len(axes)

    def gather(part: str, defaults: Value, given: str, indices: list[int]) -> str:
        return b.Gather(b.Concat(defaults, given, axis=0), b.ints(indices, f"{part}_indices")).name

    mode = _mode(node, context)
    if inputs[1] and mode != "tf_crop_and_resize":
        inputs[1] = ""  # read by tf_crop_and_resize only
    if inputs[1]:
        roi_type = _element_type(context, inputs[1])
        if roi_type is None:
            raise _refused(node, context, f"resizes along axes {axes} with a roi of unknown type")
        defaults = b.tensor(np.array([0, 1], dtype=floats.numpy_dtype(roi_type)), "roi_defaults")
        starts = [2 + where[a] if a in where else 0 for a in range(rank)]
        ends = [2 + count + where[a] if a in where else 1 for a in range(rank)]
        inputs[1] = gather("roi", defaults, inputs[1], starts + ends)
    if len(inputs) > 2 and inputs[2]:
        ones = _floats(b, [1.0], "scale_one")
        inputs[2] = gather("scales", ones, inputs[2], [1 + where[a] if a in where else 0 for a in range(rank)])
    if len(inputs) > 3 and inputs[3]:
        shape = b.Shape(node.input[0])
        inputs[3] = gather("sizes", shape, inputs[3], [rank + where[a] if a in where else a for a in range(rank)])


def _element_type(context: AdapterContext, name: str) -> int | None:
    type_proto = context.inferred_type_of(name)
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    return type_proto.tensor_type.elem_type or None


def _floats(b: Builder, values: list[float], hint: str) -> Value:
    """A 1-D float32 constant holding ``values`` (scales, an empty roi), made for this node."""
    return b.tensor(np.array(values, dtype=np.float32), hint)


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
    b = context.builder(node)
    if schemas.version_in_force("Resize", context.source_opset) >= 18:
        inputs, cut = _without_18_attributes(b, node, context)
        dropped = NEW_AT_18
    else:
        inputs, cut, dropped = list(node.input), None, ()
    mode = _mode(node, context)
    inputs += [""] * (3 - len(inputs))
    if not inputs[1]:
        if mode == "tf_crop_and_resize":
            raise _refused(node, context, "has coordinate_transformation_mode tf_crop_and_resize and no roi")
        inputs[1] = _floats(b, [], "roi").name
    if not inputs[2]:
        inputs[2] = _floats(b, [], "scales").name
    _resized(b, node, inputs, cut, dropped)
    return b.nodes


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
    b = context.builder(node)
    inputs, cut = _without_18_attributes(b, node, context)
    _resized(b, node, inputs, cut, NEW_AT_18)
    return b.nodes


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
