"""Expansion templates: a rule is run once per (op version, opset, input types, attributes);
later nodes of the same kind get copies of the recorded nodes with their own names.

Recording replaces every name with a placeholder and notes, in order, each fresh name and
shared constant the rule asked for; replaying asks for them again in the same order, so a
replayed expansion is exactly what running the rule would have produced.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import NamedTuple

import onnx

from ..builder import Value, constant_key
from ..naming import safe_characters
from . import protowire

_MARK = "\x00"
_PLACEHOLDER = re.compile("(\x00[a-z]\\d+\x00)")


def placeholder(kind: str, index: int) -> str:
    return f"{_MARK}{kind}{index}{_MARK}"


class RecordingNames:
    """A name allocator that hands out placeholders and records the hints asked for."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def fresh(self, hint: str, tail: str = "") -> str:
        del tail  # the replay finds the tail in the hint itself
        name = placeholder("n", len(self.events))
        self.events.append(("name", name, hint))
        return name


class RecordingConstants:
    """A constant pool that records requests instead of making Constant nodes."""

    def __init__(self, names: RecordingNames) -> None:
        self._names = names
        self.nodes: list[onnx.NodeProto] = []  # always empty: constants are the graph's

    def scalar(self, value: float, element_type: int, hint: str) -> Value:
        name = placeholder("c", len(self._names.events))
        self._names.events.append(("constant", name, value, element_type, hint))
        return Value(name, element_type)

    def rollback(self, count: int) -> None:
        del count


class DirectPlan(NamedTuple):
    """How a template is replayed without looking at its naming events one by one."""

    finals: list[str]  # the texts of its fresh names, after the node's hint
    tails: tuple[str, ...]  # the tail of each fresh name (what the allocator checks)
    constant_keys: list[tuple]  # the shared constants it reads
    used: list[int]  # the slots its nodes read, in first-use order
    node_formats: list[tuple]  # per node: its wire bytes with %b for names, and the slots to fill them


