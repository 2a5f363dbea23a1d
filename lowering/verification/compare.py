"""Proving a lowered model equals its original: both run on inputs built to find wrong
rewrites (lowering.feeds), outputs compared bit for bit (NaN equals NaN)."""

from __future__ import annotations

import json
import math
import numbers
import os
import zipfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import onnx

from .. import floats, schemas
from ..conversion import version_steps
from ..errors import LoweringError
from ..modelio import checkable
from .feeds import Feed, FeedPlan, build_feeds, check_feeds, graph_inputs
from .runtime import OnnxruntimeRunner, ReferenceRunner


@dataclass
class OutputComparison:
    """One output over every run: how many values differ, and the first that does."""

    name: str
    compared: int = 0
    mismatches: int = 0
    first_run: int | None = None
    first_index: list[int] | None = None
    original_value: str | None = None
    lowered_value: str | None = None
    inputs_at_first: dict[str, str] = field(default_factory=dict)
    max_difference: float | None = None
    max_relative_difference: float | None = None  # |original - lowered| / |original| where they differ
    max_difference_run: int | None = None  # where the largest difference is
    max_difference_index: list[int] | None = None
    atol: float | None = None
    rtol: float | None = None

    @property
    def match(self) -> bool:
        return self.mismatches == 0

    def line(self) -> str:
        if self.match and not self.compared:
            return f"{self.name}: nothing compared (no values in any run)"
        if self.match:
            return f"{self.name}: match ({self.compared} values)"
        where = f"run {self.first_run}, index {tuple(self.first_index or ())}"
        inputs = ", ".join(f"{k}={v}" for k, v in self.inputs_at_first.items())
        difference = ""
        if self.max_difference is not None:
            relative = (
                f" (relative {self.max_relative_difference:g})" if self.max_relative_difference is not None else ""
            )
            at = (
                f" at run {self.max_difference_run}, index {tuple(self.max_difference_index or ())}"
                if self.max_difference_run is not None
                else ""
            )
            difference = f"; max difference {self.max_difference:g}{relative}{at}"
        return (
            f"{self.name}: {self.mismatches} of {self.compared} values differ{difference}; first at {where}: "
            f"original {self.original_value}, lowered {self.lowered_value}" + (f" (inputs {inputs})" if inputs else "")
        )


@dataclass
class VerifyReport:
    """Per output, match or where it differs; how each model was run; where inputs were saved."""

    outputs: list[OutputComparison]
    runs: int
    original_runner: str
    lowered_runner: str = "onnxruntime"
    inputs_file: str | None = None
    inputs_error: str | None = None  # why the inputs of a mismatch could not be saved
    outputs_file: str | None = None
    hints: list[str] = field(default_factory=list)  # what may explain a mismatch, and what to do
    feeds: list = field(default_factory=list, repr=False, compare=False)  # the inputs of every run

    @property
    def match(self) -> bool:
        return all(output.match for output in self.outputs)

    @property
    def nothing_compared(self) -> list[str]:
        """The outputs that held no value in any run: a match there proves nothing."""
        return [output.name for output in self.outputs if output.compared == 0]

    def lines(self) -> list[str]:
        lines = [
            f"original run by {self.original_runner}",
            f"lowered run by {self.lowered_runner}",
            f"{self.runs} run{'s' if self.runs != 1 else ''}",
        ]
        lines += [output.line() for output in self.outputs]
        verdict = "MATCH" if self.match else "MISMATCH"
        if self.nothing_compared:
            verdict += f" (nothing compared for {', '.join(self.nothing_compared)}: no values in any run)"
        lines.append(verdict)
        lines += [f"note: {hint}" for hint in self.hints]
        return lines

    def as_dict(self) -> dict:
        return {
            "match": self.match,
            "runs": self.runs,
            "original_runner": self.original_runner,
            "lowered_runner": self.lowered_runner,
            "nothing_compared": self.nothing_compared,
            "inputs_file": self.inputs_file,
            "inputs_error": self.inputs_error,
            "outputs_file": self.outputs_file,
            "hints": self.hints,
            "outputs": [{**asdict(o), "match": o.match} for o in self.outputs],
        }


