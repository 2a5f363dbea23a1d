"""ScatterND and ScatterElements going down across versions 16 (reduction add, mul) and 18
(reduction max, min): kept where the target's version has the node's reduction, else one update at
a time (rules/scatter_reduction.py)."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.builder import Value
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

from ..scatter_reduction import scattered

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


def _one_update_at_a_time(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``node`` (a reduction) one update at a time in index order, each combined with what is at
    its index and written there by ScatterND (no reduction): the ScatterND and ScatterElements
    rule's steps (rules/scatter_reduction.py)."""
    reduction = _reduction(node, context)
    combine = {"add": "Add", "mul": "Mul"}.get(reduction, "Less")
    data, indices, updates = node.input[:3]
    data_type = context.inferred_type_of(data)
    element_type = data_type.tensor_type.elem_type if data_type is not None else 0
    if not element_type or not schemas.accepts(combine, context.target_opset, element_type):
        what = "of unknown type" if not element_type else f"of type {schemas.type_name(element_type)}"
        raise _refused(
            node, context, f"its data is {what}, which {combine} at opset {context.target_opset} does not take"
        )
    b = context.builder(node)
    axis = attribute_of(node, "axis") or 0
    shapes = (_shape_of(context, data), _shape_of(context, indices), _shape_of(context, updates))
    try:
        result = scattered(
            b, node.op_type, Value(data, element_type), Value(indices, None), Value(updates, None), reduction, axis,
            shapes,
        )  # fmt: skip
    except NotLowered as refused:
        raise _refused(node, context, refused.reason) from None
    b.Identity(result, outputs=[node.output[0]])
    return b.nodes


def _shape_of(context: AdapterContext, name: str) -> list[int | None] | None:
    """``name``'s dimensions as inference gives them (None where unknown), None where its rank is."""
    inferred = context.inferred_type_of(name)
    if inferred is None or not inferred.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in inferred.tensor_type.shape.dim]


# Cases: today ScatterND 2 (its reduction cases, their indices constant, go by the rule where
# the conversion lowers them: rules/scatter_reduction.py), ScatterElements 10
@adapter(
    SCATTER, 16, "down", "no reduction, or one update at a time", versions=(11, 18),
    cases={"ScatterND": 2, "ScatterElements": 6},
)  # fmt: skip
def scatter_without_reduction(node: onnx.NodeProto, context: AdapterContext):
    """op-16/18(d, i, u) = op-11/13(d, i, u), no reduction; else for each j in order, o[i_j] = o[i_j] ∘ u_j.

    With ``reduction`` none (the default) every update is written to its index, as in
    versions 11 and 13 (which take no duplicate indices either). ``add``, ``mul`` (and from 18
    ``max``, ``min``) combine each update with what is at its index, one after another in index
    order (the spec's loop, and onnxruntime's): the ScatterND and ScatterElements rule's steps
    (rules/scatter_reduction.py: a chain of steps, or a Loop for many or uncounted updates) do
    the same operations in the same order, each row of data's flat view at ``i_j`` read by
    Gather, combined by Add, Mul or onnxruntime's max and min and written back by ScatterND, so
    they are exact (one step per update: slow for many). ScatterElements' updates get their full
    index first (their own position, indices along ``axis``), negative indices counted from the
    end."""
    if _reduction(node, context) != "none":
        return _one_update_at_a_time(node, context)
    require_types_taken(node, context)
    return [moved(node, dropped=("reduction",))]


# Cases: today ScatterND 6, ScatterElements 10 (max and min one update at a time)
@adapter(SCATTER, 18, "down", "reduction kept, or max and min one update at a time", versions=(16, 18), cases=6)
def scatter_reduction_kept(node: onnx.NodeProto, context: AdapterContext):
    """op-18(d, i, u, reduction=r) = op-16(d, i, u, reduction=r), r none, add or mul; max, min: one update at a time.

    Version 16 has the reductions none, add and mul, meaning what they mean at 18. ``max`` and
    ``min``, which it lacks, go one update at a time as below 16 (onnxruntime's max and min: the
    spec leaves NaN and signed zeros to the runtime, and a Max node answers them otherwise)."""
    if _reduction(node, context) in ("max", "min"):
        return _one_update_at_a_time(node, context)
    require_types_taken(node, context)
    return [moved(node)]
