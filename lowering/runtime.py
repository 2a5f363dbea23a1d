"""Running models: onnxruntime's CPU provider for any tensor type, and onnx's reference
evaluator for ops onnxruntime has no kernel for."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from . import floats


def _is_numpy_native(dtype: np.dtype) -> bool:
    """numpy's own dtypes; ml_dtypes' bfloat16 and float8 types live in another module."""
    return dtype.type.__module__ == "numpy"


def _to_ort_value(array: np.ndarray, element_type: int) -> ort.OrtValue:
    """An OrtValue of ``element_type``; bfloat16 and float8 arrays are passed as their bits."""
    array = np.ascontiguousarray(array)
    if _is_numpy_native(array.dtype) and array.dtype == floats.numpy_dtype(element_type):
        return ort.OrtValue.ortvalue_from_numpy(array)
    bits = array.view(f"u{array.dtype.itemsize}")
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, element_type)


def onnxruntime_session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run ``model`` in onnxruntime's CPU provider on tensor inputs of any element type."""
    session = onnxruntime_session(model)
    if all(isinstance(v, list) or (v is None) or _is_numpy_native(np.asarray(v).dtype) for v in feeds.values()):
        return session.run(None, feeds)  # sequences and optionals go in as lists and None
    input_types = {
        info.name: info.type.tensor_type.elem_type
        for info in model.graph.input
        if info.type.WhichOneof("value") == "tensor_type"
    }
    ort_feeds = {name: _to_ort_value(array, input_types[name]) for name, array in feeds.items()}
    outputs = session.run_with_ort_values(None, ort_feeds)
    return [value.numpy() for value in outputs]


def run_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Run ``model`` with ``onnx.reference`` (an independent implementation of every op)."""
    from onnx.reference import ReferenceEvaluator

    with np.errstate(all="ignore"):
        return list(ReferenceEvaluator(model).run(None, feeds))
