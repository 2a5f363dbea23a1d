"""Legalizing nodes once per kind of node: the first node of a kind is legalized as the plain
path does it (:meth:`lowering.engine.Legalizer.legalize`: moved to the target opset by the
judge, an adapter or onnx's converter, else expanded by its function body, or expanded by its
function body where asked) while what it reads is recorded; a later
node of that kind whose reads give the same answers gets a copy of the recorded result with
its own names.

What legalizing a node reads: the node (op, attributes, which inputs and outputs are given)
and, through the scope, the types and constant values of its inputs. The kind's key holds the
node part; the reads are recorded as (what was asked, of which input or output, the answer) and
asked again for the next node before its result is reused. Fresh names are asked for again in
the recorded order, from hints rebuilt for the node, so a replay is exactly what legalizing
the node gives. The fields a node carries along (``doc_string``, ``metadata_props``) are
recorded as markers, so a result node that carried them carries the next node's. Where a
result cannot be told apart from the node's own names (a hint or an attribute holding one), or
the pattern read anything else of the graph, the kind is legalized node by node.
"""

from __future__ import annotations

import collections
import functools

import onnx
from google.protobuf.unknown_fields import UnknownFieldSet

from .. import declared_types, scopes
from ..graphs import GRAPH_TYPES
from ..naming import identifier, safe_characters
from ..report import LoweringReport
from . import protowire

_SLOT = "\x00"
_DOC_MARK = "\x00carried doc_string\x00"
_METADATA_MARK = "\x00carried metadata_props\x00"
_MAX_CONSTANT_BYTES = 1 << 16  # larger constant reads are not compared: legalized node by node
_MAX_RECORDINGS_PER_KIND = 8
_UNRECORDABLE = object()
_TOO_LARGE = b"\x00too large"
_AFRESH = object()  # a replay that cannot name this node as legalizing it would
_UNPLANNED = object()  # a recorded result not yet planned as wire pieces for a container
_DOC_PART, _METADATA_PART = "\x00doc", "\x00metadata"  # a plan's keys of the node's carried fields
# What a replay may read freely: the opsets, the location, and how often shapes were read (the
# driver's check reads it after legalizing; the shapes it then reads are recorded as any).
_SCOPE_FACTS = frozenset({"opset", "source_opset", "location", "shape_reads"})


@functools.cache
def _slot(kind: str, index: int) -> str:
    return f"{_SLOT}{kind}{index}{_SLOT}"


_HINT_SLOT = _slot("h", 0)
_FIRST_OUTPUT_SLOT = _slot("o", 0)


@functools.cache
def _slots(kind: str, count: int) -> tuple[str, ...]:
    """The first ``count`` slots of a kind (a node's inputs ``i``, its outputs ``o``)."""
    return tuple(_slot(kind, index) for index in range(count))


def _kind_key(node: onnx.NodeProto, scope, attribute_key: tuple, inputs: list, outputs: list) -> tuple:
    """A kind of node: what legalizing it reads of the node itself (``attribute_key``: its
    attributes serialized; ``inputs``, ``outputs``: its names)."""
    return (
        node.op_type,
        node.domain,
        scope.source_opset,
        scope.opset,
        attribute_key,
        _given(inputs),
        _given(outputs),
        # a name, or none: a field set to "" is written out, so its presence is part of the bytes
        2 if node.name else node.HasField("name"),
        node.HasField("domain"),
    )


_ALL_GIVEN = [(True,) * count for count in range(32)]


def _given(names: list[str]) -> tuple[bool, ...]:
    """Which of a node's inputs (or outputs) are given: ``tuple(map(bool, names))``, at once
    where all are."""
    if "" in names or len(names) >= len(_ALL_GIVEN):
        return tuple(map(bool, names))
    return _ALL_GIVEN[len(names)]


def _answer_key(answer, read: str) -> bytes | str | None:
    """What a read answered, to compare: a constant without its name, as bytes; for the version
    step's judgement (``judged_type_of``) the type's schema string, all that it reads."""
    if answer is None:
        return None
    if read == "judged_type_of":
        return declared_types.type_string(answer)
    if isinstance(answer, onnx.TensorProto):
        if answer.ByteSize() > _MAX_CONSTANT_BYTES:
            return _TOO_LARGE
        if answer.name:
            answer = onnx.TensorProto.FromString(answer.SerializeToString())
            answer.name = ""
    return answer.SerializeToString()


