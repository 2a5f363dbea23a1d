"""The Python API: ``lower`` and ``lower_model``, and the table of rules."""

from __future__ import annotations

import dataclasses
import functools
import gc
import os
from dataclasses import dataclass
from typing import Any

import onnx

from . import postcheck, schemas, versioning
from .engine import Legalizer, default_opset
from .errors import IncompleteLowering, InternalError, LoweringError
from .functions import all_expansions
from .modelio import ModelBytes, checkable, weights_fit_in_a_copy
from .naming import names_in_model
from .nodecheck import checker_message
from .opcount import count_ops
from .patterns import first_paragraph
from .registry import all_rules
from .report import LoweringReport
from .targets import DEFAULT_TARGET, Target


@dataclass
class LoweringResult:
    """The lowered model, what the pass did, and whether it changed anything; ``path`` names
    the path that made it ("fast" or "plain", see :mod:`lowering.paths`)."""

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
    target: Target = DEFAULT_TARGET,
    fast=None,
    strict: bool = False,
):
    """Lower ``model`` (``onnx.ModelProto`` or ``onnx_ir.Model``) and return the lowered model.

    ``ops`` names the op types to lower (default: the target's ``lowered_ops``, the seed ops
    IsInf, IsNaN, OptionalHasElement and OptionalGetElement). A ModelProto
    argument is left untouched; an ``onnx_ir.Model`` comes back as a new ``onnx_ir.Model``.
    ``fast=False`` runs the plain path (see :func:`lower_model`): the same bytes, slower.
    ``strict=True``: a requested op left is an error (:class:`lowering.IncompleteLowering`).
    """
    return lower_model(model, ops=ops, target_opset=target_opset, target=target, fast=fast, strict=strict).model


def lower_model(
    model,
    *,
    ops=None,
    target_opset: int | None = None,
    target: Target = DEFAULT_TARGET,
    progress=None,
    fast=None,
    strict: bool = False,
    serialized: bytes | None = None,
) -> LoweringResult:
    """Like :func:`lower`, but also return the report of what was rewritten and what was left.

    ``progress`` (a :class:`lowering.progress.Progress`) is told how many nodes and graphs are done.

    ``fast=False`` runs the plain path (:mod:`lowering.paths`), which is the specification of
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
    ``onnx.version_converter``. Anything that cannot be expressed raises LoweringError.
    """
    ir_model = None
    if not isinstance(model, onnx.ModelProto):
        ir_model = model
        model = _ir_to_proto(model)
    requested = _requested_ops(ops, target)
    if target_opset is None:
        target_opset = target.opset
    if fast is None:
        fast = os.environ.get("ONNX_LOWER_PLAIN", "") != "1"
    # The model's bytes, where it is small enough to copy (no large inline weights): the
    # checker reads them, and the pass checks new names against them.
    small = bool(fast) and getattr(fast, "whole_bytes", True) and weights_fit_in_a_copy(model)
    model_bytes = None
    if small:
        model_bytes = ModelBytes(model, serialized if serialized is not None and ir_model is None else None)
    then = None if target_opset is None else _target_opset_refusal(model, target_opset)
    beside = bool(fast) and getattr(fast, "check_beside", True)
    names_beside = beside and getattr(fast, "names_beside", True)
    input_check = _check_input(model, model_bytes, beside=beside, then=then, names_beside=names_beside)
    passes = functools.partial(
        _lowered, model, ir_model, requested, target_opset, target, progress, fast, strict, model_bytes, input_check
    )
    assumed_free: list[str] = []  # the names the pass takes as free, as it takes them
    failure: Exception | None = None
    try:
        result = passes(assume_free=input_check.lists_names, assumed_free=assumed_free)
    except Exception as error:
        failure = error
    except BaseException:
        input_check.stop()
        raise
    try:
        input_check.settle(assumed_free)  # the input's own fault first, as the plain path finds it
        if assumed_free and input_check.holds_any(assumed_free):
            # A name taken as free is the model's (what the pass gave or raised may come of it):
            # the pass is made again, its names listed first.
            failure = None
            if progress is not None:
                progress.restart()
            return passes(assume_free=False, assumed_free=[])
        if failure is not None:
            raise failure
        return result
    finally:
        failure = None  # (else this frame, held by the error's traceback, holds the error: a cycle)


