"""Removing what lowering left without readers, and nothing else.

While resolving optionals the pass marks what it may leave unread: an If it split (with the
outputs the split concerns: the optional and the flag and value beside it), the nodes a split
added to the branches, and every Optional or Identity node an optional was decided through
(the pass rewrites its reader). The mark is an attribute on the node itself, so it stays with
that node whatever happens to its graph, and two values that share a name (in sibling branches,
or in the main graph and a function) are never confused. :func:`remove_unused` drops marked
outputs and nodes nobody reads, then takes every mark away.

:func:`drop_left_unread` drops the main graph's initializers (and Constant nodes) that some node
read before lowering and none reads after (a CastLike's target, once it is a Cast): what the
model held unread from the start stays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import onnx

from .graphs import held_graphs, nested_graphs
from .schemas import canonical_domain

Container = onnx.GraphProto | onnx.FunctionProto
MARK = "onnx_lower_unread_may_go"  # no ONNX op has such an attribute; never left in a result
WHOLE_NODE: tuple[str, ...] = ()  # a mark that concerns every output of the node


def mark(node: onnx.NodeProto, outputs: tuple[str, ...] = WHOLE_NODE) -> None:
    """Mark ``node`` (or, for an If, its ``outputs``) as removable once nobody reads it."""
    for attribute in node.attribute:
        if attribute.name == MARK:
            attribute.strings.extend(name.encode() for name in outputs if name.encode() not in attribute.strings)
            return
    node.attribute.append(
        onnx.AttributeProto(name=MARK, type=onnx.AttributeProto.STRINGS, strings=[o.encode() for o in outputs])
    )


def _marked_outputs(node: onnx.NodeProto) -> tuple[str, ...] | None:
    """The outputs a mark concerns (every output for WHOLE_NODE), or None for an unmarked node."""
    for attribute in node.attribute:
        if attribute.name == MARK:
            return tuple(s.decode() for s in attribute.strings) or tuple(node.output)
    return None


def _trees(model: onnx.ModelProto) -> Iterator[list[Container]]:
    """Each name space: the main graph with its subgraphs, and each function with its subgraphs."""
    yield [model.graph, *nested_graphs(model.graph.node)]
    for function in model.functions:
        yield [function, *nested_graphs(function.node)]


def _uses(tree: list[Container]) -> Counter:
    """How often each name is read or yielded in a name space (a name read in a sibling branch
    counts too: at worst a dead node stays)."""
    uses: Counter = Counter()
    for container in tree:
        if isinstance(container, onnx.GraphProto):
            uses.update(output.name for output in container.output)
        else:
            uses.update(container.output)
        for node in container.node:
            uses.update(name for name in node.input if name)
    return uses


def remove_unused(model: onnx.ModelProto) -> set[str]:
    """Drop, until nothing changes, the marked If outputs nobody reads (with the branch outputs
    behind them), and marked nodes none of whose outputs anybody reads (an If none of whose
    outputs is read goes whole, never left with no outputs); then take every mark away.
    Returns the names of the values removed."""
    removed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for tree in _trees(model):
            uses = _uses(tree)
            # Innermost graphs first: rebuilding a node list detaches the subgraphs it held.
            for container in reversed(tree):
                for node in container.node:
                    marked = _marked_outputs(node)
                    if marked is None or node.op_type != "If" or canonical_domain(node.domain) != "":
                        continue
                    unread = [o for o in node.output if o in marked and uses[o] == 0]
                    if len(unread) == len(node.output):
                        continue  # nothing read: the whole If goes below
                    for output in unread:
                        _drop_if_output(node, output)
                        removed.add(output)
                        changed = True
                dead = [n for n in container.node if _removable(n, uses)]
                if dead:
                    removed.update(name for n in dead for name in n.output)
                    kept = [n for n in container.node if not _removable(n, uses)]
                    del container.node[:]
                    container.node.extend(kept)
                    changed = True
    for tree in _trees(model):
        for container in tree:
            if removed:
                _drop_value_info(container, removed)
            for node in container.node:
                _unmark(node)
    return removed


def _removable(node: onnx.NodeProto, uses: Counter) -> bool:
    """Marked, every output marked, and none read."""
    marked = _marked_outputs(node)
    return marked is not None and all(name in marked and uses[name] == 0 for name in node.output if name)


def _unmark(node: onnx.NodeProto) -> None:
    for index, attribute in enumerate(node.attribute):
        if attribute.name == MARK:
            del node.attribute[index]
            return


def _drop_if_output(if_node: onnx.NodeProto, output: str) -> None:
    index = list(if_node.output).index(output)
    del if_node.output[index]
    for _, _, branch in held_graphs(if_node):
        del branch.output[index]


def _drop_value_info(container: Container, removed: set[str]) -> None:
    infos = getattr(container, "value_info", None)
    if infos is None:
        return
    kept = [info for info in infos if info.name not in removed]
    if len(kept) != len(infos):
        del infos[:]
        infos.extend(kept)


def _main_graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    """The main graph and every graph its nodes hold, at any depth."""
    return [model.graph, *nested_graphs(model.graph.node)]


def _read_in(graphs: list[onnx.GraphProto]) -> set[str]:
    return {name for graph in graphs for node in graph.node for name in node.input}


def names_read(model: onnx.ModelProto) -> set[str]:
    """Every name a node of the main graph, or of a graph it holds at any depth, reads."""
    return _read_in(_main_graphs(model))


def drop_left_unread(model: onnx.ModelProto, read_before: Callable[[], set[str]] | set[str]) -> None:
    """The main graph's initializers, and the Constant nodes of any of its graphs, that no node
    reads, nor an output, graph input or quantization annotation names, dropped (with their
    value_info) where ``read_before`` (the names read before lowering, or what computes them,
    asked only where something is unread) holds their name; not a Constant whose name another
    graph defines too (sibling branches may each define one: the one read may be the other's),
    nor anything of a model with training information, whose graphs may read them."""
    if model.training_info:  # (its graphs may read the main graph's initializers)
        return
    graphs = _main_graphs(model)
    read = _read_in(graphs)
    given = {info.name for graph in graphs for info in graph.output} | {info.name for info in model.graph.input}
    for graph in graphs:
        for annotation in graph.quantization_annotation:
            given |= {annotation.tensor_name, *(entry.value for entry in annotation.quant_parameter_tensor_names)}
    unread_initializers = [t for t in model.graph.initializer if t.name not in read and t.name not in given]
    defined = Counter(name for graph in graphs for node in graph.node for name in node.output)
    defined.update(tensor.name for graph in graphs for tensor in graph.initializer)
    defined.update(info.name for graph in graphs for info in graph.input)
    unread_constants = [
        (graph, node) for graph in graphs for node in graph.node
        if node.op_type == "Constant" and canonical_domain(node.domain) == "" and len(node.output) == 1
        and node.output[0] not in read and node.output[0] not in given and defined[node.output[0]] == 1
    ]  # fmt: skip
    if not unread_initializers and not unread_constants:
        return
    names = read_before() if callable(read_before) else read_before
    dropped = set()
    for tensor in unread_initializers:
        if tensor.name in names:
            model.graph.initializer.remove(tensor)
            dropped.add(tensor.name)
    for graph, node in unread_constants:
        if node.output[0] in names:
            graph.node.remove(node)
            dropped.add(node.output[0])
    for graph in graphs:
        _drop_value_info(graph, dropped)
