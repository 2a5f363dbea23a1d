"""Graph scopes: the values a graph, subgraph or function body sees, and their types.

Declared types come first (inputs, outputs, value_info, initializers, Constant nodes); only
when a needed type is not declared is onnx type inference run, once, on a twin of the graph
taken from the unmodified model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import onnx

from . import schemas
from .builder import ConstantPool, later_output_rule, output_type_rule, same_typed_inputs, schema_output_rule
from .declared_types import (
    TENSOR_TYPE_STRINGS,
    DeclaredTypes,
    GraphLike,
    constant_element_type,
    constant_nodes,
    declared_types,
    element_type_of,
    has_shape,
    tensor_type,
    type_string,
)
from .folding import INTEGER_TYPES, integer_value_of
from .graphs import constant_tensor
from .naming import NameAllocator

# How many producers back constant_value follows an integer value computed from static shapes.
MAX_FOLDING_DEPTH = 32

TwinProvider = Callable[[], "onnx.GraphProto | None"]


class ShapeSource(Protocol):
    """What gives a value's static shape before onnx's inference of the whole graph is asked."""

    def shape_of(self, scope: Scope, name: str, reader: int | None) -> onnx.TypeProto | None: ...


NEARBY_NODES = 64  # nodes looked at before a reader for its producer, before indexing them all
# Identity nodes followed back to the initializer or Constant holding a value's shape.
MAX_IDENTITIES_FOLLOWED = 8
# Element types followed back one value at a time, before all of a graph's are found in one
# pass: a lowering of a few ops asks for few, a conversion for most.
PROPAGATIONS_BEFORE_WHOLE = 1024


_UNREAD = object()


class _FarProducer(Exception):
    """A value's producer is not among the nodes just before its reader (see ``most_types_asked``)."""


