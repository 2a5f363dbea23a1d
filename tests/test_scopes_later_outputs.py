"""The element types of the later outputs of multi-output ops (TopK's indices, Dropout's mask,
Unique's counts, MaxPool's indices, Split's parts), followed from the schemas alone
(``lowering.scopes``, :func:`lowering.builder.later_output_rule`), are those onnx inference
gives, inside an If branch, a Loop body and a local function as in a main graph."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from lowering.local_functions import infer_function
from lowering.naming import NameAllocator
from lowering.scopes import Scope

OPSET = 18


def multi_output_nodes(x: str, prefix: str) -> list[onnx.NodeProto]:
    """Multi-output nodes reading ``x`` (float, [4, 6]), their outputs named ``prefix...``."""
    k, ratio, train = f"{prefix}k", f"{prefix}ratio", f"{prefix}train"
    return [
        helper.make_node("Constant", [], [k], value=helper.make_tensor("k", TensorProto.INT64, [1], [2])),
        helper.make_node("Constant", [], [ratio], value=helper.make_tensor("r", TensorProto.FLOAT, [], [0.5])),
        helper.make_node("Constant", [], [train], value=helper.make_tensor("t", TensorProto.BOOL, [], [False])),
        helper.make_node("TopK", [x, k], [f"{prefix}values", f"{prefix}indices"], axis=1),
        helper.make_node("Dropout", [x, ratio, train], [f"{prefix}dropped", f"{prefix}mask"]),
        helper.make_node(
            "Unique", [x], [f"{prefix}unique", f"{prefix}first", f"{prefix}inverse", f"{prefix}counts"], sorted=1
        ),
        helper.make_node("Split", [x], [f"{prefix}left", f"{prefix}right"], axis=1, num_outputs=2),
        helper.make_node("Unsqueeze", [x, f"{prefix}k"], [f"{prefix}x4"]),
        helper.make_node("Unsqueeze", [f"{prefix}x4", f"{prefix}k"], [f"{prefix}x5"]),
        helper.make_node("MaxPool", [f"{prefix}x5"], [f"{prefix}pooled", f"{prefix}argmax"], kernel_shape=[1, 1]),
    ]


LATER_OUTPUTS = ["indices", "mask", "first", "inverse", "counts", "right", "argmax"]


def inferred_types(graph: onnx.GraphProto) -> dict[str, int]:
    infos = [*graph.value_info, *graph.output]
    return {info.name: info.type.tensor_type.elem_type for info in infos if info.type.tensor_type.elem_type}


def test_later_outputs_in_an_if_branch_and_a_loop_body_are_typed_as_inference_types_them():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
    branch_nodes = multi_output_nodes("x", "b_")
    branch = helper.make_graph(
        branch_nodes, "then", [], [helper.make_tensor_value_info("b_indices", TensorProto.INT64, None)]
    )
    other = helper.make_graph(
        [helper.make_node("Constant", [], ["e_out"], value=helper.make_tensor("z", TensorProto.INT64, [1], [0]))],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.INT64, None)],
    )
    body_nodes = multi_output_nodes("x", "l_")
    body = helper.make_graph(
        [*body_nodes, helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("l_counts", TensorProto.INT64, None),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("If", ["cond"], ["picked"], then_branch=branch, else_branch=other),
            helper.make_node("Loop", ["trips", "cond"], ["counted"], body=body),
        ],
        "main",
        [
            x,
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("trips", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("picked", TensorProto.INT64, ["a", "b"]),
            helper.make_tensor_value_info("counted", TensorProto.INT64, ["trips", "n"]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    inferred = onnx.shape_inference.infer_shapes(model).graph
    main = Scope(graph, opset=OPSET, location="main", names=NameAllocator(), twin=lambda: None)
    for node_index, attribute, prefix in ((0, "then_branch", "b_"), (1, "body", "l_")):
        held = next(a.g for a in graph.node[node_index].attribute if a.name == attribute)
        twin = next(a.g for a in inferred.node[node_index].attribute if a.name == attribute)
        scope = main.subgraph(held, node_index, attribute, None, f"main > {attribute}")
        expected = inferred_types(twin)
        for output in LATER_OUTPUTS:
            name = prefix + output
            followed = scope.type_of(name)
            assert followed is not None, name
            assert followed.tensor_type.elem_type == expected[name], name
            assert expected[name] != TensorProto.FLOAT or output in ("right",), name  # most differ from x's type


def test_later_outputs_in_a_local_function_are_typed_as_inference_types_them():
    nodes = multi_output_nodes("fx", "f_")
    function = helper.make_function(
        "local",
        "Multi",
        ["fx"],
        ["f_indices"],
        nodes,
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    call = helper.make_node("Multi", ["x"], ["y"], domain="local")
    graph = helper.make_graph(
        [call],
        "main",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [4, 2])],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)],
        functions=[function],
    )
    onnx.checker.check_model(model)
    input_types = {"fx": helper.make_tensor_type_proto(TensorProto.FLOAT, [4, 6])}
    expected = inferred_types(infer_function(function, input_types, model))
    scope = Scope(function, opset=OPSET, location="local.Multi", names=NameAllocator(), input_types=input_types)
    for output in LATER_OUTPUTS:
        name = "f_" + output
        followed = scope.type_of(name)
        assert followed is not None, name
        assert followed.tensor_type.elem_type == expected[name], name
