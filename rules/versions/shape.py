"""Shape across version 15 (start and end slice the shape), down by Slice."""

from __future__ import annotations

import onnx

from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, attribute_of, known_change, moved

SHAPE_15 = "version 15 adds start and end, which keep only the dimensions from start to end"
INT64_MAX = 2**63 - 1  # an end past every rank: Slice clamps it to the rank, as Shape-15 does

known_change(
    ("Shape",),
    15,
    SHAPE_15,
    down_only=True,
    affects=HeldAttributes.added_at(15, "Shape"),
)


# Cases: the backend's Shape cases, and the same with start=0 stated
@adapter(("Shape",), 15, "down", "Slice", versions=(1, 25), changed_only=True, cases=22)
def shape_slice_to_slice(node: onnx.NodeProto, context: AdapterContext):
    """Shape-15(x, start=s, end=e) = Slice(Shape-1/13(x), [s], [e]); with s=0 and no e, Shape-1/13(x).

    ``Shape-15(x, start=s, end=e)`` = ``Slice(Shape-1/13(x), starts=[s], ends=[e])``: both add the
    rank ``r`` to a negative bound and then clamp it to ``[0, r]`` (an ``s`` past ``e`` gives an
    empty shape in both); no ``e`` is ``INT64_MAX``, which clamps to ``r``. Below opset 10, Slice-1
    takes the bounds as attributes. Where the model states the rank the bounds are clamped here,
    and bounds covering every dimension leave ``Shape(x)`` alone. A node without start and end
    is left as it is (it means the same at every version)."""
    start, end = attribute_of(node, "start"), attribute_of(node, "end")
    if start is None and end is None:
        return None
    start = start or 0
    rank = context.stated_rank_of(node.input[0])
    if rank is not None:  # the clamping both ops do, done here
        start, end = (min(max(b + rank if b < 0 else b, 0), rank) for b in (start, rank if end is None else end))
        end = max(end, start)
        if (start, end) == (0, rank):
            end = None
    if start == 0 and end is None:
        return [moved(node, dropped=("start", "end"))]
    b = context.builder(node)
    whole = b.moved(node, outputs=[b.fresh("whole")], dropped=("start", "end")).output[0]
    starts, ends = [start], [INT64_MAX if end is None else end]
    if context.target_opset < 10:  # Slice-1: the bounds as attributes
        b.Slice(whole, starts=starts, ends=ends, outputs=node.output)
    else:
        b.Slice(whole, b.ints(starts, "start"), b.ints(ends, "end"), outputs=node.output)
    return b.nodes
