"""A model against a runtime's profile (:mod:`lowering.runtime_profiles`): every node the runtime
refuses, found in one pass (``onnx-lower check MODEL --target NAME``), and the lowering that
makes the model run there (``--target NAME``): the opset the runtime loads, the ops it refuses
lowered by their patterns, the values shapes decide folded, and a refusal listing every node
no pattern can fix."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import onnx

from . import schemas
from .constant_outputs import NO_ELEMENTS, constant_outputs
from .conversion import adapters
from .errors import ConversionRefused, IncompleteLowering, LoweringError
from .function_bodies import body_op_types, node_body_op_types, ops_with_bodies
from .graphs import held_graphs, holds_graphs
from .ir_versions import declare_ir_version_at_most, ir_version_needed
from .modelio import checkable
from .naming import NameAllocator
from .node_forms import NodeForm, constants_given_by_nodes, node_form, parameters_fed, value_sources
from .nodecheck import checker_message
from .registry import rule_for
from .report import RemainingOp
from .retyping import RETYPINGS, parse_retypings, retyping_cast, type_label
from .runtime_profiles import (
    CONSTANT_OUTPUT,
    DOUBTFUL,
    EMPTY_CONSTANT_OUTPUT,
    EMPTY_FED_OUTPUT,
    PARTLY,
    RANK_0_INPUT,
    REFUSED,
    SUPPORTED,
    UNVERIFIED,
    RuntimeProfile,
    TableProfile,
    Verdict,
    input_kind,
    load_profile,
)
from .shape_folding import inferred_types
from .target_forms import (
    CONSTANTS_SAID,
    IDENTITY_SAID,
    OP_CHOICES,
    FormJudge,
    better_form,
    better_ops,
    choose_forms,
    constants_in_scope,
    element_type_name,
    elidable_identities,
    initializers_better,
    known_kinds,
    model_forms_taken,
    movable_constants,
    producers_in_graph,
    restated_defaults,
    shapes_and_types,
)

MOST_LOWERING_ROUNDS = 4  # a pattern may write ops the runtime refuses too: lowered in the next round
MOST_OPSETS_TRIED = 3  # opsets --target tries before it refuses (and one where a blocker's op has another version)
# a model of at most so many nodes is tried at every opset the runtime loads before it is refused: what a
# version adapter writes at each (a bool ReduceMax-20 carried in uint8 from 12, in int32 below) is seen only so
FEW_NODES = 32


OPSET_FINDING = "(opset)"  # the op type of the model opset's finding
IR_FINDING = "(IR version)"  # the op type of the model IR version's finding
INPUT_FINDING = "(input)"  # the op type of a graph input's finding (a feed the runtime takes none of)
OUTPUT_FINDING = "(output)"  # the op type of a graph output's finding (one the runtime gives none of)
INTERFACE_FINDINGS = (INPUT_FINDING, OUTPUT_FINDING)  # (no opset, no pattern changes the model's interface)
PATTERN_FIX = "lowered by its pattern"  # (the fix check_model foresees for a node of an op a pattern lowers)
RETYPE_FIX = "retyped to "  # (how a retyping's fix begins)
FOLD_FIX = "folded to a constant by --target: values the shapes decide"
GONE_FIX = "not in the model --target makes (what it computed is folded or read by nothing)"
# the probed kind of an output of no elements, by whether a fed value's values reach it
EMPTY_OUTPUT_KINDS = {False: EMPTY_CONSTANT_OUTPUT, True: EMPTY_FED_OUTPUT}


@dataclass(frozen=True)
class Finding:
    """One node (or the model's opset) against the profile: where it is, its op, version and
    element type, the profile's verdict, and the pattern that would lower it (None: none)."""

    op_type: str
    version: int | None
    element_type: str
    graph: str
    node: str
    verdict: Verdict
    fix: str | None
    retype: tuple[int, int] | None = None  # (wide, narrow): a retyping the runtime takes instead
    swept: str = ""  # the cases of it the runtime still got wrong or failed after --target (the profile's sweep)
    for_fewer: bool = False  # the model opset's finding naming an opset where fewer nodes are refused
    declined: bool = False  # its op's rule takes no node of its form (a Max of two operands): none is asked for

    @property
    def blocks(self) -> bool:
        return self.verdict.blocks

    @property
    def of_a_node(self) -> bool:
        """A node's finding, not the model opset's, IR version's or a graph input's or output's (a
        node may have no name)."""
        return self.op_type not in (OPSET_FINDING, IR_FINDING, *INTERFACE_FINDINGS)

    @property
    def location(self) -> str:
        return f"graph {self.graph!r}, node {self.node!r}" if self.node else f"graph {self.graph!r}"

    def as_remaining(self) -> RemainingOp:
        reason = self.verdict.why + (f"; {self.fix}" if self.fix else "; no pattern lowers it")
        reason += f"; {self.swept}" if self.swept else ""
        return RemainingOp(self.op_type, self.version, self.location, reason, self.graph, self.node)

    def as_dict(self) -> dict:
        return {
            "op_type": self.op_type,
            "version": self.version,
            "element_type": self.element_type,
            "graph": self.graph,
            "node": self.node,
            "verdict": self.verdict.kind,
            "why": self.verdict.why,
            "only_past_edges": self.verdict.only_past_edges,
            "wrong_values": self.verdict.wrong_values,
            "fix": self.fix,
            "swept": self.swept,
        }

    def __str__(self) -> str:
        version = f"-{self.version}" if self.version is not None else ""
        on = f" on {self.element_type}" if self.element_type else ""
        fix = f" ({self.fix})" if self.fix else " (no pattern lowers it)" if self.blocks else ""
        swept = f"; {self.swept}" if self.swept else ""
        return f"{self.op_type}{version}{on} at {self.location}: {self.verdict.kind}: {self.verdict.why}{fix}{swept}"


class TargetRefused(ConversionRefused):
    """The model cannot be made to run on the target: ``blockers`` lists every node left that
    the runtime refuses and no pattern lowers."""

    def __init__(self, blockers: list[RemainingOp], target: str) -> None:
        self.target = target
        super().__init__(blockers, None)

    def one_said(self, blocker: RemainingOp) -> str:
        """The one blocker as each of several is listed: its op and version first (a node the
        runtime refuses may have no name to give it)."""
        return str(blocker)

    @property
    def where(self) -> str:
        return f"target {self.target}"


def check_model(
    model: onnx.ModelProto,
    profile: RuntimeProfile | TableProfile | str,
    opset: int | None = None,
    lowerable: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Every node of ``model`` (its main graph, the graphs its nodes hold, its local functions)
    and the model's opset against ``profile``, at ``opset`` (default: the opset the target
    would take the model to), in one pass; a node of an op in ``lowerable`` (the API's
    ``lowerable_ops()``) names its pattern as the fix. Supported nodes are left out."""
    if isinstance(profile, str):
        profile = load_profile(profile)
    model_opset = schemas.default_opset(model.opset_import) or 1
    if opset is None:  # (the profile's choice, unless another opset leaves fewer nodes no pattern lowers)
        default = profile.opset_for(model_opset)
        findings = check_model(model, profile, default, lowerable)
        if not _unlowerable_among(findings):
            return findings
        best = opsets_for_target(model, profile, lowerable)[0]
        if best == default:
            return findings
        refused_there, findings_there = _unlowerable_among(findings), findings
        findings = check_model(model, profile, best, lowerable)
        if not any(f.op_type == OPSET_FINDING for f in findings):  # (the model's opset loads, but must change)
            why = (f"at opset {default} the runtime refuses {refused_there} node(s) no pattern lowers "
                   f"({_op_versions_said(findings_there)}), at opset {best} fewer")  # fmt: skip
            opset_finding = Finding(OPSET_FINDING, model_opset, "", model.graph.name, "", Verdict(REFUSED, why), None)
            findings.insert(0, dataclasses.replace(opset_finding, fix=f"converted to opset {best}", for_fewer=True))
        return findings
    findings: list[Finding] = []
    opset_verdict = profile.opset_verdict(model_opset)
    if opset_verdict.kind != SUPPORTED:
        fix = f"converted to opset {opset}" if opset in profile.opsets else None
        findings.append(Finding(OPSET_FINDING, model_opset, "", model.graph.name, "", opset_verdict, fix))
    if profile.ir_version is not None and model.ir_version > profile.ir_version:
        findings.append(_ir_version_finding(model, profile, opset))
    findings.extend(_input_findings(model, profile, opset))
    findings.extend(_input_kind_findings(model, profile))
    types = inferred_types(model)
    findings.extend(_output_findings(model, profile, types))
    model_inputs = {info.name for info in model.graph.input} - {t.name for t in model.graph.initializer}
    fed, constant = value_sources(model)
    movable = movable_constants(model)
    elidable = elidable_identities(model)
    local = {(f.domain, f.name) for f in model.functions}
    check_form = form_judge(model, profile, opset, types, (fed, constant))
    trial_names = NameAllocator(model=model)  # (for the nodes a choice would write, only judged)
    judges = {(f.domain, f.name, f.overload): check_form.for_function(f) for f in model.functions}
    for graph_name, node, function, in_scope, producers in _every_node_in_scope(model):
        judge = check_form if function is None else judges[function.domain, function.name, function.overload]
        if (node.domain, node.op_type) in local:
            continue  # (its body's nodes are checked)
        if node.domain not in ("", "ai.onnx"):
            verdict = Verdict(REFUSED, f"domain {node.domain!r}: not probed (the runtime's own ops are not known here)")
            findings.append(Finding(node.op_type, None, "", graph_name, node.name, verdict, None))
            continue
        version = schemas.version_in_force(node.op_type, opset)
        type_name = element_type_name(node, judge.types)
        shapes, element_types = shapes_and_types(node, judge.types)
        form = node_form(node, opset, judge.fed, judge.constant, shapes, element_types, judge.node_constants)
        kinds = ("", "")
        if version is None:
            verdict = Verdict(REFUSED, f"{node.op_type} does not exist at opset {opset}")
        else:  # (judged by the cases of the kind of value it is known to be given, or of none)
            written_at = model_opset if function is None else _opset_of(function, model_opset)
            if _inputs_named_alike(node.op_type, written_at, opset):  # (else its values are read apart)
                kinds = known_kinds(node, written_at, in_scope, producers, judge.types)
            verdict = profile.verdict(node.op_type, version, type_name, form, *kinds)
        if verdict.by_what_is_fed and version != schemas.version_in_force(node.op_type, model_opset):
            # (a node judged at a version it is not written in: converting it may rewrite it, as
            # Pad's wrap mode below 19 is rewritten as Gathers; only the cases of its form refuse it)
            verdict = Verdict(DOUBTFUL, verdict.why)
        if verdict.kind != SUPPORTED:
            # (wrong only on such values: the nodes a pattern writes would be wrong there too)
            taken = _pattern_takes(node, form, lowerable)
            fix = f"{PATTERN_FIX} (--ops {node.op_type})" if taken else None
            fix = None if verdict.patterns_wrong_too else fix
            main = function is None  # (a local function's constants and types are its own)
            top = graph_name == model.graph.name  # (Constants of the main graph are moved)
            choice = better_form(node, in_scope, opset, judge, kinds) if version is not None else None
            if choice is None and version is not None and main:
                choice = better_ops(node, opset, check_form, in_scope, trial_names, kinds, not top)
            fix = f"--target chooses the form {choice.said}" if choice is not None else fix
            restated = restated_defaults(node, opset, judge) if choice is None else None
            if restated is not None:
                fix = f"--target chooses the form {restated[1]}"
            if choice is None and version is not None and top and initializers_better(node, check_form, movable):
                fix = f"--target chooses the form {CONSTANTS_SAID}"
            if main and verdict.kind == REFUSED and node.op_type == "Identity" and set(node.output) & elidable:
                fix = f"--target chooses the form {IDENTITY_SAID}"
            retype = _narrower_type_taken(profile, node.op_type, version, type_name, form) if verdict.blocks else None
            if retype is not None and fix is None:  # (--target lowers an op a pattern takes before it retypes)
                boundary = any(name in model_inputs for name in node.input)  # (a Cast would read it wide)
                io = " --retype-io: the model's inputs and outputs change type" if boundary else ""
                fix = f"{RETYPE_FIX}{type_label(retype[1])} (--retype {retype_pair(retype)}{io})"
            fed = _parameters_fed(node.op_type, version, form) if version is not None else []
            swept = _swept_said(profile, node.op_type, version, type_name, fed) if version is not None else ""
            declined = node.op_type in lowerable and not taken
            findings.append(
                Finding(node.op_type, version, type_name, graph_name, node.name, verdict, fix, retype, swept,
                        declined=declined)
            )  # fmt: skip
    return findings


def _found_as(op_type: str, node: str, foreseen: set[tuple[str, str]]) -> tuple[str, str]:
    """The (op, node) of check's finding a node ``--target`` refused is: itself, or the node of an
    If's branch the If's form copied into the graph (lowering.branches_selected names the copy
    ``{if}_{then|else}_{node}``, a fresh one with a suffix ``_k``), where check found that one."""
    if (op_type, node) in foreseen or not node:
        return op_type, node
    for foreseen_op, foreseen_node in foreseen:
        copied = rf".+_(?:then|else)_{re.escape(foreseen_node)}(?:_\d+)?"
        if foreseen_op == op_type and foreseen_node and re.fullmatch(copied, node):
            return foreseen_op, foreseen_node
    return op_type, node


def fixes_confirmed(findings: list[Finding], lower: Callable[[], object], original: onnx.ModelProto) -> list[Finding]:
    """``findings`` (:func:`check_model`'s) with each fix that ``--target`` would not make taken
    back: ``lower()`` runs it (its result dropped). Where it refuses, each node it lists keeps no
    fix, its why the refusal's words (BitCast has a pattern, which takes no float to an integer:
    check alone names the pattern); where it fails otherwise, no fix stands; where it succeeds,
    every fix does. A refused node is known by its op and name; one the refusal names by
    position only (it has no name) takes back the fixes of every node of its op. An opset named
    as the fix because fewer nodes are refused there is taken back where the refusal names a
    node the findings (made at that opset) do not block on: --target could not convert the
    model there, or met other blockers there. The opset the model must leave keeps no fix where
    --target refused a node check judged there and let pass: a node of the ``original`` model
    (the one the findings were made of), not one a pattern wrote; a node's pattern keeps no
    fix where --target refused a node of an op that pattern writes, not of the original model. An
    input or output --target refused that check did not foresee (a Size folded to a constant
    output) is added, in the refusal's words. Where it succeeds, a node it folded away (of an op
    whose nodes it folded, its name gone) is fixed so: gpt2's Shape and ConstantOfShape, which
    rknn fails fed, are values its static shapes decide."""
    if not any(f.blocks for f in findings):
        return findings
    try:
        result = lower()
    except ConversionRefused as refusal:  # (its graphs are named as the engine places them: matched by node)
        named_by_position = {b.node for b in refusal.blockers if not b.node or b.node.startswith("#")}
        foreseen = {(f.op_type, f.node) for f in findings if f.blocks}
        found_as = {id(b): _found_as(b.op_type, b.node, foreseen) for b in refusal.blockers}
        named = {found_as[id(b)]: b.reason for b in refusal.blockers if b.node not in named_by_position}
        unnamed = {b.op_type: b.reason for b in refusal.blockers if b.node in named_by_position}
        foreseen_ops = {op_type for op_type, _ in foreseen}
        unforeseen = [
            b for b in refusal.blockers
            if found_as[id(b)] not in foreseen and not (b.node in named_by_position and b.op_type in foreseen_ops)
        ]  # fmt: skip
        judged = {(node.op_type, node.name) for _, node, _ in _every_node(original)} - foreseen  # (supported ones too)
        judged_ops = {op_type for op_type, _ in judged}
        misjudged = [
            b for b in unforeseen
            if (b.op_type, b.node) in judged or (b.node in named_by_position and b.op_type in judged_ops)
        ]  # fmt: skip
        written = [b for b in unforeseen if b not in misjudged]  # (nodes a pattern or the retyping wrote)
        confirmed = []
        listed: list[RemainingOp] = []  # (the unforeseen blockers a fix taken back names)
        for f in findings:
            reason = named.get((f.op_type, f.node)) or unnamed.get(f.op_type)
            naming: list[RemainingOp] = []
            # (the Casts the retyping writes, named VALUE_NARROW_cast, at the model's inputs and after
            # a Shape: TensorRT 8.6 takes no int64 Cast)
            retyping_wrote = [b for b in written if f.retype and retyping_cast(b.op_type, b.node, f.retype[1])]
            if reason is None and f.fix and f.fix.startswith(RETYPE_FIX) and retyping_wrote:
                naming = retyping_wrote
                reason = "the retyping wrote what it refuses: " + "; ".join(
                    str(b).partition(":")[0] for b in retyping_wrote
                )
                if all("--retype-io" in b.reason for b in retyping_wrote):
                    reason += " (with --retype-io the model's inputs change type instead)"
            if reason is None and f.fix and f.fix.startswith(PATTERN_FIX) and f.version is not None:
                ops = ops_written_for(f.op_type, f.version)
                # (the nodes a pattern writes for a named node are named after it: plain_path.node_hint)
                wrote = [b for b in written if b.op_type in ops and (not f.node or b.node.startswith(f"{f.node}_"))]
                if wrote:  # (Range's pattern writes a Loop for onnx2torch's int32, which it refuses)
                    naming = wrote
                    reason = "its pattern wrote what it refuses: " + "; ".join(str(b).partition(":")[0] for b in wrote)
            if f.for_fewer and unforeseen:  # (at the opset named, --target met blockers check did not foresee)
                naming = unforeseen
                reason = "refused: " + "; ".join(str(b).partition(":")[0] for b in unforeseen)
            elif f.op_type == OPSET_FINDING and misjudged:
                # (--target refused a node check judged and let pass at the opset named: a Squeeze fed
                # its axes, judged at opset 12 as Squeeze-11, which cannot go there)
                naming = misjudged
                reason = "refused: " + "; ".join(str(b).partition(":")[0] for b in misjudged)
            if f.blocks and f.fix and reason is not None:
                said = reason.removeprefix(f"{f.verdict.why}; ")  # (the refusal's reason restates the verdict)
                said = said.removesuffix(f"; {f.swept}") if f.swept else said  # (and the sweep's words, said apart)
                f = dataclasses.replace(f, verdict=Verdict(f.verdict.kind, f"{f.verdict.why}; --target: {said}"),
                                        fix=None)  # fmt: skip
                listed.extend(naming)
            confirmed.append(f)
        for b in unforeseen:  # (a node no fix taken back names: BitShift's Mod and Div, which rknn fails)
            if b.op_type not in INTERFACE_FINDINGS and not any(b is other for other in listed):
                graph = b.graph or original.graph.name
                confirmed.append(
                    Finding(b.op_type, b.version, "", graph, b.node, Verdict(REFUSED, f"--target: {b.reason}"), None)
                )
        said = {(f.op_type, f.verdict.why) for f in findings if f.op_type in INTERFACE_FINDINGS}
        for b in refusal.blockers:  # (the interface of the model --target made: a pattern's constant output)
            if b.op_type in INTERFACE_FINDINGS and not any(b.reason.startswith(w) for o, w in said if o == b.op_type):
                verdict = Verdict(REFUSED, f"--target: {b.reason}")  # (an input or output has no node's name)
                confirmed.append(Finding(b.op_type, None, "", b.graph or original.graph.name, "", verdict, None))
        return confirmed
    except LoweringError as error:
        said = " ".join(str(error).split())
        return [dataclasses.replace(f, verdict=Verdict(f.verdict.kind, f"{f.verdict.why}; --target: {said}"), fix=None)
                if f.blocks and f.fix else f for f in findings]  # fmt: skip
    return _folds_found(findings, result)


def _folds_found(findings: list[Finding], result) -> list[Finding]:
    """``findings`` with each blocking node that ``result`` (``--target``'s, made) no longer holds
    (by graph, op and name) fixed so where check named no fix: folded (:data:`FOLD_FIX`) where
    nodes of its op were, else gone (:data:`GONE_FIX`: a Range folded, its Cast read by nothing
    left); and where check named one, folded where nodes of its op were folded and none lowered by
    a pattern (gpt2_dynamic's Ranges, said lowered by their pattern, were folded first)."""
    left = {(graph, node.op_type, node.name) for graph, node, _ in _every_node(result.model)}
    folded = result.report.folded
    lowered = {key.rpartition("-")[0] for key in result.report.rewritten}
    confirmed = []
    for f in findings:
        if f.blocks and f.node and (f.graph, f.op_type, f.node) not in left:
            if f.fix is None:
                f = dataclasses.replace(f, fix=FOLD_FIX if f.op_type in folded else GONE_FIX)
            elif f.op_type in folded and f.op_type not in lowered:
                f = dataclasses.replace(f, fix=FOLD_FIX)
        confirmed.append(f)
    return confirmed


def _check_declared(model: onnx.ModelProto) -> None:
    """Raise where onnx's full checker refuses ``model`` at the IR version just declared."""
    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise LoweringError(
            f"at IR version {model.ir_version} the model is not valid: {checker_message(error)}"
        ) from None


def _ir_version_finding(model: onnx.ModelProto, profile, opset: int) -> Finding:
    """The model's IR version, newer than the runtime loads: fixed by declaring the runtime's
    where the model (at ``opset``) needs no newer one (:mod:`lowering.ir_versions`)."""
    needed, by_what = ir_version_needed(model, opset)
    why = f"{profile.runtime} {profile.runtime_version} loads IR versions up to {profile.ir_version}"
    fix = f"IR version {profile.ir_version} declared" if needed <= profile.ir_version else None
    if fix is None:
        why += f"; the model needs IR version {needed} for {by_what}"
    return Finding(IR_FINDING, model.ir_version, "", model.graph.name, "", Verdict(REFUSED, why), fix)


def _input_kind_findings(model: onnx.ModelProto, profile) -> list[Finding]:
    """The model's graph inputs (of rank 1 or more, its main graph's, no initializer's, read by
    some node or an output: a runtime may drop one nothing reads) of a kind
    (element type, or optional of one) and rank the runtime takes none of where it takes that
    kind at another rank or, an optional, the tensor it holds (:meth:`RuntimeProfile.input_not_taken`:
    rknn crashes on an int8 input of rank 4, even an Identity's, and fails to load an optional
    one). No pattern changes the model's inputs, so each blocks."""
    if not isinstance(profile, RuntimeProfile) or not profile.inputs:
        return []
    initialized = {t.name for t in model.graph.initializer}
    read = {name for _, node, function in _every_node(model) if function is None for name in node.input}
    read |= {o.name for o in model.graph.output}  # (a local function's names are its own)
    found = []
    for info in model.graph.input:
        kind = input_kind(info.type) if info.name not in initialized and info.name in read else None
        why = profile.input_not_taken(*kind) if kind is not None and kind[1] else None
        if why is not None:
            runtime = f"{profile.runtime} {profile.runtime_version}"
            why = f"input {info.name!r} is {kind[0]} of rank {kind[1]}, which {runtime} takes none of ({why})"
            element_type = kind[0].removeprefix("optional(").removesuffix(")")
            found.append(Finding(INPUT_FINDING, None, element_type, model.graph.name, "", Verdict(REFUSED, why), None))
    return found


def _input_findings(model: onnx.ModelProto, profile, opset: int) -> list[Finding]:
    """The model's graph inputs of a kind the runtime takes no feed of: a 0-d one where its probe
    found it takes none (rknn's simulator, :data:`RANK_0_INPUT`), read by some node (at
    ``opset``) of whose op no probed case fed a 0-d value there and ran right (the runtime drops
    an input nothing it keeps reads: Dropout's ratio outside training). No pattern changes the
    model's inputs, so each blocks."""
    showed = profile.unfed.get(RANK_0_INPUT) if isinstance(profile, RuntimeProfile) else None
    if not showed:
        return []
    initialized = {t.name for t in model.graph.initializer}
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for _, node, function in _every_node(model):
        for position, name in enumerate(node.input):
            if function is None and name:
                readers.setdefault(name, []).append((node, position))
    found = []
    for info in model.graph.input:
        tensor = info.type.tensor_type
        if info.name in initialized or not info.type.HasField("tensor_type") or not tensor.HasField("shape"):
            continue
        if tensor.shape.dim:
            continue
        kept = [
            (node, position)
            for node, position in readers.get(info.name, [])
            if not _took_rank_0(profile, node, position, opset)
        ]
        if not kept:
            continue
        node, position = kept[0]
        reader = f"{node.op_type} {node.name!r}" if node.name else node.op_type
        why = (f"input {info.name!r} is 0-d, read by {reader} (input {position}): "
               f"{profile.runtime} {profile.runtime_version} takes no 0-d input ({len(showed)} probed cases "
               f"fed one, as {showed[0]})")  # fmt: skip
        type_name = onnx.helper.tensor_dtype_to_string(tensor.elem_type).removeprefix("TensorProto.")
        found.append(Finding(INPUT_FINDING, None, type_name, model.graph.name, "", Verdict(REFUSED, why), None))
    return found


def _output_findings(model: onnx.ModelProto, profile, types) -> list[Finding]:
    """The model's graph outputs the runtime gives none of, as its probe found: where it gives
    no constant output (rknn's builder, :data:`CONSTANT_OUTPUT`), those it finds constant at its
    build (:func:`lowering.constant_outputs.constant_outputs`) from ops of which its probe found
    so too (rknn folds a Shape's output and drops Dropout's mask, and computes EyeLike's), and
    those of no elements; else, those of no elements where its probed output of no elements
    failed, from constants alone or from a fed value as the output is (``EMPTY_OUTPUT_KINDS``:
    OpenVINO 2024.6 crashes on one from constants alone, and computes one that reads a fed
    value). No pattern changes what an output holds, so each blocks."""
    if not isinstance(profile, RuntimeProfile):
        return []
    showed = profile.unfed.get(CONSTANT_OUTPUT)
    # (an output of no elements, per whether a fed value's values reach it: why the runtime gives none)
    empty_failed = {fed: profile.output_not_given(kind) for fed, kind in EMPTY_OUTPUT_KINDS.items()}
    if not showed and not any(empty_failed.values()):
        return []
    found = []
    declared = {info.name: info for info in model.graph.output}
    runtime = f"{profile.runtime} {profile.runtime_version}"
    for name, constant in constant_outputs(model, types).items():
        if showed and constant.sources <= profile.folded.keys():
            of = f" (from {', '.join(sorted(constant.sources))})" if constant.sources else ""
            lost = [case for op_type in sorted(constant.sources) for case in profile.folded[op_type]] or showed
            why = (f"output {name!r} {constant.why}{of}, so is constant: {runtime} gives no constant output "
                   f"({len(lost)} probed cases with one were refused or had it dropped, e.g. "
                   f"{_backend_case_first(lost)})")  # fmt: skip
        elif constant.why == NO_ELEMENTS and empty_failed[constant.reads_feeds]:
            whence = "a fed value's values" if constant.reads_feeds else "no input's values (given their shapes)"
            why = (f"output {name!r} holds no elements and follows from {whence}: {runtime} gives no such "
                   f"output ({empty_failed[constant.reads_feeds]})")  # fmt: skip
        else:
            continue  # (the runtime may compute it: its probe found no such output lost)
        elem_type = (types.get(name) or declared[name].type).tensor_type.elem_type
        type_name = onnx.helper.tensor_dtype_to_string(elem_type).removeprefix("TensorProto.") if elem_type else ""
        found.append(Finding(OUTPUT_FINDING, None, type_name, model.graph.name, "", Verdict(REFUSED, why), None))
    return found


def _backend_case_first(names: list[str]) -> str:
    """The first of ``names`` that is an ONNX backend case (``test_...``), else the first."""
    return next((name for name in names if name.startswith("test_")), names[0])


def _took_rank_0(profile: RuntimeProfile, node: onnx.NodeProto, position: int, opset: int) -> bool:
    version = schemas.version_in_force(node.op_type, opset) if node.domain in ("", "ai.onnx") else None
    return version is not None and profile.took_rank_0_at(node.op_type, version, position)


def _swept_said(
    profile, op_type: str, version: int, type_name: str, fed_parameters: Sequence[str] = (), shown: int = 3
) -> str:
    """What the profile's sweep found of cases of (op, version, type), in a few words: those the
    runtime still did wrong after --target, and, for a node fed ``fed_parameters`` (the names of
    its inputs :func:`schemas.sets_parameters` tells) at run time, how many of those onnx-lower
    refused to make ran right once their parameters were constants (the runtime needs them so:
    tract's "expected axes as a constant"); empty where nothing (or no sweep)."""
    if isinstance(profile, TableProfile):
        return ""
    commit = profile.swept.get("onnx_lower", "?")
    said = []
    found = profile.swept_not_right(op_type, version, type_name)
    if found:
        listed = ", ".join(f"{case} ({after}{': ' + why[:120] if why else ''}{_partly_words(partly)})"
                           for case, after, why, partly in found[:shown])  # fmt: skip
        more = f" and {len(found) - shown} more" if len(found) > shown else ""
        said.append(f"after --target the runtime still failed or got wrong {len(found)} swept case(s) of it "
                    f"(onnx-lower {commit}): {listed}{more}")  # fmt: skip
    refused = profile.swept_refused(op_type, version, type_name) if fed_parameters else []
    ran = [entry["constant_parameters"] for _, entry in refused if "constant_parameters" in entry]
    right = [constant for constant in ran if constant["after"].startswith("right")]
    if right:
        said.append(f"{len(right)} of the {len(refused)} swept case(s) of it onnx-lower refused ran right on the "
                    f"runtime with their parameters given as constants (onnx-lower {commit}), and this node is "
                    f"fed its {', '.join(fed_parameters)} at run time")  # fmt: skip
    return "; ".join(said)


def _partly_words(partly: list[str]) -> str:
    """ "; --target kept Div-14 on INT32 (wrong only on ...), ...", or nothing."""
    return f"; --target kept {', '.join(partly)}" if partly else ""


def _pattern_takes(node: onnx.NodeProto, form: NodeForm | None, lowerable: frozenset[str]) -> bool:
    """Whether a pattern lowers ``node``'s op and its rule reads as constants none of the inputs
    the node is fed at run time and takes the node's form (:meth:`Rule.takes_form`: Pad's rule
    declines pads fed so, ReduceMax's any x not known to be empty, Max's a Max of two operands)."""
    if node.op_type not in lowerable:
        return False
    rule = rule_for("", node.op_type)
    return rule is None or form is None or rule.takes_form(form.fed, form.empty, form.inputs)


def _parameters_fed(op_type: str, version: int, form: NodeForm | None) -> list[str]:
    """The names (onnx.defs's) of the node's inputs fed at run time that set its parameters
    (:func:`schemas.sets_parameters`: axes, a shape, scales), in their order."""
    schema = schemas.schema_in_force(op_type, version)
    if schema is None or form is None:
        return []
    return [schemas.formal_input(schema, position).name for position in parameters_fed(form, schema)]


def _narrower_type_taken(
    profile, op_type: str, version: int | None, type_name: str, form: NodeForm | None = None
) -> tuple[int, int] | None:
    """(wide, narrow): where the runtime refuses the op on ``type_name`` (int64, float64,
    bfloat16) and runs it right on a narrower type a retyping gives (the exact one first)."""
    wide = getattr(onnx.TensorProto, type_name, None) if type_name else None
    if version is None or wide not in RETYPINGS:
        return None
    for narrow in sorted(RETYPINGS[wide], key=lambda t: t != onnx.TensorProto.FLOAT):
        narrow_name = onnx.helper.tensor_dtype_to_string(narrow).removeprefix("TensorProto.")
        if profile.verdict(op_type, version, narrow_name, form).kind in (SUPPORTED, PARTLY):
            return wide, narrow
    return None


def _unlowerable(model: onnx.ModelProto, profile, opset: int, lowerable: frozenset[str]) -> int:
    """How many nodes of ``model`` the runtime refuses at ``opset`` that no pattern lowers."""
    return _unlowerable_among(check_model(model, profile, opset, lowerable))


def _never_tried(finding: Finding) -> bool:
    """Whether the finding is of a node no fix takes away, of a version the probe never ran, of
    an op that ran right at no version probed (Loop-1, where every Loop-11 case fails on TVM)."""
    return finding.of_a_node and finding.verdict.no_version_ran_right and not finding.fix


def _op_versions_said(findings: list[Finding], shown: int = 4) -> str:
    """The op versions of the nodes :func:`_unlowerable_among` counts, most first, with how many
    of each: ``Reshape-23 (5), Squeeze-23 (2)``, and how many more kinds."""
    counted = Counter(f"{f.op_type}-{f.version}" for f in findings if _unlowerable(f))
    said = ", ".join(f"{label} ({count})" for label, count in counted.most_common(shown))
    return said + (f" and {len(counted) - shown} more" if len(counted) > shown else "")


def _unlowerable(finding: Finding) -> bool:
    """A node the runtime refuses that no fix takes away, or one never tried (:func:`_never_tried`)."""
    return (finding.blocks and finding.of_a_node and not finding.fix) or _never_tried(finding)


def _unlowerable_among(findings: list[Finding]) -> int:
    """How many nodes the runtime refuses that no fix takes away, counting those never tried
    (:func:`_never_tried`: an opset is not better for trading a refused node for one)."""
    return sum(1 for f in findings if _unlowerable(f))


def opsets_for_target(
    model: onnx.ModelProto, profile: RuntimeProfile | TableProfile, lowerable: frozenset[str] = frozenset()
) -> list[int]:
    """The default-domain opsets the runtime loads, best for ``model`` first: by how many of its
    nodes the runtime refuses there that no pattern lowers (onnx2torch refuses ReduceMean-18,
    which exports at 18 hold, and runs ReduceMean-13), the profile's own choice first among equals
    (the model's opset where the runtime loads it, else the nearest it loads), then the nearest
    the model's (below it before above). Opsets that give every op of the model the same version
    count as one (the nearest of them). ``check`` judges at the first; ``--target`` lowers at the
    profile's choice and, where something is left there that the runtime refuses, tries the next
    (a pattern's nodes are judged only once written)."""
    model_opset = schemas.default_opset(model.opset_import) or 1
    default = profile.opset_for(model_opset)
    written_by = _written_by_nodes(model, model_opset, lowerable)
    op_types = sorted(op_types_held_or_written(model, model_opset, written_by))
    groups: dict[tuple, list[int]] = {}
    for opset in (o for o in profile.opsets if o <= schemas.newest_opset()):
        groups.setdefault(tuple(schemas.version_in_force(op, opset) for op in op_types), []).append(opset)
    ranked = []
    for opsets in groups.values():
        nearest = default if default in opsets else min(opsets, key=lambda o: (abs(o - model_opset), o > model_opset))
        findings = check_model(model, profile, nearest, lowerable)
        unrun = _written_unrun(findings, profile, nearest, lowerable, model_opset, written_by)
        unlowerable = _unlowerable_among(findings)
        ranked.append(
            (unlowerable, unrun, nearest != default, abs(nearest - model_opset), nearest > model_opset, nearest)
        )
    return [entry[-1] for entry in sorted(ranked)] or [default]


def _written_by_nodes(model: onnx.ModelProto, model_opset: int, lowerable: frozenset[str]) -> dict[str, frozenset[str]]:
    """Per op of ``model``'s default-domain nodes that a pattern lowers, the ops that pattern is
    known to write: its rule's ``emits``, else the ops of the function body ONNX builds for each
    of its nodes (their attributes and input types: RotaryEmbedding's body needs their ranks)."""
    found: dict[str, frozenset[str]] = {}
    types = None
    for _, node, function in _every_node(model):
        version = schemas.version_in_force(node.op_type, model_opset)
        if node.domain not in ("", "ai.onnx") or node.op_type not in lowerable or version is None:
            continue
        written = ops_written_for(node.op_type, version)
        if not written and function is None and version in ops_with_bodies().get(node.op_type, ()):
            types = inferred_types(model) if types is None else types
            written = frozenset(node_body_op_types(node, version, [types.get(name) for name in node.input]))
        found[node.op_type] = found.get(node.op_type, frozenset()) | written
    return found


def op_types_held_or_written(
    model: onnx.ModelProto, model_opset: int, written_by: dict[str, frozenset[str]]
) -> set[str]:
    """The default-domain ops of ``model``'s nodes and those the patterns lowering them are known
    to write (``written_by``), at any depth (AffineGrid-20's body writes Constant and CastLike,
    CastLike's Cast: their versions differ between opsets where AffineGrid has none), and those
    a form chosen for them writes (:attr:`OpChoice.writes`), and those a version adapter writes in
    place of a deprecated op (Upsample's Resize: its versions say at which opsets it runs)."""
    nodes = [node for _, node, _ in _every_node(model) if node.domain in ("", "ai.onnx")]
    held = {node.op_type for node in nodes}
    held |= {op for op_type in set(held) for op in adapters.replacing_ops(op_type)}
    held |= {
        op for node in nodes for choice in OP_CHOICES if choice.op_type == node.op_type for op in choice.writes(node)
    }
    found, todo = set(held), sorted(written_by)
    while todo:
        op_type = todo.pop()
        version = schemas.version_in_force(op_type, model_opset)
        written = written_by.get(op_type) or (ops_written_for(op_type, version) if version is not None else ())
        for op in written:
            if op not in found:
                found.add(op)
                todo.append(op)
    return found


def _written_unrun(
    findings: list[Finding], profile, opset: int, lowerable: frozenset[str], model_opset: int,
    written_by: dict[str, frozenset[str]],
) -> int:  # fmt: skip
    """How many of the ops that the patterns lowering the nodes of ``findings`` are known to write
    (a rule's ``emits``, a function body's ops) the runtime runs in no probed case at ``opset``,
    where no pattern lowers them in turn (onnx2torch has no Cast-25 and no Round-22:
    QuantizeLinear's formula at opset 28 cannot run there, at 17 it can). The nodes counted as
    lowered are those the runtime refuses, those it may not run (unverified, doubtful: onnx2torch
    never ran a GroupNormalization, whose version 18 no case probed, and a GroupNormalization-21
    goes to 18 as its body) and those whose op's version at ``opset`` does not take their type
    (Celu-12 takes float only: a float16 Celu-28 goes below 28 as its body). A node of an op
    that ``opset`` lacks (AffineGrid below 20) is lowered at its version in ``model_opset``;
    ``written_by``: what the patterns of the model's own ops write (:func:`_written_by_nodes`)."""
    written: set[str] = set()
    for finding in findings:
        version = finding.version or schemas.version_in_force(finding.op_type, model_opset)
        lowered = finding.blocks or finding.verdict.kind in (UNVERIFIED, DOUBTFUL) or _type_not_taken(finding, opset)
        if lowered and finding.of_a_node and finding.op_type in lowerable and version is not None:
            written |= written_by.get(finding.op_type) or ops_written_for(finding.op_type, version)
    unrun, seen, todo = 0, set(), sorted(written)
    while todo:  # (what the runtime does not run is lowered in turn where a pattern is known)
        op_type = todo.pop()
        if op_type in seen:
            continue
        seen.add(op_type)
        version = schemas.version_in_force(op_type, opset)
        if version is not None and profile.runs_at_all(op_type, version) is not False:
            continue
        at = version if version is not None else schemas.version_in_force(op_type, model_opset)
        deeper = ops_written_for(op_type, at) if op_type in lowerable and at is not None else frozenset()
        todo.extend(deeper)
        unrun += not deeper
    return unrun


def _type_not_taken(finding: Finding, opset: int) -> bool:
    """Whether the version of the finding's op at ``opset`` does not take its element type."""
    if finding.version is None or finding.element_type not in onnx.TensorProto.DataType.keys():
        return False
    taken = schemas.input_element_types(finding.op_type, opset)
    return bool(taken) and onnx.TensorProto.DataType.Value(finding.element_type) not in taken


def ops_written_for(op_type: str, version: int) -> frozenset[str]:
    """The ops the pattern lowering ``op_type``-``version`` is known to write: its rule's
    ``emits``, else its function body's ops (none known: empty)."""
    rule = rule_for("", op_type)
    if rule is not None and rule.serves(version):
        return frozenset(rule.emits or ())
    if version in ops_with_bodies().get(op_type, ()):
        return frozenset(body_op_types(op_type, version) or ())
    return frozenset()


def _opsets_to_try(others: list[int], blockers: list[RemainingOp], first: int, every: bool = False) -> list[int]:
    """The opsets tried after a refusal at ``first``: every one of ``others`` (ranked by
    :func:`opsets_for_target`) where ``every`` (a model of :data:`FEW_NODES` at most), else the
    best ``MOST_OPSETS_TRIED - 1``, then the best of the rest where some blocking node's op has
    another version in force than at ``first``, if any. The ranking
    counts the ops of a pattern's body, not those of the graphs its nodes hold: AffineGrid's
    body writes Split-18 (with num_outputs, which OpenVINO 2024.6 refuses) in its If branches at
    opsets 18 to 21, and the Split-13 a version adapter gives its sizes below 18, which it runs.
    A blocker that names no op version (a graph input) changes at every opset."""

    def changes_a_blocker(opset: int) -> bool:
        for blocker in blockers:
            at_first, there = (schemas.version_in_force(blocker.op_type, at) for at in (first, opset))
            if blocker.version is None or at_first is None or there is None or there != at_first:
                return True
        return False

    if every:
        return list(others)
    tried = others[: MOST_OPSETS_TRIED - 1]
    changing = next((opset for opset in others[len(tried) :] if changes_a_blocker(opset)), None)
    return tried + ([changing] if changing is not None else [])


def _control_flow_op_types(model: onnx.ModelProto) -> set[str]:
    """The ops of nodes holding graphs (If, Loop, Scan) anywhere in a model. Another opset is not
    taken where reaching it writes one the model does not hold (an If per axis where
    ReduceSum-13's axes are fed at run time and ReduceSum-11 takes them as an attribute): a
    runtime analyses such branches worst (tract), and the profile's If cases say nothing of
    them; the node is refused instead."""
    return {node.op_type for _, node, _ in _every_node(model) if holds_graphs(node)}


def retype_pair(pair: tuple[int, int]) -> str:
    """``int64=int32``, as ``--retype`` spells a pair."""
    return "=".join(map(type_label, pair))


def lower_for_target(
    model: onnx.ModelProto, name: RuntimeProfile | TableProfile | str, lower_model, lowerable: frozenset[str], **options
):
    """``model`` made to run on the runtime ``name`` by ``lower_model`` (the API's, which calls
    this for ``target=NAME``): at the opset it loads; the ops it refuses lowered by their
    patterns (``lowerable``; repeated while a pattern writes ops it refuses too), and those it
    runs right only in some probed cases too where that leaves nothing it refuses (not those a
    support table lists with a restriction); the values
    shapes decide folded (``fold="all"`` unless asked otherwise; ``"inner"``, all but the
    model's outputs, where the runtime gives no constant output). Returns the
    :class:`lowering.LoweringResult`; raises :class:`TargetRefused` listing every node left
    that the runtime refuses."""
    profile = load_profile(name) if isinstance(name, str) else name
    asked = set(options.pop("ops", None) or ())
    strict = options.pop("strict", False)  # (for the ops asked for, not those the target chose)
    if options.get("fold") is None:  # (an output folded to a constant is one rknn gives none of)
        loses_constants = isinstance(profile, RuntimeProfile) and CONSTANT_OUTPUT in profile.unfed
        options["fold"] = "inner" if loses_constants else "all"
    model_opset = schemas.default_opset(model.opset_import) or 1
    given = options.pop("target_opset", None)
    first = given if given is not None else profile.opset_for(model_opset)
    # What it runs right only in some probed cases is lowered too, where that leaves nothing it
    # refuses. A table's restriction (TensorRT's "bidirectional LSTM: ...") is text no one
    # checks here against the node: such an op keeps the runtime's own kernel.
    partly_too = not isinstance(profile, TableProfile)

    def lowered_at(opset: int):
        target_opset = opset if opset != model_opset else None
        try:
            return _lowered_for(model, profile, opset, asked, partly_too, lower_model, lowerable, target_opset, options)
        except TargetRefused:
            if not partly_too:
                raise
            return _lowered_for(model, profile, opset, asked, False, lower_model, lowerable, target_opset, options)

    try:
        result = lowered_at(first)
    except ConversionRefused as refusal:
        # (a pattern may write ops the runtime refuses at one opset and not at another:
        # LayerNormalization's body writes ReduceMean-18 at 18, ReduceMean-13 at 17)
        interface_only = isinstance(refusal, TargetRefused) and all(
            b.op_type in INTERFACE_FINDINGS for b in refusal.blockers
        )
        elsewhere = given is None and not interface_only  # (no opset changes the model's inputs and outputs)
        others = [o for o in opsets_for_target(model, profile, lowerable) if o != first] if elsewhere else []
        refusals = [refusal]
        few = sum(1 for _ in _every_node(model)) <= FEW_NODES
        for opset in _opsets_to_try(others, refusal.blockers, first, every=few):
            try:
                result = lowered_at(opset)
            except TargetRefused as other:
                refusals.append(other)
                continue
            except LoweringError:  # (that opset cannot be reached either)
                continue
            if any(map(_never_tried, check_model(result.model, profile, opset, lowerable))):
                continue  # (a refused node traded for one of a version never probed, of an op that ran right at none)
            if not _control_flow_op_types(result.model) - _control_flow_op_types(model):
                break
        else:  # (the refusal of fewest blockers is said: the first where they tie or it is no target's)
            if not isinstance(refusal, TargetRefused):
                raise refusal from None
            raise min(refusals, key=lambda each: len(each.blockers)) from None
    result.report.swept.update(swept_notes(model, profile, model_opset))
    left = [entry for entry in result.report.remaining if entry.op_type in asked]
    if strict and left:
        raise IncompleteLowering(left)
    return result


def _lowered_for(model, profile, opset, asked, partly_too: bool, lower_model, lowerable, target_opset, options):
    """The rounds of :func:`lower_for_target`: lower what the profile refuses (and, with
    ``partly_too``, what it runs right only in some cases: tract's Attention without softcap)
    where a pattern can, until nothing new is to be lowered."""
    ops: set[str] = set(asked)
    kinds = (REFUSED, PARTLY, DOUBTFUL) if partly_too else (REFUSED,)
    options = dict(options)  # (a second call, without partly, takes the caller's retyping too)
    retypings = dict(parse_retypings(options.pop("retype", None)))
    retyping_given = bool(retypings)  # (the caller's retyping is kept as given)
    for _ in range(MOST_LOWERING_ROUNDS):
        tried = set(ops)  # (the ops whose patterns this round's result ran)
        result = lower_model(model, ops=sorted(ops), target_opset=target_opset, retype=retypings or None, **options)
        result.model, forms_chosen = choose_forms(
            result.model, form_judge(result.model, profile, opset), opset, model_forms_taken(profile.model_forms)
        )
        result.report.forms.update(forms_chosen)
        if profile.ir_version is not None and result.model.ir_version > profile.ir_version:
            if declare_ir_version_at_most(result.model, profile.ir_version):
                _check_declared(result.model)
        findings = check_model(result.model, profile, opset, lowerable)
        blockers = [f for f in findings if f.blocks]
        # (not an op whose rule takes no node of the form found: asked for, it would stop the
        # patterns that write it in another form, as GridSample's writes a Max of two)
        fixable = {
            f.op_type
            for f in findings
            if f.verdict.kind_for_choices in kinds and f.op_type in lowerable and not f.declined
        }
        retypes = (
            {}
            if retyping_given
            else {f.retype[0]: f.retype[1] for f in blockers if f.retype and f.op_type not in fixable}
        )
        if not fixable - ops and not set(retypes.items()) - set(retypings.items()):
            if not blockers:
                result.report.partly.update(_partly_kept(findings))
                return result
            raise TargetRefused(_patterns_left_said(blockers, result.report.remaining, tried), profile.name)
        ops |= fixable
        retypings.update({wide: narrow for wide, narrow in retypes.items() if wide not in retypings})
    raise TargetRefused(_patterns_left_said(blockers, result.report.remaining, tried), profile.name)


def _patterns_left_said(blockers: list[Finding], remaining: list[RemainingOp], tried: set[str]) -> list[RemainingOp]:
    """The refusal's entries of ``blockers``: a node of an op whose pattern ran (among ``tried``)
    and left it is said so, not as the fix :func:`check_model` foresees ("lowered by its
    pattern": BitCast's pattern takes no float to an integer), in the report's words where they
    are known for that node (``remaining``, by op and node name: one reason however many nodes
    share the name; a node the report names by position, by op, where all such were left alike)."""
    named: dict[tuple[str, str], set[str]] = {}
    by_position: dict[str, set[str]] = {}
    for entry in remaining:
        if entry.node.startswith("#"):
            by_position.setdefault(entry.op_type, set()).add(entry.reason)
        else:
            named.setdefault((entry.op_type, entry.node), set()).add(entry.reason)
    said = []
    for f in blockers:
        if f.op_type in tried and f.fix and f.fix.startswith(PATTERN_FIX):
            reasons = named.get((f.op_type, f.node)) if f.node else by_position.get(f.op_type)
            why = f": {next(iter(reasons))}" if reasons and len(reasons) == 1 else ""
            f = dataclasses.replace(f, fix=f"its pattern (--ops {f.op_type}) left it{why}")
        said.append(f.as_remaining())
    return said


def swept_notes(model: onnx.ModelProto, profile, opset: int) -> dict[str, str]:
    """Per op version and element type of ``model``'s nodes (the versions in force at ``opset``,
    the model's own: the sweep files each model under its export's versions), as
    ``"OneHot-28 on INT64"``: what the profile's recorded sweep found the runtime still failing or
    getting wrong after --target on probed cases of it (:func:`_swept_said`); only those it found.
    (What it found of cases onnx-lower refused is said of a refused node only.)"""
    if isinstance(profile, TableProfile) or not profile.swept.get("not_right"):
        return {}
    types = inferred_types(model)
    notes = {}
    for _, node, _ in _every_node(model):
        version = schemas.version_in_force(node.op_type, opset) if node.domain in ("", "ai.onnx") else None
        if version is None:
            continue
        type_name = element_type_name(node, types)
        said = _swept_said(profile, node.op_type, version, type_name)
        if said:
            notes[f"{node.op_type}-{version}" + (f" on {type_name}" if type_name else "")] = said
    return notes


def _partly_kept(findings: list[Finding]) -> Counter:
    """The nodes left that the runtime runs right only in some probed cases, per op version and
    type ("Equal-13 on INT64"; "... (wrong only on integers past 2^24)" where such values are all it
    gets wrong, "... (wrong only on float values the backend's cases lack)" likewise)."""
    kept: Counter = Counter()
    for f in findings:
        if f.of_a_node and f.verdict.kind == PARTLY:
            on = f" on {f.element_type}" if f.element_type else ""
            past = f" (wrong only on {f.verdict.wrong_values})" if f.verdict.only_on_values else ""
            kept[f"{f.op_type}-{f.version}{on}{past}"] += 1
    return kept


def form_judge(model: onnx.ModelProto, profile, opset: int, types=None, sources=None) -> FormJudge:
    """The :class:`FormJudge` of ``model`` at ``opset`` against ``profile`` (``types``,
    ``sources``: the model's inferred types and :func:`value_sources`, where known)."""
    types = inferred_types(model) if types is None else types
    fed, constant = value_sources(model) if sources is None else sources
    return FormJudge(profile, opset, types, frozenset(fed), frozenset(constant),
                     frozenset(constants_given_by_nodes(model, constant)))  # fmt: skip


def _inputs_named_alike(op_type: str, written_at: int, opset: int) -> bool:
    """Whether onnx.defs names the op's inputs the same at the two opsets (Resize-10's second
    input is its scales, Resize-11's its roi: a node's form, read at the one, and its values,
    read at the other, would be of different inputs)."""
    schemas_at = [
        schemas.schema_in_force(op_type, schemas.version_in_force(op_type, at) or 0) for at in (written_at, opset)
    ]
    names = [[i.name for i in schema.inputs] if schema is not None else None for schema in schemas_at]
    return names[0] is not None and names[0] == names[1]


def _opset_of(function: onnx.FunctionProto, model_opset: int) -> int:
    """The default-domain opset a local function's nodes are written at (its own import, else
    the model's)."""
    return schemas.default_opset(function.opset_import) or model_opset


def _every_node_in_scope(model: onnx.ModelProto):
    """As :func:`_every_node`, with the constants in scope at each node (a graph input of the
    same name as an outer constant hides it) and the nodes of its own graph by output name."""
    constants_at, producers_at = constants_in_scope(model), producers_in_graph(model)
    for graph_name, node, function in _every_node(model):
        yield graph_name, node, function, constants_at(node), producers_at(node)


def _every_node(model: onnx.ModelProto):
    """(graph name, node, its local function or None) for the main graph's nodes, the graphs
    they hold, and local functions'."""

    def walk(graph_name, nodes, function):
        for node in nodes:
            yield graph_name, node, function
            for _, _, inner in held_graphs(node):
                yield from walk(inner.name, inner.node, function)

    yield from walk(model.graph.name, model.graph.node, None)
    for function in model.functions:
        yield from walk(f"function {function.domain}.{function.name}", function.node, function)
