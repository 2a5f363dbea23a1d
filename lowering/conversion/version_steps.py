"""Opset-version conversion: what exists at a target opset, and moving one node there.

Ops this project owns are adapted by the engine (kept, fed through an exact Cast, or lowered).
Every other default-domain node whose version differs at the target is re-versioned where it
means the same there (:func:`meaning_change`: judged from onnx.defs, then the known changes of
:mod:`lowering.conversion.adapters`), moved by the adapter registered there for a step it crosses, or else
converted on its own by ``onnx.version_converter``, its inputs typed with the shapes onnx
inference gives them in the whole model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, version_converter

from .. import floats, function_bodies, schemas
from ..errors import LoweringError
from ..graphs import held_graphs
from ..naming import NameAllocator
from ..samples import every_bit_pattern
from . import adapters

Single = onnx.defs.OpSchema.FormalParameterOption.Single
Variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic


def _formal_at(formals, index: int):
    """The formal parameter that argument ``index`` binds to (the last one when variadic)."""
    if index < len(formals):
        return formals[index]
    if formals and formals[-1].option == Variadic:
        return formals[-1]
    return None


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


def signature_change(node: onnx.NodeProto, source: onnx.defs.OpSchema, target: onnx.defs.OpSchema) -> str | None:
    """Why ``node`` (of schema ``source``) does not bind alike to schema ``target``, or None:
    the target is deprecated, lacks an attribute the node sets or gives it another type,
    requires one it leaves unset or defaults one it leaves unset otherwise, or binds its given
    inputs and outputs to other formals. Reads the attributes' names and types, not their
    values, and which inputs and outputs are given."""
    op_type, target_version = node.op_type, target.since_version
    if target.deprecated:
        return f"{op_type}-{target_version} is deprecated"
    set_here = {attribute.name: attribute for attribute in node.attribute}
    for name, attribute in set_here.items():
        declared = target.attributes.get(name)
        if declared is None:
            return f"{op_type}-{target_version} has no attribute {name}"
        if int(declared.type.value) != attribute.type:
            return f"attribute {name} has another type in {op_type}-{target_version}"
    for name, declared in target.attributes.items():
        if name in set_here:
            continue
        if declared.required:
            return f"attribute {name} is required by {op_type}-{target_version}"
        before = source.attributes.get(name)
        default = declared.default_value.SerializeToString()
        if before is not None and before.default_value.SerializeToString() != default:
            return f"attribute {name} defaults differently in {op_type}-{target_version}"
    used_inputs = [bool(name) for name in node.input]
    used_outputs = [bool(name) for name in node.output]
    return _argument_changes("input", used_inputs, source.inputs, target.inputs) or _argument_changes(
        "output", used_outputs, source.outputs, target.outputs
    )


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
    (:mod:`lowering.conversion.adapters`) may affect it. Function bodies and doc text do not count."""
    source = schemas.schema_in_force(node.op_type, source_version)
    target = schemas.schema_in_force(node.op_type, target_version)
    if source is None or target is None:
        return f"{node.op_type} has no version {source_version if source is None else target_version}"
    change = adapters.change_for(node, source_version, target_version)
    if change is not None:
        return change.reason
    why = signature_change(node, source, target)
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
    return _formals_differ(op_type, source_version, target_version, "inputs", len(source.inputs), len(target.inputs))


def _formals_differ(op_type: str, source_version: int, target_version: int, kind: str, before: int, after: int) -> bool:
    """Whether a formal parameter of ``kind`` ("inputs" or "outputs") takes other type strings
    at one version than at the other; ``before``, ``after``: how many the versions have (the
    last one stands for any further, as a variadic does)."""
    for index in range(max(before, after)):
        taken_before = schemas.formal_type_strings(op_type, source_version, kind, min(index, before - 1))
        taken_after = schemas.formal_type_strings(op_type, target_version, kind, min(index, after - 1))
        if taken_before != taken_after:
            return True
    return False


