"""The lowering pass: walks every graph, subgraph and local function once, rewriting the
nodes a rule covers in place of the original node, so the pass is linear in model size."""

from __future__ import annotations

from collections.abc import Iterable

import onnx
from onnx import helper

from . import adapters, protowire, schemas, versioning
from .builder import Builder, NotLowered, Value
from .cleanup import remove_unused
from .errors import LoweringError
from .graphs import held_graphs, holds_graphs
from .naming import NameAllocator
from .optionals import OptionalResolver
from .registry import Rule, rule_for
from .report import LoweringReport, RemainingOp
from .scopes import Scope, element_type_of, type_string
from .targets import Target
from .templates import RecordingConstants, RecordingNames, Replay, Template, placeholder, replay_together

FunctionKey = tuple[str, str, str]
PROGRESS_STEP = 4096  # nodes between progress updates
# Optional nodes vanish with their last reader (see cleanup); one still read at an opset
# without optionals makes the model inexpressible there, which the final check reports.
OPTIONAL_CONSTRUCTORS = frozenset({"Optional"})


def _location(scope: Scope, node: onnx.NodeProto, index: int) -> str:
    return f"{scope.location}, {describe_node(node, index)}"


def describe_node(node: onnx.NodeProto, index: int) -> str:
    """``node 'name' (Op)``, or ``node #3 (Op)`` for an unnamed node."""
    label = f"'{node.name}'" if node.name else f"#{index}"
    return f"node {label} ({node.op_type})"


def default_opset(opset_imports: Iterable[onnx.OperatorSetIdProto]) -> int | None:
    for entry in opset_imports:
        if schemas.canonical_domain(entry.domain) == "":
            return entry.version
    return None


def function_key(function: onnx.FunctionProto) -> FunctionKey:
    return (function.domain, function.name, getattr(function, "overload", ""))


def call_key(node: onnx.NodeProto) -> FunctionKey:
    return (node.domain, node.op_type, getattr(node, "overload", ""))


_NOT_CACHEABLE = object()


