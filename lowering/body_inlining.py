"""A node replaced by its op's ONNX function body, inlined: the body is made from the node's
input types, folded where its inputs' shapes decide values an older opset needs as attributes,
and each body node made legal at the target in turn (moved, or replaced by its own body, MLIR's
"legalized in turn"), the graphs body nodes hold too.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import onnx

from . import floats, function_bodies, schemas
from .conversion import version_steps
from .declared_types import element_type_of
from .errors import LoweringError, NotLowered
from .folding import fold_integer_values
from .graphs import constant_tensor, every_node, holds_graphs, nested_graphs, without_unread
from .local_functions import infer
from .naming import NameAllocator
from .registry import rule_for
from .report import LoweringReport
from .scopes import Scope
from .shape_folding import fold_nodes, splits_without_empty_parts
from .targets import Target

MAX_BODY_DEPTH = 8  # function bodies inlined inside function bodies, at most
# Ops that read a shape or a rank: a body holding one may fold values before it goes older.
RANK_READERS = frozenset({"Shape", "Size"})


class BodyDriver(Protocol):
    """What inlining asks of the legalization driver (:class:`lowering.engine.Legalizer`)."""

    model: onnx.ModelProto
    names: NameAllocator
    target: Target
    requested_ops: frozenset[str]
    path: object  # (its ``body_memo``: function bodies made ready per kind of node, or None)

    def move(self, scope: Scope, node, source_opset: int, location: str, constants, types, report) -> list | None: ...

    def legalize_held_graphs(
        self, body_scope: Scope, node: onnx.NodeProto, position: int, attempt: LoweringReport
    ) -> onnx.NodeProto: ...


class BodyInlining:
    """The function body of node ``index`` of ``scope`` (at ``location``) inlined, and the bodies
    of its body nodes in turn (at most :data:`MAX_BODY_DEPTH` deep)."""

    def __init__(self, driver: BodyDriver, scope: Scope, index: int, location: str) -> None:
        self.driver = driver
        self.scope = scope
        self.index = index
        self.location = location

    def inline(self, expansion, node, opset: int, known: dict, done: LoweringReport, *, depth: int) -> list:
        """``node`` (written at ``opset``) replaced by its function body, each body node made
        legal: moved from the body's opset to the target, or, where it is to be lowered or
        cannot be moved, replaced by its own body in turn (MLIR's "legalized in turn").

        The body is made from its inputs' types as the model states them or the op schemas
        give them; where that body cannot go, it is made once more from the shapes onnx
        inference knows besides (an axis or a size an older opset needs as an attribute,
        folded from a static shape), where those add anything."""
        scope, index = self.scope, self.index
        stated = [known.get(name) or scope.type_of(name, index) if name else None for name in node.input]
        for position in expansion.shaped_inputs:  # (the shapes its repair reads, where held)
            name = node.input[position] if position < len(node.input) else ""
            if name and name not in known:
                stated[position] = scope.held_type_of(name, index)
        names = self.driver.names
        mark = names.mark()
        try:
            legal = self._inline_typed(expansion, node, opset, stated, done, depth=depth)
        except NotLowered:
            names.give_back(mark)  # (the attempt's nodes are dropped: the next is named as if it came first)
            shaped = [known.get(name) or _shaped(scope, name, index) if name else None for name in node.input]
            if shaped == stated:
                raise
        except BaseException:
            names.keep(mark)
            raise
        else:
            names.keep(mark)
            return legal
        return self._inline_typed(expansion, node, opset, shaped, done, depth=depth)

    def _folded_body(self, expanded, node: onnx.NodeProto, constants: dict, types: dict):
        """The body with the values its inputs' shapes or ranks decide folded to constants (the
        axes of RMSNormalization's ReduceMean, from its input's rank), before it goes to an older
        opset: an axis an older version takes as an attribute is then a constant, not a choice
        made at run time. The body's nodes nothing reads any more go."""
        known = {name: floats.array_of(tensor) for name, tensor in constants.items()}
        nodes, folded = fold_nodes(expanded.nodes, known, types, expanded.opset, every_node, self.driver.names.fresh)
        folded.update(splits_without_empty_parts(nodes, node.output, known, types, every_node))
        if not folded:
            return expanded
        nodes = without_unread(nodes, node.output, every_node)
        constants.update(_constants_made_by(nodes))
        return dataclasses.replace(expanded, nodes=nodes)

    def _inline_typed(self, expansion, node, opset: int, input_types: list, done: LoweringReport, *, depth: int):
        """:meth:`inline` with the body made from ``input_types``."""
        scope = self.scope
        expanded = expansion.expand(
            node, opset=opset, input_types=input_types, fresh=self.driver.names.fresh, memo=self.driver.path.body_memo
        )
        constants = _constants_made_by(expanded.nodes)
        types: dict | None = None  # the body's value types, inferred when first needed

        def body_types() -> dict:
            nonlocal types
            if types is None:
                types = _types_in_body(expanded, node, input_types, self.driver.model)
            return types

        if expanded.opset != scope.opset and any(inner.op_type in RANK_READERS for inner in expanded.nodes):
            folded_body = self._folded_body(expanded, node, constants, body_types())
            if folded_body is not expanded:  # (an If folded away brings its branch's values: typed anew)
                expanded, types = folded_body, None
        try:
            legal = self._legalize_body(expanded.nodes, expanded.opset, constants, body_types, done, depth)
        except _CannotMove as cannot:
            # The body derives axes or sizes from its input's static shape that an older opset
            # needs as attributes: fold those integer values to constants and try once more.
            folded = fold_integer_values(
                expanded.nodes, constants, body_types(), expanded.opset, self.driver.names.fresh
            )
            if folded is None:
                raise NotLowered(cannot.reason) from None
            try:
                legal = self._legalize_body(folded, expanded.opset, constants, body_types, done, depth)
            except _CannotMove as still:
                raise NotLowered(still.reason) from None
        if expanded.opset != scope.opset:  # adapters and folding may leave constants nothing reads
            legal = without_unread(legal, node.output, _is_constant)
        version = schemas.version_in_force(node.op_type, opset, node.domain)
        unrun = self._unrun_by_the_target(node, version, input_types, legal, body_types, scope.opset)
        if unrun:
            raise NotLowered(unrun)
        done.rewritten[f"{node.op_type}-{version} by its function body"] += 1
        return legal

    def _unrun_by_the_target(self, node, version, input_types: list, legal: list, body_types, opset: int) -> str | None:
        """Why the body would not run where the node runs: on an input of a float type the target
        does not compute in (bfloat16, float8), the target has the op's own kernel and neither a
        kernel nor a widening (float16 in float32) for an op of the body on that type (Celu's
        Div on bfloat16 in onnxruntime). None where it runs, or the node itself does not."""
        element_type = element_type_of(input_types[0] if input_types else None)
        target = self.driver.target
        if not element_type or element_type in target.compute_types or not floats.is_float(element_type):
            return None
        if version is None or target.lacks_kernel(node.op_type, version, element_type):
            return None
        types = body_types()
        lacking = sorted(
            {
                body_node.op_type
                for body_node in legal
                if body_node.domain in ("", "ai.onnx")
                and body_node.op_type not in ("Constant", "Cast", "CastLike")
                and body_node.output
                and element_type_of(types.get(body_node.output[0])) == element_type
                and (body_version := schemas.version_in_force(body_node.op_type, opset)) is not None
                and target.lacks_kernel(body_node.op_type, body_version, element_type)
                and not target.runs_widened(body_node.op_type, body_version, element_type)
            }
        )
        if not lacking:
            return None
        name = schemas.type_name(element_type)
        return (
            f"its function body's {', '.join(lacking)} run on no {name} in the target, which runs "
            f"{node.op_type}-{version} itself on {name}: the lowered model would not run"
        )

    def _legalize_body(self, nodes, opset: int, constants, body_types, done: LoweringReport, depth: int) -> list:
        """Each body node (written at ``opset``) made legal at the target, the nodes of the graphs
        it holds too (as a model's subgraphs: the driver's ``legalize_held_graphs``); _CannotMove where
        one can be neither moved nor replaced by its own body."""
        driver, scope = self.driver, self.scope
        legal: list[onnx.NodeProto] = []
        attempt = LoweringReport()  # counted into ``done`` only if the whole body goes
        body_scope: Scope | None = None  # the body as a graph, made for the first subgraph to legalize
        for position, body_node in enumerate(nodes):
            inner = function_expansion(body_node)
            nested = inner is not None and depth < MAX_BODY_DEPTH
            if body_node.op_type in driver.requested_ops:
                if nested:
                    legal += self.inline(inner, body_node, opset, body_types(), attempt, depth=depth + 1)
                    continue
                if body_scope is None:
                    body_scope = self._body_scope(nodes, opset, body_types)
                legal += self._by_its_rule(body_scope, body_node, position, opset, attempt)
                continue
            if holds_graphs(body_node) and self._subgraphs_to_legalize(body_node, opset, scope.opset):
                if body_scope is None:
                    body_scope = self._body_scope(nodes, opset, body_types)
                try:
                    body_node = driver.legalize_held_graphs(body_scope, body_node, position, attempt)
                except LoweringError as error:
                    raise _CannotMove(f"its function body cannot be written at opset {scope.opset} ({error})") from None
            local_types = body_types() if opset != scope.opset else {}
            try:
                moved = driver.move(scope, body_node, opset, self.location, constants, local_types, attempt)
            except LoweringError as error:
                if not nested:
                    raise _CannotMove(f"its function body cannot be written at opset {scope.opset} ({error})") from None
                legal += self.inline(inner, body_node, opset, body_types(), attempt, depth=depth + 1)
                continue
            legal.extend(moved if moved is not None else [body_node])
        done.adapted.update(attempt.adapted)
        done.rewritten.update(attempt.rewritten)
        return legal

    def _by_its_rule(self, body_scope: Scope, node: onnx.NodeProto, position: int, opset: int, attempt) -> list:
        """A body node that is to be lowered and has no body of its own, lowered by its rule (a
        Scan in LinearAttention's body), the graphs it holds made legal first; NotLowered where
        no rule serves it or the rule does not apply."""
        why = f"its function body holds {node.op_type}, which is to be lowered too"
        rule = rule_for(node.domain, node.op_type)
        version = schemas.version_in_force(node.op_type, opset, node.domain)
        if rule is None or version is None or not rule.serves(version):
            raise NotLowered(f"{why}, and no rule lowers {node.op_type}-{version}")
        if holds_graphs(node) and self._subgraphs_to_legalize(node, opset, self.scope.opset):
            try:
                node = self.driver.legalize_held_graphs(body_scope, node, position, attempt)
            except LoweringError as error:
                raise _CannotMove(
                    f"its function body cannot be written at opset {self.scope.opset} ({error})"
                ) from None
        pooled = len(body_scope.constants.nodes)  # (the rule's shared constants, written just before its nodes)
        try:
            lowered = self.driver.path.decompose(rule, version, body_scope, node, position, self.location)
        except NotLowered as declined:
            raise NotLowered(f"{why}, and its rule does not apply: {declined.reason}") from None
        attempt.rewritten[f"{node.op_type}-{version}"] += 1
        return [*body_scope.constants.nodes[pooled:], *lowered]

    def _subgraphs_to_legalize(self, node: onnx.NodeProto, opset: int, target_opset: int) -> bool:
        """Whether a body node's graphs hold a node that is to be lowered, or (going from the
        body's ``opset`` to another) one that may mean something else at the target."""
        if opset != target_opset and _changing_in_subgraphs(node, opset, target_opset):
            return True
        requested = self.driver.requested_ops
        return bool(requested) and any(
            inner.op_type in requested for graph in nested_graphs([node]) for inner in graph.node
        )

    def _body_scope(self, nodes, opset: int, body_types) -> Scope:
        """A function body's nodes (not yet in any graph) as a scope inside ``scope``, for the
        graphs they hold: values typed as inference gives them from the node's input types."""
        scope = self.scope
        types = body_types()
        graph = onnx.helper.make_graph(list(nodes), "function_body", [], [])
        inferred: list[onnx.GraphProto | None] = []

        def twin() -> onnx.GraphProto | None:
            if not inferred:
                inferred.append(_inferred_body(graph, types, opset, self.driver.model))
            return inferred[0]

        return Scope(
            graph,
            opset=scope.opset,
            source_opset=opset,
            location=f"{self.location} > its function body",
            names=self.driver.names,
            parent=scope,
            twin=twin,
            input_types=types,
            unknown_types_reason=scope.unknown_types_reason,
        )