def verify(
    original: onnx.ModelProto | str | os.PathLike,
    lowered: onnx.ModelProto | str | os.PathLike,
    *,
    seed: int = 0,
    samples: int | None = None,
    shapes: dict[str, list[int]] | None = None,
    value_ranges: dict[str, tuple[int, int]] | None = None,
    atol: float | dict[str, float] | None = None,
    rtol: float | dict[str, float] | None = None,
    inputs: list[Feed] | None = None,
    save_inputs: str | os.PathLike | None = None,
    save_outputs: str | os.PathLike | None = None,
    custom_op_libraries: tuple[str, ...] | list[str] = (),
    narrowed_inputs: dict[str, int] | None = None,
    retyped_io: bool = False,
) -> VerifyReport:
    """Run ``original`` and ``lowered`` on the same inputs and compare every output.

    Inputs come from :mod:`lowering.feeds` (edge values in every float input; integers in
    ``value_ranges[name]`` where given, else in [0, 4)) unless given. Comparison is bit for bit
    (NaN equals NaN) unless ``atol``/``rtol`` (one value, or one per output name) say otherwise.
    On a mismatch the inputs are saved to ``save_inputs``; ``save_outputs`` receives both models'
    outputs of every run (``run0/original/y``, ``run0/lowered/y``, ...). Ops of a domain
    onnxruntime does not know run with ``custom_op_libraries`` (onnxruntime custom op
    libraries); without them such a model is refused ("cannot verify").
    """
    original = _as_model(original)
    lowered = _as_model(lowered)
    original_names = [o.name for o in original.graph.output]
    if original_names != [o.name for o in lowered.graph.output]:
        raise LoweringError(
            f"the models' outputs differ: original {original_names}, lowered {[o.name for o in lowered.graph.output]}"
        )
    input_names = sorted(info.name for info in graph_inputs(original))
    if input_names != sorted(info.name for info in graph_inputs(lowered)):
        raise LoweringError(
            f"the models' inputs differ: original {input_names}, "
            f"lowered {sorted(info.name for info in graph_inputs(lowered))}"
        )
    for label, value in (("atol", atol), ("rtol", rtol)):
        check_tolerances(value, original_names, label)
    libraries = tuple(custom_op_libraries or ())
    if not libraries:
        for side, model in (("original", original), ("lowered", lowered)):
            _check_domains_known(model, side)
    retyped_io = retyped_io or _retyped_interface(original, lowered)
    generated = inputs is None
    if inputs is None:
        plan = FeedPlan(
            seed=seed,
            shapes=dict(shapes or {}),
            value_ranges=dict(value_ranges or {}),
            narrowed=dict(narrowed_inputs or {}),
        )
        if samples is not None:
            plan.runs = samples
        inputs = build_feeds(original, plan)
    else:
        check_feeds(original, inputs, "the given inputs")
    comparisons = [
        OutputComparison(name, atol=_per_output(atol, name), rtol=_per_output(rtol, name)) for name in original_names
    ]
    run_original_side = ModelRunner(original, "original", libraries)
    run_lowered_side = ModelRunner(lowered, "lowered", libraries)
    outputs: list[Feed] = []
    for run, feed in enumerate(inputs):
        try:
            want = run_original_side(feed, run)
        except LoweringError as error:
            hint = shape_hint(original, value_ranges) if generated else ""
            raise LoweringError(f"{error}{hint}") from None
        if retyped_io:
            got = run_lowered_side(_as_declared(feed, lowered), run)
            got = [_as_dtype_of(a, b) for a, b in zip(want, got, strict=True)]
        else:
            got = run_lowered_side(feed, run)
        for comparison, a, b in zip(comparisons, want, got, strict=True):
            _compare(comparison, a, b, run, feed)
        if save_outputs is not None:
            outputs.append(
                {
                    **{f"original/{n}": v for n, v in zip(original_names, want, strict=True)},
                    **{f"lowered/{n}": v for n, v in zip(original_names, got, strict=True)},
                }  # fmt: skip
            )
    report = VerifyReport(comparisons, len(inputs), run_original_side.how, run_lowered_side.how, feeds=inputs)
    if comparisons and len(report.nothing_compared) == len(comparisons):
        raise LoweringError(
            f"nothing was compared: no output held a value in any of {len(inputs)} runs "
            f"(inputs {describe_feed(inputs[0]) if inputs else 'none'}); a match would prove nothing"
        )
    if save_outputs is not None:
        save_feeds(save_outputs, outputs)
        report.outputs_file = os.fspath(save_outputs)
    if not report.match:
        report.hints += _mismatch_hints(report, comparisons)
    if not report.match and save_inputs is not None:
        try:
            save_feeds(save_inputs, inputs)
            report.inputs_file = os.fspath(save_inputs)
        except LoweringError as error:
            report.inputs_error = str(error)
    return report


