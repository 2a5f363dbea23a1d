"""The Reduce ops whose version 18 takes axes as an input, between 11-13 and 18 both ways."""

from __future__ import annotations

import onnx
from onnx import helper

from lowering.adapters import AdapterContext, adapter, attribute_of, constant_ints, moved
from lowering.errors import LoweringError

REDUCE_18 = "version 18 takes axes as an input, and noop_with_empty_axes says what no axes mean"
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
NOOP_IS_IDENTITY = frozenset({"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd"})


# From 11 to 13 only the type lists changed (the full check at the target refuses a type it lacks).
@adapter(REDUCE_AXES_AT_18, 18, "down", "axes attribute", versions=(11, 25), reason=REDUCE_18)
def axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-18(x, Constant(a)) = ReduceX-11/13(x, axes=a); no axes with noop_with_empty_axes=1 = Identity(x).

    ``ReduceX-18(x, axes=a, keepdims=k)`` with ``a`` constant = ``ReduceX-11/13(x, keepdims=k, axes=a)``;
    no or empty axes with ``noop_with_empty_axes=0`` = ``ReduceX-13(x, keepdims=k)`` (every axis);
    with ``noop_with_empty_axes=1`` = ``Identity(x)`` (Max, Min, Mean, Prod). Axes computed at run
    time cannot become an attribute: refused."""
    axes = constant_ints(node, context)
    if axes is None:
        raise LoweringError(
            f"{context.location}: {node.op_type}-18 takes its axes from '{node.input[1]}', which is computed at "
            f"run time, so it cannot go to opset {context.target_opset} where axes is an attribute"
        )
    noop = bool(attribute_of(node, "noop_with_empty_axes"))
    if not axes and noop:
        if node.op_type not in NOOP_IS_IDENTITY:
            raise LoweringError(
                f"{context.location}: {node.op_type}-18 with no axes and noop_with_empty_axes=1 has no agreed "
                f"meaning to carry to opset {context.target_opset} (the spec says the input itself; onnx.reference "
                "and onnxruntime apply the element-wise step)"
            )
        return [helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name)]
    result = moved(node, dropped=("noop_with_empty_axes",))
    del result.input[1:]
    if axes:
        result.attribute.append(helper.make_attribute("axes", axes))
    return [result]


@adapter(REDUCE_AXES_AT_18, 18, "up", "axes input", versions=(11, 25))
def axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """ReduceX-11/13(x, axes=a) = ReduceX-18(x, Constant(a)).

    ``ReduceX-13(x, axes=a, keepdims=k)`` = ``ReduceX-18(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceX-18(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    axes = attribute_of(node, "axes")
    result = moved(node, dropped=("axes",))
    if axes is None:
        return [result]
    hint = node.name or node.output[0]
    name = context.fresh(f"{hint}_axes")
    value = helper.make_tensor(name, onnx.TensorProto.INT64, [len(axes)], list(axes))
    constant = helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value)
    del result.input[1:]
    result.input.append(name)
    return [constant, result]
