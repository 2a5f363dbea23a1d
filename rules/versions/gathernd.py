"""GatherND across version 12 (batch_dims), down by spelling the batch indices out."""

from __future__ import annotations

import onnx
from onnx import TensorProto

from lowering import schemas
from lowering.adapters import AdapterContext, HeldAttributes, NodeWriter, adapter, attribute_of, known_change, moved
from lowering.errors import NotLowered

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
    w = NodeWriter(node, context)
    indices_shape = w.add("Shape", [indices], "indices_shape")
    outer = w.add("Slice", [indices_shape, w.int64s("outer_start", [0]), w.int64s("outer_end", [rank - 1])], "outer")
    coordinate_shape = w.add("Concat", [outer, w.int64s("one", [1])], "coordinate_shape", axis=0)
    start, step = w.scalar("range_start", 0, TensorProto.INT64), w.scalar("range_step", 1, TensorProto.INT64)
    coordinates = []
    for j in range(batch_dims):
        size = w.add(
            "Gather", [indices_shape, w.scalar(f"batch_axis_{j}", j, TensorProto.INT64)], f"batch_size_{j}", axis=0
        )
        positions = w.add("Range", [start, size, step], f"batch_positions_{j}")
        lined_up = w.add(
            "Unsqueeze", [positions], f"batch_positions_{j}_lined_up", axes=[k for k in range(rank) if k != j]
        )
        coordinates.append(w.add("Expand", [lined_up, coordinate_shape], f"batch_index_{j}"))
    full = w.add("Concat", [*coordinates, indices], "full_indices", axis=-1)
    result = moved(node, dropped=("batch_dims",))
    result.input[1] = full
    return [*w.nodes, result]
