"""Scan across version 9: version 8 scans a batch (axis 0 of every input, with optional
sequence lengths); version 9 has no batch axis."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.adapters import AdapterContext, NodeWriter, adapter, attribute_of, moved
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
    cannot be written without a Loop over the batch: refused."""
    lengths, inputs = (node.input[0] if node.input else ""), list(node.input[1:])
    if lengths:
        raise _refused(node, context, f"it is given sequence lengths ('{lengths}')")
    for name in inputs:
        shape = context.shape_of(name) if name else None
        if not shape or shape[_BATCH_AXIS] != 1:
            said = "unknown" if not shape else f"{shape[_BATCH_AXIS]}"
            raise _refused(node, context, f"the batch of its input '{name}' is {said}, not statically 1")
    w = NodeWriter(node, context)
    squeezed = [_along_batch(w, "Squeeze", name, f"{name}_unbatched", context.target_opset) for name in inputs]
    directions = attribute_of(node, "directions")
    scan = moved(node, dropped=("directions",), **({"scan_input_directions": list(directions)} if directions else {}))
    scan.input[:] = squeezed
    unbatched = [context.fresh(f"{name}_unbatched") if name else "" for name in node.output]
    scan.output[:] = unbatched
    w.nodes.append(scan)
    for inner, outer in zip(unbatched, node.output, strict=True):
        if outer:
            _along_batch(w, "Unsqueeze", inner, outer, context.target_opset, output=outer)
    return w.nodes


def _along_batch(w: NodeWriter, op_type: str, name: str, hint: str, opset: int, output: str | None = None) -> str:
    """Squeeze or Unsqueeze ``name`` along the batch axis: axes as an attribute or, where the
    op's version at ``opset`` takes them as an input, as a constant."""
    takes_attribute = "axes" in schemas.schema_in_force(op_type, opset).attributes
    result = output or w.context.fresh(hint)
    if takes_attribute:
        w.last(op_type, [name], [result], axes=[_BATCH_AXIS])
    else:
        w.last(op_type, [name, w.int64s("batch_axis", [_BATCH_AXIS])], [result])
    return result


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    return NotLowered(
        f"Scan-8 cannot go to opset {context.target_opset}: {SCAN_9}, and {why}, "
        "which only a Loop over the batch could write"
    )
