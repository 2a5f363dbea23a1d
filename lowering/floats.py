"""Facts about floating-point element types, derived from the numpy dtypes onnx maps them to."""

from __future__ import annotations

import functools

import ml_dtypes  # a dependency of onnx itself: the bfloat16, float8 and float4 dtypes
import numpy as np
import onnx
from onnx import helper


@functools.cache
def numpy_dtype(element_type: int) -> np.dtype:
    """The numpy dtype of ``element_type``: the ml_dtypes type of the same name for the types
    numpy lacks (BFLOAT16 -> bfloat16, FLOAT8E4M3FN -> float8_e4m3fn, INT4 -> int4, ...: onnx
    maps them so from 1.19, and to float32 or placeholder dtypes before), else onnx's."""
    name = onnx.TensorProto.DataType.Name(element_type).lower()
    if name.startswith("float") and name[5:6].isdigit():  # float8e4m3fn -> float8_e4m3fn
        name = f"{name[:6]}_{name[6:]}"
        name = {"float4_e2m1": "float4_e2m1fn", "float8_e8m0": "float8_e8m0fnu"}.get(name, name)
    if name not in ("float16", "float32", "float64") and isinstance(getattr(ml_dtypes, name, None), type):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(helper.tensor_dtype_to_np_dtype(element_type))


def tensor(array: np.ndarray, name: str = "") -> onnx.TensorProto:
    """``array`` as a TensorProto of its element type; the 8- and 16-bit ml_dtypes types as raw
    little-endian bytes, which every onnx the package declares reads (numpy_helper.from_array
    takes them only from onnx 1.19)."""
    array = np.asarray(array)
    if array.dtype.type.__module__.startswith("ml_dtypes") and array.dtype.itemsize in (1, 2):
        element_type = _element_types_by_dtype().get(array.dtype)
        if element_type is not None:
            made = onnx.TensorProto(name=name, data_type=element_type, dims=array.shape)
            made.raw_data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
            return made
    return onnx.numpy_helper.from_array(array, name=name)


def array_of(tensor_proto: onnx.TensorProto) -> np.ndarray:
    """``tensor_proto``'s values, in :func:`numpy_dtype` of its element type (onnx before 1.19
    gives placeholder dtypes for the 8- and 16-bit float types: viewed as ml_dtypes here)."""
    array = onnx.numpy_helper.to_array(tensor_proto)
    wanted = numpy_dtype(tensor_proto.data_type) if tensor_proto.data_type else array.dtype
    if array.dtype == wanted:
        return array
    if array.dtype.itemsize == wanted.itemsize:  # a placeholder dtype holding the bits
        return array.view(wanted)
    return array.astype(wanted)  # float32 holding bfloat16 values: exact


@functools.cache
def _element_types_by_dtype() -> dict[np.dtype, int]:
    return {
        numpy_dtype(element_type): element_type
        for element_type in onnx.TensorProto.DataType.values()
        if onnx.TensorProto.DataType.Name(element_type).startswith(("BFLOAT", "FLOAT8"))
    }


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
