"""Retyping: the values of an element type a runtime lacks rewritten to one it has, exactly or
refused: int64 to int32, uint64 to uint32 (exact where every value fits), float64 to float32,
bfloat16 to float16 or float32 (the arithmetic then rounds otherwise: stated, never exact).

Each node's values of the wide type are grouped by the type constraint onnx.defs gives them at
the graph's opset. A group goes narrow where the constraint takes the narrow type and every one
of its values fits it (:mod:`lowering.value_ranges`); else the node computes in the wide type,
its narrow inputs cast up (exact), and its outputs are cast down where a reader needs them narrow
and their range fits. So arithmetic that may overflow (a Mul of two sizes, CumSum) stays wide,
and an input only the wide type may feed (Reshape's shape) gets a Cast up. A constant that does
not fit is refused, unless only Slice's starts and ends read it: Slice clamps them to the sliced
dimension, so the narrow type's largest value means what the wide type's did.

Assumed (stated in the report): every dimension and element count fits the narrow type, and so
do the integer values fed to the model's inputs where they keep their wide type (a Cast down
follows them).
"""

from __future__ import annotations

from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
from onnx import external_data_helper

from . import floats, schemas, value_ranges
from .errors import LoweringError
from .graphs import constant_tensor, held_graphs, holds_graphs, nested_graphs
from .local_functions import infer, infer_function
from .modelio import checkable, external_file
from .naming import NameAllocator
from .targets import Target

T = onnx.TensorProto
RETYPINGS: dict[int, frozenset[int]] = {
    T.INT64: frozenset({T.INT32}),
    T.UINT64: frozenset({T.UINT32}),
    T.DOUBLE: frozenset({T.FLOAT}),
    T.BFLOAT16: frozenset({T.FLOAT16, T.FLOAT}),
}
CHUNK_VALUES = 1 << 20  # values a constant is read and converted by
MAX_INLINE_BYTES = 1 << 30  # a retyped constant is written inline, up to this size
# Ops whose result depends on the bits of a type, not its values: kept in the wide type.
_BITS_READ = frozenset({"BitCast"})
# Slice clamps starts and ends to the sliced dimension (which fits the narrow type).
_CLAMPED_INPUTS = {("Slice", 1), ("Slice", 2)}


CAST_NODE_SUFFIX = "_cast"  # (a Cast the retyping writes is named VALUE_TYPE_cast: 'input_ids_int32_cast')


def retyping_cast(op_type: str, node_name: str, to: int) -> bool:
    """Whether a node named so is a Cast the retyping wrote to ``to`` (by its name, as written)."""
    return op_type == "Cast" and f"_{type_label(to)}{CAST_NODE_SUFFIX}" in node_name


