"""PRelu across version 7: a per-channel slope lined up for unidirectional broadcasting."""

from __future__ import annotations

import math

import onnx

from lowering.conversion.adapters import AdapterContext, adapter, moved
from lowering.errors import NotLowered

PRELU_7 = (
    "version 7 broadcasts slope unidirectionally (from the last axis); before, a slope of C values applied per channel"
)


# Cases: the explicit cases
@adapter(("PRelu",), 7, "up", "per-channel slope", versions=(1, 16), reason=PRELU_7, cases=4)
def per_channel_slope(node: onnx.NodeProto, context: AdapterContext):
    """PRelu-1/6(X, slope[C]) = PRelu-7+(X, Unsqueeze(slope, axes=[1, ..., rank(X)-2])).

    ``PRelu-1/6(X, slope)`` with ``X`` of rank ``r >= 2`` and ``slope`` of ``C`` values (one per
    channel, axis 1) = ``PRelu-7+(X, Unsqueeze(slope, axes=[1, ..., r-2]))``: shape ``[C, 1, ..., 1]``,
    the channel axis lined up for unidirectional broadcasting. A slope of one value is kept as it is."""
    slope = context.shape_of(node.input[1])
    rank = context.rank_of(node.input[0])
    if slope is not None and all(isinstance(d, int) for d in slope) and math.prod(slope) == 1:
        return [moved(node)]
    if slope is None or rank is None or len(slope) != 1 or rank < 2:
        raise NotLowered(
            f"PRelu below version 7 with a slope of shape {slope} on an input of rank {rank} "
            f"cannot go to opset {context.target_opset} ({PRELU_7})"
        )
    if rank == 2:  # [C] lines up with [N, C] already
        return [moved(node)]
    b = context.builder(node)
    x, slope = node.input[0], node.input[1]
    lined_up = b.over_axes("Unsqueeze", slope, range(1, rank - 1))  # axes an attribute below opset 13
    b.moved(node, inputs=[x, lined_up.name])
    return b.nodes


# Cases: the explicit cases: the backend's slopes are not per channel
@adapter(("PRelu",), 7, "down", "per-channel slope", versions=(1, 16), cases=4)
def per_channel_slope_squeezed(node: onnx.NodeProto, context: AdapterContext):
    """PRelu-7+(X, slope lined up with axis 1: [C, 1, ..., 1]) = PRelu-1/6(X, Squeeze(slope) of shape [C]).

    A slope of one value is kept as it is. Any other slope (one varying along another axis than
    the channel axis 1, as ``[W]`` on ``[N, C, W]``) broadcasts in a way versions 1 and 6 cannot
    say, which onnx's converter misses (it keeps the slope, giving it the per-channel meaning):
    refused."""
    slope = context.shape_of(node.input[1])
    shape = context.shape_of(node.input[0])
    if slope is not None and all(isinstance(d, int) for d in slope) and math.prod(slope) == 1:
        return [moved(node)]
    channel = None if slope is None or shape is None else 1 - (len(shape) - len(slope))
    lined_up = (
        channel is not None
        and channel >= 0
        and len(shape) >= 2
        and slope[channel] == shape[1]
        and isinstance(shape[1], int)
        and all(d == 1 for k, d in enumerate(slope) if k != channel)
    )
    if not lined_up:
        raise NotLowered(
            f"PRelu with a slope of shape {slope} on an input of shape {shape} cannot go to "
            f"opset {context.target_opset}, where a slope is one value or one per channel (axis 1) ({PRELU_7})"
        )
    if len(slope) == 1:
        return [moved(node)]
    b = context.builder(node)
    per_channel = b.Squeeze(node.input[1], axes=[k for k in range(len(slope)) if k != channel])
    b.moved(node, inputs=[node.input[0], per_channel.name])
    return b.nodes
