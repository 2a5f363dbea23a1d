"""Fresh names that collide with nothing the model already uses, anywhere."""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class NameAllocator:
    """Hands out names unique across the whole model: graphs, subgraphs and functions."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)

    def fresh(self, hint: str) -> str:
        """``hint`` itself if free, else ``hint_1``, ``hint_2``, … (identifier-safe)."""
        base = _UNSAFE.sub("_", hint) or "v"
        if base[0].isdigit():
            base = "_" + base
        name = base
        counter = 0
        while name in self._taken:
            counter += 1
            name = f"{base}_{counter}"
        self._taken.add(name)
        return name

    def __contains__(self, name: str) -> bool:
        return name in self._taken


def _graph_names(graph: onnx.GraphProto, names: set[str]) -> None:
    names.add(graph.name)
    for group in (graph.input, graph.output, graph.value_info):
        names.update(info.name for info in group)
    names.update(tensor.name for tensor in graph.initializer)
    names.update(sparse.values.name for sparse in graph.sparse_initializer)
    _node_names(graph.node, names)


def _node_names(nodes: Iterable[onnx.NodeProto], names: set[str]) -> None:
    add, update = names.add, names.update
    for node in nodes:
        add(node.name)
        update(node.input)
        update(node.output)
        attributes = node.attribute
        if not attributes:
            continue
        for attribute in attributes:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _graph_names(attribute.g, names)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    _graph_names(graph, names)


def names_in_model(model: onnx.ModelProto) -> set[str]:
    """Every value, node and graph name in ``model``, its subgraphs and local functions."""
    names: set[str] = set()
    _graph_names(model.graph, names)
    for function in model.functions:
        names.update(function.input)
        names.update(function.output)
        names.update(info.name for info in function.value_info)
        _node_names(function.node, names)
    names.discard("")
    return names
