"""onnxruntime's CPU provider, with its graph optimizations on (as deployed; the package's
verification runs it node by node, optimizations off), through the package's runner (tensors
of every element type in and out: bfloat16, float8 and 4-bit types through OrtValues, which
numpy arrays of ml_dtypes cannot be handed as)."""

import onnx
import onnxruntime

from lowering.verification.runtime import run_onnxruntime

VERSION = onnxruntime.__version__


def run(model_bytes: bytes, feeds: dict) -> list:
    return run_onnxruntime(onnx.load_from_string(model_bytes), feeds, optimized=True)