class RetypeRefused(LoweringError):
    """The model cannot be retyped exactly: ``reasons`` says where and why, each."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = list(reasons)
        shown = "; ".join(self.reasons[:3])
        more = f"; and {len(self.reasons) - 3} more" if len(self.reasons) > 3 else ""
        super().__init__(f"cannot retype: {shown}{more}")


@dataclass
class RetypeReport:
    """What retyping did: ``retyped`` values per (wide, narrow) pair name, ``casts`` added,
    ``kept_wide`` (node: why it computes in the wide type), ``assumed`` and ``inexact``."""

    retyped: dict[str, int] = field(default_factory=dict)
    casts: int = 0
    kept_wide: list[str] = field(default_factory=list)
    wide_only: dict[str, int] = field(default_factory=dict)  # op -> its nodes onnx takes only wide
    rounded_inputs: dict[str, int] = field(default_factory=dict)  # float inputs rounded: the narrow type
    assumed: list[str] = field(default_factory=list)
    inexact: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "retyped": dict(self.retyped),
            "casts": self.casts,
            "kept_wide": list(self.kept_wide),
            "wide_only": dict(sorted(self.wide_only.items())),
            "assumed": list(self.assumed),
            "inexact": list(self.inexact),
            "rounded_inputs": {name: type_label(t) for name, t in self.rounded_inputs.items()},
        }

    def lines(self) -> list[str]:
        found = [f"retyped {count} values {pair}" for pair, count in self.retyped.items()]
        found += [f"added {self.casts} Casts"] if self.casts else []
        found += [f"kept wide: {why}" for why in self.kept_wide]
        if self.wide_only:
            ops = ", ".join(f"{op} x{count}" for op, count in sorted(self.wide_only.items()))
            found.append(f"kept wide where the op takes no other type (or is not onnx's): {ops}")
        found += [f"assumed: {why}" for why in self.assumed]
        found += [f"not exact: {why}" for why in self.inexact]
        return found


def parse_retypings(text: str | dict | None) -> dict[int, int]:
    """``int64=int32,float64=float32`` (or a dict of names or element types) as element types."""
    if not text:
        return {}
    pairs = text.items() if isinstance(text, dict) else (part.split("=", 1) for part in text.split(",") if part)
    found: dict[int, int] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise LoweringError(f"--retype takes FROM=TO pairs, e.g. int64=int32 (got {'='.join(pair)!r})")
        wide, narrow = (_element_type(side) for side in pair)
        if narrow not in RETYPINGS.get(wide, ()):
            offered = ", ".join(
                f"{schemas.type_name(w).lower()}={schemas.type_name(n).lower()}"
                for w, ns in RETYPINGS.items()
                for n in sorted(ns)
            )
            raise LoweringError(f"cannot retype {type_label(wide)} to {type_label(narrow)}; offered: {offered}")
        if wide in found:
            raise LoweringError(f"{type_label(wide)} is retyped twice")
        found[wide] = narrow
    return found


def _element_type(side) -> int:
    if isinstance(side, int):
        return side
    name = {"float64": "DOUBLE", "float32": "FLOAT"}.get(side.strip().lower(), side.strip().upper())
    if not hasattr(T, name) or name == "UNDEFINED":
        raise LoweringError(f"--retype: {side!r} is no element type onnx knows")
    return getattr(T, name)


def type_label(element_type: int) -> str:
    """An element type as --retype spells it: int64, float64, bfloat16."""
    return {T.DOUBLE: "float64", T.FLOAT: "float32"}.get(element_type, schemas.type_name(element_type).lower())


def retype_model(
    model: onnx.ModelProto,
    retypings: dict[int, int],
    *,
    retype_io: bool = False,
    names: NameAllocator | None = None,
    external_folder: Path | None = None,
    target: Target | None = None,
) -> RetypeReport:
    """Retype ``model`` in place (see the module); RetypeRefused where it cannot be exact.
    ``external_folder``: where the external data of a model loaded without it lie; ``target``:
    the runtime, whose kernels (where known) must take a node's narrow types, else it stays wide."""
    report = RetypeReport()
    if not retypings:
        return report
    names = names or NameAllocator(model=model)
    inferred = infer(checkable(model))
    opset = schemas.default_opset(model.opset_import) or 0
    shared = _Shared(retypings, retype_io, names, opset, report, external_folder)
    shared.target = target
    for wide, narrow in retypings.items():
        if not floats.is_integer(narrow):
            report.inexact.append(f"{type_label(wide)} arithmetic now rounds as {type_label(narrow)} does")
    _GraphRetyping(model.graph, shared, typed=inferred.graph if inferred is not None else model.graph).run()
    main_types = ChainMap(_own_types(inferred.graph if inferred is not None else model.graph))
    for inner in nested_graphs(model.graph.node):  # (calls inside If/Loop bodies: their arguments' types)
        main_types.maps.append(_own_types(inner))
    for function in model.functions:
        _retype_function(function, model, shared, main_types)
    if shared.refused:
        raise RetypeRefused(shared.refused)
    return report


def _own_types(graph) -> dict[str, int]:
    """Each tensor value's element type as ``graph`` itself declares it (not the graphs its nodes
    hold: two sibling branches may each define a value of one name)."""
    found = {t.name: t.data_type for t in getattr(graph, "initializer", ())}
    for info in [*graph.input, *graph.output, *getattr(graph, "value_info", ())]:
        if isinstance(info, onnx.ValueInfoProto) and info.type.WhichOneof("value") == "tensor_type":
            if info.type.tensor_type.elem_type:
                found[info.name] = info.type.tensor_type.elem_type
    return found


def _retype_function(function: onnx.FunctionProto, model: onnx.ModelProto, outer: _Shared, types) -> None:
    """A local function's body retyped inside (its inputs and outputs keep their types: every
    call shares them), typed from the element types its calls agree on; left as it is, and said,
    where they disagree."""

    def calls_in(nodes):
        return [node for node in nodes if node.op_type == function.name and node.domain == function.domain]

    calls = calls_in([*model.graph.node, *(n for g in nested_graphs(model.graph.node) for n in g.node)])
    from_functions = any(calls_in(other.node) for other in model.functions if other is not function)
    signatures = {tuple(types.get(name, 0) for name in call.input) for call in calls}
    if len(signatures) != 1 or from_functions:
        if any(_writes(node, set(outer.retypings)) for node in function.node) or any(
            t in outer.retypings for signature in signatures for t in signature
        ):
            why = (
                "called from another function"
                if from_functions
                else "called with other element types"
                if signatures
                else "never called"
            )
            outer.report.kept_wide.append(f"function '{function.domain}.{function.name}': {why}, kept as it is")
        return
    (signature,) = signatures
    input_types = {
        name: onnx.helper.make_tensor_type_proto(element_type, None)
        for name, element_type in zip(function.input, signature, strict=False)
        if element_type
    }
    typed = infer_function(function, input_types, model)
    opset = schemas.default_opset(function.opset_import) or outer.opset
    shared = _Shared(outer.retypings, False, outer.names, opset, outer.report, outer.external_folder)
    shared.refused, shared.target = outer.refused, outer.target
    retyping = _GraphRetyping(function, shared, body=True, typed=typed)
    retyping.types.update({name: t.tensor_type.elem_type for name, t in input_types.items()})
    retyping.run()


