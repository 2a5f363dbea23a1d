"""Conv (versions 1, 11, 22, no function body) lowered to X's elements gathered at every window's
kernel positions (im2col) and one MatMul per group with the weights."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.conversion.adapters import as_text
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .versions.pool import padding_before

EMITS = ("Reshape", "Gather", "Where", "MatMul", "Add", "Cast", "Constant")
# The rule writes ops as they are from this opset on (Where from 9), int64 Constants among them.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)
# The most elements the gathered positions hold (kernel positions × output positions): the
# positions are one int64 constant.
MOST_GATHERED = 2**20
# The most values the rule gathers per image (channels × kernel positions × output positions).
MOST_COLUMNS = 2**24

# How far the lowered Conv may stray from the op, per float type. Measured
# (tests/rules/test_conv_lowering.py) against onnxruntime's Conv kernel (float) and onnx.reference's
# (float64, rounded once: double, float16, bfloat16) on standard normal inputs and weights, with
# groups, strides, dilations, pads and auto_pad, 1-D to 3-D, outputs up to about 10: float bit
# for bit with onnxruntime's kernel (its Conv and MatMul share one GEMM, the columns in the same
# order), double within 1.5e-14 of the value (K·C/g up to 50; the tolerance leaves room for
# thousands of terms), float16 within one unit in the last place (onnxruntime's MatMul sums
# float16 products in float32 and rounds once), bfloat16 (in float32, rounded once) within
# 2^-8 of the value.
CONV_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-5),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-8, atol=2**-8),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=2**-7),
}


@rule("Conv", versions=(1, 11, 22), emits=EMITS, rounding_invariant=False, tolerance=CONV_TOLERANCE)
def conv_by_gathered_windows(
    b: Builder,
    x: Value,
    w: Value,
    bias: Value | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: list[int] | None = None,
    group: int = 1,
    kernel_shape: list[int] | None = None,
    pads: list[int] | None = None,
    strides: list[int] | None = None,
) -> Value:
    """Conv(X [N, C, d...], W [M, C/g, k...], B) = Y [N, M, o...]:
    ``Y[n, m, o] = Σ_{c, k} X[n, g(m)·C/g + c, o·s + k·d - pad_before] · W[m, c, k] + B[m]``,
    positions in the padding read as 0.

    X flattened over its spatial axes is gathered at each output position's kernel positions
    (one int64 constant [K, P], clipped; positions in the padding replaced by 0 with Where, no
    product with a mask, which would turn an infinity into NaN): columns [N, g, C/g·K, P], the
    channels major as W's; ``Y = MatMul(W [g, M/g, C/g·K], columns)`` per group, plus B; in
    float32 where the target computes the type no other way (bfloat16), rounded once.
    Output sizes and padding as onnxruntime counts them: explicit pads ``⌊(d + pads -
    dilated kernel) / s⌋ + 1``; VALID without padding; SAME_UPPER/LOWER ``⌈d / s⌉`` with the
    padding ``t = max((o - 1)·s + dilated kernel - d, 0)``, ``⌊t/2⌋`` before (SAME_UPPER) or
    ``⌊(t + 1)/2⌋`` (SAME_LOWER); a t of -1 or -2 pads nothing, the last window stops short of
    X's end (measured; below -2 onnxruntime starts its windows elsewhere: refused).
    The sums come in the MatMul's order: within :data:`CONV_TOLERANCE` of the op.
    Not lowered: what onnxruntime refuses (:func:`checked_geometry`; auto_pad SAME with
    dilations, W's channels not C / group, M not divisible by group), SAME padding below -2
    (onnxruntime's windows start elsewhere), X's rank, channels or spatial sizes or W's shape
    unknown, a size of 0, no output position, more than 2^20 kernel-by-output positions or 2^24
    values gathered per image, opsets below 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    geometry = checked_geometry(b, x, w, bias, "Conv", group, kernel_shape, strides, dilations, pads, auto_pad)
    sizes, channels, kernel = geometry.sizes, geometry.channels, geometry.kernel
    strides, dilations, axes = geometry.strides, geometry.dilations, len(geometry.sizes)
    out_channels = geometry.w_shape[0]
    if out_channels % group:
        raise NotLowered(f"M = {out_channels} is not divisible by group {group}: the op fails")
    if geometry.w_shape[1] != channels // group:
        raise NotLowered(
            f"W holds {geometry.w_shape[1]} channels per group, not C / group = {channels // group}: the op fails"
        )
    windows = [
        _windows(size, kernel[a], strides[a], dilations[a], geometry.pads[a::axes], geometry.auto_pad)
        for a, size in enumerate(sizes)
    ]
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    outputs = [count for count, _ in windows]
    guard_columns(channels, len(offsets), math.prod(outputs))
    positions, inside = _positions(sizes, windows, offsets, strides, dilations)
    element_type = x.element_type
    if not all(b.runs(op, x, index) for op, index in (("Where", 1), ("MatMul", 0), ("Add", 0))):
        x, w = b.computable(x), b.computable(w)  # (bfloat16 in float32, rounded once at the end)
        bias = b.computable(bias) if bias is not None else None
    flat = b.Reshape(x, b.ints([0, channels, math.prod(sizes)], "spatial_flat"))  # [N, C, d]
    columns = b.Gather(flat, b.tensor(positions, "positions"), axis=2)  # [N, C, K, P]
    if not inside.all():
        columns = b.Where(b.tensor(inside, "inside"), columns, b.constant(0, like=x, hint="zero"))
    per_group = (channels // group) * len(offsets)
    columns = b.Reshape(columns, b.ints([0, group, per_group, math.prod(outputs)], "columns"))
    weights = b.Reshape(w, b.ints([group, out_channels // group, per_group], "weights"))
    y = b.Reshape(b.MatMul(weights, columns), b.ints([0, out_channels, *outputs], "output"))  # [N, M, o...]
    if bias is not None:
        y = b.Add(y, b.Reshape(bias, b.ints([out_channels, *[1] * axes], "bias")))
    return y if y.element_type == element_type else b.Cast(y, to=element_type)


@dataclass(frozen=True)
class Geometry:
    """A Conv or ConvTranspose node's shapes and attributes, checked: every size known and
    positive, the attributes of the lengths and values the kernel takes."""

    sizes: list[int]  # X's spatial sizes
    channels: int  # C
    w_shape: list[int]
    kernel: list[int]
    strides: list[int]
    dilations: list[int]
    pads: list[int]  # [begin..., end...]
    auto_pad: str


def checked_geometry(
    b: Builder, x: Value, w: Value, bias: Value | None, op_type: str, group: int, kernel_shape, strides, dilations,
    pads, auto_pad: str,
) -> Geometry:  # fmt: skip
    """The node's :class:`Geometry`; refused where a size is unknown or 0 (the rule's constant
    positions need them; Reshape reads a 0 as "keep") or where onnxruntime refuses the node:
    attributes of other lengths, strides or dilations below 1, pads below 0, auto_pad not one of
    its four values or given with pads, C not divisible by group, a bias not shaped [M]."""
    x_shape, w_shape = b.shape_of(x), b.shape_of(w)
    if x_shape is None or len(x_shape) < 3 or None in x_shape[1:]:
        raise NotLowered("X's rank, channels or spatial sizes are unknown, so its windows are unknown")
    if w_shape is None or None in w_shape:
        raise NotLowered("W's shape is not known: the rule reads its channels and kernel from it")
    if 0 in x_shape[1:] or 0 in w_shape:
        raise NotLowered(f"X {x_shape} or W {w_shape} holds a size of 0")
    sizes, channels = [int(s) for s in x_shape[2:]], int(x_shape[1])
    axes = len(sizes)
    if len(w_shape) != axes + 2:
        raise NotLowered(f"W is of rank {len(w_shape)}, X {len(x_shape)}: the op fails")
    kernel = [int(k) for k in w_shape[2:]]
    if kernel_shape is not None and list(kernel_shape) != kernel:
        raise NotLowered(f"kernel_shape {list(kernel_shape)} is not W's kernel {kernel}: the op fails")
    strides, dilations = list(strides or [1] * axes), list(dilations or [1] * axes)
    auto_pad = as_text(auto_pad)
    if auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise NotLowered(f"auto_pad {auto_pad!r} is none of NOTSET, SAME_UPPER, SAME_LOWER, VALID: the op fails")
    if pads is not None and auto_pad != "NOTSET":
        raise NotLowered(f"pads given with auto_pad {auto_pad}: onnxruntime refuses the node")
    pads = list(pads or [0] * 2 * axes)
    if len(strides) != axes or len(dilations) != axes or len(pads) != 2 * axes:
        raise NotLowered(f"strides {strides}, dilations {dilations} or pads {pads} do not fit {axes} spatial axes")
    if min(strides) < 1 or min(dilations) < 1 or min(pads) < 0:
        raise NotLowered(f"strides {strides}, dilations {dilations} or pads {pads} hold values the op refuses")
    if group < 1 or channels % group:
        raise NotLowered(f"C = {channels} is not divisible by group {group}: the op fails")
    if bias is not None:
        out_channels = w_shape[0] if op_type == "Conv" else w_shape[1] * group
        bias_shape = b.shape_of(bias)
        if bias_shape is None or None in bias_shape:
            raise NotLowered(f"B's shape {bias_shape} is not known to be [{out_channels}] (M)")
        if bias_shape != [out_channels]:
            raise NotLowered(f"B is shaped {bias_shape}, not [{out_channels}] (M): the op fails")
    return Geometry(sizes, channels, [int(d) for d in w_shape], kernel, strides, dilations, pads, auto_pad)


def guard_columns(channels: int, offsets: int, outputs: int) -> None:
    """Refused where the gathered positions (K·P, one int64 constant) pass 2^20 or the columns of
    one image (C·K·P values, gathered and masked) pass 2^24."""
    if offsets * outputs > MOST_GATHERED:
        raise NotLowered(
            f"{offsets * outputs} kernel-by-output positions, more than the {MOST_GATHERED} this rule holds as a "
            "constant"
        )
    if channels * offsets * outputs > MOST_COLUMNS:
        raise NotLowered(
            f"{channels * offsets * outputs} values gathered per image, more than the {MOST_COLUMNS} this rule "
            "gathers at once"
        )


def _windows(size: int, kernel: int, stride: int, dilation: int, pads: list[int], auto_pad: str) -> tuple[int, int]:
    """(output positions, padding before) along one axis, as onnxruntime counts them."""
    extent = (kernel - 1) * dilation + 1
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if dilation != 1:
            raise NotLowered(f"auto_pad {auto_pad} with dilation {dilation}: onnxruntime's kernel refuses it")
        count = -(-size // stride)
        total = (count - 1) * stride + extent - size
        if total < -2:
            raise NotLowered(
                f"auto_pad {auto_pad} pads {total} along an axis of {size}: where the padding is below -2, "
                "onnxruntime's windows start elsewhere than the description's (measured)"
            )
        total = max(total, 0)  # (-1 or -2: no padding, the last window stops short of X's end; measured)
        before = padding_before(total, auto_pad)
    elif auto_pad == "VALID":
        count, before = (size - extent) // stride + 1, 0
    else:
        count, before = (size + pads[0] + pads[1] - extent) // stride + 1, pads[0]
    if count < 1:
        raise NotLowered(f"along an axis of {size} the kernel of extent {extent} leaves no output position")
    return count, before


def _positions(sizes, windows, offsets, strides, dilations) -> tuple[np.ndarray, np.ndarray]:
    """[K, P]: each kernel offset's flat position in X at each output position (clipped into
    X), and whether it lies inside X (not in the padding)."""
    grids = np.meshgrid(*(np.arange(count) for count, _ in windows), indexing="ij")
    positions, inside = [], []
    for offset in offsets:
        places = [
            grids[a] * strides[a] - windows[a][1] + offset[a] * dilations[a] for a in range(len(sizes))
        ]  # fmt: skip
        within = np.logical_and.reduce([(p >= 0) & (p < s) for p, s in zip(places, sizes, strict=True)])
        clipped = [np.clip(p, 0, s - 1) for p, s in zip(places, sizes, strict=True)]
        positions.append(np.ravel_multi_index(clipped, sizes).reshape(-1))
        inside.append(within.reshape(-1))
    return np.stack(positions).astype(np.int64), np.stack(inside)
