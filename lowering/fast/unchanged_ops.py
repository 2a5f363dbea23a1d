"""Ops whose nodes stay as they are at the target, decided once per op instead of per node.

A node of op ``X`` written at version ``s`` is kept as it is at version ``t`` of the target
(:func:`lowering.conversion.node_moves.move`: re-versioned, label ``X-s→t``) where no step between changes a
node's meaning (:func:`lowering.conversion.version_steps.same_meaning`: same signature, no known change), no
adapter but one that serves only types the target does not take crosses the steps, and the
target takes the node's types. The last holds for every node of ``X`` at once where the
versions tie the same inputs and outputs to one type (one type parameter) and

    for each formal f of X:  (types f takes at s) ∩ U ⊆ (types f takes at t),

``U`` being the element types of every value of the graph (:meth:`Scope.element_types_of_all_values`):
a valid node's value at f has a type f takes at s, and every value's type is in U. Those nodes
are then counted, not walked. The first node of each such op is still walked (it writes the
op's label into the report where the walk would, and its check at the target is made); so are
nodes of another domain, and nodes holding an attribute the op's schema does not have, or not
of that type (a graph under a ``__`` name among them), which the walk judges alone.

Where the versions' signatures differ only in attributes (Constant-13 and 11: step 12 added
value_float and others, under a known change whose adapter leaves every node it does not
affect), a node is kept as it is where, besides, it sets every attribute the target requires,
the attributes both versions have default alike, and no known change between affects it. A
change declared to affect only nodes holding some attributes (``adapters.HeldAttributes``),
none of which the target takes, affects no node whose attributes the target takes: Constant's
at 12 is not asked of each Constant node going to 11.
A node that states, besides, an attribute the target's version lacks at its default (every
TorchScript Reshape-14 states allowzero=0) means what it means without it: the adapter, which
leaves that node, moves it without the attribute (``tests/rules/versions/test_adapter_registry.py``), so
here the node's bytes less that attribute's are written for it, under the adapter's label;
the first such node of each op is walked, as above.
"""

from __future__ import annotations

import functools

import onnx

from .. import schemas
from ..conversion import adapters, version_steps
from ..conversion.node_moves import OPTIONAL_CONSTRUCTORS
from ..plain_path import KeptByOp
from ..registry import rule_for
from ..scopes import Scope
from . import protowire
from .kind_memo import moved_written


def kept_by_op(scope: Scope, visited: list[int], requested: set[str]) -> KeptByOp:
    """``visited`` without the nodes that stay as they are by their op alone (see the module
    docstring), how many were left out under each report label, and the nodes moved without
    attributes stated at their default, as written. ``requested``: ops the target lowers
    (never left out)."""
    universe = scope.element_types_of_all_values()
    if universe is None:
        return KeptByOp(visited, {}, {})
    op_types = scope.op_types
    source_opset, target_opset = scope.source_opset, scope.opset
    lanes: dict[str, _Lane] = {}
    for op_type in {op_types[index] for index in visited}:
        if op_type not in requested:
            lane = _lane(op_type, source_opset, target_opset, universe)
            if lane is not None:
                lanes[op_type] = lane
    if not lanes:
        return KeptByOp(visited, {}, {})
    nodes = scope.graph.node
    other_domains = scope.other_domains
    walked: list[int] = []
    counted: dict[str, int] = {}
    written: dict[int, bytes] = {}
    firsts: list[int] = []  # each label's first node: walked (it writes the label where the walk would)
    tag = protowire.node_tag(scope.graph)
    for index in visited:
        lane = lanes.get(op_types[index])
        if lane is None:
            walked.append(index)
            continue
        node = nodes[index]
        attributes = node.attribute
        label = lane.label
        if other_domains and node.domain not in schemas.DEFAULT_DOMAINS:
            walked.append(index)
            continue
        if (attributes and not lane.takes(attributes)) or (lane.by_node and not lane.leaves(node, attributes)):
            dropped = lane.stated_defaults(node, attributes)
            if dropped is None:
                walked.append(index)
                continue
            label = lane.moved_label
            if label in counted:
                moved = moved_written(node, dropped, b"", tag)
                if moved is None:
                    walked.append(index)
                    continue
                written[index] = moved
        if label in counted:
            counted[label] += 1
        else:
            counted[label] = 0
            firsts.append(index)
    if firsts:
        walked = sorted(walked + firsts)
    return KeptByOp(walked, {label: count for label, count in counted.items() if count}, written)


