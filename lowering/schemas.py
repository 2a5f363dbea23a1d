"""Facts about operators, read from ``onnx.defs``: versions in force and accepted types."""

from __future__ import annotations

import functools
from collections.abc import Iterable

import onnx
from onnx import defs

DEFAULT_DOMAINS = ("", "ai.onnx")
# ops whose outputs are drawn at random (onnx.defs does not say which): no constant, whatever
# their inputs, and no expected outputs to match
RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
                        "Multinomial"})  # fmt: skip


def canonical_domain(domain: str) -> str:
    """The default domain has two spellings; both mean ``""``."""
    return "" if domain in DEFAULT_DOMAINS else domain


def newest_opset() -> int:
    """The newest default-domain opset this onnx installation knows."""
    return defs.onnx_opset_version()


@functools.cache
def schema_in_force(op_type: str, opset: int, domain: str = "") -> defs.OpSchema | None:
    """The schema of ``op_type`` that a model importing ``opset`` uses, or None."""
    try:
        return defs.get_schema(op_type, opset, canonical_domain(domain))
    except defs.SchemaError:
        return None


def version_in_force(op_type: str, opset: int, domain: str = "") -> int | None:
    """The since-version of ``op_type`` at ``opset`` (e.g. IsNaN at 15 is 13)."""
    schema = schema_in_force(op_type, opset, domain)
    return None if schema is None else schema.since_version


@functools.cache
def op_versions(op_type: str, domain: str = "") -> tuple[int, ...]:
    """Every since-version of ``op_type`` that onnx defines, oldest first."""
    versions = []
    opset = newest_opset()
    while opset >= 1:
        schema = schema_in_force(op_type, opset, domain)
        if schema is None:
            break
        versions.append(schema.since_version)
        opset = schema.since_version - 1
    return tuple(sorted(versions))


def is_op_type(op_type: str) -> bool:
    """Whether onnx defines an op of this name, in any domain."""
    return op_type in _op_types()


@functools.cache
def _op_types() -> frozenset[str]:
    """The name of every op onnx defines, in any domain, at any version."""
    return frozenset(schema.name for schema in defs.get_all_schemas_with_history())


@functools.cache
def newest_domain_version(domain: str = "") -> int:
    """The newest opset of ``domain`` this onnx installation knows."""
    if canonical_domain(domain) == "":
        return newest_opset()
    return max(
        (s.since_version for s in defs.get_all_schemas_with_history() if canonical_domain(s.domain) == domain),
        default=0,
    )


def defined_versions(op_type: str, versions, domain: str = "") -> tuple[int, ...]:
    """The op versions among ``versions`` that this onnx defines, for a pattern's registration:
    those newer than the installed onnx knows are left out (BitCast-26 under an onnx whose
    newest opset is 23: the pattern then serves fewer versions, or none). A version it knows
    of but does not define (a typo) raises ValueError."""
    known = op_versions(op_type, domain)
    newest = newest_domain_version(domain)
    unknown = [v for v in versions if v not in known and v <= newest]
    if unknown:
        raise ValueError(f"{op_type} has no versions {unknown}; onnx defines {known}")
    return tuple(v for v in versions if v in known)


@functools.cache
def first_opset(op_type: str, output_element_type: int | None = None, domain: str = "") -> int | None:
    """The lowest opset at which ``op_type`` exists and, where ``output_element_type`` is given,
    its first output may have that type (Constant holds int64 from 9); None where none does."""
    for opset in range(1, newest_opset() + 1):
        if schema_in_force(op_type, opset, domain) is not None and (
            output_element_type is None or output_element_type in output_element_types(op_type, opset, 0, domain)
        ):
            return opset
    return None


def first_opset_with_attribute(op_type: str, attribute: str, domain: str = "") -> int | None:
    """The first version of ``op_type`` that takes ``attribute`` (Reshape's allowzero: 14), None
    where none does."""
    return next(
        (v for v in op_versions(op_type, domain) if attribute in defs.get_schema(op_type, v, domain).attributes), None
    )


