"""BitShift across version 28 going down: shift amounts a constant in [0, bit width), and signed types."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.adapters import AdapterContext, adapter, known_change, moved
from lowering.errors import LoweringError
from lowering.scopes import element_type_of

BITSHIFT_28 = "version 28 defines shifts by negative or too large amounts (earlier versions do not)"
known_change(("BitShift",), 28, BITSHIFT_28, down_only=True)

# The unsigned type of each signed one's width; a right shift goes through uint64, whose top
# bits the sign-extending Cast fills with the sign, and keeps the low bits on the way back.
SAME_WIDTH = {
    TensorProto.INT8: TensorProto.UINT8,
    TensorProto.INT16: TensorProto.UINT16,
    TensorProto.INT32: TensorProto.UINT32,
    TensorProto.INT64: TensorProto.UINT64,
}


@adapter(("BitShift",), 28, "down", "shift amounts in range", versions=(11, 28))
def shift_amounts_in_range(node: onnx.NodeProto, context: AdapterContext):
    """BitShift-28(x, y), y a constant in [0, bits) = BitShift-11(x, y); a signed x cast to uint (uint64 to the right).

    Versions 11–27 leave a shift by a negative amount or by the bit width or more undefined,
    and take only unsigned types: a node whose amounts are a constant all in range means the
    same there. A signed x of w bits: a left shift runs on its bits as uint of w bits (the Casts
    keep every bit both ways); a right shift, which version 28 makes arithmetic, runs on x
    sign-extended to uint64 (w < 64) and keeps the low w bits on the way back, which are the
    sign-filled shift. Refused: amounts not a constant, or out of range, and int64 right shifts."""
    source = f"BitShift-{schemas.version_in_force('BitShift', context.source_opset)}"
    where = f"{context.location}: {source} cannot go to opset {context.target_opset}"
    element_type = element_type_of(context.type_of(node.input[0]))
    if element_type is None:
        raise LoweringError(f"{where} without the type of its input '{node.input[0]}', which is unknown")
    bits = floats.numpy_dtype(element_type).itemsize * 8
    amounts = context.constant_of(node.input[1])
    if amounts is None:
        raise LoweringError(
            f"{where}: its shift amounts '{node.input[1]}' are not a constant, so they may be negative or "
            f"{bits} or more, which {BITSHIFT_28}"
        )
    values = onnx.numpy_helper.to_array(amounts).astype(np.int64, copy=False)
    if values.size and (values.min() < 0 or values.max() >= bits):
        raise LoweringError(
            f"{where}: its shift amounts '{node.input[1]}' hold {int(values.min())}..{int(values.max())}, outside "
            f"[0, {bits}), and {BITSHIFT_28}"
        )
    if element_type not in SAME_WIDTH:
        return [moved(node)]
    right = any(a.name == "direction" and a.s == b"RIGHT" for a in node.attribute)
    if right and element_type == TensorProto.INT64:
        raise LoweringError(
            f"{where}: version 28 shifts int64 right arithmetically, and earlier versions shift only unsigned "
            "types, with no wider one to carry the sign"
        )
    carrier = TensorProto.UINT64 if right else SAME_WIDTH[element_type]
    hint = node.name or node.output[0]
    result: list[onnx.NodeProto] = []
    shifted = moved(node)
    for index in (0, 1):
        name = context.fresh(f"{hint}_as_{schemas.type_name(carrier)}")
        result.append(
            helper.make_node("Cast", [node.input[index]], [name], name=context.fresh(f"{hint}_Cast"), to=carrier)
        )
        shifted.input[index] = name
    wide = context.fresh(f"{hint}_shifted")
    shifted.output[0] = wide
    back = helper.make_node("Cast", [wide], [node.output[0]], name=context.fresh(f"{hint}_Cast_back"), to=element_type)
    return [*result, shifted, back]
