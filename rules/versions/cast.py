"""Cast across versions 19 (saturate) and 24 (round_mode), down where they do not apply."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, attribute_of, known_change, moved
from lowering.errors import NotLowered

CAST_19 = "version 19 adds saturate, which applies only to conversions to float8 types"
CAST_24 = "version 24 adds round_mode, which applies only to conversions to float8e8m0"
known_change(("Cast",), 19, CAST_19, down_only=True, affects=HeldAttributes.added_at(19, "Cast"))
known_change(("Cast",), 24, CAST_24, down_only=True, affects=HeldAttributes.added_at(24, "Cast"))


@adapter(("Cast",), 19, "down", "saturate dropped", versions=(6, 25), cases=14)
def saturate_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Cast-19+(x, to=t, saturate=s) = Cast-6/13(x, to=t) where t is no float8 type.

    ``saturate`` (from 19) only says how values out of a float8 type's range convert, and
    ``round_mode`` (from 24) only how values round to float8e8m0: for any other ``to`` neither
    changes the result, so both are dropped. Casts to float8 types have no older version
    (those types appear at 19): refused."""
    to = attribute_of(node, "to")
    # Every float8 type appears at 19, so a target below 19 has none of them (onnx.defs says
    # which types the target's Cast makes): a cast to float8, or to a type added later, is refused.
    if to not in schemas.output_element_types("Cast", context.target_opset):
        raise NotLowered(
            f"Cast to {schemas.type_name(to)} cannot go to opset {context.target_opset}, whose Cast has no such type"
        )
    return [moved(node, dropped=("saturate", "round_mode"))]
