"""Upsample and Resize-10 going up: to Resize-10, or to Resize-11 and newer with the coordinate
and nearest modes that say what Resize-10 and Upsample did (asymmetric; floor up, ceil down)."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, known_change, moved, text_attribute
from lowering.errors import NotLowered

RESIZE_11 = (
    "version 11 adds roi and the coordinate and nearest modes, whose defaults (half_pixel, round_prefer_floor) "
    "are not version 10's asymmetric mapping with its nearest pixel (floor upsampling, ceil downsampling)"
)
UPSAMPLE_10 = "Upsample is deprecated from version 10, where Resize replaces it"
known_change(("Upsample",), 10, UPSAMPLE_10)


def _scales(node: onnx.NodeProto, context: AdapterContext) -> list[float] | None:
    """The scales of a Upsample-7 (attribute) or Upsample-9/Resize-10 (constant input), None when
    they are computed at run time."""
    if len(node.input) < 2:
        value = attribute_of(node, "scales")
        return None if value is None else [float(v) for v in value]
    tensor = context.constant_of(node.input[1])
    if tensor is None:
        return None
    try:
        return [float(v) for v in onnx.numpy_helper.to_array(tensor).reshape(-1)]
    except Exception:  # external data: not a constant this adapter can read
        return None


def _as_resize(node: onnx.NodeProto, context: AdapterContext, what: str, upsampling: bool) -> list[onnx.NodeProto]:
    """The Resize at the target opset that means ``node`` (a Resize-10 or an Upsample-7/9):
    Resize-10 itself at opset 10; from 11 ``coordinate_transformation_mode=asymmetric`` and, for
    nearest, ``nearest_mode`` floor where every scale is at least 1 and ceil where every scale is
    at most 1 (Resize-10's nearest pixel), roi empty at 11 and 12."""
    b = context.builder(node)
    scales = node.input[1] if len(node.input) > 1 else ""
    values = _scales(node, context)
    if not scales:  # Upsample-7: the scales attribute as a constant input
        if values is None:
            raise NotLowered(f"{what} has no scales, so it cannot go to opset {context.target_opset}")
        scales = b.tensor(np.array(values, dtype=np.float32), "scales").name
    mode = text_attribute(node, "mode", context.source_opset)
    if mode not in ("nearest", "linear"):
        raise NotLowered(
            f"{what} has mode {mode!r}, which Resize does not have, so it cannot go to opset {context.target_opset}"
        )
    attributes: dict = {"mode": mode}
    inputs = [node.input[0], scales]
    resize = schemas.schema_in_force("Resize", context.target_opset)
    if "coordinate_transformation_mode" in resize.attributes:  # from Resize-11 (onnx.defs)
        attributes["coordinate_transformation_mode"] = "asymmetric"
        if mode == "nearest":
            attributes["nearest_mode"] = _nearest_mode(node, context, what, values, upsampling)
        roi = ""
        if _roi_required(resize):  # Resize-11 requires roi, read by tf_crop_and_resize only
            roi = b.tensor(np.zeros(0, dtype=np.float32), "roi").name
        inputs = [node.input[0], roi, scales]
    # the node itself (its name, its outputs) as that Resize, with only the attributes set here
    resized = b.moved(node, inputs=inputs, dropped=tuple(a.name for a in node.attribute), **attributes)
    resized.op_type = "Resize"
    return b.nodes


def _roi_required(resize: onnx.defs.OpSchema) -> bool:
    """The Resize version requires its roi input (11 and 12; optional from 13, onnx.defs)."""
    (roi,) = [formal for formal in resize.inputs if formal.name == "roi"]
    return roi.option == onnx.defs.OpSchema.FormalParameterOption.Single


def _nearest_mode(node, context: AdapterContext, what: str, values: list[float] | None, upsampling: bool) -> str:
    """floor where no scale is below 1 (upsampling), ceil where none is above 1: Resize-10 rounds
    the source coordinate ``x / scale`` down when upsampling and up when downsampling."""
    if upsampling:  # Upsample takes scales of at least 1 only
        return "floor"
    if values is None:
        raise NotLowered(
            f"{what} with mode nearest takes its scales from '{node.input[1]}', computed at run "
            f"time, and rounds up or down by whether each is below 1, so it cannot go to opset {context.target_opset}"
        )
    if all(v >= 1 for v in values):
        return "floor"
    if all(v <= 1 for v in values):
        return "ceil"
    raise NotLowered(
        f"{what} with mode nearest upsamples some axes and downsamples others (scales {values}), "
        f"rounding down on the first and up on the second, which one nearest_mode cannot say, so it cannot go to "
        f"opset {context.target_opset}"
    )


# Cases: the explicit cases: the backend's Resize cases are at 19
@adapter(("Resize",), 11, "up", "asymmetric modes", versions=(10, 19), reason=RESIZE_11, cases=4)
def version_10_modes_spelled_out(node: onnx.NodeProto, context: AdapterContext):
    """Resize-10(x, s, mode=m) = Resize-11+(x, [], s, mode=m, asymmetric, nearest_mode floor if s >= 1, ceil if s <= 1).

    Resize-10 maps an output coordinate to ``x / scale`` (Resize-11's ``asymmetric``) and takes
    the pixel below it when upsampling, above it when downsampling (onnxruntime's kernel and the
    Resize-10 backend cases: ``test_resize_downsample_nearest``); Resize-11's defaults are
    half_pixel and round_prefer_floor. With mode nearest the scales must be constant and all on
    one side of 1: refused otherwise. roi is an empty tensor at 11 and 12, missing from 13."""
    return _as_resize(node, context, "Resize-10", upsampling=False)


@adapter(("Upsample",), 10, "up", "Resize", versions=(7, 10), cases=10, replaced_by=("Resize",))
def upsample_as_resize(node: onnx.NodeProto, context: AdapterContext):
    """Upsample-7/9(x, s, mode=m) = Resize-10(x, s, mode=m); from 11 Resize(x, [], s, m, asymmetric, floor).

    Upsample maps an output coordinate to ``x / scale`` and, with mode nearest, takes the pixel
    below it (its scales are at least 1): Resize-10 as it is, or from opset 11 Resize with
    ``coordinate_transformation_mode=asymmetric`` and ``nearest_mode=floor`` (onnx's converter
    leaves Resize-11's defaults, half_pixel and round_prefer_floor, which mean other pixels).
    Upsample-7's scales attribute becomes a constant input."""
    version = schemas.version_in_force("Upsample", context.source_opset)
    return _as_resize(moved(node), context, f"Upsample-{version}", upsampling=True)
