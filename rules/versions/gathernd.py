"""GatherND across version 12 (batch_dims), down by spelling the batch indices out."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, attribute_of, known_change, moved
from lowering.errors import NotLowered
from lowering.registry import Builder, Value

GATHER_ND_12 = "version 12 adds batch_dims, the leading dimensions data and indices share"

known_change(
    ("GatherND",),
    12,
    GATHER_ND_12,
    down_only=True,
    affects=HeldAttributes.added_at(12, "GatherND"),
)


# Cases: the explicit cases: the backend has one with batch_dims
@adapter(("GatherND",), 12, "down", "batch indices spelled out", versions=(11, 13), cases=5)
def batch_indices_spelled_out(node: onnx.NodeProto, context: AdapterContext):
    """GatherND-12(data, indices, batch_dims=b) = GatherND-11(data, Concat(i_0, ..., i_{b-1}, indices, axis=-1)).

    ``i_j`` holds, at every place of ``indices`` but the last axis, that place's index along
    axis ``j`` (``Range(0, shape(indices)[j])`` unsqueezed to rank ``q`` and expanded to
    ``shape(indices)[:-1] + [1]``): each index tuple gets its batch position in front, and
    GatherND-11 then reads ``data[i_0, ..., i_{b-1}, indices[...]]``, the same elements in the
    same output shape ``shape(indices)[:-1] + shape(data)[b + k:]``. ``batch_dims=0`` = GatherND-11
    without the attribute. Needs the rank ``q`` of ``indices``."""
    batch_dims = attribute_of(node, "batch_dims")
    if batch_dims is None:
        return None
    if batch_dims == 0:
        return [moved(node, dropped=("batch_dims",))]
    version = schemas.version_in_force(node.op_type, context.source_opset)
    indices = node.input[1]
    rank = context.rank_of(indices)
    if rank is None:
        raise NotLowered(
            f"{node.op_type}-{version} with batch_dims={batch_dims} cannot go to opset "
            f"{context.target_opset} without the rank of its indices '{indices}', which is unknown"
        )
    if not 0 < batch_dims < rank:
        raise NotLowered(
            f"{node.op_type}-{version} has batch_dims={batch_dims}, which its indices of rank {rank} do not allow"
        )
    b = context.builder(node)
    full = batch_coordinates(b, Value(indices, TensorProto.INT64), batch_dims, rank)
    b.moved(node, inputs=[node.input[0], full.name, *node.input[2:]], dropped=("batch_dims",))
    return b.nodes


def batch_coordinates(b: Builder, indices: Value, batch_dims: int, rank: int) -> Value:
    """Concat(i_0, ..., i_{b-1}, indices, axis=-1): each index tuple of ``indices`` (rank ``rank``)
    with its position along the first ``batch_dims`` axes in front; ``i_j`` is
    ``Range(0, shape(indices)[j])`` unsqueezed to rank ``rank`` and expanded to
    ``shape(indices)[:-1] + [1]``."""
    indices_shape = b.Shape(indices)
    outer = b.Slice(indices_shape, b.ints([0], "outer_start"), b.ints([rank - 1], "outer_end"))
    coordinate_shape = b.Concat(outer, b.ints([1], "one"), axis=0)
    start, step = b.scalar(0, TensorProto.INT64, "range_start"), b.scalar(1, TensorProto.INT64, "range_step")
    coordinates = []
    for j in range(batch_dims):
        size = b.Gather(indices_shape, b.scalar(j, TensorProto.INT64, f"batch_axis_{j}"), axis=0)
        positions = b.Range(start, size, step)
        lined_up = b.over_axes("Unsqueeze", positions, [k for k in range(rank) if k != j])
        coordinates.append(b.Expand(lined_up, coordinate_shape))
    return b.Concat(*coordinates, indices, axis=-1)
