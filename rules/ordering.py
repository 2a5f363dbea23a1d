"""What the rules that order values by comparing every pair (Unique, TopK) share: values in a
type the target compares exactly, and the first position where a condition holds."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value

from .counting import counted

# The most pairs of elements such a rule compares at once, where the lengths are known: its
# comparisons and sums hold that many values.
MOST_PAIRED_ELEMENTS = 2**24


def comparable(b: Builder, values: Value, comparisons: tuple[str, ...] = ("Equal", "Less")) -> Value:
    """``values`` in a type the target runs ``comparisons`` on exactly: their own, or widened
    without change of order (16-bit floats to float32, integers of up to 32 bits and bool to
    int64)."""
    element_type = values.element_type
    if element_type is None or not (
        schemas.accepts("Less", b.opset, element_type) or floats.is_float(element_type) or fits_int64(element_type)
    ):
        raise NotLowered(f"X is {schemas.type_name(element_type)}, which no comparison orders")
    if all(b.runs(op, values) for op in comparisons):
        return values
    widened = b.computable(values, emit=False).element_type
    candidate = widened if widened != element_type else TensorProto.INT64 if fits_int64(element_type) else None
    if candidate is None or not all(b.runs(op, Value(values.name, candidate)) for op in comparisons):
        raise NotLowered(
            f"the target compares {schemas.type_name(element_type)} values in no exact way ({', '.join(comparisons)})"
        )
    return b.Cast(values, to=candidate)


def fits_int64(element_type: int) -> bool:
    """Whether int64 holds every value of ``element_type`` in its order: bool and the integers of
    up to 32 bits (their numpy dtypes)."""
    if element_type == TensorProto.BOOL:
        return True
    try:
        dtype = np.dtype(floats.numpy_dtype(element_type))
    except (KeyError, TypeError, ValueError):
        return False
    return dtype.kind in "iu" and dtype.itemsize <= 4


def numbers(b: Builder, values: Value, axis: int, length: int | None) -> Value:
    """0, 1, ..., up to the values' length along ``axis``: a constant where the length is known,
    else counted from its Shape."""
    if length is not None:
        return b.ints(list(range(length)), f"numbers{axis}")
    int64 = TensorProto.INT64
    length_value = b.over_axes("Squeeze", b.Gather(b.Shape(values), b.ints([axis], f"length{axis}")), [0])
    return counted(b, b.scalar(0, int64, "zero"), length_value, b.scalar(1, int64, "one"))


def first_where(b: Builder, condition: Value, numbered: Value, count: Value, axis: int) -> Value:
    """Along ``axis`` of ``condition``, the first position j where it holds (``count`` where none
    does): ReduceMin(Where(condition, j, count)), ``numbered`` holding j along that axis. No
    running sum: onnx2torch's CumSum is wrong unless ``reverse`` is stated, tract 0.21 cannot size
    one over a computed length and tract 0.23 fails one over comparisons ("TDim is not a number")."""
    return b.over_axes("ReduceMin", b.Where(condition, numbered, count), [axis], keepdims=0)


def larger_of(b: Builder, held: Value, value: Value) -> Value:
    """std::max(held, value) as C++ answers it: ``value`` where held < value, else ``held`` (a NaN
    held stays; a NaN value is never taken)."""
    return b.Where(b.Less(held, value), value, held)
