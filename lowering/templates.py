"""Expansion templates: a rule is run once per (op version, opset, input types, attributes);
later nodes of the same kind get copies of the recorded nodes with their own names.

Recording replaces every name with a placeholder and notes, in order, each fresh name and
shared constant the rule asked for; replaying asks for them again in the same order, so a
replayed expansion is exactly what running the rule would have produced.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import onnx

from . import protowire
from .builder import Value, constant_key
from .naming import safe_characters

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


@dataclass
class Template:
    """Recorded nodes (names are placeholders) and the naming events to replay."""

    nodes: list[onnx.NodeProto]
    events: list[tuple]
    inputs: list[str]  # placeholders standing for the node's inputs
    hint: str  # placeholder standing for the node's name hint
    outputs: list[str]  # placeholders standing for the node's outputs
    _plan: list[tuple] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        # Hints split around their placeholders once, the text between made identifier-safe,
        # so a replayed name is a join; its last text is the tail the allocator checks.
        for event in self.events:
            if event[0] == "name":
                _, name, hint = event
                self._plan.append(("name", name, *_hint_parts(hint)))
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

    def instantiate(self, inputs, outputs, hint: str, names, constants, tag: bytes) -> list[bytes]:
        """The recorded nodes, as node fields under ``tag`` (see :mod:`lowering.protowire`),
        for a node with these ``inputs``, ``outputs`` and name ``hint``, fresh names asked for
        in the recorded order."""
        real: dict[str, str] = {self.hint: hint}
        real.update(zip(self.inputs, inputs, strict=False))
        real.update(zip(self.outputs, outputs, strict=False))
        get = real.get
        safe: dict[str, str] = {}
        for step in self._plan:
            if step[0] == "name":
                _, name, parts, tail = step
                text = "".join([part if part[:1] != _MARK else _safe_part(part, get, safe) for part in parts])
                real[name] = names.fresh_identifier(_identifier_start(text), tail)
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
