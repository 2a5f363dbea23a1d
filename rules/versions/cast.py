"""Cast down across versions 13 (integers out of range wrap), 19 (saturate) and 24 (round_mode)."""

from __future__ import annotations

import onnx

from lowering import floats, schemas
from lowering.builder import Value
from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, attribute_of, known_change, moved
from lowering.errors import NotLowered
from lowering.integer_casts import WRAPPING_CAST_OPSET, may_wrap, wrapped_cast

CAST_13 = (
    "version 13 defines a Cast from an integer type to another of a value out of the target's range: it discards "
    "the higher bits (two's complement); before, the result is undefined"
)
CAST_19 = "version 19 adds saturate, which applies only to conversions to float8 types"
CAST_24 = "version 24 adds round_mode, which applies only to conversions to float8e8m0"
known_change(("Cast",), 19, CAST_19, down_only=True, affects=HeldAttributes.added_at(19, "Cast"))
known_change(("Cast",), 24, CAST_24, down_only=True, affects=HeldAttributes.added_at(24, "Cast"))


def _to_an_integer(node: onnx.NodeProto) -> bool:
    """A Cast to an integer type (from an integer type, whose values may lie out of its range;
    the adapter reads which)."""
    return floats.is_integer(attribute_of(node, "to"))


known_change(("Cast",), WRAPPING_CAST_OPSET, CAST_13, down_only=True, affects=_to_an_integer)


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


# Cases: the backend's Cast cases (float, string and bool ones: moved as they are) and the integer
# ones tests/rules/versions/test_adapter_registry.py builds (every pair of integer types)
@adapter(("Cast",), WRAPPING_CAST_OPSET, "down", "wraparound written", versions=(6, 25), cases=114)
def wraparound_written(node: onnx.NodeProto, context: AdapterContext):
    """Cast-13+(x, to=T) of an integer type S not within T's range = Cast-6/9(w, T), w in T's range ≡ x (mod 2^n).

    From version 13 a Cast between integer types gives the value of T congruent to x modulo 2^n
    (n T's bits); before, a value out of T's range casts to what no version defines. So w is
    computed first (:func:`lowering.integer_casts.wrapped_cast`: with Mod in a signed carrier, or
    Div, Mul and Sub below opset 10), and the older Cast is given only values T holds. Refused
    where T has 64 bits and S does not fit it (no carrier holds 2^64), or S is not known. Any
    other Cast moves as :func:`saturate_dropped` moves it."""
    kept = saturate_dropped(node, context)
    to = attribute_of(node, "to")
    type_proto = context.inferred_type_of(node.input[0])
    source = type_proto.tensor_type.elem_type if type_proto is not None and type_proto.HasField("tensor_type") else None
    if source is None and floats.is_integer(to):
        raise NotLowered(
            f"Cast to {schemas.type_name(to)} cannot go to opset {context.target_opset}: its input's type is not "
            f"known, and below opset {WRAPPING_CAST_OPSET} an integer out of the target's range casts to what no "
            "version defines"
        )
    if not may_wrap(source, to):
        return kept
    b = context.builder(node)
    try:
        wrapped_cast(b, Value(node.input[0], source), source, to, outputs=list(node.output))
    except NotLowered as why:
        raise NotLowered(f"Cast to {schemas.type_name(to)} cannot go to opset {context.target_opset}: {why}") from None
    return b.nodes
