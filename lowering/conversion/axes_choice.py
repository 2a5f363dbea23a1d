"""Axes known only at run time as a choice, by a tree of If, among nodes with constant axes.

An op whose axes became an input (ReduceSum-13, ReduceX-18, Squeeze/Unsqueeze-13) goes to an
older version, which takes them as an attribute, as one If per position of the tensor the axes
count in: each leaf is the older op with the axes its path names as an attribute, so whichever
axes come at run time, the very op they name runs on the very values. The axes are first
normalized by ``Gather([0, ..., P-1], axes)``, which counts negative ones from the end and fails
at run time on one out of range, as the ops do; position ``k`` is named where
``ReduceSum(Cast(Equal(a', k), int32)) > 0``.
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb

import onnx

from .. import schemas
from ..builder import Builder, Value
from ..graphs import branch_graph

# If's branches may give results of different shapes (or ranks) from If-11 on, whose shape
# inference takes their union; If-1's requires them alike (onnx.defs states no such fact).
IF_BRANCHES_OF_ANY_RANK = 11
# The most leaves a choice may have: 2^5 reductions of a rank-5 input.
MOST_CHOICES = 32
# What a choice writes besides its leaves, and the lowest opset where all of it exists (Unique,
# for a choice of exactly n distinct positions, is of opset 11, as are If's branches of any shape).
CHOICE_EMITS = ("Constant", "Gather", "Equal", "Cast", "ReduceSum", "Greater", "If", "Unique")
CHOICE_FIRST_OPSET = max(schemas.first_opset_writing(CHOICE_EMITS, int64_constants=True), IF_BRANCHES_OF_ANY_RANK)

# ``leaf(into, S, output)`` writes into the builder ``into`` the op over the positions S, giving ``output``.
Leaf = Callable[[Builder, tuple[int, ...], str], object]


def untaken_by_if(element_type: int, opset: int) -> str | None:
    """Why a choice giving ``element_type`` cannot be written at ``opset`` (its If branches do not
    give that type there: bfloat16 from If-16), or None where it can."""
    if element_type in schemas.output_element_types("If", opset):
        return None
    first = schemas.first_opset("If", element_type)
    name = schemas.type_name(element_type)
    return f"the choice's If branches give {name}, which If takes only from opset {first}"


def choice_count(candidates: int, chosen: int | None = None) -> int:
    """How many leaves a choice among ``candidates`` positions has: one per subset, or per subset
    of exactly ``chosen``."""
    return 2**candidates if chosen is None else comb(candidates, chosen)


def write_choice(
    b: Builder,
    axes: str,
    positions: int,
    leaf: Leaf,
    output: str,
    element_type: int,
    chosen: int | None = None,
    candidates: tuple[int, ...] | None = None,
    carried_from: onnx.NodeProto | None = None,
) -> None:
    """Write into ``b`` the nodes choosing, by the run-time ``axes``, among what ``leaf(branch, S,
    output)`` writes for the subsets S of ``candidates`` (by default ``range(positions)``; of
    exactly ``chosen`` positions where given).

    Positions not among ``candidates`` (a Squeeze's dimensions known not to be 1) fail at run
    time where named: the normalizing Gather maps them to ``positions``, which a second
    ``Gather([0, ..., P-1], ·)`` finds out of range. With ``chosen`` given, the axes must name
    ``chosen`` distinct positions: their normalized values go through
    ``Gather(Unique(a'), [0, ..., chosen-1])``, which fails at run time where one repeats (fewer
    distinct values than ``chosen``), and the tree is pruned: once ``chosen`` are taken the rest
    are not, and where the candidates left are as many as those still to take, all are
    (``C(len(candidates), chosen)`` leaves). Every If's branches declare ``element_type``. The
    ``doc_string`` and ``metadata_props`` of ``carried_from`` (the node the choice replaces) go
    once, on the outermost If; the leaves carry none."""
    among = tuple(range(positions)) if candidates is None else tuple(candidates)
    every = list(range(positions))
    table = [k if k in among else positions for k in every]
    within = b.Gather(b.ints(table, "every_position"), axes, axis=0)
    if table != every:
        within = b.Gather(b.ints(every, "candidates"), within, axis=0)
    if chosen is not None:
        within = b.Gather(b.Unique(within, sorted=1), b.ints(list(range(chosen)), "first_axes"), axis=0)
    named: dict[int, Value] = {}

    def names(k: int) -> Value:
        """Whether the axes name position ``k``, ``ReduceSum(Cast(Equal(a', k), int32)) > 0``: written
        where first asked for."""
        if k not in named:
            is_k = b.Equal(within, b.scalar(k, onnx.TensorProto.INT64, f"position_{k}"))
            count = b.ReduceSum(b.Cast(is_k, to=onnx.TensorProto.INT32), keepdims=0)
            named[k] = b.Greater(count, b.scalar(0, onnx.TensorProto.INT32, f"none_{k}"))
        return named[k]

    def branches(i: int, taken: tuple[int, ...], left: tuple[int, ...]) -> dict[str, onnx.GraphProto]:
        """The branches of the If on the i-th candidate: with it taken, and without."""
        k = among[i]
        found = {}
        for branch, path, label in (("then_branch", taken, "with"), ("else_branch", left, "without")):
            inner = b.fresh(f"{label}_position_{k}")
            body = b.nested(f"{label}_position_{k}")
            write(body, i + 1, path, inner)
            found[branch] = branch_graph(body.nodes, b.fresh(f"{branch}_{k}"), inner, element_type)
        return found

    def decided(i: int, so_far: tuple[int, ...]) -> tuple[int, ...] | None:
        """The positions taken where every candidate from the i-th on is decided, else None."""
        if chosen is not None and len(so_far) == chosen:
            return so_far
        if chosen is not None and len(among) - i == chosen - len(so_far):
            return (*so_far, *among[i:])
        if i == len(among):
            return so_far
        return None

    def write(into: Builder, i: int, so_far: tuple[int, ...], out: str) -> None:
        """Write into ``into`` the node giving ``out``: the leaf of the positions taken once every
        candidate from the i-th on is decided, else an If on the i-th."""
        taken = decided(i, so_far)
        if taken is None:
            k = among[i]
            into.op("If", names(k), outputs=[out], **branches(i, (*so_far, k), so_far))
            return
        start = len(into.nodes)
        leaf(into, taken, out)
        for made in into.nodes[start:]:
            made.ClearField("doc_string")
            del made.metadata_props[:]

    if decided(0, ()) is not None and among:
        # Every candidate is taken whatever the axes: the checks above must still run, so the
        # leaf stands in both branches of an If on the first one.
        b.op("If", names(among[0]), outputs=[output], **branches(0, among, among))
    else:
        write(b, 0, (), output)
    root = b.nodes[-1]
    if carried_from is not None:
        _carry_doc_string(carried_from, root)
        root.metadata_props.extend(carried_from.metadata_props)


def _carry_doc_string(source: onnx.NodeProto, target: onnx.NodeProto) -> None:
    """``target.doc_string = source.doc_string`` where ``source`` has one, copied as protobuf
    holds it: a doc_string that is not UTF-8 reads as bytes, which the field does not take."""
    if not source.HasField("doc_string"):
        return
    holder = onnx.NodeProto()
    holder.CopyFrom(source)
    for field in onnx.NodeProto.DESCRIPTOR.fields:
        if field.name != "doc_string":
            holder.ClearField(field.name)
    holder.DiscardUnknownFields()
    target.MergeFrom(holder)