def _retyped_interface(original: onnx.ModelProto, lowered: onnx.ModelProto) -> bool:
    """Whether ``lowered`` declares some graph input of ``original`` in the narrower type a
    retyping gives it (``--retype int64=int32 --retype-io``: int64 ids as int32). An output's
    type alone says nothing: a lowering that changed it is a mismatch."""
    from ..retyping import RETYPINGS  # (the retyping imports the verification's neighbours)

    narrow = _declared_input_types(lowered)
    return any(narrow.get(name) in RETYPINGS.get(wide, ()) for name, wide in _declared_input_types(original).items())


def _declared_input_types(model: onnx.ModelProto) -> dict[str, int]:
    """Per graph input of a tensor type, the element type it declares (where it declares one)."""
    return {
        info.name: info.type.tensor_type.elem_type
        for info in model.graph.input
        if info.type.WhichOneof("value") == "tensor_type" and info.type.tensor_type.elem_type
    }


def _as_declared(feed: Feed, model: onnx.ModelProto) -> Feed:
    """``feed`` with each array cast to the element type ``model`` declares for that input,
    where it declares another (a model retyped with ``retype_io``: int64 ids fed as int32)."""
    declared = _declared_input_types(model)
    cast = {}
    for name, value in feed.items():
        element_type = declared.get(name)
        if element_type and isinstance(value, np.ndarray) and value.dtype != floats.numpy_dtype(element_type):
            cast[name] = value.astype(floats.numpy_dtype(element_type))
    return {**feed, **cast} if cast else feed


def _as_dtype_of(want, got):
    """``got`` in ``want``'s element type where both are arrays of two types a retyping relates
    (an output retyped with ``retype_io``, int64 as int32, compared as the original's); any other
    type is left, a mismatch."""
    from ..retyping import RETYPINGS

    if not (isinstance(want, np.ndarray) and isinstance(got, np.ndarray)) or want.dtype == got.dtype:
        return got
    try:
        wide, narrow = (onnx.helper.np_dtype_to_tensor_dtype(a.dtype) for a in (want, got))
    except (KeyError, TypeError, ValueError):
        return got
    return got.astype(want.dtype) if narrow in RETYPINGS.get(wide, ()) else got


def _mismatch_hints(report: VerifyReport, comparisons: list[OutputComparison]) -> list[str]:
    """Where one side ran in onnx.reference and the other in onnxruntime, float outputs that
    differ by a little may be the two implementations' rounding, not the lowering."""
    reference = [side for side, how in (("original", report.original_runner), ("lowered", report.lowered_runner))
                 if how.startswith("onnx.reference")]  # fmt: skip
    if len(reference) != 1:
        return []
    small = [c.name for c in comparisons if not c.match and math.isfinite(c.max_difference or math.inf)]
    if not small:
        return []
    other = "lowered" if reference[0] == "original" else "original"
    return [
        f"the {reference[0]} model ran in onnx.reference and the {other} in onnxruntime, whose float math "
        f"(Tanh, Sigmoid, Exp, Erf, ...) can differ from onnx.reference's in the last bit; where the differences "
        f"({', '.join(small)}) are that small, compare with a tolerance: --atol 1e-6 or --rtol 1e-6 "
        "(atol=/rtol= in Python)"
    ]


def _known_domains() -> set[str]:
    """The op domains onnxruntime has kernels for (from its own registry)."""
    from onnxruntime.capi.onnxruntime_pybind11_state import get_all_opkernel_def

    return {kernel.domain for kernel in get_all_opkernel_def()} | set(schemas.DEFAULT_DOMAINS)


def _check_domains_known(model: onnx.ModelProto, side: str) -> None:
    """Refuse, before anything runs, a model using ops of a domain onnxruntime has no kernels
    for and the model defines no function for: it cannot run without a custom op library."""
    from ..opcount import count_ops

    local = {(function.domain, function.name) for function in model.functions}
    known = _known_domains()
    unknown: dict[str, list[str]] = {}
    for key in count_ops(model):
        if "." not in key:
            continue
        domain, _, op_type = key.rpartition(".")
        if domain not in known and (domain, op_type) not in local:
            unknown.setdefault(domain, []).append(op_type)
    if unknown:
        domain, op_types = sorted(unknown.items())[0]
        rest = sorted(unknown)[1:]
        others = f" (and domain{'s' if len(rest) > 1 else ''} {', '.join(rest)})" if rest else ""
        raise LoweringError(
            f"cannot verify: the {side} model uses ops of domain '{domain}' ({', '.join(sorted(op_types))}){others}, "
            "which onnxruntime has no kernels for; give the onnxruntime custom op library that implements them "
            "with --custom-op-library LIB.so (custom_op_libraries= in Python)"
        )