class _NotLowered(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LoweringPass:
    """Lowers ``model`` in place; ``original`` (unmodified) serves type inference."""

    def __init__(
        self,
        model: onnx.ModelProto,
        original: onnx.ModelProto,
        *,
        requested_ops: frozenset[str],
        target: Target,
        target_opset: int | None = None,
        progress=None,
        model_bytes: bytes | None = None,
        fast: bool = True,
    ) -> None:
        """``model_bytes``: ``model`` serialized, where it is small enough to be copied to
        bytes (then names are checked against them and node lists spliced as bytes).
        ``fast=False``: the plain algorithm, the specification of the fast one: every node run
        through its rule, names listed, node lists rebuilt as NodeProtos; no memoized
        expansion, no replay, no wire bytes. Same output, slower."""
        self.fast = fast
        if not fast:
            model_bytes = None
        self.model = model
        self.serialize_whole = model_bytes is not None
        self.progress = progress
        self.target_opset = target_opset
        self.original = original
        self.requested_ops = requested_ops
        self.target = target
        self.report = LoweringReport()
        self.names = NameAllocator(model=model, snapshot=model_bytes)
        self.functions = {function_key(f): f for f in model.functions}
        self._original_functions = {function_key(f): f for f in original.functions}
        self._call_signatures: dict[FunctionKey, dict[bytes, tuple[list[onnx.TypeProto | None], str]]] = {}
        self._inferred_model: onnx.ModelProto | None = None
        self.optionals = OptionalResolver(self.names)
        self._templates: dict[tuple, object] = {}
        self._replayed_labels: list[str] = []  # report labels of the replays waiting
        self._watched_ops = frozenset(requested_ops)
        # Set where the pass did more than replace main-graph nodes in place: rewrote a node in
        # a subgraph or local function, or resolved optionals (If outputs split, nodes removed).
        self.edited_structure = False

    # -- driver ------------------------------------------------------------------------
    def run(self) -> LoweringReport:
        opset = default_opset(self.model.opset_import) or 0
        main = Scope(
            self.model.graph,
            opset=self.target_opset or opset,
            source_opset=opset,
            location=f"graph '{self.model.graph.name}'",
            names=self.names,
            twin=self._inferred_main_graph,
        )
        self._lower_graph(main)
        for key in self._functions_callers_first():
            self._lower_function(self.functions[key])
        if self.optionals.marked:
            self.edited_structure = True
            remove_unused(self.model)
        return self.report

    def _inferred_main_graph(self) -> onnx.GraphProto | None:
        if self._inferred_model is None:
            self._inferred_model = _infer(self.original)
        return self._inferred_model.graph if self._inferred_model is not None else None

    # -- graphs --------------------------------------------------------------------------
    def _lower_graph(self, scope: Scope) -> None:
        """Rewrite the nodes of one graph. Only nodes that may matter are looked at: ops to
        lower, ops holding subgraphs, and calls of local functions (every node when converting).
        The rewritten node list is spliced as bytes (see :mod:`lowering.protowire`)."""
        graph_nodes = scope.graph.node
        scope.other_domains = bool(self.functions) or _imports_other_domains(scope, self.model)
        converting = self.target_opset is not None
        replaced: dict[int, list] = {}
        functions = self.functions
        progress = self.progress
        reported = 0  # nodes already told to progress
        waiting: list[tuple[int, Replay]] = []  # replays made together (see templates.replay_together)
        for index in range(len(graph_nodes)) if converting else self._nodes_to_visit(scope):
            if progress is not None and index - reported >= PROGRESS_STEP:
                progress.advance(nodes=index - reported)
                reported = index
            node = graph_nodes[index]
            if not converting and self.fast:
                replay = self._direct_replay(scope, node, index)
                if replay is not None:
                    waiting.append((index, replay))
                    continue
            # Replays wait until something else asks for names, so they stay in order.
            if node.attribute and holds_graphs(node):
                if waiting:
                    self._replay_waiting(scope, waiting, replaced)
                self._lower_subgraphs(scope, node, index)
            if functions and call_key(node) in functions:
                self._record_call(scope, node, index)
            replacement = None
            if converting or node.op_type in self._watched_ops:
                if waiting:
                    self._replay_waiting(scope, waiting, replaced)
                replacement = self._rewrite(scope, node, index)
                if replacement is None and converting:
                    replacement = self._convert(scope, node, index)
            if replacement is not None and not (len(replacement) == 1 and replacement[0] is node):
                replaced[index] = replacement
        if waiting:
            self._replay_waiting(scope, waiting, replaced)
        if progress is not None:
            progress.advance(nodes=len(graph_nodes) - reported, graphs=1)
        if replaced:
            if scope.parent is not None or isinstance(scope.graph, onnx.FunctionProto):
                self.edited_structure = True
            if self.fast:
                protowire.splice_nodes(scope.graph, scope.constants.nodes, replaced, whole=self.serialize_whole)
            else:
                _rebuild_nodes(scope.graph, scope.constants.nodes, replaced)

    def _direct_replay(self, scope: Scope, node: onnx.NodeProto, index: int) -> Replay | None:
        """The replay of a node to lower whose kind was seen, when it needs nothing but
        names and existing constants; None where :meth:`_rewrite` must look at it."""
        op = (node.domain if scope.other_domains else "", scope.op_types[index])
        kind = scope.rules.get(op)
        if kind is None:
            kind = scope.rules[op] = self._kind_of_op(scope, node)
        if not kind:
            return None
        label, key_start, templates = kind
        attributes = node.attribute
        if attributes:
            if holds_graphs(node):
                return None
            attribute_key = tuple([attribute.SerializeToString() for attribute in attributes])
        else:
            attribute_key = ()
        inputs, outputs = node.input, node.output  # read, not kept past this graph's splice
        known = scope.type_strings
        try:
            types = tuple(
                [(known.get(name) or self._type_key(scope, name, index)) if name else None for name in inputs]
            )
        except _NotLowered:
            return None
        rest_of_key = (types, attribute_key, len(outputs))
        template = templates.get(rest_of_key)
        if template is None:  # recorded by _expand under the whole key, or not yet
            template = self._templates.get((*key_start, *rest_of_key))
            if template is None or template is _NOT_CACHEABLE or template._direct is None:
                return None
            templates[rest_of_key] = template
        self._replayed_labels.append(label)
        return (template, inputs, outputs, node.name or (outputs[0] if outputs else node.op_type.lower()))

    def _kind_of_op(self, scope: Scope, node: onnx.NodeProto) -> tuple[str, tuple] | tuple[()]:
        """For an op type in a graph whose nodes may be replayed directly: its report label,
        how its template keys start, and its templates by the rest of their keys (filled as
        found); () when they must go through :meth:`_rewrite`."""
        rule = _owning_rule(node)
        if (
            self.target_opset is not None
            or rule is None
            or node.op_type not in self.requested_ops
            or (self.functions and call_key(node) in self.functions)
        ):
            return ()
        version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
        if version is None or not rule.serves(version):
            return ()
        return (f"{node.op_type}-{version}", (rule.domain, rule.op_type, version, scope.opset), {})

    def _replay_waiting(self, scope: Scope, waiting: list[tuple[int, Replay]], replaced: dict[int, list]) -> None:
        """Replay the waiting nodes, together where their names are all free, else in order."""
        replays = [replay for _, replay in waiting]
        self.report.rewritten.update(self._replayed_labels)
        self._replayed_labels.clear()
        together = replay_together(replays, self.names, scope.constants, scope.node_tag)
        for position, (index, replay) in enumerate(waiting):
            if together is not None:
                replaced[index] = together[position]
            else:
                template, inputs, outputs, hint = replay
                replaced[index] = template.instantiate(
                    inputs, outputs, hint, self.names, scope.constants, scope.node_tag
                )
        waiting.clear()

    def _nodes_to_visit(self, scope: Scope) -> list[int]:
        """Indices of the nodes that may be rewritten, hold subgraphs or call a local function.
        Found from op types alone where every node is in the default domain."""
        interesting = self._watched_ops | schemas.ops_with_subgraphs()
        op_types = scope.op_types
        if scope.other_domains:
            nodes = scope.graph.node
            return [
                index
                for index, op_type in enumerate(op_types)
                if op_type in interesting or nodes[index].domain not in schemas.DEFAULT_DOMAINS
            ]
        return [index for index, op_type in enumerate(op_types) if op_type in interesting]

    def _lower_subgraphs(self, scope: Scope, node: onnx.NodeProto, index: int) -> None:
        for attribute, graph_index, graph in held_graphs(node):
            suffix = "" if graph_index is None else f"[{graph_index}]"
            location = f"{scope.location} > {describe_node(node, index)} {attribute.name}{suffix}"
            self._lower_graph(scope.subgraph(graph, index, attribute.name, graph_index, location))

    # -- one node ------------------------------------------------------------------------
    def _rewrite(self, scope: Scope, node: onnx.NodeProto, index: int) -> list | None:
        """The node's replacement (NodeProtos or their payloads), or None to keep it."""
        rule = _owning_rule(node)
        if rule is None:
            return None
        requested = node.op_type in self.requested_ops
        converting = self.target_opset is not None
        if not requested and not converting:
            return None
        version = schemas.version_in_force(node.op_type, scope.source_opset, node.domain)
        if converting and not requested:
            adapted = self._adapt(rule, version, scope, node)
            if adapted is not None:
                return adapted
        try:
            nodes = self._expand(rule, version, scope, node, index)
        except _NotLowered as not_lowered:
            location = _location(scope, node, index)
            if converting:
                adapted = self._adapt(rule, version, scope, node) if requested else None
                if adapted is None:
                    raise LoweringError(
                        f"{location}: {node.op_type}-{version} cannot be expressed at opset {scope.opset}: "
                        f"the op does not exist there for this input, and it cannot be lowered "
                        f"({not_lowered.reason})"
                    ) from None
                self.report.remaining.append(RemainingOp(node.op_type, version, location, not_lowered.reason))
                return adapted
            self.report.remaining.append(RemainingOp(node.op_type, version, location, not_lowered.reason))
            return None
        self.report.rewritten[f"{node.op_type}-{version}"] += 1
        return nodes

    def _adapt(
        self, rule: Rule, version: int | None, scope: Scope, node: onnx.NodeProto
    ) -> list[onnx.NodeProto] | None:
        """An owned op kept at the target opset: as it is where the op takes the input's type
        there, or behind an exact Cast to a type it takes where the op's answer does not depend
        on the rounding that Cast may skip (:attr:`Rule.rounding_invariant`). None when it must
        be lowered."""
        target_version = schemas.version_in_force(node.op_type, scope.opset, node.domain)
        if target_version is None:
            return None
        schema = schemas.schema_in_force(node.op_type, scope.opset, node.domain)
        first = node.input[0] if node.input else ""
        if not first:
            required = schema.inputs and schema.inputs[0].option == onnx.defs.OpSchema.FormalParameterOption.Single
            return None if required else [node]
        type_proto = scope.type_of(first)
        if type_proto is None:
            return None
        accepted = schemas.input_type_strings(node.op_type, scope.opset, 0, node.domain)
        element_type = element_type_of(type_proto)
        moved = f"{node.op_type}-{version}→{target_version}"
        if schemas.type_string(type_proto) in accepted:
            if element_type is not None and self.target.lacks_kernel(node.op_type, target_version, element_type):
                return None
            self.report.adapted[moved] += 1
            return [node]
        if element_type is None or not rule.rounding_invariant:
            return None
        carrier = versioning.exact_carrier(
            element_type, schemas.input_element_types(node.op_type, scope.opset, 0, node.domain)
        )
        if carrier is None or self.target.lacks_kernel(node.op_type, target_version, carrier):
            return None
        hint = node.name or node.output[0]
        widened = self.names.fresh(f"{hint}_as_{schemas.type_name(carrier)}")
        cast = helper.make_node("Cast", [first], [widened], name=self.names.fresh(f"{hint}_Cast"), to=carrier)
        del node.input[0]
        node.input.insert(0, widened)
        self.report.adapted[f"{moved} via Cast to {schemas.type_name(carrier)}"] += 1
        return [cast, node]

    def _convert(self, scope: Scope, node: onnx.NodeProto, index: int) -> list[onnx.NodeProto] | None:
        """A node of an op this project does not own, moved to the target opset."""
        if schemas.canonical_domain(node.domain) != "" or node.op_type in OPTIONAL_CONSTRUCTORS:
            return None
        source_version = schemas.version_in_force(node.op_type, scope.source_opset)
        target_version = schemas.version_in_force(node.op_type, scope.opset)
        if source_version is not None and source_version == target_version:
            return None
        location = f"{scope.location}, {describe_node(node, index)}"
        moved = f"{node.op_type}-{source_version}→{target_version}"
        if source_version is not None and target_version is not None:
            found = adapters.adapter_for(node.op_type, source_version, target_version)
            if found is not None:
                context = adapters.AdapterContext(
                    scope.source_opset, scope.opset, self.names, location, scope.shaped_type_of, scope.constant_value
                )
                adapted = found.function(node, context)
                if adapted is not None:
                    self.report.adapted[f"{moved} via {found.label}"] += 1
                    return adapted
            input_types = [scope.type_of(name) if name else None for name in node.input]
            if found is None and versioning.meaning_change(node, source_version, target_version, input_types) is None:
                self.report.adapted[moved] += 1
                return [node]
        types = {name: scope.shaped_type_of(name) for name in node.input if name}
        constants = {name: scope.constant_value(name) for name in node.input if name}
        converted = versioning.convert_node(
            node,
            types={name: t for name, t in types.items() if t is not None},
            constants={name: c for name, c in constants.items() if c is not None},
            source_opset=scope.source_opset,
            target_opset=scope.opset,
            ir_version=max(self.model.ir_version, 3),
            names=self.names,
            location=location,
        )
        self.report.adapted[moved] += 1
        return converted

    def _expand(self, rule: Rule, version: int | None, scope: Scope, node: onnx.NodeProto, index: int) -> list:
        """The rule's nodes for ``node``: a recorded template replayed (as payloads) where the
        kind of node was seen before, else the rule run on it."""
        if version is None:
            raise _NotLowered(f"{node.op_type} does not exist at opset {scope.opset}")
        if not rule.serves(version):
            served = ", ".join(map(str, rule.since_versions))
            raise _NotLowered(f"no rule for {node.op_type}-{version} (rules cover versions {served})")
        input_names = node.input
        # The kind of node: everything the expansion depends on; its types as schema strings.
        key = (
            rule.domain,
            rule.op_type,
            version,
            scope.opset,
            tuple([self._type_key(scope, name, index) for name in input_names]),
            tuple([attribute.SerializeToString() for attribute in node.attribute]) if node.attribute else (),
            len(node.output),
        )
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = self._first_of_kind(rule, version, scope, node, index)
        hint = node.name or (node.output[0] if node.output else node.op_type.lower())
        if template is not _NOT_CACHEABLE:
            return template.instantiate(input_names, node.output, hint, self.names, scope.constants, scope.node_tag)
        inputs = [self._input_value(scope, name, index) for name in input_names]
        attributes = self._attributes(rule, node, _location(scope, node, index))
        builder = Builder(
            opset=scope.opset,
            target=self.target,
            names=self.names,
            constants=scope.constants,
            name_hint=hint,
            scope=scope,
            optionals=self.optionals,
        )
        constants_before = len(scope.constants.nodes)
        result = rule.body(builder, *inputs, **attributes)
        if isinstance(result, NotLowered):
            scope.constants.rollback(constants_before)
            raise _NotLowered(result.reason)
        return _bound(builder.nodes, result, list(node.output), self.names)

    def _type_key(self, scope: Scope, name: str, index: int) -> str | None:
        """The schema spelling of an input's type (None for a missing input); _NotLowered
        when it is unknown."""
        if name == "":
            return None
        found = scope.type_strings.get(name)
        if found is None:
            type_proto = scope.type_of(name, index)
            found = type_string(type_proto) if type_proto is not None else "unknown"
            if found == "unknown":
                self._input_value(scope, name, index)  # raises, saying why
            scope.type_strings[name] = found
        return found

    def _first_of_kind(self, rule: Rule, version: int, scope: Scope, node: onnx.NodeProto, index: int):
        """Check the first node of a kind, and record its expansion for the rest."""
        location = _location(scope, node, index)
        inputs = [self._input_value(scope, name, index) for name in node.input]
        if inputs and inputs[0] is not None:
            accepted = schemas.input_type_strings(node.op_type, version, 0, rule.domain)
            given = schemas.type_string(inputs[0].type)
            if given not in accepted:
                raise LoweringError(
                    f"{location}: {node.op_type}-{version} does not accept {given} inputs; the model is invalid"
                )
        attributes = self._attributes(rule, node, location)
        if not self.fast:
            return _NOT_CACHEABLE  # the plain algorithm runs the rule on every node
        return self._record(rule, inputs, attributes, node, scope)

    def _record(self, rule: Rule, inputs, attributes, node: onnx.NodeProto, scope: Scope):
        """Run the rule on placeholders; _NOT_CACHEABLE when it reads the surrounding graph."""
        names = RecordingNames()
        placeholders = [placeholder("i", k) for k in range(len(inputs))]
        # A rule sees what the memo's key holds (the types as schema strings), no shapes: a
        # rule that could read a rank would hand its expansion to nodes of another rank.
        recorded_inputs = [
            None if value is None else Value(name, value.element_type, without_shapes(value.type))
            for value, name in zip(inputs, placeholders, strict=True)
        ]
        hint = placeholder("h", 0)
        outputs = [placeholder("o", k) if name else "" for k, name in enumerate(node.output)]
        builder = Builder(
            opset=scope.opset,
            target=self.target,
            names=names,
            constants=RecordingConstants(names),
            name_hint=hint,
            scope=None,
            optionals=None,
        )
        result = rule.body(builder, *recorded_inputs, **attributes)
        if builder.read_context or isinstance(result, NotLowered):
            return _NOT_CACHEABLE
        nodes = _bound(builder.nodes, result, outputs, names)
        return Template(nodes, names.events, placeholders, hint, outputs)

    def _input_value(self, scope: Scope, name: str, reader: int | None = None) -> Value | None:
        if name == "":
            return None
        type_proto = scope.type_of(name, reader)
        if type_proto is None or schemas.type_string(type_proto) == "unknown":
            reason = f"the type of input '{name}' is unknown"
            if scope.unknown_types_reason:
                reason += f" ({scope.unknown_types_reason})"
            raise _NotLowered(reason)
        return Value(name, element_type_of(type_proto), type_proto)

    @staticmethod
    def _attributes(rule: Rule, node: onnx.NodeProto, location: str) -> dict[str, object]:
        known = rule.attribute_defaults
        attributes: dict[str, object] = {}
        for attribute in node.attribute:
            if attribute.ref_attr_name:
                raise _NotLowered(
                    f"attribute {attribute.name} refers to the function attribute {attribute.ref_attr_name}"
                )
            if attribute.name not in known:
                raise LoweringError(
                    f"{location}: {node.op_type} has no attribute '{attribute.name}'; remove it and retry"
                )
            attributes[attribute.name] = helper.get_attribute_value(attribute)
        return attributes

    # -- local functions -----------------------------------------------------------------
    def _record_call(self, scope: Scope, node: onnx.NodeProto, index: int) -> None:
        types = [scope.type_of(name) if name else None for name in node.input]
        signature = b"|".join(t.SerializeToString() if t is not None else b"?" for t in types)
        calls = self._call_signatures.setdefault(call_key(node), {})
        calls.setdefault(signature, (types, f"{scope.location}, {describe_node(node, index)}"))

    def _functions_callers_first(self) -> list[FunctionKey]:
        callees = {key: set(_calls_in(f.node, self.functions)) for key, f in self.functions.items()}
        ordered: list[FunctionKey] = []
        visiting: set[FunctionKey] = set()
        done: set[FunctionKey] = set()

        def visit(key: FunctionKey) -> None:
            if key in done or key in visiting:
                return
            visiting.add(key)
            for callee in sorted(callees[key]):
                visit(callee)
            visiting.discard(key)
            done.add(key)
            ordered.append(key)

        for key in self.functions:
            visit(key)
        return list(reversed(ordered))

    def _lower_function(self, function: onnx.FunctionProto) -> None:
        key = function_key(function)
        calls = self._call_signatures.get(key, {})
        opset = default_opset(function.opset_import) or default_opset(self.model.opset_import) or 0
        target_opset = self.target_opset or opset
        location = f"function '{function.domain}.{function.name}'"
        input_types: dict[str, onnx.TypeProto] = {}
        reason = ""
        if len(calls) == 1:
            ((types, _),) = calls.values()
            input_types = {name: t for name, t in zip(function.input, types, strict=False) if t is not None}
        elif not calls:
            reason = "the function is never called, so its input types are unknown"
        else:
            where = "; ".join(f"{_signature_text(types)} at {call_location}" for types, call_location in calls.values())
            reason = f"the function is called with different input types ({where}); give each its own function"
        original = self._original_functions[key]
        scope = Scope(
            function,
            opset=target_opset,
            source_opset=opset,
            location=location,
            names=self.names,
            twin=lambda: _infer_function(original, input_types, self.original) if input_types else None,
            input_types=input_types,
            unknown_types_reason=reason,
        )
        self._lower_graph(scope)


def _rebuild_nodes(container, leading: list[onnx.NodeProto], replaced: dict[int, list]) -> None:
    """The plain form of :func:`lowering.protowire.splice_nodes`: ``leading`` first, then every
    node in order, node ``i`` replaced by the NodeProtos ``replaced[i]``."""
    nodes = [*leading]
    for index, node in enumerate(container.node):
        nodes.extend(replaced.get(index, (node,)))
    copies = [onnx.NodeProto.FromString(node.SerializeToString()) for node in nodes]  # detached from the old list
    del container.node[:]
    container.node.extend(copies)


def without_shapes(type_proto: onnx.TypeProto | None) -> onnx.TypeProto | None:
    """The same type with every tensor shape (rank included) left out, at any depth."""
    if type_proto is None:
        return None
    result = onnx.TypeProto()
    result.CopyFrom(type_proto)
    inner = result
    while True:
        kind = inner.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            getattr(inner, kind).ClearField("shape")
            return result
        if kind == "sequence_type":
            inner = inner.sequence_type.elem_type
        elif kind == "optional_type":
            inner = inner.optional_type.elem_type
        elif kind == "map_type":
            inner = inner.map_type.value_type
        else:
            return result


def _owning_rule(node: onnx.NodeProto) -> Rule | None:
    """The rule for the node's op, where the node is in the rule's domain."""
    rule = rule_for(node.domain, node.op_type)
    return rule if rule is not None and schemas.canonical_domain(node.domain) == rule.domain else None


def _imports_other_domains(scope: Scope, model: onnx.ModelProto) -> bool:
    """Whether nodes of this graph may be in a domain other than the default one (the
    checker refuses a node whose domain is not imported)."""
    imports = list(model.opset_import)
    if isinstance(scope.graph, onnx.FunctionProto):
        imports += list(scope.graph.opset_import)
    return any(entry.domain not in schemas.DEFAULT_DOMAINS for entry in imports)


def _signature_text(types: list[onnx.TypeProto | None]) -> str:
    names = []
    for type_proto in types:
        element_type = element_type_of(type_proto)
        names.append(schemas.type_name(element_type) if element_type else "?")
    return "(" + ", ".join(names) + ")"


def _calls_in(nodes: Iterable[onnx.NodeProto], functions: dict) -> Iterable[FunctionKey]:
    for node in nodes:
        if call_key(node) in functions:
            yield call_key(node)
        for _, _, graph in held_graphs(node):
            yield from _calls_in(graph.node, functions)


def _bound(nodes: list[onnx.NodeProto], result, output_names: list[str], names) -> list[onnx.NodeProto]:
    """The emitted nodes, writing the rule's result value(s) to the node's own outputs."""
    outputs = result if isinstance(result, tuple) else (result,)
    for value, output_name in zip(outputs, output_names, strict=False):
        if output_name:
            nodes = _bind(nodes, value, output_name, names)
    return nodes


def _bind(nodes: list[onnx.NodeProto], value: Value, output_name: str, names) -> list[onnx.NodeProto]:
    """Make the emitted nodes write ``value`` to the original node's ``output_name``."""
    produced = any(value.name in node.output for node in nodes)
    if not produced:
        identity = helper.make_node(
            "Identity", [value.name], [output_name], name=names.fresh(f"{output_name}_identity")
        )
        return [*nodes, identity]
    for node in nodes:
        for k, name in enumerate(node.output):
            if name == value.name:
                node.output[k] = output_name
        for k, name in enumerate(node.input):
            if name == value.name:
                node.input[k] = output_name
    return nodes


def _infer(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """onnx type inference on a model, or None when inference itself fails."""
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False)
    except Exception:  # inference is best effort: an unknown type is reported, not fatal
        return None


def _infer_function(
    function: onnx.FunctionProto, input_types: dict[str, onnx.TypeProto], model: onnx.ModelProto
) -> onnx.GraphProto | None:
    """Infer the types inside a function body called with ``input_types``."""
    inputs = []
    for name in function.input:
        info = onnx.ValueInfoProto(name=name)
        if name in input_types:
            info.type.CopyFrom(input_types[name])
        inputs.append(info)
    graph = helper.make_graph(
        list(function.node), f"{function.name}_body", inputs, [onnx.ValueInfoProto(name=o) for o in function.output]
    )
    imports = {entry.domain: entry.version for entry in model.opset_import}
    imports.update({entry.domain: entry.version for entry in function.opset_import})
    body_model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(domain, version) for domain, version in imports.items()],
        functions=list(model.functions),
        ir_version=model.ir_version,
    )
    inferred = _infer(body_model)
    return inferred.graph if inferred is not None else None