class _RecordingScope:
    """The node's scope, its reads of the node's values recorded as (read, is input, index,
    answer); ``replayable`` turns false at any other use a replay could not repeat."""

    def __init__(self, scope, slots: dict[str, tuple[bool, int]], index: int) -> None:
        self._scope = scope
        self._slots = slots  # the node's value names → (is input, index)
        self._index = index  # the node's index in its graph
        self.reads: list[tuple[str, bool, int, bytes | None]] = []
        self.replayable = True

    def __getattr__(self, attribute: str):
        if attribute not in _SCOPE_FACTS:
            self.replayable = False
        return getattr(self._scope, attribute)

    def _read(self, read: str, name: str):
        slot = self._slots.get(name)
        if read == "judged_type_of" or read == "type_of":
            answer = self._scope.type_of(name, _reader(slot, self._index))
        elif read == "inferred_type_of":
            answer = self._scope.inferred_type_of(name, _reader(slot, self._index))
        else:
            answer = getattr(self._scope, read)(name)
        key = _answer_key(answer, read)
        if slot is None or key is _TOO_LARGE:
            self.replayable = False
        else:
            self.reads.append((read, *slot, key))
        return answer

    def type_of(self, name: str, reader: int | None = None):
        return self._read("type_of", name)

    def judged_type_of(self, name: str):
        return self._read("judged_type_of", name)

    def inferred_type_of(self, name: str, reader: int | None = None):
        return self._read("inferred_type_of", name)

    def constant_value(self, name: str):
        return self._read("constant_value", name)

    def held_type_of(self, name: str, reader: int | None = None):
        return self._read("held_type_of", name)


class _RecordingNames:
    """The driver's name allocator, each fresh name recorded with its hint and tail."""

    def __init__(self, names) -> None:
        self._names = names
        self.made: list[tuple[str, str, str]] = []  # (hint, tail, name) in the order asked
        self.replayable = True

    def fresh(self, hint: str, tail: str = "") -> str:
        name = self._names.fresh(hint, tail)
        self.made.append((hint, tail, name))
        return name

    def mark(self) -> tuple:
        return len(self.made), self._names.mark()

    def give_back(self, mark: tuple) -> None:
        """The names since ``mark`` given back, and forgotten here: a replay asks for those kept."""
        del self.made[mark[0] :]
        self._names.give_back(mark[1])

    def keep(self, mark: tuple) -> None:
        self._names.keep(mark[1])

    def __getattr__(self, attribute: str):
        self.replayable = False  # any other use of the allocator is not replayed
        return getattr(self._names, attribute)


class _Recorded:
    """One recorded legalization: the reads with their answers; each fresh name's hint as
    (what it starts with: None, "hint" or an earlier fresh name's slot; the text after; the
    tail); what it added to the report and to the ops expanded; and the result: NodeProtos
    whose names are slots, None where the node stays as it is, or ``kept`` where the node
    itself is the result."""

    def __init__(self, reads, labels, rewritten, expanded) -> None:
        self.reads = reads
        # The reads as (is input, index, answer) where all are judged types (the most common:
        # a version step that only extended a type list), else None.
        self.judged_reads: tuple[tuple[bool, int, str | None], ...] | None = (
            tuple([(is_input, index, answer) for _, is_input, index, answer in reads])
            if all(read == "judged_type_of" for read, _, _, _ in reads)
            else None
        )
        self.pending = 0  # kept again this many times, not counted in the report yet (KindMemo.count_kept)
        # What a replay adds to the report: each label once, with its count (a body's 17 nodes
        # give 8 labels); a Counter's update costs microseconds a call.
        self.labels = list(collections.Counter(labels).items())
        self.rewritten = list(collections.Counter(rewritten).items())
        self.expanded = expanded
        self._hints: list[tuple[list[tuple[str | None, str]], str]] = []
        self.safe_readings: list[list[tuple[str | None, str, str]]] = []
        self.slots: list[str] = []  # the fresh names' slots, in order
        self.tails: set[str] = set()
        self.ambiguous = False
        self.nodes: list[onnx.NodeProto] | None = None
        self.kept = False
        self.moved: tuple[tuple[bytes, ...], bytes] | None = None  # see _moved_fields
        self.wire_plans: dict[bytes, tuple | None] = {}  # by node tag: the result as one run (_result_plan)

    @property
    def hints(self) -> list[tuple[list[tuple[str | None, str]], str]]:
        return self._hints

    @hints.setter
    def hints(self, hints: list[tuple[list[tuple[str | None, str]], str]]) -> None:
        self._hints = hints
        self.slots = [_slot("n", k) for k in range(len(hints))]
        self.tails = {tail for _, tail in hints}
        self.ambiguous = any(len(readings) > 1 for readings, _ in hints)
        # Each reading as (start, the rest made identifier-safe, the rest's own identifier):
        # identifier(start + rest) is start's identifier + the safe rest, where start is not
        # empty (an earlier fresh name is an identifier already).
        self.safe_readings = [
            [(start, safe_characters(rest), identifier(rest)) for start, rest in readings] for readings, _ in hints
        ]
        # Where every fresh name is read from the node's hint alone (function bodies), the
        # texts after it, counted among themselves: a replay's names are then the hint's
        # identifier and each of them (see _counted).
        self.hint_rests: list[str] | None = None
        if self.safe_readings and all(len(r) == 1 and r[0][0] == "hint" for r in self.safe_readings):
            self.hint_rests = _counted([readings[0][1] for readings in self.safe_readings])


