"""Function bodies whose nodes hold graphs (LinearAttention's Scan, AffineGrid's Ifs): expanded
for a lower opset, the nodes inside those graphs are moved to it as a model's subgraph nodes are,
and the result gives the backend case's expected outputs in onnxruntime; where a node inside
cannot be written at the target, the refusal names it and says why."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from support import slow_but_a_sample  # noqa: E402

import lowering
from lowering.errors import LoweringError
from lowering.graphs import nested_graphs
from lowering.verification.runtime import run_onnxruntime

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_conversion import side_by_side  # noqa: E402
from version_cases import difference, feeds_of, node_cases  # noqa: E402

LINEAR_ATTENTION = (
    "test_linear_attention_linear",
    "test_linear_attention_gated",
    "test_linear_attention_gated_per_head_decay",
    "test_linear_attention_delta",
    "test_linear_attention_gated_delta",
    "test_linear_attention_gated_delta_beta_scalar",
    "test_linear_attention_gated_delta_gqa",
    "test_linear_attention_gated_delta_mqa",
    "test_linear_attention_decode_step",
    "test_linear_attention_prefill_with_past",
    "test_linear_attention_no_past_explicit_zeros",
    "test_linear_attention_explicit_scale",
    "test_linear_attention_fp16",
    "test_linear_attention_linear_t1_no_past",
)
AFFINE_GRID = (
    "test_affine_grid_2d",
    "test_affine_grid_2d_align_corners",
    "test_affine_grid_3d",
    "test_affine_grid_3d_align_corners",
)


def case_named(name: str):
    return next(case for case in node_cases() if case.name == name)


def outputs_differ(model: onnx.ModelProto, case) -> str:
    """Where the model's outputs in onnxruntime first differ from the case's expected ones ("" for nowhere)."""
    onnx.checker.check_model(model, full_check=True)
    outputs = [run_onnxruntime(model, feeds_of(model, inputs)) for inputs, _ in case.data_sets]
    return difference(outputs, case)


def ops_in_subgraphs(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    return [node for graph in nested_graphs(model.graph.node) for node in graph.node]


def every_node_of(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The main graph's nodes and those of every graph they hold."""
    return [*model.graph.node, *ops_in_subgraphs(model)]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17, 21])
@pytest.mark.parametrize("name", LINEAR_ATTENTION)
def test_linear_attention_goes_down_with_its_scan_body_moved(name, target):
    """LinearAttention-27 by its body, whose Scan holds Cast-25, Squeeze-24 and Unsqueeze-24:
    their nodes inside the Scan are moved to the target too (at 11, Squeeze and Unsqueeze take
    their axes as an attribute)."""
    case = case_named(name)
    lowered = lowering.lower(case.model, target_opset=target, ops=[])
    assert outputs_differ(lowered, case) == ""
    assert [node.op_type for node in lowered.graph.node].count("Scan") == 1
    inside = ops_in_subgraphs(lowered)
    assert any(node.op_type == "Cast" for node in inside)
    if target < 13:
        squeezes = [node for node in inside if node.op_type in ("Squeeze", "Unsqueeze")]
        assert squeezes and all(len(node.input) == 1 for node in squeezes)


@slow_but_a_sample()
@pytest.mark.parametrize("target", [13, 17, 21])
@pytest.mark.parametrize("name", [*AFFINE_GRID, *(f"{name}_expanded" for name in AFFINE_GRID)])
def test_affine_grid_goes_down_with_the_splits_in_its_branches(name, target):
    """AffineGrid-20 by its body (and the cases' own expansions), whose If branches hold
    Split-18 with num_outputs: at 13 to 17 Split takes its sizes as an input, counted from the
    input's size where known and from Shape at run time where not (a 3-D grid's 2-D branch,
    never taken, cuts 5 into 4 parts: an error whenever it runs, at 18 and at 13 alike). The
    body's Ifs that choose by the grid's rank, static here, fold: the branch taken takes their
    place; the cases' own expansions keep them."""
    case = case_named(name)
    lowered = lowering.lower(case.model, target_opset=target, ops=[])
    assert outputs_differ(lowered, case) == ""
    splits = [node for node in every_node_of(lowered) if node.op_type == "Split"]
    if target < 18:  # (AffineGrid-20 stays as it is at 21) equal parts: no sizes; else sizes as an input
        assert splits and not any(attribute.name == "num_outputs" for node in splits for attribute in node.attribute)


