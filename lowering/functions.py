"""Expansion of an op into its own ONNX function body, inlined into the node's graph."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import onnx
from onnx import defs

from . import schemas
from .graphs import holds_graphs

Precondition = Callable[[onnx.NodeProto], "str | None"]


@dataclass(frozen=True)
class Tolerance:
    """How far an expansion's answer may stray from the fused op's: |got − want| <= atol + rtol·|want|.

    NaN must meet NaN and an infinity the same infinity; nothing else is exact."""

    rtol: float
    atol: float

    def mismatches(self, got: np.ndarray, want: np.ndarray) -> np.ndarray:
        """Where ``got`` strays from ``want`` beyond the tolerance (a bool array, shapes alike)."""
        got = np.asarray(got).astype(np.float64)
        want = np.asarray(want).astype(np.float64)
        if got.shape != want.shape:
            raise ValueError(f"shapes differ: {got.shape} against {want.shape}")
        with np.errstate(invalid="ignore"):
            close = np.abs(got - want) <= self.atol + self.rtol * np.abs(want)
        special = ~np.isfinite(want) | ~np.isfinite(got)
        same_special = (np.isnan(got) & np.isnan(want)) | (got == want)
        return np.where(special, ~same_special, ~close)


@dataclass(frozen=True)
class Expanded:
    """The node's replacement: the body's nodes, inlined, written at default-domain ``opset``."""

    nodes: list[onnx.NodeProto]
    opset: int


@dataclass(frozen=True)
class NotExpanded:
    """Why the body cannot stand for this node (one line, naming the node)."""

    reason: str


@dataclass(frozen=True, eq=False)
class FunctionExpansion:
    """Replaces a node by its op's own ONNX function body, at the op versions listed.

    ``precondition(node)`` returns None where the expansion applies, else the reason it does not;
    its docstring states the formula the body computes. ``tolerance``: per element type of the
    op's first input, how far the body's answer may be from a fused kernel's (it does the
    arithmetic differently, so it must say how differently)."""

    op_type: str
    domain: str
    versions: tuple[int, ...]
    tolerance: Mapping[int, Tolerance]
    precondition: Precondition

    def __post_init__(self) -> None:
        object.__setattr__(self, "tolerance", MappingProxyType(dict(self.tolerance)))

    @property
    def name(self) -> str:
        return self.precondition.__name__

    @property
    def formula(self) -> str:
        return inspect.getdoc(self.precondition) or ""

    def tolerance_for(self, element_type: int) -> Tolerance | None:
        return self.tolerance.get(element_type)

    def serves(self, version: int) -> bool:
        return version in self.versions

    def expand(
        self,
        node: onnx.NodeProto,
        *,
        opset: int,
        input_types: list[onnx.TypeProto | None],
        fresh: Callable[[str], str],
    ) -> Expanded | NotExpanded:
        """The node's body inlined: body inputs become the node's inputs ("" where an optional
        one is missing), body outputs the node's outputs, every other value and node name
        ``fresh(f"{hint}_{body name}")`` with ``hint`` the node's name (else its first output).
        Only the body nodes the node's named outputs need are kept.

        ``opset``: the default-domain opset the node is read at; ``input_types``: one per node
        input (None where unknown). The nodes are written at the newest opset ONNX gives the body
        at that is not above ``opset`` (``Expanded.opset``); converting them is the caller's."""
        where = _describe(node)
        if schemas.canonical_domain(node.domain) != self.domain or node.op_type != self.op_type:
            return NotExpanded(f"{where}: this expansion is for {self.op_type}, not {node.op_type}")
        schema = schemas.schema_in_force(self.op_type, opset, self.domain)
        if schema is None:
            return NotExpanded(f"{where}: {self.op_type} does not exist at opset {opset}")
        version = schema.since_version
        if not self.serves(version):
            served = ", ".join(map(str, self.versions))
            return NotExpanded(
                f"{where}: {self.op_type}-{version} (opset {opset}) is not served; the expansion serves {served}"
            )
        for attribute in node.attribute:
            if attribute.ref_attr_name:
                return NotExpanded(
                    f"{where}: attribute '{attribute.name}' refers to the enclosing function's attribute "
                    f"'{attribute.ref_attr_name}', whose value is not known here"
                )
        reason = self.precondition(node)
        if reason is not None:
            return NotExpanded(f"{where}: {reason}")
        body_opsets = [v for v in schema.all_function_opset_versions if v <= opset]
        if not body_opsets:
            offered = ", ".join(map(str, schema.all_function_opset_versions)) or "none"
            return NotExpanded(
                f"{where}: ONNX gives {self.op_type}-{version} no function body at opset {opset} or below "
                f"(bodies at opsets: {offered})"
            )
        body_opset = max(body_opsets)
        body = _function_body(schema, body_opset, node, input_types)
        if isinstance(body, str):
            return NotExpanded(f"{where}: {body}")
        refusal = _unsupported_body(body, node)
        if refusal is not None:
            return NotExpanded(f"{where}: {refusal}")
        default_imports = [o.version for o in body.opset_import if schemas.canonical_domain(o.domain) == ""]
        written_at = default_imports[0] if default_imports else body_opset
        hint = node.name or node.output[0]
        nodes = _inline(body, node, schema, hint, fresh)
        return Expanded(nodes, written_at)


