"""Resize going down: to 13 across 18 (antialias, axes, keep_aspect_ratio_policy at their
defaults dropped) and to 11/12 across 13 (roi and scales given as empty tensors)."""

from __future__ import annotations

import onnx
from onnx import helper

from lowering import schemas
from lowering.adapters import AdapterContext, adapter, attribute_in, attribute_of, known_change, moved
from lowering.errors import LoweringError

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


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> LoweringError:
    version = schemas.version_in_force("Resize", context.source_opset)
    return LoweringError(f"{context.location}: Resize-{version} {why}, so it cannot go to opset {context.target_opset}")


def _without_18_attributes(node: onnx.NodeProto, context: AdapterContext) -> onnx.NodeProto:
    """The node without Resize-18/19's attributes, where they say what Resize-13 says; a refusal
    naming what cannot be said before 18 otherwise (and half_pixel_symmetric before 19)."""
    if _text(attribute_of(node, "coordinate_transformation_mode")) == "half_pixel_symmetric":
        raise _refused(node, context, "uses coordinate_transformation_mode half_pixel_symmetric (from version 19)")
    if attribute_of(node, "antialias"):
        raise _refused(node, context, "filters with antialias=1 (from version 18)")
    policy = _text(attribute_of(node, "keep_aspect_ratio_policy")) or "stretch"
    if policy != "stretch":  # with sizes; onnx refuses it with scales
        raise _refused(node, context, f"keeps the aspect ratio of its sizes ({policy}, from version 18)")
    axes = attribute_of(node, "axes")
    if axes is not None:
        rank = context.rank_of(node.input[0])
        if rank is None or [a + rank if a < 0 else a for a in axes] != list(range(rank)):
            covered = "of unknown rank" if rank is None else f"of rank {rank}"
            raise _refused(
                node, context, f"resizes along axes {list(axes)} of an input {covered}, not every axis in order"
            )
    return moved(node, dropped=NEW_AT_18)


def _empty_float(context: AdapterContext, hint: str) -> tuple[onnx.NodeProto, str]:
    name = context.fresh(hint)
    value = helper.make_tensor(name, onnx.TensorProto.FLOAT, [0], [])
    return helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value), name


@adapter(("Resize",), 13, "down", "roi and scales given", versions=(11, 25), reason=RESIZE_13)
def optional_inputs_given(node: onnx.NodeProto, context: AdapterContext):
    """Resize-13+(x, roi?, scales?, sizes?) = Resize-11(x, roi or [], scales or [], sizes); 18's attributes at defaults.

    Resize-11 requires roi and scales; Resize-13 lets either be missing. An empty float tensor
    is what Resize-11 reads as no scales ("If 'sizes' is needed, the user must set 'scales' to
    an empty tensor") and roi is read only by coordinate_transformation_mode tf_crop_and_resize
    (refused without one). Every coordinate and nearest mode of 13 exists at 11 (13 only drops
    tf_half_pixel_for_nn). From 18, the node first goes as ``new_attributes_at_defaults_dropped`` says."""
    if schemas.version_in_force("Resize", context.source_opset) >= 18:
        node = _without_18_attributes(node, context)
    mode = _text(attribute_of(node, "coordinate_transformation_mode"))
    made: list[onnx.NodeProto] = []
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
    return [*made, result]


@adapter(("Resize",), 18, "down", "new attributes at defaults", versions=(13, 25), reason=RESIZE_18)
def new_attributes_at_defaults_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Resize-18/19(x, r, s, z), antialias=0, axes all in order, policy stretch = Resize-13(x, r, s, z).

    antialias=1 (a filter when downscaling), axes naming some axes or out of order (the inputs'
    lengths follow them), keep_aspect_ratio_policy not_larger/not_smaller (onnx allows them only
    with sizes) and, from 19, coordinate_transformation_mode half_pixel_symmetric cannot be said
    at 13: refused, naming what. Axes are compared with the input's rank, which must be known."""
    return [_without_18_attributes(node, context)]
