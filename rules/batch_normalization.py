"""BatchNormalization (versions 14, 15, no function body) lowered to its formula: per channel,
the inputs' statistics in inference, the batch's own in training mode."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

# The formula in another order than the op's kernels (onnxruntime folds scale / sqrt(var + eps)
# into one factor first) and, in training mode, the batch's mean and variance summed in another
# order: a few units in the last place of values of order one; 16-bit floats are computed in
# float32 and rounded once.
# Int64 Constants hold the shapes the rule writes.
INT64_CONSTANT_OPSET = schemas.first_opset("Constant", onnx.TensorProto.INT64)
BATCH_NORMALIZATION_TOLERANCE = {
    onnx.TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-5),
    onnx.TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    onnx.TensorProto.FLOAT16: Tolerance(rtol=2e-3, atol=2e-3),
    onnx.TensorProto.BFLOAT16: Tolerance(rtol=1.6e-2, atol=1.6e-2),
}


def batch_normalization_reference(
    x: np.ndarray, scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray, *,
    epsilon: float = 1e-5, momentum: float = 0.9, training_mode: int = 0,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """The spec's formulas in float64: Y, and in training mode the running mean and variance."""
    per_channel = [-1] + [1] * (x.ndim - 2)
    axes = tuple(a for a in range(x.ndim) if a != 1)
    wide = x.astype(np.float64)
    if training_mode:
        used_mean, used_var = wide.mean(axis=axes), wide.var(axis=axes)
    else:
        used_mean, used_var = mean.astype(np.float64), var.astype(np.float64)
    y = (wide - used_mean.reshape(per_channel)) / np.sqrt(used_var.reshape(per_channel) + np.float32(epsilon))
    y = y * scale.astype(np.float64).reshape(per_channel) + bias.astype(np.float64).reshape(per_channel)
    if not training_mode:
        return y.astype(x.dtype)
    keep = np.float64(np.float32(momentum))
    running_mean = mean.astype(np.float64) * keep + used_mean * (1 - keep)
    running_var = var.astype(np.float64) * keep + used_var * (1 - keep)
    return y.astype(x.dtype), running_mean.astype(mean.dtype), running_var.astype(var.dtype)


@rule(
    "BatchNormalization",
    versions=(14, 15),
    reference=batch_normalization_reference,
    tolerance=BATCH_NORMALIZATION_TOLERANCE,
    emits=("Cast", "Reshape", "Size", "Shape", "Gather", "ReduceSum", "Sub", "Mul", "Add", "Sqrt", "Div", "Constant"),
)
def batch_normalization_by_formula(
    b: Builder, x: Value, scale: Value, bias: Value, mean: Value, var: Value, *, epsilon: float = 1e-5,
    momentum: float = 0.9, training_mode: int = 0,
) -> Value | tuple[Value, Value, Value]:  # fmt: skip
    """BatchNormalization(X, s, B, m, v) = (X - μ) / Sqrt(σ² + epsilon) · s + B, per channel (axis 1).

    In inference μ and σ² are the inputs m and v; with training_mode=1 they are
    the batch's own, ``μ = ReduceSum(X) / n`` and ``σ² = ReduceSum((X - μ)²) / n`` over every axis
    but the channels', n the elements per channel (the population variance; an empty batch gives
    NaN, 0/0), and the op also gives the running statistics
    ``m·momentum + μ·(1 - momentum)`` and ``v·momentum + σ²·(1 - momentum)``. Each per-channel
    input is reshaped to ``[C, 1, ..., 1]``; 16-bit floats are computed in float32 (the spec: "uses
    float to avoid overflow for float16") and the results cast back; the running statistics in
    that type too (float32 precision for double statistics of a float16 X). Where var + epsilon is
    0 the formula gives ±inf or NaN (onnxruntime's kernel, which folds scale / sqrt first, NaN).
    Needs X's rank known (at least 2); from opset 9 (int64 constants). Versions 14 and 15 only:
    before 14 the number of outputs, which the rule does not see, tells training from inference.
    """
    if b.opset < INT64_CONSTANT_OPSET:
        raise NotLowered(f"the shapes it writes are int64 constants, which Constant does not hold at opset {b.opset}")
    shape = b.shape_of(x)
    if shape is None or len(shape) < 2:
        raise NotLowered(
            "X's rank, which places the channels' axis, is unknown" if shape is None else "X has no channels' axis"
        )
    wide = b.computable(x)
    compute_type = wide.element_type
    per_channel = b.ints([-1] + [1] * (len(shape) - 2), "per_channel")

    def channel_values(value: Value) -> Value:
        if value.element_type != compute_type:
            value = b.Cast(value, to=compute_type)
        return b.Reshape(value, per_channel)

    if training_mode:
        axes = [0, *range(2, len(shape))]
        count = per_channel_count(b, wide)
        used_mean = b.Div(b.over_axes("ReduceSum", wide, axes, keepdims=1), count)
        centred = b.Sub(wide, used_mean)
        used_var = b.Div(b.over_axes("ReduceSum", b.Mul(centred, centred), axes, keepdims=1), count)
    else:
        used_mean, used_var = channel_values(mean), channel_values(var)
        centred = b.Sub(wide, used_mean)
    spread = b.Sqrt(b.Add(used_var, b.scalar(float(np.float32(epsilon)), compute_type, "epsilon")))
    y = b.Add(b.Mul(b.Div(centred, spread), channel_values(scale)), channel_values(bias))
    if wide is not x:
        y = b.Cast(y, to=x.element_type)
    if not training_mode:
        return y
    keep = float(np.float32(momentum))
    flat = b.ints([-1], "flat")
    return (
        y,
        running(b, mean, b.Reshape(used_mean, flat), keep, compute_type),
        running(b, var, b.Reshape(used_var, flat), keep, compute_type),
    )


def per_channel_count(b: Builder, x: Value) -> Value:
    """How many elements each channel holds, ``Size(x) / C``, in x's type: 0 for an empty batch,
    whose mean and variance are then 0/0, NaN, as the spec's and onnxruntime's (ReduceMean of
    nothing is 0 in onnxruntime, not NaN)."""
    size = b.Cast(b.Size(x), to=x.element_type)
    channels = b.Cast(b.Gather(b.Shape(x), b.ints([1], "channel_axis")), to=x.element_type)
    return b.Div(size, channels)


def running(b: Builder, given: Value, batch: Value, keep: float, compute_type: int) -> Value:
    """``given·keep + batch·(1 - keep)`` in the compute type, cast back to ``given``'s type."""
    wide = given if given.element_type == compute_type else b.Cast(given, to=compute_type)
    kept = b.Mul(wide, b.scalar(keep, compute_type, "momentum"))
    moved = b.Add(kept, b.Mul(batch, b.scalar(1.0 - keep, compute_type, "one_minus_momentum")))
    return moved if given.element_type == compute_type else b.Cast(moved, to=given.element_type)