def _describe(node: onnx.NodeProto) -> str:
    return f"{node.op_type} node '{node.name or node.output[0]}'"


def _function_body(
    schema: defs.OpSchema, body_opset: int, node: onnx.NodeProto, input_types: list[onnx.TypeProto | None]
) -> onnx.FunctionProto | str:
    """The schema's body at ``body_opset`` for this node, or why there is none."""
    if body_opset in schema.function_opset_versions:
        body = onnx.FunctionProto.FromString(schema.get_function_with_opset_version(body_opset))
    else:
        # ONNX builds a context-dependent body from the node's attributes and input types.
        serialized_types = []
        for index, name in enumerate(node.input):
            type_proto = input_types[index] if index < len(input_types) else None
            if name and not _known_type(type_proto):
                return f"the type of input {index} ('{name}') is unknown; ONNX builds this body from the input types"
            serialized_types.append((type_proto if name else onnx.TypeProto()).SerializeToString())
        try:
            built = schema.get_context_dependent_function_with_opset_version(
                body_opset, node.SerializeToString(), serialized_types
            )
        except Exception as error:  # onnx raises its own C++ errors, not a documented type
            return f"ONNX could not build the body at opset {body_opset}: {error}"
        body = onnx.FunctionProto.FromString(built)
    if not body.node:
        return (
            f"ONNX builds no function body at opset {body_opset} for this node "
            "(its attributes or input types are outside what the body covers)"
        )
    return body


def _known_type(type_proto: onnx.TypeProto | None) -> bool:
    if type_proto is None or type_proto.WhichOneof("value") is None:
        return False
    if type_proto.WhichOneof("value") == "tensor_type":
        return type_proto.tensor_type.elem_type != onnx.TensorProto.UNDEFINED
    return True


def _unsupported_body(body: onnx.FunctionProto, node: onnx.NodeProto) -> str | None:
    """Why the body cannot be inlined for this node as the inliner below does it, or None."""
    if len(node.input) > len(body.input):
        return f"the node has {len(node.input)} inputs; the body takes {len(body.input)}"
    for body_node in body.node:
        if schemas.canonical_domain(body_node.domain) != "":
            return f"the body uses {body_node.domain}.{body_node.op_type}, outside the default domain"
        if holds_graphs(body_node):
            return f"the body's {body_node.op_type} holds a subgraph; inlining those is not supported"
    produced = {name for body_node in body.node for name in body_node.output}
    for index, name in enumerate(node.output):
        if not name:
            continue
        body_name = body.output[index] if index < len(body.output) else None
        if body_name is None or body_name not in produced:
            formal = f"'{body_name}' " if body_name else ""
            return f"the node names output {index} {formal}('{name}') but ONNX's function body does not compute it"
    return None


