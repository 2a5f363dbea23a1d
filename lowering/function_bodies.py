"""Expansion of an op into its own ONNX function body, inlined into the node's graph."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import onnx
import onnx.shape_inference
from onnx import defs

from . import schemas
from .declared_types import element_type_of
from .errors import NotLowered
from .graphs import held_graphs, holds_graphs, value_tensors_written
from .rules_package import load_rules_package

Precondition = Callable[[onnx.NodeProto], None]
# A rewrite of ONNX's body (see function_expansion): (body, the node's input types) → body.
Repair = Callable[[onnx.FunctionProto, "list[onnx.TypeProto | None]"], onnx.FunctionProto]


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


@dataclass(frozen=True, eq=False)
class FunctionExpansion:
    """Replaces a node by its op's own ONNX function body, at the op versions listed.

    ``precondition(node)`` raises :class:`NotLowered` where the expansion does not apply, saying
    why; its docstring states the formula the body computes. ``tolerance``: per element type of the
    op's first input, how far the body's answer may be from a fused kernel's (it does the
    arithmetic differently, so it must say how differently)."""

    op_type: str
    domain: str
    versions: tuple[int, ...]
    tolerance: Mapping[int, Tolerance]
    precondition: Precondition
    repair: Repair | None = None  # see function_expansion
    shaped_inputs: tuple[int, ...] = ()  # see function_expansion

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

    def body_version(self, version: int) -> int | None:
        """For an op version ONNX gives no body (Clip-11), the oldest served later version whose
        steps from it only add types to the op's type lists (Clip-12 and -13): its body means
        the same for the node, whose types the older version takes. None where there is none."""
        steps = [v for v in schemas.op_versions(self.op_type, self.domain) if v > version]
        for later in steps:
            if self.domain or not schemas.only_types_change(self.op_type, later):
                return None
            if self.serves(later):
                return later
        return None

    def expand(
        self,
        node: onnx.NodeProto,
        *,
        opset: int,
        input_types: list[onnx.TypeProto | None],
        fresh: Callable[[str], str],
        memo: dict | None = None,
    ) -> Expanded:
        """The node's body inlined (:meth:`expand_as_written`); a node of float16 or bfloat16
        values computed in float32 and rounded once (:func:`float32_widening`)."""
        widening = float32_widening(node, opset, input_types, self.domain)
        if widening is None:
            return self.expand_as_written(node, opset=opset, input_types=input_types, fresh=fresh, memo=memo)
        hint = node.name or node.output[0]
        wide = onnx.NodeProto()
        wide.CopyFrom(node)
        wide.name = hint
        wide_types = list(input_types)
        widened: dict[str, str] = {}
        before = []
        for position in widening.inputs:
            name = node.input[position]
            if name not in widened:
                widened[name] = fresh(f"{hint}_{name}_float")
                before.append(_cast(name, widened[name], onnx.TensorProto.FLOAT, fresh(f"{hint}_Cast")))
            wide.input[position] = widened[name]
            wide_types[position] = onnx.TypeProto()
            wide_types[position].CopyFrom(input_types[position])
            wide_types[position].tensor_type.elem_type = onnx.TensorProto.FLOAT
        after = []
        for position, element_type in widening.outputs.items():
            wide.output[position] = fresh(f"{hint}_{node.output[position]}_float")
            after.append(_cast(wide.output[position], node.output[position], element_type, fresh(f"{hint}_Cast")))
        inner = self.expand_as_written(wide, opset=opset, input_types=wide_types, fresh=fresh, memo=memo)
        return Expanded([*before, *inner.nodes, *after], inner.opset)

    def expand_as_written(
        self,
        node: onnx.NodeProto,
        *,
        opset: int,
        input_types: list[onnx.TypeProto | None],
        fresh: Callable[[str], str],
        memo: dict | None = None,
    ) -> Expanded:
        """The node's body inlined: body inputs become the node's inputs ("" where an optional
        one is missing), body outputs the node's outputs, every other value and node name
        ``fresh(f"{hint}_{body name}")`` with ``hint`` the node's name (else its first output).
        Only the body nodes the node's named outputs need are kept.

        ``opset``: the default-domain opset the node is read at; ``input_types``: one per node
        input (None where unknown). The nodes are written at the newest opset ONNX gives the body
        at that is not above ``opset`` (``Expanded.opset``); converting them is the caller's.
        ``memo``: where given, bodies made ready are kept there per kind of node (:func:`_prepared`).
        Raises :class:`NotLowered` (its reason naming the node) where the body cannot stand for it."""
        where = _describe(node)
        if schemas.canonical_domain(node.domain) != self.domain or node.op_type != self.op_type:
            raise NotLowered(f"{where}: this expansion is for {self.op_type}, not {node.op_type}")
        schema = schemas.schema_in_force(self.op_type, opset, self.domain)
        if schema is None:
            raise NotLowered(f"{where}: {self.op_type} does not exist at opset {opset}")
        version = schema.since_version
        if not self.serves(version):
            later = self.body_version(version)
            if later is None:
                served = ", ".join(map(str, self.versions))
                raise NotLowered(
                    f"{where}: {self.op_type}-{version} (opset {opset}) is not served; the expansion serves {served}"
                )
            schema = schemas.schema_in_force(self.op_type, later, self.domain)
        for attribute in node.attribute:
            if attribute.ref_attr_name:
                raise NotLowered(
                    f"{where}: attribute '{attribute.name}' refers to the enclosing function's attribute "
                    f"'{attribute.ref_attr_name}', whose value is not known here"
                )
        try:
            self.precondition(node)
        except NotLowered as declined:
            raise NotLowered(f"{where}: {declined.reason}") from None
        # The newest body written at or below the node's opset; where ONNX wrote the op's body
        # only at later opsets (Relu-14's at 18), the oldest of those: the driver then moves its
        # nodes down to the node's opset, or refuses.
        offered = sorted(schema.all_function_opset_versions)
        if not offered:
            raise NotLowered(f"{where}: ONNX gives {self.op_type}-{version} no function body")
        body_opsets = [v for v in offered if v <= opset]
        body_opset = max(body_opsets) if body_opsets else offered[0]
        prepared = _prepared(schema, body_opset, node, input_types, memo, self.repair)
        if isinstance(prepared, str):
            raise NotLowered(f"{where}: {prepared}")
        if body_opset in schema.function_opset_versions:
            untaken = _types_untaken(schema, body_opset, node, input_types)
            if untaken is not None:
                raise NotLowered(f"{where}: {untaken}")
        template, written_at = prepared
        return Expanded(_inline(template, node, node.name or node.output[0], fresh), written_at)


# The float types a function body is computed in float32 for (float32_widening).
NARROW_FLOATS = (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16)


@dataclass(frozen=True)
class Widening:
    """A node's float16 or bfloat16 inputs (positions) cast to float32 before its body, and its
    outputs (position: type) cast back after it."""

    inputs: tuple[int, ...]
    outputs: Mapping[int, int]


# Ops whose bodies only move, compare or select their values, or round once (Relu's Max, PRelu's one
# Mul, Shrink's one Add: exact in float32 before the narrow type rounds it), so their narrow type
# gives the same bits, where a Cast to float32 and back could quiet a signalling NaN; Range and
# Bernoulli, whose bodies are their meaning step by step (Range adds its delta in T); CastLike,
# whose narrow input is only a target type (a double cast to float16 through float32 would be
# rounded twice).
NOT_WIDENED = frozenset(
    {
        "CastLike", "CenterCropPad", "Clip", "DepthToSpace", "SpaceToDepth", "GreaterOrEqual", "LessOrEqual",
        "Relu", "LeakyRelu", "PRelu", "ThresholdedRelu", "Shrink", "Range", "Bernoulli", "SequenceMap",
    }
)  # fmt: skip


def float32_widening(
    node: onnx.NodeProto, opset: int, input_types: list[onnx.TypeProto | None], domain: str = ""
) -> Widening | None:
    """Body(x16) = Cast(Body(Cast(x16, float)), float16): a node of float16 or bfloat16 inputs is
    computed in float32 and each output of theirs rounded once, as fused kernels compute such
    types (onnxruntime's among them); the body's own ops would round every step to the narrow
    type, which strays past the backend tests' tolerance where a runtime computes float16
    natively (TVM's and tract's Attention, CausalConvWithState, SwiGLU). An output is cast back
    to the type of the inputs bound to its type constraint (onnx.defs); one of a constraint no
    input given is bound to, to the type onnx's inference gives it (LayerNormalization's Mean:
    float, of stash_type). None for the ops of NOT_WIDENED, where no input is narrow, or where an
    output's type is not known so."""
    if node.op_type in NOT_WIDENED and not domain:
        return None
    narrow = tuple(
        position
        for position, name in enumerate(node.input)
        if name and position < len(input_types) and element_type_of(input_types[position]) in NARROW_FLOATS
    )
    schema = schemas.schema_in_force(node.op_type, opset, domain) if narrow else None
    if schema is None or not schema.inputs or not schema.outputs:
        return None

    def formal(parameters: list, position: int) -> str | None:
        """The type string of the formal parameter at ``position``: past the last, the last's
        where it is variadic, else None (no parameter there)."""
        if position < len(parameters):
            return parameters[position].type_str
        last = parameters[-1]
        return last.type_str if last.option == defs.OpSchema.FormalParameterOption.Variadic else None

    constrained = {constraint.type_param_str for constraint in schema.type_constraints}
    outputs: dict[int, int] = {}
    for position, name in enumerate(node.output):
        parameter = formal(schema.outputs, position)
        if not name or parameter not in constrained:
            continue
        bound = {
            element_type_of(input_types[index]) if index < len(input_types) else None
            for index, input_name in enumerate(node.input)
            if input_name and formal(schema.inputs, index) == parameter
        }
        if not bound:  # (bound to no input given: onnx's inference of the node says its type)
            bound = {_inferred_output_type(schema, node, input_types, position)}
        if len(bound) != 1 or None in bound:
            return None
        (element_type,) = bound
        if element_type in NARROW_FLOATS:
            outputs[position] = element_type
    return Widening(narrow, MappingProxyType(outputs))