def _writes(node: onnx.NodeProto, wide: set[int]) -> bool:
    """Whether a node writes a constant of, or casts to, one of ``wide``."""
    tensor = constant_tensor(node) if node.op_type in ("Constant", "ConstantOfShape") else None
    if tensor is not None and tensor.data_type in wide:
        return True
    if node.op_type == "Constant" and any(a.name in ("value_int", "value_ints") for a in node.attribute):
        return T.INT64 in wide
    return any(_names_a_type_in(node, a, wide) for a in node.attribute)


def _names_a_type_in(node: onnx.NodeProto, attribute: onnx.AttributeProto, element_types) -> bool:
    """Whether ``attribute`` names an element type among ``element_types`` (Cast's ``to``)."""
    return (
        attribute.type == onnx.AttributeProto.INT
        and attribute.i in element_types
        and _is_type_attribute(node, attribute.name)
    )


def _is_type_attribute(node: onnx.NodeProto, name: str) -> bool:
    """Whether attribute ``name`` of the node's op names an element type (onnx.defs: an int
    attribute ``to`` or ``dtype``, or one its description calls a data type)."""
    schema = schemas.schema_in_force(node.op_type, schemas.newest_opset(), node.domain)
    if schema is None or name not in schema.attributes:
        return False
    attribute = schema.attributes[name]
    if attribute.type != onnx.defs.OpSchema.AttrType.INT:
        return False
    return name in ("to", "dtype") or "data type" in attribute.description.lower()


class _Shared:
    """What every graph of one scope (a model's graphs, or a local function's) shares: the
    retyping asked, the report, the refusals, the runtime."""

    def __init__(self, retypings, retype_io, names, opset, report, external_folder) -> None:
        self.retypings, self.retype_io, self.names, self.opset = retypings, retype_io, names, opset
        self.report, self.external_folder = report, external_folder
        self.target: Target | None = None
        self.refused: list[str] = []
        narrow_integers = [n for n in retypings.values() if floats.is_integer(n)]
        self.size_limit = min([value_ranges.type_range(n)[1] + 1 for n in narrow_integers], default=1 << 63)