def shape_hint(model: onnx.ModelProto, value_ranges: dict[str, tuple[int, int]] | None = None) -> str:
    """``; input 'shape' looks like a shape (...)``: integer inputs that a node reads as a shape,
    sizes, axes, indices or the like, for which the generated integers (in [0, 4), or the range
    ``value_ranges`` gives the input) may not do."""
    found = shape_like_inputs(model)
    if not found:
        return ""
    ranges = value_ranges or {}

    def generated(name: str) -> str:
        if name in ranges:
            low, high = ranges[name]
            return f"integers from {low} to {high} (--value-range)"
        return "integers in [0, 4)"

    named = ", ".join(f"'{name}' (read by {where}; {generated(name)})" for name, where in found.items())
    first = next(iter(found))
    return (
        f"; input {named} looks like a shape, sizes, axes or indices, for which verify generated those values: give "
        f"its values with --inputs FILE.npz (arrays named after the inputs) or a range with --value-range {first}:LO,HI"
    )


# Formal input names (onnx.defs) under which an integer input holds a shape or axis numbers.
_SHAPE_LIKE_FORMALS = frozenset({"shape", "repeats", "sizes", "axes", "pads", "split", "starts", "ends", "steps", "K"})
# The ops whose "indices" past the data fail (token ids past a vocabulary of 2 rows, Gather's);
# OneHot's give zeros
_INDEXING_OPS = frozenset({"Gather", "GatherElements", "GatherND"})


def shape_like_inputs(model: onnx.ModelProto) -> dict[str, str]:
    """Integer graph inputs a main-graph node reads as a shape, sizes, axes, pads, indices or the like:
    name → ``Expand input 'shape'``."""
    integer_inputs = {
        info.name
        for info in graph_inputs(model)
        if info.type.WhichOneof("value") == "tensor_type"
        and np.dtype(floats.numpy_dtype(info.type.tensor_type.elem_type)).kind in "iu"
    } if graph_inputs(model) else set()  # fmt: skip
    found: dict[str, str] = {}
    opset = schemas.default_opset(model.opset_import)
    if not integer_inputs or opset is None:
        return found
    for node in model.graph.node:
        if node.domain not in schemas.DEFAULT_DOMAINS:
            continue
        try:
            formals = schemas.schema_in_force(node.op_type, opset, node.domain).inputs
        except Exception:
            continue
        for index, name in enumerate(node.input):
            if name not in integer_inputs or name in found or not formals:
                continue
            formal = formals[min(index, len(formals) - 1)].name
            indexing = formal == "indices" and node.op_type in _INDEXING_OPS
            if formal in _SHAPE_LIKE_FORMALS or indexing or node.op_type == "ConstantOfShape":
                found[name] = f"{node.op_type} input '{formal}'"
    return found


# What onnxruntime says where its kernel exists but not for this case: a lack of support, not a
# bad model (its RNN, GRU and LSTM kernels take no layout 1; GRU and LSTM take no double).
ONNXRUNTIME_UNSUPPORTED = (
    "Batchwise recurrent operations (layout == 1) are not supported",
    "does not support double yet",
)
# What onnxruntime fails that the spec defines, counted as a lack of support on the original's
# side only (it then runs in onnx.reference): a lowered model onnxruntime fails so must not pass.
ONNXRUNTIME_FAILS_THE_ORIGINAL = (
    "is not defined for empty set with bool type",  # ReduceMax/ReduceMin of no bool (the spec: False / True)
)