def _inferred_output_type(
    schema: defs.OpSchema, node: onnx.NodeProto, input_types: list[onnx.TypeProto | None], position: int
) -> int | None:
    """The element type onnx's type inference gives the node's output ``position`` from its
    inputs' types and its attributes (LayerNormalization's Mean: stash_type's; LinearAttention's
    present_state, with no past_state: the query's); None where it cannot say."""
    types = {name: t for name, t in zip(node.input, input_types, strict=False) if name and t is not None}
    try:
        inferred = onnx.shape_inference.infer_node_outputs(schema, node, types)
    except Exception:  # (onnx's inference errors have no common type)
        return None
    found = inferred.get(node.output[position])
    return element_type_of(found) if found is not None else None


def _cast(source: str, target: str, element_type: int, name: str) -> onnx.NodeProto:
    return onnx.helper.make_node("Cast", [source], [target], name=name, to=element_type)


def _describe(node: onnx.NodeProto) -> str:
    return f"{node.op_type} node '{node.name or node.output[0]}'"


# A memo of bodies made ready (``memo`` of :meth:`FunctionExpansion.expand`) holds at most this
# many kinds, as a model may hold many.
BODY_MEMO_SIZE = 4096


def _prepared(
    schema: defs.OpSchema,
    body_opset: int,
    node: onnx.NodeProto,
    input_types: list[onnx.TypeProto | None],
    memo: dict | None,
    repair: Repair | None = None,
) -> tuple[_Template, int] | str:
    """The body's template for this node and the opset it is written at, or why there is none.

    Everything is computed from :func:`_canonical` (the node with its value names replaced by
    their positions), so it depends on nothing the memo's key leaves out: ``memo`` (where given)
    keeps it per kind of node (op version, body opset, the node's attributes and which inputs
    and outputs it names, and for a context-dependent body its input types, shapes included:
    builders may read a rank), so alike nodes call onnx's body builder once; templates are never
    changed by their users (inlining copies their nodes). A refusal is worded with the node's
    own names, out of the memo."""
    canonical = _canonical(node)
    static = body_opset in schema.function_opset_versions
    types = []
    if not static:
        for index, name in enumerate(node.input):
            type_proto = input_types[index] if index < len(input_types) else None
            if name and not _known_type(type_proto):
                return f"the type of input {index} ('{name}') is unknown; ONNX builds this body from the input types"
            types.append((type_proto if name else onnx.TypeProto()).SerializeToString(deterministic=True))
    canonical_bytes = canonical.SerializeToString(deterministic=True)
    key = (schema.name, schema.since_version, body_opset, canonical_bytes, *types)
    prepared = memo.get(key) if memo is not None else None
    if prepared is None:
        if static:
            body = _static_body(schema, body_opset)
        else:
            body = _context_dependent_body(schema, body_opset, canonical_bytes, types)
        if not isinstance(body, str) and repair is not None:
            body = repair(body, [onnx.TypeProto.FromString(t) if t else None for t in types])
        if isinstance(body, str):
            prepared = body
        elif _unsupported_body(body, canonical) is not None:
            prepared = body  # refused: worded below with the node's names
        else:
            default_imports = [o.version for o in body.opset_import if schemas.canonical_domain(o.domain) == ""]
            written_at = default_imports[0] if default_imports else body_opset
            element_types = None if static else [_element_type(onnx.TypeProto.FromString(t)) for t in types]
            prepared = (_template(body, canonical, schema, element_types, written_at), written_at)
        if memo is not None:
            if len(memo) >= BODY_MEMO_SIZE:
                memo.clear()
            memo[key] = prepared
    if isinstance(prepared, onnx.FunctionProto):
        return _unsupported_body(prepared, node)
    return prepared