class Scope:
    """One graph being lowered, with its enclosing scope, opset and shared constants.

    Nothing here walks the whole graph unless it must: a value's producer is first looked for
    among the few nodes before the node that reads it, and element types follow from the op
    schemas only back along the values a rewrite needs.

    The type of a value, in one vocabulary (the version adapters' context speaks it too):
    :meth:`type_of` as the graph states it or the op schemas give its element type (no onnx
    inference of the whole graph); :meth:`held_type_of` with the shape the graph states or a
    constant holds; :meth:`inferred_type_of` with the shapes onnx inference adds;
    :meth:`judged_type_of` where only its schema string is read; :meth:`type_string_of` that
    string.
    """

    def __init__(
        self,
        graph: GraphLike,
        *,
        opset: int,
        location: str,
        names: NameAllocator,
        parent: Scope | None = None,
        twin: TwinProvider = lambda: None,
        input_types: dict[str, onnx.TypeProto] | None = None,
        unknown_types_reason: str = "",
        source_opset: int | None = None,
    ) -> None:
        self.graph = graph
        self.opset = opset  # the opset new nodes are written for (the target)
        self.source_opset = opset if source_opset is None else source_opset  # the nodes' own opset
        self.location = location
        self.parent = parent
        self._names = names
        self.constants = ConstantPool(names)
        self.unknown_types_reason = unknown_types_reason
        self.op_types: list[str] = [node.op_type for node in graph.node]
        self.type_strings: dict[str, str] = {}  # schema spellings of types looked up (lowering's memo)
        self.other_domains = True  # whether nodes may be outside the default domain (lowering says)
        self._twin_provider = twin
        self._twin: onnx.GraphProto | None = None
        self._twin_types: DeclaredTypes | None = None
        self._constant_map = constant_nodes(graph, self.op_types)
        self._declared = declared_types(graph, self.op_types, self._constant_map)
        if input_types:
            for name, type_proto in input_types.items():
                self._declared.setdefault(name, type_proto)
        self._producer_map: dict[str, tuple[onnx.NodeProto, int, int]] | None = None
        self._initializer_map: dict[str, onnx.TensorProto] | None = None
        self._identity_map: dict[str, str] | None = None
        self.shape_reads = 0  # calls of inferred_type_of, direct or by folding
        self._integer_values: dict[str, onnx.TensorProto | None] = {}  # folded by constant_value
        self._folding_depth = 0
        self._element_types: dict[str, int] = {}  # propagated from the schemas; 0: unknown
        # The element types the whole pass found stated for nodes' outputs, and whether it found
        # one stated as another type than a tensor of a known element type.
        self._stated_element_types: set[int] = set()
        self._stated_open = False
        self._outer_element_types: dict[str, int] = {}
        # values left to type one by one, before the whole graph is typed in one pass
        self._whole_propagation_left = PROPAGATIONS_BEFORE_WHOLE
        # Whether most values' types will be asked (a conversion's walk, the driver says): then
        # a producer not found among the nodes just before its reader starts the whole pass,
        # which is due soon anyway, instead of indexing every node's outputs for it.
        self.most_types_asked = False
        self._schema_rules: dict[str, tuple] = {}
        # Where a value's static shape is asked before onnx's inference of the whole graph (a
        # path may give one: the speed add-on infers the nodes back from the value one at a time).
        self.shape_source: ShapeSource | None = None
        self._same_typed_inputs: dict[str, tuple] = {}
        inputs = graph.input if isinstance(graph, onnx.FunctionProto) else [i.name for i in graph.input]
        self._declared_inputs = frozenset(inputs)
        self._own_values = set(self._declared_inputs)  # inputs and initializers
        if isinstance(graph, onnx.GraphProto):
            self._own_values.update(t.name for t in graph.initializer)

    def subgraph(
        self, graph: onnx.GraphProto, node_index: int, attribute_name: str, graph_index: int | None, location: str
    ) -> Scope:
        """The scope of a graph held by node ``node_index`` of this one, in its attribute
        ``attribute_name`` (at ``graph_index`` for a list of graphs)."""
        return Scope(
            graph,
            opset=self.opset,
            source_opset=self.source_opset,
            location=location,
            names=self._names,
            parent=self,
            twin=subgraph_twin(self, node_index, attribute_name, graph_index),
            unknown_types_reason=self.unknown_types_reason,
        )

    def producer(self, name: str) -> tuple[onnx.NodeProto, int, int, Scope] | None:
        """The node that produces ``name`` here or in an enclosing scope:
        (node, its index in its graph, the output's index, the scope holding it)."""
        scope: Scope | None = self
        while scope is not None:
            found = scope._producers().get(name)
            if found is not None:
                return (*found, scope)
            if name in scope._declared_inputs:
                return None
            scope = scope.parent
        return None

    def input_owner(self, name: str) -> str | None:
        """Where ``name`` is an input (this graph or an enclosing one), or None."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope._declared_inputs:
                return scope.location
            if name in scope._producers():
                return None
            scope = scope.parent
        return None

    def declared_type(self, name: str) -> onnx.TypeProto | None:
        """The type this graph itself states for ``name`` (never an enclosing graph's)."""
        return self._declared.get(name)

    def is_own_value(self, name: str) -> bool:
        """Whether ``name`` is an input or initializer of this graph."""
        return name in self._own_values

    def own_constant(self, name: str) -> onnx.TensorProto | None:
        """The initializer or Constant of this graph holding ``name``, as a tensor."""
        tensor = self._initializers().get(name)
        if tensor is None and name in self._constant_map:
            tensor = constant_tensor(self._constant_map[name])
        return tensor

    def nearby_producer(self, name: str, reader: int | None) -> tuple[onnx.NodeProto, int, int] | None:
        """:meth:`_local_producer`, or None where it is far and most types are asked."""
        try:
            return self._local_producer(name, reader)
        except _FarProducer:
            return None

    def _producers(self) -> dict[str, tuple[onnx.NodeProto, int, int]]:
        if self._producer_map is None:
            self._producer_map = {
                output: (node, node_index, output_index)
                for node_index, node in enumerate(self.graph.node)
                for output_index, output in enumerate(node.output)
                if output
            }
        return self._producer_map

    def _local_producer(self, name: str, reader: int | None) -> tuple[onnx.NodeProto, int, int] | None:
        """The node of this graph producing ``name``: (node, its index, the output's index).
        ``reader``: the index of a node reading it; the producer, which comes before, is first
        looked for among the nodes just before."""
        if self._producer_map is not None:
            return self._producer_map.get(name)
        if reader is None:
            if self.most_types_asked:
                raise _FarProducer
            return self._producers().get(name)
        nodes = self.graph.node
        index = reader - 1
        stop = reader - NEARBY_NODES if reader > NEARBY_NODES else 0
        while index >= stop:
            node = nodes[index]
            outputs = node.output
            if name in outputs:
                return (node, index, 0 if outputs[0] == name else list(outputs).index(name))
            index -= 1
        if self.most_types_asked:
            raise _FarProducer
        return self._producers().get(name)

    def constant_value(self, name: str) -> onnx.TensorProto | None:
        """The tensor behind ``name`` when it is an initializer no graph input overrides or a
        Constant's value (any of its value attributes but sparse and strings:
        :func:`lowering.graphs.constant_tensor`), or a
        small integer tensor computed from those and static shapes alone (the sizes, axes and
        shapes a graph derives from its inputs' declared shapes: ``Shape(x)`` of an x of static
        shape, and integer arithmetic on it; :func:`lowering.folding.integer_value_of`)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope._declared_inputs:  # (an initializer of that name is a default: another may be fed)
                return None
            tensor = scope._initializers().get(name)
            if tensor is not None:
                return tensor
            constant = scope._constant_map.get(name)
            if constant is not None:
                held = constant_tensor(constant)
                if held is None:
                    return None
                tensor = onnx.TensorProto()
                tensor.CopyFrom(held)
                tensor.name = name
                return tensor
            # Only an integer value made by another node may fold; the producers are indexed
            # for it alone. A value of another type made here is in no enclosing graph either
            # (names are unique across a model and its subgraphs), so none is found there.
            if element_type_of(scope.type_of(name)) in INTEGER_TYPES:
                found = scope._producers().get(name)
                if found is not None:
                    return scope._integer_value(name, found[0], found[2])
            elif scope._producer_map is not None and name in scope._producer_map:
                return None
            scope = scope.parent
        return None

    def _integer_value(self, name: str, node: onnx.NodeProto, output_index: int) -> onnx.TensorProto | None:
        """:meth:`constant_value` of a value a node other than Constant computes, remembered."""
        if name in self._integer_values:
            return self._integer_values[name]
        if self._folding_depth >= MAX_FOLDING_DEPTH or element_type_of(self.type_of(name)) not in INTEGER_TYPES:
            return None  # not remembered where only the depth stopped it: asked alone, it may fold
        self._integer_values[name] = None  # (a cycle folds nothing)
        self._folding_depth += 1
        try:
            found = integer_value_of(node, output_index, self.constant_value, self.inferred_type_of, self.source_opset)
        finally:
            self._folding_depth -= 1
        if found is not None:
            found.name = name
        self._integer_values[name] = found
        return found

    def _initializers(self) -> dict[str, onnx.TensorProto]:
        if self._initializer_map is None:
            graph = self.graph
            self._initializer_map = {t.name: t for t in graph.initializer} if isinstance(graph, onnx.GraphProto) else {}
        return self._initializer_map

    def twin(self) -> onnx.GraphProto | None:
        """The type-inferred copy of this graph (same node order), computed on first need."""
        if self._twin is None:
            self._twin = self._twin_provider()
        return self._twin

    def type_of(self, name: str, reader: int | None = None) -> onnx.TypeProto | None:
        """The type of a value visible here: local first, then enclosing scopes.
        ``reader``: the index of a node of this graph that reads the value, where known."""
        scope: Scope | None = self
        while scope is not None:
            declared = scope._declared.get(name)
            if declared is not None:
                return declared
            element_type = scope._element_types.get(name)
            if element_type is None:
                element_type = scope._propagated_element_type(name, reader)
            if element_type is not None:
                return tensor_type(element_type) if element_type else scope._inferred_types().get(name)
            scope = scope.parent
            reader = None
        return None

    def judged_type_of(self, name: str) -> onnx.TypeProto | None:
        """:meth:`type_of`, as a version step's judgement reads it: only the type's schema
        string matters (a scope recording what a step read notes that narrower read)."""
        return self.type_of(name)

    def type_string_of(self, name: str, reader: int | None = None) -> str | None:
        """The schema spelling of :meth:`type_of` (None where unknown): at once for a value
        nothing declares whose element type the schemas gave."""
        if name not in self._declared.named:
            element_type = self._element_types.get(name)
            if element_type:
                found = TENSOR_TYPE_STRINGS.get(element_type)
                if found is None:
                    found = TENSOR_TYPE_STRINGS[element_type] = type_string(tensor_type(element_type))
                return found
        type_proto = self.type_of(name, reader)
        return None if type_proto is None else type_string(type_proto)

    def inferred_type_of(self, name: str, reader: int | None = None) -> onnx.TypeProto | None:
        """The type of a value visible here with as much shape as is known: declared with a
        shape, else as onnx inference gives it in the original model, else as :meth:`type_of`.
        Counted in ``shape_reads`` (what the driver asks to know whether a result was made from
        shapes)."""
        self.shape_reads += 1
        scope: Scope | None = self
        while scope is not None:
            declared = scope._declared.get(name)
            if declared is not None and has_shape(declared):
                return declared
            if scope._twin_types is None and scope.shape_source is not None:
                local = scope.shape_source.shape_of(scope, name, reader if scope is self else None)
                if local is not None:
                    return local
            inferred = scope._inferred_types().get(name)
            if inferred is not None:
                return inferred
            if declared is not None or name in scope._own_values or name in scope._producers():
                return self.type_of(name)
            scope = scope.parent
        return self.type_of(name)

    def held_type_of(self, name: str, reader: int | None = None) -> onnx.TypeProto | None:
        """:meth:`type_of`, with the shape the graph states for the value, or the dimensions of
        the initializer or Constant holding it (never inferred)."""
        found = self.type_of(name, reader)
        if found is None or has_shape(found) or found.WhichOneof("value") != "tensor_type":
            return found
        dims = self._held_dims(name)
        if dims is None:
            return found
        shaped = onnx.TypeProto()
        shaped.CopyFrom(found)
        shape = shaped.tensor_type.shape
        shape.SetInParent()  # (a scalar's shape: no dimension)
        for size in dims:
            shape.dim.add().dim_value = size
        return shaped

    def _held_dims(self, name: str) -> list[int] | None:
        """The dimensions of the initializer or Constant holding ``name`` here or in an
        enclosing scope, directly or through Identity nodes (TorchScript reads a shared weight
        through one), or None: also for a graph input, whose initializer, where it has one, is
        a default that a feed may replace."""
        scope: Scope | None = self
        followed = 0
        while scope is not None:
            source = scope._identity_sources().get(name)
            if source is not None and followed < MAX_IDENTITIES_FOLLOWED:
                name, followed = source, followed + 1
                continue
            if name in scope._declared_inputs:  # (an initializer of that name is a default: another may be fed)
                return None
            tensor = scope._initializers().get(name)
            if tensor is not None:
                return list(tensor.dims)
            constant = scope._constant_map.get(name)
            if constant is not None:
                held = constant_tensor(constant)
                return None if held is None else list(held.dims)
            if scope._producer_map is not None and name in scope._producer_map:
                return None
            scope = scope.parent
        return None

    def _identity_sources(self) -> dict[str, str]:
        """Each default-domain Identity node's output → its input (found from the op types)."""
        if self._identity_map is None:
            nodes = self.graph.node
            self._identity_map = {
                node.output[0]: node.input[0]
                for node in [nodes[k] for k, op_type in enumerate(self.op_types) if op_type == "Identity"]
                if node.output and node.input and node.domain in schemas.DEFAULT_DOMAINS
            }
        return self._identity_map

    def element_types_of_all_values(self) -> frozenset[int] | None:
        """The element types of every value this graph holds: its inputs and initializers, and
        every node's outputs, as :meth:`type_of` gives them (the nodes typed in one pass, as a
        conversion's walk would type them, where not done yet); None where one of them is not a
        tensor of a type the declarations and schemas give (onnx inference would be asked), or
        the graph is not a model's main graph."""
        if self.parent is not None or not isinstance(self.graph, onnx.GraphProto):
            return None
        if self._whole_propagation_left >= 0:
            self._whole_propagation_left = -1
            self._propagate_whole()
        if self._stated_open:
            return None
        found = set(self._element_types.values()) | self._stated_element_types
        for name in self._own_values:
            found.add(element_type_of(self._declared.get(name)) or 0)
        for sparse in self.graph.sparse_initializer:
            found.add(element_type_of(self._declared.get(sparse.values.name)) or 0)
        if 0 in found:
            return None
        return frozenset(found)

    def _propagated_element_type(self, name: str, reader: int | None) -> int | None:
        """The element type of a value of this graph that follows from the op schemas alone: an
        output typed like one of its inputs (:meth:`_same_type`), a fixed type (bool for
        comparisons), Cast's ``to``. 0 when they leave it open, and onnx type inference is asked
        instead; None when the value is not this graph's.

        The value's producers are followed back as far as its type needs (:meth:`_follow_back`)
        for the first :data:`PROPAGATIONS_BEFORE_WHOLE` values asked; past them (a conversion
        asks for most), every node's outputs are typed at once, in one pass in the graph's order
        (:meth:`_propagate_whole`). Both give each value the same type, whatever was asked
        before."""
        own_values = self._own_values
        if self._whole_propagation_left <= 0:
            if self._whole_propagation_left == 0:
                self._whole_propagation_left = -1
                self._propagate_whole()
            found = self._element_types.get(name)
            if found is None and name in own_values:
                found = self._element_types[name] = 0  # an input whose type is not declared
            return found
        self._whole_propagation_left -= 1
        if name in own_values:
            self._element_types[name] = 0  # an input whose type is not declared
            return 0
        try:
            found = self._local_producer(name, reader)
            if found is None:
                return None
            self._follow_back(name, found)
        except _FarProducer:  # (what was typed so far is as the whole pass types it)
            self._whole_propagation_left = 0
            return self._propagated_element_type(name, reader)
        return self._element_types[name]

    def _follow_back(self, name: str, found: tuple[onnx.NodeProto, int, int]) -> None:
        """Type ``name`` (made by ``found``: node, index, output index) as the whole pass would:
        first the undeclared inputs its type may come from, back to values whose types are
        known (an explicit stack: a chain may be as long as the graph)."""
        known = self._element_types
        pending = [(name, *found)]
        waiting = {name}  # (a value met again while it waits is in a cycle: not followed)
        while pending:
            value, node, index, output_index = pending[-1]
            rule = self._output_rule(node, index, output_index)
            if rule is None or rule[0] != "same":
                known[value] = rule[1] if rule is not None else 0
            else:
                source = self._input_to_follow(node, index, waiting)
                if source is not None:
                    pending.append(source)
                    waiting.add(source[0])
                    continue
                known[value] = self._same_type(node, index, rule[1])
            waiting.discard(value)
            pending.pop()

    def _input_to_follow(
        self, node: onnx.NodeProto, index: int, waiting: set[str]
    ) -> tuple[str, onnx.NodeProto, int, int] | None:
        """The first of the node's inputs typed like its output that is made in this graph, not
        declared and not typed yet, before any whose type is known: (name, its producer, the
        producer's index, the output's index); None where there is none."""
        known = self._element_types
        for source in self._same_typed_names(node, index):
            if known.get(source):
                return None  # (it decides, whatever follows it)
            if not source or source in known or source in waiting or source in self._own_values:
                continue
            if element_type_of(self._declared.get(source)) is not None:
                continue
            found = self._local_producer(source, index)
            if found is not None:
                return (source, *found)
        return None

    def _propagate_whole(self) -> None:
        """Each output of this graph's nodes without a declared element type typed as
        :meth:`_follow_back` types it, in one pass: a node's inputs, made before it, are typed by
        the time it is reached. (A node of one output typed like its inputs, the most common,
        takes the first typed of them here at once, as does one of a fixed type; any other as
        :meth:`_propagate_node`.)"""
        known = self._element_types
        declared = self._declared
        stated = declared.named  # (a name outside it has no declared type: not looked up)
        stated_types = self._stated_element_types
        op_types = self.op_types
        domains_to_read = self.other_domains
        by_value = declared.typed_by_value()
        stated_elements = declared.stated_element_types()
        # op type → how a node of one output is typed at once: ("same", its inputs typed like
        # it, the input typed like it where none is typed) or ("type", t); None: _propagate_node
        lanes: dict[str, tuple | None] = {}
        for index, node in enumerate(self.graph.node):
            outputs = node.output
            if len(outputs) != 1:
                self._propagate_node(node, index)
                continue
            output = outputs[0]
            if not output or output in known:
                continue
            op_type = op_types[index]
            if output in stated:  # (the element type of declared.get(output), at once where it can be)
                element_type = stated_elements.get(output)
                if element_type is None and op_type == "Constant" and output in by_value:
                    element_type = constant_element_type(node) or None
                if element_type is None:
                    stated_type = declared.get(output)
                    if stated_type is not None:
                        element_type = element_type_of(stated_type) or 0
                if element_type:
                    stated_types.add(element_type)
                    continue
                if element_type is not None:
                    self._stated_open = True
            lane = lanes.get(op_type, _UNREAD)
            if lane is _UNREAD:
                rule = self._schema_rules.get(op_type) or self._output_rule(node, index)
                if rule and rule[0] == "same":
                    lane = ("same", self._same_typed_positions(op_type)[0], rule[1])
                else:
                    lane = rule if rule and rule[0] == "type" and self._schema_rules.get(op_type) == rule else None
                lanes[op_type] = lane
            if lane is None or (domains_to_read and node.domain not in schemas.DEFAULT_DOMAINS):
                self._propagate_node(node, index)
                continue
            if lane[0] == "type":
                known[output] = lane[1]
                continue
            inputs = node.input
            for position in lane[1]:
                if position < len(inputs):
                    found = known.get(inputs[position])
                    if found:
                        known[output] = found
                        break
            else:
                known[output] = self._same_type(node, index, lane[2])

    def _propagate_node(self, node: onnx.NodeProto, index: int) -> None:
        """The node's outputs without a declared element type typed (see :meth:`_propagate_whole`)."""
        known = self._element_types
        declared = self._declared
        same = None  # the type of the outputs typed like an input, found once a node
        for output_index, output in enumerate(node.output):
            if not output or output in known:
                continue
            stated_type = declared.get(output)
            if stated_type is not None:
                element_type = element_type_of(stated_type)
                if element_type is not None:
                    self._stated_element_types.add(element_type)
                    continue
                self._stated_open = True
            rule = self._output_rule(node, index, output_index)
            if rule is None or rule[0] != "same":
                known[output] = rule[1] if rule is not None else 0
                continue
            if same is None:
                same = self._same_type(node, index, rule[1])
            known[output] = same

    def _same_type(self, node: onnx.NodeProto, index: int, position: int) -> int:
        """The element type of the node's outputs typed like its inputs, once those inputs made
        in this graph are typed: the first nonzero type among the inputs typed like the output,
        in input order, that this graph's values were given; else the first declared, or an
        enclosing graph's; else input ``position``'s (declared, given, or an enclosing graph's;
        0 where unknown)."""
        known = self._element_types
        names = self._same_typed_names(node, index)
        for source in names:
            found = known.get(source)
            if found:
                return found
        for source in names:
            if not source or source in known or source in self._own_values:
                continue
            found = element_type_of(self._declared.get(source))
            if found is None:
                found = self._outer_type(source)
            if found:
                return found
        source = node.input[position] if position < len(node.input) else ""
        declared = element_type_of(self._declared.get(source))
        if declared is not None or not source:
            return declared or 0
        if source in known:
            return known[source]
        if source in self._own_values:
            known[source] = 0
            return 0
        return self._outer_type(source)

    def _outer_type(self, name: str) -> int:
        """The element type of a value this graph reads and does not make (an enclosing graph's,
        or, in a graph out of order or in a cycle, one made later), remembered; 0 where unknown."""
        found = self._outer_element_types.get(name)
        if found is None:
            found = element_type_of(self.parent.type_of(name)) if self.parent else 0
            found = self._outer_element_types[name] = found or 0
        return found

    def _same_typed_names(self, node: onnx.NodeProto, index: int) -> list[str]:
        """The node's inputs its schema types like its output, in input order."""
        positions, from_position = self._same_typed_positions(self.op_types[index])
        inputs = node.input
        count = len(inputs)
        names = [inputs[k] for k in positions if k < count]
        if from_position is not None:
            names += inputs[from_position + 1 :]
        return names

    def _same_typed_positions(self, op_type: str) -> tuple[tuple[int, ...], int | None]:
        """:func:`lowering.builder.same_typed_inputs` for ``op_type``, looked up once."""
        same = self._same_typed_inputs.get(op_type)
        if same is None:
            same = self._same_typed_inputs[op_type] = same_typed_inputs(op_type, self.source_opset)
        return same

    def _output_rule(self, node: onnx.NodeProto, index: int, output_index: int = 0) -> tuple[str, int] | None:
        """:func:`lowering.builder.output_type_rule` for output ``output_index`` of node
        ``index`` (a later output of a multi-output node: :func:`later_output_rule`), its
        schema's part looked up once per op type."""
        op_type = self.op_types[index]
        if node.domain not in schemas.DEFAULT_DOMAINS:
            return None
        if output_index:
            return later_output_rule(op_type, self.source_opset, output_index)
        schema_rule = self._schema_rules.get(op_type)
        if schema_rule is None:
            schema_rule = self._schema_rules[op_type] = schema_output_rule(op_type, self.source_opset) or ()
        if not schema_rule:
            return None
        if schema_rule[0] in ("same", "type"):
            return schema_rule
        if len(node.output) != 1:
            return None
        return output_type_rule(node, self.source_opset)

    def _inferred_types(self) -> DeclaredTypes:
        if self._twin_types is None:
            twin = self.twin()
            self._twin_types = DeclaredTypes([twin.input, twin.output, twin.value_info] if twin is not None else [])
        return self._twin_types


def subgraph_twin(parent: Scope, node_index: int, attribute_name: str, graph_index: int | None) -> TwinProvider:
    """A provider for the twin of a subgraph, found at the same place in the parent's twin."""

    def provide() -> onnx.GraphProto | None:
        parent_twin = parent.twin()
        if parent_twin is None or node_index >= len(parent_twin.node):
            return None
        for attribute in parent_twin.node[node_index].attribute:
            if attribute.name == attribute_name:
                if graph_index is None:
                    return attribute.g
                return attribute.graphs[graph_index]
        return None

    return provide
