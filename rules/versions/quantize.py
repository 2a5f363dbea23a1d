"""QuantizeLinear and DequantizeLinear going down: across 19/21/23 with their new attributes at
values the older version means too, and across 13 with a per-tensor scale; a node the older
version cannot take (blocks, 16-bit integers, float16 values, per slice below 13) as its formula:
(x - z) * s, and saturate(Round(x / s) + z)."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import onnx
from onnx import helper

from lowering import schemas
from lowering.builder import Builder, moved
from lowering.conversion.adapters import (
    AdapterContext,
    HeldAttributes,
    adapter,
    attribute_of,
    known_change,
    require_types_taken,
)
from lowering.errors import NotLowered

from ..quantize_linear import WHOLE_NUMBERS, dequantized, division_type, lined_up, quantized

QUANTIZE_13 = "version 13 takes a scale and zero point per slice along axis; version 10 only scalars"
QUANTIZE_19 = (
    "versions 19 to 28 add saturate, block_size, output_dtype and precision, and types version 13 lacks "
    "(float16 and bfloat16 values, float8, 16-, 4- and 2-bit integers)"
)
known_change(("QuantizeLinear", "DequantizeLinear"), 19, QUANTIZE_19, down_only=True)
QUANTIZE_21 = "version 21 adds block_size, and QuantizeLinear's output_dtype"
QUANTIZE_23 = (
    "version 23 adds QuantizeLinear's precision, which, unset, names the scale's type (float16 divides in float16 "
    "from 23, in float32 before), and DequantizeLinear's output_dtype"
)


for _op_type in ("QuantizeLinear", "DequantizeLinear"):  # (a node stating none of the step's attributes moves as it is)
    known_change((_op_type,), 21, QUANTIZE_21, down_only=True, affects=HeldAttributes.added_at(21, _op_type))
# (every QuantizeLinear: its division's type, even unset, means otherwise across 23)
known_change(("QuantizeLinear",), 23, QUANTIZE_23)
known_change(
    ("DequantizeLinear",), 23, QUANTIZE_23, down_only=True, affects=HeldAttributes.added_at(23, "DequantizeLinear")
)
LATER_ATTRIBUTES = ("saturate", "block_size", "output_dtype", "precision")  # versions 19 to 28


def _element_type(context: AdapterContext, name: str) -> int | None:
    type_proto = context.inferred_type_of(name) if name else None
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    return type_proto.tensor_type.elem_type or None


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    version = schemas.version_in_force(node.op_type, context.source_opset)
    return NotLowered(f"{node.op_type}-{version} {why}, so it cannot go to opset {context.target_opset}")


def _dropped_at_target(node: onnx.NodeProto, context: AdapterContext) -> tuple[str, ...]:
    """The attributes of versions 19 to 28 (:data:`LATER_ATTRIBUTES`) the target's version lacks."""
    schema = schemas.schema_in_force(node.op_type, context.target_opset)
    taken = schema.attributes if schema is not None else {}
    return tuple(name for name in LATER_ATTRIBUTES if name not in taken)


def _target_inputs(b: Builder, node: onnx.NodeProto, context: AdapterContext) -> list[str]:
    """The node's inputs at the target's version, which it takes without the attributes it lacks
    (:func:`_dropped_at_target`) where their values say what it says, and with the types it
    takes; a refusal naming what cannot be said otherwise."""
    require_types_taken(node, context, unknown_refused=True)
    dropped = _dropped_at_target(node, context)
    block_size = attribute_of(node, "block_size")
    if block_size and "block_size" in dropped:
        raise _refused(node, context, f"quantizes in blocks of {block_size} (block_size, from version 21)")
    scale_type = _element_type(context, node.input[1]) if len(node.input) > 1 else None
    # saturate chooses how float8 outputs overflow: version 13 has no float8 output (refused above)
    # (a precision the target divides otherwise in goes by arithmetic: _needs_arithmetic, asked first)
    output_dtype = attribute_of(node, "output_dtype") if "output_dtype" in dropped else None
    if output_dtype and node.op_type == "DequantizeLinear" and output_dtype != scale_type:
        raise _refused(
            node,
            context,
            f"gives {schemas.type_name(output_dtype)} (output_dtype, from version 23), not its scale's type",
        )
    has_zero_point = len(node.input) > 2 and bool(node.input[2])
    if (
        output_dtype
        and node.op_type == "QuantizeLinear"
        and not has_zero_point
        and output_dtype != onnx.TensorProto.UINT8
    ):
        # version 13 reads the output type from the zero point: a zero point of zeros says it
        zero_type = schemas.output_element_types(node.op_type, context.target_opset)
        scale_shape = context.shape_of(node.input[1])
        if output_dtype not in zero_type:
            raise _refused(node, context, f"quantizes to {schemas.type_name(output_dtype)} (output_dtype)")
        if scale_shape is None or not all(isinstance(d, int) for d in scale_shape):
            raise _refused(
                node,
                context,
                f"quantizes to {schemas.type_name(output_dtype)} (output_dtype) with a scale of shape {scale_shape}, "
                "so the zero point that says that type cannot be made",
            )
        zeros = np.zeros(scale_shape, dtype=helper.tensor_dtype_to_np_dtype(output_dtype))
        return [*node.input[:2], b.tensor(zeros, "zero_point").name]
    return list(node.input)


