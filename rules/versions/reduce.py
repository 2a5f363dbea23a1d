"""The Reduce ops whose axes became an input (ReduceSum at 13, the others at 18), both ways."""

from __future__ import annotations

import dataclasses

import onnx
from onnx import helper

from lowering import schemas
from lowering.builder import Builder
from lowering.conversion import axes_choice
from lowering.conversion.adapters import (
    OTHER_OPS,
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

REDUCE_18 = "version 18 takes axes as an input, and noop_with_empty_axes says what no axes mean"
REDUCE_SUM_13 = "version 13 takes axes as an input, and noop_with_empty_axes says what no axes mean"
# Those whose version 18 takes an axes input, from onnx.defs (ReduceSum moved at 13).
REDUCE_AXES_AT_18 = tuple(
    sorted(
        {
            s.name
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name.startswith("Reduce") and s.domain == "" and s.since_version == 18
            and any(formal.name == "axes" for formal in s.inputs)
        }
    )
)  # fmt: skip
# Reductions whose no-op (empty axes, noop_with_empty_axes=1) is the input itself beyond doubt.
# For the others (L1, L2, LogSum, LogSumExp, SumSquare) the spec says the output is the input,
# while onnx.reference and onnxruntime apply the element-wise step (SumSquare squares, LogSum
# takes the log): such a node is refused rather than given one of the two meanings.
NOOP_IS_IDENTITY = frozenset({"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceSum"})
# Axes known only at run time choose among one reduction per subset of the input's axes: at
# most 2^5 = 32 of them (an input of rank 5).
MOST_AXES_CHOSEN_AT_RUN_TIME = axes_choice.MOST_CHOICES.bit_length() - 1


def _has_function_body(op_type: str, version: int) -> bool:
    schema = schemas.schema_in_force(op_type, version)
    return schema is not None and (schema.has_function or schema.has_context_dependent_function)


def _given_axes_or_noop(node: onnx.NodeProto) -> bool:
    """The node gives an axes input or sets noop_with_empty_axes: a node without either reduces
    every axis at both versions."""
    return (len(node.input) > 1 and bool(node.input[1])) or attribute_of(node, "noop_with_empty_axes") is not None


known_change(("ReduceSum",), 13, REDUCE_SUM_13, down_only=True, affects=_given_axes_or_noop)


def _axes_to_attribute(node: onnx.NodeProto, context: AdapterContext, step: int) -> list[onnx.NodeProto]:
    """``node`` (axes as an input since version ``step``) as the older version that takes axes as
    an attribute; below opset 11, where no axis may be negative, negative axes get the rank of the
    input added. A boolean input the older version does not take is carried (:func:`_bool_carried`)."""
    carrier = _bool_carrier(node, context)
    if carrier is not None:
        return _bool_carried(node, context, step, carrier)
    version = schemas.version_in_force(node.op_type, context.source_opset)
    require_types_taken(node, context)
    axes = constant_ints(node, context)
    if axes is None and context.shape_of(node.input[1]) == [0]:
        axes = []  # computed at run time, but of shape [0]: empty whatever it holds
    noop = bool(attribute_of(node, "noop_with_empty_axes"))
    if axes is None:
        return _axes_chosen_at_run_time(node, context, version, step, noop)
    if not axes and noop:
        if node.op_type not in NOOP_IS_IDENTITY:
            raise NotLowered(
                f"{node.op_type}-{version} with no axes and noop_with_empty_axes=1 has no agreed "
                f"meaning to carry to opset {context.target_opset} (the spec says the input itself; onnx.reference "
                "and onnxruntime apply the element-wise step)"
            )
        return _identity_of_input(node, context)
    _require_own_kernel(node, context, version, step)
    if context.target_opset < 11 and any(a < 0 for a in axes):
        rank = context.rank_of(node.input[0])
        if rank is None:
            raise NotLowered(
                f"{node.op_type}-{version} with negative axes {axes} cannot go to opset "
                f"{context.target_opset}, which takes no negative axes, without the rank of its input '{node.input[0]}'"
            )
        axes = [a + rank if a < 0 else a for a in axes]
    result = moved(node, dropped=("noop_with_empty_axes",))
    del result.input[1:]
    if axes:
        result.attribute.append(helper.make_attribute("axes", axes))
    return [result]


def _bool_carrier(node: onnx.NodeProto, context: AdapterContext) -> int | None:
    """The integer type a boolean input of ReduceMax or ReduceMin (from version 20) is carried in
    where the target's version takes no bool: uint8 where taken, else int32; None otherwise."""
    if node.op_type not in ("ReduceMax", "ReduceMin"):
        return None
    if element_type_of(context.judged_type_of(node.input[0])) != onnx.TensorProto.BOOL:
        return None
    taken = schemas.input_element_types(node.op_type, context.target_opset)
    if onnx.TensorProto.BOOL in taken:
        return None
    return next((t for t in (onnx.TensorProto.UINT8, onnx.TensorProto.INT32) if t in taken), None)


def _bool_carried(node: onnx.NodeProto, context: AdapterContext, step: int, carrier: int) -> list[onnx.NodeProto]:
    """ReduceMax/Min-20(x: bool, a) = Greater(ReduceMax/Min-11/13/18(Cast(x, c), a), 0), c = uint8 or int32.

    On 0 and 1 the maximum is any and the minimum all, and ``> 0`` gives them back as bool. Over
    no elements the integer reduction gives the type's least value (max) or greatest (min), and
    ``> 0`` turns them into false and true: the boolean reduction's own identities."""
    b = context.builder(node)
    x_carried = b.Cast(node.input[0], to=carrier)
    carried = moved(node)  # ReduceMax/Min-20(Cast(x, c), a), itself moved to the older version
    carried.input[0] = x_carried.name
    carried.output[0] = b.fresh("reduced")
    context_carried = dataclasses.replace(
        context,
        inferred_type_of=_retyped(context.inferred_type_of, x_carried.name, node.input[0], carrier),
        judged_types=None,
    )
    b.nodes.extend(_axes_to_attribute(carried, context_carried, step))
    b.Greater(carried.output[0], b.scalar(0, carrier, "zero"), outputs=[node.output[0]])
    return b.nodes


def _identity_of_input(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """Identity(x) in place of ``node``, under the node's own name (the Builder names a node of
    another op afresh)."""
    b = context.builder(node)
    b.Identity(node.input[0], outputs=node.output)
    b.nodes[-1].name = node.name
    return b.nodes


def _retyped(type_of, name: str, like: str, element_type: int):
    """``type_of`` that gives ``name`` the shape of ``like`` and ``element_type``."""

    def retyped(asked: str):
        if asked != name:
            return type_of(asked)
        found = type_of(like)
        if found is None:
            return None
        copy = onnx.TypeProto()
        copy.CopyFrom(found)
        copy.tensor_type.elem_type = element_type
        return copy

    return retyped


def _require_own_kernel(node: onnx.NodeProto, context: AdapterContext, version: int, step: int) -> None:
    if version > step and _has_function_body(node.op_type, version):
        # ReduceLogSum-28 and ReduceLogSumExp-28 only dropped their integer types; onnxruntime
        # runs them by their function bodies (ReduceSum, then Log), whose sums round apart from
        # the older ops' own kernels in the last bit: the body, moved in turn, is exact.
        raise NotLowered(
            f"{node.op_type}-{version} goes to opset {context.target_opset} by its function "
            f"body only (the older {node.op_type}'s own kernel may round the sum differently)"
        )


def _axes_chosen_at_run_time(
    node: onnx.NodeProto, context: AdapterContext, version: int, step: int, noop: bool
) -> list[onnx.NodeProto]:
    """ReduceX-18(x, a), a known at run time, x of rank r = If(0 ∈ a', If(1 ∈ a', …)), a' = Gather([0, …, r-1], a):
    each of the 2^r leaves ReduceX-11/13(x, axes=S) for the subset S of axes its path names.

    Each leaf is the older op with the axes as an attribute, so whichever the run-time axes
    name, the same reduction runs on the same values as in the original: exact. The Gather
    counts negative axes from the end and fails on an axis out of range, as the op does.
    Whether the axes name axis k is ``ReduceSum(Cast(Equal(a', k), int32)) > 0`` (an empty a'
    names none). The leaf of no axes reduces every axis, or is the input itself where
    noop_with_empty_axes is 1. A repeated axis reduces once. A type the target's If does not
    give (bfloat16 below opset 16) is refused: no branch could give the reduction."""
    given = node.input[1]
    first = f"{node.op_type}-{version} takes its axes from '{given}', which is computed at run time"
    rank = context.rank_of(node.input[0])
    element_type = element_type_of(context.inferred_type_of(node.input[0]))
    why = None
    if rank is None or not element_type:
        why = f"the rank or type of its input '{node.input[0]}' is not known, so no reduction can be written per choice"
    elif rank > MOST_AXES_CHOSEN_AT_RUN_TIME:
        why = f"its input is of rank {rank}, which would need 2^{rank} reductions, one for each choice of axes"
    elif context.target_opset < axes_choice.CHOICE_FIRST_OPSET:
        why = f"choosing among its reductions at run time needs opset {axes_choice.CHOICE_FIRST_OPSET}"
    elif (untaken := axes_choice.untaken_by_if(element_type, context.target_opset)) is not None:
        why = untaken
    elif noop and node.op_type not in NOOP_IS_IDENTITY:
        why = (
            "and may be empty, and with noop_with_empty_axes=1 no axes have no agreed meaning (the spec says the "
            "input itself; onnx.reference and onnxruntime apply the element-wise step)"
        )
    if why is not None:
        where = f"so it cannot go to opset {context.target_opset} where axes is an attribute"
        raise NotLowered(f"{first}, {where}: {why}")
    _require_own_kernel(node, context, version, step)
    b = context.builder(node)

    def leaf(into: Builder, chosen: tuple[int, ...], output: str) -> None:
        """The reduction over ``chosen``: every axis where none, the input itself with noop_with_empty_axes=1."""
        if not chosen and noop:
            into.Identity(node.input[0], outputs=[output])
            return
        axes = {"axes": list(chosen)} if chosen else {}
        reduction = into.moved(node, inputs=node.input[:1], outputs=[output], dropped=("noop_with_empty_axes",), **axes)
        reduction.name = into.fresh(node.op_type)  # one of many leaves: a name of its own

    axes_choice.write_choice(b, node.input[1], rank, leaf, node.output[0], element_type, carried_from=node)
    return b.nodes


def _axes_to_input(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``node`` (axes as an attribute) as the newer version that takes axes as an input."""
    axes = attribute_of(node, "axes")
    if axes is None:
        return [moved(node, dropped=("axes",))]
    b = context.builder(node)
    b.moved(node, inputs=[*node.input[:1], b.ints(axes, "axes").name], dropped=("axes",))
    return b.nodes


# From 11 to 13 only the type lists changed (the full check at the target refuses a type it lacks);
# at 28 ReduceLogSum and ReduceLogSumExp dropped their integer types. Going down the range reaches
# 28 so that axes computed at run time are refused in our words; going up it stops at 25, as
# onnxruntime runs the 28 versions by their function bodies, whose sums round apart from the kernels.
# Cases: none for ReduceLogSum and ReduceLogSumExp from the newest opset (the test's source), where
# version 28 goes down by its function body (the form onnxruntime runs it in);
# tests/rules/versions/test_adapters_reduce_argmax.py takes version 18 across
@adapter(
    REDUCE_AXES_AT_18,
    18,
    "down",
    "axes attribute",
    versions=(11, 28),
    reason=REDUCE_18,
    cases={"ReduceLogSum": 0, "ReduceLogSumExp": 0, OTHER_OPS: 10},
)
def axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-18(x, Constant(a)) = ReduceX-11/13(x, axes=a); no axes with noop_with_empty_axes=1 = Identity(x).

    ``ReduceX-18(x, axes=a, keepdims=k)`` with ``a`` constant = ``ReduceX-11/13(x, keepdims=k, axes=a)``;
    no or empty axes with ``noop_with_empty_axes=0`` = ``ReduceX-13(x, keepdims=k)`` (every axis);
    with ``noop_with_empty_axes=1`` = ``Identity(x)`` (Max, Min, Mean, Prod). Axes computed at run
    time choose, by one If per axis of x (rank 5 at most), among the reductions over every subset
    of axes, each with its axes as an attribute (exact whichever they name). A bool x of
    ReduceMax/Min-20 is carried in uint8 or int32 and given back by ``> 0``. Versions after 18
    with a function body (ReduceLogSum-28, ReduceLogSumExp-28) are left to that body."""
    return _axes_to_attribute(node, context, 18)


@adapter(REDUCE_AXES_AT_18, 18, "up", "axes input", versions=(11, 25), cases=10)
def axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-11/13(x, axes=a) = ReduceX-18(x, Constant(a)).

    ``ReduceX-13(x, axes=a, keepdims=k)`` = ``ReduceX-18(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceX-18(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    return _axes_to_input(node, context)


# Cases: test_reduce_max_bool_inputs and test_reduce_min_bool_inputs to 18 and 19
@adapter(("ReduceMax", "ReduceMin"), 20, "down", "bool carried", versions=(18, 20), types_only=True, cases=2)
def bool_carried_in_uint8(node: onnx.NodeProto, context: AdapterContext):
    """ReduceMax/Min-20(x: bool, a) = Greater(ReduceMax/Min-18(Cast(x, uint8), a), 0).

    On 0 and 1 the maximum is any and the minimum all, and ``> 0`` gives them back as bool; over
    no elements uint8's 0 (max) and 255 (min) give false and true, the boolean reduction's own
    identities (:func:`_bool_carried`). Its axes input and attributes stay as they are; a node of
    another type is the same node at 18."""
    carrier = _bool_carrier(node, context)
    if carrier is None:
        return None
    b = context.builder(node)
    carried = moved(node)
    carried.input[0] = b.Cast(node.input[0], to=carrier).name
    carried.output[0] = b.fresh("reduced")
    b.nodes.append(carried)
    b.Greater(carried.output[0], b.scalar(0, carrier, "zero"), outputs=[node.output[0]])
    return b.nodes


# Cases: 12 cases to 12 and to 7
@adapter(("ReduceSum",), 13, "down", "axes attribute", versions=(1, 13), cases=24)
def reduce_sum_axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """ReduceSum-13(x, Constant(a)) = ReduceSum-1/11(x, axes=a); no axes with noop_with_empty_axes=1 = Identity(x).

    ``ReduceSum-13(x, a, keepdims=k)`` with ``a`` constant = ``ReduceSum-11(x, keepdims=k, axes=a)``
    (below 11, negative axes get the rank added, which must be known); no or empty ``a`` with
    ``noop_with_empty_axes=0`` = ``ReduceSum-11(x, keepdims=k)`` (every axis); with
    ``noop_with_empty_axes=1`` = ``Identity(x)``. Axes computed at run time choose, by one If per
    axis of x, among the reductions over every subset of axes (from opset 11). A node with neither
    axes nor noop_with_empty_axes is left as it is."""
    if len(node.input) < 2 and attribute_of(node, "noop_with_empty_axes") is None:
        return None  # ReduceSum-13(x) = ReduceSum-11(x): every axis in both
    return _axes_to_attribute(node, context, 13)


# Cases: the noop cases are Identity below 13
@adapter(("ReduceSum",), 13, "up", "axes input", versions=(1, 13), cases=20)
def reduce_sum_axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """ReduceSum-1/11(x, axes=a) = ReduceSum-13(x, Constant(a)); no axes = no input.

    ``ReduceSum-11(x, axes=a, keepdims=k)`` = ``ReduceSum-13(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceSum-13(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    return _axes_to_input(node, context)
