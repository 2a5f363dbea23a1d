"""Softmax, LogSoftmax and Hardmax across version 13: one axis against the 2-D coercion."""

from __future__ import annotations

import onnx

from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, moved
from lowering.errors import NotLowered


def _axis(node: onnx.NodeProto, default: int) -> int:
    value = attribute_of(node, "axis")
    return default if value is None else value


SOFTMAX_FAMILY = ("Softmax", "LogSoftmax", "Hardmax")
SOFTMAX_13 = (
    "version 13 normalizes along `axis` alone; versions 1-12 coerce the input to 2-D at `axis` and normalize each row"
)


@adapter(SOFTMAX_FAMILY, 13, "down", "Transpose", versions=(1, 13), reason=SOFTMAX_13, cases=14)
def one_axis_to_coerced_2d(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """op-13(x, axis=a) = Transpose(op-1..12(Transpose(x, perm), axis=r-1), perm), perm swapping a and r-1.

    ``op-13(x, axis=a)`` = ``op-1..12(x, axis=r-1)`` where ``a`` is the last axis (``r = rank(x)``),
    else ``Transpose(op-1..12(Transpose(x, perm), axis=r-1), perm)`` with ``perm`` swapping ``a``
    and ``r-1`` (its own inverse): coerced to 2-D at the last axis, each row is one line along
    ``a``. Needs the rank of ``x``, except for ``axis=-1`` at a target of 11 or 12, which take a
    negative axis: there the node moves as it is, whatever the rank."""
    axis = _axis(node, -1)
    if axis == -1 and context.target_opset >= 11:
        return [moved(node, axis=-1)]
    rank = context.rank_of(node.input[0])
    if rank is None:
        raise NotLowered(
            f"{node.op_type}-13 with axis={axis} cannot go to opset {context.target_opset} "
            f"without the rank of its input '{node.input[0]}', which is unknown ({SOFTMAX_13})"
        )
    last = rank - 1
    axis = axis + rank if axis < 0 else axis
    if axis == last:
        return [moved(node, axis=last)]
    perm = list(range(rank))
    perm[axis], perm[last] = last, axis
    b = context.builder(node)
    x_last = b.Transpose(node.input[0], perm=perm)
    y_last = b.moved(node, inputs=[x_last.name], outputs=[b.fresh(f"axis_last_{node.op_type}")], axis=last)
    b.Transpose(y_last.output[0], perm=perm, outputs=node.output)
    return b.nodes


@adapter(SOFTMAX_FAMILY, 13, "up", "Flatten and Reshape", versions=(1, 13), cases=14)
def coerced_2d_to_one_axis(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """op-1..12(x, axis=a) = Reshape(op-13(Flatten(x, axis=a), axis=1), Shape(x)).

    ``op-1..12(x, axis=a)`` = ``Reshape(op-13(Flatten(x, axis=a), axis=1), Shape(x))``: the 2-D
    coercion made explicit, each row normalized along axis 1 (the last of 2); where ``a`` is the
    last axis of ``x`` (``-1``, or ``r-1`` with ``r = rank(x)`` known), ``op-13(x, axis=a)`` alone."""
    axis = _axis(node, 1)
    rank = context.rank_of(node.input[0])
    if axis == -1 or (rank is not None and axis == rank - 1):
        return [moved(node, axis=axis)]
    b = context.builder(node)
    x_2d = b.Flatten(node.input[0], axis=axis)
    y_2d = b.moved(node, inputs=[x_2d.name], outputs=[b.fresh(f"2d_{node.op_type}")], axis=1)
    b.Reshape(y_2d.output[0], b.Shape(node.input[0]), outputs=node.output)
    return b.nodes