def _x_in_scale_type(adapt):
    """The adapter ``adapt`` of a QuantizeLinear-23..28 whose x and scale differ in type, going to
    a version that gives them one type: x float16 or bfloat16 divided by a float scale in float32
    (:func:`rules.quantize_linear.division_type`) is given with x cast first,
    QuantizeLinear-23(x, s, z) = QuantizeLinear-23(Cast(x, float), s, z) (exact: the cast, as 23
    converts x to the type it divides in); divided in float16, the node goes to ``adapt`` as it
    is (its formula, which converts both); any other pair of types is refused. A node of one
    type for both goes to ``adapt`` as it is."""

    @functools.wraps(adapt)
    def adapted(node: onnx.NodeProto, context: AdapterContext):
        x_type = _element_type(context, node.input[0]) if node.input else None
        scale_type = _element_type(context, node.input[1]) if len(node.input) > 1 else None
        if (
            node.op_type != "QuantizeLinear"
            or None in (x_type, scale_type)
            or x_type == scale_type
            or not _typed_apart(node.op_type, context.source_opset)
            or _typed_apart(node.op_type, context.target_opset)
        ):
            return adapt(node, context)
        divided_in = _divided_in(node, context, context.source_opset)
        if divided_in == onnx.TensorProto.FLOAT16:
            return adapt(node, context)
        if divided_in != onnx.TensorProto.FLOAT or x_type not in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            raise _refused(
                node,
                context,
                f"divides {schemas.type_name(x_type)} values by a {schemas.type_name(scale_type)} scale in "
                f"{schemas.type_name(divided_in) if divided_in else 'an unknown type'}, which no one type of both says",
            )
        cast_x = context.names.fresh(f"{node.input[0]}_as_scale")
        cast = helper.make_node(
            "Cast", [node.input[0]], [cast_x], name=context.names.fresh(f"{node.name or node.output[0]}_Cast"),
            to=scale_type,
        )  # fmt: skip
        recast = onnx.NodeProto()
        recast.CopyFrom(node)
        recast.input[0] = cast_x
        typed = {cast_x: onnx.TypeProto()}
        typed[cast_x].CopyFrom(context.inferred_type_of(node.input[0]))
        typed[cast_x].tensor_type.elem_type = scale_type

        def type_with_cast(read):
            return lambda name: typed.get(name) or read(name)

        cast_context = dataclasses.replace(
            context,
            inferred_type_of=type_with_cast(context.inferred_type_of),
            judged_types=type_with_cast(context.judged_type_of),
            stated_types=type_with_cast(context.type_of),
        )
        result = adapt(recast, cast_context)
        return [cast, *(result if result is not None else [recast])]

    return adapted


def _divides_otherwise(node: onnx.NodeProto, context: AdapterContext) -> bool:
    """The target's version divides in another type than the node's (float32 where it divides in
    float16 from 23): a float8 output too may differ (float16 operands of 11 bits, not 4)."""
    return _divided_in(node, context, context.source_opset) != _divided_in(node, context, context.target_opset)


def _divided_in(node: onnx.NodeProto, context: AdapterContext, opset: int) -> int | None:
    """The type the node's QuantizeLinear at ``opset`` divides in (:func:`division_type`), its
    precision read where that version has one."""
    schema = schemas.schema_in_force(node.op_type, opset)
    precision = attribute_of(node, "precision") if schema is not None and "precision" in schema.attributes else 0
    scale_type = _element_type(context, node.input[1]) if len(node.input) > 1 else None
    return division_type(precision or 0, scale_type, schemas.version_in_force(node.op_type, opset))