class _CannotMove(Exception):
    """A function body's node can be neither moved to the target nor replaced by its own body."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _shaped(scope: Scope, name: str, index: int) -> onnx.TypeProto | None:
    """An input's type with its shape where inference knows it."""
    return scope.inferred_type_of(name) or scope.type_of(name, index)


def _inferred_body(graph: onnx.GraphProto, types: dict, opset: int, model: onnx.ModelProto) -> onnx.GraphProto | None:
    """``graph`` (a function body's nodes) as onnx inference types it, its subgraphs'
    values included, the values of ``types`` given their types."""
    typed = onnx.GraphProto()
    typed.CopyFrom(graph)
    produced = {name for node in graph.node for name in node.output}
    for name in sorted(set(types) - produced):
        typed.input.add(name=name).type.CopyFrom(types[name])
    body = onnx.helper.make_model(
        typed, opset_imports=[onnx.helper.make_opsetid("", opset)], ir_version=max(model.ir_version, 8)
    )
    inferred = infer(body)
    return inferred.graph if inferred is not None else None


def _types_in_body(expanded, node: onnx.NodeProto, input_types: list, model: onnx.ModelProto) -> dict:
    """The types onnx inference gives the values of an inlined body, from the node's input types."""
    inputs = []
    for name, type_proto in zip(node.input, input_types, strict=False):
        if name and type_proto is not None:
            info = onnx.ValueInfoProto(name=name)
            info.type.CopyFrom(type_proto)
            inputs.append(info)
    graph = onnx.helper.make_graph(expanded.nodes, "body", inputs, [])
    body = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid("", expanded.opset)], ir_version=max(model.ir_version, 8)
    )
    inferred = infer(body)
    if inferred is None:
        return {}
    types = {info.name: info.type for info in inferred.graph.value_info}
    types.update({info.name: info.type for info in inputs})
    return types


