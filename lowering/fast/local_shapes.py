"""Static shapes of a main graph's values from onnx's inference of the nodes back from them,
one node at a time, before onnx's inference of the whole graph is asked (a speed shortcut:
where it gives nothing, the whole graph's inference answers, as on the plain path).

A shape so found is taken only where every size is a number: the whole graph's inference gives
the same there, and knows at least as much elsewhere (it also propagates shapes computed from
shapes).
"""

from __future__ import annotations

import math

import onnx

from .. import schemas
from ..declared_types import element_type_of, has_shape, initializer_type
from ..folding import INTEGER_TYPES, static_shape
from ..graphs import holds_graphs
from ..scopes import Scope

# Nodes inferred one at a time back from one value whose shape is asked, before onnx's
# inference of the whole graph is asked instead; a graph's values together may have a quarter
# of its nodes so inferred (at least this many), where the whole graph's inference is cheaper.
LOCAL_INFERENCE_NODES = 256
# The largest integer constant handed to a node's inference as data (a shape, axes, sizes).
MAX_LOCAL_DATA_ELEMENTS = 1024

_UNREAD = object()
_NO_INPUT = ("", b"")  # (an input not given, in a node's kind)


class LocalShapes:
    """The static shapes of one main graph's values found by inferring nodes one at a time
    (:meth:`Scope.inferred_type_of` asks :meth:`shape_of` first, as its ``shape_source``)."""

    def __init__(self, scope: Scope) -> None:
        # (the scope is handed to each call, not held: it holds this, and a cycle would keep
        # the pass's objects alive past the pass)
        self._nodes_left = max(LOCAL_INFERENCE_NODES, len(scope.op_types) // 4)
        self._types: dict[str, onnx.TypeProto | None] = {}
        self._input_keys: dict[str, tuple[bytes, bytes] | None] = {}
        self._kinds: dict[tuple, list[onnx.TypeProto | None]] = {}  # (see _infer_node)

    def shape_of(self, scope: Scope, name: str, reader: int | None) -> onnx.TypeProto | None:
        """The type of ``name`` with a static shape (every size a number) as onnx's inference
        of each node back from it gives it, from the shapes the graph states and its small
        integer constants; None where that gives less, or asks more than the nodes left to infer
        so. Values made by default-domain nodes holding no graph; a value the graph states with
        a shape, or as other than a tensor of a known element type, is taken as stated, and one
        it states of another element type than its node's inference gives is not inferred past
        (the whole graph's inference fails on it). ``reader``: the index of a node reading
        ``name``, where known."""
        if scope.is_own_value(name):
            return None
        known = self._types
        pending: list[tuple[str, int | None]] = [(name, reader)]  # (value, the index of a node reading it)
        expanding: set[str] = set()  # values waiting for their producer's inputs (one met again: a cycle)
        met = 0  # nodes met whose inputs are not all typed yet
        while pending:
            value, reader = pending[-1]
            if value in known:
                pending.pop()
                continue
            declared = scope.declared_type(value)
            if declared is not None and (has_shape(declared) or element_type_of(declared) is None):
                known[value] = declared  # (stated as other than a tensor: inference would keep that)
                pending.pop()
                continue
            if scope.is_own_value(value):
                tensor = scope.own_constant(value)
                known[value] = declared if tensor is None else initializer_type(tensor)
                pending.pop()
                continue
            found = scope.nearby_producer(value, reader)
            node = found[0] if found is not None else None
            if node is None or node.domain not in schemas.DEFAULT_DOMAINS or holds_graphs(node):
                known[value] = None
                pending.pop()
                continue
            index = found[1]
            missing = [(source, index) for source in dict.fromkeys(node.input) if source and source not in known]
            if missing and value not in expanding:
                met += 1
                if met > LOCAL_INFERENCE_NODES or met > self._nodes_left:
                    return None
                expanding.add(value)
                for source, _ in missing:
                    if source in expanding:  # (a cycle: not inferred)
                        known[source] = None
                pending.extend(missing)
                continue
            pending.pop()
            expanding.discard(value)
            self._nodes_left -= 1
            self._infer_node(scope, node)
            known.setdefault(value, None)
        found = known.get(name)
        return found if static_shape(found) is not None else None

    def _infer_node(self, scope: Scope, node: onnx.NodeProto) -> None:
        """Each output of ``node`` typed by onnx's inference of the node alone (None for each
        where the inference fails or an input's type is unknown), asked once per kind of node:
        its op, attributes, and its inputs' types and data."""
        known = self._types
        read = [self._input_key(scope, source) if source else _NO_INPUT for source in node.input]
        if None in read:  # (an input of unknown type: its outputs are not inferred)
            for output in node.output:
                if output:
                    known[output] = None
            return
        key = (
            node.op_type,
            tuple([attribute.SerializeToString() for attribute in node.attribute]),
            tuple(read),
            len(node.output),
        )
        found = self._kinds.get(key)
        if found is None:
            found = self._kinds[key] = self._inferred_outputs(scope, node)
        for output, type_proto in zip(node.output, found, strict=True):
            if output:
                stated = scope.declared_type(output)
                if type_proto is not None and stated is not None:
                    if element_type_of(stated) != element_type_of(type_proto):
                        type_proto = None  # (the graph states another element type: inference fails on it)
                known[output] = type_proto

    def _input_key(self, scope: Scope, name: str) -> tuple[bytes, bytes] | None:
        """What a node's inference reads of its input ``name``: its type, and its data where a
        small integer constant, serialized (None where its type is unknown)."""
        found = self._input_keys.get(name, _UNREAD)
        if found is _UNREAD:
            type_proto = self._types.get(name)
            tensor = _small_integer_constant(scope, name)
            found = self._input_keys[name] = (
                None
                if type_proto is None
                else (type_proto.SerializeToString(), b"" if tensor is None else tensor.SerializeToString())
            )
        return found

    def _inferred_outputs(self, scope: Scope, node: onnx.NodeProto) -> list[onnx.TypeProto | None]:
        """onnx's inference of ``node`` alone, from its inputs' local types and small integer
        data: each output's type by position (None where not inferred)."""
        types = {source: self._types[source] for source in node.input if source}
        opset = scope.source_opset
        schema = schemas.schema_in_force(node.op_type, opset)
        outputs: dict[str, onnx.TypeProto] = {}
        if schema is not None and all(t is not None for t in types.values()):
            data = {}
            for source in types:
                tensor = _small_integer_constant(scope, source)
                if tensor is not None:
                    data[source] = tensor
            try:
                outputs = onnx.shape_inference.infer_node_outputs(
                    schema, node, types, data, opset_imports=[onnx.helper.make_opsetid("", opset)]
                )
            except Exception:  # (inference is best effort: the whole graph's is asked instead)
                outputs = {}
        return [outputs.get(output) if output else None for output in node.output]


def _small_integer_constant(scope: Scope, name: str) -> onnx.TensorProto | None:
    """The initializer or Constant value ``name``, where it holds a few integers."""
    tensor = scope.own_constant(name)
    if tensor is None or tensor.data_type not in INTEGER_TYPES:
        return None
    return tensor if math.prod(tensor.dims) <= MAX_LOCAL_DATA_ELEMENTS else None


def shape_source(scope: Scope) -> LocalShapes | None:
    """The local shapes of ``scope`` where it is a model's main graph (else None)."""
    if scope.parent is not None or not isinstance(scope.graph, onnx.GraphProto):
        return None
    return LocalShapes(scope)
