"""A pass's objects are freed when it returns, by reference counting: nothing of it is left in
cycles for Python's collector (whose full collection over a pass of 100k nodes cost the caller
0.3-0.4 s, wherever the next collection fell), on the fast path and the plain one."""

from __future__ import annotations

import gc
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import lowering
from lowering import engine, scopes

EXPORT = Path(__file__).parent.parent / "golden" / "exports" / "gpt_block_dynamo18.onnx"
try:  # (the speed add-on's objects too, where it is there)
    from lowering.fast import FastPath, KindMemo

    PASS_TYPES = (engine.Legalizer, scopes.Scope, FastPath, KindMemo)
except ImportError:
    PASS_TYPES = (engine.Legalizer, scopes.Scope)


def pass_objects_left_in_cycles(work) -> list[str]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        work()
        gc.collect()
        return sorted({type(found).__name__ for found in gc.garbage if isinstance(found, PASS_TYPES)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", [True, False])
@pytest.mark.parametrize("target_opset", [13, 17])
def test_a_conversion_leaves_nothing_of_its_pass_in_cycles(fast_path, target_opset):
    model = onnx.load(EXPORT)
    assert pass_objects_left_in_cycles(lambda: lowering.lower(model, target_opset=target_opset, fast=fast_path)) == []


@pytest.mark.slow
@pytest.mark.parametrize("fast_path", [True, False])
def test_a_pass_in_which_a_rule_declines_leaves_nothing_of_it_in_cycles(fast_path):
    """Col2Im's rule declines an input of unknown rank (the node is left and reported)."""
    nodes = [helper.make_node("Reshape", ["u", "s"], ["r"]), helper.make_node("Col2Im", ["r", "img", "blk"], ["c"])]
    graph = helper.make_graph(
        nodes,
        "m",
        [
            helper.make_tensor_value_info("u", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("s", TensorProto.INT64, ["n"]),
            helper.make_tensor_value_info("img", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("blk", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 1, 1, 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])

    def declined() -> None:
        result = lowering.lower_model(model, ops=["Col2Im"], fast=fast_path)
        assert [op.op_type for op in result.report.remaining] == ["Col2Im"]

    assert pass_objects_left_in_cycles(declined) == []


def test_a_refused_conversion_leaves_nothing_of_its_pass_in_cycles():
    model = onnx.load(EXPORT)

    def refused() -> None:
        with pytest.raises(lowering.LoweringError):
            lowering.lower(model, target_opset=1)

    assert pass_objects_left_in_cycles(refused) == []
