"""Size lowered to the one dimension of x flattened, or to a constant where x's shape is known."""

from __future__ import annotations

import math

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = ("Constant", "Reshape", "Shape", "Squeeze")  # (the shape [-1], Squeeze's axes, a known size)
FIRST_OPSET = schemas.first_opset("Constant", onnx.TensorProto.INT64)  # (the shape [-1]: an int64 Constant)


def size_reference(x: np.ndarray) -> np.ndarray:
    """The number of elements of x, a scalar int64 (1 for a scalar, 0 where x is empty)."""
    return np.array(x.size, dtype=np.int64)


@rule("Size", versions=schemas.op_versions("Size"), emits=EMITS, reference=size_reference)
def size_by_shape(b: Builder, x: Value) -> Value:
    """Size(x) = Squeeze(Shape(Reshape(x, [-1])), [0]) = ∏ dᵢ.

    The one dimension of x flattened: 0 where some dimension is 0, 1 for a scalar; a constant
    where every dimension of x is known. Reads no value: exact for every type, strings
    included. Needs int64 Constants (opset 9)."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the shape [-1] is an int64 Constant, which exists from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    if shape is not None and None not in shape:
        return b.scalar(math.prod(shape), onnx.TensorProto.INT64, "size")
    flattened = b.Reshape(x, b.ints([-1], "flat"))
    return b.over_axes("Squeeze", b.Shape(flattened), [0])
