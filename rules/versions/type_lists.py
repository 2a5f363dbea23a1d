"""Steps that only add types to an op's type lists, going down, and Mod across version 28.

A node of types both versions take is left to be re-versioned as any node (the adapter returns
None). A node of an added type is rewritten where a type the older version takes carries its
values exactly and the op's answer comes back exactly; else it is refused, naming the value,
its type and the types the older version takes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from lowering import floats, schemas
from lowering.builder import Builder, Value
from lowering.conversion import version_steps
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, constant_array, known_change, moved
from lowering.errors import NotLowered
from lowering.integer_casts import WRAPPING_CAST_OPSET, wrapped_cast
from lowering.scopes import element_type_of


def _versions(node: onnx.NodeProto, context: AdapterContext) -> tuple[int, int]:
    return (
        schemas.version_in_force(node.op_type, context.source_opset),
        schemas.version_in_force(node.op_type, context.target_opset),
    )


def _untaken(node: onnx.NodeProto, context: AdapterContext):
    """The first input whose type the target's version of the op does not take (see
    :func:`lowering.conversion.version_steps.untaken_type`), None where every known type is taken."""
    source_version, target_version = _versions(node, context)
    input_types = [context.judged_type_of(name) if name else None for name in node.input]
    return version_steps.untaken_type(node, source_version, target_version, input_types)


def _refuse(node: onnx.NodeProto, context: AdapterContext, untaken, why: str = "") -> NotLowered:
    source_version, _ = _versions(node, context)
    message = version_steps.untaken_type_refusal(node, source_version, context.target_opset, untaken)
    return NotLowered(f"{message}{why}")


def _carried(
    b: Builder,
    node: onnx.NodeProto,
    inputs: list[int],
    carrier: int,
    element_type: int,
    output: str | None,
    wrapped: bool = False,
) -> Value:
    """``node`` with its inputs at ``inputs`` cast to ``carrier`` and its one output cast back to
    ``element_type``, into ``output`` (a fresh value where None); ``wrapped``: cast back as Cast-13
    wraps an integer out of range, whatever the opset (:func:`lowering.integer_casts.wrapped_cast`)."""
    carried = list(node.input)
    for index in inputs:
        if index < len(node.input) and node.input[index]:
            carried[index] = b.Cast(node.input[index], to=carrier).name
    wide = b.moved(node, inputs=carried, outputs=[b.fresh(schemas.type_name(carrier)), *node.output[1:]])
    outputs = None if output is None else [output]
    if wrapped and b.opset < WRAPPING_CAST_OPSET:
        return wrapped_cast(b, Value(wide.output[0], carrier), carrier, element_type, outputs=outputs)
    return b.Cast(wide.output[0], to=element_type, outputs=outputs)


# -- Min and Max: integers from version 12 ---------------------------------------------------------


# Cases: every integer case at 11 and 8; 64-bit ones refused at 8 (no Where there, and double is not exact)
@adapter(("Max", "Min"), 12, "down", "integers compared", versions=(8, 13), types_only=True, cases=14)
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
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    if not floats.is_integer(element_type):
        raise _refuse(node, context, untaken)
    b = context.builder(node)
    if floats.numpy_dtype(element_type).itemsize <= 4:
        _carried(b, node, list(range(len(node.input))), TensorProto.DOUBLE, element_type, node.output[0])
        return b.nodes
    if schemas.version_in_force("Where", context.target_opset) is None:
        first = schemas.op_versions("Where")[0]
        raise _refuse(
            node, context, untaken, f"; double does not hold every 64-bit integer, and Where comes at opset {first}"
        )
    compare = "Greater" if node.op_type == "Max" else "Less"
    values = [name for name in node.input if name]
    if len(values) == 1:
        b.Identity(values[0], outputs=[node.output[0]])
        return b.nodes
    best = values[0]
    for position, value in enumerate(values[1:], start=1):
        picked = [node.output[0]] if position == len(values) - 1 else None
        first = b.op(compare, best, value)
        if element_type == TensorProto.UINT64:  # onnxruntime has no uint64 Where: its bits go through int64
            as_int64 = b.Where(first, b.Cast(best, to=TensorProto.INT64), b.Cast(value, to=TensorProto.INT64))
            best = b.Cast(as_int64, to=element_type, outputs=picked)
        else:
            best = b.Where(first, best, value, outputs=picked)
    return b.nodes


# -- Add, Sub, Mul, Div: 8- and 16-bit integers from version 14 -------------------------------------

SMALL_INTEGERS = {
    TensorProto.INT8: TensorProto.INT32,
    TensorProto.INT16: TensorProto.INT32,
    TensorProto.UINT8: TensorProto.UINT32,
    TensorProto.UINT16: TensorProto.UINT32,
}


# Cases: int8, int16, uint8, uint16 at 13 and 7
@adapter(("Add", "Sub", "Mul", "Div"), 14, "down", "in 32 bits", versions=(7, 14), types_only=True, cases=8)
def small_integers_in_32_bits(node: onnx.NodeProto, context: AdapterContext):
    """op-14(a, b) on 8/16-bit integers of T = Cast(op-7/13(Cast(a, w), Cast(b, w)), T), w = int32 (signed T) or uint32.

    Versions 7–13 take no 8- or 16-bit integers. In w the exact sum, difference, product and
    truncated quotient of two such integers fit (|−32768 · −32768| = 2³⁰; 65535² < 2³²; an
    unsigned difference wraps modulo 2³², which keeps its low bits), and the Cast back keeps
    the low bits, which is the wraparound of the 8/16-bit op (−128 / −1 = −128 both ways); below
    opset 13, whose Cast leaves a value out of range undefined, the low bits are taken first
    (:func:`lowering.integer_casts.wrapped_cast`).
    Division by zero fails in both (onnxruntime: "Integer division by zero")."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    wide = SMALL_INTEGERS.get(element_type)
    if wide is None:
        raise _refuse(node, context, untaken)
    b = context.builder(node)
    _carried(b, node, [0, 1], wide, element_type, node.output[0], wrapped=True)
    return b.nodes