def _inline(
    body: onnx.FunctionProto, node: onnx.NodeProto, schema: defs.OpSchema, hint: str, fresh: Callable[[str], str]
) -> list[onnx.NodeProto]:
    """The body's nodes that the node's named outputs need, renamed into the node's graph."""
    names: dict[str, str] = {}
    for index, name in enumerate(body.input):
        names[name] = node.input[index] if index < len(node.input) else ""
    for index, name in enumerate(body.output):
        if index < len(node.output) and node.output[index]:
            names[name] = node.output[index]
    needed = set(node.output) - {""}
    needed_by_name = {body_name for body_name, outer in names.items() if outer in needed and body_name in body.output}
    kept: list[onnx.NodeProto] = []
    for body_node in reversed(body.node):
        if any(output in needed_by_name for output in body_node.output):
            kept.append(body_node)
            needed_by_name.update(name for name in body_node.input if name)
    kept.reverse()

    attribute_values = _attribute_values(node, body, schema)
    inlined = []
    for body_node in kept:
        new_node = onnx.NodeProto()
        new_node.CopyFrom(body_node)
        new_node.name = fresh(f"{hint}_{body_node.name or body_node.op_type}")
        new_node.domain = ""
        for position, name in enumerate(body_node.output):
            if name and name not in names:
                names[name] = fresh(f"{hint}_{name}")
            new_node.output[position] = names.get(name, "")
        for position, name in enumerate(body_node.input):
            new_node.input[position] = names[name] if name else ""
        del new_node.attribute[:]
        for attribute in body_node.attribute:
            if not attribute.ref_attr_name:
                new_node.attribute.append(attribute)
                continue
            value = attribute_values.get(attribute.ref_attr_name)
            if value is None:
                continue  # neither the node nor the schema gives it: the body node's own default holds
            substituted = onnx.AttributeProto()
            substituted.CopyFrom(value)
            substituted.name = attribute.name
            new_node.attribute.append(substituted)
        inlined.append(new_node)
    return inlined


def _attribute_values(
    node: onnx.NodeProto, body: onnx.FunctionProto, schema: defs.OpSchema
) -> dict[str, onnx.AttributeProto]:
    """The value of each function attribute: the node's, else the body's default, else the schema's."""
    values: dict[str, onnx.AttributeProto] = {}
    for name, schema_attribute in schema.attributes.items():
        default = schema_attribute.default_value
        if default.type != onnx.AttributeProto.UNDEFINED:
            values[name] = default
    for default in body.attribute_proto:
        values[default.name] = default
    for attribute in node.attribute:
        values[attribute.name] = attribute
    return values


_EXPANSIONS: dict[tuple[str, str], FunctionExpansion] = {}


def function_expansion(
    op_type: str, *, versions: tuple[int, ...], tolerance: Mapping[int, Tolerance], domain: str = ""
) -> Callable[[Precondition], Precondition]:
    """Register the decorated ``check(node) -> str | None`` as the precondition of expanding
    ``op_type`` at ``versions`` by its own function body; its docstring is the formula."""

    def register(precondition: Precondition) -> Precondition:
        key = (schemas.canonical_domain(domain), op_type)
        if key in _EXPANSIONS:
            raise ValueError(f"a function expansion for {op_type} is registered already")
        known = schemas.op_versions(op_type, domain)
        unknown = [v for v in versions if v not in known]
        if unknown:
            raise ValueError(f"{op_type} has no versions {unknown}; onnx defines {known}")
        bodiless = [v for v in versions if not schemas.schema_in_force(op_type, v, domain).all_function_opset_versions]
        if bodiless:
            raise ValueError(f"{op_type} versions {bodiless} have no function body in onnx")
        if not inspect.getdoc(precondition):
            raise ValueError(f"the precondition of {op_type}'s expansion must state its formula in a docstring")
        _EXPANSIONS[key] = FunctionExpansion(op_type, key[0], tuple(sorted(versions)), tolerance, precondition)
        return precondition

    return register


def expansion_for(domain: str, op_type: str) -> FunctionExpansion | None:
    """The function expansion for an op, by (domain, op type)."""
    if not _LOADED:
        _load_expansions()
    return _EXPANSIONS.get((schemas.canonical_domain(domain), op_type))


def all_expansions() -> list[FunctionExpansion]:
    """Every registered function expansion, ordered by domain and op type."""
    _load_expansions()
    return sorted(_EXPANSIONS.values(), key=lambda e: (e.domain, e.op_type))


_LOADED = False


def _load_expansions() -> None:
    global _LOADED
    from . import rules  # noqa: F401  (importing the package registers rules.functions' expansions)

    _LOADED = True


__all__ = [
    "Expanded",
    "FunctionExpansion",
    "NotExpanded",
    "Tolerance",
    "all_expansions",
    "expansion_for",
    "function_expansion",
]