def first_opset_writing(op_types, *, int64_constants: bool = False) -> int:
    """The lowest opset at which every op of ``op_types`` exists, and Constant holds int64
    where ``int64_constants`` (the indices, axes and shapes a rule writes)."""
    firsts = [first_opset(op_type) or newest_opset() + 1 for op_type in op_types]
    if int64_constants:
        firsts.append(first_opset("Constant", onnx.TensorProto.INT64))
    return max(firsts)


def _tensor_element_types(type_strings) -> frozenset[int]:
    """The element types of the ``tensor(...)`` type strings among ``type_strings``."""
    return frozenset(map(tensor_element_type, type_strings)) - {None}


@functools.cache
def tensor_element_type(text: str) -> int | None:
    """The element type ``tensor(float)`` names (None for any other type string)."""
    if text.startswith("tensor(") and text.endswith(")"):
        name = text[len("tensor(") : -1].upper()
        if hasattr(onnx.TensorProto, name):
            return getattr(onnx.TensorProto, name)
    return None


@functools.cache
def input_element_types(op_type: str, opset: int, input_index: int = 0, domain: str = "") -> frozenset[int]:
    """Tensor element types input ``input_index`` of ``op_type`` accepts at ``opset``."""
    return _tensor_element_types(input_type_strings(op_type, opset, input_index, domain))


@functools.cache
def output_element_types(op_type: str, opset: int, output_index: int = 0, domain: str = "") -> frozenset[int]:
    """Tensor element types output ``output_index`` of ``op_type`` may have at ``opset``."""
    schema = schema_in_force(op_type, opset, domain)
    return _tensor_element_types(_formal_type_strings(schema, schema.outputs if schema else [], output_index))


@functools.cache
def input_type_strings(op_type: str, opset: int, input_index: int = 0, domain: str = "") -> frozenset[str]:
    """Type strings (``tensor(float)``, ``optional(seq(tensor(int64)))``) an input accepts."""
    schema = schema_in_force(op_type, opset, domain)
    return _formal_type_strings(schema, schema.inputs if schema else [], input_index)


@functools.cache
def formal_type_strings(op_type: str, opset: int, kind: str, index: int, domain: str = "") -> frozenset[str]:
    """Type strings formal parameter ``index`` of ``kind`` ("inputs" or "outputs") of
    ``op_type`` allows at ``opset``."""
    schema = schema_in_force(op_type, opset, domain)
    return _formal_type_strings(schema, getattr(schema, kind) if schema else [], index)


def _formal_type_strings(schema: defs.OpSchema | None, formals, index: int) -> frozenset[str]:
    """The type strings formal parameter ``index`` (of ``formals``, the schema's inputs or
    outputs) allows: its type constraint's list, or its own type."""
    if schema is None or index >= len(formals):
        return frozenset()
    type_str = formals[index].type_str
    for constraint in schema.type_constraints:
        if constraint.type_param_str == type_str:
            return frozenset(constraint.allowed_type_strs)
    return frozenset([type_str])