# -- Mod across version 28 --------------------------------------------------------------------------

MOD_28 = "version 28 defines fmod=0 on floats (A - floor(A / B) * B); before, fmod=0 takes only integers"


def _fmod_zero(node: onnx.NodeProto) -> bool:
    return not attribute_of(node, "fmod")


_fmod_zero.__doc__ = "``fmod`` is 0 (the default): the version-28 meaning where the inputs are floats"
known_change(("Mod",), 28, MOD_28, down_only=True, affects=_fmod_zero)


FLOAT_REMAINDER_OPS = ("Less", "Greater", "Xor", "Or", "And", "Add", "Where", "Abs", "Sign", "Mul")


# Cases: the fmod=0 integer and float cases at 27 and 10
@adapter(("Mod",), 28, "down", "fmod=0 kept or built from fmod=1", versions=(10, 28), cases=30)
def floored_remainder(node: onnx.NodeProto, context: AdapterContext):
    """Mod-28(a, b, fmod=0) on floats = Where(r != r, r, Abs(Where(fix, r+b, r))·Sign(b)), r = fmod(a, b).

    r = Where(|a| < |b|, a, Mod(a, b, fmod=1)),
    fix = And(Xor(r < 0, b < 0), Or(r < 0, r > 0)); on integers the node is kept as it is.

    Version 28 only adds a meaning for fmod=0 on floats (A - floor(A / B) * B, the sign of B),
    which earlier versions lack; integers mean the same in every version, and fmod=1 nodes are
    left to be re-versioned as any. On floats the truncated remainder r (exact, |r| < |b|)
    is moved by b where it is nonzero and of the other sign than b (r + b rounds as the
    floored remainder does); Abs and Sign(b) then give the result b's sign, a zero included
    (+0 or -0 as b); a NaN r (b ±0 or NaN, a ±inf or NaN) is passed on with its bits. The
    truncated remainder of an a smaller than b in magnitude is a itself (C's fmod), written out so
    for runtimes that take fmod through the quotient a - trunc(a / b)·b, NaN for a finite a by an
    infinite b (OpenVINO: -3 by +inf would floor to NaN, not +inf). Checked bit for bit
    against onnxruntime's Mod-28 on every float16 against a set of b, and on edge values and
    random pairs of float, double and float16. Needs Where and Sign (opset 9) and a type they
    all take at the target: bfloat16 from opset 16 (Where), where onnxruntime has no bfloat16
    Mod kernel at all; there the values match in onnx.reference (every pattern). NaN is found
    as Not(Equal(r, r)) from opset 11, by IsNaN before (which a caller may ask to lower)."""
    if not _fmod_zero(node):
        return None
    type_proto = context.inferred_type_of(node.input[0])
    element_type = element_type_of(type_proto)
    source_version, _ = _versions(node, context)
    if element_type is None:
        raise NotLowered(
            f"Mod-{source_version} with fmod=0 cannot go to opset {context.target_opset} "
            f"without the type of its input '{node.input[0]}', which is unknown ({MOD_28})"
        )
    untaken = _untaken(node, context)
    if untaken is not None:
        raise _refuse(node, context, untaken)
    if floats.is_integer(element_type):
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
        raise NotLowered(
            f"Mod-{source_version} with fmod=0 on {typed} cannot go to opset "
            f"{context.target_opset}: {MOD_28}, and the floored remainder needs {', '.join(lacking)} "
            f"on {typed}, which opset {context.target_opset} lacks"
        )
    b = context.builder(node)
    _floored_from_truncated(b, node, element_type, nan_op)
    return b.nodes


