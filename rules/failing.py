"""A lowered model that fails where the op it replaces fails: the checks a rule makes at run time."""

from __future__ import annotations

from onnx import TensorProto

from lowering.registry import Builder, Value


def zero_unless(b: Builder, failed: Value) -> Value:
    """``Gather([0], failed)``: [0] where ``failed`` (a bool, or an int64 count of failures) is
    false or 0, a failure otherwise: the index reads past [0]'s one element. Added to a value on
    the output's path, the check cannot be left out as unread."""
    zero = b.ints([0], "zero")
    index = failed if failed.element_type == TensorProto.INT64 else b.Cast(failed, to=TensorProto.INT64)
    return b.Gather(zero, index)
