"""Opset-version conversion: what exists at a target opset, and moving one node there.

Ops this project owns are adapted by the engine (kept, fed through an exact Cast, or lowered);
every other default-domain node whose version differs at the target is converted on its own
by ``onnx.version_converter``, and control-flow nodes are re-versioned where their signature
is the same at both versions and the target takes their types.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, version_converter

from . import floats, schemas
from .errors import LoweringError
from .naming import NameAllocator
from .samples import every_bit_pattern

# Ops whose versions differ only in the types and attributes they admit, with the same
# meaning for every node the older version can hold (the ONNX changelog says so; onnx.defs
# has no field for it, and their docs changed wording). A node of one of these is
# re-versioned where the target schema has every attribute it sets and takes its input
# types; onnx's converter lacks adapters for them (Constant below 13, If from 16, Loop).
SAME_MEANING_ACROSS_VERSIONS = frozenset({"Constant", "Identity", "If", "Loop", "Scan"})


_TYPES_ONLY_NOTE = re.compile(r"^\(Opset \d+ change\): Extend supported types\b.*$")


def _doc_without_type_notes(doc: str) -> tuple[str, ...]:
    """The doc's lines, blank lines and "(Opset N change): Extend supported types ..." notes left out."""
    return tuple(line.strip() for line in doc.splitlines() if line.strip() and not _TYPES_ONLY_NOTE.match(line.strip()))


def _meaning(schema: onnx.defs.OpSchema) -> tuple:
    """Everything a schema says except its type lists: doc (less its notes that only types were
    added), formal parameters with their descriptions, attributes with types, defaults and
    descriptions, function, deprecation."""

    def formals(parameters) -> tuple:
        return tuple((p.name, p.option, p.description, p.type_str) for p in parameters)

    attributes = tuple(
        sorted(
            (name, a.type, a.required, a.description, a.default_value.SerializeToString())
            for name, a in schema.attributes.items()
        )
    )
    return (_doc_without_type_notes(schema.doc), formals(schema.inputs), formals(schema.outputs), attributes,
            schema.has_function, schema.deprecated)  # fmt: skip


@functools.cache
def only_types_changed(op_type: str, version_a: int, version_b: int) -> bool:
    """Whether every version of ``op_type`` from ``version_a`` to ``version_b`` states the
    same thing but its type lists: then a node valid at both means the same at both."""
    low, high = sorted((version_a, version_b))
    versions = [v for v in schemas.op_versions(op_type) if low <= v <= high]
    if not versions or versions[0] != low or versions[-1] != high:
        return False
    meanings = {_meaning(schemas.schema_in_force(op_type, v)) for v in versions}
    return len(meanings) == 1


@functools.cache
def lowest_opset_for_type(element_type: int) -> int | None:
    """The first opset whose Cast takes ``element_type`` (bfloat16: 13, float8: 19), or None."""
    for opset in range(1, schemas.newest_opset() + 1):
        if schemas.accepts("Cast", opset, element_type):
            return opset
    return None


