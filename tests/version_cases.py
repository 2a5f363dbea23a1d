"""The ONNX backend node test models taken to a target opset by onnx's converter and by us,
each result checked and run against the case's expected outputs (shared by the tests and
benchmarks/version_sweep.py)."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import ml_dtypes
import numpy as np
import onnx

import lowering
from lowering.runtime import run_onnxruntime

RTOL, ATOL = 1e-3, 1e-7  # the tolerances onnx's own backend tests use


@functools.cache
def node_cases() -> tuple:
    """Every backend node test case (``collect_testcases`` called once, with no argument)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.case.node import collect_testcases

        return tuple(collect_testcases())


@dataclass
class CaseOutcome:
    converter: str  # "runs", "fails", "invalid" (checker refuses its model), "does not run"
    ours: str  # "converts", "refuses", "crashes", "invalid" (the full checker refuses it), "does not run"
    original_runs: bool = False  # onnxruntime runs the case's own model
    comparable: bool = False  # ... and gives the expected outputs, so converted models are checked
    converter_wrong: bool = False  # it runs but gives other outputs than the case expects
    ours_wrong: bool = False
    detail: str = ""  # ours: the refusal, the crash, onnxruntime's error, or where the outputs differ
    converter_detail: str = ""  # the converter's error, the checker's, onnxruntime's, or the difference


def _feed(value):
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, list):
        return [_feed(item) for item in value]
    return value


def feeds_of(model: onnx.ModelProto, inputs: list) -> dict:
    return {info.name: _feed(value) for info, value in zip(model.graph.input, inputs, strict=False)}


def _numeric(value):
    """An output or expected value as numpy sees it: a TensorProto (how the cases store bfloat16,
    float8 and 4-bit values) read into an array, and ml_dtypes' types widened to float64 or int64
    so that numpy compares them as numbers."""
    value = _feed(value)
    if isinstance(value, np.ndarray) and value.dtype.type.__module__ == "ml_dtypes":
        try:
            ml_dtypes.finfo(value.dtype)
        except ValueError:
            return value.astype(np.int64)
        return value.astype(np.float64)
    return value


def same_outputs(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        a, b = _numeric(a), _numeric(b)
        if isinstance(b, list) or isinstance(a, list):
            if not (isinstance(a, list) and isinstance(b, list)) or not same_outputs(a, b):
                return False
            continue
        if a is None or b is None:
            if (a is None) != (b is None):
                return False
            continue
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=RTOL, atol=ATOL, equal_nan=True):
                return False
        elif not np.array_equal(a, b):
            return False
    return True


def _first_line(error: Exception, limit: int = 300) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:limit]}{'...' * (len(text) > limit)}"


def _run(model: onnx.ModelProto, case) -> tuple[list[list] | None, str]:
    """The model's outputs on every data set of the case, or None and onnxruntime's error."""
    try:
        return [run_onnxruntime(model, feeds_of(model, inputs)) for inputs, _ in case.data_sets], ""
    except Exception as error:
        return None, _first_line(error)


def _outputs(model: onnx.ModelProto, case) -> list[list] | None:
    """The model's outputs on every data set of the case, or None where onnxruntime fails."""
    return _run(model, case)[0]


def _value_difference(got, want) -> str | None:
    """How one output differs from the expected one, or None where they agree."""
    if same_outputs([got], [want]):
        return None
    got, want = _numeric(got), _numeric(want)
    if isinstance(got, list) or isinstance(want, list) or got is None or want is None:
        return f"got {type(got).__name__}, expected {type(want).__name__}"
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} ({got.dtype}), expected {want.shape} ({want.dtype})"
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        wide_got, wide_want = got.astype(np.float64), want.astype(np.float64)
        close = np.isclose(wide_got, wide_want, rtol=RTOL, atol=ATOL, equal_nan=True)
    else:
        close = np.asarray(got == want)
    if close.ndim == 0:
        return f"{got} ({got.dtype}), expected {want} ({want.dtype})"
    where = tuple(int(i) for i in np.argwhere(~close)[0])
    return (
        f"{int((~close).sum())} of {close.size} values differ ({got.dtype}, expected {want.dtype}); "
        f"first at {where}: {got[where]}, expected {want[where]}"
    )


def difference(outputs: list[list], case) -> str:
    """Where a model's outputs first differ from the case's expected outputs."""
    for number, (got, (_, want)) in enumerate(zip(outputs, case.data_sets, strict=True)):
        if len(got) != len(want):
            return f"data set {number}: {len(got)} outputs, expected {len(want)}"
        for index, (value, expected) in enumerate(zip(got, want, strict=True)):
            if (text := _value_difference(value, expected)) is not None:
                return f"data set {number}, output {index}: {text}"
    return ""


def _matches(outputs: list[list] | None, case) -> bool:
    return outputs is not None and all(
        same_outputs(got, want) for got, (_, want) in zip(outputs, case.data_sets, strict=True)
    )


@functools.cache
def _original(name: str) -> tuple[bool, bool]:
    """Whether onnxruntime runs the case's own model, and whether it gives the expected outputs
    (random ops and gaps in onnxruntime do not): only then are converted models compared."""
    case = next(c for c in node_cases() if c.name == name)
    outputs = _outputs(case.model, case)
    return outputs is not None, bool(case.data_sets) and _matches(outputs, case)


@functools.cache
def _fully_valid(name: str) -> bool:
    """Whether onnx's full checker takes the case's own model (a few, such as test_mvn, it
    does not: a conversion keeping such a node as it is cannot pass it either)."""
    case = next(c for c in node_cases() if c.name == name)
    try:
        onnx.checker.check_model(case.model, full_check=True)
    except Exception:
        return False
    return True


def sweep_case(case, target: int) -> CaseOutcome:
    runs, comparable = _original(case.name)
    outcome = CaseOutcome(converter="fails", ours="crashes", original_runs=runs, comparable=comparable)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = onnx.version_converter.convert_version(case.model, target)
        except Exception as error:
            outcome.converter, outcome.converter_detail = "fails", _first_line(error)
        else:
            try:
                onnx.checker.check_model(converted, full_check=True)
            except Exception as error:
                outcome.converter, outcome.converter_detail = "invalid", _first_line(error)
            else:
                outputs, outcome.converter_detail = _run(converted, case)
                outcome.converter = "runs" if outputs is not None else "does not run"
                outcome.converter_wrong = outputs is not None and comparable and not _matches(outputs, case)
                if outcome.converter_wrong:
                    outcome.converter_detail = difference(outputs, case)
        try:
            ours = lowering.lower(case.model, target_opset=target, ops=[])
        except lowering.LoweringError as error:
            outcome.ours, outcome.detail = "refuses", str(error)
            return outcome
        except Exception as error:  # a bug: every failure must be a LoweringError
            outcome.ours, outcome.detail = "crashes", f"{type(error).__name__}: {error}"
            return outcome
    try:
        onnx.checker.check_model(ours, full_check=True)
    except Exception as error:  # refused where the case's own model is not: a bug
        if _fully_valid(case.name):
            outcome.ours, outcome.detail = "invalid", _first_line(error)
            return outcome
    outputs, outcome.detail = _run(ours, case)
    outcome.ours = "converts" if outputs is not None else "does not run"
    outcome.ours_wrong = outputs is not None and comparable and not _matches(outputs, case)
    if outcome.ours_wrong:
        outcome.detail = difference(outputs, case)
    return outcome
