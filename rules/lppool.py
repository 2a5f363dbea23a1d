"""LpPool (versions 1, 2, 11, 18, 22, no function body) lowered to a depthwise Conv of ones over |x|^p."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from lowering import floats, schemas
from lowering.conversion.adapters import as_text
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

from .versions.pool import pooled_windows, valid_ceil_counted_apart

EMITS = ("Abs", "Pow", "Conv", "Cast", "Constant")
# Pow broadcasts its scalar exponent by numpy's rule from opset 7 (before, only with broadcast=1).
FIRST_OPSET = 7

# The types the rule computes in: float and double as they are, float16 and bfloat16 in float32,
# rounded once at the end.
COMPUTED_IN = {
    TensorProto.FLOAT: TensorProto.FLOAT,
    TensorProto.DOUBLE: TensorProto.DOUBLE,
    TensorProto.FLOAT16: TensorProto.FLOAT,
    TensorProto.BFLOAT16: TensorProto.FLOAT,
}

# How far the lowered LpPool may stray from the op, per float type. The powers and the root are
# the kernel's (std::pow of |x| by p, of the sum by 1/p); the sum of a window comes in another
# order (Conv's, where the kernel walks the window). Measured on standard normal inputs times 3,
# kernels of 2 to 27 positions, p of 1 to 4 (tests/rules/test_lppool_lowering.py): float at most
# 3.1e-7 from onnxruntime's LpPool kernel and 1.8e-7 from onnx.reference (float64 sums), where the
# kernel itself is 2.4e-7 from it; float16 and bfloat16 computed in float32 and rounded once, so
# at most one unit in their last place.
LP_POOL_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-5, atol=1e-6),
    TensorProto.DOUBLE: Tolerance(rtol=1e-12, atol=1e-12),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=1e-3),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=1e-2),
}


@rule("LpPool", versions=(1, 2, 11, 18, 22), emits=EMITS, rounding_invariant=False, tolerance=LP_POOL_TOLERANCE)
def lp_pool_by_conv(
    b: Builder,
    x: Value,
    *,
    kernel_shape=None,
    p=2,
    strides=None,
    pads=None,
    dilations=None,
    auto_pad="NOTSET",
    ceil_mode: int = 0,
) -> Value:
    """LpPool(x, p) = Pow(Conv(Pow(Abs(x), p), 1, group=C), 1/p): each window's (Σ |x_i|^p)^(1/p).

    The sum over a window is a depthwise Conv (one group per channel) of a kernel of ones, with
    the op's kernel, strides, dilations, pads and auto_pad (as explicit pads where the spatial
    sizes are known): a padded position adds |0|^p = 0, as the op's zero padding does.
    ceil_mode=1 only where it adds no window (the pooled sizes the same in floor mode; Conv has
    no ceil mode). float16 and bfloat16 go in float32, rounded once at the end. Not lowered:
    x's rank or channel count unknown, p not positive, an axis with no window (onnxruntime's
    LpPool gives an empty output there, its Conv fails), auto_pad SAME with dilations or with
    a window shorter than its stride (onnxruntime's LpPool pads those otherwise than the spec)
    or with strides across opset 11 (which changed its meaning), ceil_mode=1 adding a window or
    with unknown sizes, a type whose Conv the target does not run (double on onnxruntime),
    below opset 7.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes Pow broadcasting by numpy's rule, from opset {FIRST_OPSET}, not {b.opset}")
    if x.element_type not in COMPUTED_IN:
        raise NotLowered(f"x is of type {schemas.type_name(x.element_type)}, not a float type the rule computes in")
    if not kernel_shape:
        raise NotLowered("LpPool has no kernel_shape")
    kernel = [int(k) for k in kernel_shape]
    shape = b.shape_of(x)
    if shape is None or len(shape) != len(kernel) + 2:
        raise NotLowered(f"x's rank is unknown or not 2 + {len(kernel)} (its kernel's spatial axes)")
    channels = shape[1]
    if not isinstance(channels, int):
        raise NotLowered("x's channel count is unknown (the Conv's group and kernel need it)")
    exponent = float(p)
    if not exponent > 0 or not math.isfinite(exponent):
        raise NotLowered(f"p is {p}, not a positive number")
    spatial = len(kernel)
    strides = [int(s) for s in strides] if strides else [1] * spatial
    dilations = [int(d) for d in dilations] if dilations else [1] * spatial
    pads = [int(q) for q in pads] if pads else [0] * (2 * spatial)
    padding = as_text(auto_pad)
    if padding.startswith("SAME") and any(s != 1 for s in strides) and not _same_means_alike(b):
        raise NotLowered(
            f"auto_pad {padding} with strides {strides}: before opset 11 it pads to the input's length, from 11 to "
            "ceil(length / stride), and the node and the Conv written are not both of 11 or later"
        )
    if padding.startswith("SAME") and any(d != 1 for d in dilations):
        raise NotLowered(
            f"auto_pad {padding} with dilations {dilations}: onnxruntime's LpPool, the spec and its Conv (which "
            "refuses the two together) pool differently"
        )
    sizes = shape[2:]
    if all(isinstance(n, int) for n in sizes):  # (explicit pads: every runtime takes them)
        pads, padding = _conv_pads(b, sizes, kernel, strides, dilations, pads, padding, bool(ceil_mode)), "NOTSET"
    elif ceil_mode:
        raise NotLowered("ceil_mode=1 with spatial sizes unknown: Conv has no ceil mode")
    computed = COMPUTED_IN[x.element_type]
    if not b.runs("Conv", Value(x.name, computed)):
        raise NotLowered(f"the target runs no Conv-{b.opset} on {schemas.type_name(computed)}")
    wide = b.Cast(x, to=computed) if computed != x.element_type else x
    dtype = floats.numpy_dtype(computed)
    powered = b.Pow(b.Abs(wide), b.scalar(exponent, computed, "p"))
    ones = b.tensor(np.ones([channels, 1, *kernel], dtype), "ones")
    attributes = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "group": channels}
    if padding == "NOTSET":
        attributes["pads"] = pads
    else:
        attributes["auto_pad"] = padding
    sums = b.Conv(powered, ones, **attributes)
    root = b.Pow(sums, b.scalar(dtype.type(1) / dtype.type(exponent), computed, "root"))  # (1/p as the kernel's)
    return b.Cast(root, to=x.element_type) if computed != x.element_type else root


