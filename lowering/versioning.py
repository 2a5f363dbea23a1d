"""Opset-version conversion: what exists at a target opset, and moving one node there.

Ops this project owns are adapted by the engine (kept, fed through an exact Cast, or lowered).
Every other default-domain node whose version differs at the target is re-versioned where it
means the same there (:func:`meaning_change`: judged from onnx.defs, then the known changes of
:mod:`lowering.adapters`), moved by the adapter registered there for a step it crosses, or else
converted on its own by ``onnx.version_converter``, its inputs typed with the shapes onnx
inference gives them in the whole model.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, version_converter

from . import adapters, floats, schemas
from .errors import LoweringError
from .graphs import held_graphs
from .naming import NameAllocator
from .samples import every_bit_pattern

Single = onnx.defs.OpSchema.FormalParameterOption.Single
Variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic


def _formal_at(formals, index: int):
    """The formal parameter that argument ``index`` binds to (the last one when variadic)."""
    if index < len(formals):
        return formals[index]
    if formals and formals[-1].option == Variadic:
        return formals[-1]
    return None


def _signature(schema: onnx.defs.OpSchema) -> tuple:
    """What of a schema can change a node's meaning that onnx.defs states: inputs and outputs
    (name, option, homogeneity), attributes (name, type, required, default), deprecation. Type
    lists, function bodies and doc text are left out."""

    def formals(parameters) -> tuple:
        return tuple((p.name, p.option, p.is_homogeneous) for p in parameters)

    attributes = tuple(
        sorted((name, a.type, a.required, a.default_value.SerializeToString()) for name, a in schema.attributes.items())
    )
    return formals(schema.inputs), formals(schema.outputs), attributes, schema.deprecated


def _argument_changes(kind: str, used: list[bool], source_formals, target_formals) -> str | None:
    """Why the node's inputs (or outputs) do not bind the same at the target, or None."""
    for index, present in enumerate(used):
        target = _formal_at(target_formals, index)
        if target is None:
            return f"{kind} {index} does not exist there" if present else None
        source = _formal_at(source_formals, index)
        if not present:
            if target.option == Single:
                return f"{kind} {index} ({target.name}) is required there"
            continue
        if source is not None and (source.name, source.is_homogeneous) != (target.name, target.is_homogeneous):
            return f"{kind} {index} is {source.name} here and {target.name} there"
    for index in range(len(used), len(target_formals)):
        if target_formals[index].option == Single:
            return f"{kind} {index} ({target_formals[index].name}) is required there"
    return None


def meaning_change(
    node: onnx.NodeProto,
    source_version: int,
    target_version: int,
    input_types: list[onnx.TypeProto | None],
) -> str | None:
    """Why ``node`` (of ``op_type``'s ``source_version``) may not mean the same as it is under
    ``target_version``, or None where it does. From onnx.defs: the target schema has every
    attribute the node sets, with its type; the attributes it leaves unset default alike in
    both; its inputs and outputs bind to formals of the same names there, every required one
    given; the target takes its input types. Before those, no known change between the versions
    (:mod:`lowering.adapters`) may affect it. Function bodies and doc text do not count."""
    source = schemas.schema_in_force(node.op_type, source_version)
    target = schemas.schema_in_force(node.op_type, target_version)
    if source is None or target is None:
        return f"{node.op_type} has no version {source_version if source is None else target_version}"
    change = adapters.change_for(node, source_version, target_version)
    if change is not None:
        return change.reason
    if target.deprecated:
        return f"{node.op_type}-{target_version} is deprecated"
    set_here = {attribute.name: attribute for attribute in node.attribute}
    for name, attribute in set_here.items():
        declared = target.attributes.get(name)
        if declared is None:
            return f"{node.op_type}-{target_version} has no attribute {name}"
        if int(declared.type.value) != attribute.type:
            return f"attribute {name} has another type in {node.op_type}-{target_version}"
    for name, declared in target.attributes.items():
        if name in set_here:
            continue
        if declared.required:
            return f"attribute {name} is required by {node.op_type}-{target_version}"
        before = source.attributes.get(name)
        default = declared.default_value.SerializeToString()
        if before is not None and before.default_value.SerializeToString() != default:
            return f"attribute {name} defaults differently in {node.op_type}-{target_version}"
    used_inputs = [bool(name) for name in node.input]
    used_outputs = [bool(name) for name in node.output]
    why = _argument_changes("input", used_inputs, source.inputs, target.inputs) or _argument_changes(
        "output", used_outputs, source.outputs, target.outputs
    )
    if why:
        return why
    for index, name in enumerate(node.input):
        if not name:
            continue
        accepted = schemas.input_type_strings(node.op_type, target_version, min(index, len(target.inputs) - 1))
        before = schemas.input_type_strings(node.op_type, source_version, min(index, len(source.inputs) - 1))
        type_proto = input_types[index] if index < len(input_types) else None
        if type_proto is None:
            if accepted != before:
                return f"the type of input '{name}' is unknown and the types taken changed"
            continue
        if accepted and schemas.type_string(type_proto) not in accepted:
            return f"{node.op_type}-{target_version} does not take {schemas.type_string(type_proto)}"
    return None


