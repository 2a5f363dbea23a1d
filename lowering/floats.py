"""Facts about floating-point element types, derived from the numpy dtypes onnx maps them to."""

from __future__ import annotations

import functools

import ml_dtypes  # a dependency of onnx itself: the bfloat16, float8 and float4 dtypes
import numpy as np
import onnx
from onnx import helper


def numpy_dtype(element_type: int) -> np.dtype:
    """The numpy dtype (ml_dtypes for bfloat16 and float8) onnx uses for ``element_type``."""
    return np.dtype(helper.tensor_dtype_to_np_dtype(element_type))


def is_integer(element_type: int | None) -> bool:
    """Whether ``element_type`` is an integer type numpy holds (8 to 64 bits; not bool, not 2 or 4 bits)."""
    return element_type is not None and numpy_dtype(element_type).kind in "iu"


@functools.cache
def is_float(element_type: int) -> bool:
    """Whether ``element_type`` is a real floating-point type (float4 and float8 to double)."""
    if element_type in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING):
        return False
    try:
        dtype = numpy_dtype(element_type)
    except (KeyError, TypeError, ValueError):
        return False
    if dtype.kind in "biucSUO":
        return False
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


@functools.cache
def has_infinity(element_type: int) -> bool:
    """Whether ``element_type`` can hold ±inf (float8e4m3fn, e4m3fnuz and e5m2fnuz cannot)."""
    with np.errstate(all="ignore"):
        converted = np.array(np.inf, dtype=np.float32).astype(numpy_dtype(element_type))
        return bool(np.isinf(converted.astype(np.float64)))


@functools.cache
def largest_finite(element_type: int) -> float:
    """The largest finite value of ``element_type``, as a Python float (exact)."""
    return float(ml_dtypes.finfo(numpy_dtype(element_type)).max)


@functools.cache
def largest_rounding_to_finite(element_type: int, compute_type: int) -> float:
    """The largest ``compute_type`` value that rounds (to nearest, ties to even) to a finite
    ``element_type`` value: ``element_type``'s largest finite where the two types are one,
    else the ``compute_type`` value just below the midpoint past that largest finite
    (float16 in float32: 65519.996, since 65520 rounds to inf).

    Every exact ``element_type`` value lies at or below it, or is ±inf; so does every wider
    value that would round to a finite one. Found by bisecting ``compute_type``'s bit patterns."""
    largest = largest_finite(element_type)
    if element_type == compute_type:
        return largest
    wide = numpy_dtype(compute_type)
    bits = np.dtype(f"u{wide.itemsize}")
    low = int(np.array(largest, dtype=wide).view(bits))  # rounds to finite
    high = int(np.array(np.inf, dtype=wide).view(bits))  # rounds to inf
    narrow = numpy_dtype(element_type)
    with np.errstate(all="ignore"):
        while high - low > 1:
            middle = (low + high) // 2
            value = np.array(middle, dtype=bits).view(wide)
            if np.isfinite(value.astype(narrow).astype(np.float64)):
                low = middle
            else:
                high = middle
    return float(np.array(low, dtype=bits).view(wide))