def _same_means_alike(b: Builder) -> bool:
    """Whether the node's LpPool and the Conv written both state SAME as version 11 does (which
    pads to ceil(length / stride); before 11, to the input's length)."""
    source = b.source_version("LpPool")
    return source is not None and source >= 11 and b.opset >= 11


def _conv_pads(b: Builder, sizes, kernel, strides, dilations, pads, padding: str, ceil_mode: bool) -> list[int]:
    """The pads (begins, then ends) of a Conv in floor mode pooling the windows the node pools
    along axes of known ``sizes`` (:func:`rules.versions.pool.pooled_windows`, the formulas of
    the node's LpPool version); refused where an axis has no window, where auto_pad pads less
    than nothing (SAME with a window shorter than its stride, which onnxruntime's LpPool pads
    otherwise than the spec says), where ceil_mode adds a window that floor mode does not, or
    under VALID where ceil_mode counts windows otherwise in the schema and in onnxruntime."""
    version = b.source_version("LpPool") or schemas.version_in_force("LpPool", b.opset)
    begins, ends = [], []
    for axis, n in enumerate(sizes):
        k, s, d = kernel[axis], strides[axis], dilations[axis]
        given = (pads[axis], pads[len(sizes) + axis])
        if padding == "VALID" and ceil_mode and valid_ceil_counted_apart(n, k, s, d):
            raise NotLowered(
                f"it takes auto_pad VALID with ceil_mode=1 and strides {strides}, whose windows its schema and "
                f"onnxruntime count otherwise along spatial axis {axis} (size {n}: the stride does not divide the span)"
            )
        count, before, after = pooled_windows("LpPool", version, n, k, s, d, given, padding, ceil_mode)
        if count < 1:
            raise NotLowered(f"along spatial axis {axis} (size {n}) it has no window (a Conv of none fails)")
        if before < 0 or after < 0:
            raise NotLowered(
                f"auto_pad {padding} with a window ({(k - 1) * d + 1}) shorter than its stride ({s}) along spatial "
                f"axis {axis}: onnxruntime's LpPool then pads otherwise than the spec says"
            )
        if (n + before + after - (k - 1) * d - 1) // s + 1 != count:
            raise NotLowered(f"ceil_mode=1 adds a window along spatial axis {axis} (size {n}): Conv has no ceil mode")
        begins.append(before)
        ends.append(after)
    return begins + ends
