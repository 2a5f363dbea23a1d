"""BatchNormalization across version 14 (training_mode), in inference form."""

from __future__ import annotations

import onnx

from lowering.adapters import AdapterContext, adapter, attribute_of, moved

BATCH_NORMALIZATION_14 = (
    "version 14 adds training_mode and outputs running statistics; versions 9-13 train when asked for "
    "more than one output"
)


def _inference_only(node: onnx.NodeProto) -> bool:
    return not attribute_of(node, "training_mode") and not any(node.output[1:])


@adapter(("BatchNormalization",), 14, "down", "inference form", versions=(9, 15), reason=BATCH_NORMALIZATION_14)
def batch_normalization_without_training_mode(node: onnx.NodeProto, context: AdapterContext):
    """BatchNormalization-14/15(X, scale, B, mean, var), inference = BatchNormalization-9(X, scale, B, mean, var).

    ``BatchNormalization-14/15(X, scale, B, mean, var)`` with ``training_mode=0`` and one
    output = ``BatchNormalization-9(X, scale, B, mean, var)``: ``(X - mean) / sqrt(var + epsilon)
    * scale + B`` in both (inputs 3 and 4 were renamed mean → input_mean, var → input_var).
    Training mode is left to onnx's converter."""
    if not _inference_only(node):
        return None
    result = moved(node, dropped=("training_mode",))
    del result.output[1:]
    return [result]


@adapter(("BatchNormalization",), 14, "up", "inference form", versions=(9, 15))
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
