"""AveragePool (versions 1, 7, 10, 11, 19, 22, no function body) lowered to a depthwise Conv of
ones, each window's sum divided by the count of positions it averages."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import floats, schemas
from lowering.conversion.adapters import as_text
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .lppool import COMPUTED_IN  # (float and double as they are, float16 and bfloat16 in float32)
from .versions.pool import pooled_windows, valid_ceil_counted_apart

EMITS = ("Conv", "Div", "Cast", "Constant")
# Div broadcasts the counts by numpy's rule from opset 7 (before, only with broadcast=1).
FIRST_OPSET = 7
# AveragePool-11 states its auto_pad counts as floor(size / stride) and, in the attribute's own
# description, as ceil(size / stride); onnxruntime, onnx.reference and shape inference count the
# ceil ones, as the later versions restate (rules/versions/pool.py reads a source AveragePool-11 so).
COUNTED_TWICE, COUNTED_AS = 11, 19

# How far the lowered AveragePool may stray from the op, per float type: the sum of a window comes
# in another order (Conv's), then one division by the same count, as the kernel divides. Measured on
# standard normal inputs, kernels of 1 to 4 per axis, 1-D to 3-D, dilations, pads and ceil_mode
# (tests/rules/test_averagepool_lowering.py): float at most 4.8e-7 from onnxruntime's kernel;
# float16 and bfloat16 computed in float32 and rounded once, so at most one unit in their last place.
# The bound is for values of that scale: a window whose terms cancel (the largest values of both
# signs, or values near 1e4 about a mean of 0) sums to what the order of its terms makes it, and
# onnxruntime's own kernel misses the same bound against a float64 sum there.
AVERAGE_POOL_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-6),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-3),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-2),
}


@rule(
    "AveragePool", versions=(1, 7, 10, 11, 19, 22), emits=EMITS, rounding_invariant=False,
    tolerance=AVERAGE_POOL_TOLERANCE,
)  # fmt: skip
def average_pool_by_conv(
    b: Builder,
    x: Value,
    *,
    kernel_shape=None,
    strides=None,
    pads=None,
    dilations=None,
    auto_pad="NOTSET",
    ceil_mode: int = 0,
    count_include_pad: int = 0,
) -> Value:
    """AveragePool(x) = Conv(x, 1, group=C) / n: each window's sum over the count n of the positions it averages.

    The sum is a depthwise Conv (one group per channel) of a kernel of ones, with the op's kernel,
    strides, dilations and pads: a padded position adds 0. The windows are those of the node's
    version (:func:`rules.versions.pool.pooled_windows`; a ceil_mode window is given by more end
    padding, which adds nothing). Window i along an axis of length d with pads (b, e) holds the
    positions p = i·s - b + j·t (j < k, t the dilation); n counts, per window, those in [0, d)
    (``count_include_pad`` 0) or in [-b, d + e) (1), as onnxruntime's kernel counts them (measured
    on 1,327 random forms): a constant of the output's spatial shape. float16 and bfloat16 go in
    float32, rounded once at the end. auto_pad at version 11 is counted as later versions restate it
    (:data:`COUNTED_AS`), as onnxruntime counts it. Not lowered: below opset 7, x's rank or spatial
    sizes unknown, the auto_pad
    forms onnxruntime's kernel pads or counts otherwise than the spec
    (:func:`_refuse_padding_counted_apart`), an axis with no window or a window holding no
    element of x (0 / 0), a type whose Conv the target does not run (double on onnxruntime),
    attributes stating no positive step per axis."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes Div broadcasting by numpy's rule, from opset {FIRST_OPSET}, not {b.opset}")
    if x.element_type not in COMPUTED_IN:
        raise NotLowered(f"x is of type {schemas.type_name(x.element_type)}, not a float type the rule computes in")
    if not kernel_shape:
        raise NotLowered("AveragePool has no kernel_shape")
    kernel = [int(k) for k in kernel_shape]
    shape = b.shape_of(x)
    if shape is None or len(shape) != len(kernel) + 2 or not all(isinstance(n, int) for n in shape[1:]):
        raise NotLowered(f"x's channel count and spatial sizes are not all known (rank 2 + {len(kernel)})")
    channels, sizes = shape[1], shape[2:]
    spatial = len(kernel)
    strides = [int(s) for s in strides] if strides else [1] * spatial
    dilations = [int(d) for d in dilations] if dilations else [1] * spatial
    given = [int(q) for q in pads] if pads else [0] * (2 * spatial)
    if len(strides) != spatial or len(dilations) != spatial or len(given) != 2 * spatial:
        raise NotLowered(f"strides, dilations or pads do not state one step per each of the {spatial} spatial axes")
    if min(strides + dilations + kernel) < 1:
        raise NotLowered("a stride, dilation or kernel size below 1 makes no window")
    padding = as_text(auto_pad)
    version = b.source_version("AveragePool") or schemas.version_in_force("AveragePool", b.opset)
    if version == COUNTED_TWICE and padding != "NOTSET":
        version = COUNTED_AS
    _refuse_padding_counted_apart(padding, sizes, kernel, strides, dilations, bool(ceil_mode))
    windows = [
        pooled_windows("AveragePool", version, n, kernel[a], strides[a], dilations[a],
                       (given[a], given[spatial + a]), padding, bool(ceil_mode))
        for a, n in enumerate(sizes)
    ]  # fmt: skip
    counts = _counts(sizes, kernel, strides, dilations, windows, bool(count_include_pad))
    computed = COMPUTED_IN[x.element_type]
    if not b.runs("Conv", Value(x.name, computed)):
        raise NotLowered(f"the target runs no Conv-{b.opset} on {schemas.type_name(computed)}")
    dtype = floats.numpy_dtype(computed)
    ends = [
        max((count - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1 - sizes[a] - before, 0)
        for a, (count, before, _) in enumerate(windows)
    ]  # (the end padding that gives each window and no more: a ceil_mode window's padding adds 0)
    begins = [before for _, before, _ in windows]
    for axis, (count, before, _) in enumerate(windows):  # (the Conv's windows: floor((d + b + e - extent) / s) + 1)
        extent = (kernel[axis] - 1) * dilations[axis] + 1
        if (sizes[axis] + before + ends[axis] - extent) // strides[axis] + 1 != count:
            raise NotLowered(f"along spatial axis {axis} a Conv pools {count} windows otherwise")
    wide = b.Cast(x, to=computed) if computed != x.element_type else x
    ones = b.tensor(np.ones([channels, 1, *kernel], dtype), "ones")
    sums = b.Conv(
        wide, ones, kernel_shape=kernel, strides=strides, dilations=dilations, group=channels, pads=begins + ends
    )
    n = b.scalar(counts.flat[0], computed, "count") if (counts == counts.flat[0]).all() else None
    averages = b.Div(sums, n if n is not None else b.tensor(counts.astype(dtype)[np.newaxis, np.newaxis], "counts"))
    return b.Cast(averages, to=x.element_type) if computed != x.element_type else averages


def _refuse_padding_counted_apart(padding: str, sizes, kernel, strides, dilations, ceil_mode: bool):
    """Refuse the auto_pad forms whose windows onnxruntime's kernel pads or counts otherwise than
    the spec (measured on 3,000 random forms: SAME with dilations or a window shorter than its
    stride; VALID with ceil_mode where the stride does not divide the span)."""
    if padding.startswith("SAME"):
        if any(d != 1 for d in dilations) or any(k < s for k, s in zip(kernel, strides, strict=True)):
            raise NotLowered(
                f"auto_pad {padding} with dilations {dilations} or a window shorter than its stride {strides}: "
                "onnxruntime's AveragePool pads those otherwise than the spec (measured)"
            )
    if (
        padding == "VALID"
        and ceil_mode
        and any(
            valid_ceil_counted_apart(n, k, s, d) for n, k, s, d in zip(sizes, kernel, strides, dilations, strict=True)
        )
    ):
        raise NotLowered(f"auto_pad VALID with ceil_mode=1 and strides {strides}: its schema and onnxruntime count "
                         "the windows otherwise")  # fmt: skip


def _counts(sizes, kernel, strides, dilations, windows, include_pad: bool) -> np.ndarray:
    """Per output position, how many of its window's positions are averaged: the product over the
    axes of those in [0, d) (or [-b, d + e) with ``include_pad``), window i's positions being
    i·s - b + j·t for j < k. Refused where an axis has no window or a window holds no element."""
    per_axis = []
    axes = zip(sizes, kernel, strides, dilations, windows, strict=True)
    for axis, (d, k, s, t, (count, before, after)) in enumerate(axes):
        if count < 1:
            raise NotLowered(f"along spatial axis {axis} (size {d}) it has no window")
        if before < 0 or after < 0:
            raise NotLowered(f"its padding along spatial axis {axis} is negative")
        positions = np.arange(count)[:, None] * s - before + np.arange(k)[None, :] * t
        inside = ((positions >= 0) & (positions < d)).sum(axis=1)
        if (inside == 0).any():
            raise NotLowered(
                f"a window along spatial axis {axis} holds no element of x (a ceil_mode window starting in the end "
                "padding, which versions before 22 keep and onnxruntime drops, or padding wider than the window)"
            )
        per_axis.append(((positions >= -before) & (positions < d + after)).sum(axis=1) if include_pad else inside)
    counts = np.ones([len(c) for c in per_axis], np.int64)
    for axis, axis_counts in enumerate(per_axis):
        counts = counts * axis_counts.reshape([-1 if a == axis else 1 for a in range(len(per_axis))])
    return counts