_BOOLEAN_OPS = frozenset({"Xor", "Or", "And"})


def _takes(op_type: str, opset: int, typed: str) -> bool:
    """Whether ``op_type`` exists at ``opset`` and takes ``typed`` for the remainder's values."""
    if schemas.version_in_force(op_type, opset) is None:
        return False
    return typed in schemas.input_type_strings(op_type, opset, 1 if op_type == "Where" else 0)


def _floored_from_truncated(b: Builder, node: onnx.NodeProto, element_type: int, nan_op: str) -> None:
    dividend, divisor = node.input[0], node.input[1]
    zero = b.scalar(0, element_type, "zero")
    fmod = b.moved(node, outputs=[b.fresh("truncated")], fmod=1).output[0]
    r = _smaller_kept(b, dividend, divisor, fmod)
    r_negative, r_positive = b.Less(r, zero), b.Greater(r, zero)
    divisor_negative = b.Less(divisor, zero)
    fix = b.And(b.Xor(r_negative, divisor_negative), b.Or(r_negative, r_positive))
    floored = b.Where(fix, b.Add(r, divisor), r)
    signed = b.Mul(b.Abs(floored), b.Sign(divisor))
    b.Where(_nan_mask(b, nan_op, r), r, signed, outputs=[node.output[0]])


def _smaller_kept(b: Builder, dividend: str, divisor: str, fmod: str) -> Value:
    """fmod(a, b) = a where |a| < |b| (C's fmod, exact: a zero's sign included), written out as
    Where(|a| < |b|, a, fmod): a finite a by ±inf is a itself, not NaN from the quotient a runtime
    may take; NaN a or b, and |a| ≥ |b|, fall to fmod."""
    return b.Where(b.Less(b.Abs(dividend), b.Abs(divisor)), dividend, fmod)


def _nan_mask(b: Builder, nan_op: str, r: str) -> Value:
    """r != r as ``Equal(Equal(r, r), false)``, or ``IsNaN(r)``.
    Not ``Not(Equal(r, r))``: onnxruntime fuses Not into the Where after it by swapping its
    branches, and its Where loses -0 in the other branch (docs/rules.md: "Why IsNaN ends in
    Equal(…, false) and not Not")."""
    if nan_op == "IsNaN":
        return b.IsNaN(r)
    return b.Equal(b.Equal(r, r), b.scalar(False, TensorProto.BOOL, "false"))


# -- Pow: integer bases and exponents, and mixed types, from version 12 ------------------------------

