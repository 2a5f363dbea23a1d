"""BitShift across version 28 going down: shifts by any amount, and signed types, on unsigned
values by amounts in range, every Cast carrying a value its target type holds."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from lowering import floats, schemas
from lowering.builder import Builder, Value
from lowering.conversion.adapters import AdapterContext, adapter, known_change, moved, text_attribute
from lowering.errors import NotLowered
from lowering.scopes import element_type_of

BITSHIFT_28 = "version 28 defines shifts by negative or too large amounts (earlier versions do not)"
known_change(("BitShift",), 28, BITSHIFT_28, down_only=True)

INT64_MIN = -(2**63)


# Cases: backend cases and the explicit ones, at 27 and 11
@adapter(("BitShift",), 28, "down", "shift of unsigned values by amounts in range", versions=(11, 28), cases=70)
def shift_in_unsigned_carrier(node: onnx.NodeProto, context: AdapterContext):
    """BitShift-28(x, y) = BitShift-11(u, s): u unsigned, s in [0, n) (n bits), masked out of range.

    Versions 11–27 leave a shift by a negative amount or by the bit width or more undefined,
    and take only unsigned types; version 28 gives 0 there (-1 for a right shift of a negative
    x). Every Cast written carries a value its target type holds (Cast below 13 leaves the
    others undefined):
    - unsigned x: :func:`_unsigned`; a node whose amounts are a constant all in [0, n) is kept
      as it is;
    - signed x, RIGHT (arithmetic): :func:`_signed_right`;
    - signed x, LEFT (bits past the sign bit discarded): :func:`_signed_left`."""
    source = f"BitShift-{schemas.version_in_force('BitShift', context.source_opset)}"
    where = f"{source} cannot go to opset {context.target_opset}"
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    if element_type is None:
        raise NotLowered(f"{where} without the type of its input '{node.input[0]}', which is unknown")
    bits = floats.numpy_dtype(element_type).itemsize * 8
    right = text_attribute(node, "direction", context.source_opset) == "RIGHT"
    b = context.builder(node)
    if floats.numpy_dtype(element_type).kind == "i":
        shift = _signed_right if right else _signed_left
        shift(b, node, element_type, bits)
        return b.nodes
    amounts = context.constant_of(node.input[1])
    if amounts is not None:
        values = onnx.numpy_helper.to_array(amounts)
        if values.size == 0 or values.max() < bits:
            return [moved(node)]
    _unsigned(b, node, element_type, bits, right)
    return b.nodes


def _unsigned(b: Builder, node: onnx.NodeProto, element_type: int, bits: int, right: bool) -> None:
    """BitShift-28(x, y) on n-bit unsigned x = BitShift-11(x, Mod(y, n)) · (y < n), in a carrier
    C (uint32 up to 32 bits, else uint64: the types Mul takes from opset 7), x and y cast to it;
    a left shift in a wider carrier taken modulo 2ⁿ before the Cast back."""
    carrier = TensorProto.UINT64 if bits == 64 else TensorProto.UINT32
    x, y = Value(node.input[0], element_type), Value(node.input[1], element_type)
    if element_type != carrier:
        x, y = b.Cast(x, to=carrier), b.Cast(y, to=carrier)
    width = b.scalar(bits, carrier, "bits")
    shifted = b.moved(node, inputs=[x.name, b.Mod(y, width).name], outputs=[b.fresh("shifted")])
    kept = Value(shifted.output[0], carrier)
    if not right and bits < 32:
        kept = b.Mod(kept, b.scalar(2**bits, carrier, "modulus"))
    in_range = b.Cast(b.Less(y, width), to=carrier)
    if element_type == carrier:
        b.Mul(kept, in_range, outputs=[node.output[0]])
    else:
        b.Cast(b.Mul(kept, in_range), to=element_type, outputs=[node.output[0]])


def _widened(b: Builder, name: str, element_type: int) -> Value:
    """The value as int64 (a signed value of n bits fits)."""
    if element_type == TensorProto.INT64:
        return Value(name, element_type)
    return b.Cast(name, to=TensorProto.INT64)


def _narrowed(b: Builder, value: Value, element_type: int, output: str) -> None:
    """An int64 value holding one of ``element_type`` written as ``output`` of that type."""
    if element_type == TensorProto.INT64:
        b.Identity(value, outputs=[output])
    else:
        b.Cast(value, to=element_type, outputs=[output])


def _signed_right(b: Builder, node: onnx.NodeProto, element_type: int, bits: int) -> None:
    """BitShift-28(x, y, RIGHT) on n-bit signed x = Where(x < 0, -1 - r, r), r = BitShift-11(t, s)
    in uint64, x and y widened to int64.

    t = Where(x < 0, -1 - x, x) is ~x for a negative x (-1 - INT64_MIN = INT64_MAX) and x
    otherwise, so t ≥ 0 and its logical shift is its arithmetic one; ~(~x >> s) is x's
    arithmetic shift. s = Where(y < 0 or y > n - 1, n - 1, y): shifting t < 2ⁿ⁻¹ by n - 1
    gives 0, so an amount out of range gives -1 for a negative x and 0 otherwise, as version 28
    says. Every Cast carries a value in [0, 2ⁿ⁻¹) or one of x's type."""
    x = _widened(b, node.input[0], element_type)
    y = _widened(b, node.input[1], element_type)
    zero = b.scalar(0, TensorProto.INT64, "zero")
    minus_one = b.scalar(-1, TensorProto.INT64, "minus_one")
    last = b.scalar(bits - 1, TensorProto.INT64, "last_bit")
    negative = b.Less(x, zero)
    t = b.Where(negative, b.Sub(minus_one, x), x)
    s = b.Where(b.Or(b.Less(y, zero), b.Greater(y, last)), last, y)
    t_uint64, s_uint64 = b.Cast(t, to=TensorProto.UINT64), b.Cast(s, to=TensorProto.UINT64)
    shifted = b.moved(node, inputs=[t_uint64.name, s_uint64.name], outputs=[b.fresh("shifted")])
    r = b.Cast(shifted.output[0], to=TensorProto.INT64)
    _narrowed(b, b.Where(negative, b.Sub(minus_one, r), r), element_type, node.output[0])


