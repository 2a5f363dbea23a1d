"""The Builder every pattern writes nodes with: an op the target lowers that a pattern emits is
lowered in turn, or, written to outputs the pattern names, declined with why."""

from __future__ import annotations

import dataclasses

import pytest
from onnx import TensorProto

from lowering.builder import Builder
from lowering.naming import NameAllocator
from lowering.registry import NotLowered, Value, rule_for
from lowering.targets import DEFAULT_TARGET


def builder(lowered: set[str]) -> Builder:
    target = dataclasses.replace(DEFAULT_TARGET, lowered_ops=frozenset(lowered))
    return Builder(opset=17, target=target, names=NameAllocator(), constants=None, name_hint="t",
                   rule_for=lambda op_type: rule_for("", op_type))  # fmt: skip


def test_an_op_to_be_lowered_written_to_named_outputs_is_declined_saying_why():
    """TopK, which a rule lowers, written to outputs a pattern names cannot be lowered in turn (a
    rule's expansion writes its own values); Loop, which no rule lowers, says so; an op not to be
    lowered is written to the outputs named."""
    x, k = Value("x", TensorProto.FLOAT), Value("k", TensorProto.INT64)
    with pytest.raises(NotLowered, match="its expansion holds TopK, which is to be lowered too, written to outputs"):
        builder({"TopK"}).op("TopK", x, k, outputs=["values", "indices"], axis=0)
    trips, condition = Value("n", TensorProto.INT64), Value("c", TensorProto.BOOL)
    with pytest.raises(
        NotLowered, match="its expansion holds Loop, which is to be lowered too, and no rule lowers Loop-16"
    ):
        builder({"Loop"}).op("Loop", trips, condition, outputs=["y"])
    kept = builder({"Loop"})
    kept.op("TopK", x, k, outputs=["values", "indices"], axis=0)
    assert [(n.op_type, list(n.output)) for n in kept.nodes] == [("TopK", ["values", "indices"])]
