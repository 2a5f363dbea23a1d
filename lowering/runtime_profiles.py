"""Runtime profiles: what a real runtime loads, runs and gets right, as data probed from it
(``targets/probe.py`` runs every single-op ONNX backend node case through the runtime and
records each case's op, op version, element type and verdict), or, for a runtime that cannot
run here, read from its published support table (``targets/read_table.py``; a
:class:`TableProfile`). Nothing here is typed by hand: each profile is a JSON file in
``lowering/target_profiles/`` that names its source.

A (op, version, element type) the profile saw is ``supported`` where every case of it ran
right, ``partly`` where some did (the others depend on attributes), and refused where none did
(the runtime failed, crashed, hung or gave other outputs than the case expects, and than
onnxruntime gives where it misses them too: :data:`AS_ONNXRUNTIME`). One it did not
see is ``unverified`` where the op ran right at another version or type, or the version was
never probed (the cases reach back to opset 7 only), and refused where that version was probed
and no case of it ran right on any type. A node is refused too where every case fed the most
of what it is fed failed, whatever their attributes, and some case ran right (what is fed
decides: onnx2torch's Conv fed its weights).

Some cases hold a kind of value beside their form (:mod:`lowering.value_kinds`: negative
indices, a Resize that shrinks an axis). A node partly right because the cases of one kind alone
are not right is partly on that kind; one known to hold a kind is judged by the cases of that
kind (``holding``), one known to hold none by the others (``free_of``). A kind an op's parameters
hold (:data:`value_kinds.PARAMETER_KINDS`: a Resize's scales below 1) is what the node computes,
not the data it computes on: a node not known free of it is refused where its cases of it are
wrong, not partly (onnx2torch's nearest Resize fed its scales). Where no kind tells its
cases apart, a node fed at run time an input that sets its parameters is refused where some of
its nearest cases, fed it too, are wrong and right with it constant: its values are not known
(rknn's Unsqueeze fed axes).

A probed profile may also record ``model_forms``: per form of :mod:`lowering.target_forms` made
of a whole model, the corpus models the runtime ran right with it and not without (``better``)
and those the other way (``worse``), as the sweep's trials found them
(``targets/run_sweep.py --record-forms``), and what the sweep found the runtime still fails or
gets wrong after ``--target`` (``swept``: ``targets/run_sweep.py --record-sweep``, with the
onnx-lower commit that made those models).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnx import TensorProto

from . import schemas
from .node_forms import NodeForm, case_forms, nearest_cases, parameters_fed, unmatched
from .value_kinds import KINDS, PARAMETER_KINDS, cases_of_values, judges_only_free_of

PROFILES = Path(__file__).resolve().parent / "target_profiles"

SUPPORTED, PARTLY, UNVERIFIED, REFUSED = "supported", "partly", "unverified", "refused"
# a case's verdict where the runtime takes none of some feed or output of it at its interface,
# whatever the op (its detail begins with what: RANK_0_INPUT, CONSTANT_OUTPUT, rknn's simulator)
UNFED = "unfed"
RANK_0_INPUT = "0-d input"
CONSTANT_OUTPUT = "constant output"  # (lowering.constant_outputs: one the runtime finds constant at its build)
# a case's verdict where the runtime missed the expected outputs where onnxruntime misses them
# too, and matched onnxruntime's, or (onnxruntime's miss mere rounding) missed them by no more
# than onnxruntime (targets/probe.py's as_onnxruntime: a float32 DFT's sums): right, for what
# onnx-lower promises is onnxruntime's meaning
AS_ONNXRUNTIME = "right as onnxruntime"
# every case nearest the node's form failed, but none shares an attribute value or input type of
# the node (no case casts to int64), and some case of the op version (of any type) ran right:
# not refused, lowered where a pattern can, as partly
DOUBTFUL = "doubtful"
INPUT_CASE = "input_"  # (input_TYPE_RANKd, targets/prepare_cases.py: an Identity of one graph input of that kind)
# (output_KIND, targets/prepare_cases.py: a graph output of that kind; output_constant_empty: of no
# elements, from constants alone; output_fed_empty: of no elements, from a fed value)
OUTPUT_CASE = "output_"
EMPTY_CONSTANT_OUTPUT = "constant_empty"
EMPTY_FED_OUTPUT = "fed_empty"
CORPUS_CASE = "corpus_"  # (the name of a case targets/prepare_cases.py made of a real export's node)
# (the name of a case of integers past 2^24, 2^31 or 2^53 that targets/prepare_cases.py made beside
# one of small values: a runtime computing int32 through float32 or narrowing int64 to int32 fails
# those alone; the ops the patterns of such ops write, the comparisons (LessOrEqual's Less, Equal
# and Or), are wrong there too, so lowering does no better: tests/test_target_lowering.py checks it
# of every shipped profile)
WIDE_CASE = "wide_"
SMALL_CASE = "small_"  # (the same op, version, type and form as a WIDE_CASE, of small values)
# (the name of a case of a float op fed every class of IEEE 754 value and values spread over every
# binade that targets/prepare_cases.py made: a runtime computing double as float, dividing by the
# reciprocal, taking fmod through a float32 quotient or comparing NaN as greater is wrong there
# alone, and so are the ops a pattern writes instead; such a case judges a node of its form
# (OpenVINO flushes a constant's subnormals, not a fed value's) by its values, and never chooses a
# form, an opset or a lowering)
IEEE_CASE = "ieee_"
# (a case with every input but the first an initializer holding its value, targets/prepare_cases.py)
CONSTANT_TWIN = "#constant"
STATED_TWIN = "#stated"  # (a case with the int and string attributes its twin leaves out stated at their defaults)
PAST_EDGES = "integers past 2^24"  # (what a runtime wrong only on WIDE_CASEs is wrong on)
IEEE_VALUES = "float values the backend's cases lack"  # (... only on IEEE_CASEs)


@dataclass(frozen=True)
class Verdict:
    """What a profile says of one (op, version, element type): ``kind`` (one of SUPPORTED,
    PARTLY, UNVERIFIED, REFUSED) and, where not supported, why, in the probe's words."""

    kind: str
    why: str = ""
    # refused because every case fed as the node is failed, of any attributes (see verdict)
    by_what_is_fed: bool = False
    # partly, and every case not right is of such values alone: PAST_EDGES (WIDE_CASE),
    # IEEE_VALUES (IEEE_CASE) or a kind of lowering.value_kinds; "" otherwise
    wrong_values: str = ""
    # unverified, its version never probed, and no case of the op's probed versions ran right
    no_version_ran_right: bool = False

    @property
    def only_on_values(self) -> bool:
        """Whether values alone are why it is partly (:attr:`wrong_values`)."""
        return bool(self.wrong_values)

    @property
    def only_past_edges(self) -> bool:
        """Whether integers past 2^24, 2^31 or 2^53 alone are why it is partly."""
        return self.wrong_values == PAST_EDGES

    @property
    def kind_for_forms(self) -> str:
        """The kind forms are chosen by: supported where only IEEE values are why it is partly
        (the probe's few forms of each op on them are no measure of which form a runtime gets
        them right in); its kind otherwise (a form whose nodes are right past the edges is
        better, one whose nodes are wrong there too is not)."""
        return SUPPORTED if self.wrong_values == IEEE_VALUES else self.kind

    @property
    def blocks(self) -> bool:
        return self.kind == REFUSED

    @property
    def kind_for_choices(self) -> str:
        """The kind that choosing what ``--target`` lowers goes by: supported where the runtime is
        wrong only on integers past the edges or on IEEE values, as the ops the patterns write
        instead are (the verdict still names them: ``check -v`` lists the node). Forms are chosen
        by :attr:`kind_for_forms`."""
        return SUPPORTED if self.patterns_wrong_too else self.kind

    @property
    def patterns_wrong_too(self) -> bool:
        """Whether the values alone it is wrong on would make the nodes a pattern writes instead
        wrong too (integers past the edges, IEEE values), so that no pattern is a fix; not
        negative indices, which a pattern's nodes may take none of (OneHot lowered to a
        comparison with a Range)."""
        return self.wrong_values in (PAST_EDGES, IEEE_VALUES)


