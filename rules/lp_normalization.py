"""LpNormalization (versions 1, 22, no function body) lowered to a norm reduced along the axis and
a division, zero where the norm is zero."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

# The norm is a sum along the axis, which the reduction may add in another order than the op's
# kernel: a few units in the last place of the type (the division and the square root are the
# same correctly rounded operations); 16-bit floats, computed in float32, round once at the end.
LP_NORMALIZATION_TOLERANCE = {
    onnx.TensorProto.FLOAT: Tolerance(rtol=1e-6, atol=1e-30),
    onnx.TensorProto.DOUBLE: Tolerance(rtol=1e-14, atol=1e-300),
    onnx.TensorProto.FLOAT16: Tolerance(rtol=2e-3, atol=1e-7),
    onnx.TensorProto.BFLOAT16: Tolerance(rtol=1.6e-2, atol=1e-30),
}
NORMS = {1: "ReduceL1", 2: "ReduceL2"}
WHERE_OPSET = schemas.first_opset("Where")


def lp_normalization_reference(x: np.ndarray, *, axis: int = -1, p: int = 2) -> np.ndarray:
    """``x / ||x||_p`` along the axis, 0 where the norm is 0 (the spec), computed in float64 with
    each |x|^p and the sum rounded to the type the rule computes in (float32 for 16-bit floats,
    else x's own), so overflowing and underflowing as it does; the quotient rounded to x's type."""
    compute = np.float32 if x.dtype.itemsize < 4 else x.dtype
    with np.errstate(all="ignore"):
        terms = (np.abs(x.astype(np.float64)) ** p).astype(compute).astype(np.float64)
        norm = np.sum(terms, axis=axis, keepdims=True).astype(compute).astype(np.float64) ** (1.0 / p)
        result = np.where(norm == 0, 0.0, x.astype(np.float64) / norm)
    return result.astype(compute).astype(x.dtype)


@rule(
    "LpNormalization",
    versions=(1, 22),
    reference=lp_normalization_reference,
    tolerance=LP_NORMALIZATION_TOLERANCE,
    emits=("Cast", "ReduceL1", "ReduceL2", "Greater", "Div", "Sub", "Where", "Constant"),
)
def lp_normalization_by_norm(b: Builder, x: Value, *, axis: int = -1, p: int = 2) -> Value:
    """LpNormalization(x, axis=a, p) = Where(n > 0, x / n, n - n), n = ReduceLp(x, [a], keepdims=1).

    ReduceL1 (``Σ|x|``) for p = 1 and ReduceL2 (``sqrt(Σx²)``) for p = 2, kept as an axis of
    length 1 so the division broadcasts. Where every element along the axis is 0 the norm is 0
    and the output ``n - n``, +0 (the spec; onnxruntime's kernel too); a NaN norm fails n > 0
    and gives ``n - n``, NaN, as x / n would (Greater, not Equal, which takes no float below
    opset 11). The sum may add in another order than the op's kernel (the stated tolerance); a
    norm that overflows is infinite, and x / inf is 0, as in the kernel. 16-bit floats are
    computed in float32 (cast exactly, the quotient rounded once back). Only p 1 and 2 (the
    schema's); from opset 9 (Where).
    """
    if p not in NORMS:
        raise NotLowered(f"p {p} is not 1 or 2, which LpNormalization takes")
    if b.opset < WHERE_OPSET:
        raise NotLowered(f"Where, which keeps a line of zeros 0, does not exist at opset {b.opset}")
    if not b.runs("Where", b.computable(x, emit=False), input_index=1):
        raise NotLowered(f"Where does not run on x's type at opset {b.opset} on the target")
    wide = b.computable(x)
    norm = b.over_axes(NORMS[p], wide, [axis], keepdims=1)
    positive = b.Greater(norm, b.constant(0, like=wide, hint="zero"))
    y = b.Where(positive, b.Div(wide, norm), b.Sub(norm, norm))
    return y if wide is x else b.Cast(y, to=x.element_type)
