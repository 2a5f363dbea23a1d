"""Loop going below version 11, which carries at least one value from one iteration to the next."""

from __future__ import annotations

import onnx
from onnx import helper

from lowering import schemas
from lowering.conversion import version_steps
from lowering.conversion.adapters import AdapterContext, adapter, known_change
from lowering.errors import NotLowered

LOOP_11 = "from version 11 a Loop may carry no values (v_initial may be empty; earlier versions need one)"


def _carries_nothing(node: onnx.NodeProto) -> bool:
    return len(node.input) <= 2


known_change(("Loop",), 11, LOOP_11, down_only=True, affects=_carries_nothing)


# Cases: the explicit cases, each to 10 and 7: the backend's Loops carry values
@adapter(("Loop",), 11, "down", "one value carried", versions=(1, schemas.op_versions("Loop")[-1]), cases=4)
def one_value_carried(node: onnx.NodeProto, context: AdapterContext):
    """Loop-11+(M, c), no carried values = Loop-1(M, c, 0), the body carrying the 0 by Identity, its final value unused.

    The body gets one more input after its condition and one more output after its condition
    (``Identity`` of that input), the node one more output before its scan outputs, under a name
    nothing reads. The iterations, the condition and the scan outputs are the same: the scan
    outputs bit for bit. A Loop that carries values is left to be judged as any."""
    if not _carries_nothing(node):
        return None
    source_version = schemas.version_in_force("Loop", context.source_opset)
    untaken = version_steps.untaken_output_refusal(node, source_version, context.target_opset, context.judged_type_of)
    if untaken is not None:
        raise NotLowered(f"{untaken}")
    b = context.builder(node)
    carried = b.scalar(0.0, onnx.TensorProto.FLOAT, "carried")  # float: a Constant holds it at every opset
    max_trip_count, condition = (list(node.input) + ["", ""])[:2]
    result = b.moved(
        node, inputs=[max_trip_count, condition, carried.name], outputs=[b.fresh("carried_final"), *node.output]
    )
    body = next(a.g for a in result.attribute if a.name == "body")
    inner = b.nested("carry")
    inner_in, inner_out = inner.fresh("in"), inner.fresh("out")
    body.input.insert(2, helper.make_tensor_value_info(inner_in, onnx.TensorProto.FLOAT, []))
    body.output.insert(1, helper.make_tensor_value_info(inner_out, onnx.TensorProto.FLOAT, []))
    inner.Identity(inner_in, outputs=[inner_out])
    body.node.extend(inner.nodes)
    return b.nodes
