"""ArgMax and ArgMin across version 12 (select_last_index), down by reversing along the axis."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from lowering import floats, schemas
from lowering.adapters import AdapterContext, HeldAttributes, NodeWriter, adapter, attribute_of, known_change, moved
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

    type_proto = context.type_of(data)
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
    w = NodeWriter(node, context)

    is_float = floats.is_float(element_type)
    if is_float:
        is_number = w.add("Equal", [data, data], "is_number")  # false just for NaN (IsNaN may be an op to lower)
        fill = w.scalar("nan_fill", float("-inf") if node.op_type == "ArgMax" else float("inf"), element_type)
        without_nan = w.add("Where", [is_number, data, fill], "without_nan")
        reduce_op = "ReduceMax" if node.op_type == "ArgMax" else "ReduceMin"
        extreme = w.add(reduce_op, [without_nan], "extreme", axes=[axis], keepdims=1)
        hit = w.add("Equal", [data, extreme], "hit")
        searched = w.add("Cast", [hit], "hit_int32", to=TensorProto.INT32)
        search_op = "ArgMax"
    else:
        searched, search_op = data, node.op_type

    reversed_ = w.add(
        "Slice", [searched, w.int64s("start", [-1]), w.int64s("end", [INT64_MIN]), w.int64s("axis", [axis]),
                  w.int64s("step", [-1])], "reversed"
    )  # fmt: skip
    index_keep = 1 if is_float else keepdims
    from_end = w.add(search_op, [reversed_], "index_from_end", axis=axis, keepdims=index_keep)
    shape = context.shape_of(data)
    size = None
    if shape is not None and -len(shape) <= axis < len(shape):
        size = shape[axis]
    if isinstance(size, int):
        last = w.scalar("last_index", size - 1, TensorProto.INT64)
    else:
        size_name = w.add(
            "Gather", [w.add("Shape", [data], "shape"), w.scalar("axis_index", axis, TensorProto.INT64)], "size"
        )
        last = w.add("Sub", [size_name, w.scalar("one", 1, TensorProto.INT64)], "last_index")
    if not is_float:
        return w.last("Sub", [last, from_end], node.output)
    index = w.add("Sub", [last, from_end], "index")
    first = w.add(
        "Slice",
        [is_number, w.int64s("first_start", [0]), w.int64s("first_end", [1]), w.int64s("first_axis", [axis])],
        "first_is_number",
    )
    zero = w.scalar("zero", 0, TensorProto.INT64)
    if keepdims:
        return w.last("Where", [first, index, zero], node.output)
    kept = w.add("Where", [first, index, zero], "index_kept")
    return w.last("Squeeze", [kept], node.output, axes=[axis])
