"""The IR version a model needs, so that a runtime built with an older onnx loads it.

A runtime refuses a model whose declared IR version is newer than its onnx's (onnxruntime:
"Unsupported model IR version: 13, max supported IR version: 11"), whatever the model holds. A
model needs only the newest of: the IR version its opsets need (onnx's
``helper.find_min_ir_version_for``), the IR version that added each element type it uses, and
the one that added each IR feature it uses. The last two are read from onnx's own
``onnx.proto``, whose comments say what each IR version added ("IR VERSION 10 published on March
25, 2024 / Added UINT4, INT4, overload field for functions and metadata_props on multiple proto
definitions"): an element type by its name there, a feature by the words naming it
(:data:`FEATURES`). Where the file or the words are not found, the IR version taken is
``onnx.IR_VERSION``: nothing is declared older than is proved.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import onnx
from onnx import defs

from .graphs import nested_graphs

_BLOCK_END = re.compile(r"^\s*IR_VERSION\w*\s*=\s*(0x[0-9A-Fa-f]+|\d+)\s*;")


@functools.cache
def added_by_ir_version() -> tuple[tuple[int, str], ...]:
    """(IR version, what onnx.proto's comments above it say it added), oldest first; empty where
    the installed onnx ships no ``onnx.proto``."""
    path = Path(onnx.__file__).parent / "onnx.proto"
    if not path.is_file():
        return ()
    text = path.read_text(encoding="utf-8")
    start = text.find("enum Version")
    if start < 0:
        return ()
    blocks: list[tuple[int, str]] = []
    words: list[str] = []
    for line in text[start:].splitlines()[1:]:
        if line.strip().startswith("}"):
            break
        if found := _BLOCK_END.match(line):
            blocks.append((int(found.group(1), 0), " ".join(words)))
            words = []
        elif line.strip().startswith("//"):
            words.append(line.strip().removeprefix("//").strip())
    return tuple(blocks)


def ir_version_of_words(pattern: str) -> int:
    """The first IR version whose comment matches ``pattern`` (a regular expression), else
    ``onnx.IR_VERSION``."""
    return next((version for version, said in added_by_ir_version() if re.search(pattern, said)), onnx.IR_VERSION)


@functools.cache
def ir_version_of_type(element_type: int) -> int:
    """The IR version that added ``element_type`` (BFLOAT16: 4, FLOAT8E4M3FN: 9, INT4: 10): the
    first whose comment names it; 1 for a type none names (the first types)."""
    name = onnx.TensorProto.DataType.Name(element_type)
    named = [version for version, said in added_by_ir_version() if re.search(rf"\b{name}\b", said)]
    if named:
        return named[0]
    return 1 if added_by_ir_version() else onnx.IR_VERSION


def _graphs(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph, the graphs its nodes hold, and those of the local functions' nodes."""
    yield model.graph
    yield from nested_graphs(model.graph.node)
    for function in model.functions:
        yield from nested_graphs(function.node)


def _nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    for graph in _graphs(model):
        yield from graph.node
    for function in model.functions:
        yield from function.node


def _type_protos(model: onnx.ModelProto) -> Iterator[onnx.TypeProto]:
    """Every type the model states (values, and the types inside sequence, map, optional types)."""

    def within(type_proto: onnx.TypeProto) -> Iterator[onnx.TypeProto]:
        yield type_proto
        kind = type_proto.WhichOneof("value")
        if kind == "sequence_type":
            yield from within(type_proto.sequence_type.elem_type)
        elif kind == "optional_type":
            yield from within(type_proto.optional_type.elem_type)
        elif kind == "map_type":
            yield from within(type_proto.map_type.value_type)

    infos = [info for graph in _graphs(model) for info in [*graph.input, *graph.output, *graph.value_info]]
    infos += [info for function in model.functions for info in function.value_info]
    for info in infos:
        if info.HasField("type"):
            yield from within(info.type)


def _tensors(model: onnx.ModelProto) -> Iterator[onnx.TensorProto]:
    """Every tensor the model holds: initializers, sparse ones, attributes' (functions' too)."""
    for graph in _graphs(model):
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield from (sparse.values, sparse.indices)
    for node in _nodes(model):
        for attribute in node.attribute:
            yield from ([attribute.t] if attribute.HasField("t") else [])
            yield from attribute.tensors
            if attribute.HasField("sparse_tensor"):
                yield from (attribute.sparse_tensor.values, attribute.sparse_tensor.indices)


@functools.cache
def type_attribute_names() -> frozenset[str]:
    """The names of int attributes that give an element type (Cast's ``to``, EyeLike's ``dtype``,
    QuantizeLinear's ``output_dtype``...): those onnx.defs describes as a TensorProto data type."""
    names = set()
    for schema in defs.get_all_schemas_with_history():
        for attribute in schema.attributes.values():
            described = attribute.description.lower()
            if attribute.type == defs.OpSchema.AttrType.INT and (
                "tensorproto" in described or "data type" in described
            ):
                names.add(attribute.name)
    return frozenset(names)


def element_types_used(model: onnx.ModelProto) -> set[int]:
    """Every element type the model's types, tensors and type attributes name."""
    used = {
        type_proto.tensor_type.elem_type for type_proto in _type_protos(model) if type_proto.HasField("tensor_type")
    }
    used |= {t.sparse_tensor_type.elem_type for t in _type_protos(model) if t.HasField("sparse_tensor_type")}
    used |= {tensor.data_type for tensor in _tensors(model)}
    names = type_attribute_names()
    for node in _nodes(model):
        used |= {a.i for a in node.attribute if a.name in names and a.type == onnx.AttributeProto.INT}
    return {element_type for element_type in used if element_type in onnx.TensorProto.DataType.values()} - {0}


def _type_kinds(model: onnx.ModelProto) -> set[str]:
    return {type_proto.WhichOneof("value") for type_proto in _type_protos(model)}


def _holds_metadata(model: onnx.ModelProto) -> bool:
    """metadata_props on anything but the model itself (graphs, nodes, functions, values, tensors)."""
    graphs = list(_graphs(model))
    values = [info for graph in graphs for info in [*graph.input, *graph.output, *graph.value_info]]
    owners = [*graphs, *_nodes(model), *model.functions, *values, *_tensors(model)]
    return any(len(owner.metadata_props) for owner in owners)


UNLISTED_INITIALIZERS = r"initializers should be a subset of graph inputs"  # (onnx.proto's words, IR 4)


def unlisted_initializers_ir() -> int:
    """The first IR version whose initializers need not be graph inputs too (onnx.proto: 4)."""
    return ir_version_of_words(UNLISTED_INITIALIZERS)


# (words of onnx.proto's comment naming a feature, what it is, whether a model uses it)
FEATURES: tuple[tuple[str, str, Callable[[onnx.ModelProto], bool]], ...] = (
    (UNLISTED_INITIALIZERS, "an initializer that is not a graph input",
     lambda model: bool({t.name for t in model.graph.initializer} - {i.name for i in model.graph.input})),
    (r"quantization annotation", "a quantization annotation",
     lambda model: any(len(graph.quantization_annotation) for graph in _graphs(model))),
    (r"sparse initializers", "a sparse initializer",
     lambda model: any(len(graph.sparse_initializer) for graph in _graphs(model))),
    (r"TrainingInfoProto", "training information", lambda model: len(model.training_info) > 0),
    (r"TypeProto\.SparseTensor", "a sparse tensor type", lambda model: "sparse_tensor_type" in _type_kinds(model)),
    (r"TypeProto\.Optional", "an optional type", lambda model: "optional_type" in _type_kinds(model)),
    (r"FunctionProtos local to the model", "local functions", lambda model: len(model.functions) > 0),
    (r"AttributeProto to FunctionProto", "a local function's attribute defaults",
     lambda model: any(len(function.attribute_proto) for function in model.functions)),
    (r"overload field", "an overload",
     lambda model: any(node.overload for node in _nodes(model)) or any(f.overload for f in model.functions)),
    (r"metadata_props on multiple", "metadata_props on a graph, node, function, value or tensor", _holds_metadata),
    (r"multi-device", "device configurations",
     lambda model: len(model.configuration) > 0 or any(len(node.device_configurations) for node in _nodes(model))),
    (r"TypeProto\.Opaque", "an opaque type", lambda model: "opaque_type" in _type_kinds(model)),
)  # fmt: skip


def ir_version_for_opset(opset: int) -> int:
    """The oldest IR version that can declare default-domain ``opset``: its release's in onnx's
    version table, or, for an opset no release declared (onnx.defs holds Pad-2 and Concat-4,
    while releases went from opset 1 to 5), the next release's."""
    released = {entry[2]: entry[1] for entry in onnx.helper.VERSION_TABLE}
    following = [version for version in released if version >= opset]
    return min(released[version] for version in following) if following else onnx.IR_VERSION


def ir_version_needed(model: onnx.ModelProto, opset: int | None = None) -> tuple[int, str]:
    """The oldest IR version that can state ``model`` (taken to default-domain ``opset`` where
    given), and what needs it ("opset 23 of ai.onnx", "the element type FLOAT8E4M3FN", "local
    functions")."""
    imports = [*model.opset_import, *(entry for function in model.functions for entry in function.opset_import)]
    if opset is not None:
        imports = [
            onnx.helper.make_opsetid("", opset) if entry.domain in ("", "ai.onnx") else entry for entry in imports
        ]
    newest = {}
    for entry in imports:
        try:
            default_domain = entry.domain in ("", "ai.onnx")
            needed = (ir_version_for_opset(entry.version) if default_domain
                      else onnx.helper.find_min_ir_version_for([entry], ignore_unknown=True))  # fmt: skip
        except ValueError:
            needed = onnx.IR_VERSION
        newest.setdefault(needed, f"opset {entry.version} of {entry.domain or 'ai.onnx'}")
    for element_type in element_types_used(model):
        name = onnx.TensorProto.DataType.Name(element_type)
        newest.setdefault(ir_version_of_type(element_type), f"the element type {name}")
    for words, what, used in FEATURES:
        if used(model):
            newest.setdefault(ir_version_of_words(words), what)
    version = max(newest, default=3)
    return version, newest.get(version, "the opset import")


def declare_ir_version_at_most(model: onnx.ModelProto, newest: int) -> bool:
    """Declare ``model`` at IR version ``newest`` where it declares a newer one and needs none
    newer (:func:`ir_version_needed`); whether it does so now."""
    if model.ir_version > newest and ir_version_needed(model)[0] <= newest:
        model.ir_version = newest
    return model.ir_version <= newest
