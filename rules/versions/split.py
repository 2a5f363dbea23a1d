"""Split across version 18: equal parts counted by num_outputs."""

from __future__ import annotations

import onnx

from lowering.adapters import AdapterContext, adapter, known_change, moved


def _no_split_input(node: onnx.NodeProto) -> bool:
    """A Split given no ``split`` input: it cuts into as many equal parts as it has outputs."""
    return len(node.input) < 2 or not node.input[1]


known_change(
    ("Split",),
    18,
    "from version 18 a Split with no split input must give num_outputs (and may then cut unevenly)",
    affects=_no_split_input,
)


@adapter(("Split",), 18, "up", "num_outputs", versions=(13, 18))
def equal_parts_counted(node: onnx.NodeProto, context: AdapterContext):
    """Split-13(x) with n outputs and no split input = Split-18(x, num_outputs=n); with one, Split-18 as it is.

    ``Split-13(x)`` with ``n`` outputs and no ``split`` input = ``Split-18(x, num_outputs=n)``:
    both cut ``x`` into ``n`` equal parts along ``axis`` (a length ``n`` does not divide is an error
    at 13, so the uneven cut 18 allows is never reached)."""
    if not _no_split_input(node):  # sizes given: Split-18 reads them alike, and refuses num_outputs with them
        return [moved(node)]
    return [moved(node, num_outputs=len(node.output))]
