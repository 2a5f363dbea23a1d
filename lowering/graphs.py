"""The graphs a node holds in its attributes (If branches, Loop and Scan bodies), walked once here."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import onnx

GRAPH, GRAPHS = onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS


def held_graphs(node: onnx.NodeProto) -> Iterator[tuple[onnx.AttributeProto, int | None, onnx.GraphProto]]:
    """Each graph ``node`` holds: (its attribute, its index in a list of graphs or None, the graph)."""
    for attribute in node.attribute:
        if attribute.type == GRAPH:
            yield attribute, None, attribute.g
        elif attribute.type == GRAPHS:
            for index, graph in enumerate(attribute.graphs):
                yield attribute, index, graph


def holds_graphs(node: onnx.NodeProto) -> bool:
    return any(attribute.type in (GRAPH, GRAPHS) for attribute in node.attribute)


def nested_graphs(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.GraphProto]:
    """Every graph held by ``nodes`` or by the nodes of those graphs, at any depth, outer first."""
    for node in nodes:
        for _, _, graph in held_graphs(node):
            yield graph
            yield from nested_graphs(graph.node)
