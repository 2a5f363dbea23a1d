"""Finding the node behind a checker failure in a lowered model, for the internal-error report."""

from __future__ import annotations

from collections.abc import Iterator

import onnx
from onnx import checker

from .graphs import held_graphs, holds_graphs
from .schemas import canonical_domain


def _containers(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.GraphProto | onnx.FunctionProto, dict]]:
    """(location, graph or function, its opset imports) for every graph, subgraph and function."""
    model_imports = {canonical_domain(e.domain): e.version for e in model.opset_import}

    def with_subgraphs(location: str, container, imports: dict):
        yield location, container, imports
        for index, node in enumerate(container.node):
            for attribute, _, graph in held_graphs(node):
                where = f"{location} > node {_label(node, index)} {attribute.name}"
                yield from with_subgraphs(where, graph, imports)

    yield from with_subgraphs(f"graph '{model.graph.name}'", model.graph, model_imports)
    for function in model.functions:
        imports = {**model_imports, **{canonical_domain(e.domain): e.version for e in function.opset_import}}
        yield from with_subgraphs(f"function '{function.domain}.{function.name}'", function, imports)


def _label(node: onnx.NodeProto, index: int) -> str:
    return f"'{node.name}' ({node.op_type})" if node.name else f"#{index} ({node.op_type})"


def invalid_node(model: onnx.ModelProto) -> str | None:
    """Where the first node that onnx's node checker refuses is, and why; None if none is."""
    for location, container, imports in _containers(model):
        context = checker.C.CheckerContext()
        context.ir_version = model.ir_version
        context.opset_imports = imports
        for index, node in enumerate(container.node):
            try:
                checker.check_node(_without_subgraphs(node), context, checker.C.LexicalScopeContext())
            except checker.ValidationError as error:
                first_line = str(error).strip().splitlines()[0] if str(error).strip() else "invalid"
                return f"{location}, node {_label(node, index)}: {first_line}"
    return None


def _without_subgraphs(node: onnx.NodeProto) -> onnx.NodeProto:
    """The node with each graph attribute emptied: its subgraphs are checked as containers of
    their own, where the values of enclosing graphs are not in the checker's lexical scope."""
    if not holds_graphs(node):
        return node
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    for _, _, graph in held_graphs(copy):
        graph.CopyFrom(onnx.GraphProto(name=graph.name))
    return copy
