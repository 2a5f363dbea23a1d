"""Dropout going below version 12 in inference: a copy of its input, and a mask of all true."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, constant_array
from lowering.errors import NotLowered

DROPOUT_12 = (
    "version 12 takes ratio and training_mode as inputs and states that in inference the mask is all true; "
    "versions 7-10 leave training to the runtime, and their mask in inference is all false in onnxruntime "
    "and all true in onnx.reference"
)


def _scalar(node: onnx.NodeProto, index: int, context: AdapterContext):
    """Input ``index`` as a Python scalar: None where it is absent, ``...`` where it is not a
    constant of one value."""
    if index >= len(node.input) or not node.input[index]:
        return None
    values = constant_array(context, node.input[index])
    return values[0].item() if values is not None and values.size == 1 else ...


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    version = schemas.version_in_force("Dropout", context.source_opset)
    return NotLowered(f"Dropout-{version} {why}, so it cannot go to opset {context.target_opset} ({DROPOUT_12})")


# Cases: training with a ratio but 0, and the mask below opset 9, refused; the backend's Dropout-7/10 cases
# reach 12+ as Identity (dropout_in_inference_as_identity_going_up), not as Dropouts to take down
@adapter(("Dropout",), 12, "down", "Identity", versions=(1, 22), reason=DROPOUT_12, cases=9)
def dropout_in_inference_as_identity(node: onnx.NodeProto, context: AdapterContext):
    """Dropout-12+(x, ratio?, training_mode false or absent) = Identity(x), mask = ConstantOfShape(Shape(x), true).

    ``Dropout-12/13/22(x, ratio?, training_mode?)`` with ``training_mode`` absent or a constant
    false ignores ``ratio`` and copies ``x`` (the mask, where read, is all true); so does a
    constant true ``training_mode`` with a constant ``ratio`` of 0 ("the output would be a simple
    copy of the input"). That is ``Identity(x)``, and ``ConstantOfShape(Shape(x), value=true)``
    for the mask (from opset 9), not Dropout-7/10, whose mask in inference is all false in
    onnxruntime. Training with another ratio is random, and a training_mode computed at run time
    cannot be told: refused."""
    training = _scalar(node, 2, context)
    if training is ...:
        raise _refused(node, context, f"takes training_mode from '{node.input[2]}', which is computed at run time")
    if training:
        ratio = _scalar(node, 1, context)
        if ratio != 0:  # absent (0.5), computed at run time (...) or another constant
            if ratio is None:
                said = "the default ratio 0.5"
            elif ratio is ...:
                said = f"a ratio computed at run time ('{node.input[1]}')"
            else:
                said = f"ratio {ratio}"
            raise _refused(node, context, f"drops values at random in training mode with {said}")
    mask_given = len(node.output) >= 2 and bool(node.output[1])
    if mask_given and schemas.version_in_force("ConstantOfShape", context.target_opset) is None:
        first = schemas.op_versions("ConstantOfShape")[0]
        raise _refused(node, context, f"gives a mask of all true, which needs ConstantOfShape (from opset {first})")
    b = context.builder(node)
    b.Identity(node.input[0], outputs=[node.output[0]])
    if mask_given:
        b.ConstantOfShape(b.Shape(node.input[0]), value=b.scalar_tensor(True), outputs=[node.output[1]])
    return b.nodes


# Cases: the explicit cases, from 10 and from 7
@adapter(("Dropout",), 12, "up", "Identity", versions=(7, 22), cases=6)
def dropout_in_inference_as_identity_going_up(node: onnx.NodeProto, context: AdapterContext):
    """Dropout-7/10(x, ratio=r) = Identity(x), where its mask is not given; a given mask is refused.

    Versions 7–10 run as the runtime runs them, in inference a copy of ``x`` (onnxruntime,
    onnx.reference), which is ``Identity(x)`` at every opset, as the step down makes Dropout-12+
    in inference. Their mask in inference is left to the runtime (all false in onnxruntime, all
    true in onnx.reference), while version 12 states it is all true: a node whose mask is given
    has no agreed meaning there, and is refused."""
    if len(node.output) >= 2 and node.output[1]:
        raise _refused(node, context, f"gives its mask '{node.output[1]}', which versions 7-10 leave to the runtime")
    b = context.builder(node)
    b.Identity(node.input[0], outputs=[node.output[0]])
    return b.nodes
