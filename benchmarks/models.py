"""The models the benchmarks lower, built in code."""

from __future__ import annotations

import onnx
from onnx import helper


def isnan_chain(links: int, one_name: bool = False) -> onnx.ModelProto:
    """``links`` IsNaN nodes in a chain, three nodes a link: IsNaN, Cast to float, Add.
    ``one_name``: every node is named ``node``, as some exporters leave them."""
    nodes, previous = [], "x"
    for k in range(links):
        names = ["node"] * 3 if one_name else [f"isnan{k}", f"cast{k}", f"add{k}"]
        nodes.append(helper.make_node("IsNaN", [previous], [f"nan{k}"], name=names[0]))
        nodes.append(helper.make_node("Cast", [f"nan{k}"], [f"flag{k}"], name=names[1], to=onnx.TensorProto.FLOAT))
        nodes.append(helper.make_node("Add", [f"flag{k}", previous], [f"sum{k}"], name=names[2]))
        previous = f"sum{k}"
    graph = helper.make_graph(
        nodes,
        "isnan_chain",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info(previous, onnx.TensorProto.FLOAT, ["N"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def isnan_fan_in(width: int) -> onnx.ModelProto:
    """``width`` IsNaN nodes on one input, all feeding one Concat."""
    nodes = [helper.make_node("IsNaN", ["x"], [f"nan{k}"], name=f"isnan{k}") for k in range(width)]
    nodes.append(helper.make_node("Concat", [f"nan{k}" for k in range(width)], ["all"], name="concat", axis=0))
    graph = helper.make_graph(
        nodes,
        "isnan_fan_in",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info("all", onnx.TensorProto.BOOL, ["M"])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def isnan_chain_in_function(links: int) -> onnx.ModelProto:
    """:func:`isnan_chain` as the body of a local function the main graph calls once: a
    rewrite there makes the pass check the lowered model with onnx's checker."""
    chain = isnan_chain(links)
    body = helper.make_function(
        "local", "Chain", ["x"], [chain.graph.output[0].name], list(chain.graph.node), [helper.make_opsetid("", 17)]
    )
    graph = helper.make_graph(
        [helper.make_node("Chain", ["x"], ["y"], domain="local", name="call")],
        "isnan_chain_in_function",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N"])],
    )
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    return helper.make_model(graph, opset_imports=imports, functions=[body], ir_version=8)
