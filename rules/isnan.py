"""IsNaN (versions 9, 13, 20) lowered to comparisons."""

from __future__ import annotations

import numpy as np

from lowering.registry import Builder, Value, rule


def isnan_reference(x: np.ndarray) -> np.ndarray:
    """numpy's isnan on x widened, exactly, to float64 (bfloat16 and float8 included)."""
    with np.errstate(all="ignore"):
        return np.isnan(x.astype(np.float64))


@rule("IsNaN", versions=(9, 13, 20), reference=isnan_reference)
def isnan_by_self_comparison(b: Builder, x: Value) -> Value:
    """IsNaN(x) = Equal(Equal(x, x), false): NaN is the one value unequal to itself.

    Where Equal takes no floats (opsets below 11): IsNaN(x) = Equal(Greater(Abs(x), -1), false),
    since every number has |x| >= 0 > -1 and every comparison with NaN is false.
    Types the target cannot compare in are first cast, exactly, to float32.
    The negation is a comparison with false, not Not: onnxruntime rewrites Where(Not(c), a, b)
    into Where(c, b, a), and its Where kernel then returns +0 for a -0 in b.
    """
    x = b.computable(x)
    is_number = (
        b.Equal(x, x) if b.accepts("Equal", x) else b.Greater(b.Abs(x), b.constant(-1.0, like=x, hint="minus_one"))
    )
    return b.Equal(is_number, b.constant_bool(False))
