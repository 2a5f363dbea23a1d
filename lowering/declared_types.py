"""The types a graph states for its own values, read without inference: its value_infos
(inputs, outputs, value_info), initializers and Constant nodes; and the small type facts
the scopes share (a type's schema spelling, an initializer's type, a tensor's element type).
"""

from __future__ import annotations

import functools

import onnx

from . import schemas

GraphLike = onnx.GraphProto | onnx.FunctionProto
_UNREAD = object()


class DeclaredTypes:
    """The types a graph states for its own values, by name (no inference): from its
    value_infos (inputs, then outputs, then value_info: a later one with a type wins), else
    its initializers and Constant nodes; also onnx inference's twin of a graph. A value_info's
    type is read when its name is first asked for: a lowering of a few ops reads few of them,
    while making the whole map first cost 0.4 s at 160k value_infos (a conversion, which reads
    most of them, pays about that still)."""

    def __init__(self, groups) -> None:
        # The value_info groups, last first, each as (its names in order, each name's last
        # position, whether a name occurs twice).
        self._groups: list[tuple[list[str], dict[str, int], bool, object]] = []
        for group in reversed(groups):
            names = [info.name for info in group]
            last = dict(zip(names, range(len(names)), strict=True))
            self._groups.append((names, last, len(last) != len(names), group))
        self._found: dict[str, onnx.TypeProto | None] = {}
        self._element_types: dict[str, int] | None = None  # (see stated_element_types)
        self._defaults: dict[str, onnx.TypeProto] = {}  # what the value_infos do not type
        self._constants: dict[str, onnx.NodeProto] = {}  # typed by their value where nothing else types them
        self._grouped: set[str] = set().union(*(last for _, last, _, _ in self._groups))  # named by a value_info
        # the names any of those may type (a name outside it has no declared type)
        self.named: set[str] = set(self._grouped)

    def get(self, name: str) -> onnx.TypeProto | None:
        found = self._found.get(name, _UNREAD)
        if found is _UNREAD:
            if name not in self.named:  # (most values of a graph without value_info: no search)
                return None
            found = self._found[name] = self._stated(name) if name in self._grouped else None
        if found is not None:
            return found
        found = self._defaults.get(name)
        if found is None and name in self._constants:
            found = _constant_type(self._constants[name])
            if found is not None:
                self._defaults[name] = found
        return found

    def stated_element_types(self) -> dict[str, int]:
        """Each name a value_info types, with the element type of the type :meth:`get` gives it
        (0: a type other than a tensor of a known element type), read in one pass over the
        value_infos, once: the whole graph's typing reads most of them, and reading each
        where asked costs twice as much (0.37 against 0.17 s at 160k value_infos)."""
        if self._element_types is None:
            found: dict[str, int] = {}
            for names, _, _, group in reversed(self._groups):  # in order: a later one with a type wins
                # (a value_info added since is not read, as get() does not: its names were listed first)
                for name, info in zip(names, group, strict=False):
                    element_type = info.type.tensor_type.elem_type  # (0 where it holds no tensor type)
                    if element_type:
                        found[name] = element_type
                    elif info.HasField("type"):
                        found[name] = 0
            self._element_types = found
        return self._element_types

    def typed_by_value(self) -> set[str]:
        """The Constant outputs nothing else types (no value_info, no initializer or default):
        :meth:`get` gives each the type of its node's value."""
        return set(self._constants).difference(self._grouped, self._defaults)

    def add_constants(self, constants: dict[str, onnx.NodeProto]) -> None:
        """Constant nodes by output: each types its output by its value, after what types it already."""
        self._constants = constants
        self.named.update(constants)

    def _stated(self, name: str) -> onnx.TypeProto | None:
        """The type of the last value_info naming ``name`` with a type, in the last group holding one."""
        for names, last, repeats, group in self._groups:
            position = last.get(name)
            if position is None:
                continue
            info = group[position]
            if info.HasField("type"):
                return info.type
            if repeats:  # an earlier value_info of this group may name it with a type
                for earlier in range(position - 1, -1, -1):
                    if names[earlier] == name and group[earlier].HasField("type"):
                        return group[earlier].type
        return None

    def setdefault(self, name: str, type_proto: onnx.TypeProto) -> None:
        """``type_proto`` for ``name`` where nothing states its type yet."""
        if self.get(name) is None:
            self._defaults[name] = type_proto
            self.named.add(name)


