"""The fast path: the plain path's results, byte for byte, at a fraction of its cost.

- A rule is run once per kind of node (op version, opset, input types, attributes); later
  nodes of that kind replay the recorded expansion with their own names (:mod:`.templates`).
- A node whose kind was seen is replayed without being looked at further, and waiting
  replays are made together, column by column, once their names are known to be free.
- Node lists are spliced as protobuf wire bytes (:mod:`.protowire`), and new names are
  checked against the model's serialized bytes instead of a listing of its names.

Deleting this package leaves a correct product: :func:`lowering.engine.path_for` then
falls back to the plain path (:mod:`lowering.plain_path`).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from .. import function_bodies, schemas, scopes
from ..builder import Builder, Value
from ..decomposition import bound, check_input_accepted, input_value, rule_attributes, type_key, without_shapes
from ..errors import NotLowered
from ..graphs import holds_graphs
from ..modelio import ModelBytes
from ..plain_path import GraphEdits, KeptByOp, PlainPath, node_hint
from ..registry import Rule, default_domain_rule
from ..schemas import DEFAULT_DOMAINS, ops_with_subgraphs
from ..scopes import Scope
from . import protowire
from .inference_bytes import lean_bytes
from .kind_memo import KindMemo
from .local_shapes import LocalShapes, shape_source
from .names import NamesBySnapshot
from .templates import RecordingConstants, RecordingNames, Replay, Template, placeholder, replay_together
from .unchanged_ops import kept_by_op

_NOT_RECORDED = object()  # a kind of node whose expansion reads the surrounding graph


_MODEL_GRAPH_FIELD = onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number

# Kept across passes (each is a pure function of its key): function bodies made ready per kind
# of node (:func:`lowering.function_bodies.FunctionExpansion.expand`'s ``memo``), and kinds of node
# judged to keep their meaning across a version step, or not (bounded: a model may hold many).
PREPARED_BODIES: dict[tuple, object] = {}
JUDGED_KINDS: dict[tuple, bool] = {}
JUDGED_KINDS_LIMIT = 1 << 16


def forget_memos() -> None:
    """Empty the memos kept across passes (benchmarks measure a cold start without them)."""
    PREPARED_BODIES.clear()
    JUDGED_KINDS.clear()
    function_bodies.forget_type_checks()


@dataclass(frozen=True)
class Shortcuts:
    """The fast path's shortcuts, each of which may be switched off alone (all off is the
    plain path, ``fast=False``); every combination gives the same bytes.

    ``whole_bytes``: the model is serialized once where small enough, new names are checked
    against those bytes and kept nodes are cut from them in runs (else names are listed and
    nodes serialized one by one). ``direct_replay``: a template's fresh names are known up to
    the node's hint, so a replay claims them at once (else they are asked for one by one, and
    no node is replayed without the driver looking at it). ``replay_together``: waiting
    replays are made column by column (else one by one). ``kind_memo``: a function body is
    made ready, and a version step judged (:mod:`lowering.conversion.node_moves`), once per kind of node and
    shared (else for every node; with it, a kind's check at the target, :mod:`lowering.nodecheck`,
    is made once). ``lean_inference`` (with ``whole_bytes``): onnx's type inference, where
    the pass needs it, reads the model's bytes without the nodes' ``metadata_props`` and
    ``doc_string`` (:mod:`.inference_bytes`; else the model as it is). ``whole_typing``: a conversion's walk
    that will ask for most types types the whole graph at once from the first value whose
    producer is not among the nodes just before its reader (else it indexes every output to
    follow that value back, as the plain path does; the types are the same). ``kept_ops``
    (with ``whole_typing``): a conversion's walk leaves out the nodes of an op that every
    node of stays as it is at the target, given the types the graph's values have
    (:mod:`.unchanged_ops`), and counts them (else it looks at each). ``local_shapes``: a shape
    the pass asks for in the main graph is first asked of onnx's inference of the nodes back
    from the value, one at a time, and taken where static (else of onnx's inference of the
    whole graph, as where it is off; a static shape is the same from either, except where the
    whole graph's inference fails and the plain path knows no shape)."""

    whole_bytes: bool = True
    direct_replay: bool = True
    replay_together: bool = True
    kind_memo: bool = True
    lean_inference: bool = True
    whole_typing: bool = True
    kept_ops: bool = True
    local_shapes: bool = True


class FastPath(PlainPath):
    name = "fast"

    def __init__(self, driver, model_bytes: ModelBytes | None, shortcuts: Shortcuts = Shortcuts()) -> None:
        super().__init__(driver)
        self.model_bytes = model_bytes  # the model serialized, where small enough to copy whole
        self.shortcuts = shortcuts
        # Function bodies made ready, and version steps judged, once per kind of node (kind_memo).
        self.body_memo = PREPARED_BODIES if shortcuts.kind_memo else None
        self.templates: dict[tuple, object] = {}
        self.kinds = KindMemo(driver) if shortcuts.kind_memo else None
        self._memoized_ops: dict[tuple[str, str, int], bool] = {}  # (domain, op, opset) → through the kind memo
        self._replayed: tuple[list, tuple] | None = None  # the last result a rule's template gave, with its key

    def edits(self, scope: Scope) -> GraphEdits:
        return SplicedEdits(scope, self)

    def name_allocator(self, model: onnx.ModelProto) -> NamesBySnapshot:
        """Names checked against the model's bytes where ``whole_bytes`` gave them (:mod:`.names`)."""
        return NamesBySnapshot(model, self.model_bytes)

    def inference_input(self) -> onnx.ModelProto | bytes:
        """The model's bytes, not serialized again, where at hand; without what inference never
        reads where ``lean_inference`` is on."""
        if self.model_bytes is None:
            return super().inference_input()
        data = self.model_bytes.get()
        if not self.shortcuts.lean_inference:
            return data
        try:
            return lean_bytes(data)
        except Exception:  # (the lean schema cannot be made, or the bytes not read: as the plain path)
            return data

    def legalize(self, scope: Scope, node: onnx.NodeProto, index: int) -> list | None:
        """A node no decomposition rule owns (moved to the target opset, or expanded by its
        function body) is legalized once per kind of node and replayed for the rest
        (:mod:`.kind_memo`) where ``kind_memo`` is on; rules' nodes go through :meth:`decompose`."""
        driver = self.driver
        if self.kinds is None:
            return driver.legalize(scope, node, index)
        op = (node.domain, node.op_type, scope.source_opset)
        memoized = self._memoized_ops.get(op)
        if memoized is None:
            # (A default-domain op whose schema takes no graph may still hold one under an
            # attribute named "__…", which onnx's checker lets through: the driver legalized
            # that graph already, and the memo's key holds the attribute's bytes.)
            memoized = self._memoized_ops[op] = (
                op[0] in DEFAULT_DOMAINS
                and driver.decomposition_for(node, scope) is None
                and op[1] not in ops_with_subgraphs()
            )
        if not memoized:
            return driver.legalize(scope, node, index)
        return self.kinds.legalize(scope, node, index)

    def keeps_meaning(self, node: onnx.NodeProto, source_version: int, target_version: int, input_types: list) -> bool:
        """The plain path's judgement, made once per kind of node where ``kind_memo`` is on: op,
        versions, attributes, which inputs and outputs are given, and those input types (a pure
        function of them, onnx.defs and the known changes)."""
        if not self.shortcuts.kind_memo:
            return super().keeps_meaning(node, source_version, target_version, input_types)
        kind = (
            node.op_type,
            source_version,
            target_version,
            tuple([attribute.SerializeToString() for attribute in node.attribute]),
            tuple([bool(name) for name in node.input]),
            tuple([bool(name) for name in node.output]),
            tuple([schemas.type_string(t) if t is not None else "" for t in input_types]),
        )
        judged = JUDGED_KINDS.get(kind)
        if judged is None:
            if len(JUDGED_KINDS) >= JUDGED_KINDS_LIMIT:
                JUDGED_KINDS.clear()
            judged = JUDGED_KINDS[kind] = super().keeps_meaning(node, source_version, target_version, input_types)
        return judged

    def types_most_asked(self, visited: int) -> bool:
        """A conversion's walk of ``visited`` nodes asks for most types: past the values typed
        one by one (:data:`lowering.scopes.PROPAGATIONS_BEFORE_WHOLE`), where ``whole_typing``."""
        return self.shortcuts.whole_typing and self.driver.converting and visited > scopes.PROPAGATIONS_BEFORE_WHOLE

    def shape_source(self, scope: Scope) -> LocalShapes | None:
        """The main graph's shapes inferred one node at a time back from a value (:mod:`.local_shapes`),
        where ``local_shapes``."""
        return shape_source(scope) if self.shortcuts.local_shapes else None

    def kept_by_op(self, scope: Scope, visited: list[int]) -> KeptByOp:
        """:func:`.unchanged_ops.kept_by_op` where ``kept_ops`` is on and the walk asks for most
        types anyway (:meth:`types_most_asked`), in a model without local functions (a node
        left out could call one)."""
        if not (self.shortcuts.kept_ops and scope.most_types_asked and not self.driver.functions):
            return KeptByOp(visited, {}, {})
        return kept_by_op(scope, visited, self.driver.requested_ops)

    def as_nodes(self, result: list) -> list[onnx.NodeProto]:
        """The result's nodes as NodeProtos (a replayed or moved node may be given as the wire
        bytes of its field in the graph or function that holds it: a tag, a length, the node)."""
        if not any(isinstance(item, bytes) for item in result):
            return result
        return [protowire.parsed_node(item) if isinstance(item, bytes) else item for item in result]

    def may_hold_ops(self, model: onnx.ModelProto, op_types: frozenset[str]) -> bool:
        """Whether the model's bytes hold an op type field naming one of ``op_types``, where the
        model is small enough to copy whole; else (as the plain path) True."""
        if self.model_bytes is None:  # (not made where whole_bytes is off)
            return True
        data = model.SerializeToString()
        return any(protowire.field(protowire.OP_TYPE_TAG, op_type.encode()) in data for op_type in op_types)

    def checked_kind(self, result: list | None) -> object | None:
        """The rule's template key where ``result`` is what a template gave last: every node of
        that key gets the same nodes, names aside, from input types the key holds."""
        replayed = self._replayed
        return replayed[1] if replayed is not None and replayed[0] is result else None

    def decompose(self, rule: Rule, version: int, scope: Scope, node: onnx.NodeProto, index: int, location: str):
        """A recorded template replayed (as node fields) where the kind of node was seen
        before, else the rule run on it and recorded."""
        input_names = node.input
        key = (
            rule.domain,
            rule.op_type,
            version,
            scope.opset,
            tuple([type_key(scope, name, index) for name in input_names]),
            tuple([attribute.SerializeToString() for attribute in node.attribute]) if node.attribute else (),
            len(node.output),
        )
        template = self.templates.get(key)
        if template is None:
            template = self.templates[key] = self._first_of_kind(rule, version, scope, node, index, location)
        hint = node_hint(node)
        if template is not _NOT_RECORDED and hint.__class__ is str:  # (a name not UTF-8 reads as bytes)
            names = self.driver.names
            result = template.instantiate(input_names, node.output, hint, names, scope.constants, _tag(scope))
            self._replayed = (result, key)
            return result
        inputs = [input_value(scope, name, index) for name in input_names]
        return self.run_rule(rule, scope, node, inputs, rule_attributes(rule, node, location))

    def _first_of_kind(self, rule: Rule, version: int, scope: Scope, node: onnx.NodeProto, index: int, location: str):
        """Check the first node of a kind, and record its expansion for the rest."""
        inputs = [input_value(scope, name, index) for name in node.input]
        check_input_accepted(rule, version, node, inputs[0] if inputs else None, location)
        attributes = rule_attributes(rule, node, location)
        return self._record(rule, inputs, attributes, node, scope)

    def _record(self, rule: Rule, inputs, attributes, node: onnx.NodeProto, scope: Scope):
        """Run the rule on placeholders; _NOT_RECORDED when it reads the surrounding graph."""
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
            target=self.driver.target,
            names=names,
            constants=RecordingConstants(names),
            name_hint=hint,
            scope=None,
            optionals=None,
            rule_for=default_domain_rule,
        )
        try:
            result = rule.body(builder, *recorded_inputs, **attributes)
        except NotLowered:
            return _NOT_RECORDED
        if builder.read_context or any(_names_a_placeholder(node) for node in builder.nodes):
            return _NOT_RECORDED
        try:
            nodes = bound(builder.nodes, result, outputs, names)
        except NotLowered:  # (an output the rule does not write: the plain path says why)
            return _NOT_RECORDED
        return Template(nodes, names.events, placeholders, hint, outputs, self.shortcuts.direct_replay)