def _typed_apart(op_type: str, opset: int) -> bool:
    """The op's version at ``opset`` types x and the scale by two type parameters (onnx.defs:
    QuantizeLinear from 23), not by one, nor the scale as float alone."""
    schema = schemas.schema_in_force(op_type, opset)
    x, scale = (schema.inputs[0].type_str, schema.inputs[1].type_str) if schema is not None else ("", "")
    return x != scale and not x.startswith("tensor(") and not scale.startswith("tensor(")


def _needs_arithmetic(node: onnx.NodeProto, context: AdapterContext) -> bool:
    """A node the target's version cannot take as it is, but its formula can: blocks, below 13 a
    scale per slice; a DequantizeLinear on an x type it lacks (int16, uint16); a QuantizeLinear
    of a float16 x or to an int16 or uint16 y, which it lacks."""
    if attribute_of(node, "block_size") and "block_size" in _dropped_at_target(node, context):
        return True
    if node.op_type == "QuantizeLinear":
        scale = context.shape_of(node.input[1])
        x_type = _element_type(context, node.input[0])
        y_type = _quantized_type(node, context)
        return (
            (not _takes_axis(node, context) and scale is not None and scale != [])
            or (x_type == onnx.TensorProto.FLOAT16 and x_type not in _x_types(node, context))
            or (y_type in WHOLE_NUMBERS and y_type not in _y_types(node, context))
            or _divides_otherwise(node, context)
        )
    x_type = _element_type(context, node.input[0])
    if x_type is not None and x_type not in schemas.input_element_types(node.op_type, context.target_opset, 0):
        return x_type in WHOLE_NUMBERS
    scale = context.shape_of(node.input[1])
    return not _takes_axis(node, context) and scale is not None and scale != []


def _takes_axis(node: onnx.NodeProto, context: AdapterContext) -> bool:
    """The target's version takes a scale per slice along ``axis`` (from version 13, onnx.defs)."""
    schema = schemas.schema_in_force(node.op_type, context.target_opset)
    return schema is not None and "axis" in schema.attributes


