"""Removing what lowering left without users: split If outputs, the nodes a split made, and
Optional nodes whose last reader the pass rewrote."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator

import onnx

from .schemas import canonical_domain

Container = onnx.GraphProto | onnx.FunctionProto
Namespace = Hashable
# Nodes that only pass an optional on or make one: once the pass has rewritten every reader
# (OptionalHasElement, OptionalGetElement), nothing is left for them to do.
REMOVABLE_WHEN_UNUSED = frozenset({"Optional", "Identity"})


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


def function_namespace(function: onnx.FunctionProto) -> Namespace:
    """The name space of a local function's values (see :class:`lowering.scopes.Scope`)."""
    return ("function", function.domain, function.name, getattr(function, "overload", ""))


MAIN_NAMESPACE: Namespace = ("graph",)


def _trees(model: onnx.ModelProto) -> Iterator[tuple[Namespace, list[Container]]]:
    """Each name space: the main graph with its subgraphs, and each function with its subgraphs."""
    yield MAIN_NAMESPACE, [model.graph, *_subgraphs(model.graph.node)]
    for function in model.functions:
        yield function_namespace(function), [function, *_subgraphs(function.node)]


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


def _read_values(model: onnx.ModelProto) -> set[tuple[Namespace, str]]:
    """(name space, value) for every value something reads or a graph yields."""
    return {(namespace, name) for namespace, tree in _trees(model) for name in _uses(tree)}


def remove_unused(
    model: onnx.ModelProto,
    original: onnx.ModelProto,
    split_outputs: set[tuple[Namespace, str]],
    created_nodes: set[tuple[Namespace, str]],
) -> set[tuple[Namespace, str]]:
    """Drop what the pass left unread, and nothing else, until nothing changes:

    - outputs a split added to an If (the optional it split, the flag and value beside it)
      that nobody reads, with the branch outputs behind them;
    - nodes a split made that nobody reads, and a split If none of whose outputs is read;
    - Optional and Identity nodes nobody reads that something read in ``original`` (the pass
      took their readers away: an Identity of an optional read by OptionalHasElement); a node
      the user left unread stays.

    Everything is matched by (name space, name): a function's values are not the main graph's.
    Returns the values removed."""
    read_before = _read_values(original)
    removed: set[tuple[Namespace, str]] = set()
    changed = True
    while changed:
        changed = False
        for namespace, tree in _trees(model):
            uses = _uses(tree)

            removable = functools.partial(
                _removable,
                namespace=namespace,
                uses=uses,
                split_outputs=split_outputs,
                created_nodes=created_nodes,
                read_before=read_before,
            )
            # Innermost graphs first: rebuilding a node list detaches the subgraphs it held.
            for container in reversed(tree):
                for node in container.node:
                    if node.op_type == "If" and canonical_domain(node.domain) == "":
                        unread = [o for o in node.output if (namespace, o) in split_outputs and uses[o] == 0]
                        if len(unread) == len(node.output):
                            continue  # nothing read: the whole If goes below
                        for output in unread:
                            _drop_if_output(node, output)
                            removed.add((namespace, output))
                            changed = True
                dead = [n for n in container.node if removable(n)]
                if dead:
                    removed.update((namespace, name) for n in dead for name in n.output)
                    kept = [n for n in container.node if not removable(n)]
                    del container.node[:]
                    container.node.extend(kept)
                    changed = True
    if removed:
        for namespace, tree in _trees(model):
            names = {name for space, name in removed if space == namespace}
            if names:
                for container in tree:
                    _drop_value_info(container, names)
    return removed


def _removable(
    node: onnx.NodeProto,
    *,
    namespace: Namespace,
    uses: Counter,
    split_outputs: set[tuple[Namespace, str]],
    created_nodes: set[tuple[Namespace, str]],
    read_before: set[tuple[Namespace, str]],
) -> bool:
    """Whether nobody reads ``node`` and the pass made it or took its readers away."""
    if not all(uses[name] == 0 for name in node.output if name):
        return False
    if (namespace, node.name) in created_nodes:
        return True
    if node.op_type == "If" and all((namespace, name) in split_outputs for name in node.output):
        return True  # an If split for optionals, none of whose outputs is read now
    passes_on = node.op_type in REMOVABLE_WHEN_UNUSED and canonical_domain(node.domain) == ""
    return passes_on and any((namespace, name) in read_before for name in node.output if name)


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