@dataclass(frozen=True)
class RuntimeProfile:
    """One runtime's probed facts: the default-domain ``opsets`` it loads, per (op, version,
    element type name) the backend cases' verdicts (case name, verdict, detail), and the
    ``model_forms`` whole models ran better or worse with (see the module's docstring)."""

    name: str
    runtime: str
    runtime_version: str
    source: dict
    opsets: tuple[int, ...]
    cases: dict[tuple[str, int, str], list[tuple[str, str, str]]] = field(repr=False)
    model_forms: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)
    swept: dict = field(default_factory=dict, repr=False)
    ir_version: int | None = None  # the newest IR version it loads, where known (None: any)
    # per kind of feed or output it takes none of (RANK_0_INPUT, CONSTANT_OUTPUT), the probed cases
    # that showed it ("unfed")
    unfed: dict[str, list[str]] = field(default_factory=dict, repr=False)
    # per op version, the probed cases that lost a constant output of it (refused or dropped:
    # CONSTANT_OUTPUT): what the runtime does with that version is partly unobserved (a 0-d
    # input's unfed case has twins that feed another rank)
    constants_lost: dict[tuple[str, int], list[str]] = field(default_factory=dict, repr=False)
    # per (element type name, rank) of a graph input, the probed Identity of one such input (case
    # name, verdict, detail): whether the runtime takes that kind of input whatever the graph
    inputs: dict[tuple[str, int], tuple[str, str, str]] = field(default_factory=dict, repr=False)
    # per kind of graph output (EMPTY_CONSTANT_OUTPUT, EMPTY_FED_OUTPUT), the probed case of one
    # such output (case name, verdict, detail): whether the runtime gives that kind of output
    # whatever the graph
    outputs: dict[str, tuple[str, str, str]] = field(default_factory=dict, repr=False)

    @property
    def folded(self) -> dict[str, list[str]]:
        """Per op, the probed cases that lost a constant output of it, whatever the version."""
        found: dict[str, list[str]] = {}
        for (op_type, _), lost in self.constants_lost.items():
            found.setdefault(op_type, []).extend(lost)
        return {op_type: sorted(lost) for op_type, lost in found.items()}

    def input_not_taken(self, kind: str, rank: int) -> str | None:
        """Why the runtime takes no graph input of ``kind`` (an element type's name, "INT8", or an
        optional's, "optional(FLOAT)") and ``rank`` where its probe found an Identity of one fail,
        crash, hang or give it back wrong there and one run right of that kind at another rank,
        or of the tensor an optional holds at that rank (a kind it takes at no rank is the type's
        matter, judged by the nodes reading it); else None."""
        probed = self.inputs.get((kind, rank))
        if probed is None or probed[1] == "right":
            return None
        right = sorted(r for (k, r), (_, verdict, _) in self.inputs.items() if k == kind and verdict == "right")
        held = kind.removeprefix("optional(").removesuffix(")") if kind.startswith("optional(") else None
        name, verdict, detail = probed
        said = f"an Identity of one: {name}: {verdict}" + (f" ({detail})" if detail else "")
        if right:
            return f"{said}; {kind} right at rank{'s' if len(right) > 1 else ''} " + ", ".join(map(str, right))
        if held is not None and self.inputs.get((held, rank), ("", "", ""))[1] == "right":
            return f"{said}; {held} right at rank {rank} as a tensor"
        return None

    def output_not_given(self, kind: str) -> str | None:
        """Why the runtime gives no graph output of ``kind`` (:data:`EMPTY_CONSTANT_OUTPUT`,
        :data:`EMPTY_FED_OUTPUT`) where its probed case of one failed, crashed, hung or gave it
        wrong (OpenVINO 2024.6 crashes on an output of no elements computed from constants alone,
        and runs one from a fed value); None where it ran right, was
        unfed (the runtime takes no constant output at all: :data:`CONSTANT_OUTPUT` says so) or
        was not probed."""
        probed = self.outputs.get(kind)
        if probed is None or probed[1] in ("right", UNFED):
            return None
        name, verdict, detail = probed
        return f"{name}: {verdict}" + (f" ({detail})" if detail else "")

    def taking_forms(self, names: Iterable[str]) -> RuntimeProfile:
        """This profile with ``model_forms`` recording exactly the forms ``names`` better in a
        trial and none worse, as if its trials had found so: it takes those forms, no others."""
        found = {"better": ["trial"], "worse": [], "tried": ["trial"]}
        return dataclasses.replace(self, model_forms={name: found for name in sorted(names)})

    def took_rank_0_at(self, op_type: str, version: int, position: int) -> bool:
        """Whether some probed case of ``op_type``-``version`` (any type) fed a 0-d value at input
        ``position`` and ran right: the runtime took it, or dropped it unread (rknn drops
        Dropout's ratio outside training, though it takes no 0-d input it keeps)."""
        forms = case_forms()
        for (op, at, _), outcomes in self.cases.items():
            if (op, at) != (op_type, version):
                continue
            for case_name, verdict, _ in outcomes:
                form = forms.get(case_name)
                if verdict == "right" and form is not None and position in form.fed:
                    if dict(form.ranks).get(position) == 0:
                        return True
        return False

    def swept_not_right(self, op_type: str, version: int, type_name: str) -> list[tuple[str, str, str, list[str]]]:
        """The probed cases of (op, version, type) the sweep found the runtime still failing or
        getting wrong after --target: (case, what it did, its words, the op versions and types
        of the nodes --target kept there that the runtime computes wrong on some probed values)."""
        own = {case for case, _, _ in self.cases.get((op_type, version, type_name), [])}
        found = self.swept.get("not_right", {})
        return [(case, found[case]["after"], found[case]["why"], found[case].get("partly", []))
                for case in sorted(own & found.keys())]  # fmt: skip

    def swept_refused(self, op_type: str, version: int, type_name: str) -> list[tuple[str, dict]]:
        """The probed cases of (op, version, type) the sweep found onnx-lower refusing to make
        for the runtime: (case, what the profile keeps of it: blockers, words, and how the case
        fared with its parameters constant, where it was run so)."""
        own = {case for case, _, _ in self.cases.get((op_type, version, type_name), [])}
        found = self.swept.get("refused", {})
        return [(case, found[case]) for case in sorted(own & found.keys())]

    @functools.cached_property
    def _by_op(self) -> dict[str, list[tuple[int, str, list]]]:
        found = defaultdict(list)
        for (op, version, type_name), outcomes in self.cases.items():
            found[op].append((version, type_name, outcomes))
        return dict(found)

    @functools.cached_property
    def _stated_read_otherwise(self) -> dict[tuple[str, int], bool]:
        return {}  # (filled as asked: reads_stated_defaults_otherwise)

    def reads_stated_defaults_otherwise(self, op_type: str, version: int) -> bool:
        """Whether two probed cases of ``op_type``-``version`` on one type differ only in stating
        int or string attributes at their defaults or leaving them out, one right and the other
        not (onnx2torch's CumSum: ``reverse`` left out is read as 1)."""
        known = self._stated_read_otherwise
        if (op_type, version) not in known:
            forms, schema = case_forms(), schemas.schema_in_force(op_type, version)
            groups = []
            for _, _, outcomes in (entry for entry in self._by_op.get(op_type, []) if entry[0] == version):
                alike: dict[NodeForm, set[tuple[tuple, bool]]] = defaultdict(set)  # (the same form, stated)
                for case, verdict, _ in (o for o in outcomes if o[0] in forms):
                    alike[forms[case].with_defaults_stated(schema)].add((forms[case].attributes, verdict == "right"))
                groups += alike.values()
            known[op_type, version] = any(
                a != b and right != other for group in groups for a, right in group for b, other in group
            )
        return known[op_type, version]

    def kinds_with_defaults_stated(
        self, op_type: str, version: int, type_name: str, form: NodeForm
    ) -> tuple[str, str] | None:
        """The kinds of verdict on a node of ``form`` as it is and with the int and string
        attributes it leaves out stated at their defaults, judged by the cases nearest its form
        and by their ``#stated`` twins (each the same case, values and all, with those defaults
        stated: onnx2torch reads a CumSum's ``reverse`` left out as 1): supported where every
        one ran right, partly where some did, refused where none did; None where some nearest
        case has no twin or none is near. Cases of other values (integers past 2^24, IEEE
        values) are no measure of what stating a default does, so they are not counted here."""
        outcomes = [
            o for v, t, found in self._by_op.get(op_type, []) if v == version and t == type_name for o in found
            if not judges_only_free_of(o[0])  # (in-range twins judge a Cast known in range only)
        ]  # fmt: skip
        unstated = [o for o in outcomes if not o[0].endswith(STATED_TWIN)]  # (the node leaves them out)
        near = nearest_cases(unstated, form, schemas.schema_in_force(op_type, version)) if unstated else []
        verdicts = {case: verdict for case, verdict, _ in outcomes}
        twins = [verdicts.get(f"{case}{STATED_TWIN}") for case, _, _ in near]
        if not twins or None in twins:
            return None
        return _kind_of([verdict for _, verdict, _ in near]), _kind_of(twins)

    def _wrong_only_fed(
        self, op_type: str, not_right: list[tuple[str, str, str]], fed: list[int]
    ) -> list[tuple[str, str, str]]:
        """Those of ``not_right`` (cases of ``op_type``) computed wrong that feed the inputs at
        ``fed`` and whose twin given every input but the first as a constant
        (:data:`CONSTANT_TWIN`) ran right: the fed values are why."""
        if not fed:
            return []
        forms = case_forms()
        verdicts = {case: verdict for _, _, found in self._by_op.get(op_type, []) for case, verdict, _ in found}
        return [
            o for o in not_right
            if o[1] == "wrong" and o[0] in forms and set(fed) <= forms[o[0]].fed
            and verdicts.get(o[0] + CONSTANT_TWIN) == "right"
        ]  # fmt: skip

    def runs_at_all(self, op_type: str, version: int) -> bool | None:
        """Whether some probed case of ``op_type``-``version`` ran right, on any type and form;
        None where none was probed."""
        outcomes = [
            o for v, _, found in self._by_op.get(op_type, []) if v == version for o in found
            if not o[0].startswith(IEEE_CASE)  # (which judge values, not whether the op runs)
        ]  # fmt: skip
        return any(o[1] == "right" for o in outcomes) if outcomes else None

    def verdict(
        self,
        op_type: str,
        version: int,
        type_name: str,
        form: NodeForm | None = None,
        free_of: str = "",
        holding: str = "",
    ) -> Verdict:
        """What the probe says of ``op_type``-``version`` on ``type_name`` (an element type's
        name as onnx spells it, "FLOAT"; "" where unknown), from the cases nearest the node's
        ``form`` where it is given and some case is near it (:func:`node_forms.nearest_cases`),
        else from every case of that op version and type (unverified where all of those ran
        right, but none fed what the node is fed). ``free_of``: a kind of value
        (:mod:`lowering.value_kinds`, or :data:`PAST_EDGES` where every integer it is given lies
        within ±2^24) the node is known never to be given, whose cases say nothing of it (and
        the twins made free of it, :data:`value_kinds.IN_RANGE_TWIN`, which judge no other node);
        ``holding``: one it is known to be given, whose cases alone say what it does, where the
        op version and type has some."""
        seen = self._by_op.get(op_type)
        absent = cases_of_values().get(free_of, frozenset())

        def of_values_not_given(case: str) -> bool:
            return (
                case in absent
                or (free_of == PAST_EDGES and case.startswith(WIDE_CASE))
                or judges_only_free_of(case) not in ("", free_of)  # (an in-range twin, for a Cast known in range)
            )

        if seen is not None:  # (the IEEE cases judge values, never a form: _wrong_on_values)
            seen = [
                (v, t, [o for o in found if not o[0].startswith(IEEE_CASE) and not of_values_not_given(o[0])])
                for v, t, found in seen
            ]
            seen = [(v, t, found) for v, t, found in seen if found]
        if not seen:
            return Verdict(UNVERIFIED, f"no single-op backend case of {op_type} was probed")
        exact = [o for v, t, outcomes in seen if v == version and (t == type_name or not type_name) for o in outcomes]
        held = [o for o in exact if o[0] in cases_of_values().get(holding, frozenset())]
        if holding and not held:  # (cases of other values say nothing of the node's: not right, no more)
            others = self.verdict(op_type, version, type_name, form, free_of)
            if others.kind != SUPPORTED:
                return others
            return Verdict(UNVERIFIED, f"no probed case of {op_type}-{version} on {type_name or '?'} holds "
                           f"{holding}, as the node's constants do; the others: {others.why or 'right'}")  # fmt: skip
        exact = held or exact
        schema = schemas.schema_in_force(op_type, version)
        near = nearest_cases(exact, form, schema) if exact and form else []
        if exact and form and not near:  # (no case feeds what the node is fed: those fed most of it)
            refused = _refused_by_what_is_fed(exact, form)
            if refused is not None:
                return refused
        if exact and form and not near and all(o[1] == "right" for o in exact):
            # (every case holds constant an input the node is fed: tract's CumSum takes a constant axis only)
            return Verdict(UNVERIFIED, f"{op_type}-{version} on {type_name or '?'} ran right only with inputs the "
                           f"node is fed given as constants: {_said(exact)}")  # fmt: skip
        formed = f" nearest its form ({form.describe()})" if near and len(near) < len(exact) else ""
        every, exact = exact, near or exact
        unshared = unmatched(exact, form, schema) if exact and form else []
        if exact and not type_name and any(o[1] != "right" for o in exact):
            return Verdict(UNVERIFIED, f"the element type is unknown here; {op_type}-{version} is not right on "
                           f"every type probed, e.g. {_said([o for o in exact if o[1] != 'right'])}")  # fmt: skip
        if exact:
            right = [o for o in exact if o[1] == "right"]
            if len(right) == len(exact):
                every_case = [o for v, t, found in self._by_op[op_type]
                              if v == version and (t == type_name or not type_name) for o in found
                              if not of_values_not_given(o[0])]  # fmt: skip
                return _wrong_on_values(every_case, form, schema, bool(type_name)) or Verdict(SUPPORTED)
            if right:
                wrong = len(exact) - len(right)
                not_right = [o for o in exact if o[1] != "right"]
                past_edges = all(o[0].startswith(WIDE_CASE) for o in not_right)
                # (or every one not right of one kind of value: :mod:`lowering.value_kinds`)
                kind = next(
                    (k for k in KINDS if k != holding and all(o[0] in cases_of_values()[k] for o in not_right)), ""
                )
                which = " (each of integers past 2^24, 2^31 or 2^53)" if past_edges else ""
                which = f" (each with {kind})" if kind and not past_edges else which
                values = PAST_EDGES if past_edges else kind
                if values in PARAMETER_KINDS and all(o[1] == "wrong" for o in not_right):
                    # (not known free of it, and wrong on it: its cases judge it; a case failing to
                    # load, tract's "shape input is variable", says nothing of values)
                    return Verdict(REFUSED, f"{wrong} of {len(exact)} cases{formed} not right{which}, which its "
                                   f"parameters, not known here, may hold, e.g. {_said(not_right)}",
                                   wrong_values=values)  # fmt: skip
                fed = parameters_fed(form, schema) if form and near else []
                implicated = self._wrong_only_fed(op_type, not_right, fed) if not values else []
                if implicated:
                    # (cases alike in form, fed its parameters as the node is, right on some of their
                    # values and wrong on others, right with them constant: rknn's Unsqueeze fed axes
                    # [0] and [1])
                    named = ", ".join(schemas.formal_input(schema, position).name for position in fed)
                    return Verdict(REFUSED, f"{wrong} of {len(exact)} cases{formed} not right, fed its {named} at "
                                   f"run time as the node is, and right given them as constants: which values the "
                                   f"runtime gets wrong fed is not known, nor the node's, e.g. "
                                   f"{_said(implicated)}")  # fmt: skip
                return Verdict(PARTLY, f"{wrong} of {len(exact)} cases{formed} not right{which}, e.g. "
                               f"{_said(not_right)}", wrong_values=values)  # fmt: skip
            said = (
                f"{len(exact)} case{'s' if len(exact) > 1 else ''}{formed}: {_said(exact)}" if formed else _said(exact)
            )
            if unshared and any(o[1] == "right" for v, _, outcomes in seen if v == version for o in outcomes):
                refused = _refused_by_what_is_fed(every, form)  # (onnx2torch's Conv fed its weights, any group)
                if refused is not None:
                    return refused
                return Verdict(DOUBTFUL, f"no case right, none with its {', '.join(unshared)}: {said}")
            # (where no case of the version ran right on any type, its attributes are not why:
            # onnx2torch implements no Cast-25, whatever its to)
            if all(o[1] == "wrong" and o[0].startswith(CORPUS_CASE) for o in exact):
                # (rknn's float16 on an attention mask's -3.4e38 says nothing of a residual Add; a
                # pattern's node, lowered_*, is fed a backend case's ordinary values: not so)
                return Verdict(DOUBTFUL, f"wrong only on a real export's own values, which says nothing of others: "
                               f"{said}")  # fmt: skip
            return Verdict(REFUSED, said)
        at_version = [(t, o) for v, t, outcomes in seen if v == version for o in outcomes]
        if (
            at_version
            and not any(o[1] == "right" for _, o in at_version)
            and (op_type, version) not in self.constants_lost
        ):
            # (a runtime implements an op version or not: onnx2torch has no Split-18, on any type;
            # not known so where cases of it were unfed: rknn's Constant-13 of one output alone)
            probed = ", ".join(sorted({t or "?" for t, _ in at_version}))
            return Verdict(REFUSED, f"{op_type}-{version} on {type_name or '?'} not probed; no case of it ran right "
                           f"on {probed}, e.g. {_said([o for _, o in at_version])}")  # fmt: skip
        refused = _refused_by_what_is_fed([o for _, o in at_version], form) if at_version and form else None
        if refused is not None:  # (on the types probed: onnx2torch's Conv fed its weights, on float16 too)
            return refused
        ran_right = sorted({(v, t) for v, t, outcomes in seen if any(o[1] == "right" for o in outcomes)})
        if ran_right:
            shown = ", ".join(f"{op_type}-{v} on {t or '?'}" for v, t in ran_right[:4])
            return Verdict(UNVERIFIED, f"{op_type}-{version} on {type_name or '?'} not probed; ran right: {shown}")
        any_case = [o for _, _, outcomes in seen for o in outcomes]
        if version not in {v for v, _, _ in seen}:  # (a version older than any probed: 1 of GlobalAveragePool-1)
            probed = ", ".join(str(v) for v in sorted({v for v, _, _ in seen}))
            why = f"{op_type}-{version} not probed; no case of versions {probed} ran right, e.g. {_said(any_case)}"
            unseen = any((op_type, v) in self.constants_lost for v, _, _ in seen)  # (some unfed: not seen to fail)
            return Verdict(UNVERIFIED, why + ("; others were unfed" if unseen else ""), no_version_ran_right=not unseen)
        if (op_type, version) in self.constants_lost:  # (its other cases unfed: what it does there is not seen)
            why = f"{op_type}-{version} on {type_name or '?'} not seen to run: its cases were unfed (the runtime takes "
            why += "no model of their interface) or failed"
            return Verdict(UNVERIFIED, f"{why}, e.g. {_said(any_case)}")
        return Verdict(REFUSED, f"no case of {op_type} ran right, e.g. {_said(any_case)}")

    def opset_for(self, model_opset: int) -> int:
        """The default-domain opset a model of ``model_opset`` goes to: its own where the runtime
        loads it, else the nearest the runtime loads (the newest below, or the oldest above)."""
        return _opset_for(self.opsets, model_opset)

    def opset_verdict(self, model_opset: int) -> Verdict:
        """Whether the runtime loads default-domain opset ``model_opset`` at all."""
        if model_opset in self.opsets:
            return Verdict(SUPPORTED)
        shown = f"{min(self.opsets)}-{max(self.opsets)}" if self.opsets else "none"
        return Verdict(REFUSED, f"the runtime loads default-domain opsets {shown}, not {model_opset}")

    def describe(self) -> str:
        counts = defaultdict(int)
        for outcomes in self.cases.values():
            for _, verdict, _ in outcomes:
                counts[verdict] += 1
        total = ", ".join(f"{counts[k]} {k}" for k in sorted(counts))
        span = f"opsets {min(self.opsets)}-{max(self.opsets)}" if self.opsets else "no opset loaded"
        return f"{self.runtime} {self.runtime_version}: {span}; backend cases {total} ({self.source.get('kind', '?')})"


