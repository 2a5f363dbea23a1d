"""ScatterND and ScatterElements going down across versions 16 (reduction add, mul) and 18
(reduction max, min): kept where the target's version has the node's reduction, else refused."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    attribute_of,
    known_change,
    moved,
    require_types_taken,
)
from lowering.errors import LoweringError

SCATTER = ("ScatterElements", "ScatterND")
SCATTER_16 = "version 16 adds reduction: add and mul combine every update with what is at its index, in order"
SCATTER_18 = "version 18 adds the reductions max and min"
known_change(SCATTER, 16, SCATTER_16, down_only=True, affects=attribute_in("reduction", frozenset({"add", "mul"})))
known_change(SCATTER, 18, SCATTER_18, down_only=True, affects=attribute_in("reduction", frozenset({"max", "min"})))


def _reduction(node: onnx.NodeProto) -> str:
    value = attribute_of(node, "reduction")
    return (value.decode() if isinstance(value, bytes) else value) or "none"


def _refused(node: onnx.NodeProto, context: AdapterContext, reduction: str, since: int, reason: str) -> LoweringError:
    version = schemas.version_in_force(node.op_type, context.source_opset)
    target = schemas.version_in_force(node.op_type, context.target_opset)
    return LoweringError(
        f"{context.location}: {node.op_type}-{version} with reduction '{reduction}' cannot go to opset "
        f"{context.target_opset}: {node.op_type}-{target} has no {reduction} reduction (from version {since}), and "
        f"combining duplicate indices in their order with other ops has no exact expression there ({reason})"
    )


@adapter(SCATTER, 16, "down", "no reduction", versions=(11, 18))
def scatter_without_reduction(node: onnx.NodeProto, context: AdapterContext):
    """op-16/18(data, indices, updates, reduction=none) = op-11/13(data, indices, updates).

    With ``reduction`` none (the default) every update is written to its index, as in
    versions 11 and 13 (which take no duplicate indices either). ``add`` and ``mul`` combine the
    updates of duplicate indices with what is there, one after another in index order; no op
    before 16 does that, and an order-free sum or product of floats is not the same: refused,
    as are ``max``/``min`` (from 18)."""
    reduction = _reduction(node)
    if reduction in ("max", "min"):
        raise _refused(node, context, reduction, 18, SCATTER_18)
    if reduction != "none":
        raise _refused(node, context, reduction, 16, SCATTER_16)
    require_types_taken(node, context)
    return [moved(node, dropped=("reduction",))]


@adapter(SCATTER, 18, "down", "reduction kept", versions=(16, 18))
def scatter_reduction_kept(node: onnx.NodeProto, context: AdapterContext):
    """op-18(data, indices, updates, reduction=r) = op-16(data, indices, updates, reduction=r), r none, add or mul.

    Version 16 has the reductions none, add and mul, meaning what they mean at 18. ``max`` and
    ``min`` have no exact expression at 16 (a max over the updates of duplicate indices whose
    NaN and signed-zero outcomes the spec leaves to the runtime): refused."""
    reduction = _reduction(node)
    if reduction in ("max", "min"):
        raise _refused(node, context, reduction, 18, SCATTER_18)
    require_types_taken(node, context)
    return [moved(node)]
