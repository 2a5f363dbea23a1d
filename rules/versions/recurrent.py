"""LSTM, GRU and RNN going below version 14 (layout): batch-first tensors moved by Transposes."""

from __future__ import annotations

import onnx

from lowering.conversion.adapters import (
    AdapterContext,
    HeldAttributes,
    adapter,
    attribute_of,
    known_change,
    moved,
    require_types_taken,
)

RECURRENT = ("GRU", "LSTM", "RNN")
RECURRENT_14 = "version 14 adds layout; layout=1 puts the batch axis first in X, initial_h, initial_c, Y, Y_h and Y_c"
known_change(RECURRENT, 14, RECURRENT_14, down_only=True, affects=HeldAttributes.added_at(14, *RECURRENT))

# Input and output positions that layout=1 gives batch first, with the permutation taking the
# layout-0 tensor to the layout-1 one ([1, 0, 2] is its own inverse).
BATCH_FIRST_INPUTS = {0: [1, 0, 2], 5: [1, 0, 2], 6: [1, 0, 2]}  # X, initial_h, initial_c (LSTM)
BATCH_FIRST_OUTPUTS = {0: [2, 0, 1, 3], 1: [1, 0, 2], 2: [1, 0, 2]}  # Y, Y_h, Y_c (LSTM)


# Cases: the batch-first case each (others have no layout); compared in onnx.reference
@adapter(RECURRENT, 14, "down", "batch-first Transposes", versions=(7, 22), cases=2)
def batch_first_transposed(node: onnx.NodeProto, context: AdapterContext):
    """op-14+(X, .., layout=1) = Transpose(op-7(Transpose(X, [1, 0, 2]), ..), [2, 0, 1, 3]); Y_h, Y_c by [1, 0, 2].

    ``layout=1`` takes ``X`` as ``[batch, seq, input]`` and ``initial_h``/``initial_c`` as
    ``[batch, directions, hidden]`` and gives ``Y`` as ``[batch, seq, directions, hidden]`` and
    ``Y_h``/``Y_c`` as ``[batch, directions, hidden]``; layout 0 (the only one before 14) has
    ``[seq, batch, input]``, ``[directions, batch, hidden]`` and ``[seq, directions, batch,
    hidden]``. Transposes only move values, so wrapping the layout-0 node in them is exact.
    ``layout=0`` is dropped; a node without it is left as it is. Types the target's version does
    not take (bfloat16, from 22) are refused."""
    layout = attribute_of(node, "layout")
    if layout is None:
        return None
    require_types_taken(node, context)
    if not layout:
        return [moved(node, dropped=("layout",))]
    b = context.builder(node, hint=node.name or node.op_type)
    inputs, outputs = list(node.input), list(node.output)
    for index, perm in BATCH_FIRST_INPUTS.items():
        if index < len(inputs) and inputs[index]:
            inputs[index] = b.Transpose(inputs[index], perm=perm).name
    batch_first = {i: perm for i, perm in BATCH_FIRST_OUTPUTS.items() if i < len(outputs) and outputs[i]}
    for index in batch_first:
        outputs[index] = b.fresh(f"{node.output[index]}_layout_0")
    b.moved(node, inputs=inputs, outputs=outputs, dropped=("layout",))
    for index, perm in batch_first.items():
        b.Transpose(outputs[index], perm=perm, outputs=[node.output[index]])
    return b.nodes
