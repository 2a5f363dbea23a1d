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

from .builder import Value

_MARK = "\x00"
_PLACEHOLDER = re.compile("(\x00[a-z]\\d+\x00)")


def placeholder(kind: str, index: int) -> str:
    return f"{_MARK}{kind}{index}{_MARK}"


class RecordingNames:
    """A name allocator that hands out placeholders and records the hints asked for."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def fresh(self, hint: str) -> str:
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
        # Hints split around their placeholders once, so replaying is a join per name.
        for event in self.events:
            if event[0] == "name":
                self._plan.append(("name", event[1], _PLACEHOLDER.split(event[2])))
            else:
                _, name, value, element_type, hint = event
                self._plan.append(("constant", name, _PLACEHOLDER.split(hint), value, element_type))
        # Only the fields the recorded node has set (proto2: an empty string set is still serialized).
        self._shapes = [
            (
                {"op_type": n.op_type, **({"domain": n.domain} if n.HasField("domain") else {})},
                list(n.input),
                list(n.output),
                n.name,
                list(n.attribute),
            )
            for n in self.nodes
        ]

    def instantiate(self, node: onnx.NodeProto, hint: str, names, constants) -> list[onnx.NodeProto]:
        """The recorded nodes for ``node``, with fresh names asked for in the recorded order."""
        real: dict[str, str] = {self.hint: hint}
        real.update(zip(self.inputs, node.input, strict=False))
        real.update(zip(self.outputs, node.output, strict=False))
        get = real.get
        for step in self._plan:
            text = "".join([get(part, part) for part in step[2]])
            if step[0] == "name":
                real[step[1]] = names.fresh(text)
            else:
                real[step[1]] = constants.scalar(step[3], step[4], text).name
        return [
            onnx.NodeProto(
                **fields,
                input=[get(name, name) for name in inputs],
                output=[get(name, name) for name in outputs],
                name=get(name, name),
                attribute=attributes,
            )
            for fields, inputs, outputs, name, attributes in self._shapes
        ]
