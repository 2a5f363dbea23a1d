"""BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot (version 18, no function body) lowered to
integer arithmetic, comparisons and logic on bool that exist from opset 10 (BitwiseNot's from 9)."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

INT32, INT64, UINT32 = onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.UINT32

BINARY_EMITS = ("Cast", "Mod", "Greater", "Less", "And", "Or", "Xor", "Mul", "Add", "Constant")
NOT_EMITS = ("Cast", "Sub", "Constant")
# The rules write ops as they are from these opsets on, Constant holding integers, onnx.defs
# says: Mod from 10, integer Constants from 9.
FIRST_OPSET = schemas.first_opset_writing(BINARY_EMITS, int64_constants=True)
NOT_FIRST_OPSET = schemas.first_opset_writing(NOT_EMITS, int64_constants=True)

# The ops each rule computes with, which must run on the type it computes in.
BINARY_ARITHMETIC = ("Mod", "Greater", "Less", "Mul", "Add")
NOT_ARITHMETIC = ("Sub",)


def _integer_info(element_type: int) -> np.iinfo:
    return np.iinfo(onnx.helper.tensor_dtype_to_np_dtype(element_type))


def compute_type(b: Builder, element_type: int, ops: tuple[str, ...], first_opset: int, *, where: bool = False) -> int:
    """The type to compute ``element_type`` values in: itself where every op of ``ops`` (and
    Where selecting it, where ``where``) runs on it at the target, else the narrowest wider one
    that holds every value exactly (int32 for 8- and 16-bit types, int64 for uint32)."""
    if b.opset < first_opset:
        raise NotLowered(f"the rule writes ops as they are from opset {first_opset}, not {b.opset}")
    info = _integer_info(element_type)
    candidates = [element_type]
    if info.bits <= 16:
        candidates.append(INT32)
    elif element_type == UINT32:
        candidates.append(INT64)
    for candidate in candidates:
        value = Value("", candidate)
        if all(b.runs(op, value) for op in (*ops, "Cast")) and (not where or b.runs("Where", value, 1)):
            return candidate
    tried = " or ".join(schemas.type_name(t) for t in candidates)
    raise NotLowered(f"{', '.join(ops)} do not all run on {tried} at opset {b.opset}")


def _bits(b: Builder, v: Value, info: np.iinfo) -> list[Value]:
    """Bit k of v (a value of the type ``info`` describes, held in ``v``'s type), bool, k from 0.

    Below the top bit: ``Greater(Mod(v, 2^(k+1)), 2^k - 1)`` (Mod takes the divisor's sign, so the
    remainder is in [0, 2^(k+1)) for negative v too). The top bit: ``Less(v, 0)`` signed,
    ``Greater(v, 2^(n-1) - 1)`` unsigned. Where ``v``'s own type cannot hold 2^(k+1) (bit n-2 of
    a signed type computed in itself), with t = 2^(n-2): v in [t, 2t) or [-t, 0), which is
    ``Xor(Xor(Less(v, -t), Less(v, 0)), Greater(v, t - 1))``."""
    n = info.bits
    largest = int(_integer_info(v.element_type).max)
    signed = info.min < 0
    negative = b.Less(v, b.constant(0, like=v, hint="zero")) if signed else None
    bits = []
    for k in range(n - 1):
        if 2 ** (k + 1) <= largest:
            remainder = b.Mod(v, b.constant(2 ** (k + 1), like=v, hint=f"two_pow{k + 1}"))
            bits.append(b.Greater(remainder, b.constant(2**k - 1, like=v, hint=f"two_pow{k}_less_one")))
        else:
            t = 2**k
            below = b.Xor(b.Less(v, b.constant(-t, like=v, hint=f"minus_two_pow{k}")), negative)
            bits.append(b.Xor(below, b.Greater(v, b.constant(t - 1, like=v, hint=f"two_pow{k}_less_one"))))
    if signed:
        bits.append(negative)
    else:
        bits.append(b.Greater(v, b.constant(2 ** (n - 1) - 1, like=v, hint=f"two_pow{n - 1}_less_one")))
    return bits


def _bitwise(b: Builder, x: Value, y: Value, logic: str) -> Value:
    """``logic`` (And, Or, Xor on bool) bit by bit, summed back: sum of Cast(r_k) * 2^k, the top
    bit of a signed type weighing -2^(n-1) and added last, so no partial sum leaves the type."""
    compute = compute_type(b, x.element_type, BINARY_ARITHMETIC, FIRST_OPSET)
    info = _integer_info(x.element_type)
    wide_x = x if compute == x.element_type else b.Cast(x, to=compute)
    wide_y = y if compute == y.element_type else b.Cast(y, to=compute)
    pairs = zip(_bits(b, wide_x, info), _bits(b, wide_y, info), strict=True)
    results = [b.op(logic, x_k, y_k) for x_k, y_k in pairs]
    total = None
    for k, bit in enumerate(results):
        term = b.Cast(bit, to=compute)
        weight = -(2**k) if info.min < 0 and k == info.bits - 1 else 2**k
        if weight != 1:
            term = b.Mul(term, b.constant(weight, like=term, hint=f"weight{k}"))
        total = term if total is None else b.Add(total, term)
    return total if compute == x.element_type else b.Cast(total, to=x.element_type)


def _reference(function):
    def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return function(x, y)

    reference.__name__ = f"{function.__name__}_reference"
    reference.__doc__ = f"numpy's {function.__name__}, broadcasting as Add."
    return reference


@rule("BitwiseAnd", versions=(18,), emits=BINARY_EMITS, reference=_reference(np.bitwise_and))
def bitwise_and_by_bits(b: Builder, x: Value, y: Value) -> Value:
    """BitwiseAnd(x, y) = sum_k Cast(And(x_k, y_k)) * 2^k, x_k = Greater(Mod(x, 2^(k+1)), 2^k - 1).

    Bit k of each input as bool: the remainder modulo 2^(k+1) (Mod, the divisor's sign, so in
    [0, 2^(k+1)) for negative values too) at least 2^k; the top bit of a signed type is
    ``Less(x, 0)`` and weighs -2^(n-1), added last, so no partial sum leaves the type (two's
    complement, exact on every value); the inputs broadcast as the bool logic and the sums do.
    8- and 16-bit types are computed in int32 where Mul and Add take them not (below opset 14),
    and cast back, exactly. Not lowered below opset 10 (no Mod).
    """
    return _bitwise(b, x, y, "And")


@rule("BitwiseOr", versions=(18,), emits=BINARY_EMITS, reference=_reference(np.bitwise_or))
def bitwise_or_by_bits(b: Builder, x: Value, y: Value) -> Value:
    """BitwiseOr(x, y) = sum_k Cast(Or(x_k, y_k)) * 2^k, x_k = Greater(Mod(x, 2^(k+1)), 2^k - 1).

    As BitwiseAnd's rule, with Or on the bits.
    """
    return _bitwise(b, x, y, "Or")


@rule("BitwiseXor", versions=(18,), emits=BINARY_EMITS, reference=_reference(np.bitwise_xor))
def bitwise_xor_by_bits(b: Builder, x: Value, y: Value) -> Value:
    """BitwiseXor(x, y) = sum_k Cast(Xor(x_k, y_k)) * 2^k, x_k = Greater(Mod(x, 2^(k+1)), 2^k - 1).

    As BitwiseAnd's rule, with Xor on the bits.
    """
    return _bitwise(b, x, y, "Xor")


@rule("BitwiseNot", versions=(18,), emits=NOT_EMITS, reference=np.invert)
def bitwise_not_by_subtraction(b: Builder, x: Value) -> Value:
    """BitwiseNot(x) = Sub(-1, x) on signed types, Sub(MAX, x) on unsigned ones.

    Two's complement: -1 - x flips every bit and stays in range (-1 - MIN = MAX); MAX - x
    likewise for unsigned types. 8- and 16-bit types are computed in int32 where Sub takes them
    not (below opset 14), and cast back, exactly. Not lowered below opset 9 (Constant holds
    no integers there).
    """
    compute = compute_type(b, x.element_type, NOT_ARITHMETIC, NOT_FIRST_OPSET)
    info = _integer_info(x.element_type)
    wide = x if compute == x.element_type else b.Cast(x, to=compute)
    ones = -1 if info.min < 0 else int(info.max)
    flipped = b.Sub(b.constant(ones, like=wide, hint="all_ones"), wide)
    return flipped if compute == x.element_type else b.Cast(flipped, to=x.element_type)
