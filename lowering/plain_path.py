"""How the driver applies patterns to a graph: the plain path, which is the specification.

The driver asks a path for one :class:`GraphEdits` per graph and for each decomposition it
needs. The plain path runs the rule on every node, keeps the replacements by node index and
rebuilds the node list as NodeProtos at the end. The fast path (:mod:`lowering.fast`) keeps this
interface and gives the same bytes; without it the product is the same, only slower.
"""

from __future__ import annotations

from typing import NamedTuple

import onnx

from .builder import Builder
from .conversion import node_moves
from .decomposition import check_input_accepted, decompose, input_value, rule_attributes
from .errors import NotLowered
from .naming import NameAllocator
from .registry import Rule, default_domain_rule
from .scopes import Scope, ShapeSource


class KeptByOp(NamedTuple):
    """What a path decided a conversion's walk of a graph leaves out (see :meth:`PlainPath.kept_by_op`)."""

    walked: list[int]  # the nodes the walk still looks at, in order
    counted: dict[str, int]  # the nodes left out, kept as they are or moved as written, by report label
    written: dict[int, bytes]  # the nodes moved without the attributes they state at their default, as node fields


class GraphEdits:
    """The replacements of one graph's nodes, applied at the end of its walk.

    ``take(node, index)``: whether the path took the node itself (the driver then skips it);
    ``settle()``: finish what was taken; the driver calls it before anything else asks for a
    name, so names are handed out in node order whatever the path; ``replace``; ``apply()``
    rebuilds the node list and says whether anything changed."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.replaced: dict[int, list] = {}

    def take(self, node: onnx.NodeProto, index: int) -> bool:
        return False

    def settle(self) -> None:
        return None

    def replace(self, index: int, nodes: list) -> None:
        self.replaced[index] = nodes

    def apply(self) -> bool:
        if not self.replaced:
            return False
        rebuild_nodes(self.scope.graph, self.scope.constants.nodes, self.replaced)
        return True


class PlainPath:
    """Every node through its rule, names listed from the model, node lists rebuilt."""

    name = "plain"
    body_memo: dict | None = None  # function bodies are made ready for every node

    def __init__(self, driver) -> None:
        self.driver = driver

    def edits(self, scope: Scope) -> GraphEdits:
        return GraphEdits(scope)

    def name_allocator(self, model: onnx.ModelProto) -> NameAllocator:
        """What hands out the pass's fresh names, avoiding every name of ``model``."""
        return NameAllocator(model=model)

    def inference_input(self) -> onnx.ModelProto | bytes:
        """What onnx type inference reads for the main graph's twin: the model before the pass."""
        return self.driver.original

    def legalize(self, scope: Scope, node: onnx.NodeProto, index: int) -> list | None:
        """The nodes that make ``node`` legal (:meth:`lowering.engine.Legalizer.legalize`)."""
        return self.driver.legalize(scope, node, index)

    def keeps_meaning(self, node: onnx.NodeProto, source_version: int, target_version: int, input_types: list) -> bool:
        """Whether ``node`` keeps its meaning across the version steps
        (:func:`lowering.conversion.node_moves.keeps_meaning`), judged here for every node."""
        return node_moves.keeps_meaning(node, source_version, target_version, input_types)

    def types_most_asked(self, visited: int) -> bool:
        """Whether a walk of ``visited`` nodes is told it will ask for most types
        (:attr:`lowering.scopes.Scope.most_types_asked`); not here: a value is followed back
        through the index of every output, where it is not among the nodes just before."""
        del visited
        return False

    def shape_source(self, scope: Scope) -> ShapeSource | None:
        """What ``scope`` asks for a value's static shape before onnx's inference of the whole
        graph (:meth:`lowering.scopes.Scope.inferred_type_of`): nothing here."""
        del scope
        return None

    def kept_by_op(self, scope: Scope, visited: list[int]) -> KeptByOp:
        """The nodes of ``visited`` a conversion's walk looks at, how many it left out (kept as
        they are, or moved as written) under each report label, and the nodes it moved, as
        written (node fields): here none is left out."""
        return KeptByOp(visited, {}, {})

    def as_nodes(self, result: list) -> list[onnx.NodeProto]:
        """The nodes of a result this path gave (:meth:`decompose`, :meth:`legalize`) as
        NodeProtos: here they are."""
        return result

    def may_hold_ops(self, model: onnx.ModelProto, op_types: frozenset[str]) -> bool:
        """Whether ``model`` (the pass's result) may hold a node of one of ``op_types``: here
        always, so the caller counts them node by node."""
        del model, op_types
        return True

    def checked_kind(self, result: list | None) -> object | None:
        """A key under which a check at the target that ``result`` passed stands for every
        result given the same key (one made from the same recording, names aside); None where
        each result is checked on its own, as here."""
        del result
        return None

    def decompose(self, rule: Rule, version: int, scope: Scope, node: onnx.NodeProto, index: int, location: str):
        """The rule's nodes for ``node`` (NodeProtos); NotLowered (raised) where it does not apply."""
        inputs = [input_value(scope, name, index) for name in node.input]
        check_input_accepted(rule, version, node, inputs[0] if inputs else None, location)
        attributes = rule_attributes(rule, node, location)
        return self.run_rule(rule, scope, node, inputs, attributes)

    def run_rule(self, rule: Rule, scope: Scope, node: onnx.NodeProto, inputs, attributes) -> list:
        driver = self.driver
        builder = Builder(
            opset=scope.opset,
            target=driver.target,
            names=driver.names,
            constants=scope.constants,
            name_hint=node_hint(node),
            scope=scope,
            optionals=driver.optionals,
            rule_for=default_domain_rule,
        )
        constants_before = len(scope.constants.nodes)
        try:
            return decompose(rule, builder, inputs, attributes, list(node.output), driver.names)
        except NotLowered:
            scope.constants.rollback(constants_before)
            raise


def node_hint(node: onnx.NodeProto) -> str:
    """What the names made for a node start with: its name, else its first output, else its op."""
    return node.name or (node.output[0] if node.output else node.op_type.lower())


def rebuild_nodes(container, leading: list[onnx.NodeProto], replaced: dict[int, list]) -> None:
    """``leading`` first, then every node in order, node ``i`` replaced by the NodeProtos ``replaced[i]``."""
    nodes = [*leading]
    for index, node in enumerate(container.node):
        nodes.extend(replaced.get(index, (node,)))
    copies = [onnx.NodeProto.FromString(node.SerializeToString()) for node in nodes]  # detached from the old list
    del container.node[:]
    container.node.extend(copies)