@slow_but_a_sample()
@pytest.mark.parametrize("name", [*AFFINE_GRID, *(f"{name}_expanded" for name in AFFINE_GRID)])
def test_affine_grid_goes_to_11_with_its_splits_as_slices(name):
    """At 11 Split's sizes are an attribute: the 2-D branch's Split of a value whose size along
    the axis depends on the size input's values, and the 3-D grid's 2-D branch cutting 5 into 4
    parts (an error whenever it runs, never taken), become Slices bounded at run time or by
    constants; the grid is the case's expected one."""
    case = case_named(name)
    lowered = lowering.lower(case.model, target_opset=11, ops=[])
    assert outputs_differ(lowered, case) == ""
    nodes = every_node_of(lowered) if not name.endswith("_expanded") else ops_in_subgraphs(lowered)
    assert "Slice" in [node.op_type for node in nodes] and all(
        attribute.name != "num_outputs" for node in every_node_of(lowered) for attribute in node.attribute
    )


def test_an_op_asked_for_inside_a_bodys_branches_is_lowered_there():
    """AffineGrid and CastLike lowered without a target opset: the CastLike nodes inside the
    body's If branches go by their own bodies as well (before, they were left unreported)."""
    case = case_named("test_affine_grid_2d")
    lowered = lowering.lower(case.model, ops=["AffineGrid", "CastLike"])
    every_op = [node.op_type for node in lowered.graph.node] + [node.op_type for node in ops_in_subgraphs(lowered)]
    assert "AffineGrid" not in every_op and "CastLike" not in every_op
    assert outputs_differ(lowered, case) == ""


def converted_bytes(model: onnx.ModelProto, target: int, fast: bool) -> bytes | str:
    try:
        return lowering.lower(model, target_opset=target, ops=[], fast=fast).SerializeToString()
    except LoweringError as error:
        return str(error)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, target",
    [("test_linear_attention_gated_delta", 11), ("test_affine_grid_3d", 13), ("test_affine_grid_2d", 11)],
)
def test_both_paths_give_the_same_bytes(name, target):
    """The plain path and the fast one agree, alone and with three copies side by side (the
    fast path's kind memo sees the same kind of node again)."""
    model = case_named(name).model
    for subject in (model, side_by_side(model, 3)):
        plain = converted_bytes(subject, target, fast=False)
        assert converted_bytes(subject, target, fast=True) == plain
    assert isinstance(converted_bytes(model, target, fast=False), bytes)


def test_a_negative_last_part_fails_when_it_runs_at_13_as_at_18():
    """Split-18 cutting a size of 5 into 4 parts is an error in onnxruntime; taken to 13 its
    sizes come from Shape at run time, and Split-13 refuses the negative size alike (a model
    that loads, so such a node may sit in a branch never taken)."""
    import numpy as np
    from onnx import TensorProto, helper

    outputs = [f"y{k}" for k in range(4)]
    model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Split", ["x"], outputs, num_outputs=4)],
            "split",
            [helper.make_tensor_value_info("x", TensorProto.INT64, [5])],
            [helper.make_tensor_value_info(name, TensorProto.INT64, [None]) for name in outputs],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    lowered = lowering.lower(model, target_opset=13, ops=[])
    assert [node.op_type for node in lowered.graph.node][-1] == "Split"
    for subject, words in ((model, "negative final split"), (lowered, "must be >= 0")):
        with pytest.raises(Exception, match=words):
            run_onnxruntime(subject, {"x": np.arange(5, dtype=np.int64)})
    # at 11 (sizes an attribute) the parts are Slices, clamped as onnx.reference's Split-18 cuts
    sliced = lowering.lower(model, target_opset=11, ops=[])
    assert [node.op_type for node in sliced.graph.node].count("Slice") == 4
    parts = run_onnxruntime(sliced, {"x": np.arange(5, dtype=np.int64)})
    assert [part.tolist() for part in parts] == [[0, 1], [2, 3], [4], []]
    with pytest.raises(LoweringError, match="negative last part, so it cannot go to opset 9"):
        lowering.lower(model, target_opset=9, ops=[])