def _lowered(
    model,
    ir_model,
    requested,
    target_opset,
    target,
    progress,
    fast,
    strict,
    model_bytes,
    input_check,
    assume_free,
    assumed_free: list[str],
) -> LoweringResult:
    """:func:`lower_model` past the start of the input's check. ``assume_free``: the model's
    names are listed beside, and the names the pass takes as free without checking them go to
    ``assumed_free`` as they are taken, so they are there even where the pass raises (see
    :class:`lowering.naming.NameAllocator`)."""
    small = model_bytes is not None
    if target_opset is not None:
        _check_target_opset(model, target_opset, types=not input_check.follows_up)
    lowered = onnx.ModelProto()
    if small and model_bytes.given is not None and ir_model is None:
        lowered.ParseFromString(model_bytes.given)  # (the bytes it was read from: faster than a copy)
    else:
        lowered.CopyFrom(model)
    collecting = gc.isenabled()
    gc.disable()  # the pass makes many short-lived objects and no garbage cycles worth chasing
    lowering_pass = None
    try:
        lowering_pass = Legalizer(
            lowered,
            model,
            target=dataclasses.replace(target, lowered_ops=requested, opset=target_opset),
            progress=progress,
            model_bytes=model_bytes,
            fast=fast,
            assume_free_names=assume_free,
            assumed_free=assumed_free,
            names_final=functools.partial(input_check.ask, assumed_free) if assume_free else None,
        )
        report = lowering_pass.run()
        outcome = lowering_pass.outcome()
    finally:
        # The pass's objects refer to one another (the path to the driver, scopes to both):
        # released here, they are freed at once, before the collector is back to chase them.
        if lowering_pass is not None:
            lowering_pass.release()
        del lowering_pass
        if collecting:
            gc.enable()
    _check_postcondition(lowered, requested, report, whole=outcome.path == "fast" and small)
    if strict and report.remaining:
        raise IncompleteLowering(report.remaining)
    if target_opset is not None:
        _declare_opset(lowered, target_opset)
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
    """The nodes (constants included) a rule emits for one input type and attribute set."""
    from .builder import Builder, ConstantPool, Value
    from .naming import NameAllocator

    names = NameAllocator()
    pool = ConstantPool(names)
    builder = Builder(opset=opset, target=DEFAULT_TARGET, names=names, constants=pool, name_hint="x")
    rule.body(builder, Value("x", element_type), **attributes)
    return pool.nodes + builder.nodes


def lowerable_ops() -> frozenset[str]:
    """The op types ``ops=`` may name: those a decomposition rule or a function body lowers."""
    return frozenset(rule.op_type for rule in all_rules()) | {expansion.op_type for expansion in all_expansions()}


def _requested_ops(ops, target: Target) -> frozenset[str]:
    """The op types to lower: ``ops``, or the target's ``lowered_ops`` where none are named."""
    covered = lowerable_ops()
    if ops is None:
        ops = target.lowered_ops
    if isinstance(ops, str):
        ops = [ops]
    requested = frozenset(ops)
    unknown = sorted(requested - covered)
    if unknown:
        raise LoweringError(f"no pattern lowers {', '.join(unknown)}; rules exist for {', '.join(sorted(covered))}")
    return requested


def _ir_to_proto(model) -> onnx.ModelProto:
    try:
        import onnx_ir
    except ImportError as error:  # pragma: no cover - onnx_ir comes with onnxscript
        raise LoweringError(f"expected an onnx.ModelProto, got {type(model).__name__}") from error
    if not isinstance(model, onnx_ir.Model):
        raise LoweringError(f"expected an onnx.ModelProto or onnx_ir.Model, got {type(model).__name__}")
    return onnx_ir.serde.serialize_model(model)


class _InputCheck:
    """onnx's checker on the input: done (``message`` None where valid), or running beside
    the pass (:mod:`lowering.fast.beside`), with the check that follows it on the plain path
    (the target opset's types) where ``follows_up``; :meth:`settle` raises where either refused
    the model, the checker's refusal first."""

    def __init__(self, message: str | None = None, beside=None, follows_up: bool = False, names_of=None) -> None:
        self.message = message
        self.beside = beside
        self.follows_up = follows_up
        self.then_message: str | None = None
        # Where the child lists the model's names too (``names_of`` lists them here otherwise).
        self.lists_names = names_of is not None and beside is not None
        self._names_of = names_of
        self._held: bool | None = None  # the child's answer to the names taken as free

    def ask(self, names: list[str]) -> None:
        """Ask the child at once whether the model holds any of ``names``, where no more will be
        taken (the answer is read by :meth:`settle`)."""
        if self.beside is not None:
            self.beside.ask(names)

    def holds_any(self, names: list[str]) -> bool:
        """Whether the model holds any of ``names`` (given to :meth:`settle`): as the child
        answered, else found here."""
        return self._held if self._held is not None else not self._names_of().isdisjoint(names)

    def settle(self, assumed_free: list[str] | None = None) -> None:
        """Raise where the input is refused; the child (where one checks) is done with after,
        asked first whether the model holds any of ``assumed_free`` where given."""
        if self.beside is not None:
            self.message, self.then_message = self.beside.verdict(), self.beside.then_refusal()
            if assumed_free and self.message is None and self.then_message is None:
                self._held = self.beside.holds_any(assumed_free)
            self.beside.finish()
            self.beside = None
        if self.message is not None:
            raise LoweringError(f"the model is not valid ONNX: {self.message}") from None
        if self.then_message is not None:
            raise LoweringError(self.then_message) from None

    def stop(self) -> None:
        if self.beside is not None:
            self.beside.stop()
            self.beside = None