@dataclass(eq=False)  # one template is one kind of node: compared by identity
class Template:
    """Recorded nodes (names are placeholders) and the naming events to replay."""

    nodes: list[onnx.NodeProto]
    events: list[tuple]
    inputs: list[str]  # placeholders standing for the node's inputs
    hint: str  # placeholder standing for the node's name hint
    outputs: list[str]  # placeholders standing for the node's outputs
    prepare_direct: bool = True  # whether to prepare a DirectPlan where one is possible
    _plan: list[tuple] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        # Hints split around their placeholders once, the text between made identifier-safe,
        # so a replayed name is a join; its last text is the tail the allocator checks.
        for event in self.events:
            if event[0] == "name":
                _, name, hint = event
                parts, tail = _hint_parts(hint)
                if len(parts) == 2 and parts[0] == self.hint and not parts[1].startswith(_MARK):
                    self._plan.append(("hinted", name, parts[1], tail))  # the node's hint, then text
                else:
                    self._plan.append(("name", name, parts, tail))
            else:
                _, name, value, element_type, hint = event
                self._plan.append(("constant", name, _PLACEHOLDER.split(hint), value, element_type,
                                   constant_key(value, element_type)))  # fmt: skip
        # Each node as wire bytes: its names to fill in (inputs, outputs, name), then the rest,
        # fixed: op type, attributes and domain (only the fields the recorded node has set).
        self._node_plans = []
        for node in self.nodes:
            names = [(protowire.INPUT_TAG, n) for n in node.input] + [(protowire.OUTPUT_TAG, n) for n in node.output]
            names.append((protowire.NAME_TAG, node.name))
            fixed = protowire.field(protowire.OP_TYPE_TAG, node.op_type.encode())
            fixed += b"".join(protowire.field(protowire.ATTRIBUTE_TAG, a.SerializeToString()) for a in node.attribute)
            if node.HasField("domain"):
                fixed += protowire.field(protowire.DOMAIN_TAG, node.domain.encode())
            self._node_plans.append((names, fixed))
        self.direct_plan: DirectPlan | None = None
        if self.prepare_direct:
            self._prepare_direct_replay()

    def _prepare_direct_replay(self) -> None:
        """When every fresh name is the node's hint and a text, the names a replay gets are
        known up to the hint: the texts with the counters they collide into among themselves
        (``_equal``, ``_equal_1``). A replay then claims them all at once, and fills each node's
        bytes with one formatting. None where a name is made otherwise."""
        hinted = [step for step in self._plan if step[0] == "hinted"]
        constants = [step for step in self._plan if step[0] == "constant"]
        if len(hinted) + len(constants) != len(self._plan):
            return
        finals: list[str] = []
        taken: set[str] = set()
        for _, _, text, _ in hinted:
            final, counter = text, 0
            while final in taken:
                counter += 1
                final = f"{text}_{counter}"
            finals.append(final)
            taken.add(final)
        slots = [*self.inputs, *self.outputs, self.hint, *(s[1] for s in hinted), *(s[1] for s in constants)]
        position = {name: k for k, name in enumerate(slots)}
        used: dict[int, int] = {}  # the slots the nodes read, in first-use order, each to its place there
        node_formats = []
        for names_to_fill, fixed in self._node_plans:
            pattern, indices = b"", []
            for tag, name in names_to_fill:
                if name in position:
                    indices.append(used.setdefault(position[name], len(used)))
                    pattern += tag + b"%b"
                else:  # a literal name (an unused output is "")
                    pattern += protowire.field(tag, name.encode()).replace(b"%", b"%%")
            node_formats.append((pattern + fixed.replace(b"%", b"%%"), _tuple_getter(indices)))
        self.direct_plan = DirectPlan(
            finals, tuple(s[3] for s in hinted), [s[5] for s in constants], list(used), node_formats
        )

    def instantiate(self, inputs, outputs, hint: str, names, constants, tag: bytes) -> list[bytes]:
        """The recorded nodes, as node fields under ``tag`` (see :mod:`lowering.protowire`),
        for a node with these ``inputs``, ``outputs`` and name ``hint``, fresh names asked for
        in the recorded order. (One node is replayed here, not as a batch of one by
        :func:`replay_together`: its columns of one cost more than this plan's steps, 50 against
        30 µs for a Trilu of nine nodes; both give the same names.)"""
        real: dict[str, str] = {self.hint: hint}
        real.update(zip(self.inputs, inputs, strict=False))
        real.update(zip(self.outputs, outputs, strict=False))
        get = real.get
        safe: dict[str, str] = {}
        fresh = names.fresh_identifier
        hint_start = None  # the hint made identifier-safe, as a name starts
        for step in self._plan:
            kind = step[0]
            if kind == "hinted":
                if hint_start is None:
                    hint_start = _identifier_start(safe_characters(hint)) if hint else ""
                text = hint_start + step[2] if hint_start else _identifier_start(step[2])
                real[step[1]] = fresh(text, step[3])
            elif kind == "name":
                _, name, parts, tail = step
                text = "".join([part if part[:1] != _MARK else _safe_part(part, get, safe) for part in parts])
                real[name] = fresh(_identifier_start(text), tail)
            else:
                _, name, hint_parts, value, element_type, key = step
                found = constants.existing(key)
                if found is None:
                    text = "".join([get(part, part) for part in hint_parts])
                    found = constants.scalar_for_key(key, value, element_type, text)
                real[name] = found.name
        varint = protowire.varint
        records = []
        for names_to_fill, fixed in self._node_plans:
            parts = []
            for field_tag, name in names_to_fill:
                text = get(name, name).encode()
                parts.append(field_tag + varint(len(text)) + text)
            parts.append(fixed)
            payload = b"".join(parts)
            records.append(tag + varint(len(payload)) + payload)
        return records


def _tuple_getter(indices: list[int]):
    """A function taking a sequence to the tuple of its items at ``indices``."""
    if len(indices) == 1:
        (only,) = indices
        return lambda sequence: (sequence[only],)
    return operator.itemgetter(*indices)


def _hint_parts(hint: str) -> tuple[list[str], str]:
    """A name hint split around its placeholders, the text between made identifier-safe,
    and its tail: the text after the last placeholder."""
    parts = [part if part.startswith(_MARK) else safe_characters(part) for part in _PLACEHOLDER.split(hint) if part]
    tail = parts[-1] if parts and not parts[-1].startswith(_MARK) else ""
    return parts, tail