# By (op, version, body opset, the node's attributes, its inputs' element types): why the static
# body does not take those types, or None.
_types_untaken_found: dict[tuple, str | None] = {}


def forget_type_checks() -> None:
    """Empty the memo of the bodies' type checks (benchmarks measure a cold start without it)."""
    _types_untaken_found.clear()


def _types_untaken(
    schema: defs.OpSchema, body_opset: int, node: onnx.NodeProto, input_types: list[onnx.TypeProto | None]
) -> str | None:
    """Why a body that does not depend on the input types cannot take the node's: an op of it
    refuses a type they give it (ReduceLogSum-18's body is Log(ReduceSum(x)), and Log takes no
    int32, which ReduceLogSum does), from onnx's type inference of the body with the node's
    inputs' element types and attributes; None where it takes them, or they are not all known
    tensor types of the node's inputs, given in order (then the whole result is checked, as before)."""
    if len(node.input) > len(schema.inputs) or not all(node.input):
        return None
    element_types = [element_type_of(type_proto) for type_proto in input_types]
    if None in element_types:
        return None
    attributes = tuple(attribute.SerializeToString() for attribute in node.attribute)
    key = (schema.domain, schema.name, schema.since_version, body_opset, attributes, tuple(element_types))
    if key in _types_untaken_found:
        return _types_untaken_found[key]
    body = _static_body(schema, body_opset)
    found = None
    if not isinstance(body, str):
        types = [onnx.helper.make_tensor_type_proto(element_type, None) for element_type in element_types]
        try:
            onnx.shape_inference.infer_function_output_types(body, types, list(node.attribute))
        except Exception as error:  # (onnx's InferenceError; only a type refused is told, the rest as before)
            text = " ".join(str(error).split())
            if "has unsupported type" in text:
                said = re.sub(r"^\(op_type:(\w+)[^)]*\): ", r"\1: ", text.split("] ", 1)[-1])
                found = f"its ONNX function body does not take these input types ({said})"
    if len(_types_untaken_found) >= BODY_MEMO_SIZE:
        _types_untaken_found.clear()
    _types_untaken_found[key] = found
    return found


