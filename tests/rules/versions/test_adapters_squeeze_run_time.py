"""Squeeze-13 and Unsqueeze-13 with axes known only at run time, going below 13 (axes an
attribute) as a choice by If among the older op with constant axes: bit for bit against the
original in onnxruntime for every choice of axes (negative, unsorted), on data with a 0-sized
dimension; failing at run time where the original does; refused in our words otherwise."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, slow_but_a_sample  # noqa: E402
from version_cases import node_cases, sweep_case

import lowering
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime


def run_time_axes_model(op_type: str, shape, count, output_rank: int) -> onnx.ModelProto:
    """``op_type(x, axes)`` at opset 13, ``axes`` a graph input of ``count`` values."""
    return make_model(
        [helper.make_node(op_type, ["x", "axes"], ["y"], name="node")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape)),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [f"y{k}" for k in range(output_rank)])],
        opset=13,
    )


def lowered(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert any(key.endswith(" via axes attribute") for key in result.report.adapted), result.report.adapted
    return result.model


def every_node(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from every_node(attribute.g)


def leaves(model: onnx.ModelProto, op_type: str) -> list[list[int]]:
    return [
        list(helper.get_attribute_value(n.attribute[0])) if n.attribute else []
        for n in every_node(model.graph)
        if n.op_type == op_type
    ]


def spellings(chosen: tuple[int, ...], positions: int) -> list[list[int]]:
    """``chosen`` as it is, reversed, every axis from the end, and the first from the end."""
    return [list(chosen), list(reversed(chosen)), [k - positions for k in chosen], [chosen[0] - positions, *chosen[1:]]]


def same_bits(got: np.ndarray, want: np.ndarray, where: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.shape} vs {want.shape}"
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), where


def data(shape) -> np.ndarray:
    values = np.random.default_rng(len(shape)).standard_normal(int(np.prod(shape))).astype(np.float32)
    values[:4] = [np.nan, -0.0, np.inf, 1e-45][: values.size]
    return values.reshape(shape)


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 12])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_unsqueeze_13_with_axes_computed_at_run_time_goes_down_bit_for_bit(count, target):
    rank = 2
    positions = rank + count
    model = run_time_axes_model("Unsqueeze", ["a", "b"], count, positions)
    converted = lowered(model, target)
    assert len(leaves(converted, "Unsqueeze")) == comb(positions, count)
    want_run, got_run = OnnxruntimeRunner(model), OnnxruntimeRunner(converted)  # one session each, every feed
    for x in (data((3, 4)), data((0, 2))):
        for chosen in itertools.combinations(range(positions), count):
            for axes in spellings(chosen, positions):
                feeds = {"x": x, "axes": np.array(axes, np.int64)}
                (want,) = want_run(feeds)
                (got,) = got_run(feeds)
                same_bits(got, want, f"Unsqueeze-13 of {x.shape} at {axes} to {target}")


@pytest.mark.parametrize("count", [1, 2])
def test_unsqueeze_13_of_a_scalar_takes_every_position_and_still_checks_the_axes(count):
    model = run_time_axes_model("Unsqueeze", [], count, count)
    converted = lowered(model, 11)
    assert leaves(converted, "Unsqueeze") == [list(range(count))] * 2
    x = np.array(np.nan, np.float32)
    for axes in {1: ([0], [-1]), 2: ([0, 1], [-1, 0], [1, -2])}[count]:
        feeds = {"x": x, "axes": np.array(axes, np.int64)}
        same_bits(run_onnxruntime(converted, feeds)[0], run_onnxruntime(model, feeds)[0], f"at {axes}")
    for axes in ([count], [0] * count if count > 1 else [-2]):
        feeds = {"x": x, "axes": np.array(axes, np.int64)}
        for runs in (model, converted):
            with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error, of its own wording
                run_onnxruntime(runs, feeds)


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 12])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_squeeze_13_with_axes_computed_at_run_time_goes_down_bit_for_bit(count, target):
    rank = 3
    model = run_time_axes_model("Squeeze", ["a", "b", "c"], count, rank - count)
    converted = lowered(model, target)
    # one choice (every dimension) stands in both branches of an If that makes the checks run
    assert len(leaves(converted, "Squeeze")) == max(comb(rank, count), 2)
    want_run, got_run = OnnxruntimeRunner(model), OnnxruntimeRunner(converted)  # one session each, every feed
    for chosen in itertools.combinations(range(rank), count):
        for others in (2, 0):  # the dimensions not squeezed: 0-sized ones too
            x = data([1 if k in chosen else others + k for k in range(rank)])
            for axes in spellings(chosen, rank):
                feeds = {"x": x, "axes": np.array(axes, np.int64)}
                (want,) = want_run(feeds)
                (got,) = got_run(feeds)
                same_bits(got, want, f"Squeeze-13 of {x.shape} at {axes} to {target}")


def test_squeeze_13_skips_the_dimensions_known_not_to_be_1_and_fails_where_one_is_named():
    """x of shape [1, 3, s, 1]: dimension 1 is never squeezed; naming it fails in both."""
    model = run_time_axes_model("Squeeze", [1, 3, "s", 1], 2, 2)
    converted = lowered(model, 11)
    assert sorted(leaves(converted, "Squeeze")) == [[0, 2], [0, 3], [2, 3]]
    for axes in ([0, 3], [-1, 0], [2, -4], [3, 2]):
        feeds = {"x": data((1, 3, 1, 1)), "axes": np.array(axes, np.int64)}
        same_bits(run_onnxruntime(converted, feeds)[0], run_onnxruntime(model, feeds)[0], f"at {axes}")
    for axes in ([0, 1], [-3, 3]):
        feeds = {"x": data((1, 3, 1, 1)), "axes": np.array(axes, np.int64)}
        for runs in (model, converted):
            with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error, of its own wording
                run_onnxruntime(runs, feeds)


def test_squeeze_13_with_empty_axes_at_run_time_squeezes_every_dimension_of_1():
    model = run_time_axes_model("Squeeze", ["a", "b", "c"], 0, 1)
    converted = lowered(model, 11)
    assert [n.op_type for n in converted.graph.node] == ["Squeeze"] and not converted.graph.node[0].attribute
    feeds = {"x": data((1, 3, 1)), "axes": np.zeros(0, np.int64)}
    same_bits(run_onnxruntime(converted, feeds)[0], run_onnxruntime(model, feeds)[0], "no axes")


@slow_but_a_sample()
@pytest.mark.parametrize(
    "op_type, shape, axes, converted_fails_alone",
    [
        ("Unsqueeze", (3, 4), [4], False),  # out of range: both fail
        ("Squeeze", (1, 3, 1), [3, 0], False),
        ("Squeeze", (1, 3, 1), [1, 0], False),  # a dimension that is not 1: both fail
        ("Unsqueeze", (3, 4), [0, -4], False),  # repeated: Unsqueeze-13 fails
        ("Squeeze", (1, 3, 1), [0, -3], True),  # onnxruntime's Squeeze-13 squeezes it once
    ],
)
def test_axes_the_original_refuses_at_run_time_fail_there(op_type, shape, axes, converted_fails_alone):
    rank = len(shape) + (len(axes) if op_type == "Unsqueeze" else -len(axes))
    model = run_time_axes_model(op_type, ["a", "b", "c"][: len(shape)], len(axes), rank)
    converted = lowered(model, 11)
    feeds = {"x": data(shape), "axes": np.array(axes, np.int64)}
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error, of its own wording
        run_onnxruntime(converted, feeds)
    if converted_fails_alone:
        assert run_onnxruntime(model, feeds)[0].shape == (3, 1)
    else:
        with pytest.raises(Exception):  # noqa: B017
            run_onnxruntime(model, feeds)


@slow_but_a_sample()
@pytest.mark.parametrize(
    "op_type, shape, count, target, why",
    [
        ("Squeeze", [1, 1, 1], 1, 10, "choosing among Squeeze nodes at run time needs opset 11"),
        ("Unsqueeze", ["a", "b"], "n", 11, "the length of 'axes' is not known, so neither is the rank of its result"),
        ("Squeeze", [1, 3, 1], 3, 11, "'axes' holds 3 axes, more than the 2 dimensions of its input that may be 1"),
        ("Unsqueeze", ["a"], 0, 11, "its axes are empty, and Unsqueeze-11 takes none"),
    ],
)
def test_axes_computed_at_run_time_that_cannot_go_down_are_refused_in_our_words(op_type, shape, count, target, why):
    model = run_time_axes_model(op_type, shape, count, 1)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=target, ops=[])
    # (Unsqueeze's rule, rules/unsqueeze.py, is tried next and says why it declines too)
    assert str(refused.value).startswith(
        f"graph 'main', node 'node' ({op_type}): {op_type}-13 takes its axes from 'axes', which is computed at run "
        f"time, so it cannot go to opset {target} where axes is an attribute: {why}"
    )


def test_axes_too_many_to_choose_among_go_down_by_unsqueeze_s_rule():
    """Choosing 3 of 8 positions would need 56 Unsqueeze nodes (more than 32): the node goes to
    opset 11 by Unsqueeze's rule instead, a Reshape of x to a shape computed as it runs."""
    model = run_time_axes_model("Unsqueeze", [2, 2, 2, 2, 2], 3, 8)
    result = lowering.lower_model(model, target_opset=11, ops=[])
    converted = result.model
    onnx.checker.check_model(converted, full_check=True)
    assert result.report.rewritten == {"Unsqueeze-13": 1} and "Unsqueeze" not in {
        n.op_type for n in converted.graph.node
    }
    for axes in ([0, 3, 7], [-1, 2, 4], [5, 6, 7]):
        feeds = {"x": data((2, 2, 2, 2, 2)), "axes": np.array(axes, np.int64)}
        same_bits(run_onnxruntime(converted, feeds)[0], run_onnxruntime(model, feeds)[0], f"axes {axes}")


