"""Removing what lowering left without users: split If outputs and Optional nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator

import onnx

from .schemas import canonical_domain

Container = onnx.GraphProto | onnx.FunctionProto
REMOVABLE_WHEN_UNUSED = frozenset({"Optional"})


def _subgraphs(nodes: Iterable[onnx.NodeProto]) -> Iterator[onnx.GraphProto]:
    for node in nodes:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield attribute.g
                yield from _subgraphs(attribute.g.node)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    yield graph
                    yield from _subgraphs(graph.node)


def _trees(model: onnx.ModelProto) -> Iterator[list[Container]]:
    """Each name space: the main graph with its subgraphs, and each function with its subgraphs."""
    yield [model.graph, *_subgraphs(model.graph.node)]
    for function in model.functions:
        yield [function, *_subgraphs(function.node)]


def _uses(tree: list[Container]) -> Counter:
    uses: Counter = Counter()
    for container in tree:
        if isinstance(container, onnx.GraphProto):
            uses.update(output.name for output in container.output)
        else:
            uses.update(container.output)
        for node in container.node:
            uses.update(name for name in node.input if name)
    return uses


def remove_unused(model: onnx.ModelProto, split_outputs: set[str], created_nodes: set[str]) -> set[str]:
    """Drop the outputs of split Ifs (the optional and the flag and value beside it) that
    nobody reads (with the branch outputs behind them), then Optional nodes and nodes the
    split made that nobody reads, until nothing changes. Returns the names of the values removed."""
    removed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for tree in _trees(model):
            uses = _uses(tree)
            # Innermost graphs first: rebuilding a node list detaches the subgraphs it held.
            for container in reversed(tree):
                for node in container.node:
                    if node.op_type == "If" and canonical_domain(node.domain) == "":
                        for output in [o for o in node.output if o in split_outputs and uses[o] == 0]:
                            _drop_if_output(node, output)
                            removed.add(output)
                            changed = True
                dead = [n for n in container.node if _removable(n, uses, created_nodes)]
                if dead:
                    removed.update(name for n in dead for name in n.output)
                    kept = [n for n in container.node if not _removable(n, uses, created_nodes)]
                    del container.node[:]
                    container.node.extend(kept)
                    changed = True
    if removed:
        for tree in _trees(model):
            for container in tree:
                _drop_value_info(container, removed)
    return removed


def _removable(node: onnx.NodeProto, uses: Counter, created_nodes: set[str]) -> bool:
    ours = node.name in created_nodes or (node.op_type in REMOVABLE_WHEN_UNUSED and canonical_domain(node.domain) == "")
    return ours and all(uses[name] == 0 for name in node.output if name)


def _drop_if_output(if_node: onnx.NodeProto, output: str) -> None:
    index = list(if_node.output).index(output)
    del if_node.output[index]
    for attribute in if_node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            del attribute.g.output[index]


def _drop_value_info(container: Container, removed: set[str]) -> None:
    infos = getattr(container, "value_info", None)
    if infos is None:
        return
    kept = [info for info in infos if info.name not in removed]
    if len(kept) != len(infos):
        del infos[:]
        infos.extend(kept)
