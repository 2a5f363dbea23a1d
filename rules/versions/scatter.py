"""ScatterND and ScatterElements going down across versions 16 (reduction add, mul) and 18
(reduction max, min): kept where the target's version has the node's reduction; add and mul
below 16 as a Loop over the updates; max and min below 18 refused."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from lowering import schemas
from lowering.builder import Builder, Value
from lowering.conversion.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    attribute_of,
    known_change,
    moved,
    require_types_taken,
    text_attribute,
)
from lowering.errors import NotLowered

SCATTER = ("ScatterElements", "ScatterND")
SCATTER_16 = "version 16 adds reduction: add and mul combine every update with what is at its index, in order"
SCATTER_18 = "version 18 adds the reductions max and min"
known_change(SCATTER, 16, SCATTER_16, down_only=True, affects=attribute_in("reduction", frozenset({"add", "mul"})))
known_change(SCATTER, 18, SCATTER_18, down_only=True, affects=attribute_in("reduction", frozenset({"max", "min"})))


def _reduction(node: onnx.NodeProto, context: AdapterContext) -> str:
    return text_attribute(node, "reduction", context.source_opset)


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    version = schemas.version_in_force(node.op_type, context.source_opset)
    return NotLowered(
        f"{node.op_type}-{version} with reduction '{_reduction(node, context)}' cannot go to opset "
        f"{context.target_opset}: {why}"
    )


def _max_min_refused(node: onnx.NodeProto, context: AdapterContext) -> NotLowered:
    reduction, target = _reduction(node, context), schemas.version_in_force(node.op_type, context.target_opset)
    return _refused(
        node,
        context,
        f"{node.op_type}-{target} has no {reduction} reduction (from version 18), and the spec leaves the outcome "
        f"of {reduction} for NaN and signed zeros to the runtime, so no op there says it exactly ({SCATTER_18})",
    )


def _within_bounds(b: Builder, index: Value, dims: Value) -> Value:
    """``index`` with ``dims`` added where it is negative (counted from the end)."""
    zero = b.scalar(0, TensorProto.INT64, "zero")
    return b.Where(b.Less(index, zero), b.Add(index, dims), index)


def _one_update_at_a_time(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``node`` (reduction add or mul) as a Loop over its updates in index order, each one
    combined with what is at its index and written there by ScatterND (no reduction)."""
    reduction = _reduction(node, context)
    combine = {"add": "Add", "mul": "Mul"}[reduction]
    data, indices, updates = node.input[:3]
    data_type = context.inferred_type_of(data)
    element_type = data_type.tensor_type.elem_type if data_type is not None else 0
    if not element_type or not schemas.accepts(combine, context.target_opset, element_type):
        what = "of unknown type" if not element_type else f"of type {schemas.type_name(element_type)}"
        raise _refused(
            node, context, f"its data is {what}, which {combine} at opset {context.target_opset} does not take"
        )
    b = context.builder(node)
    int64 = TensorProto.INT64
    data_shape = b.Shape(data)
    last = b.ints([-1], "last")
    end = b.ints([2**63 - 1], "end")
    if node.op_type == "ScatterND":
        depth = b.Slice(b.Shape(indices), last, end)  # [k]
        rows = b.Reshape(indices, b.Concat(last, depth, axis=0))  # [n, k]
        indexed = b.Slice(data_shape, b.ints([0], "first"), depth)
        rows = _within_bounds(b, rows, indexed)
        update_shape = b.Concat(last, b.Slice(data_shape, depth, end), axis=0)
        row_updates = b.Reshape(updates, update_shape)
    else:  # ScatterElements: the full index of each update, its own position with indices along axis
        rank = context.rank_of(updates) or context.rank_of(indices)
        if rank is None:
            raise _refused(node, context, "the rank of its updates is unknown")
        axis = attribute_of(node, "axis") or 0
        axis = axis + rank if axis < 0 else axis
        update_shape = b.Shape(updates)
        positions = []
        for d in range(rank):
            if d == axis:
                along = b.Cast(indices, to=int64)
                dims = b.Gather(data_shape, b.scalar(d, int64, f"axis_{d}"))
                along = _within_bounds(b, along, dims)
            else:
                count = b.Gather(update_shape, b.scalar(d, int64, f"axis_{d}"))
                start, step = b.scalar(0, int64, "start"), b.scalar(1, int64, "step")
                line_shape = [-1 if k == d else 1 for k in range(rank)]
                line = b.Reshape(b.Range(start, count, step), b.ints(line_shape, f"line_shape_{d}"))
                along = b.Expand(line, update_shape)
            positions.append(b.Reshape(along, b.ints([-1, 1], f"column_shape_{d}")))
        rows = b.Concat(*positions, axis=1)  # [n, rank]
        row_updates = b.Reshape(updates, last)  # [n]
    count = b.Gather(b.Shape(rows), b.scalar(0, int64, "row_axis"))
    one = b.ints([1], "one")
    # the body: output = ScatterND(output, rows[i:i+1], combine(GatherND(output, rows[i:i+1]), updates[i:i+1]))
    body = b.nested("step")
    i, keep, before = body.fresh("i"), body.fresh("cond"), body.fresh("so_far")
    position = body.Reshape(i, one)
    at = body.Gather(rows, position, axis=0)
    update = body.Gather(row_updates, position, axis=0)
    combined = body.op(combine, body.GatherND(before, at), update)
    after = body.ScatterND(before, at, combined)
    kept = body.Identity(keep)
    graph = helper.make_graph(
        body.nodes,
        b.fresh("one_update"),
        [
            helper.make_tensor_value_info(i, int64, []),
            helper.make_tensor_value_info(keep, TensorProto.BOOL, []),
            helper.make_tensor_value_info(before, element_type, None),
        ],
        [
            helper.make_tensor_value_info(kept.name, TensorProto.BOOL, []),
            helper.make_tensor_value_info(after.name, element_type, None),
        ],
    )
    b.Loop(count, "", data, body=graph, outputs=[node.output[0]])
    return b.nodes