def untaken_type(
    node: onnx.NodeProto,
    source_version: int,
    target_version: int,
    input_types: list[onnx.TypeProto | None],
    output_types: list[onnx.TypeProto | None] = (),
) -> tuple[str, str, str, frozenset[str]] | None:
    """The first input or output of ``node`` (of ``op_type``'s ``source_version``) whose type the
    op's ``target_version`` does not take, as (``"input"`` or ``"output"``, its name, its type
    string, the type strings taken there); None where every known type is taken. An argument
    that binds to a formal of another name there (an input that became an attribute) is left to the
    step that moves it; values of unknown type are not judged."""
    source = schemas.schema_in_force(node.op_type, source_version)
    target = schemas.schema_in_force(node.op_type, target_version)
    if source is None or target is None:
        return None
    for kind, names, types, source_formals, target_formals in (
        ("input", node.input, input_types, source.inputs, target.inputs),
        ("output", node.output, output_types, source.outputs, target.outputs),
    ):
        for index, name in enumerate(names):
            type_proto = types[index] if index < len(types) else None
            if not name or type_proto is None or type_proto.WhichOneof("value") is None:
                continue
            before, after = _formal_at(source_formals, index), _formal_at(target_formals, index)
            if before is None or after is None or before.name != after.name:
                continue
            position = min(index, len(target_formals) - 1)
            taken = schemas.formal_type_strings(node.op_type, target_version, f"{kind}s", position)
            if taken and schemas.type_string(type_proto) not in taken:
                return kind, name, schemas.type_string(type_proto), taken
    return None


def untaken_type_refusal(
    node: onnx.NodeProto, source_version: int, target_opset: int, untaken: tuple[str, str, str, frozenset[str]]
) -> str:
    """The refusal for a node whose ``untaken`` type (:func:`untaken_type`) its op lacks at the
    target opset: names the op and version, the target, the value, its type and the types taken."""
    kind, name, type_text, taken = untaken
    target_version = schemas.version_in_force(node.op_type, target_opset)
    return (
        f"{node.op_type}-{source_version} cannot go to opset {target_opset}: its {kind} '{name}' is {type_text}, "
        f"which {node.op_type}-{target_version} does not take (it takes {schemas.describe_types(taken)})"
    )


@functools.cache
def output_types_taken_change(op_type: str, source_version: int, target_version: int) -> bool:
    """Whether some output of ``op_type`` takes other types at ``target_version`` than at
    ``source_version`` (If and Loop outputs took sequences and optionals from 13 and 16)."""
    source = schemas.schema_in_force(op_type, source_version)
    target = schemas.schema_in_force(op_type, target_version)
    if source is None or target is None or not source.outputs or not target.outputs:
        return False
    return _formals_differ(op_type, source_version, target_version, "outputs", len(source.outputs), len(target.outputs))


def untaken_output_refusal(node: onnx.NodeProto, source_version: int, target_opset: int, type_of) -> str | None:
    """Why ``node``, kept as it is, cannot be written at ``target_opset``: an output of a type
    its op's version there does not give (an If yielding a sequence below 13); None where
    every output's known type is taken there, or the step changed no output's types."""
    target_version = schemas.version_in_force(node.op_type, target_opset)
    if target_version is None or not output_types_taken_change(node.op_type, source_version, target_version):
        return None
    output_types = [type_of(name) if name else None for name in node.output]
    untaken = untaken_type(node, source_version, target_version, [], output_types)
    return None if untaken is None else untaken_type_refusal(node, source_version, target_opset, untaken)


