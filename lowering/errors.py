"""The exception a user of onnx-lower can cause, and the one that says onnx-lower is at fault."""

from __future__ import annotations


class LoweringError(Exception):
    """A problem with the model or the request, stated so the user can fix it.

    The message names the part of the model at fault (graph, node, value) and what to do.
    """


class InternalError(Exception):
    """onnx-lower made something it must not (a lowered model that onnx's checker refuses).

    Never the user's fault: the message names the node and asks for a report; nothing is written.
    """
