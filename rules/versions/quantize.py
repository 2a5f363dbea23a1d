"""QuantizeLinear and DequantizeLinear across version 13, with a per-tensor scale."""

from __future__ import annotations

import onnx

from lowering.adapters import AdapterContext, adapter, moved
from lowering.errors import LoweringError

QUANTIZE_13 = "version 13 takes a scale and zero point per slice along axis; version 10 only scalars"


@adapter(("QuantizeLinear", "DequantizeLinear"), 13, "down", "per-tensor scale", versions=(10, 13), reason=QUANTIZE_13)
def per_tensor_scale_kept(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-13(x, s, z), s scalar = QuantizeLinear-10(x, s, z); likewise DequantizeLinear.

    ``QuantizeLinear-13(x, s, z)`` with a scalar scale = ``QuantizeLinear-10(x, s, z)`` (``axis``,
    which a scalar scale leaves unused, dropped); likewise DequantizeLinear. A scale of any other
    shape quantizes per slice, which version 10 cannot say: refused."""
    scale = context.shape_of(node.input[1]) if len(node.input) > 1 else None
    if scale != []:
        raise LoweringError(
            f"{context.location}: {node.op_type} with a scale of shape {scale} cannot go to opset "
            f"{context.target_opset} ({QUANTIZE_13}); only a scalar scale can"
        )
    result = moved(node, dropped=("axis",))
    return [result]
