"""Ops whose nodes stay as they are at the target, decided once per op instead of per node.

A node of op ``X`` written at version ``s`` is kept as it is at version ``t`` of the target
(:func:`lowering.moving.move`: re-versioned, label ``X-s→t``) where no step between changes a
node's meaning (:func:`lowering.versioning.same_meaning`: same signature, no known change), no
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
the attributes both versions have default alike, and no known change between affects it.
"""

from __future__ import annotations

import functools

from .. import adapters, schemas, versioning
from ..moving import OPTIONAL_CONSTRUCTORS
from ..registry import rule_for
from ..scopes import Scope


def kept_by_op(scope: Scope, visited: list[int], requested: set[str]) -> tuple[list[int], dict[str, int]]:
    """``visited`` without the nodes that stay as they are by their op alone (see the module
    docstring), and how many were left out under each report label. ``requested``: ops the
    target lowers (never left out)."""
    universe = scope.element_types_of_all_values()
    if universe is None:
        return visited, {}
    op_types = scope.op_types
    source_opset, target_opset = scope.source_opset, scope.opset
    lanes: dict[str, _Lane] = {}
    for op_type in {op_types[index] for index in visited}:
        if op_type not in requested:
            lane = _lane(op_type, source_opset, target_opset, universe)
            if lane is not None:
                lanes[op_type] = lane
    if not lanes:
        return visited, {}
    nodes = scope.graph.node
    other_domains = scope.other_domains
    walked: list[int] = []
    counted: dict[str, int] = {}
    firsts: list[int] = []  # each counted op's first node: walked (it writes the label where the walk would)
    for index in visited:
        lane = lanes.get(op_types[index])
        if lane is None:
            walked.append(index)
            continue
        node = nodes[index]
        attributes = node.attribute
        if (
            (attributes and not lane.takes(attributes))
            or (lane.by_node and not lane.leaves(node, attributes))
            or (other_domains and node.domain not in schemas.DEFAULT_DOMAINS)
        ):
            walked.append(index)
        elif lane.label in counted:
            counted[lane.label] += 1
        else:
            counted[lane.label] = 0
            firsts.append(index)
    if firsts:
        walked = sorted(walked + firsts)
    return walked, {label: count for label, count in counted.items() if count}


class _Lane:
    """How the nodes of one op are kept as they are (see :func:`_lane`)."""

    def __init__(self, op_type: str, source: int, target: int, by_node: bool) -> None:
        self.label = f"{op_type}-{source}→{target}"
        self.source, self.target = source, target
        schema = schemas.schema_in_force(op_type, target)
        self.taken = {name: int(attribute.type.value) for name, attribute in schema.attributes.items()}
        self.required = frozenset(name for name, attribute in schema.attributes.items() if attribute.required)
        self.by_node = by_node
        self.changes = adapters.changes_between(op_type, source, target)  # (as change_for asks them)
        self.going_down = target < source

    def takes(self, attributes) -> bool:
        """Whether the node's ``attributes`` are the target schema's, of their types (an
        attribute it lacks, a graph under a ``__`` name among them, is judged by the walk:
        :func:`lowering.versioning.meaning_change`)."""
        taken = self.taken
        for attribute in attributes:
            if taken.get(attribute.name) != attribute.type:
                return False
        return True

    def leaves(self, node, attributes) -> bool:
        """Where judged node by node: whether ``node`` (of ``attributes``) sets every attribute
        the target requires and no known change between affects it."""
        if self.required and not self.required <= {attribute.name for attribute in attributes}:
            return False
        return not any(change.changes(node, self.going_down) for change in self.changes)


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
    node's meaning (:func:`lowering.versioning.same_meaning`); "by node" where the versions bind
    inputs and outputs alike, default alike the attributes both have, and an adapter between
    leaves every node no known change affects (Constant-13 to 11: step 12 added value_float and
    others); None else, or where a rule owns the op, it holds graphs, or the versions tie other
    inputs and outputs to one type (Pow-7 ties its exponent's to its base's; Pow-12 does not)."""
    if rule_for("", op_type) is not None or op_type in schemas.ops_with_subgraphs() or op_type in OPTIONAL_CONSTRUCTORS:
        return None
    if _type_groups(op_type, source) != _type_groups(op_type, target):
        return None
    found = adapters.adapter_for(op_type, source, target)
    if versioning.same_meaning(op_type, source, target):
        return "whole" if found is None or found.types_only else None
    if found is not None and not (found.types_only or found.changed_only):
        return None
    before, after = schemas.schema_in_force(op_type, source), schemas.schema_in_force(op_type, target)
    if after.deprecated or versioning.formal_signature(before) != versioning.formal_signature(after):
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
