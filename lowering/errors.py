"""The one exception a user of onnx-lower can cause."""

from __future__ import annotations


class LoweringError(Exception):
    """A problem with the model or the request, stated so the user can fix it.

    The message names the part of the model at fault (graph, node, value) and what to do.
    """