def _safe_part(placeholder_name: str, get, safe: dict[str, str]) -> str:
    found = safe.get(placeholder_name)
    if found is None:
        found = safe[placeholder_name] = safe_characters(get(placeholder_name, placeholder_name))
    return found


def _identifier_start(text: str) -> str:
    """What :func:`lowering.naming.identifier` does to an already safe text: never empty,
    never starting with a digit."""
    if not text:
        return "v"
    return "_" + text if text[0].isdigit() else text


class Replay(NamedTuple):
    """A node waiting for its template's replay."""

    template: Template
    inputs: list[str]
    outputs: list[str]
    hint: str


def replay_together(replays: list[Replay], names, constants, tag: bytes) -> list[tuple[bytes, ...]] | None:
    """The node fields of many direct replays (see :meth:`Template.instantiate`), made column
    by column rather than node by node. The names are claimed all at once, so the result is
    what replaying one after the other gives; None (nothing taken) when any name is not free,
    a constant is missing, or a hint is empty: then replay them one by one."""
    hints = [hint for _, _, _, hint in replays]
    if not all(hints) or any(template.direct_plan is None for template, _, _, _ in replays):
        return None
    starts = hints if safe_characters("".join(hints)) == "".join(hints) else [safe_characters(h) for h in hints]
    starts = [_identifier_start(start) for start in starts] if any(s[0].isdigit() for s in starts) else starts
    templates = [template for template, _, _, _ in replays]
    groups: dict[Template, list[int]] = {}  # template → positions of its replays
    if templates.count(templates[0]) == len(templates):  # all of one kind, the usual case
        groups[templates[0]] = list(range(len(templates)))
    else:
        for position, template in enumerate(templates):
            groups.setdefault(template, []).append(position)
    planned = []
    candidates: list[str] = []
    tails: set[str] = set()
    for template, positions in groups.items():
        finals, template_tails, constant_keys, used, node_formats = template.direct_plan
        constant_names = []
        for key in constant_keys:
            found = constants.existing(key)
            if found is None:
                return None
            constant_names.append(found.name)
        group_starts = [starts[p] for p in positions]
        fresh_columns = [[start + final for start in group_starts] for final in finals]
        for column in fresh_columns:
            candidates.extend(column)
        tails.update(template_tails)
        planned.append((template, positions, fresh_columns, constant_names))
    if not names.claim(candidates, tails):
        return None
    records: list[tuple[bytes, ...]] = [()] * len(replays)
    small, varint = protowire.SMALL_VARINTS, protowire.varint
    for template, positions, fresh_columns, constant_names in planned:
        _, _, _, used, node_formats = template.direct_plan
        group = [replays[p] for p in positions]
        hint_slot = len(template.inputs) + len(template.outputs)
        columns = (
            [[inputs[k] for _, inputs, _, _ in group] for k in range(len(template.inputs))]
            + [[outputs[k] for _, _, outputs, _ in group] for k in range(len(template.outputs))]
            + [[hint for _, _, _, hint in group] if hint_slot in used else None]  # rarely read by a node
            + fresh_columns
            + list(constant_names)  # strings, not columns: the same in every replay
        )
        prefixed = [_length_prefixed_column(columns[slot], len(group)) for slot in used]
        field_columns = []  # per recorded node, its field in every replay
        for pattern, pick in node_formats:
            payloads = [pattern % values for values in zip(*pick(prefixed), strict=True)]
            field_columns.append(
                [tag + small[len(p)] + p if len(p) < 128 else tag + varint(len(p)) + p for p in payloads]
            )
        for position, fields in zip(positions, zip(*field_columns, strict=True), strict=True):
            records[position] = fields
    return records


def _length_prefixed_column(column: list[str] | str, size: int) -> list[bytes]:
    """Each text of a column (a single text: the same ``size`` times) length-prefixed."""
    if isinstance(column, str) or column.count(column[0]) == size:  # one value, such as a shared input
        return [protowire.length_prefixed(column if isinstance(column, str) else column[0])] * size
    small, varint = protowire.SMALL_VARINTS, protowire.varint
    return [small[len(e)] + e if len(e) < 128 else varint(len(e)) + e for e in map(str.encode, column)]