def test_squeeze_with_axes_computed_at_run_time_and_no_known_rank_is_refused_in_our_words():
    model = run_time_axes_model("Squeeze", [6], 1, 1)
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("data", TensorProto.FLOAT, [6]))
    model.graph.input.append(helper.make_tensor_value_info("shape", TensorProto.INT64, ["k"]))
    model.graph.node.insert(0, helper.make_node("Reshape", ["data", "shape"], ["x"], name="reshape"))
    with pytest.raises(lowering.LoweringError, match="the rank or type of its input 'x' is not known"):
        lowering.lower(model, target_opset=11, ops=[])


BACKEND = ("test_squeeze", "test_squeeze_negative_axes") + tuple(
    f"test_unsqueeze_{name}"
    for name in ("axis_0", "axis_1", "axis_2", "two_axes", "three_axes", "unsorted_axes", "negative_axes")
)


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 12])
def test_backend_cases_with_axes_given_at_run_time_go_down(target):
    cases = [case for case in node_cases() if case.name in BACKEND]
    assert len(cases) == len(BACKEND)
    for case in cases:
        outcome = sweep_case(case, target)
        assert outcome.ours == "converts" and not outcome.ours_wrong, (case.name, outcome.detail)


def test_a_result_stated_of_another_rank_than_the_axes_give_is_refused_in_our_words():
    """Squeeze-13 stated to give rank 2 from a rank-3 input and two axes: the axes repeat one
    (onnxruntime squeezes it once), which no choice of two positions answers."""
    model = run_time_axes_model("Squeeze", [1, "d", 1], 2, 2)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=11, ops=[])
    assert str(refused.value).endswith(
        "Squeeze-13 takes its axes from 'axes', which is computed at run time, so it cannot go to opset 11 where "
        "axes is an attribute: its result is stated to be of rank 2, not the 3 - 2 its axes give: they repeat one"
    )