def element_types_in(type_proto: onnx.TypeProto) -> Iterable[int]:
    """Every tensor element type inside a (possibly nested) type."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        yield type_proto.tensor_type.elem_type
    elif kind == "sparse_tensor_type":
        yield type_proto.sparse_tensor_type.elem_type
    elif kind == "sequence_type":
        yield from element_types_in(type_proto.sequence_type.elem_type)
    elif kind == "optional_type":
        yield from element_types_in(type_proto.optional_type.elem_type)
    elif kind == "map_type":
        yield type_proto.map_type.key_type
        yield from element_types_in(type_proto.map_type.value_type)


def check_types_exist_at(model: onnx.ModelProto, opset: int) -> None:
    """Raise if a value of the model has a type the target opset cannot express."""

    def check(name: str, element_type: int, where: str) -> None:
        lowest = lowest_opset_for_type(element_type)
        if element_type and lowest is not None and lowest > opset:
            raise LoweringError(
                f"{where}: value '{name}' has type {schemas.type_name(element_type)}, which opset {opset} "
                f"does not have; the lowest opset that can hold it is {lowest}"
            )

    def visit(graph: onnx.GraphProto, where: str) -> None:
        for info in [*graph.input, *graph.output, *graph.value_info]:
            for element_type in element_types_in(info.type):
                check(info.name, element_type, where)
        for tensor in graph.initializer:
            check(tensor.name, tensor.data_type, where)
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.TENSOR:
                    check(node.output[0] if node.output else node.name, attribute.t.data_type, where)
                elif attribute.type == onnx.AttributeProto.GRAPH:
                    visit(attribute.g, f"{where} > {node.op_type} {attribute.name}")
                elif attribute.type == onnx.AttributeProto.GRAPHS:
                    for subgraph in attribute.graphs:
                        visit(subgraph, f"{where} > {node.op_type} {attribute.name}")

    visit(model.graph, f"graph '{model.graph.name}'")


@functools.cache
def exact_carrier(element_type: int, accepted: frozenset[int]) -> int | None:
    """The narrowest float type in ``accepted`` that holds every value of ``element_type``
    exactly (NaN as NaN, ±inf as ±inf): found by converting every value, not from a table."""
    if not floats.is_float(element_type):
        return None
    source = floats.numpy_dtype(element_type)
    if source.itemsize <= 2:
        values = every_bit_pattern(element_type)
    else:
        values = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=source)
        info = np.finfo(source)
        values = np.concatenate([values, np.array([info.max, -info.max, info.tiny, info.smallest_subnormal], source)])
    candidates = sorted((t for t in accepted if floats.is_float(t)), key=lambda t: (floats.numpy_dtype(t).itemsize, t))
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64)
        for candidate in candidates:
            if floats.numpy_dtype(candidate).itemsize < source.itemsize:
                continue
            carried = values.astype(floats.numpy_dtype(candidate)).astype(np.float64)
            same = (carried == wide) | (np.isnan(carried) & np.isnan(wide))
            same &= np.signbit(carried) == np.signbit(wide)
            if same.all():
                return candidate
    return None


def same_meaning(op_type: str, version_a: int | None, version_b: int | None) -> bool:
    """Whether a node valid at both versions of ``op_type`` means the same at both."""
    if version_a is None or version_b is None:
        return False
    return op_type in SAME_MEANING_ACROSS_VERSIONS or only_types_changed(op_type, version_a, version_b)


def redeclare_default_opset(model: onnx.ModelProto, opset: int) -> None:
    """Make ``model`` and its local functions import default-domain ``opset``, in place."""
    for imports in [model.opset_import, *(f.opset_import for f in model.functions)]:
        for entry in imports:
            if schemas.canonical_domain(entry.domain) == "":
                entry.version = opset


def fits_target_schema(node: onnx.NodeProto, target_opset: int, input_types: list[onnx.TypeProto | None]) -> bool:
    """Whether ``node`` is valid as it is under the op's schema at ``target_opset``: same
    inputs and outputs, only attributes that schema has, input types it takes."""
    schema = schemas.schema_in_force(node.op_type, target_opset)
    if schema is None:
        return False
    if any(attribute.name not in schema.attributes for attribute in node.attribute):
        return False
    variadic = schema.inputs and schema.inputs[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
    if len(node.input) > len(schema.inputs) and not variadic:
        return False
    for index, type_proto in enumerate(input_types):
        if type_proto is None:
            continue
        accepted = schemas.input_type_strings(node.op_type, target_opset, min(index, len(schema.inputs) - 1))
        if accepted and schemas.type_string(type_proto) not in accepted:
            return False
    return True


def convert_node(
    node: onnx.NodeProto,
    *,
    types: dict[str, onnx.TypeProto],
    constants: dict[str, onnx.TensorProto],
    source_opset: int,
    target_opset: int,
    ir_version: int,
    names: NameAllocator,
    location: str,
) -> list[onnx.NodeProto]:
    """``node`` moved from ``source_opset`` to ``target_opset`` by onnx.version_converter,
    alone in a model of its own; new values get fresh names."""
    inputs, initializers = [], []
    for name in dict.fromkeys(n for n in node.input if n):
        if name in constants:
            initializers.append(constants[name])
        if name not in types:
            raise LoweringError(
                f"{location}: the type of input '{name}' is unknown, so {node.op_type} cannot be converted"
            )
        info = onnx.ValueInfoProto(name=name)
        info.type.CopyFrom(types[name])
        inputs.append(info)
    outputs = [onnx.ValueInfoProto(name=name) for name in node.output if name]
    graph = helper.make_graph([node], "convert", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", source_opset)], ir_version=ir_version)
    try:
        converted = version_converter.convert_version(model, target_opset)
    except Exception as error:  # the converter reports missing adapters as RuntimeError
        message = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        source_version = schemas.version_in_force(node.op_type, source_opset)
        raise LoweringError(
            f"{location}: onnx's version converter cannot take {node.op_type}-{source_version} from opset "
            f"{source_opset} to {target_opset} ({message.split(': ', 1)[-1]})"
        ) from None
    kept = {*node.input, *node.output}
    renamed: dict[str, str] = {}
    result = []
    for new_node in converted.graph.node:
        for k, name in enumerate(new_node.output):
            if name and name not in kept:
                renamed[name] = names.fresh(name.lstrip("_") or "converted")
                new_node.output[k] = renamed[name]
        for k, name in enumerate(new_node.input):
            new_node.input[k] = renamed.get(name, name)
        if new_node.name and new_node.name != node.name:
            new_node.name = names.fresh(new_node.name)
        result.append(new_node)
    for tensor in converted.graph.initializer:
        if tensor.name not in constants:  # a constant the converter made: keep it as a node
            name = renamed.get(tensor.name, tensor.name)
            result.insert(
                0, helper.make_node("Constant", [], [name], name=names.fresh(f"{name}_constant"), value=tensor)
            )
    return result
