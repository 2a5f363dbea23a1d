"""The one driver over three kinds of patterns: a node of an op to lower, or one that cannot
stay at the target opset, goes through a decomposition, a version adapter or its op's own
function body, and a pattern's output that is not legal at the target is legalized in turn."""

from __future__ import annotations

import dataclasses

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import fast_add_on, slow_but_a_sample  # noqa: E402

import lowering
from lowering.function_bodies import expansion_for
from lowering.verification.runtime import run_onnxruntime

LAYER_NORMALIZATION = expansion_for("", "LayerNormalization")
FLOAT_TOLERANCE = LAYER_NORMALIZATION.tolerance[TensorProto.FLOAT]


def layer_normalization_model(opset: int, *, outputs=("Y",), stash_type: int | None = None) -> onnx.ModelProto:
    attributes = {} if stash_type is None else {"stash_type": stash_type}
    node = helper.make_node("LayerNormalization", ["X", "S", "B"], list(outputs), axis=-1, name="ln", **attributes)
    shapes = {"Y": [2, 3, 8], "Mean": [2, 3, 1], "InvStdDev": [2, 3, 1]}
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3, 8]),
            helper.make_tensor_value_info("S", TensorProto.FLOAT, [8]),
            helper.make_tensor_value_info("B", TensorProto.FLOAT, [8]),
        ],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shapes[name]) for name in outputs],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 3, 8)).astype(np.float32) * 3
    x[0, 0, :4] = [0.0, -0.0, 1e-45, -1e-45]  # signed zeros and subnormals in one row
    return {"X": x, "S": rng.standard_normal(8).astype(np.float32), "B": rng.standard_normal(8).astype(np.float32)}


def assert_within_tolerance(original: onnx.ModelProto, lowered: onnx.ModelProto) -> None:
    onnx.checker.check_model(lowered, full_check=True)
    inputs = feeds()
    wanted = run_onnxruntime(original, inputs)
    got = run_onnxruntime(lowered, inputs)
    assert len(got) == len(wanted)
    for got_output, wanted_output in zip(got, wanted, strict=True):
        assert not FLOAT_TOLERANCE.mismatches(got_output, wanted_output).any()


