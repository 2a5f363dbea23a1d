"""BatchNormalization across version 14 (training_mode): the inference form both ways; training
going down is refused (versions 9-13 leave its statistics unstated)."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, moved, require_types_taken
from lowering.errors import NotLowered

BATCH_NORMALIZATION_14 = (
    "version 14 adds training_mode and outputs running statistics; versions 9-13 train when asked for "
    "more than one output"
)


def _inference_only(node: onnx.NodeProto) -> bool:
    return not attribute_of(node, "training_mode") and not any(node.output[1:])


# Cases: the training-mode cases refused
@adapter(
    ("BatchNormalization",), 14, "down", "inference form", versions=(9, 15), reason=BATCH_NORMALIZATION_14, cases=4
)
def batch_normalization_without_training_mode(node: onnx.NodeProto, context: AdapterContext):
    """BatchNormalization-14/15(X, scale, B, mean, var), inference = BatchNormalization-9(X, scale, B, mean, var).

    ``BatchNormalization-14/15(X, scale, B, mean, var)`` with ``training_mode=0`` and one
    output = ``BatchNormalization-9(X, scale, B, mean, var)``: ``(X - mean) / sqrt(var + epsilon)
    * scale + B`` in both (inputs 3 and 4 were renamed mean → input_mean, var → input_var), where
    version 9 takes the five inputs' types (one type for all, no bfloat16; 15 lets scale, B and
    the statistics differ from X). Training mode is refused: versions 9-13 train when asked for
    five outputs and state neither the variance their running variance uses (population
    variance is stated from 14) nor how Y is normalized, so it has no agreed meaning there."""
    version = schemas.version_in_force("BatchNormalization", context.source_opset)
    where = f"BatchNormalization-{version}"
    if attribute_of(node, "training_mode"):
        raise NotLowered(
            f"{where} in training mode cannot go to opset {context.target_opset}: versions 9-13 train when given "
            "five outputs but do not state the variance of their running statistics (population variance is "
            f"stated from version 14), so training there has no agreed meaning ({BATCH_NORMALIZATION_14})"
        )
    if any(node.output[1:]):
        raise NotLowered(
            f"{where} with training_mode=0 and running statistics outputs (invalid in inference) cannot go to "
            f"opset {context.target_opset}, where those outputs mean training ({BATCH_NORMALIZATION_14})"
        )
    require_types_taken(node, context)
    result = moved(node, dropped=("training_mode",))
    del result.output[1:]
    return [result]


@adapter(("BatchNormalization",), 14, "up", "inference form", versions=(9, 15), cases=4)
def batch_normalization_in_inference(node: onnx.NodeProto, context: AdapterContext):
    """BatchNormalization-9(X, scale, B, mean, var), one output = BatchNormalization-14/15 of the same.

    ``BatchNormalization-9(X, scale, B, mean, var)`` with one output =
    ``BatchNormalization-14/15`` of the same inputs (``training_mode`` defaults to 0). Training
    (five outputs) is left to onnx's converter."""
    if not _inference_only(node):
        return None
    result = onnx.NodeProto()
    result.CopyFrom(node)
    del result.output[1:]
    return [result]
