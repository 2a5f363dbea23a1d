"""Steps that only add types to an op's type lists, going down, and Mod across version 28.

A node of types both versions take is left to be re-versioned as any node (the adapter returns
None). A node of an added type is rewritten where a type the older version takes carries its
values exactly and the op's answer comes back exactly; else it is refused, naming the value,
its type and the types the older version takes.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from lowering import floats, schemas, versioning
from lowering.adapters import AdapterContext, adapter, attribute_of, known_change, moved
from lowering.errors import LoweringError
from lowering.scopes import element_type_of


def _is_integer(element_type: int | None) -> bool:
    return element_type is not None and floats.numpy_dtype(element_type).kind in "iu"


def _versions(node: onnx.NodeProto, context: AdapterContext) -> tuple[int, int]:
    return (
        schemas.version_in_force(node.op_type, context.source_opset),
        schemas.version_in_force(node.op_type, context.target_opset),
    )


def _untaken(node: onnx.NodeProto, context: AdapterContext):
    """The first input whose type the target's version of the op does not take (see
    :func:`lowering.versioning.untaken_type`), None where every known type is taken."""
    source_version, target_version = _versions(node, context)
    input_types = [context.type_of(name) if name else None for name in node.input]
    return versioning.untaken_type(node, source_version, target_version, input_types)


def _refuse(node: onnx.NodeProto, context: AdapterContext, untaken, why: str = "") -> LoweringError:
    source_version, _ = _versions(node, context)
    message = versioning.untaken_type_refusal(node, source_version, context.target_opset, untaken)
    return LoweringError(f"{context.location}: {message}{why}")


def _cast(context: AdapterContext, name: str, to: int, hint: str) -> tuple[onnx.NodeProto, str]:
    """A Cast of ``name`` to ``to`` and the fresh name of its output."""
    cast_name = context.fresh(f"{hint}_as_{schemas.type_name(to)}")
    return helper.make_node("Cast", [name], [cast_name], name=context.fresh(f"{hint}_Cast"), to=to), cast_name


def _carried(
    node: onnx.NodeProto, context: AdapterContext, inputs: list[int], carrier: int, element_type: int
) -> list[onnx.NodeProto]:
    """``node`` with its inputs at ``inputs`` cast to ``carrier`` and its one output cast back to
    ``element_type``."""
    hint = node.name or node.output[0]
    result: list[onnx.NodeProto] = []
    carried = moved(node)
    for index in inputs:
        if index < len(node.input) and node.input[index]:
            cast, name = _cast(context, node.input[index], carrier, hint)
            result.append(cast)
            carried.input[index] = name
    wide = context.fresh(f"{hint}_{schemas.type_name(carrier)}")
    carried.output[0] = wide
    result.append(carried)
    back = helper.make_node("Cast", [wide], [node.output[0]], name=context.fresh(f"{hint}_Cast_back"), to=element_type)
    result.append(back)
    return result


# -- Min and Max: integers from version 12 ---------------------------------------------------------


@adapter(("Max", "Min"), 12, "down", "integers compared", versions=(8, 13), types_only=True)
def integers_compared(node: onnx.NodeProto, context: AdapterContext):
    """op-12/13(x₁, …) on integers = Cast(op-8(Cast(x₁, double), …)) to 32 bits, else Where-9(Greater-9(a, b), a, b).

    Min's 64-bit form uses Less. Versions 8–11 take only float types. Every integer of up to
    32 bits is a double exactly, double keeps their order, and the answer is one of the inputs,
    so the Cast back is exact.
    64-bit integers are not all doubles: from opset 9 their larger (smaller) one is picked by
    Greater (Less) and Where, pair by pair, broadcasting as op-8 does (uint64 values pass Where
    as int64, a Cast that keeps every bit both ways, as onnxruntime has no uint64 Where); at
    opset 8, which has no Where, they are refused."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    element_type = element_type_of(context.type_of(node.input[0]))
    if not _is_integer(element_type):
        raise _refuse(node, context, untaken)
    hint = node.name or node.output[0]
    if floats.numpy_dtype(element_type).itemsize <= 4:
        return _carried(node, context, list(range(len(node.input))), TensorProto.DOUBLE, element_type)
    if context.target_opset < 9:
        raise _refuse(node, context, untaken, "; double does not hold every 64-bit integer, and Where comes at opset 9")
    compare = "Greater" if node.op_type == "Max" else "Less"
    values = [name for name in node.input if name]
    if len(values) == 1:
        return [helper.make_node("Identity", values, [node.output[0]], name=context.fresh(f"{hint}_Identity"))]
    result, best = [], values[0]
    for position, value in enumerate(values[1:], start=1):
        last = position == len(values) - 1
        picked = node.output[0] if last else context.fresh(f"{hint}_{node.op_type}_{position}")
        first = context.fresh(f"{hint}_{compare}_{position}")
        result.append(helper.make_node(compare, [best, value], [first], name=context.fresh(f"{hint}_{compare}")))
        where = helper.make_node("Where", [first, best, value], [picked], name=context.fresh(f"{hint}_Where"))
        if element_type == TensorProto.UINT64:  # onnxruntime has no uint64 Where: its bits go through int64
            where = _carried(where, context, [1, 2], TensorProto.INT64, element_type)
            result.extend(where)
        else:
            result.append(where)
        best = picked
    return result