def describe_types(type_strings: Iterable[str]) -> str:
    """Type strings with the same wrapper together: ``tensor(double|float|float16)``,
    ``seq(tensor(float|int64))``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for text in sorted(type_strings):
        start = text.rfind("(") + 1
        end = text.find(")", start)
        if start == 0 or end < 0:
            groups.setdefault((text, ""), [])
            continue
        groups.setdefault((text[:start], text[end:]), []).append(text[start:end])
    return ", ".join(f"{head}{'|'.join(inner)}{tail}" for (head, tail), inner in groups.items())


@functools.cache
def _tensor_type_string(element_type: int) -> str:
    return f"tensor({type_name(element_type)})"


def type_string(type_proto: onnx.TypeProto) -> str:
    """The schema spelling of a type: ``tensor(float16)``, ``optional(seq(tensor(float)))``."""
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return _tensor_type_string(type_proto.tensor_type.elem_type)
    if kind == "sequence_type":
        return f"seq({type_string(type_proto.sequence_type.elem_type)})"
    if kind == "optional_type":
        return f"optional({type_string(type_proto.optional_type.elem_type)})"
    if kind == "map_type":
        key = type_name(type_proto.map_type.key_type)
        return f"map({key}, {type_string(type_proto.map_type.value_type)})"
    if kind == "sparse_tensor_type":
        return f"sparse_tensor({type_name(type_proto.sparse_tensor_type.elem_type)})"
    return "unknown"


def accepts(op_type: str, opset: int, element_type: int, input_index: int = 0) -> bool:
    """Whether ``op_type`` exists at ``opset`` and takes ``element_type`` at that input."""
    return element_type in input_element_types(op_type, opset, input_index)


def type_name(element_type: int) -> str:
    """``TensorProto.FLOAT16`` → ``"float16"``."""
    return onnx.TensorProto.DataType.Name(element_type).lower()


@functools.cache
def ops_with_subgraphs() -> frozenset[str]:
    """Default-domain op types with a graph attribute in some version (If, Loop, Scan, …)."""
    graph_kinds = (defs.OpSchema.AttrType.GRAPH, defs.OpSchema.AttrType.GRAPHS)
    return frozenset(
        schema.name
        for schema in defs.get_all_schemas_with_history()
        if canonical_domain(schema.domain) == ""
        and any(attribute.type in graph_kinds for attribute in schema.attributes.values())
    )


def signature(schema: onnx.defs.OpSchema) -> tuple:
    """What of a schema can change a node's meaning that onnx.defs states: inputs and outputs
    (name, option, homogeneity), attributes (name, type, required, default), deprecation. Type
    lists, function bodies and doc text are left out."""

    attributes = tuple(
        sorted((name, a.type, a.required, a.default_value.SerializeToString()) for name, a in schema.attributes.items())
    )
    return *formal_signature(schema), attributes, schema.deprecated


def formal_signature(schema: onnx.defs.OpSchema) -> tuple[tuple, tuple]:
    """A schema's inputs and outputs as :func:`signature` compares them: name, option, homogeneity."""
    return tuple((p.name, p.option, p.is_homogeneous) for p in schema.inputs), tuple(
        (p.name, p.option, p.is_homogeneous) for p in schema.outputs
    )


@functools.cache
def only_types_change(op_type: str, version: int) -> bool:
    """Whether step ``version`` of ``op_type`` (from the op's previous version) only adds types to
    its type lists: same signature (:func:`signature`), and every type taken before still taken."""
    versions = op_versions(op_type)
    if version not in versions[1:]:
        return False
    previous = versions[versions.index(version) - 1]
    before, after = schema_in_force(op_type, previous), schema_in_force(op_type, version)
    if signature(before) != signature(after):
        return False
    added = False
    for kind, formals in (("inputs", after.inputs), ("outputs", after.outputs)):
        for index in range(len(formals)):
            old = formal_type_strings(op_type, previous, kind, index)
            new = formal_type_strings(op_type, version, kind, index)
            if not old <= new:
                return False
            added = added or old != new
    return added


def default_opset(opset_imports: Iterable[onnx.OperatorSetIdProto]) -> int | None:
    """The version a list of opset imports declares for the default domain (None where none)."""
    for entry in opset_imports:
        if canonical_domain(entry.domain) == "":
            return entry.version
    return None


INDEX_TYPES = frozenset({"tensor(int32)", "tensor(int64)"})  # (an input onnx.defs types so counts or points)


def sets_parameters(schema: defs.OpSchema, position: int) -> bool:
    """Whether the input at ``position`` of ``schema`` sets how the node computes, as onnx.defs
    tells: of a type no output has, an index type alone (int32 or int64: axes, a shape, pads,
    sizes, repeats, K, a count, indices) or, past the first input and unlike it, the fixed type
    tensor(float) (Resize's scales, a quantized op's scales). Told by type alone: Clip's min and
    max, of its data's type, are not."""
    if not schema.inputs:
        return False
    formal = formal_input(schema, position)
    if formal.type_str in {output.type_str for output in schema.outputs}:
        return False
    if _formal_type_strings(schema, [formal], 0) <= INDEX_TYPES:
        return True
    return position > 0 and formal.type_str == "tensor(float)" != schema.inputs[0].type_str


def formal_input(schema: defs.OpSchema, position: int) -> defs.OpSchema.FormalParameter:
    """The formal input of ``schema`` a node's input at ``position`` is (past the last, the last:
    a variadic one)."""
    return schema.inputs[min(position, len(schema.inputs) - 1)]