def _refused_by_what_is_fed(outcomes: list[tuple[str, str, str]], form: NodeForm) -> Verdict | None:
    """Refused where every case fed at run time the most of what the node is fed failed, of any
    attributes, and some case ran right (:func:`_fed_alike_never_right`); else None."""
    fed_alike = _fed_alike_never_right(outcomes, form)
    if not fed_alike:
        return None
    fed = sorted(case_forms()[fed_alike[0][0]].fed)
    why = f"no case fed its inputs {fed} as the node is ran right, of any attributes"
    return Verdict(REFUSED, f"{why}, and some given them otherwise did: {_said(fed_alike)}", True)


def _fed_alike_never_right(outcomes: list[tuple[str, str, str]], form: NodeForm) -> list[tuple[str, str, str]]:
    """The ``outcomes`` whose cases feed at run time the most of the inputs the node is fed and
    nothing else (those it feeds, where any case does), where none of those ran right and some
    case did: what is fed decides, not the attributes (empty otherwise). A Conv fed its bias too
    is judged by the cases fed x and its weights."""
    forms = case_forms()
    known = [(o, forms[o[0]].fed) for o in outcomes if o[0] in forms]
    within = [(o, fed) for o, fed in known if fed <= form.fed]
    if not within or not any(o[1] == "right" for o, _ in known):
        return []
    most = max(len(fed) for _, fed in within)
    alike = [o for o, fed in within if len(fed) == most]
    return alike if most > 0 and not any(o[1] == "right" for o in alike) else []


