"""Moving one node from the opset it was written at to the target opset: re-versioned as it
is where it means the same there, behind an exact Cast, through a version adapter, or by onnx's
version converter; None where none of these can."""

from __future__ import annotations

import onnx
from onnx import helper

from .. import schemas
from ..declared_types import element_type_of
from ..errors import LoweringError, NotLowered
from ..naming import NameAllocator
from ..registry import Rule
from ..report import LoweringReport
from ..scopes import Scope
from ..targets import Target
from . import adapters, version_steps

# Optional nodes vanish with their last reader (see cleanup); one still read at an opset
# without optionals makes the model inexpressible there, which the final check reports.
OPTIONAL_CONSTRUCTORS = frozenset({"Optional"})


def keep_owned(
    rule: Rule, version: int | None, scope: Scope, node: onnx.NodeProto, target: Target, names: NameAllocator,
    report: LoweringReport,
) -> list[onnx.NodeProto] | None:  # fmt: skip
    """An op a decomposition rule owns, kept at the target opset: as it is where the op takes
    the input's type there, or behind an exact Cast to a type it takes where the op's answer
    does not depend on the rounding that Cast may skip (:attr:`Rule.rounding_invariant`) and is
    of no input's type (:func:`_gives_its_input_type`). None when it must be decomposed."""
    target_version = schemas.version_in_force(node.op_type, scope.opset, node.domain)
    if target_version is None:
        return None
    schema = schemas.schema_in_force(node.op_type, scope.opset, node.domain)
    first = node.input[0] if node.input else ""
    if not first:
        required = schema.inputs and schema.inputs[0].option == onnx.defs.OpSchema.FormalParameterOption.Single
        return None if required else [node]
    type_proto = scope.type_of(first)
    if type_proto is None:
        return None
    accepted = schemas.input_type_strings(node.op_type, scope.opset, 0, node.domain)
    element_type = element_type_of(type_proto)
    moved = f"{node.op_type}-{version}→{target_version}"
    if schemas.type_string(type_proto) in accepted:
        # A runtime that runs the op's float32 kernel between Casts (onnxruntime on float16)
        # answers as a rule stating a tolerance does (it computes 16-bit floats in float32 too).
        widened = rule.tolerance is not None and target.runs_widened(node.op_type, target_version, element_type)
        if element_type is not None and target.lacks_kernel(node.op_type, target_version, element_type) and not widened:
            return None
        report.adapted[moved] += 1
        return [node]
    if element_type is None or not rule.rounding_invariant or _gives_its_input_type(schema):
        return None
    carrier = version_steps.exact_carrier(
        element_type, schemas.input_element_types(node.op_type, scope.opset, 0, node.domain)
    )
    if carrier is None or target.lacks_kernel(node.op_type, target_version, carrier):
        return None
    hint = node.name or node.output[0]
    widened = names.fresh(f"{hint}_as_{schemas.type_name(carrier)}")
    cast = helper.make_node("Cast", [first], [widened], name=names.fresh(f"{hint}_Cast"), to=carrier)
    del node.input[0]
    node.input.insert(0, widened)
    report.adapted[f"{moved} via Cast to {schemas.type_name(carrier)}"] += 1
    return [cast, node]


def _gives_its_input_type(schema: onnx.defs.OpSchema) -> bool:
    """Whether an output of the op is of its first input's type (one type constraint binds both):
    behind a widening Cast it would give the wider type the graph does not declare, so the node is
    decomposed (IsNaN's bool answer is of no input's type)."""
    first = schema.inputs[0].type_str if schema.inputs else None
    return first is not None and any(output.type_str == first for output in schema.outputs)


def adapted_across(node: onnx.NodeProto, version: int | None, opset: int) -> bool:
    """Whether an adapter moves ``node`` (of ``version``) to its version at ``opset``, or a known
    change between the versions refuses it: the versions differ in more than the types they take
    (DFT-20's axis input, DFT-17's attribute; Resize-19's half_pixel_symmetric going to 18), so
    an op a rule owns is moved (or refused, then decomposed), not kept as it is."""
    target_version = schemas.version_in_force(node.op_type, opset, node.domain)
    if version is None or target_version is None or target_version == version:
        return False
    return schemas.canonical_domain(node.domain) == "" and (
        adapters.adapter_for(node.op_type, version, target_version) is not None
        or adapters.change_for(node, version, target_version) is not None
    )


def keeps_meaning(
    node: onnx.NodeProto, source_version: int, target_version: int, input_types: list[onnx.TypeProto | None]
) -> bool:
    """Whether ``node`` means at ``target_version`` what it means at ``source_version``
    (:func:`lowering.conversion.version_steps.meaning_change`); ``input_types`` are None where the step did
    not change the types taken (they cannot change the answer for a valid node there)."""
    return version_steps.meaning_change(node, source_version, target_version, input_types) is None


