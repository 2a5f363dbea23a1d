"""The graphs a node holds in its attributes (If branches, Loop and Scan bodies), walked once here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import onnx

GRAPH, GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS
GRAPH_TYPES = (GRAPH, GRAPHS)  # the attribute types that hold graphs


def held_graphs(node: onnx.NodeProto) -> Iterator[tuple[onnx.AttributeProto, int | None, onnx.GraphProto]]:
    """Each graph ``node`` holds: (its attribute, its index in a list of graphs or None, the graph)."""
    for attribute in node.attribute:
        if attribute.type == GRAPH:
            yield attribute, None, attribute.g
        elif attribute.type == GRAPHS:
            for index, graph in enumerate(attribute.graphs):
                yield attribute, index, graph


def holds_graphs(node: onnx.NodeProto) -> bool:
    for attribute in node.attribute:  # (a loop: cheaper than any() over a generator, per node of a walk)
        if attribute.type in GRAPH_TYPES:
            return True
    return False


def nested_graphs(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.GraphProto]:
    """Every graph held by ``nodes`` or by the nodes of those graphs, at any depth, outer first."""
    for node in nodes:
        for _, _, graph in held_graphs(node):
            yield graph
            yield from nested_graphs(graph.node)


def without_unread(
    nodes: list[onnx.NodeProto], outputs: Iterable[str], removable: Callable[[onnx.NodeProto], bool]
) -> list[onnx.NodeProto]:
    """``nodes`` less those ``removable`` accepts whose values nothing reads, ``outputs`` aside: a
    walk back from the last node, a value read where a later node (or a graph it holds) reads it."""
    read = set(outputs)
    kept = []
    for node in reversed(nodes):
        if removable(node) and not read.intersection(node.output):
            continue
        kept.append(node)
        read.update(node.input)
        for graph in nested_graphs([node]):
            read.update(name for inner in graph.node for name in inner.input)
    return kept[::-1]


def every_node(node: onnx.NodeProto) -> bool:
    """A node predicate that accepts every node."""
    return True


def branch_graph(nodes: list[onnx.NodeProto], name: str, output: str, element_type: int) -> onnx.GraphProto:
    """An If branch: ``nodes`` giving the one tensor ``output`` of ``element_type`` (its shape
    undeclared: branches may differ in it), reading what they need from the outer scope."""
    return onnx.helper.make_graph(nodes, name, [], [onnx.helper.make_tensor_value_info(output, element_type, None)])


# A Constant's value attribute other than ``value``, as (element type, whether a list).
_CONSTANT_VALUE_ATTRIBUTES = {
    "value_float": (onnx.TensorProto.FLOAT, False),
    "value_floats": (onnx.TensorProto.FLOAT, True),
    "value_int": (onnx.TensorProto.INT64, False),
    "value_ints": (onnx.TensorProto.INT64, True),
}


def constant_tensor(node: onnx.NodeProto) -> onnx.TensorProto | None:
    """The tensor a default-domain Constant node holds: its ``value``, or a ``value_float(s)`` /
    ``value_int(s)`` as the 0-D or 1-D tensor the op's spec makes of it; None for other nodes,
    sparse and string values, and attribute references."""
    if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.attribute) != 1:
        return None
    (attribute,) = node.attribute
    if attribute.ref_attr_name:
        return None
    if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
        return attribute.t
    found = _CONSTANT_VALUE_ATTRIBUTES.get(attribute.name)
    if found is None:
        return None
    element_type, is_list = found
    value = onnx.helper.get_attribute_value(attribute)
    values = list(value) if is_list else [value]
    return onnx.helper.make_tensor("", element_type, [len(values)] if is_list else [], values)


def value_tensors_written(nodes) -> None:
    """Each default-domain Constant among ``nodes`` (and in the graphs they hold) that states its
    value as ``value_float(s)`` or ``value_int(s)`` rewritten in place to hold it as ``value``,
    the tensor :func:`constant_tensor` makes of it: what every opset and every runtime reads
    (tract 0.21 reads no other)."""
    for node in nodes:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.attribute:
            if node.attribute[0].name in _CONSTANT_VALUE_ATTRIBUTES:
                tensor = constant_tensor(node)
                if tensor is not None:
                    del node.attribute[:]
                    node.attribute.append(onnx.helper.make_attribute("value", tensor))
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                value_tensors_written(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    value_tensors_written(graph.node)