@functools.cache
def types_taken_change(op_type: str, source_version: int, target_version: int) -> bool:
    """Whether some input of ``op_type`` takes other types at ``target_version`` than at
    ``source_version`` (then a node's meaning there depends on its input types)."""
    source = schemas.schema_in_force(op_type, source_version)
    target = schemas.schema_in_force(op_type, target_version)
    if source is None or target is None:
        return True
    for index in range(max(len(source.inputs), len(target.inputs))):
        before = schemas.input_type_strings(op_type, source_version, min(index, len(source.inputs) - 1))
        after = schemas.input_type_strings(op_type, target_version, min(index, len(target.inputs) - 1))
        if before != after:
            return True
    return False


@functools.cache
def same_meaning(op_type: str, version_a: int | None, version_b: int | None) -> bool:
    """Whether every node valid at both versions of ``op_type`` means the same at both, whatever
    its attributes: every version between has the same signature (:func:`_signature`) and no
    known change (:mod:`lowering.adapters`) lies between."""
    if version_a is None or version_b is None:
        return False
    low, high = sorted((version_a, version_b))
    versions = [v for v in schemas.op_versions(op_type) if low <= v <= high]
    if not versions or versions[0] != low or versions[-1] != high:
        return False
    known = adapters.known_changes()
    if any((op_type, v) in known for v in versions[1:]):
        return False
    return len({_signature(schemas.schema_in_force(op_type, v)) for v in versions}) == 1


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
            for attribute, _, subgraph in held_graphs(node):
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


def redeclare_default_opset(model: onnx.ModelProto, opset: int) -> None:
    """Make ``model`` and its local functions import default-domain ``opset``, in place."""
    for imports in [model.opset_import, *(f.opset_import for f in model.functions)]:
        for entry in imports:
            if schemas.canonical_domain(entry.domain) == "":
                entry.version = opset


def absent_at(op_type: str, source_opset: int, target_opset: int) -> str | None:
    """Why a default-domain ``op_type`` of ``source_opset`` has no version at ``target_opset``
    (it first exists later), or None where it has one."""
    source_version = schemas.version_in_force(op_type, source_opset)
    if source_version is None or schemas.version_in_force(op_type, target_opset) is not None:
        return None
    first = schemas.op_versions(op_type)[0]
    return (
        f"{op_type} does not exist at opset {target_opset} (its first version is {op_type}-{first}), so onnx's "
        f"version converter cannot take {op_type}-{source_version} from opset {source_opset} to {target_opset}"
    )


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
    alone in a model of its own; new values get fresh names. An op that does not exist at the
    target is refused saying so (the converter would fail on a missing adapter)."""
    absent = absent_at(node.op_type, source_opset, target_opset)
    if absent:
        raise LoweringError(f"{location}: {absent}")
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
    made_constants = [tensor for tensor in converted.graph.initializer if tensor.name not in constants]
    for tensor in made_constants:  # the converter's own names (Pad-2 → 11: '_v_4') repeat per node
        renamed[tensor.name] = names.fresh(tensor.name.lstrip("_") or "converted")
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
    for tensor in made_constants:  # a constant the converter made: kept as a node
        name = renamed[tensor.name]
        tensor.name = name
        result.insert(0, helper.make_node("Constant", [], [name], name=names.fresh(f"{name}_constant"), value=tensor))
    return result