def _names_a_placeholder(node: onnx.NodeProto) -> bool:
    """Whether an attribute of a recorded node holds a placeholder name (a Constant's tensor
    named after its output, as ``Builder.ints`` names it): a replay fills names in the node's
    inputs, outputs and name only, so such an expansion is made per node."""
    return any(attribute.HasField("t") and "\x00" in attribute.t.name for attribute in node.attribute)


def _tag(scope: Scope) -> bytes:
    return protowire.node_tag(scope.graph)


class SplicedEdits(GraphEdits):
    """One graph's edits on the fast path: nodes of a kind already seen are taken and replayed
    together; the node list is spliced as bytes."""

    def __init__(self, scope: Scope, path: FastPath) -> None:
        super().__init__(scope)
        self.path = path
        self.kinds: dict[tuple[str, str], tuple] = {}  # (domain, op type) → how it is replayed
        self.waiting: list[tuple[int, Replay]] = []
        self.labels: list[str] = []  # report labels of the replays waiting
        self.together = path.shortcuts.replay_together
        self.converting = path.driver.converting  # (then no node is replayed directly: _kind_of_op)
        # Converting, a node of a kind that was kept as it is is counted and left here, where
        # the driver has no local function a node could call (it would record the call).
        memo = path.kinds
        lane = self.converting and memo is not None and not path.driver.functions
        self.kept_again = memo.kept_again if lane else None

    def take(self, node: onnx.NodeProto, index: int) -> bool:
        if self.converting:
            return self.kept_again is not None and self.kept_again(self.scope, node, index)
        replay = self._direct_replay(node, index)
        if replay is None:
            return False
        self.waiting.append((index, replay))
        return True

    def settle(self) -> None:
        """Replay the waiting nodes, together where their names are all free, else in order."""
        if not self.waiting:
            return
        driver, scope = self.path.driver, self.scope
        replays = [replay for _, replay in self.waiting]
        driver.report.rewritten.update(self.labels)
        self.labels.clear()
        tag = _tag(scope)
        together = replay_together(replays, driver.names, scope.constants, tag) if self.together else None
        for position, (index, replay) in enumerate(self.waiting):
            if together is not None:
                self.replaced[index] = together[position]
            else:
                template, inputs, outputs, hint = replay
                self.replaced[index] = template.instantiate(inputs, outputs, hint, driver.names, scope.constants, tag)
        self.waiting.clear()

    def apply(self) -> bool:
        if self.kept_again is not None:
            self.path.kinds.count_kept()  # (the walk is done: the nodes it took are counted)
        if not self.replaced:
            return False
        scope = self.scope
        whole = self.path.model_bytes is not None
        serialized = self._main_graph_as_read() if whole else None
        protowire.splice_nodes(scope.graph, scope.constants.nodes, self.replaced, whole=whole, serialized=serialized)
        return True

    def _main_graph_as_read(self) -> memoryview | None:
        """The main graph's bytes within the model's, where its kept nodes are still as read:
        no node of it had a subgraph edited or an If output split (else None: it is serialized)."""
        driver = self.path.driver
        if self.scope.graph is not driver.model.graph or driver.edited_structure or driver.optionals.marked:
            return None
        return protowire.field_payload(self.path.model_bytes.get(), _MODEL_GRAPH_FIELD)

    def _direct_replay(self, node: onnx.NodeProto, index: int) -> Replay | None:
        """The replay of a node to lower whose kind was seen, when it needs nothing but
        names and existing constants; None where the driver must look at it."""
        scope = self.scope
        op = (node.domain if scope.other_domains else "", scope.op_types[index])
        kind = self.kinds.get(op)
        if kind is None:
            kind = self.kinds[op] = self._kind_of_op(node)
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
            types = tuple([(known.get(name) or type_key(scope, name, index)) if name else None for name in inputs])
        except NotLowered:
            return None
        rest_of_key = (types, attribute_key, len(outputs))
        template = templates.get(rest_of_key)
        if template is None:  # recorded by FastPath.decompose under the whole key, or not yet
            template = self.path.templates.get((*key_start, *rest_of_key))
            if template is None or template is _NOT_RECORDED or template.direct_plan is None:
                return None
            templates[rest_of_key] = template
        hint = node_hint(node)
        if hint.__class__ is not str:  # a name not UTF-8, read as bytes: the driver names as the plain path does
            return None
        self.labels.append(label)
        return Replay(template, inputs, outputs, hint)

    def _kind_of_op(self, node: onnx.NodeProto) -> tuple[str, tuple, dict] | tuple[()]:
        """For an op type whose nodes may be replayed directly: its report label, how its
        template keys start, and its templates by the rest of their keys (filled as found);
        () when they must go through the driver."""
        driver, scope = self.path.driver, self.scope
        pattern = driver.decomposition_for(node, scope)
        if pattern is None or driver.converting or not driver.is_requested(node) or driver.calls_local_function(node):
            return ()
        rule, version = pattern
        if version is None or not rule.serves(version):
            return ()
        return (f"{node.op_type}-{version}", (rule.domain, rule.op_type, version, scope.opset), {})
