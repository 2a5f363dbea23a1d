"""ConvTranspose (versions 1, 11, 22, no function body) lowered to X's elements gathered where each
output position meets a kernel position, and one MatMul per group with the weights."""

from __future__ import annotations

import itertools
import math

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .conv import checked_geometry, guard_columns
from .versions.pool import padding_before

EMITS = ("Reshape", "Transpose", "Gather", "Where", "MatMul", "Add", "Cast", "Constant")
# The most kernel offsets the rule unrolls (a few nodes each).
MOST_OFFSETS = 256
# The rule writes ops as they are from this opset on (Where from 9), int64 Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# How far the lowered ConvTranspose may stray from the op, per float type. Measured
# (tests/rules/test_conv_transpose_lowering.py) against onnxruntime's ConvTranspose kernel (float)
# and onnx.reference's (float64, rounded once: double, float16, bfloat16) on standard normal
# inputs and weights, with groups, strides, dilations, pads, output_padding and output_shape, 1-D
# to 3-D, 1 to 2048 channels: float bit for bit with onnxruntime's kernel on most shapes (its GEMM
# sums over the channels, its col2im adds the kernel positions in order, as the rule does), within
# 2.4e-7 on the small ones and 9.2e-5 on outputs of about 300 (1024 channels, stride 1) where it
# takes another path: the absolute tolerance covers such cancelling sums; double as the reference,
# float16 within 2^-12 absolute, bfloat16 (in float32, rounded once) as the reference rounds it.
CONV_TRANSPOSE_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=2e-4),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-8, atol=2**-8),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=2**-7),
}


