"""Running a decomposition rule on one node: its inputs as Values, its attributes as keyword
arguments, the rule's result bound to the node's own outputs."""

from __future__ import annotations

import onnx
from onnx import helper

from . import schemas
from .builder import Builder, Value
from .declared_types import element_type_of, type_string
from .errors import LoweringError, NotLowered
from .graphs import every_node, without_unread
from .registry import Rule
from .scopes import Scope


def input_value(scope: Scope, name: str, reader: int | None = None) -> Value | None:
    """The node input ``name`` as the rule sees it; NotLowered where its type is unknown."""
    if name == "":
        return None
    type_proto = scope.type_of(name, reader)
    if type_proto is None or schemas.type_string(type_proto) == "unknown":
        reason = f"the type of input '{name}' is unknown"
        if scope.unknown_types_reason:
            reason += f" ({scope.unknown_types_reason})"
        raise NotLowered(reason)
    return Value(name, element_type_of(type_proto), type_proto)


def type_key(scope: Scope, name: str, index: int) -> str | None:
    """The schema spelling of an input's type (None for a missing input); NotLowered when it
    is unknown. Remembered per scope."""
    if name == "":
        return None
    found = scope.type_strings.get(name)
    if found is None:
        type_proto = scope.type_of(name, index)
        found = type_string(type_proto) if type_proto is not None else "unknown"
        if found == "unknown":
            input_value(scope, name, index)  # raises, saying why
        scope.type_strings[name] = found
    return found


def rule_attributes(rule: Rule, node: onnx.NodeProto, location: str) -> dict[str, object]:
    """The node's attributes as the rule's keyword arguments."""
    known = rule.attribute_defaults
    attributes: dict[str, object] = {}
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            raise NotLowered(f"attribute {attribute.name} refers to the function attribute {attribute.ref_attr_name}")
        if attribute.name not in known:
            raise LoweringError(f"{location}: {node.op_type} has no attribute '{attribute.name}'; remove it and retry")
        attributes[attribute.name] = helper.get_attribute_value(attribute)
    return attributes


def check_input_accepted(rule: Rule, version: int, node: onnx.NodeProto, first: Value | None, location: str) -> None:
    """Refuse a node whose first input has a type its op version does not take (an invalid model)."""
    if first is None:
        return
    accepted = schemas.input_type_strings(node.op_type, version, 0, rule.domain)
    given = schemas.type_string(first.type)
    if given not in accepted:
        raise LoweringError(
            f"{location}: {node.op_type}-{version} does not accept {given} inputs; the model is invalid"
        )


def decompose(rule: Rule, builder: Builder, inputs: list[Value | None], attributes, outputs: list[str], names):
    """The rule's nodes for one node: ``rule.body`` run through ``builder``, its result
    written to ``outputs``; NotLowered (raised) where the rule does not apply."""
    result = rule.body(builder, *inputs, **attributes)
    if isinstance(result, NotLowered):
        raise TypeError(f"rule {rule.name} returned NotLowered: a pattern declines by raising it")
    return bound(builder.nodes, result, outputs, names)


def bound(nodes: list[onnx.NodeProto], result, output_names: list[str], names) -> list[onnx.NodeProto]:
    """The emitted nodes, writing the rule's result value(s) to the node's own outputs, less
    those nothing reads: a node whose value the result does not use (GRU's reset gate and its
    recurrence weights at a first step of zero state), or that only an output the node leaves
    unnamed (LSTM's Y) or out (BatchNormalization's running statistics) needed."""
    outputs = result if isinstance(result, tuple) else (result,)
    asked = [name for name in output_names[len(outputs) :] if name]
    if asked:  # (an output the rule does not give: BatchNormalization's statistics in inference, invalid)
        raise NotLowered(f"the node gives '{asked[0]}', an output its rule does not write")
    for value, output_name in zip(outputs, output_names, strict=False):
        if output_name:
            nodes = _bind(nodes, value, output_name, names)
    return without_unread(nodes, [name for name in output_names if name], every_node)


def _bind(nodes: list[onnx.NodeProto], value: Value, output_name: str, names) -> list[onnx.NodeProto]:
    """Make the emitted nodes write ``value`` to the original node's ``output_name``."""
    produced = any(value.name in node.output for node in nodes)
    if not produced:
        identity = helper.make_node(
            "Identity", [value.name], [output_name], name=names.fresh(f"{output_name}_identity")
        )
        return [*nodes, identity]
    for node in nodes:
        for k, name in enumerate(node.output):
            if name == value.name:
                node.output[k] = output_name
        for k, name in enumerate(node.input):
            if name == value.name:
                node.input[k] = output_name
    return nodes


def without_shapes(type_proto: onnx.TypeProto | None) -> onnx.TypeProto | None:
    """The same type with every tensor shape (rank included) left out, at any depth."""
    if type_proto is None:
        return None
    result = onnx.TypeProto()
    result.CopyFrom(type_proto)
    inner = result
    while True:
        kind = inner.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            getattr(inner, kind).ClearField("shape")
            return result
        if kind == "sequence_type":
            inner = inner.sequence_type.elem_type
        elif kind == "optional_type":
            inner = inner.optional_type.elem_type
        elif kind == "map_type":
            inner = inner.map_type.value_type
        else:
            return result
