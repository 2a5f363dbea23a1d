"""Fresh names that collide with nothing the model already uses, anywhere."""

from __future__ import annotations

import re
from collections.abc import Iterable

import onnx

from .graphs import held_graphs

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def safe_characters(text: str) -> str:
    """``text`` with every character outside ``[A-Za-z0-9_]`` made ``_``."""
    return _UNSAFE.sub("_", text)


def identifier(hint: str) -> str:
    """:func:`safe_characters` of ``hint``, never empty, never starting with a digit."""
    base = safe_characters(hint) or "v"
    return "_" + base if base[0].isdigit() else base


class NameAllocator:
    """Hands out names unique across the whole model: graphs, subgraphs and functions. The
    model's names are listed once; a name is fresh where it is neither listed nor handed out."""

    def __init__(self, taken: Iterable[str] = (), model: onnx.ModelProto | None = None) -> None:
        """``taken``: names to avoid besides; ``model``: the model whose names to avoid."""
        self._given = set(taken)
        self._existing: set[str] | None = names_in_model(model) if model is not None else set()
        self._counters: dict[str, int] = {}  # base → the last counter given to it
        # While a mark is open (mark): each name handed out, with its base and that base's counter
        # before (a claimed name: no base).
        self._journal: list[tuple[str, str | None, int]] | None = None
        self._open_marks = 0

    def fresh(self, hint: str, tail: str = "") -> str:
        """``hint`` itself if free, else ``hint_1``, ``hint_2``, … (identifier-safe).

        ``tail``: text ``hint`` ends with that makes a collision with the model unlikely (an
        allocator may check such names without listing the model's)."""
        return self.fresh_identifier(identifier(hint), tail)

    def fresh_identifier(self, base: str, tail: str = "") -> str:
        """:meth:`fresh` for a ``base`` that is already an :func:`identifier`."""
        # Counters are only freed with the names given back since a mark, so one taken before for
        # this base is taken still: start from it (many nodes sharing a name would otherwise
        # cost quadratic time).
        counter = before = self._counters.get(base, 0)
        name = f"{base}_{counter}" if counter else base
        while self._taken(name, tail):
            counter += 1
            name = f"{base}_{counter}"
        if counter:
            self._counters[base] = counter
        self._given.add(name)
        if self._journal is not None:
            self._journal.append((name, base, before))
        return name

    def mark(self) -> int:
        """A point to give back the names handed out after it (:meth:`give_back`), as an attempt
        whose nodes are dropped does; close it with :meth:`give_back` or :meth:`keep`. Marks nest."""
        if self._journal is None:
            self._journal = []
        self._open_marks += 1
        return len(self._journal)

    def give_back(self, mark: int) -> None:
        """Make the names handed out since ``mark`` free again, each base's counter as it was
        then: what is asked next is named as if they were never given."""
        journal, position = self._journal, mark
        given_back = journal[position:]
        for name, base, before in reversed(given_back):
            self._given.discard(name)
            if base is None:
                continue
            if before:
                self._counters[base] = before
            else:
                self._counters.pop(base, None)
        del journal[position:]
        self._close_mark()

    def keep(self, mark: int) -> None:
        """Close ``mark``, keeping the names handed out since."""
        del mark
        self._close_mark()

    def _close_mark(self) -> None:
        self._open_marks -= 1
        if not self._open_marks:
            self._journal = None

    def _taken(self, name: str, tail: str) -> bool:
        del tail
        return name in self._given or name in self._existing

    def __contains__(self, name: str) -> bool:
        return self._taken(name, "")


def _graph_names(graph: onnx.GraphProto, names: set[str]) -> None:
    names.add(graph.name)
    for group in (graph.input, graph.output, graph.value_info):
        names.update(info.name for info in group)
    names.update(tensor.name for tensor in graph.initializer)
    names.update(sparse.values.name for sparse in graph.sparse_initializer)
    # A graph's nodes read only values its scope defines (onnx's checker refuses the model
    # otherwise, and every model is checked): their inputs are listed where defined.
    _node_names(graph.node, names, inputs=False)


def _node_names(nodes: Iterable[onnx.NodeProto], names: set[str], inputs: bool) -> None:
    add, update = names.add, names.update
    for node in nodes:
        add(node.name)
        if inputs:
            update(node.input)
        update(node.output)
        attributes = node.attribute
        if not attributes:
            continue
        for _, _, graph in held_graphs(node):
            _graph_names(graph, names)


def names_in_model(model: onnx.ModelProto) -> set[str]:
    """Every value, node and graph name in ``model``, its subgraphs and local functions (of a
    model onnx's checker passes: a graph's node inputs are read only where a function's)."""
    names: set[str] = set()
    _graph_names(model.graph, names)
    for function in model.functions:
        names.update(function.input)
        names.update(function.output)
        names.update(info.name for info in function.value_info)
        _node_names(function.node, names, inputs=True)
    names.discard("")
    return names