# The base and exponent types onnxruntime's Pow kernel runs (versions 7 to 15): it computes
# static_cast<T>(std::pow(x, y)), which C++ takes in double for every pair but float^float,
# except where the exponent is one value per innermost span (broadcast along the output's last
# axis of more than one element while the base is not): there y == 2 gives x·x and y == 3 gives
# x·x·x, multiplied in T.
POW_KERNEL_TYPES = frozenset({TensorProto.INT32, TensorProto.INT64, TensorProto.FLOAT, TensorProto.DOUBLE})
_INTEGER_EXPONENTS = frozenset(
    {
        TensorProto.INT8,
        TensorProto.INT16,
        TensorProto.INT32,
        TensorProto.INT64,
        TensorProto.UINT8,
        TensorProto.UINT16,
        TensorProto.UINT32,
        TensorProto.UINT64,
    }
)
# The exponents a base takes through double: those onnxruntime's kernel runs, and those it has no
# kernel for where onnx.reference's numpy power promotes the pair to double as well (float32 with
# 8- and 16-bit integers stays float32 in numpy; integer bases there are powered exactly, wrapping).
POW_IN_DOUBLE = {
    TensorProto.FLOAT: frozenset(
        {TensorProto.INT32, TensorProto.INT64, TensorProto.UINT32, TensorProto.UINT64, TensorProto.DOUBLE}
    ),
    TensorProto.DOUBLE: _INTEGER_EXPONENTS | {TensorProto.FLOAT},
    TensorProto.INT32: frozenset(POW_KERNEL_TYPES),
    TensorProto.INT64: frozenset(POW_KERNEL_TYPES),
}
# The exponents whose per-span product differs from the power in double cast to T: x·x·x in
# float rounds twice; integer products wrap where the double's Cast does not (and int64 ones
# are exact where double rounds). In double both sides multiply the same.
POW_MULTIPLIED = {TensorProto.FLOAT: (3,), TensorProto.DOUBLE: (), TensorProto.INT32: (2, 3), TensorProto.INT64: (2, 3)}


def exponent_per_span(base_shape, exponent_shape) -> bool | None:
    """Whether onnxruntime's Pow kernel takes the exponent as one value per span: the output's
    innermost axis of more than one element is broadcast in the exponent and not in the base.
    None where a dimension is not known statically."""
    if base_shape is None or exponent_shape is None:
        return None
    if not all(isinstance(d, int) for d in (*base_shape, *exponent_shape)):
        return None
    rank = max(len(base_shape), len(exponent_shape))
    base = [1] * (rank - len(base_shape)) + list(base_shape)
    exponent = [1] * (rank - len(exponent_shape)) + list(exponent_shape)
    axes = [axis for axis in range(rank) if max(base[axis], exponent[axis]) != 1]
    if not axes:
        return False  # one element: the base is the scalar, the power is taken in double
    return exponent[axes[-1]] == 1 and base[axes[-1]] != 1