class _GraphRetyping:
    """One graph's nodes rewritten in order; each value of a type to retype known by the names
    holding it narrow and wide (the other made by a Cast where first asked, in the graph that
    asks: a graph a node holds sees its enclosing graphs' names, not the other way). A ``body``
    (a graph a node holds, a local function) keeps its inputs' and outputs' types: its inputs
    may hold anything, its outputs are cast back where made narrow."""

    def __init__(self, graph, shared: _Shared, parent: _GraphRetyping | None = None, body: bool = False, typed=None):
        self.graph, self.shared, self.parent, self.body = graph, shared, parent, body
        self.typed = typed  # the graph as onnx inference typed it (same nodes, in order), or None
        own = {**_own_types(typed), **_own_types(graph)} if typed is not None else _own_types(graph)
        # A value's element type and range: this graph's own first, then its enclosing graphs'.
        self.types: ChainMap = ChainMap(own, *(parent.types.maps if parent is not None else []))
        self.ranges: ChainMap = ChainMap({}, *(parent.ranges.maps if parent is not None else []))
        self.report, self.names = shared.report, shared.names
        self.retype_io = shared.retype_io and not body
        self.narrow: dict[str, str] = {}  # value -> the name holding it narrow, made here
        self.wide: dict[str, str] = {}  # value -> the name holding it wide, made here
        self.nodes: list[onnx.NodeProto] = []
        self.outputs = set() if body else {o.name for o in graph.output}
        self.final_casts: list[onnx.NodeProto] = []
        self.retyped_names: dict[str, int] = {}  # names now of a narrow type: for value_info
        self.readers = _readers(graph)  # (of this graph's values, in it and the graphs it holds)
        self.output_names = {o if isinstance(o, str) else o.name for o in graph.output}

    # -- what a value is ------------------------------------------------------------------
    def narrow_type(self, name: str) -> int | None:
        """The narrow type ``name`` is retyped to, where its type is one to retype."""
        return self.shared.retypings.get(self.types.get(name, 0))

    def fits(self, name: str) -> bool:
        """Whether the value may be held narrow: a float always (rounded), an integer where its
        range fits."""
        narrow = self.narrow_type(name)
        if narrow is None:
            return False
        return not floats.is_integer(narrow) or value_ranges.fits(self.ranges.get(name), narrow)

    def range_of(self, name: str) -> value_ranges.Range:
        """The range of an integer value (its type's where not retyped), None otherwise."""
        if not name:
            return None
        if self.narrow_type(name) is not None:
            return self.ranges.get(name)
        element_type = self.types.get(name)
        if element_type is not None and (floats.is_integer(element_type) or element_type == T.BOOL):
            return value_ranges.type_range(element_type)
        return None

    def _found(self, name: str, narrow: bool) -> str | None:
        scope = self
        while scope is not None:
            found = (scope.narrow if narrow else scope.wide).get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def held(self, name: str, narrow: bool) -> str:
        """The name holding ``name`` narrow or wide, a Cast added here where first asked."""
        found = self._found(name, narrow)
        if found is not None:
            return found
        source = self._found(name, not narrow)
        to = self.narrow_type(name) if narrow else self.types[name]
        cast = self.names.fresh(f"{name}_{type_label(to)}")
        node_name = self.names.fresh(f"{cast}{CAST_NODE_SUFFIX}")
        self.nodes.append(onnx.helper.make_node("Cast", [source], [cast], to=to, name=node_name))
        self.report.casts += 1
        if narrow and not floats.is_integer(to) and not _holds_every_value(self.types[name], to):
            self.report.inexact.append(f"'{name}' rounded to {type_label(to)}")
        (self.narrow if narrow else self.wide)[name] = cast
        return cast

    # -- the walk -------------------------------------------------------------------------
    def run(self) -> None:
        graph = self.graph
        function = isinstance(graph, onnx.FunctionProto)
        input_names = list(graph.input) if function else [info.name for info in graph.input]
        for name in input_names:
            self._input(name)
        for tensor in [] if function else graph.initializer:
            if tensor.name in input_names or self.narrow_type(tensor.name) is None:
                continue
            if tensor.name in self.outputs and not self.retype_io:
                self.wide[tensor.name] = tensor.name  # (a graph output keeps its type)
                continue
            self._constant(tensor, tensor.name, f"initializer '{tensor.name}'")
        typed_nodes = list(self.typed.node) if self.typed is not None else []
        if len(typed_nodes) != len(graph.node):
            typed_nodes = list(graph.node)
        for node, typed_node in zip(graph.node, typed_nodes, strict=True):
            self._node(node, typed_node)
        if self.body:
            self._body_outputs()
        else:
            for info in {info.name: info for info in graph.output}.values():  # (an output listed twice: once)
                self._output(info)
        del graph.node[:]
        graph.node.extend([*self.nodes, *self.final_casts])
        infos = [*getattr(graph, "value_info", ())] if function else [*graph.value_info, *graph.output, *graph.input]
        for info in infos:
            retyped = self.retyped_names.get(info.name)
            if retyped is not None and info.type.WhichOneof("value") == "tensor_type":
                info.type.tensor_type.elem_type = retyped
        for name in self.retyped_names:
            self._count(name)

    def _count(self, name: str) -> None:
        """One value more computed in its narrow type, in the report."""
        pair = f"{type_label(self.types[name])}->{type_label(self.narrow_type(name))}"
        self.report.retyped[pair] = self.report.retyped.get(pair, 0) + 1

    def _body_outputs(self) -> None:
        """A body's outputs of a type to retype given wide (a Cast up where made narrow, the
        output then named after the Cast: a body's outputs are bound by position)."""
        graph = self.graph
        function = isinstance(graph, onnx.FunctionProto)
        for index in range(len(graph.output)):
            name = graph.output[index] if function else graph.output[index].name
            if self.narrow_type(name) is None:
                continue
            source = self.held(name, narrow=False)
            if source != name:
                if function:
                    graph.output[index] = source
                else:
                    graph.output[index].name = source

    def _input(self, name: str) -> None:
        """A graph input of a type to retype: narrow with ``retype_io``; else kept, and cast down
        where read: a model's input assumed to fit, a body's input unbounded."""
        narrow = self.narrow_type(name)
        if narrow is None:
            return
        if self.body:
            self.wide[name] = name
            return
        if floats.is_integer(narrow):
            self.ranges[name] = value_ranges.type_range(narrow)
        else:
            self.report.rounded_inputs[name] = narrow
        if self.retype_io:
            self.narrow[name] = name
            self.retyped_names[name] = narrow
            return
        self.wide[name] = name
        if floats.is_integer(narrow):
            wide = type_label(self.types[name])
            self.report.assumed.append(f"input '{name}' holds {type_label(narrow)} values (given as {wide})")

    def _constant(self, tensor: onnx.TensorProto, name: str, where: str) -> bool:
        """A constant of a type to retype made narrow where it fits (refused where not, or
        clamped where only Slice's starts and ends read it): whether it was. Its values are read
        in chunks (from its external data file, where it is held there) and written inline."""
        narrow = self.narrow_type(name)
        chunks = self._chunks(tensor, where)
        if chunks is None:
            self.wide[name] = name
            return False
        if floats.is_integer(narrow):
            found = _chunked_range(chunks())
            low, high = value_ranges.type_range(narrow)
            clamped = not value_ranges.fits(found, narrow)
            if clamped:
                readers = self.readers.get(name, [])
                if all(self._takes_only_wide(r, k) for r, k in readers):
                    self.wide[name] = name  # (kept: every reader takes the wide type anyway, or none reads it)
                    self.ranges[name] = found
                    return False
                clampable = readers and all((r.op_type, k) in _CLAMPED_INPUTS for r, k in readers)
                if not clampable or name in self.output_names:
                    shown = ", ".join(_described(r) for r, _ in readers) or "nothing"
                    past = found[1] if found[1] > high else found[0]
                    self.shared.refused.append(
                        f"{where} holds {past}, which {type_label(narrow)} cannot hold (read by {shown})"
                    )
                    self.wide[name] = name
                    return False
                found = (max(found[0], low), min(found[1], high))
            self.ranges[name] = found
            dtype = floats.numpy_dtype(narrow)
            parts = [(np.clip(chunk, low, high) if clamped else chunk).astype(dtype).tobytes() for chunk in chunks()]
        else:
            parts, rounded = [], False
            for chunk in chunks():
                narrowed = _rounded(chunk, narrow)
                if _overflows(chunk, narrowed):
                    self.shared.refused.append(f"{where} holds a value past {type_label(narrow)}'s largest")
                    self.wide[name] = name
                    return False
                wide = chunk.astype(np.float64)
                rounded = rounded or not np.array_equal(narrowed.astype(np.float64), wide, equal_nan=True)
                parts.append(narrowed.tobytes())
            if rounded:
                self.report.inexact.append(f"{where} rounded to {type_label(narrow)}")
        if sum(map(len, parts)) > MAX_INLINE_BYTES:
            self.shared.refused.append(f"{where} would hold more than {MAX_INLINE_BYTES >> 20} MiB inline once retyped")
            self.wide[name] = name
            return False
        _hold_inline(tensor, narrow, b"".join(parts))
        self.narrow[name] = name
        self.retyped_names[name] = narrow
        return True

    def _takes_only_wide(self, node: onnx.NodeProto, position: int) -> bool:
        """Whether input ``position`` of ``node`` is given the wide type whatever its value: a
        node holding graphs, of an op onnx.defs does not know, or an input only the wide type
        may feed (Reshape's shape)."""
        if holds_graphs(node):
            return True
        schema = schemas.schema_in_force(node.op_type, self.shared.opset, node.domain)
        if schema is None or not schema.inputs:
            return True
        formal = schemas.formal_input(schema, position)
        constrained = any(c.type_param_str == formal.type_str for c in schema.type_constraints)
        key = formal.type_str if constrained else f"input:{position}"
        return self.narrow_type(node.input[position]) not in self._allowed(node, key)

    def _chunks(self, tensor: onnx.TensorProto, where: str):
        """A function giving the tensor's values as flat arrays of at most :data:`CHUNK_VALUES`,
        read from its external data file where it is held there; None (and refused) where that
        file's folder is not known."""
        if not external_data_helper.uses_external_data(tensor):
            values = floats.array_of(tensor).reshape(-1)
            return lambda: (values[k : k + CHUNK_VALUES] for k in range(0, max(values.size, 1), CHUNK_VALUES))
        if self.shared.external_folder is None:
            self.shared.refused.append(
                f"{where} is held in external data, whose folder is not known: load the model with its data, or give "
                "external_folder="
            )
            return None
        source, offset, length = external_file(tensor, self.shared.external_folder)
        dtype = np.dtype(floats.numpy_dtype(tensor.data_type)).newbyteorder("<")

        def read():
            step = CHUNK_VALUES * dtype.itemsize
            with open(source, "rb") as handle:
                handle.seek(offset)
                for start in range(0, length, step):
                    yield np.frombuffer(handle.read(min(step, length - start)), dtype)

        return read

    def _node(self, node: onnx.NodeProto, typed_node: onnx.NodeProto) -> None:
        if node.op_type == "Constant" and node.domain in schemas.DEFAULT_DOMAINS and node.output:
            self._constant_node(node)
            return
        if holds_graphs(node):
            self._holding_graphs(node, typed_node)
            return
        groups = self._groups(node)
        if groups:
            self._output_ranges(node)
            untyped = any(name and name not in self.types for name in [*node.input, *node.output])
            keep = untyped or node.op_type in _BITS_READ
            narrow_groups = set() if keep else {k for k, slots in groups.items() if self._goes_narrow(node, k, slots)}
            if narrow_groups and not self._taken_narrow(node, groups, narrow_groups):
                narrow_groups = set()
            for key, slots in groups.items():
                for kind, position in slots:
                    if kind == "input":
                        node.input[position] = self.held(node.input[position], key in narrow_groups)
            self._type_attributes(node, groups, narrow_groups)
            for key, slots in groups.items():
                for kind, position in slots:
                    if kind == "output":
                        self._written(node, position, key in narrow_groups)
        self.nodes.append(node)

    def _taken_narrow(self, node: onnx.NodeProto, groups, narrow_groups) -> bool:
        """Whether the node, its ``narrow_groups`` narrowed, is one the runtime has a kernel for
        (where its kernels are known) and whose outputs onnx's inference of the node types as
        decided (EyeLike without ``dtype`` takes its output type from its input)."""
        schema = schemas.schema_in_force(node.op_type, self.shared.opset, node.domain)
        if schema is None:
            return False
        decided = {}  # value name -> its element type once retyped
        for key, slots in groups.items():
            for kind, position in slots:
                name = node.input[position] if kind == "input" else node.output[position]
                decided[name] = self.narrow_type(name) if key in narrow_groups else self.types[name]
        bound = {}
        for formals, names in ((schema.inputs, node.input), (schema.outputs, node.output)):
            for position, name in enumerate(names):
                if name and formals:
                    formal = formals[min(position, len(formals) - 1)]
                    element_type = decided.get(name, self.types.get(name))
                    if element_type and any(c.type_param_str == formal.type_str for c in schema.type_constraints):
                        bound[formal.type_str] = element_type
        target = self.shared.target
        if target is not None and not target.takes_types(node.op_type, schema.since_version, bound):
            shown = ", ".join(f"{k}={type_label(t)}" for k, t in sorted(bound.items()))
            self.report.kept_wide.append(f"{_described(node)}: no kernel of the target runs {node.op_type} on {shown}")
            return False
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        self._type_attributes(copy, groups, narrow_groups, checked=False)
        input_types = {
            name: onnx.helper.make_tensor_type_proto(decided.get(name, self.types[name]), None)
            for name in copy.input
            if name and name in self.types
        }
        try:
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, copy, input_types, opset_imports=[onnx.helper.make_opsetid("", self.shared.opset)]
            )
        except Exception:  # (inference is best effort here: the checker runs on the whole result)
            return True
        for name in copy.output:
            found = inferred.get(name)
            if name in decided and found is not None and found.tensor_type.elem_type not in (0, decided[name]):
                self.report.kept_wide.append(f"{_described(node)}: onnx types its output '{name}' otherwise")
                return False
        return True

    def _holding_graphs(self, node: onnx.NodeProto, typed_node: onnx.NodeProto) -> None:
        """A node holding graphs (If, Loop, Scan): its values of a type to retype given and
        taken wide, each graph it holds retyped inside as a body. An If's outputs hold what its
        branches' do; a Loop's or Scan's are unbounded."""
        for position, name in enumerate(node.input):
            if name and self.narrow_type(name) is not None:
                node.input[position] = self.held(name, narrow=False)
        branches = []
        typed_graphs = [graph for _, _, graph in held_graphs(typed_node)]
        for index, (_, _, graph) in enumerate(held_graphs(node)):
            twin = typed_graphs[index] if index < len(typed_graphs) else None
            inner = _GraphRetyping(graph, self.shared, parent=self, body=True, typed=twin)
            made = [info.name for info in graph.output]
            inner.run()
            branches.append([inner.ranges.get(name) for name in made])
        for position, output in enumerate(node.output):
            narrow = self.narrow_type(output)
            if not output or narrow is None:
                continue
            if floats.is_integer(narrow):
                made = [branch[position] for branch in branches if position < len(branch)]
                bounded = node.op_type == "If" and len(made) == len(branches)
                self.ranges[output] = value_ranges.hull(made) if bounded else None
            self._written(node, position, narrow=False)
        self.nodes.append(node)

    def _constant_node(self, node: onnx.NodeProto) -> None:
        """A Constant of a type to retype: its value as one ``value`` tensor, made narrow."""
        name = node.output[0]
        if self.narrow_type(name) is not None and name in self.outputs and not self.retype_io:
            self.wide[name] = name  # (a graph output keeps its type)
        elif self.narrow_type(name) is not None:
            held = constant_tensor(node)
            if held is None:  # (a sparse value: kept as it is, wide)
                self.wide[name] = name
            else:
                tensor = onnx.TensorProto()
                tensor.CopyFrom(held)
                tensor.name = ""
                if self._constant(tensor, name, _described(node)):
                    del node.attribute[:]
                    node.attribute.append(onnx.helper.make_attribute("value", tensor))
        self.nodes.append(node)

    def _output_ranges(self, node: onnx.NodeProto) -> None:
        """The ranges of the node's integer outputs of a type to retype."""
        input_ranges = [self.range_of(name) for name in node.input]
        for position, output in enumerate(node.output):
            narrow = self.narrow_type(output)
            if output and narrow is not None and floats.is_integer(narrow):
                self.ranges[output] = value_ranges.output_range(node, position, input_ranges, self.shared.size_limit)

    def _groups(self, node: onnx.NodeProto) -> dict[str, list[tuple[str, int]]]:
        """The node's values of a type to retype, by the type constraint binding them (a value
        whose formal parameter names one type, or of an op onnx.defs does not know, alone)."""
        schema = schemas.schema_in_force(node.op_type, self.shared.opset, node.domain)
        groups: dict[str, list[tuple[str, int]]] = {}
        for kind, names, formals in (
            ("input", node.input, schema.inputs if schema else []),
            ("output", node.output, schema.outputs if schema else []),
        ):
            for position, name in enumerate(names):
                if not name or self.narrow_type(name) is None:
                    continue
                key = f"{kind}:{position}"
                if formals:
                    formal = formals[min(position, len(formals) - 1)]
                    if any(c.type_param_str == formal.type_str for c in schema.type_constraints):
                        key = formal.type_str
                groups.setdefault(key, []).append((kind, position))
        return groups

    def _allowed(self, node: onnx.NodeProto, key: str) -> frozenset[int]:
        """The tensor element types group ``key`` of the node's op takes at the opset."""
        schema = schemas.schema_in_force(node.op_type, self.shared.opset, node.domain)
        if schema is None:
            return frozenset()
        for constraint in schema.type_constraints:
            if constraint.type_param_str == key:
                return frozenset(filter(None, map(schemas.tensor_element_type, constraint.allowed_type_strs)))
        kind, position = key.split(":")
        formals = schema.inputs if kind == "input" else schema.outputs
        if not formals:
            return frozenset()
        formal = formals[min(int(position), len(formals) - 1)]
        return frozenset(filter(None, [schemas.tensor_element_type(formal.type_str)]))

    def _goes_narrow(self, node: onnx.NodeProto, key: str, slots: list[tuple[str, int]]) -> bool:
        """Whether group ``key`` of the node computes in the narrow type: its constraint takes
        it, and each of its inputs and outputs fits it."""
        names = [node.input[p] if kind == "input" else node.output[p] for kind, p in slots]
        narrow = self.narrow_type(names[0])
        if narrow not in self._allowed(node, key):
            self.report.wide_only[node.op_type] = self.report.wide_only.get(node.op_type, 0) + 1
            return False
        for (kind, _), name in zip(slots, names, strict=True):
            if not self.fits(name):
                why = f"{kind} '{name}' may not fit {type_label(narrow)} ({_shown(self.ranges.get(name))})"
                self.report.kept_wide.append(f"{_described(node)}: {why}")
                return False
        return True

    def _type_attributes(self, node, groups, narrow_groups, checked: bool = True) -> None:
        """Attributes naming a narrowed output's element type (Cast's ``to``, ``dtype``) and the
        tensor ConstantOfShape fills with, made narrow."""
        narrowed = [
            node.output[p] for k, slots in groups.items() if k in narrow_groups for kind, p in slots if kind == "output"
        ]
        if not narrowed:
            return
        wide, narrow = self.types[narrowed[0]], self.narrow_type(narrowed[0])
        for attribute in node.attribute:
            if _names_a_type_in(node, attribute, (wide,)):
                attribute.i = narrow
            elif attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type == wide:
                values = floats.array_of(attribute.t)
                fill = _rounded(values, narrow)
                if checked and not floats.is_integer(narrow) and _overflows(values, fill):
                    self.shared.refused.append(
                        f"{node.op_type} '{node.name}' fills with a value past {type_label(narrow)}'s largest"
                    )
                attribute.t.CopyFrom(floats.tensor(fill, attribute.t.name))

    def _written(self, node: onnx.NodeProto, position: int, narrow: bool) -> None:
        """Output ``position`` as the node now writes it: under its own name, or (a graph output
        whose type is kept, or made narrow with ``retype_io``) under a fresh one, cast at the end."""
        name = node.output[position]
        held = self.narrow if narrow else self.wide
        if name in self.outputs and narrow != self.retype_io:
            fresh = self.names.fresh(f"{name}_{'narrow' if narrow else 'wide'}")
            node.output[position] = fresh
            held[name] = fresh
            if narrow:
                self._count(name)
            return
        held[name] = name
        if narrow:
            self.retyped_names[name] = self.narrow_type(name)

    def _output(self, info: onnx.ValueInfoProto) -> None:
        """A graph output of a type to retype: kept (a Cast up from a narrow value), or made
        narrow with ``retype_io`` (a Cast down from a wide value that fits, else refused)."""
        name = info.name
        narrow = self.narrow_type(name)
        if narrow is None or (self.narrow if self.retype_io else self.wide).get(name) == name:
            return
        if self.retype_io:
            if name not in self.wide or not self.fits(name):
                self.shared.refused.append(
                    f"output '{name}' may not fit {type_label(narrow)} ({_shown(self.ranges.get(name))})"
                )
                return
            self.final_casts.append(onnx.helper.make_node("Cast", [self.wide[name]], [name], to=narrow))
            self.retyped_names[name] = narrow
        else:
            self.final_casts.append(onnx.helper.make_node("Cast", [self.narrow[name]], [name], to=self.types[name]))
        self.report.casts += 1


