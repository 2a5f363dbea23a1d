"""Reshape across version 14 (allowzero), down where allowzero adds nothing."""

from __future__ import annotations

import onnx

from lowering.adapters import AdapterContext, adapter, attribute_of, constant_ints, known_change, moved
from lowering.errors import LoweringError

RESHAPE_14 = "version 14 adds allowzero: with allowzero=1 a 0 in the shape means size 0, not 'copy this dimension'"
known_change(
    ("Reshape",), 14, RESHAPE_14, down_only=True, affects=lambda node: attribute_of(node, "allowzero") is not None
)


@adapter(("Reshape",), 14, "down", "allowzero dropped", versions=(5, 25))
def allowzero_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Reshape-14(x, s, allowzero=0, or 1 with s constant and free of 0) = Reshape-5/13(x, s).

    ``Reshape-14(x, s, allowzero=0)`` = ``Reshape-5/13(x, s)``: a 0 in ``s`` copies that dimension
    in both. ``allowzero=1`` means the same where ``s`` is a constant holding no 0; otherwise the
    older versions cannot say it: refused."""
    if attribute_of(node, "allowzero"):
        shape = constant_ints(node, context)
        if shape is None or 0 in shape:
            raise LoweringError(
                f"{context.location}: Reshape-14 with allowzero=1 and a shape that is computed at run time or "
                f"holds a 0 cannot go to opset {context.target_opset} ({RESHAPE_14})"
            )
    result = moved(node, dropped=("allowzero",))
    return [result]
