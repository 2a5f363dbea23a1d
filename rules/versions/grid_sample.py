"""GridSample going down across version 20: the modes renamed back, on 4-D inputs only."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, moved, require_types_taken, text_attribute
from lowering.errors import NotLowered

GRID_SAMPLE_20 = "version 20 renames the modes (bilinear → linear, bicubic → cubic) and goes N-D"

# Version 20's mode names and what version 16 calls the same interpolation on a 4-D input.
MODES_AT_16 = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


# Cases: backend and explicit float16 cases; 5-D (volumetric) refused
@adapter(("GridSample",), 20, "down", "modes renamed", versions=(16, 22), reason=GRID_SAMPLE_20, cases=34)
def modes_renamed_on_4d(node: onnx.NodeProto, context: AdapterContext):
    """GridSample-20/22(X, g, mode=linear|nearest|cubic), X 4-D = GridSample-16(X, g, mode=bilinear|nearest|bicubic).

    Version 20 generalizes GridSample to N-D inputs and renames its modes; on a 4-D input (N, C,
    H, W) with a 4-D grid (N, H_out, W_out, 2) ``linear``, ``nearest`` and ``cubic`` are version
    16's ``bilinear``, ``nearest`` and ``bicubic``. ``padding_mode`` (zeros, border, reflection)
    and ``align_corners`` mean the same in both and are kept; version 22 only adds bfloat16. An
    input of another rank (volumetric, 5-D) or of unknown rank, and bfloat16 values, cannot be
    said at 16: refused here, and the driver then lowers the node by the GridSample rule
    (rules/gridsample.py), which needs the rank known."""
    version = schemas.version_in_force("GridSample", context.source_opset)
    older = f"GridSample-{schemas.version_in_force('GridSample', context.target_opset)}"
    where = f"GridSample-{version}"
    ranks = {rank for rank in (context.rank_of(node.input[0]), context.rank_of(node.input[1])) if rank is not None}
    if ranks != {4}:
        what = "of unknown rank" if not ranks else f"of rank {max(ranks)}"
        raise NotLowered(
            f"{where} samples an input {what}; {older} at opset {context.target_opset} samples only 4-D "
            f"inputs, so it cannot go to opset {context.target_opset}"
        )
    require_types_taken(node, context, unknown_refused=True)
    mode = text_attribute(node, "mode", context.source_opset)
    if mode not in MODES_AT_16:
        raise NotLowered(
            f"{where} has mode {mode!r}, which {older} lacks, so it cannot go to opset {context.target_opset}"
        )
    return [moved(node, mode=MODES_AT_16[mode])]


# Version 16's mode names and what version 20 calls the same interpolation.
MODES_AT_20 = {named_at_16: mode for mode, named_at_16 in MODES_AT_16.items()}


# Cases: the same 4-D cases going back up (5-D ones were lowered by the rule going down)
@adapter(("GridSample",), 20, "up", "modes renamed", versions=(16, 22), cases=34)
def modes_renamed_forward(node: onnx.NodeProto, context: AdapterContext):
    """GridSample-16(X, g, mode=bilinear|nearest|bicubic) = GridSample-20/22(X, g, mode=linear|nearest|cubic).

    Every node version 16 takes (4-D X and grid) is one of version 20's, under the new mode
    names; ``padding_mode`` and ``align_corners`` mean the same and are kept. (onnx's converter
    renames bilinear and bicubic, but gives a nearest node back as it is, which a known change
    of the step then refuses.)"""
    mode = text_attribute(node, "mode", context.source_opset)
    if mode not in MODES_AT_20:
        raise NotLowered(f"GridSample-16 has mode {mode!r}, which it does not define; the model is invalid")
    return [moved(node, mode=MODES_AT_20[mode])]
