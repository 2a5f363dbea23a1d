"""Reshape across version 14 (allowzero), down where allowzero adds nothing, or where what it
adds follows from x's static shape."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.builder import Value
from lowering.conversion.adapters import (
    AdapterContext,
    HeldAttributes,
    adapter,
    attribute_of,
    constant_ints,
    known_change,
    moved,
)
from lowering.conversion.axes_choice import IF_BRANCHES_OF_ANY_RANK as IF_BRANCHES_OF_ANY_SHAPE
from lowering.errors import NotLowered

RESHAPE_14 = "version 14 adds allowzero: with allowzero=1 a 0 in the shape means size 0, not 'copy this dimension'"
known_change(("Reshape",), 14, RESHAPE_14, down_only=True, affects=HeldAttributes.added_at(14, "Reshape"))


# Cases: the backend's Reshape cases, and the same with allowzero=0 stated
@adapter(("Reshape",), 14, "down", "allowzero dropped", versions=(5, 25), changed_only=True, cases=19)
def allowzero_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Reshape-14(x, s, allowzero=0, or 1 where s holds no 0 but x's own) = Reshape-5/13(x, s); x empty: Expand(0, s).

    ``Reshape-14(x, s, allowzero=0)`` = ``Reshape-5/13(x, s)``: a 0 in ``s`` copies that dimension
    in both. ``allowzero=1`` means the same where ``s`` is a constant holding no 0, and where x's
    shape is static without a 0: x then holds elements, so a 0 in ``s`` (size 0, no elements)
    would be an error, and a valid ``s`` holds none. It means the same too where the result's
    shape is known and each of its dimensions ``k`` is a positive size or the one x has at ``k``
    (the same size, or the same symbol: a ``dim_param`` names one size wherever it stands, as
    dynamic exports state their shapes): a 0 at ``s[k]``, which allowzero=1 keeps as size 0,
    is then x's own size there, which the older versions copy. Where x's shape has a static 0,
    the result holds no element: ``Expand(0 of x's type, Where(Less(s, 0), 0, s))`` has shape
    ``s``, its -1 (the one dimension inferred) being 0. Where ``s`` is computed at run time, from
    opset 11 (If's branches of any shape): an If on whether ``s`` holds a 0, the empty result
    or the older Reshape (:func:`_either_empty_or_reshaped`). Otherwise the older versions cannot
    say it: refused. A node without allowzero is left as it is (it means the same at every version)."""
    allowzero = attribute_of(node, "allowzero")
    if allowzero is None:
        return None
    if not allowzero:
        return [moved(node, dropped=("allowzero",))]
    shape = constant_ints(node, context)
    if shape is not None and 0 not in shape:
        return [moved(node, dropped=("allowzero",))]
    x_shape = context.shape_of(node.input[0])
    if x_shape is not None and 0 in x_shape:
        return _empty_of_shape(node, context)
    if x_shape is not None and all(isinstance(d, int) and d > 0 for d in x_shape) and shape is None:
        return [moved(node, dropped=("allowzero",))]
    if x_shape is not None and _zeros_are_x_own(x_shape, context.shape_of(node.output[0])):
        return [moved(node, dropped=("allowzero",))]
    if shape is None and context.target_opset >= IF_BRANCHES_OF_ANY_SHAPE:
        return _either_empty_or_reshaped(node, context)
    version = schemas.version_in_force("Reshape", context.source_opset)
    why = "a shape that holds a 0" if shape is not None else "a shape computed at run time"
    raise NotLowered(
        f"Reshape-{version} with allowzero=1 and {why} cannot go to opset {context.target_opset} "
        "unless its input's shape is static, or the result's shape is known with each dimension a positive size "
        f"or the input's own at that position ({RESHAPE_14}; a shape computed at run time goes from opset "
        f"{IF_BRANCHES_OF_ANY_SHAPE}, by an If)"
    )


