"""Graph scopes: the values a graph, subgraph or function body sees, and their types.

Declared types come first (inputs, outputs, value_info, initializers, Constant nodes); only
when a needed type is not declared is onnx type inference run, once, on a twin of the graph
taken from the unmodified model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import onnx

from .builder import ConstantPool
from .naming import NameAllocator

GraphLike = onnx.GraphProto | onnx.FunctionProto
TwinProvider = Callable[[], "onnx.GraphProto | None"]


def _types_of_value_infos(infos) -> dict[str, onnx.TypeProto]:
    return {info.name: info.type for info in infos if info.HasField("type")}


def declared_types(graph: GraphLike) -> dict[str, onnx.TypeProto]:
    """Types a graph states for its own values (no inference)."""
    types: dict[str, onnx.TypeProto] = {}
    if isinstance(graph, onnx.GraphProto):
        for group in (graph.input, graph.output, graph.value_info):
            types.update(_types_of_value_infos(group))
        for tensor in graph.initializer:
            types.setdefault(tensor.name, _tensor_type(tensor.data_type))
        for sparse in graph.sparse_initializer:
            types.setdefault(sparse.values.name, _tensor_type(sparse.values.data_type))
    else:
        types.update(_types_of_value_infos(getattr(graph, "value_info", ())))
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output:
            for attribute in node.attribute:
                if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
                    types.setdefault(node.output[0], _tensor_type(attribute.t.data_type))
    return types


@functools.cache
def _tensor_type(element_type: int) -> onnx.TypeProto:
    """A tensor type of unknown shape (shared: never modify the result)."""
    type_proto = onnx.TypeProto()
    type_proto.tensor_type.elem_type = element_type
    return type_proto


def element_type_of(type_proto: onnx.TypeProto | None) -> int | None:
    """The element type of a tensor type, None for anything else or unknown."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    element_type = type_proto.tensor_type.elem_type
    return element_type or None


class Scope:
    """One graph being lowered, with its enclosing scope, opset and shared constants."""

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
        self.constants = ConstantPool(names)
        self.unknown_types_reason = unknown_types_reason
        self._twin_provider = twin
        self._twin: onnx.GraphProto | None = None
        self._twin_types: dict[str, onnx.TypeProto] | None = None
        self._declared = declared_types(graph)
        if input_types:
            for name, type_proto in input_types.items():
                self._declared.setdefault(name, type_proto)
        self._producer_map: dict[str, tuple[onnx.NodeProto, int, int]] | None = None
        self._propagated: dict[str, onnx.TypeProto] | None = None
        self._local = set(graph.input) if isinstance(graph, onnx.FunctionProto) else {i.name for i in graph.input}
        self._declared_inputs = frozenset(self._local)
        if isinstance(graph, onnx.GraphProto):
            self._local.update(t.name for t in graph.initializer)
        for node in graph.node:
            self._local.update(node.output)

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

    def _producers(self) -> dict[str, tuple[onnx.NodeProto, int, int]]:
        if self._producer_map is None:
            self._producer_map = {
                output: (node, node_index, output_index)
                for node_index, node in enumerate(self.graph.node)
                for output_index, output in enumerate(node.output)
                if output
            }
        return self._producer_map

    def constant_value(self, name: str) -> onnx.TensorProto | None:
        """The tensor behind ``name`` when it is an initializer or a Constant's value."""
        scope: Scope | None = self
        while scope is not None:
            if isinstance(scope.graph, onnx.GraphProto):
                for tensor in scope.graph.initializer:
                    if tensor.name == name:
                        return tensor
            found = scope._producers().get(name)
            if found is not None:
                node = found[0]
                if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                    for attribute in node.attribute:
                        if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
                            tensor = onnx.TensorProto()
                            tensor.CopyFrom(attribute.t)
                            tensor.name = name
                            return tensor
                return None
            if name in scope._declared_inputs:
                return None
            scope = scope.parent
        return None

    def twin(self) -> onnx.GraphProto | None:
        """The type-inferred copy of this graph (same node order), computed on first need."""
        if self._twin is None:
            self._twin = self._twin_provider()
        return self._twin

    def type_of(self, name: str) -> onnx.TypeProto | None:
        """The type of a value visible here: local first, then enclosing scopes."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope._declared:
                return scope._declared[name]
            if name in scope._local:
                element_type = scope._propagated_types().get(name)
                return _tensor_type(element_type) if element_type else scope._inferred_types().get(name)
            scope = scope.parent
        return None

    def _propagated_types(self) -> dict[str, int]:
        """Element types that follow from the op schemas alone, in one pass over the nodes:
        an output typed like one of its inputs, a fixed type (bool for comparisons), Cast's ``to``.
        Cheaper than onnx type inference, which runs only for what this leaves unknown."""
        if self._propagated is not None:
            return self._propagated
        from .builder import output_element_type

        self._propagated = propagated = {}
        declared = {name: element_type_of(t) for name, t in self._declared.items()}
        for node in self.graph.node:
            if node.domain not in ("", "ai.onnx"):
                continue
            input_types = []
            for name in node.input:
                found = declared.get(name) or propagated.get(name)
                if found is None and name and name not in self._local and self.parent is not None:
                    found = element_type_of(self.parent.type_of(name))
                input_types.append(found)
            element_type = output_element_type(node, self.source_opset, input_types)
            if element_type:
                propagated[node.output[0]] = element_type
        return propagated

    def element_type(self, name: str) -> int | None:
        return element_type_of(self.type_of(name))

    def _inferred_types(self) -> dict[str, onnx.TypeProto]:
        if self._twin_types is None:
            twin = self.twin()
            self._twin_types = {}
            if twin is not None:
                for group in (twin.input, twin.output, twin.value_info):
                    self._twin_types.update(_types_of_value_infos(group))
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
