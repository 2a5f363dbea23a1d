"""Ops whose every node stays as it is at the target, decided once per op instead of per node.

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
"""

from __future__ import annotations

import collections
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
    labels, attributes = {}, {}
    for op_type in {op_types[index] for index in visited}:
        if op_type not in requested:
            label = _kept_label(op_type, scope.source_opset, scope.opset, universe)
            if label is not None:
                labels[op_type] = label
                attributes[op_type] = _attribute_types(op_type, scope.opset)
    if not labels:
        return visited, {}
    nodes = scope.graph.node
    other_domains = scope.other_domains
    walked: list[int] = []
    counted: collections.Counter[str] = collections.Counter()
    for index in visited:
        op_type = op_types[index]
        label = labels.get(op_type)
        if label is None:
            walked.append(index)
            continue
        node = nodes[index]
        if (other_domains and node.domain not in schemas.DEFAULT_DOMAINS) or (
            node.attribute and not _attributes_taken(node.attribute, attributes[op_type])
        ):
            walked.append(index)
        elif label in counted:
            counted[label] += 1
        else:
            counted[label] = 0  # (the first is walked: it writes the label where the walk would)
            walked.append(index)
    return walked, {label: count for label, count in counted.items() if count}


def _kept_label(op_type: str, source_opset: int, target_opset: int, universe: frozenset[int]) -> str | None:
    """The report's label of a default-domain ``op_type`` node kept as it is, where every node
    of it whose types are in ``universe`` is; else None."""
    source = schemas.version_in_force(op_type, source_opset)
    target = schemas.version_in_force(op_type, target_opset)
    if source is None or target is None or source == target or not _kept_whole(op_type, source, target):
        return None
    for kind, count in _formal_counts(op_type, source):
        for index in range(count):
            taken_before = schemas.element_types_of_formal(op_type, source, kind, index)
            taken_after = schemas.element_types_of_formal(op_type, target, kind, index)
            if (taken_before & universe) - taken_after:
                return None
    return f"{op_type}-{source}→{target}"


@functools.cache
def _kept_whole(op_type: str, source: int, target: int) -> bool:
    """Whether a node of ``op_type`` moving from version ``source`` to ``target`` is kept as it
    is wherever the target takes its types: no rule owns the op, it holds no graph, the steps
    between change no node's meaning, and an adapter across them serves only untaken types."""
    if rule_for("", op_type) is not None or op_type in schemas.ops_with_subgraphs() or op_type in OPTIONAL_CONSTRUCTORS:
        return False
    if not versioning.same_meaning(op_type, source, target):
        return False
    if _type_groups(op_type, source) != _type_groups(op_type, target):
        return False  # (Pow-7 ties its exponent's type to its base's; Pow-12 does not)
    found = adapters.adapter_for(op_type, source, target)
    return found is None or found.types_only


def _type_groups(op_type: str, version: int) -> tuple[int, ...]:
    """Which of the op's inputs and outputs must hold one type (one type parameter): each
    formal's number as the first formal of its parameter, inputs then outputs."""
    schema = schemas.schema_in_force(op_type, version)
    parameters = [formal.type_str for formal in (*schema.inputs, *schema.outputs)]
    return tuple(parameters.index(parameter) for parameter in parameters)


def _attributes_taken(node_attributes, taken: dict[str, int]) -> bool:
    """Whether the op's schema has each of the node's attributes, of its type (an attribute it
    lacks, a graph under a ``__`` name among them, is judged by the walk:
    :func:`lowering.versioning.meaning_change`)."""
    for attribute in node_attributes:
        if taken.get(attribute.name) != attribute.type:
            return False
    return True


@functools.cache
def _attribute_types(op_type: str, opset: int) -> dict[str, int]:
    """The attributes of ``op_type``'s schema at ``opset``, each with its type."""
    schema = schemas.schema_in_force(op_type, opset)
    return {name: int(attribute.type.value) for name, attribute in schema.attributes.items()}


@functools.cache
def _formal_counts(op_type: str, version: int) -> tuple[tuple[str, int], ...]:
    schema = schemas.schema_in_force(op_type, version)
    return (("inputs", len(schema.inputs)), ("outputs", len(schema.outputs)))