def _keeps_meaning(node: onnx.NodeProto, source_version: int, target_version: int, type_of, judge) -> bool:
    """``judge`` (:func:`keeps_meaning`, or one of the same answers) on ``node``, its input types
    read only where the step changed the types taken."""
    types_matter = version_steps.types_taken_change(node.op_type, source_version, target_version)
    input_types = [type_of(name) if name and types_matter else None for name in node.input]
    return judge(node, source_version, target_version, input_types)


def move(
    scope: Scope, node: onnx.NodeProto, source_opset: int, location: str, names: NameAllocator,
    report: LoweringReport, ir_version: int, local_constants: dict[str, onnx.TensorProto] | None = None,
    local_types: dict[str, onnx.TypeProto] | None = None, judge=keeps_meaning,
) -> list[onnx.NodeProto] | None:  # fmt: skip
    """A default-domain node written at ``source_opset``, moved to ``scope.opset``: None where
    its version is the same there (nothing to do), else the nodes that mean what it means:
    an adapter's, the node itself where no step between changes its meaning, or onnx's
    converter's; LoweringError where none can. ``local_constants``, ``local_types``: values
    and types of what was made beside the node and is not yet in the graph (a function body's);
    ``judge``: whether a node keeps its meaning across the steps (:func:`keeps_meaning`)."""
    constant_value, type_of, inferred_type_of = scope.constant_value, scope.type_of, scope.inferred_type_of
    judged_type_of = scope.judged_type_of  # (the version step's judgement reads only a type's schema string)
    if local_types:

        def type_of(name: str) -> onnx.TypeProto | None:
            found = local_types.get(name)
            return found if found is not None else scope.type_of(name)

        inferred_type_of = judged_type_of = type_of
    if local_constants:

        def constant_value(name: str) -> onnx.TensorProto | None:
            found = local_constants.get(name)
            return found if found is not None else scope.constant_value(name)

    if schemas.canonical_domain(node.domain) != "" or node.op_type in OPTIONAL_CONSTRUCTORS:
        return None
    source_version = schemas.version_in_force(node.op_type, source_opset)
    target_version = schemas.version_in_force(node.op_type, scope.opset)
    if source_version is not None and source_version == target_version:
        return None
    moved = f"{node.op_type}-{source_version}→{target_version}"
    if target_version is None and source_version is not None and scope.opset < source_opset:
        raise LoweringError(f"{location}: {version_steps.absent_at_target(node.op_type, source_version, scope.opset)}")
    if source_version is not None and target_version is not None:
        found = adapters.adapter_for(node.op_type, source_version, target_version)
        if found is not None:
            context = adapters.AdapterContext(
                source_opset,
                scope.opset,
                names,
                inferred_type_of,
                constant_value,
                judged_type_of,
                stated_types=type_of,
            )
            try:
                adapted = found.function(node, context)
            except NotLowered as declined:
                raise LoweringError(f"{location}: {declined.reason}") from None
            if adapted is not None:
                report.adapted[f"{moved} via {found.label}"] += 1
                return adapted
        # An adapter that leaves the node (None) says its step does not concern it: judged as any.
        if _keeps_meaning(node, source_version, target_version, judged_type_of, judge):
            untaken = version_steps.untaken_output_refusal(node, source_version, scope.opset, judged_type_of)
            if untaken is not None:
                raise LoweringError(f"{location}: {untaken}")
            report.adapted[moved] += 1
            return [node]
    types = {name: inferred_type_of(name) for name in node.input if name}
    constants = {name: constant_value(name) for name in node.input if name}
    converted = version_steps.convert_node(
        node,
        types={name: t for name, t in types.items() if t is not None},
        constants={name: c for name, c in constants.items() if c is not None},
        source_opset=source_opset,
        target_opset=scope.opset,
        ir_version=ir_version,
        names=names,
        location=location,
    )
    if source_version is not None and target_version is not None:
        refuse_blind_re_versioning(node, converted, source_version, target_version, location, scope.opset)
    report.adapted[moved] += 1
    return converted


def refuse_blind_re_versioning(
    node: onnx.NodeProto, converted: list, source_version: int, target_version: int, location: str, opset: int
) -> None:
    """onnx's converter knows a step's meaning only where it has an adapter of its own for it;
    where it gives the node back as it is (op, inputs, outputs, attributes) although a known
    change of a step between affects the node, it re-versioned it blindly: refused, with why."""
    change = adapters.change_for(node, source_version, target_version)
    if change is None or len(converted) != 1:
        return
    (result,) = converted
    same = (
        result.op_type == node.op_type
        and list(result.input) == list(node.input)
        and list(result.output) == list(node.output)
        and sorted(a.SerializeToString() for a in result.attribute)
        == sorted(a.SerializeToString() for a in node.attribute)
    )
    if same:
        raise LoweringError(
            f"{location}: {node.op_type}-{source_version} cannot go to opset {opset} as it is, and no adapter "
            f"takes it there: {change.reason}"
        )
