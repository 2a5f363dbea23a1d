"""RoiAlign going below version 16 (coordinate_transformation_mode): output_half_pixel is the old
behaviour; half_pixel is refused."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, moved, require_types_taken, text_attribute
from lowering.errors import NotLowered

ROI_ALIGN_16 = "version 16's default coordinate_transformation_mode (half_pixel) is not the old behaviour"


# Cases: none: see ORACLE_GAPS in tests/rules/versions/test_adapter_registry.py;
# tests/rules/versions/test_adapters_training.py compares it
@adapter(("RoiAlign",), 16, "down", "output_half_pixel", versions=(10, 22), reason=ROI_ALIGN_16, cases=0)
def output_half_pixel_dropped(node: onnx.NodeProto, context: AdapterContext):
    """RoiAlign-16/22(X, rois, i, coordinate_transformation_mode=output_half_pixel) = RoiAlign-10(X, rois, i).

    ``output_half_pixel`` is RoiAlign-10's behaviour (no pixel shift, rois narrower than one
    pixel stretched to one). ``half_pixel`` (the default from 16) shifts the scaled rois by -0.5
    and keeps narrow rois as they are: shifting the rois input by ``-0.5 / spatial_scale``
    rounds differently unless the scale is a power of two, and cannot undo RoiAlign-10's
    stretching of narrow rois, whose widths are known only at run time: refused."""
    version = schemas.version_in_force("RoiAlign", context.source_opset)
    mode = text_attribute(node, "coordinate_transformation_mode", context.source_opset)
    if mode != "output_half_pixel":
        raise NotLowered(
            f"RoiAlign-{version} with coordinate_transformation_mode {mode} cannot go to opset "
            f"{context.target_opset}: RoiAlign-10 knows only output_half_pixel, and shifting the rois by half a "
            f"pixel does not say {mode} exactly (it stretches rois narrower than a pixel) ({ROI_ALIGN_16})"
        )
    require_types_taken(node, context)
    return [moved(node, dropped=("coordinate_transformation_mode",))]