def _opset_for(opsets: tuple[int, ...], model_opset: int) -> int:
    if model_opset in opsets or not opsets:
        return model_opset
    below = [o for o in opsets if o < model_opset]
    return max(below) if below else min(opsets)


@dataclass(frozen=True)
class TableProfile:
    """One runtime's published support table, as ``targets/read_table.py`` read it: the
    default-domain ``opsets`` it states (empty where it states none), and per op what the table
    says (``listed`` Y or N, onnx's element ``types`` or None where it names none, op
    ``versions`` as ranges or None, a ``restriction``; onnxruntime's kernel table gives the
    types per kernel, each kernel's ``versions`` and ``types`` in ``kernels``). An op the table
    lacks, or marks N, is refused; a listed op is supported at the versions and on the types
    listed (of the kernel of the node's version), ``partly`` where the table states a
    restriction (the restriction is the why)."""

    name: str
    runtime: str
    runtime_version: str
    source: dict
    opsets: tuple[int, ...]
    ops: dict[str, dict] = field(repr=False)
    unread: tuple[str, ...] = ()
    model_forms: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)  # (none: no trials)
    swept: dict = field(default_factory=dict, repr=False)  # (none: a table is not swept)
    ir_version: int | None = None  # the newest IR version it loads, where known (None: any)

    @property
    def table(self) -> str:
        """The table, as a verdict names it: ``docs/operators.md of onnx/onnx-tensorrt at release/10.1-GA``."""
        section = f" ({self.source['section']})" if self.source.get("section") else ""
        return f"{self.source.get('path')}{section} of {self.source.get('repo')} at {self.source.get('ref')}"

    def reads_stated_defaults_otherwise(self, op_type: str, version: int) -> bool:
        """False: a table says nothing of how an attribute is given."""
        return False

    def runs_at_all(self, op_type: str, version: int) -> bool | None:
        """Whether the table lists ``op_type``-``version`` as supported on some type."""
        return self.verdict(op_type, version, "").kind != REFUSED

    def verdict(
        self,
        op_type: str,
        version: int,
        type_name: str,
        form: NodeForm | None = None,
        free_of: str = "",
        holding: str = "",
    ) -> Verdict:
        """What the table says of ``op_type``-``version`` on ``type_name`` (onnx's name, "FLOAT";
        "" where unknown; a table says nothing of a node's ``form``, nor of values: ``free_of``,
        ``holding``)."""
        entry = self.ops.get(op_type)
        if entry is None:
            return Verdict(REFUSED, f"{op_type} is not in {self.table}")
        if entry["listed"] != "Y":
            return Verdict(REFUSED, f"{op_type} is marked {entry['listed']} (not supported) in {self.table}")
        types = entry.get("types")
        kernels = entry.get("kernels")  # (onnxruntime's table: each kernel's versions and types)
        if kernels is None and entry.get("versions") is not None:
            kernels = [{"versions": span} for span in entry["versions"]]
        if kernels is not None:
            held = [kernel for kernel in kernels if kernel["versions"][0] <= version
                    and (kernel["versions"][1] is None or version <= kernel["versions"][1])]  # fmt: skip
            if not held:
                return Verdict(REFUSED, f"{self.table} lists {op_type} at opsets {entry.get('table_versions')}, "
                               f"not {op_type}-{version}")  # fmt: skip
            types = held[0].get("types", types)  # (a kernel's own types, where the table gives them per kernel)
        if self.opsets and schemas.op_versions(op_type):
            in_force = {schemas.version_in_force(op_type, opset) for opset in self.opsets}
            if version not in in_force:
                shown = f"{min(self.opsets)}-{max(self.opsets)}"
                return Verdict(REFUSED, f"{op_type}-{version} is in force at none of opsets {shown}, "
                               f"which {self.table} states")  # fmt: skip
        if types:
            listed = f"{self.table} lists {op_type} on {', '.join(types)}"
            if not type_name:
                return Verdict(UNVERIFIED, f"the element type is unknown here; {listed}")
            if type_name not in types:
                first_input = "kernels" in entry  # (a kernel table's types are its first input's by reading)
                if not first_input and not _about_first_input(op_type, version, types):
                    return Verdict(UNVERIFIED, f"{listed}, none of which its first input takes (the types "
                                   f"are another tensor's), so {type_name} there is not judged")  # fmt: skip
                return Verdict(REFUSED, f"{listed}, not {type_name}")
        if entry.get("restriction"):
            return Verdict(PARTLY, f"{self.table}: {entry['restriction']}")
        return Verdict(SUPPORTED)

    def opset_for(self, model_opset: int) -> int:
        """As :meth:`RuntimeProfile.opset_for`, over the opsets the table states (none stated:
        the model's own)."""
        return _opset_for(self.opsets, model_opset)

    def opset_verdict(self, model_opset: int) -> Verdict:
        """Whether the table states default-domain opset ``model_opset`` (unverified where it
        states no opsets)."""
        if model_opset in self.opsets:
            return Verdict(SUPPORTED)
        if not self.opsets:
            return Verdict(UNVERIFIED, f"{self.table} states no opsets")
        stated = self.source.get("opsets_stated") or f"opsets {min(self.opsets)}-{max(self.opsets)}"
        return Verdict(REFUSED, f"{self.table} states: {stated!r}; not opset {model_opset}")

    def counts(self) -> dict[str, int]:
        """How many ops the table lists as supported, with a restriction (partly), and marks N."""
        listed = [entry for entry in self.ops.values() if entry["listed"] == "Y"]
        partly = sum(1 for entry in listed if entry.get("restriction"))
        return {SUPPORTED: len(listed) - partly, PARTLY: partly, REFUSED: len(self.ops) - len(listed)}

    def describe(self) -> str:
        counts = self.counts()
        span = f"opsets {min(self.opsets)}-{max(self.opsets)}" if self.opsets else "opsets not stated"
        commit = self.source.get("commit", "?")[:12]
        return (
            f"{self.runtime} {self.runtime_version}: {span}; table ops {counts[SUPPORTED]} supported, "
            f"{counts[PARTLY]} partly, {counts[REFUSED]} marked N (table: {self.table}, commit {commit})"
        )


