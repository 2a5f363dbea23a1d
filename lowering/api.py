"""The Python API: ``lower`` and ``lower_model``, and the table of rules."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from . import postcheck, schemas
from .cleanup import drop_left_unread, names_read
from .constant_outputs import constant_cones
from .conversion import version_steps
from .engine import Legalizer
from .errors import ConversionRefused, IncompleteLowering, InternalError, LoweringError, NotLowered
from .function_bodies import all_expansions
from .graphs import every_node, holds_graphs, nested_graphs
from .input_shapes import InputShapes, with_input_shapes
from .ir_versions import ir_version_for_opset
from .modelio import ModelBytes, checkable, weights_fit_in_a_copy
from .nodecheck import checker_message
from .opcount import count_ops
from .patterns import first_paragraph
from .registry import all_rules
from .report import LoweringReport
from .retyping import parse_retypings, retype_model
from .runtime_profiles import RuntimeProfile
from .shape_folding import FoldedGraph, fold_shapes, inferred_types
from .targets import DEFAULT_TARGET, Target


@dataclass
class LoweringResult:
    """The lowered model, what the pass did, and whether it changed anything; ``path`` names
    the path that made it ("fast" or "plain", see :mod:`lowering.plain_path`)."""

    model: Any
    report: LoweringReport
    path: str = "fast"

    @property
    def modified(self) -> bool:
        return bool(self.report.rewritten)


def lower(
    model,
    *,
    ops=None,
    target_opset: int | None = None,
    target: Target | RuntimeProfile | str = DEFAULT_TARGET,
    fast=None,
    strict: bool = False,
    fold: str | None = None,
    input_shapes: InputShapes | None = None,
    retype: str | dict | None = None,
    retype_io: bool = False,
):
    """Lower ``model`` (``onnx.ModelProto`` or ``onnx_ir.Model``) and return the lowered model.

    ``ops`` names the op types to lower (default: the target's ``lowered_ops``, the seed ops
    IsInf, IsNaN, OptionalHasElement and OptionalGetElement). A ModelProto
    argument is left untouched; an ``onnx_ir.Model`` comes back as a new ``onnx_ir.Model``.
    ``fast=False`` runs the plain path (see :func:`lower_model`): the same bytes, slower.
    ``strict=True``: a requested op left is an error (:class:`lowering.IncompleteLowering`).
    ``fold``, ``input_shapes``: the values shapes decide folded, inputs declared static (see :func:`lower_model`).
    ``retype``: element types rewritten, ``"int64=int32"`` (see :mod:`lowering.retyping`); the
    model's inputs and outputs keep their types unless ``retype_io``.
    """
    result = lower_model(
        model, ops=ops, target_opset=target_opset, target=target, fast=fast, strict=strict, fold=fold,
        input_shapes=input_shapes, retype=retype, retype_io=retype_io,
    )  # fmt: skip
    return result.model


def lower_model(
    model,
    *,
    ops=None,
    target_opset: int | None = None,
    target: Target | RuntimeProfile | str = DEFAULT_TARGET,
    progress=None,
    fast=None,
    strict: bool = False,
    serialized: bytes | None = None,
    fold: str | None = None,
    input_shapes: InputShapes | None = None,
    retype: str | dict | None = None,
    retype_io: bool = False,
    external_folder: str | os.PathLike | None = None,
) -> LoweringResult:
    """Like :func:`lower`, but also return the report of what was rewritten and what was left.

    ``target``: a runtime's name (``"tract-0.21"``; :func:`lowering.runtime_profiles.profile_names`)
    makes the model run there (:func:`lowering.target_lowering.lower_for_target`): the opset it
    loads, the ops it refuses lowered, shapes folded; or raises
    :class:`lowering.target_lowering.TargetRefused` listing every node no pattern can fix.

    ``fold``: which values the shapes decide are folded to constants (:mod:`lowering.shape_folding`):
    "emitted" those the pass wrote (the default), "all" the model's own shape arithmetic too (the
    default with ``input_shapes``), "inner" all but the model's constant outputs and what they
    follow from (a runtime that gives no constant output, rknn, computes a Size it is given),
    "none" nothing.

    ``input_shapes``: inputs declared static first (:func:`lowering.input_shapes.with_input_shapes`):
    ``{"x": [1, 3, 224, 224]}`` gives an input's sizes, ``{"batch": 1}`` a dimension name's.

    ``retype``: element types rewritten (:mod:`lowering.retyping`), ``"int64=int32,float64=float32"``;
    ``retype_io`` retypes the model's inputs and outputs too; ``external_folder``: where the
    external data of a model loaded without it lie (its initializers to retype are read there in
    chunks and written inline).

    ``progress`` (a :class:`lowering.progress.Progress`) is told how many nodes and graphs are done.

    ``fast=False`` runs the plain path (:mod:`lowering.plain_path`), which is the specification of
    the fast one: every node through its pattern, names listed from the model, node lists
    rebuilt as NodeProtos. The speed work (:mod:`lowering.fast`: expansions memoized per kind
    of node and replayed as wire bytes, names checked against the model's bytes, node lists
    spliced as bytes) is switched off; the result is the same, byte for byte (tests compare
    the two). ``fast=lowering.fast.Shortcuts(...)`` switches single shortcuts off. The default
    (None) is the fast path, or the plain one where the environment sets ``ONNX_LOWER_PLAIN=1``
    (so a whole test suite can run on the plain path).

    ``strict=True`` is a full conversion: where a node of a requested op is left (the report's
    ``remaining``, each with its reason), raise :class:`lowering.IncompleteLowering` instead of
    returning a partial result.

    ``serialized``: the bytes ``model`` was parsed from (a file as read), where the caller has
    them: the fast path reads them instead of serializing the model again.

    With ``target_opset`` the result declares that default-domain opset: ops this project
    owns are kept (re-versioned, or behind an exact Cast) where they exist there and are not
    asked to be lowered, and lowered where they do not; every other op is converted by
    ``onnx.version_converter``. Where nodes cannot be expressed there, raises
    :class:`lowering.ConversionRefused` listing every one (``blockers``: op, version, graph,
    node, reason), found in one pass.
    """
    if not isinstance(target, Target):  # a runtime's profile or its name: see lowering.target_lowering
        from .target_lowering import lower_for_target

        if not isinstance(model, onnx.ModelProto):
            model = _ir_to_proto(model)
        return lower_for_target(model, target, lower_model, lowerable_ops(), ops=ops, target_opset=target_opset,
                                progress=progress, fast=fast, strict=strict, serialized=serialized, fold=fold,
                                input_shapes=input_shapes, retype=retype, retype_io=retype_io)  # fmt: skip
    ir_model = None
    if not isinstance(model, onnx.ModelProto):
        ir_model = model
        model = _ir_to_proto(model)
    if fold is None:
        fold = "all" if input_shapes else "emitted"
    requested = _requested_ops(ops, target)
    retypings = parse_retypings(retype)
    if target_opset is None:
        target_opset = target.opset
    if fast is None:
        fast = os.environ.get("ONNX_LOWER_PLAIN", "") != "1"
    # The model's bytes, where the fast path reads them (Shortcuts.whole_bytes) and it is small
    # enough to copy (no large inline weights): the checker reads them too.
    model_bytes = None
    if fast and getattr(fast, "whole_bytes", True) and weights_fit_in_a_copy(model):
        model_bytes = ModelBytes(model, serialized if serialized is not None and ir_model is None else None)
    check_input(model, model_bytes)
    if input_shapes:
        model = with_input_shapes(model, input_shapes)
        model_bytes = ModelBytes(model, None) if model_bytes is not None else None
    if target_opset is not None:
        _check_target_opset(model, target_opset)
    lowered = onnx.ModelProto()
    if model_bytes is not None and model_bytes.given is not None and ir_model is None:
        lowered.ParseFromString(model_bytes.given)  # (the bytes it was read from: faster than a copy)
    else:
        lowered.CopyFrom(model)
    lowering_pass = Legalizer(
        lowered,
        model,
        target=dataclasses.replace(target, lowered_ops=requested, opset=target_opset),
        progress=progress,
        model_bytes=model_bytes,
        fast=fast,
    )
    try:
        report = lowering_pass.run()
        if report.blockers:
            raise ConversionRefused(report.blockers, target_opset)
        outcome = lowering_pass.outcome()
        _check_postcondition(lowered, requested, report, lowering_pass.path)
        may_hold_fold_seeds = fold != "emitted" or lowering_pass.path.may_hold_ops(lowered, FOLD_SEEDS)
    finally:
        # The pass's objects refer to one another (the path to the driver, scopes to both):
        # released here, reference counting frees them at once, not a later full collection.
        lowering_pass.release()
        del lowering_pass
    if strict and report.remaining:
        raise IncompleteLowering(report.remaining)
    if target_opset is not None:
        _declare_opset(lowered, target_opset)
    # (folded at the opset declared: inference reads the nodes by it)
    folded = _folded(lowered, model, fold, may_hold_fold_seeds)
    report.folded.update(folded.folded)
    if retypings:
        folder = Path(external_folder) if external_folder is not None else None
        full_check = _passes_full_check(lowered)
        report.retyping = retype_model(lowered, retypings, retype_io=retype_io, external_folder=folder, target=target)
        _check_retyped(lowered, full_check)
    if report.rewritten or report.converted() or report.folded:  # (a CastLike's target, once it is a Cast)
        drop_left_unread(lowered, lambda: names_read(model))
    if target_opset is not None:
        if outcome.whole_check_needed or outcome.edited_structure:
            _check_output(lowered, target_opset)  # where a node's own check did not pass
    elif outcome.expanded_ops:
        _check_expanded(lowered, outcome.expanded_ops)
    elif outcome.edited_structure:
        _check_structure(lowered)
    if ir_model is not None:
        import onnx_ir

        lowered = onnx_ir.serde.deserialize_model(lowered)
    return LoweringResult(lowered, report, outcome.path)


FOLD_CHOICES = ("emitted", "all", "inner", "none")
# Ops whose presence among the foldable nodes makes another folding round worth its shape
# inference (fold="all" runs one round whatever the ops).
FOLD_SEEDS = frozenset({"Shape", "Size", "ConstantOfShape", "Range"})
MOST_FOLDING_ROUNDS = 4


def _folded(lowered: onnx.ModelProto, original: onnx.ModelProto, fold: str, may_hold_seeds: bool = True) -> FoldedGraph:
    """Fold (in place) the values shapes decide among the nodes ``fold`` names: with "emitted",
    the nodes writing only values the original does not hold. ``may_hold_seeds`` False (the
    pass's path knows the model holds no node of FOLD_SEEDS) spares the walk over the nodes."""
    if fold not in FOLD_CHOICES:
        raise ValueError(f"fold must be one of {', '.join(FOLD_CHOICES)}, not {fold!r}")
    if fold == "none":
        return FoldedGraph()
    if fold == "emitted" and not (
        may_hold_seeds and any(node.op_type in FOLD_SEEDS for node in _foldable_places(lowered))
    ):
        return FoldedGraph()  # (the pass wrote nothing to fold)
    if fold == "all":
        foldable = every_node
    elif fold == "inner":  # (the constant outputs and all they follow from, left to the runtime)
        kept = constant_cones(lowered, inferred_types(lowered))

        def foldable(node: onnx.NodeProto) -> bool:
            return not kept.intersection(node.output)  # (computed all the same, for the nodes after it)

    else:
        graph = original.graph
        held = {name for node in _foldable_places(original) for name in node.output}
        for inner in nested_graphs(graph.node):  # (the bodies' inputs too)
            held.update(info.name for info in inner.input)
        for function in original.functions:
            held.update(function.input)
        held.update(info.name for info in graph.input)
        held.update(tensor.name for tensor in graph.initializer)

        def foldable(node: onnx.NodeProto) -> bool:
            return not held.intersection(node.output)

    total = FoldedGraph()
    types = None
    for round_number in range(MOST_FOLDING_ROUNDS):  # what one round folds lets inference know more
        seeded = any(node.op_type in FOLD_SEEDS and foldable(node) for node in _foldable_places(lowered))
        if not seeded and (fold == "emitted" or round_number):
            break
        known_before, types = types, inferred_types(lowered)
        if known_before is not None and _knows_no_more(known_before, types):
            break  # (a round folds all its types and constants decide: the same types fold nothing more)
        folded = fold_shapes(lowered, foldable, types, every_node if fold == "inner" else None)
        if not folded.folded:
            break
        total.folded.update(folded.folded)
    return total


def _knows_no_more(before: dict[str, onnx.TypeProto], after: dict[str, onnx.TypeProto]) -> bool:
    """Whether inference after a folding round gives every value the type it gave before."""
    return all(name in before and before[name] == type_proto for name, type_proto in after.items())


def _foldable_places(model: onnx.ModelProto):
    """Every node of the model: its main graph's, its local functions', and those of the graphs
    they hold, at any depth (where folding looks)."""
    for nodes in (model.graph.node, *(function.node for function in model.functions)):
        for node in nodes:
            yield node
            if holds_graphs(node):
                for inner in nested_graphs([node]):
                    yield from inner.node


def rules_table() -> list[dict[str, object]]:
    """One row per rule and op version: op, version, accepted input types, primitives emitted.

    The primitives are found by expanding the rule for every accepted type, attribute
    combination and opset at which that op version is in force.
    """
    rows = []
    for rule in all_rules():
        for version in rule.since_versions:
            type_strings = sorted(schemas.input_type_strings(rule.op_type, version, 0, rule.domain))
            if rule.emits is not None:
                emitted = set(rule.emits)
            else:
                types = sorted(rule.input_types(version), key=schemas.type_name)
                emitted = {
                    node.op_type
                    for opset in _opsets_with_version(rule.op_type, version)
                    for element_type in types
                    for attributes in rule.attribute_combinations()
                    for node in _expansion(rule, opset, element_type, attributes)
                }
            rows.append(
                {
                    "op_type": rule.op_type,
                    "version": version,
                    "types": _short_type_names(type_strings),
                    "emits": sorted(emitted),
                    "rule": rule.name,
                    "formula": first_paragraph(rule.formula),
                }
            )
    return rows


def _short_type_names(type_strings: list[str]) -> list[str]:
    """``tensor(float)`` → ``float``; other kinds keep their schema spelling."""
    if all(t.startswith("tensor(") for t in type_strings):
        return [t[len("tensor(") : -1] for t in type_strings]
    return type_strings


def _opsets_with_version(op_type: str, version: int) -> list[int]:
    return [
        opset
        for opset in range(version, schemas.newest_opset() + 1)
        if schemas.version_in_force(op_type, opset) == version
    ]


def _expansion(rule, opset: int, element_type: int, attributes: dict[str, object]) -> list[onnx.NodeProto]:
    """The nodes (constants included) a rule emits for one input type and attribute set; none
    where it declines."""
    from .builder import Builder, ConstantPool, Value
    from .naming import NameAllocator

    names = NameAllocator()
    pool = ConstantPool(names)
    builder = Builder(opset=opset, target=DEFAULT_TARGET, names=names, constants=pool, name_hint="x")
    try:
        rule.body(builder, Value("x", element_type), **attributes)
    except NotLowered:
        return []
    return pool.nodes + builder.nodes


def lowerable_ops() -> frozenset[str]:
    """The op types a decomposition rule or a function body lowers."""
    return frozenset(rule.op_type for rule in all_rules()) | {expansion.op_type for expansion in all_expansions()}


def _requested_ops(ops, target: Target) -> frozenset[str]:
    """The op types to lower: ``ops``, or the target's ``lowered_ops`` where none are named. An
    op no pattern lowers is asked all the same (its nodes stay, each reported with why: an
    error under ``strict``); a name onnx knows no op by is an error."""
    if ops is None:
        ops = target.lowered_ops
    if isinstance(ops, str):
        ops = [ops]
    requested = frozenset(ops)
    unknown = sorted(op_type for op_type in requested if not schemas.is_op_type(op_type))
    if unknown:
        raise LoweringError(f"onnx defines no op {', '.join(unknown)} (in any domain); check the spelling")
    return requested


def _ir_to_proto(model) -> onnx.ModelProto:
    try:
        import onnx_ir
    except ImportError as error:  # pragma: no cover - onnx_ir comes with onnxscript
        raise LoweringError(f"expected an onnx.ModelProto, got {type(model).__name__}") from error
    if not isinstance(model, onnx_ir.Model):
        raise LoweringError(f"expected an onnx.ModelProto or onnx_ir.Model, got {type(model).__name__}")
    return onnx_ir.serde.serialize_model(model)


def check_input(model: onnx.ModelProto, model_bytes: ModelBytes | None = None) -> None:
    """Refuse what onnx's checker refuses (read from ``model_bytes`` where given and the model
    holds no external data, which the checker would look for), and an opset this onnx lacks."""
    opset = schemas.default_opset(model.opset_import)
    if opset is not None and opset > schemas.newest_opset():
        raise LoweringError(
            f"the model imports opset {opset} of the default domain, newer than the {schemas.newest_opset()} "
            "this onnx knows; upgrade onnx"
        )
    view = checkable(model)
    try:
        onnx.checker.check_model(model_bytes.get() if model_bytes is not None and view is model else view)
    except onnx.checker.ValidationError as error:
        raise LoweringError(f"the model is not valid ONNX: {checker_message(error)}") from None


def _check_target_opset(model: onnx.ModelProto, target_opset: int) -> None:
    """Refuse a target opset that does not exist, and a model holding a type the target lacks.
    Any source opset is taken: a model importing no default-domain opset is converted as it is."""
    newest = schemas.newest_opset()
    if not isinstance(target_opset, int) or isinstance(target_opset, bool) or not 1 <= target_opset <= newest:
        raise LoweringError(f"target opset {target_opset!r} does not exist: this onnx knows opsets 1 to {newest}")
    # A model without default-domain ops (ai.onnx.ml, preview.training only) has nothing to move:
    # it comes back as it is, declaring the target opset for the default domain.
    version_steps.check_types_exist_at(model, target_opset)


def _declare_opset(model: onnx.ModelProto, target_opset: int) -> None:
    """Declare ``target_opset`` for the default domain, in the model and its functions, and
    an IR version that allows it."""
    version_steps.redeclare_default_opset(model, target_opset)
    if schemas.default_opset(model.opset_import) is None:
        model.opset_import.append(onnx.helper.make_opsetid("", target_opset))
    model.ir_version = max(model.ir_version, ir_version_for_opset(target_opset))


def _check_output(model: onnx.ModelProto, target_opset: int) -> None:
    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise LoweringError(
            f"the model cannot be expressed at opset {target_opset}: {checker_message(error)}"
        ) from None


def _passes_full_check(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
        return False
    return True


def _check_retyped(model: onnx.ModelProto, full_check: bool) -> None:
    """onnx's checker on a retyped model, in full where the model passed it before (a model
    that did not, an exporter's optional If-13, is held to the plain checker): every node takes
    its new types at the opset. A failure is onnx-lower's fault, never returned as a result."""
    try:
        onnx.checker.check_model(checkable(model), full_check=full_check)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise InternalError(
            f"the retyped model is invalid, so nothing is returned or written: {checker_message(error)}"
        ) from None


def _check_expanded(model: onnx.ModelProto, expanded_ops: set[str]) -> None:
    """The full checker on a model where ops were replaced by their ONNX function bodies: a
    body can hold what onnx's own checker refuses for the node's inputs (AffineGrid's body gives
    Range 1-element tensors where Range's body needs scalars), and such a model is refused."""
    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        ops = ", ".join(sorted(expanded_ops))
        raise LoweringError(
            f"lowering {ops} by its function body gives a model onnx's checker refuses, so nothing is "
            f"returned: {checker_message(error)}"
        ) from None


def _check_structure(model: onnx.ModelProto) -> None:
    """onnx's plain checker on a model whose subgraphs, functions or If outputs the pass edited:
    every value defined before it is read, every node with the inputs, outputs and attributes
    its schema allows. A failure is onnx-lower's fault, never returned as a result."""
    try:
        onnx.checker.check_model(checkable(model))
    except onnx.checker.ValidationError as error:
        where = postcheck.invalid_node(model) or checker_message(error)
        raise InternalError(f"the lowered model is invalid, so nothing is returned or written: {where}") from None


def _check_postcondition(model: onnx.ModelProto, requested: frozenset[str], report: LoweringReport, path) -> None:
    """Every node of a requested op that is left must be accounted for in the report.

    Where none was requested (a pure conversion) there is nothing to count; where the path
    knows the model holds no node of a requested op (:meth:`lowering.plain_path.PlainPath.may_hold_ops`),
    none is left; otherwise the ops are counted node by node."""
    if not requested and not report.remaining:
        return
    if not report.remaining and not path.may_hold_ops(model, requested):
        return
    counts = count_ops(model)
    left = sum(counts[op_type] for op_type in requested)
    if left != len(report.remaining):
        raise AssertionError(f"{left} requested ops left in the model, {len(report.remaining)} reported")