# Cases: today ScatterND 6, ScatterElements 10 (add and mul as a Loop); max and min refused
@adapter(SCATTER, 16, "down", "no reduction, or one update at a time", versions=(11, 18), cases=6)
def scatter_without_reduction(node: onnx.NodeProto, context: AdapterContext):
    """op-16/18(d, i, u) = op-11/13(d, i, u), no reduction; add, mul: Loop over j of ScatterND(o, i_j, o[i_j] ∘ u_j).

    With ``reduction`` none (the default) every update is written to its index, as in
    versions 11 and 13 (which take no duplicate indices either). ``add`` and ``mul`` combine
    each update with what is at its index, one after another in index order (the spec's loop,
    and onnxruntime's): a Loop over the updates in that order does the same float operations in
    the same order, each update at ``o[i_j]`` (``GatherND``) combined by Add or Mul and written
    back by ScatterND, so it is exact (one iteration per update: slow for many). ScatterElements'
    updates get their full index first (their own position, indices along ``axis``), negative
    indices counted from the end. ``max``/``min`` (from 18) are refused."""
    reduction = _reduction(node, context)
    if reduction in ("max", "min"):
        raise _max_min_refused(node, context)
    if reduction != "none":
        return _one_update_at_a_time(node, context)
    require_types_taken(node, context)
    return [moved(node, dropped=("reduction",))]


# Cases: today ScatterND 6, ScatterElements 10; max and min refused
@adapter(SCATTER, 18, "down", "reduction kept", versions=(16, 18), cases=6)
def scatter_reduction_kept(node: onnx.NodeProto, context: AdapterContext):
    """op-18(data, indices, updates, reduction=r) = op-16(data, indices, updates, reduction=r), r none, add or mul.

    Version 16 has the reductions none, add and mul, meaning what they mean at 18. ``max`` and
    ``min`` have no exact expression at 16 (a max over the updates of duplicate indices whose
    NaN and signed-zero outcomes the spec leaves to the runtime): refused."""
    reduction = _reduction(node, context)
    if reduction in ("max", "min"):
        raise _max_min_refused(node, context)
    require_types_taken(node, context)
    return [moved(node)]
