"""The legalization driver: walks every graph, subgraph and local function once and makes each
node legal at the target, so the pass is linear in model size.

A node is legal when its op is not one the caller asked to lower and, where a target opset is
set, it means at that opset what it meant at the model's. An illegal node goes through the
cheapest pattern that applies (see :meth:`Legalizer.legalize`): kept re-versioned, a version
adapter, a decomposition rule, or the op's own ONNX function body, whose nodes are legalized
in turn. How the patterns' nodes are made and spliced is the path's job (:mod:`lowering.plain_path`,
the plain specification; :mod:`lowering.fast`, the same bytes faster).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import onnx

from . import nodecheck, schemas
from .body_inlining import BodyInlining, function_expansion
from .cleanup import remove_unused
from .conversion import node_moves
from .decomposition import without_shapes
from .errors import LoweringError, NotLowered
from .graphs import held_graphs, holds_graphs, nested_graphs
from .ir_versions import ir_version_for_opset
from .local_functions import FunctionKey, call_key, callers_first, function_key, infer, infer_function, signature_text
from .modelio import ModelBytes
from .optionals import OptionalResolver
from .plain_path import PlainPath
from .registry import Rule, rule_for
from .report import LoweringReport, RemainingOp
from .scopes import Scope
from .targets import Target

PROGRESS_STEP = 4096  # nodes between progress updates
NODE_CHECKS_AT_LEAST = 256  # node checks made before the whole model's check may be cheaper
# Kept by a conversion for now: the optionals' resolution may remove them after the walk.
OPTIONAL_OPS = frozenset({"Optional", "OptionalHasElement", "OptionalGetElement"})


def describe_node(node: onnx.NodeProto, index: int | None) -> str:
    """``node 'name' (Op)``, or ``node #3 (Op)`` for an unnamed node."""
    label = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {label} ({node.op_type})"


def path_for(driver: Legalizer, fast, model_bytes: ModelBytes | None) -> PlainPath:
    """The fast path where asked for (``True``, or its :class:`lowering.fast.Shortcuts`) and
    present, else the plain one."""
    if not fast:
        return PlainPath(driver)
    try:
        from .fast import FastPath, Shortcuts
    except ImportError:  # the speed work is optional: without it the plain path serves
        return PlainPath(driver)
    return FastPath(driver, model_bytes, fast if isinstance(fast, Shortcuts) else Shortcuts())


@dataclass(frozen=True)
class PassOutcome:
    """What a pass did that the checks after it ask: the path it took (``fast`` or ``plain``);
    whether the whole result must be checked, whether it edited more than main-graph nodes in
    place, and the ops it replaced by their function bodies."""

    path: str
    whole_check_needed: bool
    edited_structure: bool
    expanded_ops: frozenset[str]


