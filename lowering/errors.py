"""The exceptions: a pattern declining a node, a problem the user can fix, and onnx-lower at fault."""

from __future__ import annotations


class NotLowered(Exception):
    """Why a pattern does not apply to a node: the one way every pattern declines (a rule, a
    version adapter, a function body's precondition raises it). The driver then tries the next
    pattern, or reports the node with ``reason`` (prefixed with where the node is)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LoweringError(Exception):
    """A problem with the model or the request, stated so the user can fix it.

    The message names the part of the model at fault (graph, node, value) and what to do.
    """


class IncompleteLowering(LoweringError):
    """A strict lowering left ops it was asked to lower; ``remaining`` says which, where and why."""

    def __init__(self, remaining: list) -> None:
        self.remaining = list(remaining)
        shown = "; ".join(map(str, self.remaining[:3]))
        more = f"; and {len(self.remaining) - 3} more" if len(self.remaining) > 3 else ""
        count = len(self.remaining)
        super().__init__(f"strict: {count} requested op{'s' * (count != 1)} left: {shown}{more}")


class ConversionRefused(LoweringError):
    """The model cannot go to the target opset as asked: ``blockers`` lists every node that
    cannot, each with its op, version, graph, node and reason (found in one pass). The message
    is the one blocker's (:meth:`one_said`: where it is, then why), or how many there are and
    the first three."""

    def __init__(self, blockers: list, opset: int | None) -> None:
        self.blockers = list(blockers)
        self.opset = opset
        count = len(self.blockers)
        if count == 1:
            (only,) = self.blockers
            super().__init__(self.one_said(only))
            return
        shown = "; ".join(map(str, self.blockers[:3]))
        more = f"; and {count - 3} more" if count > 3 else ""
        super().__init__(f"{count} nodes cannot go to {self.where}: {shown}{more}")

    def one_said(self, blocker) -> str:
        """The message of one blocker: where it is, then why (a conversion blocker's location
        names the node's op)."""
        return f"{blocker.location}: {blocker.reason}"

    @property
    def where(self) -> str:
        """Where the model cannot go: "opset N", or "the target"."""
        return f"opset {self.opset}" if self.opset is not None else "the target"


class InternalError(Exception):
    """onnx-lower made something it must not (a lowered model that onnx's checker refuses).

    Never the user's fault: the message names the node and asks for a report; nothing is written.
    """
