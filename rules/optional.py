"""OptionalHasElement and OptionalGetElement resolved where the graph decides the optional."""

from __future__ import annotations

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule
from lowering.schemas import op_versions


@rule("OptionalHasElement", versions=(15, 18, 28), emits=("Constant", "Identity", "If outputs"))
def has_element_where_decided(b: Builder, optional: Value | None = None) -> Value:
    """OptionalHasElement(Optional(x)) = true; OptionalHasElement(Optional()) = false;
    a plain tensor or sequence (from 18) = true; no input (from 18) = false;
    an optional out of an If = the bool flag the If now yields beside it."""
    if optional is None:
        return b.constant_bool(False)
    decided = b.decide_optional(optional)
    return b.constant_bool(decided.has_element)


@rule("OptionalGetElement", versions=op_versions("OptionalGetElement"), emits=("Identity", "If outputs"))
def element_where_decided(b: Builder, optional: Value) -> Value:
    """OptionalGetElement(Optional(x)) = x; a plain tensor or sequence (from 18) = itself;
    an optional out of an If = the plain value the If now yields beside its flag
    (a placeholder where the optional is empty, never read: that read fails in the original)."""
    decided = b.decide_optional(optional)
    if decided.element is None:
        raise NotLowered("the optional is always empty here, so reading it fails in the original model too")
    if decided.element.type is not None:  # the element reaches the node's output through an Identity
        element = schemas.type_string(decided.element.type)
        if element not in schemas.input_type_strings("Identity", b.opset, 0):
            raise NotLowered(
                f"its element is {element}, which Identity, passing it on, does not take at opset {b.opset}"
            )
    return decided.element
