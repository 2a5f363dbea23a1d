"""Squeeze and Unsqueeze across version 13: axes as an input against axes as an attribute."""

from __future__ import annotations

import onnx

from lowering.adapters import AdapterContext, adapter, attribute_of, constant_ints, int64_constant, known_change, moved
from lowering.errors import LoweringError

SQUEEZE_13 = "version 13 takes axes as an input; earlier versions as an attribute"
known_change(
    ("Squeeze", "Unsqueeze"),
    13,
    SQUEEZE_13,
    down_only=True,
    affects=lambda node: len(node.input) > 1 and bool(node.input[1]),
)


def _positive_axes(node: onnx.NodeProto, axes: list[int], context: AdapterContext, version: int) -> list[int]:
    """``axes`` as they are, or with the rank added to negative ones where the target's version
    (below 11) takes none; Unsqueeze counts them in its output's rank."""
    if context.target_opset >= 11 or all(a >= 0 for a in axes):
        return axes
    rank = context.rank_of(node.input[0])
    if rank is None:
        raise LoweringError(
            f"{context.location}: {node.op_type}-{version} with negative axes {axes} cannot go to opset "
            f"{context.target_opset}, which takes no negative axes, without the rank of its input '{node.input[0]}'"
        )
    if node.op_type == "Unsqueeze":
        rank += len(axes)
    return [a + rank if a < 0 else a for a in axes]


@adapter(("Squeeze", "Unsqueeze"), 13, "down", "axes attribute", versions=(1, 25))
def squeeze_axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """Squeeze-13(x, Constant(a)) = Squeeze-1/11(x, axes=a); likewise Unsqueeze; no axes = no attribute.

    ``Squeeze-13(x, a)`` with ``a`` constant = ``Squeeze-11(x, axes=a)`` (below 11, negative axes
    get the rank added, which must be known); no or empty ``a`` = ``Squeeze-11(x)``: every
    dimension of size 1. Likewise Unsqueeze, whose negative axes count in the output's rank.
    Axes computed at run time cannot become an attribute: refused."""
    version = 13
    axes = constant_ints(node, context)
    if axes is None:
        raise LoweringError(
            f"{context.location}: {node.op_type}-{version} takes its axes from '{node.input[1]}', which is computed "
            f"at run time, so it cannot go to opset {context.target_opset} where axes is an attribute"
        )
    result = moved(node)
    del result.input[1:]
    if axes:
        return [moved(result, axes=_positive_axes(node, axes, context, version))]
    if node.op_type == "Unsqueeze":
        raise LoweringError(
            f"{context.location}: Unsqueeze-{version} with no axes cannot go to opset {context.target_opset}"
        )
    return [result]


@adapter(("Squeeze", "Unsqueeze"), 13, "up", "axes input", versions=(1, 25))
def squeeze_axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """Squeeze-1/11(x, axes=a) = Squeeze-13(x, Constant(a)); likewise Unsqueeze; no axes = no input.

    ``Squeeze-11(x, axes=a)`` = ``Squeeze-13(x, Constant(a))``; ``Squeeze-11(x)`` = ``Squeeze-13(x)``:
    every dimension of size 1. Likewise ``Unsqueeze``, whose axes are required in both."""
    axes = attribute_of(node, "axes")
    result = moved(node, dropped=("axes",))
    if axes is None:
        return [result]
    constant, name = int64_constant(context, f"{node.name or node.output[0]}_axes", list(axes))
    del result.input[1:]
    result.input.append(name)
    return [constant, result]