def _signed_left(b: Builder, node: onnx.NodeProto, element_type: int, bits: int) -> None:
    """BitShift-28(x, y, LEFT) on n-bit signed x = Where(0 ≤ y < n, signed(u · 2ʸ mod 2ⁿ), 0),
    u = x's n bits as an unsigned number (:func:`_pattern_of`), the shift BitShift-11 in uint64
    (:func:`_value_of` reads n bits back as a signed number)."""
    x = _widened(b, node.input[0], element_type)
    y = _widened(b, node.input[1], element_type)
    zero = b.scalar(0, TensorProto.INT64, "zero")
    in_range = b.And(b.Not(b.Less(y, zero)), b.Less(y, b.scalar(bits, TensorProto.INT64, "bits")))
    amount = b.Cast(b.Where(in_range, y, zero), to=TensorProto.UINT64)
    pattern = _pattern_of(b, x, bits)
    shifted = b.moved(node, inputs=[pattern.name, amount.name], outputs=[b.fresh("shifted")])
    kept = Value(shifted.output[0], TensorProto.UINT64)
    if bits < 64:  # (u < 2ⁿ and 2ʸ < 2ⁿ: the product stays below 2⁶⁴)
        kept = b.Mod(kept, b.scalar(2**bits, TensorProto.UINT64, "modulus"))
    _narrowed(b, b.Where(in_range, _value_of(b, kept, bits), zero), element_type, node.output[0])


def _pattern_of(b: Builder, x: Value, bits: int) -> Value:
    """x (int64, holding an n-bit signed value) as the uint64 its n bits read unsigned:
    x + 2ⁿ for a negative x below 64 bits; for 64, (x - INT64_MIN) + 2⁶³ of a negative x,
    computed on x only where it is negative (so no lane overflows) and cast once in range."""
    zero = b.scalar(0, TensorProto.INT64, "zero")
    negative = b.Less(x, zero)
    if bits < 64:
        return b.Cast(b.Where(negative, b.Add(x, b.scalar(2**bits, TensorProto.INT64, "modulus")), x),
                      to=TensorProto.UINT64)  # fmt: skip
    smallest = b.scalar(INT64_MIN, TensorProto.INT64, "smallest")
    low_bits = b.Where(negative, b.Sub(b.Where(negative, x, smallest), smallest), x)
    sign_bit = b.Mul(b.Cast(negative, to=TensorProto.UINT64), b.scalar(2**63, TensorProto.UINT64, "half"))
    return b.Add(b.Cast(low_bits, to=TensorProto.UINT64), sign_bit)


def _value_of(b: Builder, u: Value, bits: int) -> Value:
    """u (uint64 below 2ⁿ) read as an n-bit signed number, as int64: u - 2ⁿ where u ≥ 2ⁿ⁻¹;
    for 64 bits (u - 2⁶³) + INT64_MIN there, each Cast given a value below 2⁶³."""
    if bits < 64:
        value = b.Cast(u, to=TensorProto.INT64)
        sign_set = b.Not(b.Less(value, b.scalar(2 ** (bits - 1), TensorProto.INT64, "half")))
        return b.Where(sign_set, b.Sub(value, b.scalar(2**bits, TensorProto.INT64, "modulus")), value)
    half = b.scalar(2**63, TensorProto.UINT64, "half")
    sign_set = b.Not(b.Less(u, half))
    low_bits = b.Cast(b.Sub(u, b.Mul(b.Cast(sign_set, to=TensorProto.UINT64), half)), to=TensorProto.INT64)
    smallest = b.scalar(INT64_MIN, TensorProto.INT64, "smallest")
    return b.Where(sign_set, b.Add(low_bits, smallest), low_bits)
