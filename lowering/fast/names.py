"""Fresh names checked against the model's serialized bytes instead of a listing of its names.

Listing every name of a large model is a pass over all of it. Instead the model's bytes are
kept, and a name is checked by its ``tail`` (the text a rule adds to a node's name, such as
``_equal``): a name holding a tail that never occurs in those bytes is no name the model has,
since every name is stored verbatim in them. Only when a tail does occur, or none is given, is
the full list made, once; from then on it answers as :class:`lowering.naming.NameAllocator`.
"""

from __future__ import annotations

import onnx

from ..modelio import ModelBytes
from ..naming import NameAllocator, names_in_model


class NamesBySnapshot(NameAllocator):
    """:class:`lowering.naming.NameAllocator`'s names, checked by tail against the model's bytes
    where they are at hand, and claimed a replay's group at a time (:meth:`claim`)."""

    def __init__(self, model: onnx.ModelProto, snapshot: bytes | ModelBytes | None) -> None:
        """``model``: the model whose names to avoid (left as it is while names are handed out:
        its names may be listed late); ``snapshot``: its serialized bytes, or what gives them
        (asked where first needed); None where the model is too large to copy: its names are
        then listed up front."""
        super().__init__(model=model if snapshot is None else None)
        self._snapshot: bytes | ModelBytes | None = snapshot
        self._model: onnx.ModelProto | None = None
        self._tail_absent: dict[str, bool] = {}
        if snapshot is not None:
            self._existing = None  # (listed where a tail occurs in the bytes)
            self._model = model

    def fresh_identifier(self, base: str, tail: str = "") -> str:
        given = self._given
        if base not in given and self._existing is None and tail and self._tail_absent.get(tail) and tail in base:
            given.add(base)  # the common case, decided without listing the model's names
            if self._journal is not None:
                self._journal.append((base, base, self._counters.get(base, 0)))
            return base
        return super().fresh_identifier(base, tail)

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
