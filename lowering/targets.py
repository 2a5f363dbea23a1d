"""Targets: what the lowered model may contain and which types its arithmetic runs on."""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from . import floats


@dataclass(frozen=True)
class Target:
    """A runtime that lowered models must run on.

    ``compute_types`` are the float element types the runtime compares and does arithmetic
    in; a rule casts any other float type, exactly, to ``widening_type`` first.
    """

    name: str
    compute_types: frozenset[int]
    widening_type: int

    def compute_type(self, element_type: int) -> int:
        """The type to compute ``element_type`` values in: itself, or the exact widening."""
        if element_type in self.compute_types:
            return element_type
        if floats.is_float(element_type) and floats.numpy_dtype(element_type).itemsize < 4:
            return self.widening_type
        return element_type


# onnxruntime's CPU provider implements Abs, Equal, Greater and Less for float and double
# only (no float16, bfloat16 or float8 kernels); tests/test_targets.py checks this against
# the kernel registry of the installed onnxruntime. float16, bfloat16 and every float8
# embed exactly in float32, so widening them loses nothing; float64 is never narrowed.
ONNXRUNTIME_CPU = Target(
    name="onnxruntime-cpu",
    compute_types=frozenset({onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE}),
    widening_type=onnx.TensorProto.FLOAT,
)

DEFAULT_TARGET = ONNXRUNTIME_CPU