def _about_first_input(op_type: str, version: int, types: list[str]) -> bool:
    """Whether a table's ``types`` can be those of the op's first input (what a node's element
    type is, here): some of them are types it takes. ConstantOfShape's input is always INT64:
    types of FLOAT only name its output's."""
    taken = schemas.input_element_types(op_type, version, 0) or schemas.output_element_types(op_type, version, 0)
    if not taken:
        return True
    return any(getattr(TensorProto, name, None) in taken for name in types)


def _wrong_on_values(
    outcomes: list[tuple[str, str, str]], form: NodeForm | None, schema: onnx.defs.OpSchema | None, typed: bool
) -> Verdict | None:
    """Partly right, only on values, where a node's nearest cases all ran right but some case of
    its op version and type, of whatever form, whose point is its values did not: the values
    decide, not the form (an int64 Less of a constant is narrowed to int32 as one of two fed
    inputs is; OpenVINO computes every double as a float). Those are the cases of integers past
    2^24, 2^31 or 2^53 (:data:`WIDE_CASE`) whose small twin ran right, else the IEEE cases
    (:data:`IEEE_CASE`) nearest the node's form that ran and gave other values (OpenVINO flushes
    a constant's subnormals to zero, not a fed input's), where the node's element type is known
    (``typed``: an int64 Div in a local function is not judged by float cases); None where
    neither is found. Only a case
    whose inputs are of the types the node's ``form`` states counts (Where's cases go by their
    condition's type: a float Where is not judged by an int64 one)."""
    forms, stated = case_forms(), dict(form.types) if form is not None else {}
    alike = [o for o in outcomes if o[0] not in forms or all(stated.get(i, t) == t for i, t in forms[o[0]].types)]
    wide = [o for o in alike if o[0].startswith(WIDE_CASE)]
    verdicts = {case: verdict for case, verdict, _ in outcomes}
    # (where its small twin ran right too: the values, not the op or its form, are why)
    not_right = [
        o for o in wide if o[1] != "right" and verdicts.get(SMALL_CASE + o[0].removeprefix(WIDE_CASE)) == "right"
    ]
    if not_right:
        return Verdict(PARTLY, f"right in the cases nearest its form; {len(not_right)} of {len(wide)} cases of "
                       f"integers past 2^24, 2^31 or 2^53 not right, e.g. {_said(not_right)}",
                       wrong_values=PAST_EDGES)  # fmt: skip
    ieee = [o for o in alike if o[0].startswith(IEEE_CASE)] if typed else []
    ieee = nearest_cases(ieee, form, schema) if ieee and form is not None else ieee
    wrong = [o for o in ieee if o[1] == "wrong"]  # (one that fails says nothing of values)
    if not wrong:
        return None
    return Verdict(PARTLY, f"right in the cases nearest its form; {len(wrong)} of {len(ieee)} cases of every class of "
                   f"float value (zeros, subnormals, extremes, infinities, NaN, far-apart magnitudes) not right, "
                   f"e.g. {_said(wrong)}", wrong_values=IEEE_VALUES)  # fmt: skip


