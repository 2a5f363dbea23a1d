"""BitShift (versions 11 and 28) lowered to integer arithmetic: powers of two gathered from a
table by the amount, a left shift as a remainder times the power plus the bit that reaches the top,
a right shift as a division, each in a type that holds every value without overflow."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .bitwise import compute_type

INT64 = onnx.TensorProto.INT64

EMITS = ("Cast", "Less", "And", "Mul", "Gather", "Mod", "Div", "Sub", "Add", "Where", "Constant")
# Mod from opset 10, integer Constants from 9 (onnx.defs); BitShift itself exists from 11.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# The ops each direction computes with, which must run on the type it computes in.
LEFT_ARITHMETIC = ("Less", "Mul", "Gather", "Mod", "Div", "Sub", "Add")
RIGHT_ARITHMETIC = ("Less", "Mul", "Gather", "Div")
SIGNED_RIGHT_ARITHMETIC = ("Less", "Mul", "Gather", "Div", "Sub")


def bitshift_reference(x: np.ndarray, y: np.ndarray, *, direction: str = "") -> np.ndarray:
    """Version 28's meaning in Python integers: x·2^y modulo 2^n (back in the type's range) to the
    left, floor(x / 2^y) to the right (arithmetic for a signed type); an amount negative or of the
    bit width n or more gives 0, or -1 for a right shift of a negative x."""
    direction = direction.decode() if isinstance(direction, bytes) else direction
    x, y = np.broadcast_arrays(x, y)
    bits = x.dtype.itemsize * 8
    signed = x.dtype.kind == "i"

    def shift(value: int, amount: int) -> int:
        if not 0 <= amount < bits:
            return -1 if direction == "RIGHT" and value < 0 else 0
        if direction == "RIGHT":
            return value >> amount
        wrapped = (value << amount) % 2**bits
        return wrapped - 2**bits if signed and wrapped >= 2 ** (bits - 1) else wrapped

    flat = [shift(int(v), int(a)) for v, a in zip(x.reshape(-1).tolist(), y.reshape(-1).tolist(), strict=True)]
    return np.array(flat, dtype=x.dtype).reshape(x.shape)


@rule("BitShift", versions=(11, 28), emits=EMITS, reference=bitshift_reference)
def bitshift_by_arithmetic(b: Builder, x: Value, y: Value, *, direction: str = "") -> Value:
    """BitShift(x, y) = x·2^y mod 2^n to the left, floor(x / 2^y) to the right; 0 out of range
    (-1 for a right shift of a negative x).

    In range means 0 ≤ y < n, n the bit width of x's type; i = y·[in range] indexes a table
    P[i] = 2^i (Gather). Left: with m = 2^(n-1-i), x = q·m + r, r = Mod(x, m) in [0, m) and q =
    (x - r) / m exact, so x·2^i mod 2^n = r·2^i + Mod(q, 2)·2^(n-1), the top bit weighing -2^(n-1)
    in a signed type; times [in range]. Right, unsigned: Div(x, P[i])·[in range]. Right, signed:
    t = Where(x < 0, -1 - x, x) ≥ 0 is ~x for a negative x, so the arithmetic shift is
    Where(x < 0, -1 - d, d), d = Div(t, P[i])·[0 ≤ y < n - 1] (t < 2^(n-1) shifted by n - 1 or
    out of range is 0). No product or sum leaves the type: r·2^i < 2^(n-1), x - r is a multiple
    of m no smaller than the type's minimum. Computed in x's type where every op runs on it at
    the target, else in int32 (8- and 16-bit types) or int64 (uint32), and cast back, exactly;
    a signed type computed in itself has no 2^(n-1), so a left shift by 0 is x itself there.
    Version 11 leaves amounts out of range undefined; they are given version 28's answer.
    Not lowered below opset 10 (no Mod).
    """
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in ("LEFT", "RIGHT"):
        raise NotLowered(f"direction {direction!r} is neither LEFT nor RIGHT")
    if x.element_type is None:
        raise NotLowered("the type of the shifted input is unknown")
    info = np.iinfo(floats.numpy_dtype(x.element_type))
    signed, bits = info.min < 0, info.bits
    arithmetic = LEFT_ARITHMETIC if direction == "LEFT" else SIGNED_RIGHT_ARITHMETIC if signed else RIGHT_ARITHMETIC
    compute = compute_type(b, x.element_type, arithmetic, FIRST_OPSET, where=direction == "RIGHT" and signed)
    wide_x = x if compute == x.element_type else b.Cast(x, to=compute)
    wide_y = y if compute == y.element_type else b.Cast(y, to=compute)
    top = int(np.iinfo(floats.numpy_dtype(compute)).max).bit_length()  # (the largest power of two it holds)
    if direction == "LEFT":
        shifted = _left(b, wide_x, wide_y, bits, signed, top)
    elif signed:
        shifted = _signed_right(b, wide_x, wide_y, bits)
    else:
        shifted = _unsigned_right(b, wide_x, wide_y, bits)
    return shifted if compute == x.element_type else b.Cast(shifted, to=x.element_type)


def _below(b: Builder, y: Value, limit: int, signed: bool) -> Value:
    """0 ≤ y < limit, as a bool (y < limit for an unsigned y)."""
    below = b.Less(y, b.constant(limit, like=y, hint=f"below{limit}"))
    return b.And(b.Less(b.constant(-1, like=y, hint="minus_one"), y), below) if signed else below


def _powers(b: Builder, exponents: list[int], like: Value, largest: int, hint: str) -> Value:
    """A table of 2^e for each e of ``exponents``, in ``like``'s type; 1 where e is ``largest`` or
    more (2^e does not fit: entries the formula multiplies by 0, or a divisor 1 whose answer it
    replaces)."""
    values = [2**e if e < largest else 1 for e in exponents]
    return b.tensor(np.array(values, dtype=floats.numpy_dtype(like.element_type)), hint)


def _left(b: Builder, x: Value, y: Value, bits: int, signed: bool, top: int) -> Value:
    """x·2^i mod 2^n (see the rule), times [0 ≤ y < n]; where 2^(n-1) does not fit (a signed type
    in itself), a shift by 0 (and out of range, multiplied by 0 after) takes x itself."""
    in_range = b.Cast(_below(b, y, bits, signed), to=x.element_type)
    amount = b.Mul(y, in_range)
    index = b.Cast(amount, to=INT64)
    power = b.Gather(_powers(b, list(range(bits)), x, top, "powers"), index)
    divisor = b.Gather(_powers(b, [bits - 1 - k for k in range(bits)], x, top, "divisors"), index)
    remainder = b.Mod(x, divisor)
    quotient = b.Div(b.Sub(x, remainder), divisor)
    top_bit = b.Mod(quotient, b.constant(2, like=x, hint="two"))
    weight = -(2 ** (bits - 1)) if signed else 2 ** (bits - 1)
    shifted = b.Add(b.Mul(remainder, power), b.Mul(top_bit, b.constant(weight, like=x, hint=f"top_bit{bits}")))
    if bits - 1 >= top:  # (divisor 1 stands for 2^(n-1) at a shift by 0: there the answer is x)
        by_zero = b.Cast(b.Less(amount, b.constant(1, like=x, hint="one")), to=x.element_type)
        by_more = b.Sub(b.constant(1, like=x, hint="one"), by_zero)
        shifted = b.Add(b.Mul(shifted, by_more), b.Mul(x, by_zero))
    return b.Mul(shifted, in_range)


def _unsigned_right(b: Builder, x: Value, y: Value, bits: int) -> Value:
    """Div(x, 2^i)·[y < n]."""
    in_range = b.Cast(_below(b, y, bits, False), to=x.element_type)
    index = b.Cast(b.Mul(y, in_range), to=INT64)
    power = b.Gather(_powers(b, list(range(bits)), x, bits, "powers"), index)
    return b.Mul(b.Div(x, power), in_range)


def _signed_right(b: Builder, x: Value, y: Value, bits: int) -> Value:
    """Where(x < 0, -1 - d, d), d = Div(t, 2^i)·[0 ≤ y < n - 1], t = Where(x < 0, -1 - x, x)."""
    shifts = b.Cast(_below(b, y, bits - 1, True), to=x.element_type)
    index = b.Cast(b.Mul(y, shifts), to=INT64)
    power = b.Gather(_powers(b, list(range(bits - 1)), x, bits - 1, "powers"), index)
    negative = b.Less(x, b.constant(0, like=x, hint="zero"))
    minus_one = b.constant(-1, like=x, hint="minus_one")
    flipped = b.Where(negative, b.Sub(minus_one, x), x)
    shifted = b.Mul(b.Div(flipped, power), shifts)
    return b.Where(negative, b.Sub(minus_one, shifted), shifted)