class KindMemo:
    """Recorded legalizations by kind of node (see the module docstring)."""

    def __init__(self, driver) -> None:
        self.driver = driver
        self.kinds: dict[tuple, list | object] = {}
        # Per scope (held, so no two scopes share a key), each (read, value)'s answer.
        # (a value's judged type, the most asked, under the value's name alone)
        self.answers: dict[object, dict[tuple[str, str] | str, bytes | str | None]] = {}
        self.kept_op_types: set[str] = set()  # op types with a kind recorded keeping the node (kept_again)
        self.kept_kinds: dict[tuple, list] = {}  # the kinds whose every recording kept the node
        self._pending: list[_Recorded] = []  # the recordings kept_again took, to count (count_kept)
        self._pending_report: LoweringReport | None = None  # the report they count into

    def legalize(self, scope, node: onnx.NodeProto, index: int):
        """What :meth:`Legalizer.legalize` gives for ``node``, replayed where its kind was seen.
        A node holding fields no kind holds (``device_configurations``, fields this onnx does
        not know), which a moved node keeps as its own, or a name or doc_string that is not
        UTF-8 (protobuf reads it as bytes), is legalized by itself."""
        if (
            node.device_configurations
            or len(UnknownFieldSet(node))
            or node.name.__class__ is bytes
            or (node.HasField("doc_string") and node.doc_string.__class__ is bytes)
        ):
            return self.driver.legalize(scope, node, index)
        attributes = node.attribute
        inputs, outputs = node.input[:], node.output[:]  # (lists: a repeated field's items cost more)
        attribute_key = tuple([attribute.SerializeToString() for attribute in attributes]) if attributes else ()
        key = _kind_key(node, scope, attribute_key, inputs, outputs)
        recordings = self.kinds.get(key)
        if recordings is _UNRECORDABLE:
            return self.driver.legalize(scope, node, index)
        if recordings:
            found = self._matching(recordings, scope, index, inputs, outputs)
            if found is not None:
                replayed = self._replay(found, scope, node, inputs, outputs)
                if replayed is not _AFRESH:
                    return replayed
                return self.driver.legalize(scope, node, index)
            if len(recordings) >= _MAX_RECORDINGS_PER_KIND:
                return self.driver.legalize(scope, node, index)
        if node.overload or _holds_markers(node):
            self.kinds[key] = _UNRECORDABLE
            self.kept_kinds.pop(key, None)
            return self.driver.legalize(scope, node, index)
        recorded, result = self._record(scope, node, index)
        if recorded is not None:
            kind = self.kinds.setdefault(key, [])
            kind.append(recorded)
            if recorded.kept and not recordings:
                self.kept_op_types.add(node.op_type)
                self.kept_kinds[key] = kind
            elif not recorded.kept:
                self.kept_kinds.pop(key, None)
        elif not recordings:  # recordings made stay: this node's reads (run-time axes) differed
            self.kinds[key] = _UNRECORDABLE
        return result

    def kept_again(self, scope, node: onnx.NodeProto, index: int) -> bool:
        """Whether ``node`` is of a kind whose recordings all kept the node as it is, and one's
        reads give the same answers for it: then the report counts it as :meth:`legalize`
        would, and the driver need not look at it (it would get the node back). False where
        the node holds a graph (the driver walks it) or legalizing it would give anything else."""
        if scope.op_types[index] not in self.kept_op_types:
            return False
        attributes = node.attribute
        if attributes:
            serialized = []
            for attribute in attributes:
                if attribute.type in GRAPH_TYPES:
                    return False
                serialized.append(attribute.SerializeToString())
            attribute_key = tuple(serialized)
        else:
            attribute_key = ()
        inputs, outputs = node.input[:], node.output[:]
        recordings = self.kept_kinds.get(_kind_key(node, scope, attribute_key, inputs, outputs))
        if recordings is None:
            return False
        found = self._matching(recordings, scope, index, inputs, outputs)
        if found is None:
            return False
        if self.driver.report is not self._pending_report:  # (a function body's attempt began or ended)
            self.count_kept()
            self._pending_report = self.driver.report
        if not found.pending:
            self._pending.append(found)
        found.pending += 1
        return True

    def count_kept(self) -> None:
        """Count the nodes :meth:`kept_again` took into the report that was the driver's when it
        took them, as :meth:`_count` would have one by one: called once a graph's walk is done,
        before anything reads the counts, and wherever the driver's report is another (a body's
        attempt counts into a report of its own, dropped where the body does not go)."""
        report = self._pending_report
        for recorded in self._pending:
            times = recorded.pending
            for label, count in recorded.labels:
                report.adapted[label] += count * times
            for label, count in recorded.rewritten:
                report.rewritten[label] += count * times
            if recorded.expanded:
                self.driver.expanded_ops.update(recorded.expanded)
            recorded.pending = 0
        self._pending.clear()

    def _matching(self, recordings: list, scope, index: int, inputs: list, outputs: list) -> _Recorded | None:
        """:func:`_matching` with this scope's answers asked so far."""
        answers = self.answers.get(scope)
        if answers is None:
            answers = self.answers[scope] = {}
        return _matching(recordings, scope, index, inputs, outputs, answers)

    def _count(self, recorded: _Recorded) -> None:
        """What a replay of ``recorded`` adds to the driver's report as it is now (a function
        body's attempt counts into a report of its own, dropped where the body does not go)
        and to the ops expanded."""
        driver = self.driver
        report = driver.report
        for label, count in recorded.labels:
            report.adapted[label] += count
        for label, count in recorded.rewritten:
            report.rewritten[label] += count
        if recorded.expanded:
            driver.expanded_ops.update(recorded.expanded)

    def _record(self, scope, node: onnx.NodeProto, index: int):
        """The node legalized as the plain path does it, and its recording (None where a
        replay could not reproduce it)."""
        driver = self.driver
        slots = _slots_of(node)
        marked = _marked(node)
        reading = _RecordingScope(scope, slots, index)
        naming = _RecordingNames(driver.names)
        report, expanded_before = LoweringReport(), set(driver.expanded_ops)
        names, real_report = driver.names, driver.report
        driver.names, driver.report = naming, report
        try:
            result = driver.legalize(reading, marked, index)
        finally:
            driver.names, driver.report = names, real_report
            real_report.adapted.update(report.adapted)
            real_report.rewritten.update(report.rewritten)
            real_report.remaining.extend(report.remaining)
        recorded = _Recorded(
            list(dict.fromkeys(reading.reads)),  # a read asked again gave the same answer: compared once
            list(report.adapted.elements()),
            list(report.rewritten.elements()),
            driver.expanded_ops - expanded_before,
        )
        replayable = reading.replayable and naming.replayable and not report.remaining
        if result is None:
            return (recorded if replayable else None), None
        if len(result) == 1 and result[0] is marked:
            recorded.kept = True
            return (recorded if replayable else None), [node]
        hint = node.name or (node.output[0] if node.output else "")
        templated = _templated(result, node, slots, naming.made, hint) if replayable else None
        if templated is None:
            return None, [_carrying(produced, node) for produced in result]
        recorded.hints, recorded.nodes = templated
        if len(result) == 1 and not recorded.slots:
            recorded.moved = _moved_fields(marked, result[0])
        return recorded, [_carrying(produced, node) for produced in result]

    def _replay(self, recorded: _Recorded, scope, node: onnx.NodeProto, inputs: list, outputs: list) -> list | None:
        """The recorded result for ``node`` (``inputs``, ``outputs``: its names): its names in the
        slots, fresh names asked for again; nodes as wire bytes (:mod:`.protowire`) or, where a
        tensor is named by a slot, NodeProtos; where the result is the node moved, the node's
        own bytes less and plus attributes."""
        tag = protowire.node_tag(scope.graph)
        if recorded.moved is not None:
            written = moved_written(node, *recorded.moved, tag)
            if written is not None:
                self._count(recorded)
                return [written]
        if recorded.nodes is not None:
            real = {_HINT_SLOT: node.name}
            real.update(zip(_slots("i", len(inputs)), inputs, strict=True))
            real.update(zip(_slots("o", len(outputs)), outputs, strict=True))
            if recorded.slots and not self._fresh_names(recorded, node, real):
                return _AFRESH
        self._count(recorded)
        if recorded.kept:
            return [node]
        if recorded.nodes is None:
            return None
        plan = recorded.wire_plans.get(tag, _UNPLANNED)
        if plan is _UNPLANNED:
            plan = recorded.wire_plans[tag] = _result_plan(recorded.nodes, tag)
        if plan is not None:
            return [_written(plan, real, node)]
        return self._replayed_one_by_one(recorded, node, real, tag)

    def _replayed_one_by_one(self, recorded: _Recorded, node: onnx.NodeProto, real: dict[str, str], tag: bytes):
        """The replay's nodes, each its own wire bytes or NodeProto (where an attribute holds a slot)."""
        result: list = []
        carried: tuple[bytes, bytes] | None = None
        varint, prefixed = protowire.varint, protowire.length_prefixed
        written: dict[str, bytes] = {}  # each slot's name, length-prefixed once for every node naming it
        for template, plan in recorded.nodes:
            if plan is None:
                result.append(_carrying(_named_copy(template, real), node))
                continue
            pieces, carries_doc, carries_metadata = plan
            parts = []
            for piece in pieces:
                if piece.__class__ is bytes:
                    parts.append(piece)
                else:
                    field_tag, slot = piece
                    text = written.get(slot)
                    if text is None:
                        text = written[slot] = prefixed(real[slot])
                    parts.append(field_tag)
                    parts.append(text)
            if carries_doc or carries_metadata:  # (field order does not matter: the list is parsed back)
                if carried is None:
                    carried = _carried_fields(node)
                parts += [carried[0]] if not carries_metadata else [carried[1]] if not carries_doc else carried
            payload = b"".join(parts)
            result.append(tag + varint(len(payload)) + payload)
        return result

    def _fresh_names(self, recorded: _Recorded, node: onnx.NodeProto, real: dict[str, str]) -> bool:
        """The replay's fresh names into ``real``: where every one is free in the model, they are
        what asking one by one gives (counted ``_1``, ``_2`` among themselves) and are claimed at
        once; else they are asked for one by one. False (nothing taken) where a hint's readings
        (see :func:`_templated`) disagree for this node: then it is legalized afresh."""
        names = self.driver.names
        hint = real[_HINT_SLOT] or real.get(_FIRST_OUTPUT_SLOT, "")
        slots = recorded.slots

        def text_of(readings) -> str | None:
            texts = {
                ("" if start is None else hint if start == "hint" else real[start]) + rest for start, rest in readings
            }
            return texts.pop() if len(texts) == 1 else None

        hint_base = identifier(hint) if hint else ""
        rests = recorded.hint_rests
        if rests is not None and hint:
            candidates = [hint_base + rest for rest in rests]
            if names.claim(candidates, recorded.tails):
                real.update(zip(slots, candidates, strict=True))
                return True
            return self._fresh_one_by_one(recorded, real, text_of)
        candidates = []
        counted = _CountedAmongThemselves()
        for k, readings in enumerate(recorded.safe_readings):
            base = None
            for start, safe_rest, own in readings:
                if start is None or (start == "hint" and not hint):
                    found = own
                elif start == "hint":
                    found = hint_base + safe_rest
                else:
                    found = real[start] + safe_rest
                if base is None:
                    base = found
                elif found != base:
                    return False
            name = counted(base)
            candidates.append(name)
            real[slots[k]] = name
        if not candidates or names.claim(candidates, recorded.tails):
            return True
        return self._fresh_one_by_one(recorded, real, text_of)

    def _fresh_one_by_one(self, recorded: _Recorded, real: dict[str, str], text_of) -> bool:
        """The replay's fresh names asked for one by one, as legalizing the node asks (False
        where a hint's readings could then disagree: the node is legalized afresh)."""
        if recorded.ambiguous:
            return False  # asked one by one, a later reading could disagree after names are taken
        names, slots = self.driver.names, recorded.slots
        for k, (readings, tail) in enumerate(recorded.hints):
            real[slots[k]] = names.fresh(text_of(readings), tail)
        return True


