"""IsNaN (versions 9, 13, 20) lowered to comparisons."""

from __future__ import annotations

from lowering.registry import Builder, Value, rule


@rule("IsNaN", versions=(9, 13, 20))
def isnan_by_self_comparison(b: Builder, x: Value) -> Value:
    """IsNaN(x) = Not(Equal(x, x)): NaN is the one value unequal to itself.

    Where Equal takes no floats (opsets below 11): IsNaN(x) = Not(Greater(Abs(x), -1)),
    since every number has |x| >= 0 > -1 and every comparison with NaN is false.
    Types the target cannot compare in are first cast, exactly, to float32.
    """
    x = b.computable(x)
    if b.accepts("Equal", x):
        return b.Not(b.Equal(x, x))
    return b.Not(b.Greater(b.Abs(x), b.constant(-1.0, like=x, hint="minus_one")))