@rule("ConvTranspose", versions=(1, 11, 22), emits=EMITS, rounding_invariant=False, tolerance=CONV_TRANSPOSE_TOLERANCE)
def conv_transpose_by_gathered_inputs(
    b: Builder,
    x: Value,
    w: Value,
    bias: Value | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    output_padding: list[int] | None = None,
    output_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Value:
    """ConvTranspose(X [N, C, d...], W [C, M/g, k...], B) = Y [N, M, o...]:
    ``Y[n, m, o] = Σ_{c, k} X[n, g(m)·C/g + c, i] · W[g(m)·C/g + c, m mod M/g, k] + B[m]`` over
    the kernel positions k where ``i = (o + pad_before - k·d) / s`` is a whole position of X.

    Per kernel position k (the kernel's order), X flattened over its spatial axes is gathered at
    each output position's i (an int64 constant [P], clipped) and multiplied by W's slice at k
    (``MatMul(W_k [g, M/g, C/g], X_k [N, g, C/g, P])``), the products where i is not a position
    of X replaced by 0 with Where (after the product: an infinite weight times no input adds
    nothing, as in the kernel, which scatters only the inputs' products); ``Y = ((0 + Y_0) + Y_1)
    + ...`` plus B: onnxruntime's order (its GEMM sums over the channels, its col2im adds the
    kernel positions in turn). In float32 where the target computes the type no other way
    (bfloat16), rounded once.
    Output sizes and padding as onnxruntime counts them: ``o = s·(d - 1) + output_padding +
    dilated kernel - pads`` (VALID: no pads); with output_shape, or SAME (``o = d·s``), the total
    padding ``t = s·(d - 1) + output_padding + dilated kernel - o``, ``⌊t/2⌋`` before for
    SAME_UPPER, ``t - ⌊t/2⌋`` otherwise (measured, as the operator's description splits it); a
    negative t from output_shape pads nothing, the positions at the end no input reaches 0 plus
    B. Within :data:`CONV_TRANSPOSE_TOLERANCE` of the op.
    Not lowered: what onnxruntime refuses (:func:`rules.conv.checked_geometry`; W's input channels
    not C, output_padding or output_shape not fitting X's axes, output_padding not below the
    stride, output_shape longer than ``s·d + dilated kernel - 1``), SAME padding less than nothing
    (onnxruntime answers the full output, the description d·s), X's rank, channels or spatial
    sizes or W's shape unknown, a size of 0, no output position, more than 2^20 kernel-by-output
    positions or 2^24 values gathered per image, more than 256 kernel positions, no output
    position any input reaches, opsets below 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    geometry = checked_geometry(
        b, x, w, bias, "ConvTranspose", group, kernel_shape, strides, dilations, pads, auto_pad
    )  # fmt: skip
    sizes, channels, kernel = geometry.sizes, geometry.channels, geometry.kernel
    strides, dilations, axes = geometry.strides, geometry.dilations, len(geometry.sizes)
    if geometry.w_shape[0] != channels:
        raise NotLowered(f"W holds {geometry.w_shape[0]} input channels, X {channels}: the op fails")
    out_per_group = geometry.w_shape[1]
    extra = list(output_padding or [0] * axes)
    wanted = list(output_shape) if output_shape else None
    if len(extra) != axes or (wanted is not None and len(wanted) != axes):
        raise NotLowered(f"output_padding {extra} or output_shape {output_shape} do not fit {axes} spatial axes")
    if any(not 0 <= e < s for e, s in zip(extra, strides, strict=True)):
        raise NotLowered(f"output_padding {extra} is not below strides {strides}: onnxruntime refuses it")
    longest = [s * n + (k - 1) * d for s, n, k, d in zip(strides, sizes, kernel, dilations, strict=True)]
    if wanted is not None and any(o > most for o, most in zip(wanted, longest, strict=True)):
        raise NotLowered(
            f"output_shape {wanted} is longer than s·d + dilated kernel - 1 ({longest}): onnxruntime refuses it"
        )
    windows = [
        _output(size, kernel[a], strides[a], dilations[a], extra[a], geometry.pads[a::axes], geometry.auto_pad,
                None if wanted is None else wanted[a])
        for a, size in enumerate(sizes)
    ]  # fmt: skip
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    outputs = [count for count, _ in windows]
    guard_columns(channels, len(offsets), math.prod(outputs))
    if len(offsets) > MOST_OFFSETS:
        raise NotLowered(f"its kernel has {len(offsets)} offsets, more than the {MOST_OFFSETS} the rule unrolls")
    positions, inside = _positions(sizes, windows, offsets, strides, dilations)
    element_type = x.element_type
    if not all(b.runs(op, x, index) for op, index in (("Where", 1), ("MatMul", 0), ("Add", 0))):
        x, w = b.computable(x), b.computable(w)  # (bfloat16 in float32, rounded once at the end)
        bias = b.computable(bias) if bias is not None else None
    per_group = channels // group
    flat = b.Reshape(x, b.ints([0, group, per_group, math.prod(sizes)], "spatial_flat"))  # [N, g, C/g, d]
    weights = b.Reshape(w, b.ints([group, per_group, out_per_group, len(offsets)], "grouped"))
    weights = b.Transpose(weights, perm=[3, 0, 2, 1])  # [K, g, M/g, C/g]
    int64 = TensorProto.INT64
    y = None
    for k in range(len(offsets)):  # Σ_k, k in the kernel's order, from 0: onnxruntime's col2im
        if not inside[k].any():
            continue
        taken = b.Gather(flat, b.tensor(positions[k], "positions"), axis=3)  # [N, g, C/g, P]
        product = b.MatMul(b.Gather(weights, b.scalar(k, int64, "offset"), axis=0), taken)  # [N, g, M/g, P]
        if not inside[k].all():  # (masked after the product: an infinite weight times nothing is nothing)
            product = b.Where(b.tensor(inside[k], "inside"), product, b.constant(0, like=x, hint="zero"))
        y = b.Add(b.constant(0, like=x, hint="zero"), product) if y is None else b.Add(y, product)
    if y is None:
        raise NotLowered("no output position meets an input")
    out_channels = group * out_per_group
    y = b.Reshape(y, b.ints([0, out_channels, *outputs], "output"))  # [N, M, o...]
    if bias is not None:
        y = b.Add(y, b.Reshape(bias, b.ints([out_channels, *[1] * axes], "bias")))
    return y if y.element_type == element_type else b.Cast(y, to=element_type)


def _output(
    size: int, kernel: int, stride: int, dilation: int, extra: int, pads: list[int], auto_pad: str,
    wanted: int | None,
) -> tuple[int, int]:  # fmt: skip
    """(output positions, padding before) along one axis, as onnxruntime counts them."""
    extent = (kernel - 1) * dilation + 1
    full = stride * (size - 1) + extra + extent  # the output before any padding
    if wanted is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        count = wanted if wanted is not None else size * stride
        total = full - count
        if total < 0 and wanted is None:
            raise NotLowered(
                f"auto_pad {auto_pad} pads {total} along an axis of {size}: onnxruntime answers the full "
                f"{full} positions, the operator's description {count}"
            )
        total = max(total, 0)  # (output_shape longer than the full output: positions at the end no input reaches)
        before = padding_before(total, auto_pad)
    elif auto_pad == "VALID":
        count, before = full, 0
    else:
        count, before = full - pads[0] - pads[1], pads[0]
    if count < 1:
        raise NotLowered(f"along an axis of {size} the output has {count} positions")
    return count, before


def _positions(sizes, windows, offsets, strides, dilations) -> tuple[np.ndarray, np.ndarray]:
    """[K, P]: for each kernel offset, the flat position in X that each output position reads
    (clipped into X), and whether it is one: ``(o + before - k·d) / s`` whole and inside X."""
    grids = np.meshgrid(*(np.arange(count) for count, _ in windows), indexing="ij")
    positions, inside = [], []
    for offset in offsets:
        shifted = [grids[a] + windows[a][1] - offset[a] * dilations[a] for a in range(len(sizes))]
        places = [np.floor_divide(v, s) for v, s in zip(shifted, strides, strict=True)]
        whole = [v % s == 0 for v, s in zip(shifted, strides, strict=True)]
        within = np.logical_and.reduce(
            [w & (p >= 0) & (p < n) for w, p, n in zip(whole, places, sizes, strict=True)]
        )  # fmt: skip
        clipped = [np.clip(p, 0, n - 1) for p, n in zip(places, sizes, strict=True)]
        positions.append(np.ravel_multi_index(clipped, sizes).reshape(-1))
        inside.append(within.reshape(-1))
    return np.stack(positions).astype(np.int64), np.stack(inside)