# Cases: the 8 mixed-type backend cases at 11 and 7 (uint32/uint64 exponents in onnx.reference)
@adapter(("Pow",), 12, "down", "in double", versions=(7, 15), types_only=True, cases=16)
def power_in_double(node: onnx.NodeProto, context: AdapterContext):
    """Pow-12/15(x, y) of integer or mixed types = Cast(Pow-7(Cast(x, double), Cast(y, double)), T).

    Versions 7–11 take one float type for both. onnxruntime's kernel (versions 7 to 15 alike)
    computes static_cast<T>(std::pow(x, y)), which C++ evaluates as pow on the pair promoted to
    double: the Casts make that promotion (int64 rounds to nearest in both), Pow-7 on double
    calls the same pow, and the Cast back is the same conversion (round to nearest; truncation
    to integers, INT_MIN of the type for NaN and out of range, as the kernel's cast gives).
    Where the exponent is one value per innermost span, the kernel multiplies in T for y = 2 and
    y = 3 (x·x·x in float rounds twice; integer products wrap): there those elements are
    Where(y = 3, x·x·x, Where(y = 2, x·x, …)) in T. Exponent types onnxruntime lacks (uint32 and
    uint64 on a float base, any integer on a double one) mean numpy's power in double
    (onnx.reference). Refused: float16 and bfloat16, integer bases with exponents onnxruntime has
    no kernel for (onnx.reference powers those exactly), float32 with 8- and 16-bit exponents
    (numpy powers those in float32), and a possible 2 or 3 per span where shapes are not known."""
    base_type = element_type_of(context.judged_type_of(node.input[0]))
    exponent_type = element_type_of(context.judged_type_of(node.input[1]))
    if base_type is None or exponent_type is None:
        return None  # judged as any node: an input of a known type Pow-7 lacks is refused there
    source_version, target_version = _versions(node, context)
    taken = schemas.input_type_strings("Pow", context.target_opset, 0)
    typed = [schemas.type_string(context.judged_type_of(name)) for name in node.input[:2]]
    if base_type == exponent_type and typed[0] in taken:
        return None
    where = f"Pow-{source_version} cannot go to opset {context.target_opset}"
    pair = f"{schemas.type_name(base_type)} to the power of {schemas.type_name(exponent_type)}"
    if exponent_type not in POW_IN_DOUBLE.get(base_type, ()):
        why = "onnxruntime has no kernel for it, or it is float16 or bfloat16"
        untaken = _untaken(node, context)
        if untaken is not None:
            raise _refuse(node, context, untaken, f"; {pair} is not the power in double ({why})")
        raise NotLowered(
            f"{where}: Pow-{target_version} takes one float type for base and exponent, and {pair} "
            f"is not the power in double ({why})"
        )
    carried = [0, 1] if base_type != TensorProto.DOUBLE else [1]
    b = context.builder(node)
    multiplied = POW_MULTIPLIED[base_type] if exponent_type in POW_KERNEL_TYPES else ()
    exponents = constant_array(context, node.input[1])
    if exponents is not None:
        multiplied = tuple(v for v in multiplied if (exponents == v).any())
    per_span = (
        exponent_per_span(context.shape_of(node.input[0]), context.shape_of(node.input[1])) if multiplied else False
    )
    if per_span is False:
        _carried(b, node, carried, TensorProto.DOUBLE, base_type, node.output[0])
        return b.nodes
    exponent_typed = typed[1]
    lacking = [
        op
        for op, typed_here in (
            ("Where", "tensor(bool)"),
            ("Equal", exponent_typed),
            ("Mul", typed[0]),
            ("Less", "tensor(double)"),
        )
        if schemas.version_in_force(op, context.target_opset) is None
        or (op != "Where" and typed_here not in schemas.input_type_strings(op, context.target_opset, 0))
    ]
    if per_span is None or lacking:
        why = (
            "the shapes of its inputs are not known statically"
            if per_span is None
            else f"opset {context.target_opset} lacks {', '.join(lacking)} for it"
        )
        raise NotLowered(
            f"{where}: onnxruntime's kernel takes {pair} as pow in double, except that an exponent of "
            f"{' or '.join(map(str, multiplied))} broadcast along the innermost axis multiplies in "
            f"{schemas.type_name(base_type)}, and {why}"
        )
    _multiplied_per_span(b, node, context, carried, base_type, exponent_type, multiplied, exponents)
    return b.nodes


