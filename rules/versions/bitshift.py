"""BitShift across version 28 going down: shifts by any amount, and signed types, in an unsigned carrier."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from lowering import floats, schemas
from lowering.conversion.adapters import AdapterContext, adapter, known_change, moved, text_attribute
from lowering.errors import NotLowered
from lowering.scopes import element_type_of

BITSHIFT_28 = "version 28 defines shifts by negative or too large amounts (earlier versions do not)"
known_change(("BitShift",), 28, BITSHIFT_28, down_only=True)


# Cases: backend cases and the explicit ones, at 27 and 11
@adapter(("BitShift",), 28, "down", "shift in an unsigned carrier", versions=(11, 28), cases=70)
def shift_in_unsigned_carrier(node: onnx.NodeProto, context: AdapterContext):
    """BitShift-28(x, y) = Cast(BitShift-11(X, Mod(Y, bits)) · (Y < bits)), X, Y: x, y as uint32 or uint64.

    Versions 11–27 leave a shift by a negative amount or by the bit width or more undefined,
    and take only unsigned types; version 28 gives 0 there (-1 for a right shift of a negative
    x). An unsigned node whose amounts are a constant all in [0, bits) is kept as it is.
    Otherwise x and y are cast to a carrier (uint32 up to 32 bits, uint64 for 64): a signed
    one sign-extends, so a negative y lands out of range, and the Cast back keeps the low bits,
    which are the shift of the narrow type. The amount is taken modulo bits (so the shift is
    defined) and the result multiplied by (y < bits), 0 out of range. A signed right shift,
    arithmetic in version 28, runs on x sign-extended to uint64, by Mod(y, bits) in range and
    by bits - 1 (all sign bits) out of range. int64, with no wider carrier, shifts right as
    ~(~x >> s) for a negative x (:func:`_int64_right`)."""
    source = f"BitShift-{schemas.version_in_force('BitShift', context.source_opset)}"
    where = f"{source} cannot go to opset {context.target_opset}"
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    if element_type is None:
        raise NotLowered(f"{where} without the type of its input '{node.input[0]}', which is unknown")
    bits = floats.numpy_dtype(element_type).itemsize * 8
    right = text_attribute(node, "direction", context.source_opset) == "RIGHT"
    signed = floats.numpy_dtype(element_type).kind == "i"
    if right and element_type == TensorProto.INT64:
        return _int64_right(node, context)
    amounts = context.constant_of(node.input[1])
    if amounts is not None and not signed:
        values = onnx.numpy_helper.to_array(amounts).astype(np.int64, copy=False)
        if values.size == 0 or (values.min() >= 0 and values.max() < bits):
            return [moved(node)]
    return _any_amounts(node, context, element_type, bits, right and signed)


def _any_amounts(
    node: onnx.NodeProto, context: AdapterContext, element_type: int, bits: int, sign_filled: bool
) -> list[onnx.NodeProto]:
    """The shift in a carrier C (uint64 for 64 bits or a signed right shift, else uint32), x and
    y cast to it (a signed one sign-extended: a negative y becomes 2⁶⁴ - |y|, out of range):
    BitShift(x, Mod(y, bits)) · (y < bits), 0 out of range; a signed right shift by
    Mod(y, bits) · i + (bits - 1) · (1 - i), i = y < bits, whose fill is the sign bit's."""
    carrier = TensorProto.UINT64 if bits == 64 or sign_filled else TensorProto.UINT32
    b = context.builder(node)
    x, y = node.input[0], node.input[1]
    if element_type != carrier:
        x, y = b.Cast(x, to=carrier).name, b.Cast(y, to=carrier).name
    width = b.scalar(bits, carrier, "bits")
    in_range = b.Cast(b.Less(y, width), to=carrier)
    amount = b.Mod(y, width)
    if sign_filled:
        last = b.scalar(bits - 1, carrier, "last_bit")
        kept = b.Mul(amount, in_range)
        filled = b.Sub(last, b.Mul(last, in_range))
        shifted = b.moved(node, inputs=[x, b.Add(kept, filled).name], outputs=[b.fresh("shifted")])
        wide = shifted.output[0]
    else:
        shifted = b.moved(node, inputs=[x, amount.name], outputs=[b.fresh("shifted")])
        wide = b.Mul(shifted.output[0], in_range)
    b.Cast(wide, to=element_type, outputs=[node.output[0]])
    return b.nodes


def _int64_right(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """BitShift-28(x, y, RIGHT) on int64 = Where(x < 0, -1 - r, r), r = BitShift-11(t, s) in uint64.

    t = Where(x < 0, -1 - x, x) is ~x for a negative x (no overflow: -1 - INT64_MIN = INT64_MAX)
    and x otherwise, so t ≥ 0 and its logical shift is its arithmetic one; ~(~x >> s) is x's
    arithmetic shift. s = Where(y < 0 or y > 63, 63, y): shifting t ≥ 0 by 63 gives 0, so an
    amount out of range gives -1 for a negative x and 0 otherwise, as version 28 says. The Casts
    between int64 and uint64 carry values in [0, 2⁶³) only."""
    b = context.builder(node)
    x, y = node.input[0], node.input[1]
    zero = b.scalar(0, TensorProto.INT64, "zero")
    minus_one = b.scalar(-1, TensorProto.INT64, "minus_one")
    last = b.scalar(63, TensorProto.INT64, "last_bit")
    negative = b.Less(x, zero)
    t = b.Where(negative, b.Sub(minus_one, x), x)
    s = b.Where(b.Or(b.Less(y, zero), b.Greater(y, last)), last, y)
    t_uint64, s_uint64 = b.Cast(t, to=TensorProto.UINT64), b.Cast(s, to=TensorProto.UINT64)
    shifted = b.moved(node, inputs=[t_uint64.name, s_uint64.name], outputs=[b.fresh("shifted")])
    r = b.Cast(shifted.output[0], to=TensorProto.INT64)
    b.Where(negative, b.Sub(minus_one, r), r, outputs=[node.output[0]])
    return b.nodes
