"""Function-body expansion: the pass's cost per node with bodies built once per kind of node
(the default) and with onnx's body builder called for every node, measured in this one run.

Chains of N LayerNormalization (context-dependent body) and Gelu (context-dependent) nodes,
lowered by their bodies (``ops=[op]``). ``opset 17`` writes LayerNormalization's body at the
model's opset; ``opset 20`` writes it at 18, so its nodes are moved to 20 as well (the driver's
per-node work that the memo does not cover).

    python benchmarks/bench_function_bodies.py [N]
"""

from __future__ import annotations

import sys
import time

import onnx
from onnx import TensorProto, helper

import lowering
from lowering import fast
from lowering.fast import Shortcuts


def chain(op_type: str, count: int, opset: int, **attributes) -> onnx.ModelProto:
    nodes, previous = [], "x"
    extra = {"LayerNormalization": ["scale", "bias"]}.get(op_type, [])
    for index in range(count):
        output = f"v{index}" if index < count - 1 else "y"
        nodes.append(helper.make_node(op_type, [previous, *extra], [output], name=f"n{index}", **attributes))
        previous = output
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])]
    inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, [16]) for name in extra]
    graph = helper.make_graph(
        nodes, "chain", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def per_node_ms(model: onnx.ModelProto, op_type: str, count: int, memoize: bool, runs: int = 2) -> float:
    best = float("inf")
    for _ in range(runs):
        fast.forget_memos()
        start = time.perf_counter()
        lowered = lowering.lower(model, ops=[op_type], fast=Shortcuts(kind_memo=memoize))
        best = min(best, time.perf_counter() - start)
    assert not any(node.op_type == op_type for node in lowered.graph.node)
    return best * 1000 / count


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    cases = [
        ("LayerNormalization", 17, {}),
        ("LayerNormalization", 20, {}),
        ("Gelu", 20, {"approximate": "tanh"}),
    ]
    print(f"{'case':<32} {'built per node':>16} {'built per kind':>16} {'ratio':>7}")
    for op_type, opset, attributes in cases:
        model = chain(op_type, count, opset, **attributes)
        every_node = per_node_ms(model, op_type, count, memoize=False)
        per_kind = per_node_ms(model, op_type, count, memoize=True)
        label = f"{count} x {op_type}, opset {opset}"
        print(f"{label:<32} {every_node:>13.3f} ms {per_kind:>13.3f} ms {every_node / per_kind:>6.2f}x")


if __name__ == "__main__":
    main()