def onnxruntime_lacks_support(error: BaseException) -> bool:
    """Whether onnxruntime refused or failed for lack of support: no kernel (NotImplemented), or
    a kernel saying the case is one it does not support (:data:`ONNXRUNTIME_UNSUPPORTED`)."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    return isinstance(error, OrtNotImplemented) or any(phrase in str(error) for phrase in ONNXRUNTIME_UNSUPPORTED)


class ModelRunner:
    """Runs one side of a comparison, the same way for the original and the lowered model:
    onnxruntime; where it has no kernel, onnxruntime on the model declared at the nearest
    opset at which every op of the model means the same (onnx.defs: only type lists changed);
    failing that, onnx.reference. ``how`` says which, and why."""

    def __init__(self, model: onnx.ModelProto, side: str, libraries: tuple[str, ...] = ()) -> None:
        self.model, self.side, self.libraries = model, side, tuple(libraries)
        self.missing: str | None = None  # onnxruntime's complaint about the model as it is
        self._ways = self._candidates()
        self.how = ""
        self._run = None
        self._next_way()

    def _candidates(self):
        yield "onnxruntime", lambda: _onnxruntime_runner(self.model, self.libraries)
        for other, redeclared in _same_meaning_redeclarations(self.model):
            yield (
                f"onnxruntime with the model declared at opset {other}, where every op means the same "
                f"(onnxruntime has no kernel at the model's opset: {self.missing})",
                lambda redeclared=redeclared: _onnxruntime_runner(redeclared, self.libraries),
            )
        yield f"onnx.reference (onnxruntime has no kernel: {self.missing})", lambda: ReferenceRunner(self.model)

    def _next_way(self) -> None:
        for how, make in self._ways:
            try:
                self._run, self.how = make(), how
                return
            except LoweringError:
                raise
            except Exception as error:
                if self._lacks_support(error):
                    if self.missing is None:
                        self.missing = _first_line(error)
                    continue
                if self.missing is None:  # the model as it is: not a missing kernel but a bad model
                    raise LoweringError(
                        f"the {self.side} model does not run in onnxruntime: {_first_line(error)}"
                    ) from None
                if how.startswith("onnx.reference"):
                    raise self._reference_failed(error) from None
                # no kernel at that opset either, or a type it does not take: try the next
        raise LoweringError(f"the {self.side} model cannot be run: onnxruntime has no kernel ({self.missing})")

    def _lacks_support(self, error: BaseException) -> bool:
        """Whether onnxruntime refused the model for lack of support, not because it is bad: no
        kernel (NotImplemented), or its own type inference refusing a type that onnx's schemas
        allow in a model onnx's full check passes (If-28 yielding optional(float16))."""
        if onnxruntime_lacks_support(error) or self._fails_the_original(error):
            return True
        if "Type Error: Type (" not in str(error):  # with or without "[TypeInferenceError]" before it
            return False
        try:
            onnx.checker.check_model(checkable(self.model), full_check=True)
        except Exception:
            return False
        return True

    def _fails_the_original(self, error: BaseException) -> bool:
        """Whether this is the original's side and onnxruntime failed it where the spec defines
        the result (:data:`ONNXRUNTIME_FAILS_THE_ORIGINAL`)."""
        return self.side == "original" and any(phrase in str(error) for phrase in ONNXRUNTIME_FAILS_THE_ORIGINAL)

    def _reference_failed(self, error: BaseException) -> LoweringError:
        return LoweringError(
            f"the {self.side} model cannot be run: onnxruntime has no kernel ({self.missing}) and onnx.reference "
            f"fails ({type(error).__name__}: {_first_line(error)})"
        )

    def __call__(self, feed: Feed, run: int = 0) -> list:
        while True:
            try:
                return self._run(feed)
            except LoweringError:
                raise
            except Exception as error:
                lacking = onnxruntime_lacks_support(error) or self._fails_the_original(error)
                if lacking and self.how.startswith("onnxruntime"):
                    # a kernel found missing (or lacking the case) only when it runs
                    if self.missing is None:
                        self.missing = _first_line(error)
                    self._next_way()
                    continue
                if self.how.startswith("onnx.reference"):  # onnx.reference has gaps of its own
                    raise self._reference_failed(error) from None
                raise LoweringError(
                    f"the {self.side} model fails in {self.how.split(' (')[0]} on run {run} "
                    f"(inputs {describe_feed(feed)}): {_first_line(error)}"
                ) from None