@functools.cache
def same_meaning(op_type: str, version_a: int | None, version_b: int | None) -> bool:
    """Whether every node valid at both versions of ``op_type`` means the same at both, whatever
    its attributes: every version between has the same signature (:func:`lowering.schemas.signature`)
    and no known change (:mod:`lowering.conversion.adapters`) lies between."""
    if version_a is None or version_b is None:
        return False
    low, high = sorted((version_a, version_b))
    versions = [v for v in schemas.op_versions(op_type) if low <= v <= high]
    if not versions or versions[0] != low or versions[-1] != high:
        return False
    known = adapters.known_changes()
    if any((op_type, v) in known for v in versions[1:]):
        return False
    return len({schemas.signature(schemas.schema_in_force(op_type, v)) for v in versions}) == 1


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
    fine: set[int] = set()  # element types found to exist at the opset

    def check(name: str, element_type: int, where: str) -> None:
        if element_type in fine:
            return
        lowest = lowest_opset_for_type(element_type)
        if not element_type or lowest is None or lowest <= opset:
            fine.add(element_type)
        else:
            raise LoweringError(
                f"{where}: value '{name}' has type {schemas.type_name(element_type)}, which opset {opset} "
                f"does not have; the lowest opset that can hold it is {lowest}"
            )

    tensor_attribute, graph_attributes = (
        onnx.AttributeProto.TENSOR,
        (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS),
    )

    def visit(graph: onnx.GraphProto, where: str) -> None:
        for group in (graph.input, graph.output, graph.value_info):
            for info in group:
                type_proto = info.type
                if type_proto.WhichOneof("value") == "tensor_type":  # most values: no walk
                    element_type = type_proto.tensor_type.elem_type
                    if element_type not in fine:  # (most values: no call, no name read)
                        check(info.name, element_type, where)
                else:
                    for element_type in element_types_in(type_proto):
                        check(info.name, element_type, where)
        for tensor in graph.initializer:
            check(tensor.name, tensor.data_type, where)
        for node in graph.node:
            if not node.attribute:
                continue
            holds_graph = False
            for attribute in node.attribute:
                kind = attribute.type
                if kind == tensor_attribute:
                    check(node.output[0] if node.output else node.name, attribute.t.data_type, where)
                elif kind in graph_attributes:
                    holds_graph = True
            if holds_graph:
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
    alone in a model of its own; new values get fresh names. Refused first, in words of ours,
    where the op does not exist at the target (and has no function body to write it with), or
    where the target's version of the op does not take the type of one of its values."""
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
    why = _inexpressible_at_target(node, model, source_opset, target_opset)
    if why is not None:
        raise LoweringError(f"{location}: {why}")
    try:
        converted = version_converter.convert_version(model, target_opset)
    except Exception as error:  # the converter reports missing adapters as RuntimeError
        message = str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__
        source_version = schemas.version_in_force(node.op_type, source_opset)
        raise LoweringError(
            f"{location}: onnx's version converter cannot take {node.op_type}-{source_version} from opset "
            f"{source_opset} to {target_opset} ({_converter_reason(message)})"
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


def absent_at_target(op_type: str, source_version: int, target_opset: int) -> str:
    """The refusal for an op the target opset does not have: where ONNX first defines it, and
    whether a function body could write it (the driver then says why that failed too)."""
    first = schemas.op_versions(op_type)[0]
    body = (
        "" if function_bodies.expansion_for("", op_type) is not None else " and has no function body to write it with"
    )
    return f"{op_type}-{source_version} does not exist at opset {target_opset} (ONNX first defines it at {first}){body}"


def _inexpressible_at_target(
    node: onnx.NodeProto, model: onnx.ModelProto, source_opset: int, target_opset: int
) -> str | None:
    """Why ``node`` (alone in ``model``) cannot be written at ``target_opset`` whatever onnx's
    converter does: its op does not exist there, or the op's version there does not take the
    type of one of its inputs or outputs. The converter would fail on an assertion of its own
    there, or (9 → 8: Greater, Less, MatMul, Gemm, PRelu, Flatten, Constant) cast integers
    through float, which is not exact. None where the converter may try."""
    source_version = schemas.version_in_force(node.op_type, source_opset)
    if source_version is None:
        return None
    target_version = schemas.version_in_force(node.op_type, target_opset)
    if target_version is None:
        return absent_at_target(node.op_type, source_version, target_opset)
    known = {info.name: info.type for info in model.graph.input}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        known.update({info.name: info.type for info in [*inferred.graph.output, *inferred.graph.value_info]})
    except Exception:  # inference refuses the node: its outputs' types stay unknown
        pass
    input_types = [known.get(name) if name else None for name in node.input]
    output_types = [known.get(name) if name else None for name in node.output]
    untaken = untaken_type(node, source_version, target_version, input_types, output_types)
    if untaken is None:
        return None
    return untaken_type_refusal(node, source_version, target_opset, untaken)


def _converter_reason(message: str) -> str:
    """onnx's converter's failure in words: ``it has no adapter for Or`` (from version 14) for its
    ``adapter_lookup: Assertion `false` failed: No Adapter For Or``; else its message past the
    function's name and the assertion."""
    missing = re.search(r"No Adapter (?:From Version \$?(\d+) )?[Ff]or (\w+)", message)
    if missing is not None:
        since, op_type = missing.groups()
        return f"it has no adapter for {op_type}" + (f" from version {since}" if since else "")
    reason = message.split(": ", 1)[-1]
    return re.sub(r"^Assertion `[^`]*` failed: ", "", reason)
