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
    """Hands out names unique across the whole model: graphs, subgraphs and functions.

    Listing every name of a large model is a pass over all of it. Instead the model's
    serialized bytes are kept, and a name is checked by its ``tail`` (the text a rule adds to
    a node's name, such as ``_equal``): a name holding a tail that never occurs in those bytes
    is no name the model has, since every name is stored verbatim in them. Only when a tail
    does occur, or none is given, is the full list made, once.
    """

    def __init__(
        self,
        taken: Iterable[str] = (),
        model: onnx.ModelProto | None = None,
        snapshot=None,
    ) -> None:
        """``model``: the model whose names to avoid (left as it is while names are handed out:
        its names may be listed late); ``snapshot``: its serialized bytes, where it is small
        enough to copy (else, for memory, its names are listed up front), or what gives them
        (:class:`lowering.modelio.ModelBytes`, asked where first needed)."""
        self._given = set(taken)
        self._existing: set[str] | None = set()
        self._snapshot: bytes | None = None
        self._model: onnx.ModelProto | None = None
        self._tail_absent: dict[str, bool] = {}
        self._counters: dict[str, int] = {}  # base → the last counter given to it
        # While a mark is open (mark): each name handed out, with its base and that base's counter
        # before (a claimed name: no base).
        self._journal: list[tuple[str, str | None, int]] | None = None
        self._open_marks = 0
        if model is not None:
            if snapshot is not None:
                self._snapshot = snapshot
                self._model = model
                self._existing = None
            else:
                self._existing = names_in_model(model)

    def fresh(self, hint: str, tail: str = "") -> str:
        """``hint`` itself if free, else ``hint_1``, ``hint_2``, … (identifier-safe).

        ``tail``: text ``hint`` ends with that makes a collision with the model unlikely."""
        return self.fresh_identifier(identifier(hint), tail)

    def fresh_identifier(self, base: str, tail: str = "") -> str:
        """:meth:`fresh` for a ``base`` that is already an :func:`identifier`."""
        given = self._given
        if base not in given and self._existing is None and tail and self._tail_absent.get(tail) and tail in base:
            given.add(base)  # the common case, decided without listing the model's names
            if self._journal is not None:
                self._journal.append((base, base, self._counters.get(base, 0)))
            return base
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
        given.add(name)
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
        """Make the names handed out by :meth:`fresh` and :meth:`claim` since ``mark`` free
        again, each base's counter as it was then: what is asked next is named as if they were
        never given."""
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

    def claim(self, candidates: list[str], tails) -> bool:
        """Take every one of ``candidates`` (each holding one of ``tails``) if all are free and
        no two are alike, as :meth:`fresh_identifier` would have given them; else take none."""
        given = self._given
        if self._existing is None:
            absent = self._tail_absent
            for tail in tails:
                if not (absent.get(tail) or (tail and self._absent(tail))):
                    return False
        elif not self._existing.isdisjoint(candidates):
            return False
        if not given.isdisjoint(candidates):
            return False
        size = len(given)
        given.update(candidates)
        if len(given) != size + len(candidates):  # two candidates alike: none was given before
            given.difference_update(candidates)
            return False
        if self._journal is not None:
            self._journal.extend((name, None, 0) for name in candidates)
        return True

    def _taken(self, name: str, tail: str) -> bool:
        if name in self._given:
            return True
        if self._existing is None:
            if tail and tail in name and self._absent(tail):
                return False
            self._existing = names_in_model(self._model)
            self._snapshot = self._model = None
        return name in self._existing

    def _absent(self, tail: str) -> bool:
        """Whether ``tail`` is nowhere in the model's bytes (a search of about 5 ms a tail for
        every 10 MB of model, made once a tail)."""
        absent = self._tail_absent.get(tail)
        if absent is None:
            snapshot = self._snapshot
            if not isinstance(snapshot, bytes):
                snapshot = snapshot.get()
            absent = self._tail_absent[tail] = tail.encode() not in snapshot
        return absent

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
