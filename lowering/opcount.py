"""Counting ops in a model, subgraphs and local functions included."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import onnx

from .graphs import held_graphs
from .schemas import DEFAULT_DOMAINS, ops_with_subgraphs


def count_ops(model: onnx.ModelProto) -> Counter:
    """How many nodes of each op type (``domain.Op`` outside the default domain) the model holds."""
    counts: Counter = Counter()
    _count(model.graph.node, counts)
    for function in model.functions:
        _count(function.node, counts)
    return counts


def _count(nodes: Sequence[onnx.NodeProto], counts: Counter) -> None:
    keys = [node.op_type if node.domain in DEFAULT_DOMAINS else f"{node.domain}.{node.op_type}" for node in nodes]
    counts.update(keys)
    holding_subgraphs = ops_with_subgraphs()
    for index, key in enumerate(keys):
        if key in holding_subgraphs or "." in key:  # default-domain ops with graphs, or any other domain
            for _, _, graph in held_graphs(nodes[index]):
                _count(graph.node, counts)


def op_count_table(before: Counter, after: Counter) -> list[str]:
    """A table of op counts before and after, as onnxsim prints it."""
    op_types = sorted(set(before) | set(after))
    width = max([len("Op"), *map(len, op_types)])
    lines = [f"{'Op':<{width}}  {'Original':>8}  {'Lowered':>8}"]
    for op_type in op_types:
        lines.append(f"{op_type:<{width}}  {before[op_type]:>8}  {after[op_type]:>8}")
    lines.append(f"{'Total':<{width}}  {sum(before.values()):>8}  {sum(after.values()):>8}")
    return lines