def op_types(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


def test_a_function_body_whose_ops_are_newer_than_the_target_is_legalized_by_adapters():
    """LayerNormalization at opset 18 expands to the opset-18 body (ReduceMean with an axes
    input); at target 17 the ReduceMean 18 → 13 adapter moves the constant axes into the
    attribute: two kinds of patterns, one after the other."""
    model = layer_normalization_model(18)
    result = lowering.lower_model(model, ops=["LayerNormalization"], target_opset=17)
    assert result.report.rewritten == {"LayerNormalization-17 by its function body": 1}
    assert result.report.adapted == {"ReduceMean-18→13 via axes attribute": 2}
    assert "LayerNormalization" not in op_types(result.model)
    reductions = [node for node in result.model.graph.node if node.op_type == "ReduceMean"]
    assert [list(node.input) for node in reductions] == [[reductions[0].input[0]], [reductions[1].input[0]]]
    assert_within_tolerance(model, result.model)


@pytest.mark.parametrize("target", [11, 13, 16])
def test_an_op_missing_at_the_target_goes_down_by_its_function_body(target):
    """Not asked to be lowered, LayerNormalization-17 has no version below 17 and onnx's
    converter has no adapter: its own function body, moved down op by op, stands for it."""
    model = layer_normalization_model(17)
    result = lowering.lower_model(model, ops=[], target_opset=target)
    assert result.report.rewritten == {"LayerNormalization-17 by its function body": 1}
    assert result.model.opset_import[0].version == target
    assert "LayerNormalization" not in op_types(result.model)
    assert_within_tolerance(model, result.model)


def test_the_statistics_outputs_come_from_the_body_too():
    model = layer_normalization_model(17, outputs=("Y", "Mean", "InvStdDev"))
    lowered = lowering.lower(model, ops=["LayerNormalization"])
    assert "LayerNormalization" not in op_types(lowered)
    assert_within_tolerance(model, lowered)


def test_a_body_that_does_not_apply_leaves_the_node_and_says_why():
    model = layer_normalization_model(17, stash_type=TensorProto.DOUBLE)
    result = lowering.lower_model(model, ops=["LayerNormalization"])
    assert op_types(result.model) == ["LayerNormalization"]
    (remaining,) = result.report.remaining
    assert remaining.op_type == "LayerNormalization" and "stash_type 11" in remaining.reason
    with pytest.raises(lowering.IncompleteLowering, match="stash_type 11"):
        lowering.lower(model, ops=["LayerNormalization"], strict=True)


def test_where_no_pattern_can_take_a_node_down_the_error_names_it():
    model = layer_normalization_model(17, stash_type=TensorProto.DOUBLE)
    with pytest.raises(
        lowering.LoweringError,
        match="node 'ln' \\(LayerNormalization\\): LayerNormalization-17 does not exist at opset 13 .*"
        "nor by its function body: .*stash_type 11",
    ):
        lowering.lower(model, ops=[], target_opset=13)


@slow_but_a_sample()
@pytest.mark.parametrize(
    "options",
    [
        {"ops": ["LayerNormalization"]},
        {"ops": ["LayerNormalization"], "target_opset": 17},
        {"ops": [], "target_opset": 11},
        {"ops": ["LayerNormalization", "IsNaN"], "target_opset": 22},
    ],
)
def test_plain_and_fast_paths_expand_alike(options):
    model = layer_normalization_model(18)
    fast_add_on()
    fast = lowering.lower_model(model, fast=True, **options)
    plain = lowering.lower_model(model, fast=False, **options)
    assert (fast.path, plain.path) == ("fast", "plain")
    assert fast.model.SerializeToString() == plain.model.SerializeToString()


def test_a_target_carries_its_opset_and_the_ops_that_must_not_remain():
    """``Target(opset=N, lowered_ops=...)`` is what ``target_opset=N, ops=...`` ask for."""
    model = layer_normalization_model(18)
    target = dataclasses.replace(lowering.ONNXRUNTIME_CPU, opset=13, lowered_ops=frozenset({"LayerNormalization"}))
    by_target = lowering.lower_model(model, target=target)
    by_options = lowering.lower_model(model, target_opset=13, ops=["LayerNormalization"])
    assert by_target.model.opset_import[0].version == 13
    assert by_target.report.rewritten == {"LayerNormalization-17 by its function body": 1}
    assert by_target.model.SerializeToString() == by_options.model.SerializeToString()


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_function_bodies_inside_if_branches_and_local_functions(element_type):
    """LayerNormalization in an If branch (reading the outer x) and in a local function, on
    float and float16: expanded there with the types the branch and the call give, the result
    passes the full checker and stays within the body's stated tolerance of the original."""
    value = helper.make_tensor_value_info
    shape = [2, 3, 8]
    layer_norm = helper.make_node("LayerNormalization", ["X", "S", "B"], ["Y"], axis=-1, name="ln_in_function")
    function = helper.make_function(
        "local", "Normalize", ["X", "S", "B"], ["Y"], [layer_norm], [helper.make_opsetid("", 17)]
    )
    then_branch = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "s", "b"], ["t"], axis=-1, name="ln_in_branch")],
        "then",
        [],
        [value("t", element_type, shape)],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "else", [], [value("e", element_type, shape)]
    )
    nodes = [
        helper.make_node("If", ["c"], ["branch"], then_branch=then_branch, else_branch=else_branch, name="if"),
        helper.make_node("Normalize", ["x", "s", "b"], ["called"], domain="local", name="call"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [
            value("c", TensorProto.BOOL, []),
            value("x", element_type, shape),
            value("s", element_type, [8]),
            value("b", element_type, [8]),
        ],  # fmt: skip
        [value("branch", element_type, shape), value("called", element_type, shape)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function],
    )
    result = lowering.lower_model(model, ops=["LayerNormalization"])
    assert result.report.rewritten == {"LayerNormalization-17 by its function body": 2}
    lowered = result.model
    onnx.checker.check_model(lowered, full_check=True)
    (then_lowered,) = [a.g for a in lowered.graph.node[0].attribute if a.name == "then_branch"]
    branch_ops = [n.op_type for n in then_lowered.node]
    function_ops = [n.op_type for n in lowered.functions[0].node]
    assert "LayerNormalization" not in branch_ops + function_ops
    assert "ReduceMean" in branch_ops and "ReduceMean" in function_ops
    dtype = np.float32 if element_type == TensorProto.FLOAT else np.float16
    inputs = {key: value.astype(dtype) for key, value in feeds().items()}
    tolerance = LAYER_NORMALIZATION.tolerance[element_type]
    for condition in (True, False):
        run = {"c": np.array(condition), "x": inputs["X"], "s": inputs["S"], "b": inputs["B"]}
        for got, wanted in zip(run_onnxruntime(lowered, run), run_onnxruntime(model, run), strict=True):
            assert got.dtype == wanted.dtype
            assert not tolerance.mismatches(got, wanted).any()
