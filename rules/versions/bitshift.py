"""BitShift across version 28 going down: shifts by any amount, and signed types, in an unsigned carrier."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.adapters import AdapterContext, NodeWriter, adapter, known_change, moved, text_attribute
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
    element_type = element_type_of(context.type_of(node.input[0]))
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
    hint = node.name or node.output[0]
    result: list[onnx.NodeProto] = []

    def make(op_type: str, inputs: list[str], key: str, **attributes) -> str:
        output = context.fresh(f"{hint}_{key}")
        result.append(
            helper.make_node(op_type, inputs, [output], name=context.fresh(f"{hint}_{op_type}"), **attributes)
        )
        return output

    def constant(value: int, key: str) -> str:
        tensor = helper.make_tensor(context.fresh(f"{hint}_{key}"), carrier, [], [value])
        return make("Constant", [], key, value=tensor)

    x, y = node.input[0], node.input[1]
    if element_type != carrier:
        x = make("Cast", [x], f"x_as_{schemas.type_name(carrier)}", to=carrier)
        y = make("Cast", [y], f"y_as_{schemas.type_name(carrier)}", to=carrier)
    width = constant(bits, "bits")
    in_range = make("Cast", [make("Less", [y, width], "in_range")], "in_range_as_number", to=carrier)
    amount = make("Mod", [y, width], "amount")
    shifted = moved(node)
    del shifted.input[:]
    if sign_filled:
        last = constant(bits - 1, "last_bit")
        kept = make("Mul", [amount, in_range], "kept_amount")
        filled = make("Sub", [last, make("Mul", [last, in_range], "last_in_range")], "fill_amount")
        shifted.input.extend([x, make("Add", [kept, filled], "sign_filled_amount")])
        shifted.output[0] = context.fresh(f"{hint}_shifted")
        result.append(shifted)
        wide = shifted.output[0]
    else:
        shifted.input.extend([x, amount])
        shifted.output[0] = context.fresh(f"{hint}_shifted")
        result.append(shifted)
        wide = make("Mul", [shifted.output[0], in_range], "shifted_in_range")
    result.append(
        helper.make_node("Cast", [wide], [node.output[0]], name=context.fresh(f"{hint}_Cast_back"), to=element_type)
    )
    return result


def _int64_right(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """BitShift-28(x, y, RIGHT) on int64 = Where(x < 0, -1 - r, r), r = BitShift-11(t, s) in uint64.

    t = Where(x < 0, -1 - x, x) is ~x for a negative x (no overflow: -1 - INT64_MIN = INT64_MAX)
    and x otherwise, so t ≥ 0 and its logical shift is its arithmetic one; ~(~x >> s) is x's
    arithmetic shift. s = Where(y < 0 or y > 63, 63, y): shifting t ≥ 0 by 63 gives 0, so an
    amount out of range gives -1 for a negative x and 0 otherwise, as version 28 says. The Casts
    between int64 and uint64 carry values in [0, 2⁶³) only."""
    w = NodeWriter(node, context)
    x, y = node.input[0], node.input[1]
    zero = w.scalar("zero", 0, TensorProto.INT64)
    minus_one = w.scalar("minus_one", -1, TensorProto.INT64)
    last = w.scalar("last_bit", 63, TensorProto.INT64)
    negative = w.add("Less", [x, zero], "negative")
    nonnegative = w.add("Where", [negative, w.add("Sub", [minus_one, x], "complement"), x], "nonnegative")
    outside = w.add("Or", [w.add("Less", [y, zero], "below"), w.add("Greater", [y, last], "above")], "outside")
    amount = w.add("Where", [outside, last, y], "amount")
    shifted = moved(node)
    shifted.input[:] = [
        w.add("Cast", [nonnegative], "nonnegative_as_uint64", to=TensorProto.UINT64),
        w.add("Cast", [amount], "amount_as_uint64", to=TensorProto.UINT64),
    ]
    shifted.output[0] = context.fresh(f"{w.hint}_shifted")
    w.nodes.append(shifted)
    logical = w.add("Cast", [shifted.output[0]], "shifted_as_int64", to=TensorProto.INT64)
    restored = w.add("Sub", [minus_one, logical], "restored")
    return w.last("Where", [negative, restored, logical], [node.output[0]])
