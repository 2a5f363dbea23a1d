"""ArgMax and ArgMin across version 12 (select_last_index), down by reversing along the axis."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from lowering import floats, schemas
from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, attribute_of, known_change, moved
from lowering.errors import NotLowered

ARG_12 = "version 12 adds select_last_index, which picks the last of equal extremes"
INT64_MIN = -(2**63)  # an end before every start: Slice with step -1 clamps it to before index 0

known_change(
    ("ArgMax", "ArgMin"),
    12,
    ARG_12,
    down_only=True,
    affects=HeldAttributes.added_at(12, "ArgMax", "ArgMin"),
)


# Cases: backend and explicit cases; select_last_index=1 below 11 refused
@adapter(("ArgMax", "ArgMin"), 12, "down", "reversed axis", versions=(1, 13), cases=14)
def last_index_by_reversed_axis(node: onnx.NodeProto, context: AdapterContext):
    """ArgMax-12(x, axis=a, select_last_index=1) = (n-1) - ArgMax-11(x reversed along a); likewise ArgMin.

    ``select_last_index=0`` = the op at the older version without the attribute. With 1, on
    integers: ``(n - 1) - ArgMax-11(Slice(x, starts=-1, ends=INT64_MIN, axes=a, steps=-1), axis=a)``,
    ``n`` the size of axis ``a`` (static, else ``Gather(Shape(x), a)``): the first of equal maxima
    counted from the end is the last one. On floats NaN compares with nothing, and onnxruntime's
    kernel keeps a NaN that stands first along the axis and never picks one found later; so the
    equal extremes are marked without asking ArgMax about NaN: ``m = ReduceMax(Where(x == x, x,
    -inf), axes=[a])``, ``hit = Equal(x, m)`` (NaN hits nothing; -0 equals +0, as in the
    kernel), the last hit found as above on ``Cast(hit, int32)``, then ``Where(x == x [first along
    a], that, 0)`` (x == x rather than IsNaN, which may be an op to lower). ArgMin likewise with
    ReduceMin and +inf. Computed with keepdims=1, then
    ``Squeeze(axes=[a])`` for keepdims=0. Needs opset 11 (negative axes, Slice steps, Equal on
    floats) and, on floats, the input's element type; below 11, only select_last_index=0 goes."""
    select_last = attribute_of(node, "select_last_index")
    if select_last is None:
        return None
    version = schemas.version_in_force(node.op_type, context.source_opset)
    axis = attribute_of(node, "axis") or 0
    keepdims = attribute_of(node, "keepdims")
    keepdims = 1 if keepdims is None else keepdims
    data = node.input[0]
    if context.target_opset < 11:
        if select_last:
            raise NotLowered(
                f"{node.op_type}-{version} with select_last_index=1 cannot go to opset "
                f"{context.target_opset}: picking the last of equal extremes needs opset 11 here (negative axes, "
                "Slice with a negative step over a whole axis, Equal on floats)"
            )
        if axis < 0:
            rank = context.rank_of(data)
            if rank is None:
                raise NotLowered(
                    f"{node.op_type}-{version} with axis={axis} cannot go to opset "
                    f"{context.target_opset}, which takes no negative axis, without the rank of its input '{data}'"
                )
            axis += rank
        return [moved(node, dropped=("select_last_index",), axis=axis)]
    if not select_last:
        return [moved(node, dropped=("select_last_index",))]

    type_proto = context.inferred_type_of(data)
    element_type = (
        type_proto.tensor_type.elem_type
        if type_proto is not None and type_proto.WhichOneof("value") == "tensor_type"
        else TensorProto.UNDEFINED
    )
    if element_type == TensorProto.UNDEFINED:
        raise NotLowered(
            f"{node.op_type}-{version} with select_last_index=1 cannot go to opset "
            f"{context.target_opset} without the element type of its input '{data}', which is unknown "
            "(NaN is handled apart on floats)"
        )
    b = context.builder(node)

    is_float = floats.is_float(element_type)
    if is_float:
        is_number = b.Equal(data, data)  # false just for NaN (IsNaN may be an op to lower)
        fill = b.scalar(float("-inf") if node.op_type == "ArgMax" else float("inf"), element_type, "nan_fill")
        reduce_op = "ReduceMax" if node.op_type == "ArgMax" else "ReduceMin"
        without_nan = b.Where(is_number, data, fill)
        extreme = b.op(reduce_op, without_nan, axes=[axis], keepdims=1)
        hit = b.Equal(data, extreme)
        searched = b.Cast(hit, to=TensorProto.INT32)
        search_op = "ArgMax"
    else:
        searched, search_op = data, node.op_type

    reversed_ = b.Slice(
        searched, b.ints([-1], "start"), b.ints([INT64_MIN], "end"), b.ints([axis], "axis"), b.ints([-1], "step")
    )
    index_keep = 1 if is_float else keepdims
    from_end = b.op(search_op, reversed_, axis=axis, keepdims=index_keep)
    shape = context.shape_of(data)
    size = None
    if shape is not None and -len(shape) <= axis < len(shape):
        size = shape[axis]
    if isinstance(size, int):
        last = b.scalar(size - 1, TensorProto.INT64, "last_index")
    else:
        size_of_axis = b.Gather(b.Shape(data), b.scalar(axis, TensorProto.INT64, "axis_index"))
        last = b.Sub(size_of_axis, b.scalar(1, TensorProto.INT64, "one"))
    if not is_float:
        b.Sub(last, from_end, outputs=node.output)
        return b.nodes
    index = b.Sub(last, from_end)
    first = b.Slice(is_number, b.ints([0], "first_start"), b.ints([1], "first_end"), b.ints([axis], "first_axis"))
    zero = b.scalar(0, TensorProto.INT64, "zero")
    if keepdims:
        b.Where(first, index, zero, outputs=node.output)
        return b.nodes
    kept = b.Where(first, index, zero)
    b.Squeeze(kept, axes=[axis], outputs=node.output)
    return b.nodes