def _canonical(node: onnx.NodeProto) -> onnx.NodeProto:
    """The node with its value names replaced by their positions (``""`` kept where absent)."""
    canonical = onnx.NodeProto(op_type=node.op_type, domain=node.domain)
    canonical.input.extend(f"input{index}" if name else "" for index, name in enumerate(node.input))
    canonical.output.extend(f"output{index}" if name else "" for index, name in enumerate(node.output))
    canonical.attribute.extend(node.attribute)
    return canonical


def _static_body(schema: defs.OpSchema, body_opset: int) -> onnx.FunctionProto | str:
    return _checked_body(onnx.FunctionProto.FromString(schema.get_function_with_opset_version(body_opset)), body_opset)


def _context_dependent_body(
    schema: defs.OpSchema, body_opset: int, node: bytes, input_types: list[bytes]
) -> onnx.FunctionProto | str:
    """ONNX's body built from the (canonical, serialized) node's attributes and input types."""
    try:
        built = schema.get_context_dependent_function_with_opset_version(body_opset, node, input_types)
    except Exception as error:  # onnx raises its own C++ errors, not a documented type
        return f"ONNX could not build the body at opset {body_opset}: {error}"
    return _checked_body(onnx.FunctionProto.FromString(built), body_opset)


def _checked_body(body: onnx.FunctionProto, body_opset: int) -> onnx.FunctionProto | str:
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
        for attribute in body_node.attribute:
            if attribute.ref_attr_name and attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                source = attribute.ref_attr_name
                return f"the body's {body_node.op_type} takes a graph from the node's attribute '{source}'"
    produced = {name for body_node in body.node for name in body_node.output}
    for index, name in enumerate(node.output):
        if not name:
            continue
        body_name = body.output[index] if index < len(body.output) else None
        if body_name is None or body_name not in produced:
            formal = f"'{body_name}' " if body_name else ""
            return f"the node names output {index} {formal}('{name}') but ONNX's function body does not compute it"
    return None