def declared_types(
    graph: GraphLike, op_types: list[str] | None = None, constants: dict[str, onnx.NodeProto] | None = None
) -> DeclaredTypes:
    """Types a graph states for its own values (no inference). ``op_types``: the op type of
    each node, and ``constants``: its Constant nodes by output (:func:`constant_nodes`), where
    the caller has them already."""
    if isinstance(graph, onnx.GraphProto):
        types = DeclaredTypes([graph.input, graph.output, graph.value_info])
        for tensor in graph.initializer:
            types.setdefault(tensor.name, tensor_type(tensor.data_type))
        for sparse in graph.sparse_initializer:
            types.setdefault(sparse.values.name, tensor_type(sparse.values.data_type))
    else:
        types = DeclaredTypes([getattr(graph, "value_info", ())])
    if constants is None:
        constants = constant_nodes(graph, op_types)
    types.add_constants(constants)
    return types


def constant_nodes(graph: GraphLike, op_types: list[str] | None = None) -> dict[str, onnx.NodeProto]:
    """The graph's default-domain Constant nodes by their output (found from the op types alone)."""
    if op_types is None:
        op_types = [node.op_type for node in graph.node]
    nodes = graph.node
    return {
        node.output[0]: node
        for node in [nodes[k] for k, op_type in enumerate(op_types) if op_type == "Constant"]
        if node.output and node.domain in schemas.DEFAULT_DOMAINS
    }


# The element type of a Constant's output by its value attribute other than ``value`` (the spec).
_CONSTANT_ATTRIBUTE_TYPES = {
    "value_float": onnx.TensorProto.FLOAT,
    "value_floats": onnx.TensorProto.FLOAT,
    "value_int": onnx.TensorProto.INT64,
    "value_ints": onnx.TensorProto.INT64,
    "value_string": onnx.TensorProto.STRING,
    "value_strings": onnx.TensorProto.STRING,
}


def _constant_type(node: onnx.NodeProto) -> onnx.TypeProto | None:
    """The type of a Constant node's output where its ``value`` attribute holds a tensor, or it
    holds a ``value_float(s)``, ``value_int(s)`` or ``value_string(s)`` (a tensor of float,
    int64 or string); None for ``sparse_value`` and a reference to a function's attribute."""
    element_type = constant_element_type(node)
    return None if element_type is None else tensor_type(element_type)


def constant_element_type(node: onnx.NodeProto) -> int | None:
    """The element type of :func:`_constant_type` (read at once, no TypeProto made)."""
    for attribute in node.attribute:
        if attribute.ref_attr_name:
            return None
        if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
            return attribute.t.data_type
        found = _CONSTANT_ATTRIBUTE_TYPES.get(attribute.name)
        if found is not None:
            return found
    return None


@functools.cache
def tensor_type(element_type: int) -> onnx.TypeProto:
    """A tensor type of unknown shape (shared: never modify the result)."""
    type_proto = onnx.TypeProto()
    type_proto.tensor_type.elem_type = element_type
    _SHARED_TYPE_STRINGS[id(type_proto)] = schemas.type_string(type_proto)
    return type_proto


# Schema spellings of the shared tensor types above, by identity (they live as long as the cache).
_SHARED_TYPE_STRINGS: dict[int, str] = {}
# ... and by element type.
TENSOR_TYPE_STRINGS: dict[int, str] = {}


# Schema spellings by a type's bytes (shape and all: a model holds few distinct types), up to a bound.
_TYPE_STRINGS_BY_BYTES: dict[bytes, str] = {}
_MAX_TYPE_STRINGS_BY_BYTES = 4096


def type_string(type_proto: onnx.TypeProto) -> str:
    """:func:`lowering.schemas.type_string`, at once for the shared tensor types, and for a type
    spelled before, by its bytes (reading the proto's fields costs more than writing it out)."""
    found = _SHARED_TYPE_STRINGS.get(id(type_proto))
    if found is not None:
        return found
    data = type_proto.SerializeToString()
    found = _TYPE_STRINGS_BY_BYTES.get(data)
    if found is None:
        found = schemas.type_string(type_proto)
        if len(_TYPE_STRINGS_BY_BYTES) < _MAX_TYPE_STRINGS_BY_BYTES:
            _TYPE_STRINGS_BY_BYTES[data] = found
    return found


def has_shape(type_proto: onnx.TypeProto) -> bool:
    kind = type_proto.WhichOneof("value")
    return kind != "tensor_type" or type_proto.tensor_type.HasField("shape")


def initializer_type(tensor: onnx.TensorProto) -> onnx.TypeProto:
    """The tensor type of an initializer, its shape included."""
    return onnx.helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))


def element_type_of(type_proto: onnx.TypeProto | None) -> int | None:
    """The element type of a tensor type, None for anything else or unknown."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    element_type = type_proto.tensor_type.elem_type
    return element_type or None