def _onnxruntime_runner(model: onnx.ModelProto, libraries: tuple[str, ...]) -> OnnxruntimeRunner:
    """onnxruntime for ``model``, with the custom op ``libraries`` registered (none: the plain runner)."""
    if not libraries:
        return OnnxruntimeRunner(model)
    import onnxruntime as ort

    from .runtime import session_options

    options = session_options()
    for library in libraries:
        try:
            options.register_custom_ops_library(os.path.abspath(library))
        except Exception as error:
            raise LoweringError(
                f"--custom-op-library {library}: onnxruntime cannot load it ({_first_line(error)})"
            ) from None
    runner = OnnxruntimeRunner.__new__(OnnxruntimeRunner)
    runner.session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return runner


def run_original(model: onnx.ModelProto, feed: Feed) -> tuple[list, str]:
    """The original's outputs and what computed them (see ModelRunner)."""
    runner = ModelRunner(model, "original")
    return runner(feed), runner.how


def describe_feed(feed: Feed) -> str:
    """``x: float32[3, 4], maybe: empty optional`` for an error message."""
    return ", ".join(f"{name}: {_describe_shape(value)}" for name, value in feed.items()) or "none"


def _describe_shape(value) -> str:
    if value is None:
        return "empty optional"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    array = np.asarray(value)
    return f"{array.dtype}{list(array.shape)}"


def _same_meaning_redeclarations(model: onnx.ModelProto):
    from ..opcount import count_ops

    opset = schemas.default_opset(model.opset_import)
    if opset is None:
        return
    op_types = [op for op in count_ops(model) if "." not in op]
    others = sorted(set(range(1, schemas.newest_opset() + 1)) - {opset}, key=lambda o: (abs(o - opset), -o))
    for other in others:
        if all(
            version_steps.same_meaning(op, schemas.version_in_force(op, other), schemas.version_in_force(op, opset))
            for op in op_types
        ):
            redeclared = onnx.ModelProto()
            redeclared.CopyFrom(model)
            version_steps.redeclare_default_opset(redeclared, other)
            yield other, redeclared


def check_tolerances(value: float | dict[str, float] | None, outputs: list[str], label: str) -> None:
    """Refuse a tolerance that is negative, not a finite number, or names no output."""
    values = dict(value) if isinstance(value, dict) else {}
    if isinstance(value, dict) and hasattr(value, "default"):
        values[""] = value.default
    elif value is not None and not isinstance(value, dict):
        values[""] = value
    for name, number in values.items():
        shown = f"{label} {name + '=' if name else ''}{number}"
        if name and name not in outputs:
            raise LoweringError(f"{shown}: the models have no output '{name}' (their outputs: {', '.join(outputs)})")
        if isinstance(number, bool) or not isinstance(number, numbers.Real) or not math.isfinite(number) or number < 0:
            raise LoweringError(f"{shown}: a tolerance is a finite number of 0 or more")


def _per_output(value: float | dict[str, float] | None, name: str) -> float | None:
    if isinstance(value, dict):
        return value.get(name)
    return value


def _compare(comparison: OutputComparison, want, got, run: int, feed: Feed) -> None:
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)) or len(want) != len(got):
            _record(comparison, run, [], _describe(want), _describe(got), 1, 1, None, feed, None)
            return
        for item_want, item_got in zip(want, got, strict=True):
            _compare(comparison, item_want, item_got, run, feed)
        return
    if want is None or got is None:
        comparison.compared += 1
        if (want is None) != (got is None):
            _record(comparison, run, [], _describe(want), _describe(got), 1, 0, None, feed, None)
        return
    want, got = np.asarray(want), np.asarray(got)
    if want.shape != got.shape or want.dtype != got.dtype:
        size = max(want.size, got.size, 1)
        _record(comparison, run, [], f"{want.dtype}{list(want.shape)}", f"{got.dtype}{list(got.shape)}", size, size,
                None, feed, None)  # fmt: skip
        return
    differ, gaps = _differences(want, got, comparison.atol, comparison.rtol)
    count = int(differ.sum())
    comparison.compared += want.size
    if gaps is not None:
        difference = float(np.nanmax(gaps)) if gaps.size else 0.0
        if difference > 0 and difference > (comparison.max_difference or 0.0):
            where = int(np.nanargmax(gaps.ravel()))
            comparison.max_difference_run = run
            index = np.unravel_index(where, want.shape) if want.shape else ()
            comparison.max_difference_index = [int(i) for i in index]
        comparison.max_difference = max(comparison.max_difference or 0.0, difference)
        if count:
            relative = _relative(want, gaps, differ)
            comparison.max_relative_difference = max(comparison.max_relative_difference or 0.0, relative)
    if count:
        first = int(np.flatnonzero(differ.ravel())[0])
        index = [int(i) for i in np.unravel_index(first, want.shape)] if want.shape else []
        _record(comparison, run, index, _describe(want.ravel()[first]), _describe(got.ravel()[first]), count, 0,
                None, feed, want.shape)  # fmt: skip


