"""A Cast between integer types that wraps as Cast-13 and later define it, written so that no Cast
is given a value its target type does not hold (which Cast-6 and -9 leave undefined, and which
OpenVINO 2024.6 saturates).

Cast-13 and later give the value of the target type T congruent to x modulo 2^n, n T's bits (two's
complement: "discard higher bits"). That value is

    w = x mod 2^n                                  for T unsigned, in [0, 2^n - 1]
    w = ((x mod 2^n) + 2^(n-1)) mod 2^n - 2^(n-1)   for T signed, in [-2^(n-1), 2^(n-1) - 1]

(mod the floored remainder, of the divisor's sign), computed in a signed carrier type that holds x
and 2^n, and then Cast(w, T) is given only values T holds.
"""

from __future__ import annotations

import onnx

from . import floats, schemas, value_ranges
from .builder import Builder, Value
from .errors import NotLowered

_INT32, _INT64, _UINT64 = onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT64
# Cast discards an integer's higher bits out of range from the first version whose documentation
# says so (13); before, a value out of the target type's range is undefined.
WRAPPING_CAST_OPSET = min(
    version
    for version in schemas.op_versions("Cast")
    if "discard higher bits" in schemas.schema_in_force("Cast", version).doc
)
MOD_OPSET = min(schemas.op_versions("Mod"))  # (below it, the remainder is written with Div, Mul and Sub)
# The first opset whose Constant holds an integer tensor (onnx.defs), below which one is cast from a float.
INTEGER_CONSTANT_OPSET = min(
    version
    for version in schemas.op_versions("Constant")
    if _INT32 in schemas.output_element_types("Constant", version)
)


def may_wrap(source: int | None, to: int | None) -> bool:
    """Whether a Cast from ``source`` to ``to``, both integer types (not bool), may be given a
    value ``to`` does not hold."""
    if not (floats.is_integer(source) and floats.is_integer(to)):
        return False
    return not value_ranges.fits(value_ranges.type_range(source), to)


def bits(element_type: int) -> int:
    return 8 * floats.numpy_dtype(element_type).itemsize


def carrier(source: int, to: int) -> int | None:
    """The signed type the wraparound is computed in: int32 where it holds ``source``'s values and
    2^n + 2^(n-1) (n ``to``'s bits: 16 at most), else int64 (uint64 is first reduced modulo 2^n in
    its own type); None where ``to`` has 64 bits, as no carrier holds 2^64."""
    n = bits(to)
    if n == 64:
        return None
    if n <= 16 and value_ranges.fits(value_ranges.type_range(source), _INT32):
        return _INT32
    return _INT64


def wrapped_cast(b: Builder, x: Value, source: int, to: int, outputs: list[str] | None = None) -> Value:
    """Cast(x, to) from integer type ``source`` as Cast-13 and later wrap it, at ``b``'s opset:
    ``Cast(w, to)``, w as in this module's formula. Raises NotLowered where ``to`` has 64 bits
    (no carrier holds 2^64)."""
    wide = carrier(source, to)
    if wide is None:
        raise NotLowered(
            f"a Cast from {schemas.type_name(source)} to {schemas.type_name(to)} wraps modulo 2^64, which no "
            "integer type holds to write it with"
        )
    modulus, half = 1 << bits(to), 1 << (bits(to) - 1)
    signed = value_ranges.type_range(to)[0] < 0
    low, high = value_ranges.type_range(source)
    made: dict[str, Value] = {}

    def m() -> Value:  # (2^n in the carrier, made once, where used)
        if "m" not in made:
            made["m"] = _integer(b, modulus, wide, "modulus")
        return made["m"]

    if source == _UINT64:  # (reduced in its own type first: not every uint64 is an int64)
        x = _remainder(b, x, _integer(b, modulus, _UINT64, "modulus"), non_negative=True)
        low, high = 0, modulus - 1
    value = x if source == wide else b.Cast(x, to=wide)
    if (low, high) != (0, modulus - 1) and not (signed and value_ranges.fits((low + half, high + half), wide)):
        value = _remainder(b, value, m(), non_negative=low >= 0)  # (not where x + 2^(n-1) fits: reduced once, below)
        low, high = 0, modulus - 1
    if signed:
        h = _integer(b, half, wide, "half")
        value = b.Sub(_remainder(b, b.Add(value, h), m(), non_negative=low + half >= 0), h)
    return b.Cast(value, to=to, outputs=outputs)


def _integer(b: Builder, value: int, element_type: int, hint: str) -> Value:
    """A scalar constant of an integer type: a Constant from opset :data:`INTEGER_CONSTANT_OPSET`,
    below a float Constant cast to it (``value`` a power of two, exact as a float)."""
    if b.opset >= INTEGER_CONSTANT_OPSET:
        return b.scalar(value, element_type, hint)
    return b.Cast(b.scalar(float(value), onnx.TensorProto.FLOAT, hint), to=element_type)


def _remainder(b: Builder, c: Value, m: Value, non_negative: bool) -> Value:
    """c mod m (floored, m > 0), in [0, m - 1]: Mod(c, m) from opset :data:`MOD_OPSET`; below,
    t = c - (c / m)·m (integer division truncates: t in (-m, m), of c's sign), and, where c may be
    negative, (t + m) - ((t + m) / m)·m."""
    if b.opset >= MOD_OPSET:
        return b.Mod(c, m)
    t = b.Sub(c, b.Mul(b.Div(c, m), m))
    if non_negative:
        return t
    t = b.Add(t, m)
    return b.Sub(t, b.Mul(b.Div(t, m), m))