def _holds_every_value(wide: int, narrow: int) -> bool:
    """Whether float type ``narrow`` holds every value of float type ``wide`` (bfloat16 in float32)."""
    a, b = ml_dtypes.finfo(floats.numpy_dtype(wide)), ml_dtypes.finfo(floats.numpy_dtype(narrow))
    return b.nmant >= a.nmant and b.maxexp >= a.maxexp and b.minexp <= a.minexp


def _rounded(values: np.ndarray, element_type: int) -> np.ndarray:
    """``values`` rounded to a float ``element_type`` (an integer type: converted), past its
    largest value to infinity (which :func:`_overflows` finds)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(floats.numpy_dtype(element_type))


def _readers(graph) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    """Each value's readers (node, input position) in ``graph``, and in the graphs it holds
    where those do not define a value of that name themselves."""
    found: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            found.setdefault(name, []).append((node, position))
        for _, _, inner in held_graphs(node):
            defined = {i.name for i in inner.input} | {t.name for t in inner.initializer}
            defined.update(output for inner_node in inner.node for output in inner_node.output)
            for name, readers in _readers(inner).items():
                if name not in defined:
                    found.setdefault(name, []).extend(readers)
    return found


def _chunked_range(chunks) -> tuple[int, int]:
    """The smallest and largest integer among ``chunks`` (none: (0, 0))."""
    low = high = None
    for chunk in chunks:
        if chunk.size:
            low = int(chunk.min()) if low is None else min(low, int(chunk.min()))
            high = int(chunk.max()) if high is None else max(high, int(chunk.max()))
    return (0, 0) if low is None else (low, high)


def _hold_inline(tensor: onnx.TensorProto, element_type: int, data: bytes) -> None:
    """``tensor`` (its name and dims kept) holding ``data`` inline, of ``element_type``."""
    name, dims = tensor.name, list(tensor.dims)
    tensor.Clear()
    tensor.name, tensor.data_type, tensor.raw_data = name, element_type, data
    tensor.dims.extend(dims)


def _overflows(values: np.ndarray, narrowed: np.ndarray) -> bool:
    """Whether a finite value became infinite."""
    return bool((np.isinf(narrowed.astype(np.float64)) & np.isfinite(values.astype(np.float64))).any())


def _described(node: onnx.NodeProto) -> str:
    """A node as messages name it: its op and name, else the op and its first output."""
    if node.name:
        return f"{node.op_type} '{node.name}'"
    return f"{node.op_type} writing '{node.output[0]}'" if node.output else node.op_type


def _shown(found: value_ranges.Range) -> str:
    return "no bound known" if found is None else f"between {found[0]} and {found[1]}"
