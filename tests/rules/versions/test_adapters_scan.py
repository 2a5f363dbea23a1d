"""Scan-8 (a batch axis, sequence lengths) going up to version 9 and later: a batch of one
without sequence lengths is Scan-9 on the unbatched inputs; a larger batch is unrolled by the
rule; sequence lengths are refused in our words (issue 13)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, slow_but_a_sample  # noqa: E402

import lowering
from lowering.verification.runtime import run_onnxruntime


def _body() -> onnx.GraphProto:
    """state + x: the new state, and the state scanned out."""
    return helper.make_graph(
        [helper.make_node("Add", ["state", "x"], ["next"]), helper.make_node("Identity", ["next"], ["out"])],
        "body",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("state", "x")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("next", "out")],
    )


def scan_8(batch: int, lengths: bool = False, directions: list[int] | None = None) -> onnx.ModelProto:
    attributes = {"body": _body(), "num_scan_inputs": 1}
    if directions is not None:
        attributes["directions"] = directions
    inputs = [helper.make_tensor_value_info("initial", TensorProto.FLOAT, [batch, 2]),
              helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 2])]  # fmt: skip
    if lengths:
        inputs.append(helper.make_tensor_value_info("lengths", TensorProto.INT64, [batch]))
    return make_model(
        [
            helper.make_node(
                "Scan", ["lengths" if lengths else "", "initial", "x"], ["y", "z"], name="scan", **attributes
            )
        ],
        inputs,
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 2]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 3, 2]),
        ],  # fmt: skip
        opset=8,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("directions", [None, [0], [1]])
@pytest.mark.parametrize("target", [9, 11, 13, 17, 21])
def test_a_batch_of_one_goes_up_as_scan_9_on_unbatched_inputs(target, directions):
    model = scan_8(1, directions=directions)
    converted = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    scan = next(n for n in converted.graph.node if n.op_type == "Scan")
    assert [a.name for a in scan.attribute if "directions" in a.name] == (
        [] if directions is None else ["scan_input_directions"]
    )
    rng = np.random.default_rng(target)
    feeds = {"initial": rng.standard_normal((1, 2)).astype(np.float32),
             "x": rng.standard_normal((1, 3, 2)).astype(np.float32)}  # fmt: skip
    x = feeds["x"][0][::-1] if directions == [1] else feeds["x"][0]
    states, state = [], feeds["initial"][0]
    for row in x:  # the body's additions in order, in float32
        state = state + row
        states.append(state)
    states = np.array(states)
    y, z = run_onnxruntime(converted, feeds)
    np.testing.assert_array_equal(y, states[-1:])
    np.testing.assert_array_equal(z, states[None])


def test_sequence_lengths_are_refused_in_our_words():
    with pytest.raises(lowering.LoweringError) as raised:
        lowering.lower(scan_8(1, lengths=True), target_opset=11, ops=[])
    message = str(raised.value)
    assert "Scan-8 cannot go to opset 11: version 9 drops the batch axis" in message
    assert "it is given sequence lengths ('lengths')" in message and "nor by its rule" in message


def test_a_batch_of_two_goes_up_unrolled_by_the_rule():
    """Scan-9 has no batch axis: a batch of two goes to opset 11 unrolled, batch by batch
    (rules/scan.py), the bits of onnxruntime's Scan-8."""
    model = scan_8(2, directions=[1])
    converted = lowering.lower(model, target_opset=11, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    assert "Scan" not in {n.op_type for n in converted.graph.node}
    rng = np.random.default_rng(2)
    feeds = {"initial": rng.standard_normal((2, 2)).astype(np.float32),
             "x": rng.standard_normal((2, 3, 2)).astype(np.float32)}  # fmt: skip
    got, want = run_onnxruntime(converted, feeds), run_onnxruntime(model, feeds)
    assert [a.tobytes() for a in got] == [b.tobytes() for b in want]
