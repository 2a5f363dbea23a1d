"""IsInf (versions 10, 20) lowered to comparisons with the largest finite value."""

from __future__ import annotations

import numpy as np

from lowering import floats
from lowering.registry import Builder, Value, rule


def isinf_reference(x: np.ndarray, *, detect_positive: int = 1, detect_negative: int = 1) -> np.ndarray:
    """+inf where detect_positive, -inf where detect_negative, on x widened exactly to float64."""
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64)
    return (np.isposinf(wide) & bool(detect_positive)) | (np.isneginf(wide) & bool(detect_negative))


@rule("IsInf", versions=(10, 20), rounding_invariant=False, reference=isinf_reference)
def isinf_by_comparison(b: Builder, x: Value, *, detect_positive: int = 1, detect_negative: int = 1) -> Value:
    """IsInf(x) = Greater(Abs(x), M), with M the largest value that rounds to a finite value of x's type.

    both signs:     IsInf(x) = Greater(Abs(x), M)
    +inf only:      IsInf(x) = Greater(x, M)
    -inf only:      IsInf(x) = Less(x, -M)
    neither, or a type without infinity (float8e4m3fn, e4m3fnuz, e5m2fnuz): all false,
                    Less(x, x) where x needs no cast (no value is below itself; NaN compares
                    false), else ConstantOfShape(Shape(x), false) where the target runs Shape on
                    x's type (no value read, no cast), else Less on x cast.
    Only ±inf lie beyond ±M, and NaN fails every comparison, so NaN maps to false.
    Types the target cannot compare in are first cast, exactly, to float32, and M is then the
    float32 value just below the midpoint past the type's largest finite (float16: 65519.996, as
    65520 rounds to inf). Exact values of the type lie at or below their largest finite or are
    ±inf, so either bound would do for them; this one also holds for an unrounded float32 value
    that stands for a float16 one (onnxruntime runs float16 Mul/Add in float32 and drops the Cast
    pair around them, so Cast(Mul(a, b), float32) can hold 4.29e9 where float16 holds inf).
    """
    if not floats.has_infinity(x.element_type) or not (detect_positive or detect_negative):
        if b.computable(x, emit=False) != x and b.runs("Shape", x):
            return b.ConstantOfShape(b.Shape(x), value=b.scalar_tensor(False))
        x = b.computable(x)
        return b.Less(x, x)
    computed = b.computable(x)
    largest = floats.largest_rounding_to_finite(x.element_type, computed.element_type)
    x = computed
    if detect_positive and detect_negative:
        return b.Greater(b.Abs(x), b.constant(largest, like=x, hint="max"))
    if detect_positive:
        return b.Greater(x, b.constant(largest, like=x, hint="max"))
    return b.Less(x, b.constant(-largest, like=x, hint="lowest"))