def _relative(want: np.ndarray, gaps: np.ndarray, differ: np.ndarray) -> float:
    """The largest |original - lowered| / |original| over the values that differ (inf where the
    original is 0 or one side is NaN)."""
    with np.errstate(all="ignore"):
        scale = np.abs(want.astype(np.float64))
        relative = np.where(scale > 0, gaps / scale, np.where(gaps > 0, np.inf, 0.0))
        chosen = relative[differ]
        # (inf / inf, where the original is infinite and the lowered not: as far apart as can be)
        return float(np.where(np.isnan(chosen), np.inf, chosen).max()) if chosen.size else 0.0


def _differences(want: np.ndarray, got: np.ndarray, atol, rtol) -> tuple[np.ndarray, np.ndarray | None]:
    """Where two same-shaped arrays differ, and the absolute difference of every pair (inf where
    only one is NaN, 0 where both are; None for strings and other non-numbers)."""
    if floats.is_float(_element_type(want.dtype)):
        with np.errstate(all="ignore"):
            a, b = want.astype(np.float64), got.astype(np.float64)
            both_nan = np.isnan(a) & np.isnan(b)
            if atol is None and rtol is None:
                bits = want.view(f"u{want.dtype.itemsize}") != got.view(f"u{got.dtype.itemsize}")
                differ = bits & ~both_nan
            else:
                close = np.abs(a - b) <= (atol or 0.0) + (rtol or 0.0) * np.abs(b)
                differ = ~(close | both_nan | (a == b))
            gaps = np.where(np.isnan(a) != np.isnan(b), np.inf, np.abs(a - b))
            gaps = np.where(both_nan | (a == b), 0.0, gaps)
        return differ, gaps
    if want.dtype.kind in "biu":
        differ = want != got
        return differ, np.abs(want.astype(np.float64) - got.astype(np.float64))
    return want != got, None


def _element_type(dtype: np.dtype) -> int:
    try:
        return onnx.helper.np_dtype_to_tensor_dtype(dtype)
    except (KeyError, TypeError, ValueError):
        return onnx.TensorProto.UNDEFINED


def _record(comparison, run, index, want, got, count, extra_compared, difference, feed, shape) -> None:
    comparison.mismatches += count
    comparison.compared += extra_compared
    if difference is not None:
        comparison.max_difference = max(comparison.max_difference or 0.0, difference)
    if comparison.first_run is not None:
        return
    comparison.first_run, comparison.first_index = run, index
    comparison.original_value, comparison.lowered_value = want, got
    for name, value in feed.items():
        if isinstance(value, np.ndarray) and shape is not None and value.shape == tuple(shape):
            comparison.inputs_at_first[name] = _describe(value[tuple(index)])
        elif isinstance(value, np.ndarray) and value.shape == ():
            comparison.inputs_at_first[name] = _describe(value[()])


def _describe(value) -> str:
    """A scalar by its value (a float with its bits too); anything else as :func:`_describe_shape`."""
    if value is None or isinstance(value, list) or np.asarray(value).shape != ():
        return _describe_shape(value)
    array = np.asarray(value)
    if array.dtype.kind in "biuSUO":
        return repr(array.item())
    bits = array.reshape(1).view(f"u{array.dtype.itemsize}")[0]
    return f"{array.item()!r} ({array.dtype}, bits 0x{int(bits):0{2 * array.dtype.itemsize}x})"


def _as_model(model) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    from ..modelio import load_model, with_external_data

    model_file = load_model(model)
    return with_external_data(model_file) if model_file.has_external_data else model_file.model


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# -- saving and replaying inputs -----------------------------------------------------------------

_MANIFEST = "__manifest__"