class Legalizer:
    """Legalizes ``model`` in place for ``target`` (its opset, the ops that must not remain,
    its runtime); ``original`` (unmodified) serves type inference."""

    def __init__(
        self,
        model: onnx.ModelProto,
        original: onnx.ModelProto,
        *,
        target: Target,
        progress=None,
        model_bytes: ModelBytes | None = None,
        fast=True,
    ) -> None:
        """``model_bytes``: ``model`` serialized, where it is small enough to be copied to
        bytes (the fast path checks names against them and splices node lists as bytes).
        ``fast=False``: the plain path (see :mod:`lowering.plain_path`); same output, slower."""
        self.model = model
        self.original = original
        self.target = target
        self.requested_ops = target.lowered_ops
        self.target_opset = target.opset
        self.converting = target.opset is not None
        self.progress = progress
        self.path = path_for(self, fast, model_bytes)
        self.report = LoweringReport()
        # ``model`` before the pass
        self.names = self.path.name_allocator(original)
        self.functions = {function_key(f): f for f in model.functions}
        self._original_functions = {function_key(f): f for f in original.functions}
        self._call_signatures: dict[FunctionKey, dict[bytes, tuple[list[onnx.TypeProto | None], str]]] = {}
        self._inferred_model: onnx.ModelProto | None = None
        self.optionals = OptionalResolver(self.names)
        # Set where the pass did more than replace main-graph nodes in place: rewrote a node in
        # a subgraph or local function, or resolved optionals (If outputs split, nodes removed).
        self.edited_structure = False
        self.expanded_ops: set[str] = set()  # ops replaced by their function bodies
        # Converting, each node legalized is checked at the target (lowering.nodecheck); set
        # where such a check does not pass, and the whole result is then checked instead.
        self.whole_check_needed = False
        self._check_imports: dict[int, tuple[int, list[onnx.OperatorSetIdProto]]] = {}
        # One node's check costs about what the whole model's costs per 8 of its nodes (measured:
        # some 0.2 ms against 25 µs a node): past that many, the whole model is checked instead.
        self._node_checks_left = max(NODE_CHECKS_AT_LEAST, len(model.graph.node) // 8)
        self._passed_kinds: set = set()  # the path's kinds of result whose check passed (checked_kind)

    # -- what the paths ask ----------------------------------------------------------------
    def outcome(self) -> PassOutcome:
        """What the pass did besides its report, for the checks after it."""
        return PassOutcome(self.path.name, self.whole_check_needed, self.edited_structure, frozenset(self.expanded_ops))

    def release(self) -> None:
        """Drop what ties the pass's objects in cycles (the path and its memo refer to the driver,
        scopes to both), so that they are freed as soon as the caller lets the driver go."""
        self.path = None
        self._inferred_model = None

    def is_requested(self, node: onnx.NodeProto) -> bool:
        return node.op_type in self.requested_ops

    def calls_local_function(self, node: onnx.NodeProto) -> bool:
        return bool(self.functions) and call_key(node) in self.functions

    def decomposition_for(self, node: onnx.NodeProto, scope: Scope) -> tuple[Rule, int | None] | None:
        """The rule owning the node's op and the op's version at the graph's opset, or None; a
        version the rule does not serve (Resize-13, where the rule serves 18 and 19) is moved as
        any op is."""
        rule = _owning_rule(node)
        if rule is None:
            return None
        version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
        if version is not None and not rule.serves(version):
            return None
        return rule, version

    # -- the walk ----------------------------------------------------------------------------
    def run(self) -> LoweringReport:
        opset = schemas.default_opset(self.model.opset_import) or 0
        main = Scope(
            self.model.graph,
            opset=self.target_opset or opset,
            source_opset=opset,
            location=f"graph '{self.model.graph.name}'",
            names=self.names,
            twin=self._inferred_main_graph,
        )
        main.shape_source = self.path.shape_source(main)
        self._legalize_graph(main)
        for key in callers_first(self.functions):
            self._legalize_function(self.functions[key])
        if self.optionals.marked:
            self.edited_structure = True
            remove_unused(self.model)
        return self.report

    def _inferred_main_graph(self) -> onnx.GraphProto | None:
        if self._inferred_model is None:
            self._inferred_model = infer(self.path.inference_input())
        return self._inferred_model.graph if self._inferred_model is not None else None

    def _legalize_graph(self, scope: Scope) -> None:
        """Legalize the nodes of one graph. Only nodes that may be illegal are looked at: ops to
        lower, ops holding subgraphs, and calls of local functions (every node when converting)."""
        graph_nodes = scope.graph.node
        scope.other_domains = bool(self.functions) or _imports_other_domains(scope, self.model)
        edits = self.path.edits(scope)
        progress = self.progress
        reported = 0  # nodes already told to progress
        take, settle, legalize = edits.take, edits.settle, self.path.legalize  # (looked up once: per node)
        functions, converting, requested, op_types = self.functions, self.converting, self.requested_ops, scope.op_types
        visited = self._nodes_to_visit(scope)
        scope.most_types_asked = self.path.types_most_asked(len(visited))
        if converting:
            visited, kept_by_op, written_by_op = self.path.kept_by_op(scope, visited)
            for index, written in written_by_op.items():
                edits.replace(index, [written])
        for index in visited:
            if progress is not None and index - reported >= PROGRESS_STEP:
                progress.advance(nodes=index - reported)
                reported = index
            node = graph_nodes[index]
            if take(node, index):
                continue
            # What the path took is settled before anything else asks for a name.
            if holds_graphs(node):
                settle()
                self._legalize_subgraphs(scope, node, index)
            if functions and call_key(node) in functions:
                self._record_call(scope, node, index)
            if converting or op_types[index] in requested:
                settle()
                try:
                    replacement = legalize(scope, node, index)
                except LoweringError as cannot:
                    if not converting:
                        raise
                    self._blocked(scope, node, index, cannot)  # (every node that cannot go is found, in one pass)
                    continue
                if replacement is not None and not (len(replacement) == 1 and replacement[0] is node):
                    edits.replace(index, replacement)
        edits.settle()
        if converting:
            self.report.adapted.update(kept_by_op)
        if progress is not None:
            progress.advance(nodes=len(graph_nodes) - reported, graphs=1)
        if edits.apply() and (scope.parent is not None or isinstance(scope.graph, onnx.FunctionProto)):
            self.edited_structure = True

    def _blocked(self, scope: Scope, node: onnx.NodeProto, index: int, cannot: LoweringError) -> None:
        """Record that ``node`` cannot go to the target opset, and why; it stays as it is."""
        location = f"{scope.location}, {describe_node(node, index)}"
        version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
        reason = str(cannot).removeprefix(f"{location}: ")
        self.report.blockers.append(self._remaining(scope, node, index, version, reason))

    @staticmethod
    def _remaining(scope: Scope, node: onnx.NodeProto, index: int, version: int | None, reason: str) -> RemainingOp:
        """A node left as it is, with where it is and why."""
        location = f"{scope.location}, {describe_node(node, index)}"
        return RemainingOp(node.op_type, version, location, reason, graph=scope.location, node=node.name or f"#{index}")

    def _nodes_to_visit(self, scope: Scope) -> list[int]:
        """Indices of the nodes that may be rewritten, hold subgraphs or call a local function;
        converting, also those whose op's version differs at the target and those a
        decomposition rule owns (kept only where the target takes their type). Found from op
        types alone where every node is in the default domain."""
        interesting = self.requested_ops | schemas.ops_with_subgraphs()
        op_types = scope.op_types
        if self.converting:
            source, target = scope.source_opset, scope.opset
            interesting = interesting | {
                op_type
                for op_type in set(op_types)
                if rule_for("", op_type) is not None
                or schemas.version_in_force(op_type, source) != schemas.version_in_force(op_type, target)
            }
        if scope.other_domains:
            nodes = scope.graph.node
            return [
                index
                for index, op_type in enumerate(op_types)
                if op_type in interesting or nodes[index].domain not in schemas.DEFAULT_DOMAINS
            ]
        return [index for index, op_type in enumerate(op_types) if op_type in interesting]

    def _legalize_subgraphs(self, scope: Scope, node: onnx.NodeProto, index: int) -> None:
        for attribute, graph_index, graph in held_graphs(node):
            suffix = "" if graph_index is None else f"[{graph_index}]"
            location = f"{scope.location} > {describe_node(node, index)} {attribute.name}{suffix}"
            self._legalize_graph(scope.subgraph(graph, index, attribute.name, graph_index, location))

    # -- one node ------------------------------------------------------------------------------
    def legalize(self, scope: Scope, node: onnx.NodeProto, index: int) -> list | None:
        """The nodes that make ``node`` legal, or None to keep it as it is (see
        :meth:`_legalize`); converting, what it becomes is checked at the target
        (:mod:`lowering.nodecheck`), and where that check does not pass, the whole result is."""
        shape_reads = scope.shape_reads
        try:
            result = self._legalize(scope, node, index)
        except UnicodeDecodeError:  # protobuf reads such text as bytes, and will not take it back
            raise LoweringError(
                f"{scope.location}, {describe_node(node, index)}: the node's name or doc_string is not UTF-8 text, "
                "which the nodes made for it would have to hold; make it UTF-8 and retry"
            ) from None
        if self.converting and node.op_type in OPTIONAL_OPS:
            self.whole_check_needed = True  # kept for now, the optionals' resolution may remove it
        elif self.converting and not self.whole_check_needed:
            kind = self.path.checked_kind(result)
            if kind is not None and kind in self._passed_kinds:
                return result
            self._node_checks_left -= 1
            if self._node_checks_left < 0:  # as costly as the whole model's check by now
                self.whole_check_needed = True
                return result
            ir_version, opset_imports = self._checked_at(scope.opset)
            shapes = scope.shape_reads != shape_reads
            checked = self.path.as_nodes(result) if result else result
            if not nodecheck.check_at_target(scope, node, checked, ir_version, opset_imports, shapes):
                self.whole_check_needed = True
            elif kind is not None and not shapes:  # (a check with shapes holds more than the kind's key)
                self._passed_kinds.add(kind)
        return result

    def _checked_at(self, opset: int) -> tuple[int, list[onnx.OperatorSetIdProto]]:
        """The IR version and opset imports a node's check at ``opset`` declares: the model's
        and its functions' imports, the default domain at ``opset``."""
        found = self._check_imports.get(opset)
        if found is None:
            versions = {"": opset}
            for entry in [*self.model.opset_import, *(e for f in self.model.functions for e in f.opset_import)]:
                versions.setdefault(schemas.canonical_domain(entry.domain), entry.version)
            imports = [onnx.helper.make_opsetid(domain, version) for domain, version in versions.items()]
            ir_version = max(self.model.ir_version, ir_version_for_opset(opset))
            found = self._check_imports[opset] = (ir_version, imports)
        return found

    def _legalize(self, scope: Scope, node: onnx.NodeProto, index: int) -> list | None:
        """The nodes that make ``node`` legal, or None to keep it as it is. Cheapest first:

        - a requested op: its decomposition rule, else its function body; where neither
          applies it is left and reported (kept re-versioned where converting, else an error);
        - converting, an op a rule owns: kept (re-versioned, or behind an exact Cast) where
          it may be, else decomposed;
        - converting, any other op: moved (re-versioned where it means the same, a version
          adapter, onnx's converter), else expanded by its function body.
        """
        location = f"{scope.location}, {describe_node(node, index)}"
        owned = self.decomposition_for(node, scope)
        requested = node.op_type in self.requested_ops
        if owned is not None:
            return self._legalize_owned(owned, requested, scope, node, index, location)
        expansion = function_expansion(node)
        if requested and expansion is not None:
            try:
                return self._expand(expansion, scope, node, index, location)
            except NotLowered as not_lowered:
                version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
                kept = self.move(scope, node, scope.source_opset, location) if self.converting else None
                self._left(scope, node, index, version, not_lowered.reason, kept)
                return kept
        if (
            requested
            and expansion is None
            and _owning_rule(node) is None
            and schemas.canonical_domain(node.domain) == ""
        ):
            # an op no pattern lowers: the node is left (moved where converting), and said so
            version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
            kept = self.move(scope, node, scope.source_opset, location) if self.converting else None
            reason = f"no pattern lowers {node.op_type} (no decomposition rule, no function body)"
            self._left(scope, node, index, version, reason, kept)
            return kept
        if requested and expansion is None and (rule := _owning_rule(node)) is not None:
            # a rule owning other versions of the op: the node is left (moved where converting), and said so
            version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
            kept = self.move(scope, node, scope.source_opset, location) if self.converting else None
            served = ", ".join(map(str, rule.since_versions))
            reason = f"no rule for {node.op_type}-{version} (rules cover versions {served})"
            self._left(scope, node, index, version, reason, kept)
            return kept
        if not self.converting:
            return None
        try:
            moved = self.move(scope, node, scope.source_opset, location)
        except LoweringError as cannot_move:
            if expansion is None:
                raise
            try:
                return self._expand(expansion, scope, node, index, location)
            except NotLowered as not_expanded:
                raise LoweringError(f"{cannot_move}; nor by its function body: {not_expanded.reason}") from None
        self._requested_written(scope, node, index, moved)
        return moved

    def _left(self, scope: Scope, node: onnx.NodeProto, index: int, version, reason: str, kept: list | None) -> None:
        """Report a requested ``node`` left: as it is (``kept`` None), or as moving it wrote it,
        itself where ``kept`` holds a node of its op, and each node of another requested op the
        move wrote (Upsample-7 at opset 10 is Resize-10; Softmax-11 at 13 writes a Flatten)."""
        if kept is None:
            self.report.remaining.append(self._remaining(scope, node, index, version, reason))
        for made in _and_held(kept or ()):  # (each, in a graph it wrote too: ReduceMax-20's fed axes in an If)
            if made.op_type == node.op_type:
                self.report.remaining.append(self._remaining(scope, node, index, version, reason))
        self._requested_written(scope, node, index, kept)

    def _requested_written(self, scope: Scope, node: onnx.NodeProto, index: int, written: list | None) -> None:
        """Report each node of a requested op other than ``node``'s that moving ``node`` wrote,
        in the graphs those hold too (Upsample-9 at opset 10 is Resize-10; GatherND-12's adapter
        to 11 writes a Range): left as written, the moved nodes not lowered again."""
        for made in _and_held(written or ()):
            if made.op_type in self.requested_ops and made.op_type != node.op_type:
                version = schemas.version_in_force(made.op_type, scope.opset, made.domain)
                reason = f"written by moving {node.op_type} to opset {scope.opset}, and not lowered again"
                self.report.remaining.append(self._remaining(scope, made, index, version, reason))

    def _legalize_owned(self, owned, requested: bool, scope: Scope, node, index: int, location: str) -> list | None:
        rule, version = owned
        if not requested and not self.converting:
            return None
        cannot_move = None
        if self.converting and not requested:
            kept, cannot_move = self._kept_at_target(rule, version, scope, node, location)
            if kept is not None:
                self._requested_written(scope, node, index, kept)
                return kept
        try:
            nodes = self._decompose(rule, version, scope, node, index, location)
        except NotLowered as declined:
            reason = declined.reason  # (a reason, not the error: its traceback would hold this frame)
        else:
            self.report.rewritten[f"{node.op_type}-{version}"] += 1
            return nodes
        expansion = function_expansion(node)
        if expansion is not None:  # the next pattern in line: the op's own function body
            try:
                return self._expand(expansion, scope, node, index, location)
            except NotLowered as not_expanded:
                reason = f"{reason}; nor by its function body: {not_expanded.reason}"
        if cannot_move is not None:
            raise LoweringError(f"{cannot_move}; nor by its rule: {reason}")
        if self.converting:
            kept = self._kept_at_target(rule, version, scope, node, location)[0] if requested else None
            if kept is None and not requested:
                # (the target's version takes the node, but no kernel of the runtime runs it, and the rule
                # cannot stand in: kept, as a node of an op no rule owns is, and not reported as left)
                blind = replace(self.target, kernels=lambda: None)
                kept = node_moves.keep_owned(rule, version, scope, node, blind, self.names, self.report)
                if kept is not None:
                    self._requested_written(scope, node, index, kept)
                    return kept
            if kept is None:
                raise LoweringError(
                    f"{location}: {node.op_type}-{version} cannot be expressed at opset {scope.opset}: "
                    f"the op does not exist there for this input, and it cannot be lowered ({reason})"
                )
            self._left(scope, node, index, version, reason, kept)
            return kept
        self.report.remaining.append(self._remaining(scope, node, index, version, reason))
        return None

    def _kept_at_target(
        self, rule: Rule, version: int | None, scope: Scope, node, location: str
    ) -> tuple[list | None, LoweringError | None]:
        """Converting, an op a rule owns kept at the target as an op the rule does not own is:
        moved by its version's adapter where the versions differ in more than types (Resize-18's
        antialias dropped at 13), else as :func:`lowering.conversion.node_moves.keep_owned` keeps it. The nodes
        (None where neither can), and the adapter's refusal where it refused (for the message
        where the rule does not apply either)."""
        if node_moves.adapted_across(node, version, scope.opset):
            try:  # the target's version means something else: its adapter moves the node
                return self.move(scope, node, scope.source_opset, location), None
            except LoweringError as refused:
                return None, refused
        return node_moves.keep_owned(rule, version, scope, node, self.target, self.names, self.report), None

    def _decompose(self, rule: Rule, version: int | None, scope: Scope, node, index: int, location: str) -> list:
        """The rule's nodes for ``node`` (made by the path); NotLowered where it does not apply."""
        if version is None:
            raise NotLowered(f"{node.op_type} does not exist at opset {scope.opset}")
        if not rule.serves(version):
            served = ", ".join(map(str, rule.since_versions))
            raise NotLowered(f"no rule for {node.op_type}-{version} (rules cover versions {served})")
        return self.path.decompose(rule, version, scope, node, index, location)

    def _expand(self, expansion, scope: Scope, node, index: int, location: str) -> list[onnx.NodeProto]:
        """The op's function body inlined for ``node``, its nodes legalized in turn; NotLowered
        where it does not apply. Counted in the report only when the whole body goes."""
        done = LoweringReport()
        inlining = BodyInlining(self, scope, index, location)
        legal = inlining.inline(expansion, node, scope.source_opset, {}, done, depth=0)
        self.report.adapted.update(done.adapted)
        self.report.rewritten.update(done.rewritten)
        self.expanded_ops.update(label.split("-", 1)[0] for label in done.rewritten)
        return legal

    def legalize_held_graphs(
        self, body_scope: Scope, node: onnx.NodeProto, position: int, attempt: LoweringReport
    ) -> onnx.NodeProto:
        """A copy of body node ``position`` whose graphs are legalized as a model's subgraphs
        are (:meth:`_legalize_graph`); what it did counted into ``attempt``. NotLowered where an
        op to be lowered is left in them."""
        legalized = onnx.NodeProto()
        legalized.CopyFrom(node)  # the body's own node stays as it was, for another attempt
        report, progress = self.report, self.progress
        inner = LoweringReport()
        self.report, self.progress = inner, None  # (the body's nodes are not the model's to count)
        try:
            for attribute, graph_index, graph in held_graphs(legalized):
                suffix = "" if graph_index is None else f"[{graph_index}]"
                where = f"{body_scope.location}'s {describe_node(node, position)} {attribute.name}{suffix}"
                self._legalize_graph(body_scope.subgraph(graph, position, attribute.name, graph_index, where))
        finally:
            self.report, self.progress = report, progress
        if inner.blockers:  # (a body that cannot go as a whole: the caller tries another way)
            raise LoweringError(str(inner.blockers[0]))
        if inner.remaining:
            left = inner.remaining[0]
            raise NotLowered(
                f"its function body's {node.op_type} holds {left.op_type}, which cannot be lowered ({left.reason})"
            )
        attempt.adapted.update(inner.adapted)
        attempt.rewritten.update(inner.rewritten)
        return legalized

    def move(
        self, scope: Scope, node, source_opset: int, location: str, constants=None, types=None, report=None
    ) -> list | None:
        """``node`` (written at ``source_opset``) moved to the target opset
        (:func:`lowering.conversion.node_moves.move`), counted into ``report``."""
        ir_version = max(self.model.ir_version, 3)
        report = self.report if report is None else report
        return node_moves.move(
            scope, node, source_opset, location, self.names, report, ir_version, constants, types,
            judge=self.path.keeps_meaning,
        )  # fmt: skip

    # -- local functions -----------------------------------------------------------------------
    def _record_call(self, scope: Scope, node: onnx.NodeProto, index: int) -> None:
        types = [scope.type_of(name) if name else None for name in node.input]
        signature = b"|".join(t.SerializeToString() if t is not None else b"?" for t in types)
        calls = self._call_signatures.setdefault(call_key(node), {})
        calls.setdefault(signature, (types, f"{scope.location}, {describe_node(node, index)}"))

    def _legalize_function(self, function: onnx.FunctionProto) -> None:
        key = function_key(function)
        calls = self._call_signatures.get(key, {})
        opset = schemas.default_opset(function.opset_import) or schemas.default_opset(self.model.opset_import) or 0
        target_opset = self.target_opset or opset
        location = f"function '{function.domain}.{function.name}'"
        input_types: dict[str, onnx.TypeProto] = {}
        reason = ""
        shared = _shared_call_types(list(calls.values()))
        if shared is not None:
            input_types = {name: t for name, t in zip(function.input, shared, strict=False) if t is not None}
        elif not calls:
            reason = "the function is never called, so its input types are unknown"
        else:
            where = "; ".join(f"{signature_text(types)} at {call_location}" for types, call_location in calls.values())
            reason = f"the function is called with different input types ({where}); give each its own function"
        original = self._original_functions[key]
        scope = Scope(
            function,
            opset=target_opset,
            source_opset=opset,
            location=location,
            names=self.names,
            twin=lambda: infer_function(original, input_types, self.original) if input_types else None,
            input_types=input_types,
            unknown_types_reason=reason,
        )
        self._legalize_graph(scope)


def _shared_call_types(calls: list[tuple[list[onnx.TypeProto | None], str]]) -> list | None:
    """The input types every call of a function agrees on: the one call's types; where calls
    differ only in shapes, their types without shapes (what holds for every call); None where
    there are no calls or they differ in more."""
    if not calls:
        return None
    if len(calls) == 1:
        return calls[0][0]
    shapeless = [[without_shapes(t) for t in types] for types, _ in calls]
    signatures = {b"|".join(t.SerializeToString() if t is not None else b"?" for t in types) for types in shapeless}
    return shapeless[0] if len(signatures) == 1 else None


def _and_held(nodes: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """``nodes``, and the nodes of the graphs they hold, at any depth."""
    return [*nodes, *(held for graph in nested_graphs(nodes) for held in graph.node)]


def _owning_rule(node: onnx.NodeProto) -> Rule | None:
    """The decomposition rule for the node's op, where the node is in the rule's domain."""
    rule = rule_for(node.domain, node.op_type)
    return rule if rule is not None and schemas.canonical_domain(node.domain) == rule.domain else None


def _imports_other_domains(scope: Scope, model: onnx.ModelProto) -> bool:
    """Whether nodes of this graph may be in a domain other than the default one (the
    checker refuses a node whose domain is not imported)."""
    imports = list(model.opset_import)
    if isinstance(scope.graph, onnx.FunctionProto):
        imports += list(scope.graph.opset_import)
    return any(entry.domain not in schemas.DEFAULT_DOMAINS for entry in imports)
