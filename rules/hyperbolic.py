"""Sinh, Cosh, Asinh, Acosh and Atanh (versions 9, 22, no function body) lowered to Exp, Log and
Sqrt of x computed in float64, cast back to x's type."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

# Below this |x| a Taylor polynomial stands for the formula, whose difference or logarithm of 1 + a
# small number would lose up to 2^-52 / |x| of it; the terms left out weigh under 2^-50 of the
# answer there (Sinh 2^-60, Asinh 2^-52.5, Atanh 2^-50.8), far below any output type's rounding.
SMALL = 2.0**-8
# The float64 answer, a few 2^-53 of it away from the exact value, rounds to within an ulp of it
# (onnxruntime casts float64 to float16 and bfloat16 through float32: twice), and the op's own
# kernel is within another: 2 ulps, |want| · 2^-(mantissa bits - 1), and twice the type's
# subnormal spacing where the answer underflows as x does.
HYPERBOLIC_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=2.0**-22, atol=2.0**-148),
    TensorProto.FLOAT16: Tolerance(rtol=2.0**-9, atol=2.0**-23),
    TensorProto.BFLOAT16: Tolerance(rtol=2.0**-6, atol=2.0**-132),
}
EMITS = ("Cast", "Abs", "Exp", "Log", "Sqrt", "Mul", "Add", "Sub", "Div", "Neg", "Less", "Where", "Constant")


def _rounded(function):
    def reference(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return function(x.astype(np.float64)).astype(x.dtype)

    reference.__name__ = f"{function.__name__}_rounded"
    reference.__doc__ = f"numpy's {function.__name__} of x in float64, rounded once to x's type."
    return reference


def _in_float64(b: Builder, x: Value) -> Value:
    """x as float64 (exactly: every float16, bfloat16 and float32 is one); double declined."""
    if x.element_type == TensorProto.DOUBLE:
        raise NotLowered("x is double: float64 is the widest type to compute in, and its formula would round finer")
    return b.Cast(x, to=TensorProto.DOUBLE)


def _taylor_below_small(b: Builder, x: Value, general: Value, taylor: Value) -> Value:
    """Where(Less(2^-8, |x|), general, taylor): the Taylor polynomial second, where onnxruntime's
    Where keeps a -0.0 (it gives +0.0 for a -0.0 it selects from its second input); NaN to it,
    which it keeps."""
    return b.Where(b.Less(b.scalar(SMALL, TensorProto.DOUBLE, "small"), b.Abs(x)), general, taylor)


def _odd_taylor(b: Builder, x: Value, coefficients: tuple[float, ...]) -> Value:
    """x · (1 + c₁·x² + c₂·x⁴ + …) (Horner's rule in x²): a product with x, whose factor is near 1,
    so that ±0 keep their sign."""
    square = b.Mul(x, x)
    total = b.scalar(coefficients[-1], TensorProto.DOUBLE, "coefficient")
    for coefficient in (*reversed(coefficients[:-1]), 1.0):
        total = b.Add(b.scalar(coefficient, TensorProto.DOUBLE, "coefficient"), b.Mul(square, total))
    return b.Mul(x, total)


def _half(b: Builder, value: Value) -> Value:
    return b.Mul(value, b.scalar(0.5, TensorProto.DOUBLE, "half"))


def _hyperbolic_rule(op_type: str, function):
    """The rule's registration: every version onnx.defs knows of ``op_type``, checked against
    numpy's ``function`` in float64 rounded to x's type within HYPERBOLIC_TOLERANCE. Not
    rounding-invariant (the answer on a wider, unrounded x is not the answer on x rounded): a node
    kept at an opset whose version lacks x's type is lowered, not fed through a widening Cast."""
    return rule(
        op_type,
        versions=schemas.op_versions(op_type),
        emits=EMITS,
        reference=_rounded(function),
        tolerance=HYPERBOLIC_TOLERANCE,
        rounding_invariant=False,
    )


@_hyperbolic_rule("Sinh", np.sinh)
def sinh_by_exp(b: Builder, x: Value) -> Value:
    """Sinh(x) = (e^x − e^−x) / 2, in float64; x + x³/6 + x⁵/120 where |x| < 2^-8 (the difference
    would cancel). ±0, ±inf and NaN come out as themselves; |x| past 89.4 overflows to ±inf as the
    float32 answer does."""
    wide = _in_float64(b, x)
    general = _half(b, b.Sub(b.Exp(wide), b.Exp(b.Neg(wide))))
    small = _odd_taylor(b, wide, (1 / 6, 1 / 120))
    return b.Cast(_taylor_below_small(b, wide, general, small), to=x.element_type)


@_hyperbolic_rule("Cosh", np.cosh)
def cosh_by_exp(b: Builder, x: Value) -> Value:
    """Cosh(x) = (e^x + e^−x) / 2, in float64 (a sum of two positive terms: nothing cancels)."""
    wide = _in_float64(b, x)
    return b.Cast(_half(b, b.Add(b.Exp(wide), b.Exp(b.Neg(wide)))), to=x.element_type)


@_hyperbolic_rule("Asinh", np.arcsinh)
def asinh_by_log(b: Builder, x: Value) -> Value:
    """Asinh(x) = sign(x) · ln(|x| + √(x² + 1)), in float64; x − x³/6 + 3x⁵/40 where |x| < 2^-8
    (the logarithm of 1 + a small number would lose it). Odd: the sign is taken off and put back,
    so −0 stays −0 and −inf is −inf."""
    wide = _in_float64(b, x)
    size = b.Abs(wide)
    one = b.scalar(1.0, TensorProto.DOUBLE, "one")
    magnitude = b.Log(b.Add(size, b.Sqrt(b.Add(b.Mul(size, size), one))))
    general = b.Where(b.Less(wide, b.scalar(0.0, TensorProto.DOUBLE, "zero")), b.Neg(magnitude), magnitude)
    small = _odd_taylor(b, wide, (-1 / 6, 3 / 40))
    return b.Cast(_taylor_below_small(b, wide, general, small), to=x.element_type)


@_hyperbolic_rule("Acosh", np.arccosh)
def acosh_by_log(b: Builder, x: Value) -> Value:
    """Acosh(x) = ln(x + √(x² − 1)) for x >= 1, NaN below (where x <= −1 the sum would be 0 or
    below, not NaN), in float64, where x² − 1 of a float32 x is exact below 2^27 (x² holds 48
    bits) and beyond rounds as finely as x² does; 0 at 1, inf at inf."""
    wide = _in_float64(b, x)
    one = b.scalar(1.0, TensorProto.DOUBLE, "one")
    general = b.Log(b.Add(wide, b.Sqrt(b.Sub(b.Mul(wide, wide), one))))
    undefined = b.Where(b.Less(wide, one), b.scalar(float("nan"), TensorProto.DOUBLE, "nan"), general)
    return b.Cast(undefined, to=x.element_type)


@_hyperbolic_rule("Atanh", np.arctanh)
def atanh_by_log(b: Builder, x: Value) -> Value:
    """Atanh(x) = ln((1 + x) / (1 − x)) / 2, in float64; x + x³/3 + x⁵/5 where |x| < 2^-8 (the
    logarithm of 1 + a small number would lose it). ±inf at ±1, NaN past them."""
    wide = _in_float64(b, x)
    one = b.scalar(1.0, TensorProto.DOUBLE, "one")
    general = _half(b, b.Log(b.Div(b.Add(one, wide), b.Sub(one, wide))))
    small = _odd_taylor(b, wide, (1 / 3, 1 / 5))
    return b.Cast(_taylor_below_small(b, wide, general, small), to=x.element_type)
