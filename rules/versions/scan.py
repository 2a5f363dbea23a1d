"""Scan across version 9: version 8 scans a batch (axis 0 of every input, with optional
sequence lengths); version 9 has no batch axis."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of
from lowering.errors import NotLowered

SCAN_9 = "version 9 drops the batch axis and the sequence_lens input of version 8"
_BATCH_AXIS = 0


# Cases: test_scan_sum (batch 1, the only Scan-8 case)
@adapter(
    ("Scan",), 9, "up", "batch of one dropped", versions=(8, schemas.op_versions("Scan")[-1]), reason=SCAN_9, cases=1
)
def scan_batch_of_one_dropped(node: onnx.NodeProto, context: AdapterContext):
    """Scan-8(no sequence_lens, inputs of batch 1) = Unsqueeze(Scan-9(Squeeze(inputs, [0])), [0]).

    Scan-8 runs its body once per batch element over that element's states and sequences; with a
    batch of one that is Scan-9 on the inputs without their batch axis, each output given it back
    (final states [1, ...], scan outputs [1, sequence, ...]). The body is the same; ``directions``
    becomes ``scan_input_directions``. Sequence lengths, and a batch that is not statically 1,
    cannot be written without a Loop over the batch: refused here (Scan's rule unrolls a known
    batch, sequence by sequence: rules/scan.py)."""
    lengths, inputs = (node.input[0] if node.input else ""), list(node.input[1:])
    if lengths:
        raise _refused(node, context, f"it is given sequence lengths ('{lengths}')")
    for name in inputs:
        shape = context.shape_of(name) if name else None
        if not shape or shape[_BATCH_AXIS] != 1:
            said = "unknown" if not shape else f"{shape[_BATCH_AXIS]}"
            raise _refused(node, context, f"the batch of its input '{name}' is {said}, not statically 1")
    b = context.builder(node)
    squeezed = [b.over_axes("Squeeze", name, [_BATCH_AXIS]).name for name in inputs]
    directions = attribute_of(node, "directions")
    unbatched = [b.fresh(f"{name}_unbatched") if name else "" for name in node.output]
    b.moved(
        node,
        inputs=squeezed,
        outputs=unbatched,
        dropped=("directions",),
        **({"scan_input_directions": list(directions)} if directions else {}),
    )
    for inner, outer in zip(unbatched, node.output, strict=True):
        if outer:
            b.over_axes("Unsqueeze", inner, [_BATCH_AXIS], outputs=[outer])
    return b.nodes


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    return NotLowered(
        f"Scan-8 cannot go to opset {context.target_opset}: {SCAN_9}, and {why}, "
        "which only a Loop over the batch could write"
    )