@dataclass(frozen=True)
class _Template:
    """A body made ready for one kind of node: the nodes its named outputs need, with the
    function attributes resolved and the body's own names (renamed per node by :func:`_inline`)."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[onnx.NodeProto, ...]
    attribute_values: Mapping[str, onnx.AttributeProto]


def _template(
    body: onnx.FunctionProto,
    node: onnx.NodeProto,
    schema: defs.OpSchema,
    element_types: list[int] | None = None,
    written_at: int | None = None,
) -> _Template:
    """The body's nodes that the node's named outputs need, attributes resolved for the node
    (a function of what :func:`_canonical` keeps of the node: its attributes, which inputs and
    outputs it names, and ``element_types``, the input element types a context-dependent body
    was built from: with them, its Casts to the type their input already has are dropped)."""
    named_outputs = {name for index, name in enumerate(body.output) if index < len(node.output) and node.output[index]}
    needed_by_name = set(named_outputs)
    kept: list[onnx.NodeProto] = []
    for body_node in reversed(body.node):
        if any(output in needed_by_name for output in body_node.output):
            kept.append(body_node)
            needed_by_name.update(name for name in body_node.input if name)
            if holds_graphs(body_node):
                needed_by_name.update(_outer_names(body_node))
    kept.reverse()
    attribute_values = _attribute_values(node, body, schema)
    nodes = []
    for body_node in kept:
        resolved = onnx.NodeProto()
        resolved.CopyFrom(body_node)
        resolved.domain = ""
        _substitute_attributes(resolved, body_node, attribute_values)
        nodes.append(resolved)
    value_tensors_written(nodes)  # (value_ints and the like: older runtimes read only ``value``)
    if element_types is not None and written_at is not None:
        known = {name: t for name, t in zip(body.input, element_types, strict=False) if t}
        nodes = _identity_casts_dropped(nodes, known, set(body.output), written_at)
    return _Template(tuple(body.input), tuple(body.output), tuple(nodes), MappingProxyType(attribute_values))


def _element_type(type_proto: onnx.TypeProto) -> int:
    return type_proto.tensor_type.elem_type if type_proto.WhichOneof("value") == "tensor_type" else 0


def _identity_casts_dropped(
    nodes: list[onnx.NodeProto], known: dict[str, int], body_outputs: set[str], opset: int
) -> list[onnx.NodeProto]:
    """The nodes without their identities Cast(x, to = type of x) = x, each reader of such a
    Cast's output reading x instead (a Cast to the type it is given copies every bit, NaN
    payloads too). Element types are followed from ``known`` (the body's inputs) through
    Constants, Casts and ops whose schema gives an output the type of an input; a Cast making
    a body output, and bodies holding subgraphs, are kept as they are."""
    if any(holds_graphs(body_node) for body_node in nodes):
        return nodes
    alias: dict[str, str] = {}
    kept = []
    for body_node in nodes:
        if alias:
            body_node.input[:] = [alias.get(name, name) for name in body_node.input]
        if body_node.op_type == "Cast":
            to = next((a.i for a in body_node.attribute if a.name == "to"), None)
            output = body_node.output[0]
            if to is not None and known.get(body_node.input[0]) == to and output not in body_outputs:
                alias[output] = body_node.input[0]
                continue
        known.update(_output_element_types(body_node, known, opset))
        kept.append(body_node)
    return kept


def _output_element_types(node: onnx.NodeProto, known: dict[str, int], opset: int) -> dict[str, int]:
    """The element types of the node's outputs that follow from its schema and its inputs'."""
    if node.op_type == "Cast":
        targets = [a.i for a in node.attribute if a.name == "to"]
        return {node.output[0]: targets[0]} if targets else {}
    if node.op_type == "Constant":
        tensors = [a.t for a in node.attribute if a.name == "value"]
        return {node.output[0]: tensors[0].data_type} if tensors else {}
    schema = schemas.schema_in_force(node.op_type, opset)
    if schema is None:
        return {}
    by_parameter = {}
    for index, formal in enumerate(schema.inputs):
        if index < len(node.input) and node.input[index] in known:
            by_parameter.setdefault(formal.type_str, known[node.input[index]])
    found = {}
    for index, formal in enumerate(schema.outputs):
        if index < len(node.output) and node.output[index] and formal.type_str in by_parameter:
            found[node.output[index]] = by_parameter[formal.type_str]
    return found


def _inline(template: _Template, node: onnx.NodeProto, hint: str, fresh: Callable[[str], str]) -> list[onnx.NodeProto]:
    """The template's nodes renamed into the node's graph."""
    names: dict[str, str] = {}
    for index, name in enumerate(template.inputs):
        names[name] = node.input[index] if index < len(node.input) else ""
    for index, name in enumerate(template.outputs):
        if index < len(node.output) and node.output[index]:
            names[name] = node.output[index]
    inlined = []
    for template_node in template.nodes:
        new_node = onnx.NodeProto()
        new_node.CopyFrom(template_node)
        new_node.name = fresh(f"{hint}_{template_node.name or template_node.op_type}")
        for position, name in enumerate(template_node.output):
            if name and name not in names:
                names[name] = fresh(f"{hint}_{name}")
            new_node.output[position] = names.get(name, "")
        for position, name in enumerate(template_node.input):
            new_node.input[position] = names[name] if name else ""
        if holds_graphs(new_node):
            for _, _, graph in held_graphs(new_node):
                _rename_graph(graph, [names], hint, fresh, template.attribute_values)
        inlined.append(new_node)
    return inlined


def _substitute_attributes(
    new_node: onnx.NodeProto, body_node: onnx.NodeProto, attribute_values: dict[str, onnx.AttributeProto]
) -> None:
    """``new_node``'s attributes: the body node's, each reference to a function attribute
    replaced by its value (dropped where neither the node nor the schema gives one)."""
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


def _rename_graph(
    graph: onnx.GraphProto,
    scopes: list[dict[str, str]],
    hint: str,
    fresh: Callable[[str], str],
    attribute_values: dict[str, onnx.AttributeProto],
) -> None:
    """Give every value and node a body's subgraph defines a fresh name (names are unique
    across a model's scopes), point its reads of the body's values at their inlined names, and
    resolve its references to function attributes. A name defined in no enclosing scope of the
    body is left as it is: it was written by the node's own graph (SequenceMap's body holds the
    node's graph attribute) and reads a value of the model."""
    local: dict[str, str] = {}
    scopes = [*scopes, local]

    def define(name: str) -> str:
        if not name:
            return ""
        local[name] = fresh(f"{hint}_{name}")
        return local[name]

    def read(name: str) -> str:
        for scope in reversed(scopes):
            if name in scope:
                return scope[name]
        return name

    for info in graph.input:
        info.name = define(info.name)
    for initializer in graph.initializer:
        initializer.name = define(initializer.name)
    for sparse in graph.sparse_initializer:
        sparse.values.name = define(sparse.values.name)
    for graph_node in graph.node:
        for position, name in enumerate(graph_node.input):
            graph_node.input[position] = read(name) if name else ""
        for position, name in enumerate(graph_node.output):
            graph_node.output[position] = define(name)
        graph_node.name = fresh(f"{hint}_{graph_node.name or graph_node.op_type}")
        if any(attribute.ref_attr_name for attribute in graph_node.attribute):
            original = onnx.NodeProto()
            original.CopyFrom(graph_node)
            _substitute_attributes(graph_node, original, attribute_values)
        for _, _, subgraph in held_graphs(graph_node):
            _rename_graph(subgraph, scopes, hint, fresh, attribute_values)
    for info in graph.output:
        info.name = read(info.name)
    for info in graph.value_info:
        info.name = read(info.name)


def _outer_names(node: onnx.NodeProto) -> set[str]:
    """The names the graphs ``node`` holds read from outside themselves (at any depth)."""
    found: set[str] = set()
    for _, _, graph in held_graphs(node):
        defined = {info.name for info in graph.input} | {init.name for init in graph.initializer}
        for graph_node in graph.node:
            found.update(name for name in graph_node.input if name and name not in defined)
            if holds_graphs(graph_node):
                found.update(name for name in _outer_names(graph_node) if name not in defined)
            defined.update(graph_node.output)
        found.update(info.name for info in graph.output if info.name not in defined)
    return found


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


@functools.cache
def ops_with_bodies(domain: str = "") -> Mapping[str, tuple[int, ...]]:
    """Every op of ``domain`` that onnx gives a function body (static or context-dependent)
    at some version: op type -> the since-versions that have one."""
    found: dict[str, list[int]] = {}
    for schema in defs.get_all_schemas_with_history():
        if schemas.canonical_domain(schema.domain) == domain and schema.all_function_opset_versions:
            found.setdefault(schema.name, []).append(schema.since_version)
    return MappingProxyType({name: tuple(sorted(versions)) for name, versions in sorted(found.items())})


def body_op_types(op_type: str, version: int, domain: str = "") -> list[str] | None:
    """The op types of ``op_type``-``version``'s newest body, in order of first use; for a
    context-dependent body, as ONNX builds it for a node with every required input of its first
    allowed type (float where allowed) and default attributes (:func:`node_body_op_types`). None
    where that builds nothing (the body needs attributes or shapes that only a real node gives)."""
    schema = defs.get_schema(op_type, version, domain)
    required = [f for f in schema.inputs if f.option != defs.OpSchema.FormalParameterOption.Optional]
    node = onnx.helper.make_node(op_type, [f"input{k}" for k in range(len(required))], ["output0"], domain=domain)
    return node_body_op_types(node, version, [_sample_type(schema, formal) for formal in required]) or None


def node_body_op_types(node: onnx.NodeProto, version: int, input_types: list[onnx.TypeProto | None]) -> list[str]:
    """The op types of the newest body of ``node``'s op at ``version``, as ONNX builds it for
    that node (its attributes, its inputs' ``input_types``: RotaryEmbedding's body needs their
    ranks); empty where it has none or ONNX builds none for it."""
    schema = defs.get_schema(node.op_type, version, node.domain)
    if not schema.all_function_opset_versions:
        return []
    body_opset = max(schema.all_function_opset_versions)
    if body_opset in schema.function_opset_versions:
        body = _static_body(schema, body_opset)
    elif any(name and not _known_type(t) for name, t in zip(node.input, input_types, strict=True)):
        return []
    else:
        given = zip(node.input, input_types, strict=True)
        types = [(t if name else onnx.TypeProto()).SerializeToString() for name, t in given]
        body = _context_dependent_body(schema, body_opset, _canonical(node).SerializeToString(), types)
    return [] if isinstance(body, str) else list(dict.fromkeys(n.op_type for n in body.node))


def _sample_type(schema: defs.OpSchema, formal) -> onnx.TypeProto:
    allowed = [formal.type_str]
    for constraint in schema.type_constraints:
        if constraint.type_param_str == formal.type_str:
            allowed = sorted(constraint.allowed_type_strs)
    tensors = [text for text in allowed if text.startswith("tensor(")]
    chosen = "tensor(float)" if "tensor(float)" in tensors else (tensors or ["tensor(float)"])[0]
    element_type = getattr(onnx.TensorProto, chosen[len("tensor(") : -1].upper())
    return onnx.helper.make_tensor_type_proto(element_type, None)


_EXPANSIONS: dict[tuple[str, str], FunctionExpansion] = {}


def function_expansion(
    op_type: str,
    *,
    versions: tuple[int, ...],
    tolerance: Mapping[int, Tolerance],
    domain: str = "",
    repair: Repair | None = None,
    shaped_inputs: tuple[int, ...] = (),
) -> Callable[[Precondition], Precondition]:
    """Register the decorated ``check(node) -> None`` (raising :class:`NotLowered` where the
    expansion does not apply) as the precondition of expanding
    ``op_type`` at ``versions`` by its own function body; its docstring is the formula.
    ``repair``: a rewrite of ONNX's body that computes what the body defines (a body that
    breaks a spec rule a runtime enforces, such as AffineGrid's; one whose arithmetic loses the
    result, such as LayerNormalization's one-pass variance), applied as it is built, with the
    node's input types where the body is built from them (none for a body that is not).
    ``shaped_inputs``: the inputs whose shapes the repair reads where the model states them or
    an initializer or Constant holds them (:meth:`lowering.scopes.Scope.held_type_of`),
    never inferred for it."""

    def register(precondition: Precondition) -> Precondition:
        key = (schemas.canonical_domain(domain), op_type)
        if not inspect.getdoc(precondition):
            raise ValueError(f"the precondition of {op_type}'s expansion must state its formula in a docstring")
        defined = schemas.defined_versions(op_type, versions, domain)
        if not defined:  # an op newer than the installed onnx
            return precondition
        bodiless = [v for v in defined if not schemas.schema_in_force(op_type, v, domain).all_function_opset_versions]
        if bodiless:
            raise ValueError(f"{op_type} versions {bodiless} have no function body in onnx")
        if key in _EXPANSIONS:
            raise ValueError(f"a function expansion for {op_type} is registered already")
        _EXPANSIONS[key] = FunctionExpansion(
            op_type, key[0], tuple(sorted(defined)), tolerance, precondition, repair, tuple(shaped_inputs)
        )
        return precondition

    return register


def expansion_for(domain: str, op_type: str) -> FunctionExpansion | None:
    """The function expansion for an op, by (domain, op type)."""
    load_rules_package()
    return _EXPANSIONS.get((schemas.canonical_domain(domain), op_type))


def all_expansions() -> list[FunctionExpansion]:
    """Every registered function expansion, ordered by domain and op type."""
    load_rules_package()
    return sorted(_EXPANSIONS.values(), key=lambda e: (e.domain, e.op_type))


__all__ = [
    "Expanded",
    "FunctionExpansion",
    "Tolerance",
    "all_expansions",
    "expansion_for",
    "body_op_types",
    "function_expansion",
    "ops_with_bodies",
]
