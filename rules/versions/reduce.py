"""The Reduce ops whose axes became an input (ReduceSum at 13, the others at 18), both ways."""

from __future__ import annotations

import onnx
from onnx import helper

from lowering import schemas
from lowering.adapters import (
    AdapterContext,
    adapter,
    attribute_of,
    constant_ints,
    int64_constant,
    known_change,
    moved,
)
from lowering.errors import LoweringError

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
    input added."""
    version = schemas.version_in_force(node.op_type, context.source_opset)
    axes = constant_ints(node, context)
    if axes is None and context.shape_of(node.input[1]) == [0]:
        axes = []  # computed at run time, but of shape [0]: empty whatever it holds
    if axes is None:
        raise LoweringError(
            f"{context.location}: {node.op_type}-{version} takes its axes from '{node.input[1]}', which is computed "
            f"at run time, so it cannot go to opset {context.target_opset} where axes is an attribute"
        )
    noop = bool(attribute_of(node, "noop_with_empty_axes"))
    if not axes and noop:
        if node.op_type not in NOOP_IS_IDENTITY:
            raise LoweringError(
                f"{context.location}: {node.op_type}-{version} with no axes and noop_with_empty_axes=1 has no agreed "
                f"meaning to carry to opset {context.target_opset} (the spec says the input itself; onnx.reference "
                "and onnxruntime apply the element-wise step)"
            )
        return [helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name)]
    if version > step and _has_function_body(node.op_type, version):
        # ReduceLogSum-28 and ReduceLogSumExp-28 only dropped their integer types; onnxruntime
        # runs them by their function bodies (ReduceSum, then Log), whose sums round apart from
        # the older ops' own kernels in the last bit: the body, moved in turn, is exact.
        raise LoweringError(
            f"{context.location}: {node.op_type}-{version} goes to opset {context.target_opset} by its function "
            f"body only (the older {node.op_type}'s own kernel may round the sum differently)"
        )
    if context.target_opset < 11 and any(a < 0 for a in axes):
        rank = context.rank_of(node.input[0])
        if rank is None:
            raise LoweringError(
                f"{context.location}: {node.op_type}-{version} with negative axes {axes} cannot go to opset "
                f"{context.target_opset}, which takes no negative axes, without the rank of its input '{node.input[0]}'"
            )
        axes = [a + rank if a < 0 else a for a in axes]
    result = moved(node, dropped=("noop_with_empty_axes",))
    del result.input[1:]
    if axes:
        result.attribute.append(helper.make_attribute("axes", axes))
    return [result]


def _axes_to_input(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``node`` (axes as an attribute) as the newer version that takes axes as an input."""
    axes = attribute_of(node, "axes")
    result = moved(node, dropped=("axes",))
    if axes is None:
        return [result]
    constant, name = int64_constant(context, f"{node.name or node.output[0]}_axes", list(axes))
    del result.input[1:]
    result.input.append(name)
    return [constant, result]


# From 11 to 13 only the type lists changed (the full check at the target refuses a type it lacks);
# at 28 ReduceLogSum and ReduceLogSumExp dropped their integer types. Going down the range reaches
# 28 so that axes computed at run time are refused in our words; going up it stops at 25, as
# onnxruntime runs the 28 versions by their function bodies, whose sums round apart from the kernels.
@adapter(REDUCE_AXES_AT_18, 18, "down", "axes attribute", versions=(11, 28), reason=REDUCE_18)
def axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-18(x, Constant(a)) = ReduceX-11/13(x, axes=a); no axes with noop_with_empty_axes=1 = Identity(x).

    ``ReduceX-18(x, axes=a, keepdims=k)`` with ``a`` constant = ``ReduceX-11/13(x, keepdims=k, axes=a)``;
    no or empty axes with ``noop_with_empty_axes=0`` = ``ReduceX-13(x, keepdims=k)`` (every axis);
    with ``noop_with_empty_axes=1`` = ``Identity(x)`` (Max, Min, Mean, Prod). Axes computed at run
    time cannot become an attribute: refused, unless their shape is [0] (empty, whatever they
    hold). Versions after 18 with a function body (ReduceLogSum-28, ReduceLogSumExp-28) are left
    to that body."""
    return _axes_to_attribute(node, context, 18)


@adapter(REDUCE_AXES_AT_18, 18, "up", "axes input", versions=(11, 25))
def axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-11/13(x, axes=a) = ReduceX-18(x, Constant(a)).

    ``ReduceX-13(x, axes=a, keepdims=k)`` = ``ReduceX-18(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceX-18(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    return _axes_to_input(node, context)


@adapter(("ReduceSum",), 13, "down", "axes attribute", versions=(1, 13))
def reduce_sum_axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """ReduceSum-13(x, Constant(a)) = ReduceSum-1/11(x, axes=a); no axes with noop_with_empty_axes=1 = Identity(x).

    ``ReduceSum-13(x, a, keepdims=k)`` with ``a`` constant = ``ReduceSum-11(x, keepdims=k, axes=a)``
    (below 11, negative axes get the rank added, which must be known); no or empty ``a`` with
    ``noop_with_empty_axes=0`` = ``ReduceSum-11(x, keepdims=k)`` (every axis); with
    ``noop_with_empty_axes=1`` = ``Identity(x)``. Axes computed at run time cannot become an
    attribute: refused. A node with neither axes nor noop_with_empty_axes is left as it is."""
    if len(node.input) < 2 and attribute_of(node, "noop_with_empty_axes") is None:
        return None  # ReduceSum-13(x) = ReduceSum-11(x): every axis in both
    return _axes_to_attribute(node, context, 13)


@adapter(("ReduceSum",), 13, "up", "axes input", versions=(1, 13))
def reduce_sum_axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """ReduceSum-1/11(x, axes=a) = ReduceSum-13(x, Constant(a)); no axes = no input.

    ``ReduceSum-11(x, axes=a, keepdims=k)`` = ``ReduceSum-13(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceSum-13(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    return _axes_to_input(node, context)