def _kind_of(verdicts: list[str]) -> str:
    """Supported where every case ran right, partly where some did, refused where none did."""
    right = verdicts.count("right")
    return SUPPORTED if right == len(verdicts) else PARTLY if right else REFUSED


def _said(outcomes: list[tuple[str, str, str]]) -> str:
    case, verdict, detail = outcomes[0]
    return f"{case}: {verdict}" + (f" ({detail[:160]})" if detail else "")


@functools.cache
def profile_names() -> tuple[str, ...]:
    return tuple(sorted(path.stem for path in PROFILES.glob("*.json")))


@functools.cache
def load_profile(name: str) -> RuntimeProfile | TableProfile:
    """The profile called ``name`` (``onnx-lower --list-targets`` lists them)."""
    path = PROFILES / f"{name}.json"
    if name not in profile_names():
        from .errors import LoweringError

        known = ", ".join(profile_names()) or "none"
        raise LoweringError(f"no target called {name!r} (targets: {known})")
    return profile_from_data(json.loads(path.read_text()))


def input_kind_of_case(case_name: str) -> tuple[str, int]:
    """(kind, rank) of an input case: ``input_INT8_4d`` is ("INT8", 4), ``input_OPTIONAL_FLOAT_1d``
    ("optional(FLOAT)", 1)."""
    kind, _, rank = case_name.removeprefix(INPUT_CASE).rpartition("_")
    if kind.startswith("OPTIONAL_"):
        kind = f"optional({kind.removeprefix('OPTIONAL_')})"
    return kind, int(rank.removesuffix("d"))


