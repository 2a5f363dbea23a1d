"""ScatterND and ScatterElements going down across versions 16 (reduction add, mul) and 18
(reduction max, min): kept where the target's version has the node's reduction; add and mul
below 16 as a Loop over the updates; max and min below 18 refused."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from lowering import schemas
from lowering.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    attribute_of,
    known_change,
    moved,
    require_types_taken,
    text_attribute,
)
from lowering.errors import LoweringError

SCATTER = ("ScatterElements", "ScatterND")
SCATTER_16 = "version 16 adds reduction: add and mul combine every update with what is at its index, in order"
SCATTER_18 = "version 18 adds the reductions max and min"
known_change(SCATTER, 16, SCATTER_16, down_only=True, affects=attribute_in("reduction", frozenset({"add", "mul"})))
known_change(SCATTER, 18, SCATTER_18, down_only=True, affects=attribute_in("reduction", frozenset({"max", "min"})))


def _reduction(node: onnx.NodeProto, context: AdapterContext) -> str:
    return text_attribute(node, "reduction", context.source_opset)


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> LoweringError:
    version = schemas.version_in_force(node.op_type, context.source_opset)
    return LoweringError(
        f"{context.location}: {node.op_type}-{version} with reduction '{_reduction(node, context)}' cannot go to opset "
        f"{context.target_opset}: {why}"
    )


def _max_min_refused(node: onnx.NodeProto, context: AdapterContext) -> LoweringError:
    reduction, target = _reduction(node, context), schemas.version_in_force(node.op_type, context.target_opset)
    return _refused(
        node,
        context,
        f"{node.op_type}-{target} has no {reduction} reduction (from version 18), and the spec leaves the outcome "
        f"of {reduction} for NaN and signed zeros to the runtime, so no op there says it exactly ({SCATTER_18})",
    )


class _Emitter:
    """Nodes made one at a time, each output a fresh name."""

    def __init__(self, context: AdapterContext, hint: str) -> None:
        self.context, self.hint, self.nodes = context, hint, []

    def __call__(self, op_type: str, *inputs: str, **attributes) -> str:
        output = self.context.fresh(f"{self.hint}_{op_type}")
        name = self.context.fresh(f"{output}_node")
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], name=name, **attributes))
        return output

    def ints(self, values: list[int], scalar: bool = False) -> str:
        output = self.context.fresh(f"{self.hint}_ints")
        value = helper.make_tensor(output, TensorProto.INT64, [] if scalar else [len(values)], values)
        self.nodes.append(helper.make_node("Constant", [], [output], name=f"{output}_constant", value=value))
        return output


def _within_bounds(emit: _Emitter, index: str, dims: str) -> str:
    """``index`` with ``dims`` added where it is negative (counted from the end)."""
    zero = emit.ints([0], scalar=True)
    return emit("Where", emit("Less", index, zero), emit("Add", index, dims), index)


def _one_update_at_a_time(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``node`` (reduction add or mul) as a Loop over its updates in index order, each one
    combined with what is at its index and written there by ScatterND (no reduction)."""
    reduction = _reduction(node, context)
    combine = {"add": "Add", "mul": "Mul"}[reduction]
    data, indices, updates = node.input[:3]
    data_type = context.type_of(data)
    element_type = data_type.tensor_type.elem_type if data_type is not None else 0
    if not element_type or not schemas.accepts(combine, context.target_opset, element_type):
        what = "of unknown type" if not element_type else f"of type {schemas.type_name(element_type)}"
        raise _refused(
            node, context, f"its data is {what}, which {combine} at opset {context.target_opset} does not take"
        )
    emit = _Emitter(context, node.name or node.output[0])
    data_shape = emit("Shape", data)
    last = emit.ints([-1])
    end = emit.ints([2**63 - 1])
    if node.op_type == "ScatterND":
        index_shape = emit("Shape", indices)
        depth = emit("Slice", index_shape, last, end)  # [k]
        rows = emit("Reshape", indices, emit("Concat", last, depth, axis=0))  # [n, k]
        rows = _within_bounds(emit, rows, emit("Slice", data_shape, emit.ints([0]), depth))
        row_updates = emit("Reshape", updates, emit("Concat", last, emit("Slice", data_shape, depth, end), axis=0))
    else:  # ScatterElements: the full index of each update, its own position with indices along axis
        rank = context.rank_of(updates) or context.rank_of(indices)
        if rank is None:
            raise _refused(node, context, "the rank of its updates is unknown")
        axis = attribute_of(node, "axis") or 0
        axis = axis + rank if axis < 0 else axis
        update_shape = emit("Shape", updates)
        positions = []
        for d in range(rank):
            if d == axis:
                along = emit("Cast", indices, to=TensorProto.INT64)
                along = _within_bounds(emit, along, emit("Gather", data_shape, emit.ints([d], scalar=True)))
            else:
                count = emit("Gather", update_shape, emit.ints([d], scalar=True))
                steps = emit("Range", emit.ints([0], scalar=True), count, emit.ints([1], scalar=True))
                line = emit("Reshape", steps, emit.ints([-1 if k == d else 1 for k in range(rank)]))
                along = emit("Expand", line, update_shape)
            positions.append(emit("Reshape", along, emit.ints([-1, 1])))
        rows = emit("Concat", *positions, axis=1)  # [n, rank]
        row_updates = emit("Reshape", updates, last)  # [n]
    count = emit("Gather", emit("Shape", rows), emit.ints([0], scalar=True))
    one = emit.ints([1])
    # the body: output = ScatterND(output, rows[i:i+1], combine(GatherND(output, rows[i:i+1]), updates[i:i+1]))
    hint = node.name or node.output[0]
    step, keep, before = (context.fresh(f"{hint}_{part}") for part in ("step", "cond", "so_far"))
    body = _Emitter(context, f"{hint}_step")
    position = body("Reshape", step, one)
    at = body("Gather", rows, position, axis=0)
    update = body("Gather", row_updates, position, axis=0)
    after = body("ScatterND", before, at, body(combine, body("GatherND", before, at), update))
    kept = body("Identity", keep)
    graph = helper.make_graph(
        body.nodes,
        context.fresh(f"{hint}_one_update"),
        [
            helper.make_tensor_value_info(step, TensorProto.INT64, []),
            helper.make_tensor_value_info(keep, TensorProto.BOOL, []),
            helper.make_tensor_value_info(before, element_type, None),
        ],
        [
            helper.make_tensor_value_info(kept, TensorProto.BOOL, []),
            helper.make_tensor_value_info(after, element_type, None),
        ],
    )
    loop = helper.make_node("Loop", [count, "", data], [node.output[0]], name=context.fresh(f"{hint}_Loop"), body=graph)
    return [*emit.nodes, loop]


@adapter(SCATTER, 16, "down", "no reduction, or one update at a time", versions=(11, 18))
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


@adapter(SCATTER, 18, "down", "reduction kept", versions=(16, 18))
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