def _multiplied_per_span(
    b: Builder,
    node: onnx.NodeProto,
    context: AdapterContext,
    carried: list[int],
    base_type: int,
    exponent_type: int,
    multiplied: tuple[int, ...],
    exponents,
) -> None:
    """Where(y = 3, x·x·x, Where(y = 2, x·x, power)) in T, for the values of ``multiplied``; a
    constant exponent of one value is its product alone. onnxruntime's Where gives +0 for a -0
    it picks from its first branch (ONNX's keeps it): a float x·x·x of -0 picked there and come
    out as +0 is made -0 again by a Mul by -1, found as 1 / Cast(x·x·x, double) = -inf and
    1 / Cast(picked, double) = +inf (finite for every other float), so either Where gives -0."""
    x, y = node.input[0], node.input[1]
    base_shape = context.shape_of(x)
    if (
        exponents is not None
        and exponents.size
        and (exponents == exponents[0]).all()
        and list(np.broadcast_shapes(tuple(base_shape), tuple(context.shape_of(y)))) == list(base_shape)
    ):
        x_or_squared = b.Mul(x, x) if int(exponents[0]) == 3 else x  # x·x, or x·x·x
        b.Mul(x_or_squared, x, outputs=[node.output[0]])
        return
    power = _carried(b, node, carried, TensorProto.DOUBLE, base_type, None)
    squared = b.Mul(x, x)
    products = {2: squared, 3: b.Mul(squared, x)}
    chosen = power
    sign_fixed = base_type != TensorProto.INT32 and base_type != TensorProto.INT64
    for position, value in enumerate(multiplied):
        is_value = b.Equal(y, b.scalar(value, exponent_type, f"exponent_{value}"))
        if position == len(multiplied) - 1 and not sign_fixed:
            b.Where(is_value, products[value], chosen, outputs=[node.output[0]])
            return
        chosen = b.Where(is_value, products[value], chosen)
    # float: 3 alone
    one = b.scalar(1.0, TensorProto.DOUBLE, "one")
    cubed_inverse = b.Div(one, b.Cast(products[3], to=TensorProto.DOUBLE))
    negative_zero = b.Less(cubed_inverse, b.scalar(-1e300, TensorProto.DOUBLE, "below"))
    # the sign is lost only where the Where gave +0 (ONNX's Where keeps -0; onnxruntime's may not)
    chosen_inverse = b.Div(one, b.Cast(chosen, to=TensorProto.DOUBLE))
    positive_zero = b.Greater(chosen_inverse, b.scalar(1e300, TensorProto.DOUBLE, "above"))
    lost = b.And(b.And(is_value, negative_zero), positive_zero)
    signs = b.Where(lost, b.scalar(-1.0, base_type, "minus_one"), b.scalar(1.0, base_type, "plus_one"))
    b.Mul(chosen, signs, outputs=[node.output[0]])


# -- QLinearMatMul: float16 scales from version 21 -----------------------------------------------------

FLOAT_ONLY = frozenset({"tensor(float)"})


def _float_only_inputs(node: onnx.NodeProto, opset: int) -> list[int]:
    """The inputs the op's version at ``opset`` takes as float only (QLinearMatMul-10's scales), from onnx.defs."""
    return [i for i in range(len(node.input)) if schemas.input_type_strings(node.op_type, opset, i) == FLOAT_ONLY]


# Cases: the float16-scale backend cases at 20 and 10 (compared in onnxruntime)
@adapter(("QLinearMatMul",), 21, "down", "float16 scales as float", versions=(10, 21), types_only=True, cases=8)
def float16_scales_as_float(node: onnx.NodeProto, context: AdapterContext):
    """QLinearMatMul-21(a, sa, za, b, sb, zb, sy, zy), s float16 = QLinearMatMul-10(a, Cast(sa, float), za, …).

    Version 10 takes float scales only. Every float16 is a float exactly, and onnxruntime runs
    version 21 with float16 scales as its float kernel on the scales cast to float (measured:
    the same bits on thousands of random int8 and uint8 products and scales; onnx.reference
    instead multiplies the scales in float16, which the spec does not ask for). bfloat16
    scales (no onnxruntime kernel) and float8 inputs are refused."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    scale_type = element_type_of(context.inferred_type_of(node.input[1]))
    if scale_type != TensorProto.FLOAT16:
        raise _refuse(node, context, untaken)
    scales = _float_only_inputs(node, context.target_opset)
    quantized = [index for index in range(len(node.input)) if index not in scales]
    taken = [schemas.input_type_strings(node.op_type, context.target_opset, index) for index in quantized]
    typed = [context.judged_type_of(node.input[index]) for index in quantized]
    if any(t is not None and schemas.type_string(t) not in ok for t, ok in zip(typed, taken, strict=True)):
        raise _refuse(node, context, untaken, "; its quantized values are of a type version 10 lacks too")
    b = context.builder(node)
    carried = list(node.input)
    for index in scales:
        carried[index] = b.Cast(node.input[index], to=TensorProto.FLOAT).name
    b.moved(node, inputs=carried)
    return b.nodes