def _either_empty_or_reshaped(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """s computed at run time: If(ReduceSum(Cast(Equal(s, 0))) > 0, Expand(0, Where(s < 0, 0, s)),
    Reshape-5/13(x, s)): a 0 in s, which allowzero=1 keeps as size 0, leaves no element in the
    result (nor in x), whose shape is then s; with no 0 in s the older versions mean the same."""
    element_type = _element_type(node, context)
    b = context.builder(node)
    shape = node.input[1]
    zeros = b.Cast(b.Equal(shape, b.scalar(0, onnx.TensorProto.INT64, "zero")), to=onnx.TensorProto.INT64)
    holds_zero = b.Greater(b.ReduceSum(zeros, keepdims=0), b.scalar(0, onnx.TensorProto.INT64, "none"))

    def empty(branch) -> Value:  # x must hold no element, or the op fails: so does Expand to -1s
        return _empty_of_shape_in(branch, element_type, shape, failing_unless_empty=node.input[0])

    def reshaped(branch) -> Value:
        result = branch.moved(node, outputs=[branch.fresh("reshaped")], dropped=("allowzero",))
        return Value(result.output[0], element_type)

    b.If(holds_zero, empty, reshaped, outputs=[node.output[0]])
    return b.nodes


def _zeros_are_x_own(x_shape: list, result_shape: list | None) -> bool:
    """Whether each dimension ``k`` of the result is a positive size, or x's own dimension ``k``
    (an equal size or the same symbol): then only where x's size at ``k`` is 0 can ``s[k]`` be 0."""
    if result_shape is None:
        return False
    for k, size in enumerate(result_shape):
        if isinstance(size, int) and size > 0:
            continue
        if size is None or k >= len(x_shape) or x_shape[k] != size:
            return False
    return True


def _element_type(node: onnx.NodeProto, context: AdapterContext) -> int:
    """x's element type; NotLowered where it is unknown (the empty result is made in it)."""
    type_proto = context.inferred_type_of(node.input[0])
    element_type = type_proto.tensor_type.elem_type if type_proto is not None else 0
    if not element_type:
        version = schemas.version_in_force("Reshape", context.source_opset)
        raise NotLowered(
            f"Reshape-{version} with allowzero=1 of an input of unknown type cannot go to opset "
            f"{context.target_opset} ({RESHAPE_14})"
        )
    return element_type


def _empty_of_shape(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """x holds no element: the result is a zero of x's type expanded to ``s`` (-1 taken as 0)."""
    b = context.builder(node)
    _empty_of_shape_in(b, _element_type(node, context), node.input[1], outputs=[node.output[0]])
    return b.nodes


def _empty_of_shape_in(b, element_type: int, shape: str, outputs=None, failing_unless_empty: str = "") -> Value:
    """Expand(0 of ``element_type``, Where(Less(s, 0), 0, s)): of shape ``s``, -1 taken as 0.
    ``failing_unless_empty``: x, where it may hold elements (then the op fails: s's 0 makes a
    result of none) or s may hold a -1 beside its 0 (which allowzero=1 makes invalid): the sizes
    are then -1, which Expand fails on as well."""
    if element_type == onnx.TensorProto.STRING:
        zero = b.tensor(np.array(b"", dtype=object), "zero")
    else:
        zero = b.tensor(np.zeros((), floats.numpy_dtype(element_type)), "zero")
    none = b.scalar(0, onnx.TensorProto.INT64, "none")
    sizes = b.Where(b.Less(shape, none), none, shape)
    if failing_unless_empty:
        empty = b.Equal(b.Size(failing_unless_empty), none)
        stated = b.Not(b.Less(b.ReduceMin(shape, keepdims=0), none))  # no -1 beside the 0
        sizes = b.Where(b.And(empty, stated), sizes, b.scalar(-1, onnx.TensorProto.INT64, "failing"))
    return b.Expand(zero, sizes, outputs=outputs)