class _CountedAmongThemselves:
    """Names counted among themselves as :meth:`lowering.naming.NameAllocator.fresh_identifier`
    counts them: a base, then ``base_1``, ``base_2``, ... where taken by an earlier one."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._counters: dict[str, int] = {}

    def __call__(self, base: str) -> str:
        counter = self._counters.get(base, 0)
        name = f"{base}_{counter}" if counter else base
        while name in self._taken:
            counter += 1
            name = f"{base}_{counter}"
        if counter:
            self._counters[base] = counter
        self._taken.add(name)
        return name


def _counted(rests: list[str]) -> list[str]:
    """The texts after one base, counted among themselves (``_Mul``, ``_Mul_1``, ...): base +
    each is what asking for base + rest one by one gives among these names, for every base,
    since base + (rest + "_k") is (base + rest) + "_k" and two such names are alike exactly
    where their texts after the base are."""
    counted = _CountedAmongThemselves()
    return [counted(rest) for rest in rests]


_MAX_FORMATS_PER_PLAN = 64  # texts' lengths remembered per plan (past that, formats are made afresh)


class _ResultPlan:
    """A recorded result written as one run of node fields: its pieces (bytes written once; a
    slot or carried field's key where that text goes; a node's number where its length goes),
    each node's fixed byte count with the keys whose texts add to it, the slots named, and
    whether the node's carried fields are. Once the lengths of a replay's texts are known, all
    else is: the run is then fixed bytes with the texts between (:meth:`format_for`)."""

    def __init__(self, pieces: list, lengths: list[tuple[int, list[str]]], slots: list[str], carries: bool) -> None:
        self.pieces = pieces
        self.lengths = lengths
        self.slots = slots
        self.carries = carries
        self.keys = slots + [_DOC_PART, _METADATA_PART] if carries else slots  # the texts, in this order
        position = {key: k for k, key in enumerate(self.keys)}
        self.order = [position[piece] for piece in pieces if piece.__class__ is str]  # text per gap
        self.formats: dict[tuple[int, ...], list[bytes]] = {}

    def format_for(self, sizes: tuple[int, ...]) -> list[bytes]:
        """The fixed bytes around the texts (in :attr:`order`) for texts of these byte sizes:
        each slot's text preceded by its length, each node by its payload's length."""
        found = self.formats.get(sizes)
        if found is not None:
            return found
        varint = protowire.varint
        size_of = dict(zip(self.keys, sizes, strict=True))
        carried = (_DOC_PART, _METADATA_PART)  # whole fields already; a slot's text is prefixed by its length
        written = {key: size if key in carried else len(varint(size)) + size for key, size in size_of.items()}
        fixed: list[bytes] = []
        current = b""
        for piece in self.pieces:
            kind = piece.__class__
            if kind is bytes:
                current += piece
            elif kind is int:
                node_fixed, keys = self.lengths[piece]
                current += varint(node_fixed + sum([written[key] for key in keys]))
            else:
                if piece not in (_DOC_PART, _METADATA_PART):
                    current += varint(size_of[piece])
                fixed.append(current)
                current = b""
        fixed.append(current)
        if len(self.formats) < _MAX_FORMATS_PER_PLAN:
            self.formats[sizes] = fixed
        return fixed


def _result_plan(nodes: list, tag: bytes) -> _ResultPlan | None:
    """The recorded result as a :class:`_ResultPlan`; None where a node is copied as a NodeProto."""
    pieces: list[bytes | str | int] = []
    lengths: list[tuple[int, list[str]]] = []
    carries = False
    for number, (_, plan) in enumerate(nodes):
        if plan is None:
            return None
        node_pieces, carries_doc, carries_metadata = plan
        pieces += [tag, number]
        fixed, keys = 0, []
        for piece in node_pieces:
            if piece.__class__ is bytes:
                pieces.append(piece)
                fixed += len(piece)
            else:
                field_tag, slot = piece
                pieces += [field_tag, slot]
                fixed += len(field_tag)
                keys.append(slot)
        for carried, key in ((carries_doc, _DOC_PART), (carries_metadata, _METADATA_PART)):
            if carried:
                pieces.append(key)
                keys.append(key)
                carries = True
        lengths.append((fixed, keys))
    merged: list[bytes | str | int] = []
    for piece in pieces:
        if piece.__class__ is bytes and merged and merged[-1].__class__ is bytes:
            merged[-1] += piece
        else:
            merged.append(piece)
    slots = list(dict.fromkeys(key for _, keys in lengths for key in keys if key not in (_DOC_PART, _METADATA_PART)))
    return _ResultPlan(merged, lengths, slots, carries)


def _written(plan: _ResultPlan, real: dict[str, str], node: onnx.NodeProto) -> bytes:
    """The run of node fields a :class:`_ResultPlan` gives with ``real``'s names (and
    ``node``'s carried fields): each node is tag, varint(payload's length), payload."""
    texts = [real[slot].encode() for slot in plan.slots]
    if plan.carries:
        texts += _carried_fields(node)
    fixed = plan.format_for(tuple([len(text) for text in texts]))
    parts: list = [None] * (2 * len(fixed) - 1)
    parts[0::2] = fixed
    parts[1::2] = [texts[k] for k in plan.order]
    return b"".join(parts)


def _moved_fields(node: onnx.NodeProto, result: onnx.NodeProto) -> tuple[tuple[bytes, ...], bytes] | None:
    """Where ``result`` is ``node`` copied with some attributes dropped and others appended
    (:func:`lowering.conversion.adapters.moved`): the dropped attributes' fields and the appended ones', as
    wire bytes; else None."""
    own = [attribute.SerializeToString() for attribute in node.attribute]
    produced = [attribute.SerializeToString() for attribute in result.attribute]
    kept, position = [], 0
    for attribute in produced:  # the node's attributes kept, in order, then those appended
        while position < len(own) and own[position] != attribute:
            position += 1
        if position == len(own):
            break
        kept.append(position)
        position += 1
    appended = produced[len(kept) :]
    expected = onnx.NodeProto()
    expected.CopyFrom(node)
    del expected.attribute[:]
    expected.attribute.extend(node.attribute[k] for k in kept)
    expected.attribute.extend(result.attribute[len(kept) :])
    if expected.SerializeToString() != result.SerializeToString():
        return None
    dropped = tuple(protowire.field(protowire.ATTRIBUTE_TAG, own[k]) for k in range(len(own)) if k not in kept)
    return dropped, b"".join(protowire.field(protowire.ATTRIBUTE_TAG, attribute) for attribute in appended)


def moved_written(node: onnx.NodeProto, dropped: tuple[bytes, ...], appended: bytes, tag: bytes) -> bytes | None:
    """The node field of ``node`` moved as recorded (see :func:`_moved_fields`): its own bytes
    less each dropped attribute's field, with the appended ones after (parsed back, a repeated
    field's items come in the order written). None where a dropped field's bytes occur in the
    node more than once, overlapping or not (then they may lie inside another field)."""
    data = node.SerializeToString()
    for attribute in dropped:
        start = data.find(attribute)  # (found: the node holds that attribute)
        if data.find(attribute, start + 1) >= 0:  # there twice, or overlapping itself
            return None
        data = data[:start] + data[start + len(attribute) :]
    data += appended
    return tag + protowire.varint(len(data)) + data


def _named_copy(template: onnx.NodeProto, real: dict[str, str]) -> onnx.NodeProto:
    """A copy of a template node with the slots in its names (and tensor names) filled."""
    copy = onnx.NodeProto()
    copy.CopyFrom(template)
    copy.input[:] = [real.get(n, n) for n in copy.input]
    copy.output[:] = [real.get(n, n) for n in copy.output]
    if copy.name:
        copy.name = real.get(copy.name, copy.name)
    for attribute in copy.attribute:
        if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.name:
            attribute.t.name = real.get(attribute.t.name, attribute.t.name)
    return copy


_DOC_STRING_FIELD, _METADATA_PROPS_FIELD = 6, 9  # NodeProto's field numbers


def _carried_fields(node: onnx.NodeProto) -> tuple[bytes, bytes]:
    """The node's doc_string and its metadata_props, each as wire bytes: cut from the node's
    own bytes (every field of a NodeProto is length-delimited), else written anew."""
    data = node.SerializeToString()
    doc, metadata = [], []
    position, size = 0, len(data)
    while position < size:
        start = position
        tag = data[position]
        if tag & 0x80 or tag & 7 != 2:  # a field numbered past 15, or not length-delimited: unknown
            return _carried_fields_written(node)
        position += 1
        length = data[position]
        if length & 0x80:
            length, position = protowire.read_varint(data, position)
        else:
            position += 1
        position += length
        field_number = tag >> 3
        if field_number == _DOC_STRING_FIELD:
            doc.append(data[start:position])
        elif field_number == _METADATA_PROPS_FIELD:
            metadata.append(data[start:position])
    return b"".join(doc), b"".join(metadata)


def _carried_fields_written(node: onnx.NodeProto) -> tuple[bytes, bytes]:
    """:func:`_carried_fields` by copying the fields into NodeProtos of their own."""
    doc, metadata = onnx.NodeProto(), onnx.NodeProto()
    if node.HasField("doc_string"):
        doc.doc_string = node.doc_string
    metadata.metadata_props.extend(node.metadata_props)
    return doc.SerializeToString(), metadata.SerializeToString()


def _reader(slot: tuple[bool, int] | None, index: int) -> int | None:
    """Where a value of node ``index``'s ``slot`` is read (:meth:`lowering.scopes.Scope.type_of`):
    an input by the node, an output as if by the next node (its producer is the node itself)."""
    if slot is None:
        return None
    return index if slot[0] else index + 1


def _slots_of(node: onnx.NodeProto) -> dict[str, tuple[bool, int]]:
    slots: dict[str, tuple[bool, int]] = {}
    for k, name in enumerate(node.output):
        if name:
            slots.setdefault(name, (False, k))
    for k, name in enumerate(node.input):
        if name:
            slots.setdefault(name, (True, k))
    return slots


def _holds_markers(node: onnx.NodeProto) -> bool:
    """Whether ``node`` holds a marker's text (see :func:`_marked`): as its doc_string, or
    anywhere in a graph it holds (where a result's node carrying it could not be told apart)."""
    if node.HasField("doc_string") and node.doc_string == _DOC_MARK:
        return True
    if any(attribute.type in GRAPH_TYPES for attribute in node.attribute):
        data = node.SerializeToString()
        return _DOC_MARK.encode() in data or _METADATA_MARK.encode() in data
    return False


def _marked(node: onnx.NodeProto) -> onnx.NodeProto:
    """A copy of ``node`` whose carried fields are markers."""
    marked = onnx.NodeProto()
    marked.CopyFrom(node)
    marked.doc_string = _DOC_MARK
    del marked.metadata_props[:]
    marked.metadata_props.add(key=_METADATA_MARK)
    return marked


def _carrying(produced: onnx.NodeProto, node: onnx.NodeProto) -> onnx.NodeProto:
    """``produced`` with ``node``'s carried fields where it, or a node of a subgraph it holds,
    holds their markers."""
    for attribute in produced.attribute:
        for graph in [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs:
            for inner in graph.node:
                _carrying(inner, node)
    if produced.doc_string == _DOC_MARK:
        if node.HasField("doc_string"):
            produced.doc_string = node.doc_string
        else:
            produced.ClearField("doc_string")
    if len(produced.metadata_props) == 1 and produced.metadata_props[0].key == _METADATA_MARK:
        del produced.metadata_props[:]
        produced.metadata_props.extend(node.metadata_props)
    return produced


def _templated(result, node, slots, made: list[tuple[str, str, str]], hint: str):
    """The result with every name of the node and every fresh name as a slot, and each fresh
    name's hint as (what it starts with, the text after, the tail); None where a name of the
    node shows up anywhere else (an attribute, a literal hint)."""
    names = {name: _slot("i" if is_input else "o", k) for name, (is_input, k) in slots.items()}
    for k, (_, _, name) in enumerate(made):
        names.setdefault(name, _slot("n", k))
    hints = []
    for k, (text, tail, _) in enumerate(made):
        # What the hint may have been made from: an earlier fresh name, or the node's hint; where
        # more than one fits (an earlier name that came out as its own hint), a replay must find
        # them all giving the same text, else the node is legalized without the recording.
        readings = [(_slot("n", j), text[len(made[j][2]) :]) for j in range(k) if _starts_with_name(text, made[j][2])]
        if hint and _starts_with_name(text, hint):
            readings.append(("hint", text[len(hint) :]))
        readings = readings or [(None, text)]
        if any(_mentions(rest, node) for _, rest in readings):
            return None
        hints.append((readings, tail))
    nodes = []
    for produced in result:
        copy = onnx.NodeProto()
        copy.CopyFrom(produced)
        copy.input[:] = [names.get(n, n) for n in copy.input]
        copy.output[:] = [names.get(n, n) for n in copy.output]
        if copy.name:
            if copy.name == node.name:
                if node.name in slots:  # also a value's name: which one a replay means cannot be told
                    return None
                copy.name = _slot("h", 0)
            elif copy.name in names:
                copy.name = names[copy.name]
            elif _mentions(copy.name, node):
                return None
        for attribute in copy.attribute:
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                return None
            if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.name:
                attribute.t.name = names.get(attribute.t.name, attribute.t.name)
            if _names_held(attribute, node):
                return None
        if any(name and _SLOT not in name and _mentions(name, node) for name in [*copy.input, *copy.output]):
            return None
        if copy.doc_string != _DOC_MARK and _mentions(copy.doc_string, node):
            return None
        nodes.append((copy, _wire_plan(copy)))
    return hints, nodes


def _wire_plan(template: onnx.NodeProto):
    """How to write the template node as wire bytes for a replay: its fields as pieces (wire
    bytes written once, or (tag, slot) where a slot's name goes), and whether it carries the
    node's doc_string and metadata_props; None where an attribute holds a slot (a Constant's
    tensor named like a fresh value): then it is copied as a NodeProto."""
    if any(_SLOT in attribute.t.name for attribute in template.attribute if attribute.t.name):
        return None
    names = [(protowire.INPUT_TAG, n) for n in template.input] + [(protowire.OUTPUT_TAG, n) for n in template.output]
    if template.HasField("name"):
        names.append((protowire.NAME_TAG, template.name))
    rest = onnx.NodeProto()
    rest.CopyFrom(template)
    for field_name in ("input", "output", "name"):
        rest.ClearField(field_name)
    carries_doc = rest.doc_string == _DOC_MARK
    carries_metadata = len(rest.metadata_props) == 1 and rest.metadata_props[0].key == _METADATA_MARK
    if carries_doc:
        rest.ClearField("doc_string")
    if carries_metadata:
        del rest.metadata_props[:]
    pieces: list[bytes | tuple[bytes, str]] = []
    for field_tag, name in names:
        if _SLOT in name:
            pieces.append((field_tag, name))
        elif pieces and pieces[-1].__class__ is bytes:
            pieces[-1] += field_tag + protowire.length_prefixed(name)
        else:
            pieces.append(field_tag + protowire.length_prefixed(name))
    pieces.append(rest.SerializeToString())
    return pieces, carries_doc, carries_metadata


_TENSOR_TYPES = (onnx.AttributeProto.TENSOR, onnx.AttributeProto.TENSORS)


def _names_held(attribute: onnx.AttributeProto, node: onnx.NodeProto) -> bool:
    """Whether an attribute holds a name of the node where names can be held: strings and
    tensor names."""
    texts = [attribute.s, *attribute.strings]
    tensors = [attribute.t, *attribute.tensors] if attribute.type in _TENSOR_TYPES else []
    texts += [tensor.name.encode() for tensor in tensors]
    texts += [t.values.name.encode() for t in [attribute.sparse_tensor, *attribute.sparse_tensors]]
    return any(text and _mentions(text, node, raw=True) for text in texts)


def _starts_with_name(text: str, name: str) -> bool:
    """``text`` is ``name`` and a suffix such as ``_axes`` (how patterns derive names)."""
    return text.startswith(name) and (len(text) == len(name) or text[len(name)] == "_")


def _mentions(text, node: onnx.NodeProto, raw: bool = False) -> bool:
    """Whether ``text`` holds a name of the node (its own, an input's, an output's)."""
    for name in [node.name, *node.input, *node.output]:
        if name and (name.encode() in text if raw else name in text):
            return True
    return False


def _matching(recordings: list, scope, index: int, inputs: list, outputs: list, answers: dict):
    """The recording whose reads give the same answers for node ``index`` of these ``inputs``
    and ``outputs``, or None. A value's answer is asked once per scope (kept in ``answers``):
    the producer's output is the reader's input, and a value's type and constant value stay
    what they are through the pass."""
    judged_type_string = scope.type_string_of if scope.__class__ is scopes.Scope else None
    for recorded in recordings:
        judged_reads = recorded.judged_reads
        if judged_reads is not None and judged_type_string is not None:
            for is_input, slot, expected in judged_reads:
                name = inputs[slot] if is_input else outputs[slot]
                answer = answers.get(name, _UNRECORDABLE)
                if answer is _UNRECORDABLE:
                    answer = answers[name] = judged_type_string(name, index if is_input else index + 1)
                if answer != expected:
                    break
            else:
                return recorded
            continue
        for read, is_input, slot, expected in recorded.reads:
            name = inputs[slot] if is_input else outputs[slot]
            if read == "judged_type_of":  # (the most asked: kept for its value's name alone)
                answer = answers.get(name, _UNRECORDABLE)
                if answer is _UNRECORDABLE:
                    type_proto = scope.type_of(name, index if is_input else index + 1)
                    answer = answers[name] = None if type_proto is None else declared_types.type_string(type_proto)
            else:
                key = (read, name)
                answer = answers.get(key, _UNRECORDABLE)
                if answer is _UNRECORDABLE:
                    if read == "inferred_type_of":
                        found = scope.inferred_type_of(name, index if is_input else index + 1)
                    else:
                        found = getattr(scope, read)(name)
                    answer = answers[key] = _answer_key(found, read)
            if answer != expected:
                break
        else:
            return recorded
    return None
