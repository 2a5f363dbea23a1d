"""Forms a target chooses (lowering/target_forms.py): Reshape's allowzero=1 dropped where its
constant shape holds no 0 and the runtime gets the allowzero=1 form wrong, the result meaning
the same bit for bit; kept where the shape holds a 0 or is not a constant."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lowering
from lowering.runtime_profiles import profile_from_data
from lowering.target_lowering import TargetRefused, check_model
from lowering.verification.runtime import run_onnxruntime

ALLOWZERO_CASE = "test_reshape_allowzero_reordered#constant"  # (allowzero=1, its shape holds a 0)
PLAIN_CASE = "test_reshape_reordered_all_dims#constant"  # (allowzero=0)


def _profile():
    """A runtime that gets the allowzero=1 case wrong and the allowzero=0 one right (OpenVINO 2024.6)."""
    return profile_from_data({
        "name": "allowzero-wrong", "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [21],
        "cases": {name: {"op": "Reshape", "version": 21, "type": "FLOAT", "verdict": verdict}
                  for name, verdict in [(ALLOWZERO_CASE, "wrong"), (PLAIN_CASE, "right")]},
    })  # fmt: skip


def _model(shape: list[int] | None, allowzero: int = 1) -> onnx.ModelProto:
    """x (2, 3, 4) reshaped by a constant ``shape``, or (None) x (N, 3, 4) by its own shape."""
    nodes, initializers = [], []
    if shape is None:
        nodes.append(helper.make_node("Shape", ["x"], ["shape"]))
    else:
        initializers.append(numpy_helper.from_array(np.array(shape, np.int64), "shape"))
    nodes.append(helper.make_node("Reshape", ["x", "shape"], ["y"], name="view", allowzero=allowzero))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N" if shape is None else 2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * (3 if shape is None else len(shape)))],
        initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _allowzero(model: onnx.ModelProto) -> list[int]:
    return [
        next((a.i for a in n.attribute if a.name == "allowzero"), 0) for n in model.graph.node if n.op_type == "Reshape"
    ]


def test_allowzero_is_dropped_where_the_constant_shape_holds_no_zero_and_the_model_means_the_same():
    model = _model([4, 6])
    result = lowering.lower_model(model, target=_profile())
    assert _allowzero(result.model) == [0] and _allowzero(model) == [1]  # (the caller's model untouched)
    assert result.report.forms == {"Reshape allowzero=1 -> 0 (its constant shape holds no 0)": 1}
    assert any(line.startswith("chose 1 x Reshape allowzero=1 -> 0") for line in result.report.lines())
    onnx.checker.check_model(result.model, full_check=True)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.tobytes() == want.tobytes() and got.shape == want.shape == (4, 6)


@pytest.mark.parametrize("shape", [[0, 6], None], ids=["a zero in the shape", "a shape computed at run time"])
def test_allowzero_is_kept_where_it_may_change_something_and_the_node_refused(shape):
    with pytest.raises(TargetRefused, match="node 'view'.*allowzero=1"):
        lowering.lower_model(_model(shape), target=_profile())


def test_a_form_the_runtime_takes_already_is_left_as_it_is():
    result = lowering.lower_model(_model([4, 6], allowzero=0), target=_profile())
    assert _allowzero(result.model) == [0] and not result.report.forms


def test_check_names_the_form_target_would_choose():
    [finding] = check_model(_model([4, 6]), _profile())
    assert finding.blocks and "--target chooses the form Reshape allowzero=1 -> 0" in str(finding)
    [finding] = check_model(_model([0, 6]), _profile())
    assert finding.blocks and "no pattern lowers it" in str(finding)