def _dequantized_by_arithmetic(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``y = Mul(Cast(Sub(Cast(x, int32), Cast(z, int32)), float), s)``, the scale (and zero point)
    lined up with x: as they are when scalars, reshaped to ``[D, 1, ..., 1]`` per axis, gathered
    along the axis block by block (``indices[i] = i // block_size``, x's size there known)."""
    what = "in blocks" if attribute_of(node, "block_size") else "per axis"
    x_type = _element_type(context, node.input[0])
    if x_type is not None and x_type not in schemas.input_element_types(node.op_type, context.target_opset, 0):
        what = f"on {schemas.type_name(x_type)}"
    target_version = schemas.version_in_force(node.op_type, context.target_opset)
    scale_type = _element_type(context, node.input[1])
    output_dtype = attribute_of(node, "output_dtype")
    if scale_type != onnx.TensorProto.FLOAT or output_dtype not in (None, onnx.TensorProto.FLOAT):
        kind = "unknown" if scale_type is None else schemas.type_name(scale_type)
        raise _refused(
            node,
            context,
            f"dequantizes {what}, which DequantizeLinear-{target_version} cannot, and with a {kind} scale, so not "
            "by float32 arithmetic either",
        )
    b = context.builder(node)
    scale, zero = _lined_up(b, node, context, f"dequantizes {what}")
    dequantized(b, node.input[0], scale, zero, outputs=[node.output[0]])
    return b.nodes


def _x_types(node: onnx.NodeProto, context: AdapterContext) -> frozenset[int]:
    return schemas.input_element_types(node.op_type, context.target_opset, 0)


def _y_types(node: onnx.NodeProto, context: AdapterContext) -> frozenset[int]:
    return schemas.output_element_types(node.op_type, context.target_opset)


def _by_arithmetic(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    if node.op_type == "QuantizeLinear":
        return _quantized_by_arithmetic(node, context)
    return _dequantized_by_arithmetic(node, context)


def _quantized_type(node: onnx.NodeProto, context: AdapterContext) -> int | None:
    """QuantizeLinear's y type: ``output_dtype``, else its zero point's type, else uint8; None
    where the zero point's type is unknown."""
    output_dtype = attribute_of(node, "output_dtype")
    if output_dtype:
        return output_dtype
    if len(node.input) > 2 and node.input[2]:
        return _element_type(context, node.input[2])
    return onnx.TensorProto.UINT8


def _lined_up(b: Builder, node: onnx.NodeProto, context: AdapterContext, what: str) -> tuple[str, str]:
    """The node's scale and zero point ("" where none) lined up with x
    (:func:`rules.quantize_linear.lined_up`); refused where the shapes that needs are unknown."""
    axis = attribute_of(node, "axis")
    x_shape = context.shape_of(node.input[0])
    if x_shape is None and context.rank_of(node.input[0]) is not None:
        x_shape = [None] * context.rank_of(node.input[0])
    try:
        line_up = lined_up(
            b, context.shape_of(node.input[1]), x_shape, 1 if axis is None else axis, attribute_of(node, "block_size")
        )
    except ValueError as unknown:
        raise _refused(node, context, f"{what}, and {unknown}") from None
    scale, zero = node.input[1], node.input[2] if len(node.input) > 2 else ""
    if line_up is None:
        return scale, zero
    return line_up(scale).name, line_up(zero).name if zero else ""


def _quantized_by_arithmetic(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``y = Cast(Where(q == q, Clip(Add(Round(q), Cast(z, float)), lo, hi), lo), T)``,
    ``q = Div(Cast(x, float), Cast(s, float))``, ``[lo, hi]`` y's type's range: what
    onnxruntime's QuantizeLinear computes (the quotient in float32, rounded half to even, the
    zero point added, saturated; NaN to y's type's least value). The scale and zero point lined
    up with x as :func:`_dequantized_by_arithmetic` does."""
    what = "quantizes in blocks" if attribute_of(node, "block_size") else "quantizes per axis"
    y_type = _quantized_type(node, context)
    x_type = _element_type(context, node.input[0])
    scale_type = _element_type(context, node.input[1])
    if y_type in WHOLE_NUMBERS and y_type not in _y_types(node, context):
        what = f"quantizes to {schemas.type_name(y_type)}"
    elif x_type not in _x_types(node, context):
        what = f"quantizes {schemas.type_name(x_type) if x_type else 'unknown'} values"
    target_version = schemas.version_in_force(node.op_type, context.target_opset)
    floats = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
    divided_in = _divided_in(node, context, context.source_opset)
    if _divides_otherwise(node, context) and what.startswith("quantizes per axis"):
        what = f"divides in {schemas.type_name(divided_in) if divided_in else 'an unknown type'}"
    if y_type not in WHOLE_NUMBERS or x_type not in floats or scale_type not in floats or divided_in not in floats:
        raise _refused(
            node,
            context,
            f"{what}, which QuantizeLinear-{target_version} cannot, and not to an 8- or 16-bit integer from a float "
            "or float16 x and scale divided in float32 or float16, so not by that arithmetic either",
        )
    if schemas.version_in_force("Round", context.target_opset) is None:
        first = schemas.op_versions("Round")[0]
        raise _refused(
            node, context, f"{what}, and Round, which its formula needs, does not exist before opset {first}"
        )
    b = context.builder(node)
    scale, zero = _lined_up(b, node, context, what)
    quantized(
        b, node.input[0], scale, zero, x_type, y_type, outputs=[node.output[0]], scale_type=scale_type,
        divided_in=divided_in,
    )  # fmt: skip
    return b.nodes


# Cases: backend and explicit cases (today QuantizeLinear 18, DequantizeLinear 14)
@adapter(
    ("QuantizeLinear", "DequantizeLinear"),
    19,
    "down",
    "attributes at defaults or arithmetic",
    versions=(13, 28),
    cases=14,
)
@_x_in_scale_type
def quantize_attributes_at_defaults_dropped(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-19..28(x, s, z), attributes saying what 13 does = QuantizeLinear-13(x, s, z); likewise Dequantize.

    ``saturate`` is dropped (it only says how float8 outputs overflow, and version 13 has none);
    ``block_size`` 0, ``precision`` the scale's own type and DequantizeLinear's ``output_dtype``
    the scale's own type are what version 13 does. QuantizeLinear's ``output_dtype`` is the zero
    point's type, or uint8 without one: without one and another type, a zero point of zeros of
    that type and of the scale's shape says it. Blocked quantization, another precision or
    output type, and types version 13 does not take (float16 or bfloat16 values, float8, int16,
    uint16, 4- and 2-bit integers) cannot be said at 13: refused, naming what. A DequantizeLinear
    in blocks or on int16/uint16 with a float32 scale is its formula instead, ``(x - z) * s`` in
    int32 and float32 arithmetic (the scale and zero point gathered block by block); so is a
    QuantizeLinear in blocks, of float16 values or to int16/uint16 (a float or float16 scale of
    x's type, precision unset or float): ``saturate(Round(x / s) + z)`` in float32."""
    if _needs_arithmetic(node, context):
        return _by_arithmetic(node, context)
    b = context.builder(node)
    b.moved(node, inputs=_target_inputs(b, node, context), dropped=_dropped_at_target(node, context))
    return b.nodes


# Cases: backend cases (today QuantizeLinear 25, DequantizeLinear 25, of blocks and output types)
@adapter(
    ("QuantizeLinear",),
    21,
    "down",
    "attributes at defaults or arithmetic",
    versions=(19, 28),
    cases=1,
)
@_x_in_scale_type
def quantize_attributes_from_21_dropped(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-21..28(x, s, z), attributes saying what 19 does = QuantizeLinear-19(x, s, z).

    The attributes 19 lacks (``block_size``, ``output_dtype``, ``precision``) dropped where they
    say what 19 does, as ``quantize_attributes_at_defaults_dropped`` says, with version 19's
    types and ``saturate`` kept: a node in blocks is its formula, another precision or output type
    refused. A node stating none of them is left as it is (it means the same at 19); from 23, one
    dividing in float16 (precision, or unset a float16 scale) is its formula, the quotient rounded
    to float16, where 19 divides in float32 (not changed_only: every node crossing 23 is met)."""
    return _stated_dropped(node, context)


@adapter(
    ("DequantizeLinear",),
    21,
    "down",
    "attributes at defaults or arithmetic",
    versions=(19, 28),
    cases=1,
    changed_only=True,
)
def dequantize_attributes_from_21_dropped(node: onnx.NodeProto, context: AdapterContext):
    """DequantizeLinear-21..28(x, s, z), attributes saying what 19 does = DequantizeLinear-19(x, s, z).

    As ``quantize_attributes_from_21_dropped``: ``block_size`` and ``output_dtype`` dropped where
    they say what 19 does, a node in blocks its formula. A node stating none of them is left as
    it is (it means the same at 19)."""
    return _stated_dropped(node, context)


# Cases: backend cases (today QuantizeLinear 25, DequantizeLinear 25, of output types and precision)
@adapter(
    ("QuantizeLinear",),
    23,
    "down",
    "attributes at defaults",
    versions=(21, 28),
    cases=1,
)
@_x_in_scale_type
def quantize_attributes_from_23_dropped(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-23..28(x, s, z), divided in float32 = QuantizeLinear-21(x, s, z).

    ``precision`` float, or unset with a float scale, is what 21 does: dropped. Divided in
    float16 (precision, or unset a float16 scale), where 21 divides in float32, it is its
    formula, the quotient rounded to float16; in another type, refused (not changed_only: the
    step changes what an unset precision means, so every node crossing it is met)."""
    return _stated_dropped(node, context)


@adapter(
    ("DequantizeLinear",),
    23,
    "down",
    "attributes at defaults",
    versions=(21, 28),
    cases=1,
    changed_only=True,
)
def dequantize_attributes_from_23_dropped(node: onnx.NodeProto, context: AdapterContext):
    """DequantizeLinear-23..28(x, s, z), output_dtype the scale's type = DequantizeLinear-21(x, s, z).

    ``output_dtype`` at the scale's type is what 21 does: dropped (``block_size`` kept). A node
    stating neither is left as it is (it means the same at 21)."""
    return _stated_dropped(node, context)


# Cases: backend cases at 19 and 21 (float16 scales) going to 23 and up
@adapter(("QuantizeLinear",), 23, "up", "precision stated", versions=(10, 28), cases=1)
def quantize_precision_stated_going_up(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-10..22(x, s, z) = QuantizeLinear-23+(x, s, z, precision=float) of a float16
    or bfloat16 scale (versions before 23 divide in float32, :func:`rules.quantize_linear.division_type`;
    23 divides in the scale's type where precision is unset); of a float scale as it is."""
    scale_type = _element_type(context, node.input[1]) if len(node.input) > 1 else None
    schema = schemas.schema_in_force(node.op_type, context.source_opset)
    if scale_type is None and schema is not None and schema.inputs[1].type_str == "tensor(float)":
        scale_type = onnx.TensorProto.FLOAT  # (versions 10 and 13 take a float scale only)
    elif scale_type is None and schema is not None and schema.inputs[1].type_str == schema.inputs[0].type_str:
        scale_type = _element_type(context, node.input[0])  # (19 to 22: x's type)
    if scale_type is None:
        raise _refused(node, context, "has a scale of unknown type, whose division 23 makes in that type")
    before, after = (division_type(0, scale_type, schemas.version_in_force(node.op_type, opset))
                     for opset in (context.source_opset, context.target_opset))  # fmt: skip
    b = context.builder(node)
    if before == after:
        b.moved(node)
    else:
        b.moved(node, precision=before)
    return b.nodes


def _stated_dropped(node: onnx.NodeProto, context: AdapterContext):
    """The node as ``quantize_attributes_at_defaults_dropped`` takes it to the target's version,
    where it states an attribute that version lacks; else None (left as it is)."""
    dropped = _dropped_at_target(node, context)
    stated = [attribute for attribute in node.attribute if attribute.name in dropped]
    if _needs_arithmetic(node, context):  # (a float16 division from 23, whatever it states)
        return _by_arithmetic(node, context)
    if not stated:
        # (a QuantizeLinear crossing 23 dividing in float32 either way: moved, not left, as the
        # step's change, which affects every one, is met)
        crosses_23 = node.op_type == "QuantizeLinear" and _typed_apart(node.op_type, context.source_opset)
        if not crosses_23 or _typed_apart(node.op_type, context.target_opset):
            return None
        require_types_taken(node, context)
        return [moved(node)]
    schema = schemas.schema_in_force(node.op_type, context.source_opset)
    if schema is None or not all(a == schema.attributes[a.name].default_value for a in stated):
        return quantize_attributes_at_defaults_dropped(node, context)
    require_types_taken(node, context)
    return [moved(node, dropped=dropped)]  # (stated at their defaults: they say what the target does)


# Going up, a version-10 node (scalar scale and zero point) means the same at 13: down only.
known_change(("QuantizeLinear", "DequantizeLinear"), 13, QUANTIZE_13, down_only=True)


# Cases: backend and explicit cases (today QuantizeLinear 12, DequantizeLinear 14); float8, 4- and 2-bit
# types refused (per axis, in blocks and 16-bit integers go as the formulas, (x - z) * s and
# saturate(Round(x / s) + z))
@adapter(
    ("QuantizeLinear", "DequantizeLinear"),
    13,
    "down",
    "scalar scale or arithmetic",
    versions=(10, 28),
    cases=12,
)
@_x_in_scale_type
def per_tensor_scale_kept(node: onnx.NodeProto, context: AdapterContext):
    """QuantizeLinear-13+(x, s, z), s scalar = QuantizeLinear-10(x, s, z); likewise DequantizeLinear.

    ``QuantizeLinear-13(x, s, z)`` with a scalar scale = ``QuantizeLinear-10(x, s, z)`` (``axis``,
    which a scalar scale leaves unused, dropped); likewise DequantizeLinear. A scale of any other
    shape quantizes per slice, which version 10 cannot say: a DequantizeLinear per slice (or in
    blocks, or on int16/uint16) with a float32 scale is its formula, ``(x - z) * s``, the scale
    reshaped to ``[D, 1, ..., 1]``; a QuantizeLinear (from opset 11, which has Round) is its
    formula as onnxruntime computes it, ``saturate(Round(x / s) + z)`` in float32 (NaN to y's
    least value), see ``_quantized_by_arithmetic``. From version 19 the node first goes as
    ``quantize_attributes_at_defaults_dropped`` says."""
    if _needs_arithmetic(node, context):
        return _by_arithmetic(node, context)
    b = context.builder(node)
    inputs, dropped = list(node.input), ("axis",)
    if schemas.version_in_force(node.op_type, context.source_opset) >= 19:
        inputs, dropped = _target_inputs(b, node, context), (*LATER_ATTRIBUTES, "axis")
    scale = context.shape_of(node.input[1]) if len(node.input) > 1 else None
    if scale != []:
        raise NotLowered(
            f"{node.op_type} with a scale of shape {scale} cannot go to opset "
            f"{context.target_opset} ({QUANTIZE_13}); only a scalar scale can"
        )
    b.moved(node, inputs=inputs, dropped=dropped)
    return b.nodes
