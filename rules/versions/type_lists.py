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
    input_types = [context.type_for_judging(name) if name else None for name in node.input]
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
    if schemas.version_in_force("Where", context.target_opset) is None:
        first = schemas.op_versions("Where")[0]
        raise _refuse(
            node, context, untaken, f"; double does not hold every 64-bit integer, and Where comes at opset {first}"
        )
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


FLOAT_REMAINDER_OPS = ("Less", "Greater", "Xor", "Or", "And", "Add", "Where", "Abs", "Sign", "Mul")


@adapter(("Mod",), 28, "down", "fmod=0 kept or built from fmod=1", versions=(10, 28))
def floored_remainder(node: onnx.NodeProto, context: AdapterContext):
    """Mod-28(a, b, fmod=0) on floats = Where(r != r, r, Abs(Where(fix, r+b, r))·Sign(b)), r = Mod(a, b, fmod=1).

    fix = And(Xor(r < 0, b < 0), Or(r < 0, r > 0)); on integers the node is kept as it is.

    Version 28 only adds a meaning for fmod=0 on floats (A - floor(A / B) * B, the sign of B),
    which earlier versions lack; integers mean the same in every version, and fmod=1 nodes are
    left to be re-versioned as any. On floats the truncated remainder r (exact, |r| < |b|)
    is moved by b where it is nonzero and of the other sign than b (r + b rounds as the
    floored remainder does); Abs and Sign(b) then give the result b's sign, a zero included
    (+0 or -0 as b); a NaN r (b ±0 or NaN, a ±inf or NaN) is passed on with its bits. Checked bit for bit
    against onnxruntime's Mod-28 on every float16 against a set of b, and on edge values and
    random pairs of float, double and float16. Needs Where and Sign (opset 9) and a type they
    all take at the target: bfloat16 from opset 16 (Where), where onnxruntime has no bfloat16
    Mod kernel at all; there the values match in onnx.reference (every pattern). NaN is found
    as Not(Equal(r, r)) from opset 11, by IsNaN before (which a caller may ask to lower)."""
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
    untaken = _untaken(node, context)
    if untaken is not None:
        raise _refuse(node, context, untaken)
    if _is_integer(element_type):
        return [moved(node)]
    typed = schemas.type_string(type_proto)
    # NaN is found as Not(Equal(r, r)) where Equal takes the type (opset 11), else by IsNaN,
    # which may be an op the caller asked to lower
    nan_op = "Equal" if _takes("Equal", context.target_opset, typed) else "IsNaN"
    lacking = [
        op
        for op in (*FLOAT_REMAINDER_OPS, nan_op)
        if not _takes(op, context.target_opset, "tensor(bool)" if op in _BOOLEAN_OPS else typed)
    ]
    if lacking:
        raise LoweringError(
            f"{context.location}: Mod-{source_version} with fmod=0 on {typed} cannot go to opset "
            f"{context.target_opset}: {MOD_28}, and the floored remainder needs {', '.join(lacking)} "
            f"on {typed}, which opset {context.target_opset} lacks"
        )
    return _floored_from_truncated(node, context, element_type, nan_op)


_BOOLEAN_OPS = frozenset({"Xor", "Or", "And"})


def _takes(op_type: str, opset: int, typed: str) -> bool:
    """Whether ``op_type`` exists at ``opset`` and takes ``typed`` for the remainder's values."""
    if schemas.version_in_force(op_type, opset) is None:
        return False
    return typed in schemas.input_type_strings(op_type, opset, 1 if op_type == "Where" else 0)


def _floored_from_truncated(
    node: onnx.NodeProto, context: AdapterContext, element_type: int, nan_op: str
) -> list[onnx.NodeProto]:
    hint = node.name or node.output[0]
    b = node.input[1]
    names: dict[str, str] = {}

    def fresh(key: str) -> str:
        names[key] = context.fresh(f"{hint}_{key}")
        return names[key]

    def make(op_type: str, inputs: list[str], output: str, **attributes) -> onnx.NodeProto:
        return helper.make_node(op_type, inputs, [output], name=context.fresh(f"{hint}_{op_type}"), **attributes)

    zero = helper.make_tensor(fresh("zero"), element_type, [], [0])
    truncated = moved(node, fmod=1)
    truncated.output[0] = fresh("truncated")
    r = names["truncated"]
    return [
        helper.make_node("Constant", [], [names["zero"]], name=context.fresh(f"{hint}_zero_constant"), value=zero),
        truncated,
        make("Less", [r, names["zero"]], fresh("r_negative")),
        make("Greater", [r, names["zero"]], fresh("r_positive")),
        make("Less", [b, names["zero"]], fresh("b_negative")),
        make("Xor", [names["r_negative"], names["b_negative"]], fresh("signs_differ")),
        make("Or", [names["r_negative"], names["r_positive"]], fresh("r_nonzero")),
        make("And", [names["signs_differ"], names["r_nonzero"]], fresh("fix")),
        make("Add", [r, b], fresh("moved")),
        make("Where", [names["fix"], names["moved"], r], fresh("floored")),
        make("Abs", [names["floored"]], fresh("magnitude")),
        make("Sign", [b], fresh("b_sign")),
        make("Mul", [names["magnitude"], names["b_sign"]], fresh("signed")),
        *_nan_mask(nan_op, r, fresh, make),
        make("Where", [names["r_nan"], r, names["signed"]], node.output[0]),
    ]


def _nan_mask(nan_op: str, r: str, fresh, make) -> list[onnx.NodeProto]:
    """r != r as ``Equal(Equal(r, r), false)``, or ``IsNaN(r)``; the mask's name is ``r_nan``.
    Not ``Not(Equal(r, r))``: onnxruntime fuses Not into the Where after it by swapping its
    branches, and its Where loses -0 in the other branch (README: "Why IsNaN ends in
    Equal(…, false) and not Not")."""
    if nan_op == "IsNaN":
        return [make("IsNaN", [r], fresh("r_nan"))]
    number, false = fresh("r_number"), fresh("false")
    false_value = helper.make_tensor(false, onnx.TensorProto.BOOL, [], [False])
    return [
        make("Equal", [r, r], number),
        make("Constant", [], false, value=false_value),
        make("Equal", [number, false], fresh("r_nan")),
    ]
