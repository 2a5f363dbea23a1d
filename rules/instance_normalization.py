"""InstanceNormalization (versions 6 and 22, no function body) lowered to its formula: per
instance and channel, the mean and variance over the spatial axes."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

# Int64 Constants hold the shapes and axes the rule writes.
INT64_CONSTANT_OPSET = schemas.first_opset("Constant", onnx.TensorProto.INT64)
# The formula in another order than onnxruntime's kernel (two passes, as the rule, then
# y = x·c + (B - μ·c), c = s / Sqrt(σ² + epsilon)): a few units in the last place of values of
# order one where the data's mean is of the order of its spread; both round the mean of data
# offset far from 0 (|μ| / σ ≫ 10) at float32's precision of |μ|, which the tolerance does not
# cover. 16-bit floats computed in float32 and rounded once.
INSTANCE_NORMALIZATION_TOLERANCE = {
    onnx.TensorProto.FLOAT: Tolerance(rtol=1e-4, atol=1e-4),
    onnx.TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    onnx.TensorProto.FLOAT16: Tolerance(rtol=2e-3, atol=2e-3),
    onnx.TensorProto.BFLOAT16: Tolerance(rtol=1.6e-2, atol=1.6e-2),
}


def instance_normalization_reference(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, *, epsilon: float = 1e-5
) -> np.ndarray:
    """The spec's formula in float64, the statistics over every axis from the third."""
    spatial = tuple(range(2, x.ndim))
    per_channel = [-1] + [1] * (x.ndim - 2)
    wide = x.astype(np.float64)
    mean, var = wide.mean(axis=spatial, keepdims=True), wide.var(axis=spatial, keepdims=True)
    y = (wide - mean) / np.sqrt(var + np.float32(epsilon))
    y = y * scale.astype(np.float64).reshape(per_channel) + bias.astype(np.float64).reshape(per_channel)
    return y.astype(x.dtype)


@rule(
    "InstanceNormalization",
    versions=(6, 22),
    reference=instance_normalization_reference,
    tolerance=INSTANCE_NORMALIZATION_TOLERANCE,
    emits=(
        "Cast",
        "Reshape",
        "Shape",
        "Gather",
        "ReduceProd",
        "ReduceSum",
        "Sub",
        "Mul",
        "Add",
        "Sqrt",
        "Div",
        "Constant",
    ),  # fmt: skip
)
def instance_normalization_by_formula(
    b: Builder, x: Value, scale: Value, bias: Value, *, epsilon: float = 1e-5
) -> Value:
    """InstanceNormalization(X, s, B) = (X - μ) / Sqrt(σ² + epsilon) · s + B, s and B per channel.

    ``μ = ReduceSum(X) / n`` and ``σ² = ReduceSum((X - μ)²) / n`` over the spatial axes (every
    axis from the third), per instance and channel, n the elements each holds (the population
    variance; no spatial element gives NaN, 0/0); s and B reshaped to ``[C, 1, ..., 1]`` (C
    X's channels, so that s or B of another length fails as the op fails). 16-bit
    floats are computed in float32 and the result cast back. Needs X's rank known, at least 3
    (a spatial axis); from opset 9 (int64 constants)."""
    if b.opset < INT64_CONSTANT_OPSET:
        raise NotLowered(f"the shapes it writes are int64 constants, which Constant does not hold at opset {b.opset}")
    shape = b.shape_of(x)
    if shape is None or len(shape) < 3:
        why = "X's rank, which places the spatial axes, is unknown" if shape is None else "X has no spatial axis"
        raise NotLowered(why)
    wide = b.computable(x)
    compute_type = wide.element_type
    per_channel = _per_channel_shape(b, x, shape)

    def channel_values(value: Value) -> Value:
        if value.element_type != compute_type:
            value = b.Cast(value, to=compute_type)
        return b.Reshape(value, per_channel)

    spatial = list(range(2, len(shape)))
    count = _per_instance_count(b, wide, shape)
    mean = b.Div(b.over_axes("ReduceSum", wide, spatial, keepdims=1), count)
    centred = b.Sub(wide, mean)
    var = b.Div(b.over_axes("ReduceSum", b.Mul(centred, centred), spatial, keepdims=1), count)
    spread = b.Sqrt(b.Add(var, b.scalar(float(np.float32(epsilon)), compute_type, "epsilon")))
    y = b.Add(b.Mul(b.Div(centred, spread), channel_values(scale)), channel_values(bias))
    return y if wide is x else b.Cast(y, to=x.element_type)


def _per_instance_count(b: Builder, x: Value, shape: list[int | None]) -> Value:
    """How many elements each instance's channel holds, in x's type: the product of the spatial
    lengths, a constant where the shape states them, else ``ReduceProd(Gather(Shape(x), [2, ...]))``
    (in int64, exact, then cast)."""
    spatial = shape[2:]
    if all(length is not None for length in spatial):
        return b.scalar(float(np.prod(spatial, dtype=np.int64)), x.element_type, "count")
    lengths = b.Gather(b.Shape(x), b.ints(range(2, len(shape)), "spatial_axes"))
    return b.Cast(b.over_axes("ReduceProd", lengths, [0], keepdims=0), to=x.element_type)


def _per_channel_shape(b: Builder, x: Value, shape: list[int | None]) -> Value:
    """``[C, 1, ..., 1]``, C X's channels: a constant where the shape states C, else
    ``Concat(Gather(Shape(X), [1]), [1, ..., 1])``."""
    ones = [1] * (len(shape) - 2)
    if shape[1] is not None:
        return b.ints([shape[1], *ones], "per_channel")
    channels = b.Gather(b.Shape(x), b.ints([1], "channel_axis"))
    return b.Concat(channels, b.ints(ones, "spatial_ones"), axis=0)