# -- Add, Sub, Mul, Div: 8- and 16-bit integers from version 14 -------------------------------------

SMALL_INTEGERS = {
    TensorProto.INT8: TensorProto.INT32,
    TensorProto.INT16: TensorProto.INT32,
    TensorProto.UINT8: TensorProto.UINT32,
    TensorProto.UINT16: TensorProto.UINT32,
}


@adapter(("Add", "Sub", "Mul", "Div"), 14, "down", "in 32 bits", versions=(7, 14), types_only=True)
def small_integers_in_32_bits(node: onnx.NodeProto, context: AdapterContext):
    """op-14(a, b) on 8/16-bit integers of T = Cast(op-7/13(Cast(a, w), Cast(b, w)), T), w = int32 (signed T) or uint32.

    Versions 7–13 take no 8- or 16-bit integers. In w the exact sum, difference, product and
    truncated quotient of two such integers fit (|−32768 · −32768| = 2³⁰; 65535² < 2³²; an
    unsigned difference wraps modulo 2³², which keeps its low bits), and the Cast back keeps
    the low bits, which is the wraparound of the 8/16-bit op (−128 / −1 = −128 both ways).
    Division by zero fails in both (onnxruntime: "Integer division by zero")."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    element_type = element_type_of(context.type_of(node.input[0]))
    wide = SMALL_INTEGERS.get(element_type)
    if wide is None:
        raise _refuse(node, context, untaken)
    return _carried(node, context, [0, 1], wide, element_type)


# -- Mod across version 28 --------------------------------------------------------------------------

MOD_28 = "version 28 defines fmod=0 on floats (A - floor(A / B) * B); before, fmod=0 takes only integers"


def _fmod_zero(node: onnx.NodeProto) -> bool:
    return not attribute_of(node, "fmod")


_fmod_zero.__doc__ = "``fmod`` is 0 (the default): the version-28 meaning where the inputs are floats"
known_change(("Mod",), 28, MOD_28, down_only=True, affects=_fmod_zero)


@adapter(("Mod",), 28, "down", "integer fmod=0 kept", versions=(10, 28))
def integer_remainder_kept(node: onnx.NodeProto, context: AdapterContext):
    """Mod-28(a, b, fmod=0) on integers = Mod-10/13(a, b, fmod=0): A - floor(A / B) * B in every version.

    Version 28 only adds a meaning for fmod=0 on floats, which earlier versions lack: such a
    node is refused; fmod=1 nodes are left to be re-versioned as any."""
    if not _fmod_zero(node):
        return None
    type_proto = context.type_of(node.input[0])
    element_type = element_type_of(type_proto)
    source_version, _ = _versions(node, context)
    if element_type is None:
        raise LoweringError(
            f"{context.location}: Mod-{source_version} with fmod=0 cannot go to opset {context.target_opset} "
            f"without the type of its input '{node.input[0]}', which is unknown ({MOD_28})"
        )
    if not _is_integer(element_type):
        raise LoweringError(
            f"{context.location}: Mod-{source_version} with fmod=0 on {schemas.type_string(type_proto)} cannot go "
            f"to opset {context.target_opset}: {MOD_28}"
        )
    untaken = _untaken(node, context)
    if untaken is not None:
        raise _refuse(node, context, untaken)
    return [moved(node)]
