"""Squeeze and Unsqueeze across version 13: axes as an input against axes as an attribute."""

from __future__ import annotations

import onnx

from lowering.builder import Builder
from lowering.conversion import axes_choice
from lowering.conversion.adapters import (
    AdapterContext,
    adapter,
    attribute_of,
    constant_ints,
    known_change,
    moved,
    require_types_taken,
)
from lowering.errors import NotLowered
from lowering.scopes import element_type_of

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
        raise NotLowered(
            f"{node.op_type}-{version} with negative axes {axes} cannot go to opset "
            f"{context.target_opset}, which takes no negative axes, without the rank of its input '{node.input[0]}'"
        )
    if node.op_type == "Unsqueeze":
        rank += len(axes)
    return [a + rank if a < 0 else a for a in axes]


def _axes_chosen_at_run_time(node: onnx.NodeProto, context: AdapterContext, version: int) -> list[onnx.NodeProto]:
    """Squeeze-13(x, a), a known at run time, n = len(a) = If(0 ∈ a', If(1 ∈ a', …)), a' = Gather([0, …, P-1], a):
    each of the C(P, n) leaves Squeeze-11(x, axes=S) for the n positions S its path names.

    P is the rank r of x for Squeeze, r + n for Unsqueeze (whose axes count in its output); n
    comes from the shape of ``a``, so every leaf gives a result of one rank. The Gather counts
    negative axes from the end and fails on one out of range, as the op does; a squeezed
    dimension that is not 1 fails in the leaf, as in the original. An empty ``a`` (of shape
    [0]) squeezes every dimension of size 1, as Squeeze-11 without axes. Repeated axes fail at
    run time (``Gather(Unique(a'), [0, …, n-1])`` finds fewer than n): as Unsqueeze-13 does,
    while onnxruntime's Squeeze-13 squeezes such an axis once (onnx.reference fails)."""
    given = node.input[1]
    first = f"{node.op_type}-{version} takes its axes from '{given}', which is computed at run time"
    rank = context.rank_of(node.input[0])
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    shape = context.shape_of(given)
    count = shape[0] if shape is not None and len(shape) == 1 and isinstance(shape[0], int) else None
    if count == 0 and node.op_type == "Squeeze":
        result = moved(node)
        del result.input[1:]
        return [result]  # of shape [0]: empty whatever it holds, every dimension of size 1
    positions = None if rank is None or count is None else rank + (count if node.op_type == "Unsqueeze" else 0)
    candidates = None if positions is None else tuple(range(positions))
    if node.op_type == "Squeeze" and candidates is not None:
        # a dimension known not to be 1 is never squeezed: naming it fails at run time
        dims = context.shape_of(node.input[0])
        candidates = tuple(k for k in candidates if not isinstance(dims[k], int) or dims[k] == 1)
    why = None
    if rank is None or not element_type:
        unknown = f"the rank or type of its input '{node.input[0]}' is not known"
        why = f"{unknown}, so no {node.op_type} can be written per choice"
    elif count is None:
        why = f"the length of '{given}' is not known, so neither is the rank of its result"
    elif count == 0:
        why = "its axes are empty, and Unsqueeze-11 takes none"
    elif count > len(candidates):
        why = f"'{given}' holds {count} axes, more than the {len(candidates)} dimensions of its input that may be 1"
    elif axes_choice.choice_count(len(candidates), count) > axes_choice.MOST_CHOICES:
        leaves = axes_choice.choice_count(len(candidates), count)
        why = (
            f"choosing {count} of {len(candidates)} positions would need {leaves} {node.op_type} nodes, "
            f"more than {axes_choice.MOST_CHOICES}"
        )
    elif context.target_opset < axes_choice.CHOICE_FIRST_OPSET:
        why = f"choosing among {node.op_type} nodes at run time needs opset {axes_choice.CHOICE_FIRST_OPSET}"
    elif (stated := context.rank_of(node.output[0])) is not None and stated != rank + (
        count if node.op_type == "Unsqueeze" else -count
    ):
        # onnxruntime's Squeeze-13 squeezes a repeated axis once: a result of another rank than
        # the n axes give says they repeat, which no choice of n positions can answer
        sign = "+" if node.op_type == "Unsqueeze" else "-"
        why = (
            f"its result is stated to be of rank {stated}, not the {rank} {sign} {count} its axes give: they repeat one"
        )
    if why is not None:
        where = f"so it cannot go to opset {context.target_opset} where axes is an attribute"
        raise NotLowered(f"{first}, {where}: {why}")
    require_types_taken(node, context)
    b = context.builder(node)

    def leaf(into: Builder, chosen: tuple[int, ...], output: str) -> None:
        """Squeeze-11(x, axes=S), S the positions ``chosen``; likewise Unsqueeze."""
        result = into.moved(node, inputs=node.input[:1], outputs=[output], axes=list(chosen))
        result.name = into.fresh(node.op_type)  # one of many leaves: a name of its own

    axes_choice.write_choice(b, given, positions, leaf, node.output[0], element_type, count, candidates, node)
    return b.nodes


# Cases: today Squeeze 5, Unsqueeze 15: with the explicit run-time axes cases, chosen by If at 12, refused at 7
@adapter(("Squeeze", "Unsqueeze"), 13, "down", "axes attribute", versions=(1, 25), cases=5)
def squeeze_axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """Squeeze-13(x, a) = Squeeze-1/11(x, axes=a); a run-time a: If over Squeeze-11(x, axes=S); likewise Unsqueeze.

    ``Squeeze-13(x, a)`` with ``a`` constant = ``Squeeze-11(x, axes=a)`` (below 11, negative axes
    get the rank added, which must be known); no or empty ``a`` = ``Squeeze-11(x)``: every
    dimension of size 1. Likewise Unsqueeze, whose negative axes count in the output's rank.
    Axes computed at run time, n of them (n known), choose from opset 11 by one If per position
    among the C(P, n) Squeeze-11 nodes naming n of its P positions (r of x's for Squeeze, r + n
    for Unsqueeze), at most 32 (:func:`_axes_chosen_at_run_time`); repeated ones fail at run
    time there, as Unsqueeze-13 does, where onnxruntime's Squeeze-13 squeezes such an axis once."""
    version = 13
    axes = constant_ints(node, context)
    if axes is None:
        return _axes_chosen_at_run_time(node, context, version)
    result = moved(node)
    del result.input[1:]
    if axes:
        return [moved(result, axes=_positive_axes(node, axes, context, version))]
    if node.op_type == "Unsqueeze":
        raise NotLowered(f"Unsqueeze-{version} with no axes cannot go to opset {context.target_opset}")
    return [result]


# Cases: the explicit cases' If leaves going up from 12
@adapter(("Squeeze", "Unsqueeze"), 13, "up", "axes input", versions=(1, 25), cases=5)
def squeeze_axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """Squeeze-1/11(x, axes=a) = Squeeze-13(x, Constant(a)); likewise Unsqueeze; no axes = no input.

    ``Squeeze-11(x, axes=a)`` = ``Squeeze-13(x, Constant(a))``; ``Squeeze-11(x)`` = ``Squeeze-13(x)``:
    every dimension of size 1. Likewise ``Unsqueeze``, whose axes are required in both."""
    axes = attribute_of(node, "axes")
    if axes is None:
        return [moved(node, dropped=("axes",))]
    b = context.builder(node)
    b.moved(node, inputs=[*node.input[:1], b.ints(axes, "axes").name], dropped=("axes",))
    return b.nodes