def _changing_in_subgraphs(node: onnx.NodeProto, opset: int, target_opset: int) -> str | None:
    """The first op in the graphs ``node`` holds whose version differs between the two opsets
    and whose meaning may differ (``version_steps.same_meaning``: signatures and known changes,
    whatever the node); None where every one means the same, so the subgraphs may stay as they
    are (types the target's ops do not take are left to the full check of the result)."""
    for graph in nested_graphs([node]):
        for inner in graph.node:
            if schemas.canonical_domain(inner.domain) != "":
                return f"{inner.domain}.{inner.op_type}"
            before = schemas.version_in_force(inner.op_type, opset)
            after = schemas.version_in_force(inner.op_type, target_opset)
            if before != after and not version_steps.same_meaning(inner.op_type, before, after):
                return f"{inner.op_type}-{before}"
    return None


def _is_constant(node: onnx.NodeProto) -> bool:
    """Adapters and folding may leave Constant nodes nothing reads: those go."""
    return node.op_type == "Constant"


def _constants_made_by(nodes: list[onnx.NodeProto]) -> dict[str, onnx.TensorProto]:
    """The values of the Constant nodes among ``nodes`` (:func:`lowering.graphs.constant_tensor`),
    by output name."""
    found = {}
    for node in nodes:
        tensor = constant_tensor(node)
        if tensor is not None:
            found[node.output[0]] = tensor
    return found


def function_expansion(node: onnx.NodeProto):
    """The function-body expansion registered for the node's op, or None."""
    return function_bodies.expansion_for(schemas.canonical_domain(node.domain), node.op_type)