class _Lane:
    """How the nodes of one op are kept as they are (see :func:`_lane`)."""

    def __init__(self, op_type: str, source: int, target: int, by_node: bool) -> None:
        self.label = f"{op_type}-{source}→{target}"
        schema = schemas.schema_in_force(op_type, target)
        self.taken = {name: int(attribute.type.value) for name, attribute in schema.attributes.items()}
        self.required = frozenset(name for name, attribute in schema.attributes.items() if attribute.required)
        self.going_down = target < source
        # The known changes between (as change_for asks them) that may affect a node the target's
        # attributes take (:meth:`takes`): a change going up that only goes down cannot, nor one
        # affecting nodes holding attributes the target lacks (adapters.HeldAttributes).
        self.changes = [
            change
            for change in adapters.changes_between(op_type, source, target)
            if _may_affect(change, self.going_down, self.taken)
        ]
        # Judged node by node, where anything is left to judge (Constant-13 to 11: nothing).
        self.by_node = by_node and bool(self.required or self.changes)
        # Where judged node by node: the attributes the source's version has and the target's
        # lacks, each as a node states it at its default (name → the attribute's bytes).
        self.defaults_dropped: dict[str, bytes] = {}
        self.moved_label = ""
        if by_node:
            found = adapters.adapter_for(op_type, source, target)
            self.moved_label = f"{self.label} via {found.label}" if found is not None else ""
            before = schemas.schema_in_force(op_type, source)
            self.defaults_dropped = {
                name: attribute.default_value.SerializeToString()
                for name, attribute in before.attributes.items()
                if name not in self.taken and attribute.default_value.name == name
            }

    def takes(self, attributes) -> bool:
        """Whether the node's ``attributes`` are the target schema's, of their types (an
        attribute it lacks, a graph under a ``__`` name among them, is judged by the walk:
        :func:`lowering.conversion.version_steps.meaning_change`)."""
        taken = self.taken
        for attribute in attributes:
            if taken.get(attribute.name) != attribute.type:
                return False
        return True

    def stated_defaults(self, node, attributes) -> tuple[bytes, ...] | None:
        """Where ``node`` is left but for attributes the target lacks that it states at their
        default: those attributes' fields (as :func:`.kind_memo.moved_written` drops them); else None."""
        if not self.defaults_dropped or not self.moved_label:
            return None
        kept, dropped = [], []
        for attribute in attributes:
            name = attribute.name
            default = self.defaults_dropped.get(name)
            if default is None:
                kept.append(attribute)
                continue
            stated = attribute.SerializeToString()
            if stated != default:
                return None
            dropped.append(protowire.field(protowire.ATTRIBUTE_TAG, stated))
        if not dropped or not self.takes(kept) or (self.by_node and not self._leaves_without(node, kept)):
            return None
        return tuple(dropped)

    def _leaves_without(self, node, kept: list) -> bool:
        """:meth:`leaves` for ``node`` without the attributes it states at their default."""
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        del copy.attribute[:]
        copy.attribute.extend(kept)
        return self.leaves(copy, copy.attribute)

    def leaves(self, node, attributes) -> bool:
        """Where judged node by node: whether ``node`` (of ``attributes``) sets every attribute
        the target requires and no known change between affects it."""
        if self.required and not self.required <= {attribute.name for attribute in attributes}:
            return False
        return not any(change.changes(node, self.going_down) for change in self.changes)


def _may_affect(change: adapters.MeaningChange, going_down: bool, taken: dict[str, int]) -> bool:
    """Whether ``change`` may affect a node going that way whose attributes are all ``taken``'s:
    not where it only goes down and the node goes up, nor where it affects only nodes holding an
    attribute ``taken`` lacks."""
    if change.down_only and not going_down:
        return False
    affects = change.affects
    return not (isinstance(affects, adapters.HeldAttributes) and affects.names.isdisjoint(taken))


def _lane(op_type: str, source_opset: int, target_opset: int, universe: frozenset[int]) -> _Lane | None:
    """How a default-domain ``op_type`` node is kept as it is, where every node of it whose types
    are in ``universe`` is, or each node whose attributes bind alike and which no known change
    affects; else None."""
    source = schemas.version_in_force(op_type, source_opset)
    target = schemas.version_in_force(op_type, target_opset)
    if source is None or target is None or source == target:
        return None
    judged = _judged(op_type, source, target)
    if judged is None:
        return None
    inputs, outputs = _formal_counts(op_type, source)
    for element_types_of, count in ((schemas.input_element_types, inputs), (schemas.output_element_types, outputs)):
        for index in range(count):
            if (element_types_of(op_type, source, index) & universe) - element_types_of(op_type, target, index):
                return None
    return _Lane(op_type, source, target, by_node=judged == "by node")


@functools.cache
def _judged(op_type: str, source: int, target: int) -> str | None:
    """How a node of ``op_type`` moving from version ``source`` to ``target`` is judged kept as
    it is wherever the target takes its types: "whole" where every step between keeps every
    node's meaning (:func:`lowering.conversion.version_steps.same_meaning`); "by node" where the versions bind
    inputs and outputs alike, default alike the attributes both have, and an adapter between
    leaves every node no known change affects (Constant-13 to 11: step 12 added value_float and
    others); None else, or where a rule owns the op, it holds graphs, or the versions tie other
    inputs and outputs to one type (Pow-7 ties its exponent's to its base's; Pow-12 does not)."""
    if rule_for("", op_type) is not None or op_type in schemas.ops_with_subgraphs() or op_type in OPTIONAL_CONSTRUCTORS:
        return None
    if _type_groups(op_type, source) != _type_groups(op_type, target):
        return None
    found = adapters.adapter_for(op_type, source, target)
    if version_steps.same_meaning(op_type, source, target):
        return "whole" if found is None or found.types_only else None
    if found is not None and not (found.types_only or found.changed_only):
        return None
    before, after = schemas.schema_in_force(op_type, source), schemas.schema_in_force(op_type, target)
    if after.deprecated or schemas.formal_signature(before) != schemas.formal_signature(after):
        return None
    for name, attribute in after.attributes.items():
        earlier = before.attributes.get(name)
        default = attribute.default_value.SerializeToString()
        if earlier is not None and earlier.default_value.SerializeToString() != default:
            return None
    return "by node"


def _type_groups(op_type: str, version: int) -> tuple[int, ...]:
    """Which of the op's inputs and outputs must hold one type (one type parameter): each
    formal's number as the first formal of its parameter, inputs then outputs."""
    schema = schemas.schema_in_force(op_type, version)
    parameters = [formal.type_str for formal in (*schema.inputs, *schema.outputs)]
    return tuple(parameters.index(parameter) for parameter in parameters)


@functools.cache
def _formal_counts(op_type: str, version: int) -> tuple[int, int]:
    """How many inputs and outputs the op's schema declares."""
    schema = schemas.schema_in_force(op_type, version)
    return len(schema.inputs), len(schema.outputs)
