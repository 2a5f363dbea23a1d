"""Counting 0, 1, ... up to a length computed at run time, as numbers every runtime reads."""

from __future__ import annotations

from onnx import TensorProto

from lowering.registry import Builder, Value


def counted(b: Builder, start: Value, limit: Value, step: Value) -> Value:
    """Range(start, limit, step) of int64 scalars, through double and back: exact (every int64 below
    2^53, past any length a runtime allocates). tract 0.21 keeps an int64 Range of a length it
    computes as a shape (a TDim) and fails Equal or Add on it ("tensor is I64, accessed as TDim",
    measured on OneHot, Resize and Unique expansions); cast, it is numbers."""
    int64 = TensorProto.INT64
    return b.Cast(b.Cast(b.Range(start, limit, step), to=TensorProto.DOUBLE), to=int64)
