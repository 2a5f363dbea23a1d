"""The ONNX backend node test models taken to a target opset by onnx's converter and by us,
each result checked and run against the case's expected outputs (shared by the tests and
benchmarks/version_sweep.py)."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

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
    converter: str  # "runs", "fails", "invalid" (checker refuses), "does not run"
    ours: str  # "converts", "refuses", "crashes", "does not run"
    original_runs: bool = False  # onnxruntime runs the case's own model
    converter_wrong: bool = False  # it runs but gives other outputs than the case expects
    ours_wrong: bool = False
    detail: str = ""


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


def same_outputs(got: list, want: list) -> bool:
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
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


def _outputs(model: onnx.ModelProto, case) -> list[list] | None:
    """The model's outputs on every data set of the case, or None where onnxruntime fails."""
    try:
        return [run_onnxruntime(model, feeds_of(model, inputs)) for inputs, _ in case.data_sets]
    except Exception:
        return None


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


def sweep_case(case, target: int) -> CaseOutcome:
    runs, comparable = _original(case.name)
    outcome = CaseOutcome(converter="fails", ours="crashes", original_runs=runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            converted = onnx.version_converter.convert_version(case.model, target)
            onnx.checker.check_model(converted, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
            outcome.converter = "invalid"
        except Exception:
            outcome.converter = "fails"
        else:
            outputs = _outputs(converted, case)
            outcome.converter = "runs" if outputs is not None else "does not run"
            outcome.converter_wrong = outputs is not None and comparable and not _matches(outputs, case)
        try:
            ours = lowering.lower(case.model, target_opset=target, ops=[])
        except lowering.LoweringError as error:
            outcome.ours, outcome.detail = "refuses", str(error)
            return outcome
        except Exception as error:  # a bug: every failure must be a LoweringError
            outcome.ours, outcome.detail = "crashes", f"{type(error).__name__}: {error}"
            return outcome
    outputs = _outputs(ours, case)
    outcome.ours = "converts" if outputs is not None else "does not run"
    outcome.ours_wrong = outputs is not None and comparable and not _matches(outputs, case)
    return outcome