def _check_input(
    model: onnx.ModelProto,
    model_bytes: ModelBytes | None = None,
    *,
    beside: bool = False,
    then=None,
    names_beside=False,
) -> _InputCheck:
    """Refuse what onnx's checker refuses (read from ``model_bytes`` where given and the model
    holds no external data, which the checker would look for). ``beside``: where the bytes are
    given, the check runs in a child process while the pass goes on, followed there by ``then``
    (a check giving None or its refusal), and ``settle`` waits for its verdict; else it runs
    here, and a refusal is raised at once (``then`` is left to the caller). Where the bytes are
    not made yet, the child makes them, and the pass takes them from it where it needs them
    after the child wrote them (:meth:`lowering.fast.beside.CheckBeside.model_bytes`)."""
    opset = default_opset(model.opset_import)
    if opset is not None and opset > schemas.newest_opset():
        raise LoweringError(
            f"the model imports opset {opset} of the default domain, newer than the {schemas.newest_opset()} "
            "this onnx knows; upgrade onnx"
        )
    view = checkable(model)
    whole = model_bytes if view is model else None
    if beside and whole is not None:
        try:
            from .fast import beside as checking_beside
        except ImportError:  # the speed work is optional: without it the check runs here
            checking_beside = None
        names_of = functools.partial(names_in_model, model) if names_beside else None
        running = (
            checking_beside.start(
                whole.given, len(model.graph.node), then, names_of=names_of, serialize=model.SerializeToString
            )
            if checking_beside is not None
            else None
        )
        if running is not None:
            if whole.given is None:
                whole.made_elsewhere(running.model_bytes)
            return _InputCheck(beside=running, follows_up=then is not None, names_of=names_of)
    try:
        onnx.checker.check_model(whole.get() if whole is not None else view)
    except onnx.checker.ValidationError as error:
        _InputCheck(checker_message(error)).settle()
    return _InputCheck()


def _target_opset_refusal(model: onnx.ModelProto, target_opset: int):
    """:func:`_check_target_opset` as a check giving its refusal (None where it passes)."""

    def refusal() -> str | None:
        try:
            _check_target_opset(model, target_opset)
        except LoweringError as error:
            return str(error)
        return None

    return refusal


def _check_target_opset(model: onnx.ModelProto, target_opset: int, *, types: bool = True) -> None:
    """Refuse a target opset that does not exist, and (``types``) a model holding a type the
    target lacks. Any source opset is taken: a model importing no default-domain opset is
    converted as it is."""
    newest = schemas.newest_opset()
    if not isinstance(target_opset, int) or isinstance(target_opset, bool) or not 1 <= target_opset <= newest:
        raise LoweringError(f"target opset {target_opset!r} does not exist: this onnx knows opsets 1 to {newest}")
    # A model without default-domain ops (ai.onnx.ml, preview.training only) has nothing to move:
    # it comes back as it is, declaring the target opset for the default domain.
    if types:
        versioning.check_types_exist_at(model, target_opset)


def _declare_opset(model: onnx.ModelProto, target_opset: int) -> None:
    """Declare ``target_opset`` for the default domain, in the model and its functions, and
    an IR version that allows it."""
    versioning.redeclare_default_opset(model, target_opset)
    if default_opset(model.opset_import) is None:
        model.opset_import.append(onnx.helper.make_opsetid("", target_opset))
    default_only = [onnx.helper.make_opsetid("", target_opset)]
    model.ir_version = max(model.ir_version, onnx.helper.find_min_ir_version_for(default_only))


def _check_output(model: onnx.ModelProto, target_opset: int) -> None:
    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise LoweringError(
            f"the model cannot be expressed at opset {target_opset}: {checker_message(error)}"
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


def _check_postcondition(
    model: onnx.ModelProto, requested: frozenset[str], report: LoweringReport, *, whole: bool
) -> None:
    """Every node of a requested op that is left must be accounted for in the report.

    Where none was requested (a pure conversion) there is nothing to count; where the model's
    bytes (when it may be copied whole) hold no op type field naming a requested op, none is
    left; otherwise the ops are counted node by node."""
    if not requested and not report.remaining:
        return
    if whole and not report.remaining and not _may_hold_op_types(model, requested):
        return
    counts = count_ops(model)
    left = sum(counts[op_type] for op_type in requested)
    if left != len(report.remaining):
        raise AssertionError(f"{left} requested ops left in the model, {len(report.remaining)} reported")


def _may_hold_op_types(model: onnx.ModelProto, op_types: frozenset[str]) -> bool:
    from .fast import may_hold_op_types

    return may_hold_op_types(model, op_types)