def input_kind(type_proto: onnx.TypeProto) -> tuple[str, int] | None:
    """(kind, rank) of a graph input's type as :func:`input_kind_of_case` names them, where its
    rank is known: a tensor's or an optional tensor's; None for others."""
    optional = type_proto.HasField("optional_type")
    tensor_holder = type_proto.optional_type.elem_type if optional else type_proto
    if not tensor_holder.HasField("tensor_type") or not tensor_holder.tensor_type.HasField("shape"):
        return None
    tensor = tensor_holder.tensor_type
    name = onnx.helper.tensor_dtype_to_string(tensor.elem_type).removeprefix("TensorProto.")
    return (f"optional({name})" if optional else name), len(tensor.shape.dim)


def profile_from_data(data: dict) -> RuntimeProfile | TableProfile:
    """A profile from its JSON form (as targets/probe.py or, ``"kind": "table"``,
    targets/read_table.py writes it)."""
    if data.get("kind") == "table":
        return TableProfile(
            name=data["name"],
            runtime=data["runtime"],
            runtime_version=data["runtime_version"],
            source=data["source"],
            opsets=tuple(data["opsets"]),
            ops=data["ops"],
            unread=tuple(data.get("unread", ())),
            ir_version=data.get("ir_version"),
        )
    cases: dict[tuple[str, int, str], list] = defaultdict(list)
    unfed: dict[str, list[str]] = defaultdict(list)
    constants_lost: dict[tuple[str, int], list[str]] = defaultdict(list)
    inputs: dict[tuple[str, int], tuple[str, str, str]] = {}
    outputs: dict[str, tuple[str, str, str]] = {}
    loaded = set(data["opsets"])
    for case_name, entry in sorted(data["cases"].items()):
        if loaded and entry.get("opset") is not None and entry["opset"] not in loaded:
            continue  # (a case at an opset the runtime does not load says nothing of its op: rknn's at 20-23)
        if case_name.startswith(INPUT_CASE):  # (of a kind of input, not of Identity)
            verdict = "right" if entry["verdict"] == AS_ONNXRUNTIME else entry["verdict"]
            inputs[input_kind_of_case(case_name)] = (case_name, verdict, entry.get("detail", ""))
            continue
        if case_name.startswith(OUTPUT_CASE):  # (of a kind of output, not of its op)
            verdict = "right" if entry["verdict"] == AS_ONNXRUNTIME else entry["verdict"]
            outputs[case_name.removeprefix(OUTPUT_CASE)] = (case_name, verdict, entry.get("detail", ""))
            continue
        if entry["verdict"] == UNFED:  # (nor one it takes some feed of none of: rknn's 0-d inputs)
            unfed[entry.get("detail", "").partition(":")[0]].append(case_name)
            if entry.get("detail", "").startswith(CONSTANT_OUTPUT):  # (a Constant alone: never seen to run)
                constants_lost[entry["op"], int(entry["version"])].append(case_name)
            continue
        key = (entry["op"], int(entry["version"]), entry.get("type", ""))
        verdict = "right" if entry["verdict"] == AS_ONNXRUNTIME else entry["verdict"]
        cases[key].append((case_name, verdict, entry.get("detail", "")))
    return RuntimeProfile(
        name=data["name"],
        runtime=data["runtime"],
        runtime_version=data["runtime_version"],
        source=data["source"],
        opsets=tuple(data["opsets"]),
        cases=dict(cases),
        model_forms=data.get("model_forms", {}),
        swept=data.get("swept", {}),
        ir_version=data.get("ir_version"),
        unfed=dict(unfed),
        constants_lost=dict(constants_lost),
        inputs=inputs,
        outputs=outputs,
    )