def save_feeds(path: str | os.PathLike, feeds: list[Feed]) -> None:
    """Save the inputs of every run to an ``.npz``; bfloat16 and float8 are kept as their bits."""
    arrays: dict[str, np.ndarray] = {}
    manifest: list[dict[str, object]] = []

    def store(key: str, value) -> object:
        if value is None:
            return {"kind": "none"}
        if isinstance(value, list):
            return {"kind": "sequence", "items": [store(f"{key}/{k}", item) for k, item in enumerate(value)]}
        array = np.asarray(value)
        dtype = array.dtype
        if array.dtype.kind == "O":
            arrays[key] = array.astype(str)
            return {"kind": "tensor", "dtype": "string", "key": key}
        if dtype.type.__module__ != "numpy":
            arrays[key] = array.view(f"u{dtype.itemsize}")
            return {"kind": "tensor", "dtype": dtype.name, "key": key, "bits": True}
        arrays[key] = array
        return {"kind": "tensor", "dtype": dtype.name, "key": key}

    for run, feed in enumerate(feeds):
        manifest.append({name: store(f"run{run}/{name}", value) for name, value in feed.items()})
    arrays[_MANIFEST] = np.array(json.dumps(manifest))
    from ..modelio import write_file

    write_file(path, lambda handle: np.savez(handle, **arrays))


def load_feeds(path: str | os.PathLike) -> list[Feed]:
    """The inputs saved by :func:`save_feeds`."""
    import ml_dtypes

    path = Path(path)
    if path.is_dir():
        raise LoweringError(f"{path}: is a directory, not an inputs file written by onnx-lower verify")
    if path.is_file() and not zipfile.is_zipfile(path):
        raise LoweringError(f"{path}: not an inputs file written by onnx-lower verify (not an .npz archive)")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError("not an .npz archive")
        with data:
            manifest = json.loads(str(data[_MANIFEST]))
            arrays = {key: data[key] for key in data.files}
    except Exception as error:  # OSError, a zip or npy format error, no manifest: all the file's fault
        raise LoweringError(f"{path}: not an inputs file written by onnx-lower verify ({_first_line(error)})") from None

    def restore(entry):
        if entry["kind"] == "none":
            return None
        if entry["kind"] == "sequence":
            return [restore(item) for item in entry["items"]]
        array = arrays[entry["key"]]
        if entry["dtype"] == "string":
            return array.astype(object)
        if entry.get("bits"):
            return array.view(np.dtype(getattr(ml_dtypes, entry["dtype"])))
        return array

    try:
        return [{name: restore(entry) for name, entry in run.items()} for run in manifest]
    except Exception as error:  # a manifest not written by save_feeds
        raise LoweringError(
            f"{path}: not an inputs file written by onnx-lower verify (its manifest: {type(error).__name__}: "
            f"{_first_line(error)})"
        ) from None


def load_inputs(paths: list[str | os.PathLike], model: onnx.ModelProto | None = None) -> list[Feed]:
    """The runs held by ``paths``, in order: each file written by :func:`save_feeds` (onnx-lower
    verify's own, any number of runs), or a plain ``.npz`` of arrays named after the model's
    inputs (``np.savez("x.npz", x=..., mask=...)``, as Polygraphy's ``--load-inputs``): one run.
    bfloat16 and float8 arrays that numpy stored as raw bytes are read back as ``model`` declares them."""
    feeds: list[Feed] = []
    for path in paths:
        if _holds_manifest(Path(path)):
            feeds += load_feeds(path)
        else:
            feeds.append(_load_plain(Path(path), model))
    return feeds


def _holds_manifest(path: Path) -> bool:
    if not path.is_file() or not zipfile.is_zipfile(path):
        return True  # load_feeds says what is wrong with it
    try:
        with zipfile.ZipFile(path) as archive:
            return f"{_MANIFEST}.npy" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return True


def _load_plain(path: Path, model: onnx.ModelProto | None) -> Feed:
    try:
        with np.load(path, allow_pickle=False) as data:
            feed = {key: data[key] for key in data.files}
    except Exception as error:  # object arrays (pickles), a broken member
        raise LoweringError(
            f"{path}: not an inputs file: an .npz of arrays named after the model's inputs, without pickled "
            f"objects ({_first_line(error)})"
        ) from None
    if model is not None:
        declared = {info.name: info.type for info in graph_inputs(model)}
        for name, value in feed.items():
            type_proto = declared.get(name)
            if type_proto is None or type_proto.WhichOneof("value") != "tensor_type" or value.dtype.kind != "V":
                continue
            try:
                dtype = floats.numpy_dtype(type_proto.tensor_type.elem_type)
            except (KeyError, TypeError, ValueError):
                continue
            if dtype.itemsize == value.dtype.itemsize:
                feed[name] = value.view(dtype)
    return feed
