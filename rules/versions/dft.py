"""DFT across version 20: the axis as an optional input (default -2) against an attribute
(default 1)."""

from __future__ import annotations

import onnx

from lowering import floats, schemas
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, moved
from lowering.errors import NotLowered

DFT_20 = "version 20 takes the axis as an optional input (default -2); version 17 as an attribute (default 1)"
_AXIS_INPUT = [formal.name for formal in schemas.schema_in_force("DFT", 20).inputs].index("axis")
DEFAULT_AXIS_17 = schemas.schema_in_force("DFT", 17).attributes["axis"].default_value.i
DEFAULT_AXIS_20 = -2  # an input's default: stated in DFT-20's text alone, not in onnx.defs


# Cases: the 7 explicit cases x 2 pairs (the backend's feed the axis as an input)
@adapter(("DFT",), 20, "down", "axis attribute", versions=(17, 20), reason=DFT_20, cases=14)
def dft_axis_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """DFT-20(x, n, Constant(a)) = DFT-17(x, n, axis=a); no axis input = DFT-17(x, n, axis=-2).

    Both versions count a negative axis from the back and take the same range of axes; only
    where the axis comes from and its default differ. An axis computed at run time cannot become
    an attribute: refused."""
    axis = DEFAULT_AXIS_20
    if len(node.input) > _AXIS_INPUT and node.input[_AXIS_INPUT]:
        tensor = context.constant_of(node.input[_AXIS_INPUT])
        if tensor is None:
            raise NotLowered(
                f"DFT-20 takes its axis from '{node.input[_AXIS_INPUT]}', which is computed at "
                f"run time, so it cannot go to opset {context.target_opset} where axis is an attribute"
            )
        (axis,) = floats.array_of(tensor).reshape(-1).tolist()
    result = moved(node, axis=int(axis))
    del result.input[_AXIS_INPUT:]
    while result.input and not result.input[-1]:
        del result.input[-1]
    return [result]


# Cases: the explicit ones and the DFT-17 backend cases (opset 19), to 20 and up
@adapter(("DFT",), 20, "up", "axis input", versions=(17, 20), cases=14)
def dft_axis_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """DFT-17(x, n, axis=a) = DFT-20(x, n, Constant(a)); no attribute = DFT-20(x, n, Constant(1)).

    DFT-17's default axis (1) is not DFT-20's (-2), so the axis is always written."""
    axis = attribute_of(node, "axis")
    axis = DEFAULT_AXIS_17 if axis is None else axis
    b = context.builder(node)
    axis_input = b.scalar(axis, onnx.TensorProto.INT64, "axis")  # (DFT-20's axis is a scalar)
    inputs = [*node.input[:_AXIS_INPUT], *[""] * (_AXIS_INPUT - len(node.input)), axis_input.name]
    b.moved(node, inputs=inputs, dropped=("axis",))
    return b.nodes
