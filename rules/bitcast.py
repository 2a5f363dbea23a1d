"""BitCast (version 26, no function body) between types whose bits mean the same values: a Cast."""

from __future__ import annotations

import onnx

from lowering import floats, schemas
from lowering.integer_casts import WRAPPING_CAST_OPSET
from lowering.registry import Builder, NotLowered, Value, rule


def _width(element_type: int) -> int:
    return floats.numpy_dtype(element_type).itemsize


@rule("BitCast", versions=(26,), emits=("Cast", "Identity"))
def bitcast_as_cast(b: Builder, x: Value, *, to: int) -> Value:
    """BitCast(x, to) = Cast(x, to) between integer types of one width; Identity(x) for its own type.

    Two's complement: a signed and an unsigned integer of n bits holding the same bits differ by
    a multiple of 2^n, and Cast between integers wraps modulo 2^n (onnxruntime's static_cast,
    numpy's astype), so it gives those bits. A bool (one byte, 0 or 1) to an 8-bit integer is 0 or
    1 both ways. Not lowered: floats (a Cast changes their bits and no op before 26 reads them:
    NaN payloads, -0), integers to bool (a byte other than 0 or 1 is no bool), 4- and 2-bit types,
    integers below opset 13 (:data:`WRAPPING_CAST_OPSET`: Cast leaves out of range undefined).
    """
    source = x.element_type
    if source == to:
        return b.Identity(x)
    eight_bit = (onnx.TensorProto.INT8, onnx.TensorProto.UINT8)
    if source == onnx.TensorProto.BOOL and to in eight_bit:
        return b.Cast(x, to=to)
    if floats.is_integer(source) and floats.is_integer(to) and _width(source) == _width(to):
        if b.opset < WRAPPING_CAST_OPSET:
            raise NotLowered(
                f"Cast wraps an integer out of range from opset {WRAPPING_CAST_OPSET}; at {b.opset} it is undefined"
            )
        return b.Cast(x, to=to)
    raise NotLowered(
        f"BitCast from {schemas.type_name(source)} to {schemas.type_name(to)} reinterprets bits no Cast keeps "
        "(only integers of one width, and bool to an 8-bit integer, are a Cast)"
    )
