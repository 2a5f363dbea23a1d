"""Strings gathered along another axis than the last (rules/gathering.py), where onnxruntime's
Gather keeps each slice's first string and its graph optimizations move a Transpose around a
Gather back there: the kernel's fault measured, then each pattern that gathers strings (Scan
unrolled, Resize in mode nearest, Pad-19's wrap converted down, Compress) giving every string,
with onnxruntime's graph optimizations on and off."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper
from support import make_model

import lowering
from lowering.verification.runtime import run_onnxruntime


def strings(shape) -> np.ndarray:
    return np.array([f"s{k}" for k in range(int(np.prod(shape)))], dtype=object).reshape(shape)


def run_both_ways(model: onnx.ModelProto, feeds: dict) -> list[list]:
    """The model's outputs in onnxruntime with its graph optimizations on (all), and off."""
    outputs = []
    for level in (
        onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL,
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
    ):
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = level
        session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        outputs.append([each.tolist() for each in session.run(None, feeds)])
    return outputs


def test_onnxruntimes_gather_of_strings_keeps_each_slices_first_along_another_axis():
    """Why the patterns gather strings otherwise: if this starts to fail, onnxruntime is fixed."""
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=0)
    inputs = [helper.make_tensor_value_info("x", TensorProto.STRING, [3, 2]),
              helper.make_tensor_value_info("i", TensorProto.INT64, [])]  # fmt: skip
    model = make_model([node], inputs, [helper.make_tensor_value_info("y", TensorProto.STRING, [2])], opset=13)
    (got,) = run_onnxruntime(model, {"x": strings([3, 2]), "i": np.array(1, np.int64)})
    assert got.tolist() == ["s2", ""]


@pytest.mark.parametrize(("shape", "axis"), [([1, 3], 0), ([3, 2], 0), ([2, 3], 1), ([2, 3, 2], 1)])
def test_scan_of_strings_along_any_axis(shape, axis):
    """Scan whose body gives each scanned slice as it is, stacked along axis 0."""
    slice_shape = [n for k, n in enumerate(shape) if k != axis]
    body = helper.make_graph(
        [helper.make_node("Identity", ["slice"], ["out"])], "body",
        [helper.make_tensor_value_info("slice", TensorProto.STRING, slice_shape)],
        [helper.make_tensor_value_info("out", TensorProto.STRING, slice_shape)],
    )  # fmt: skip
    node = helper.make_node("Scan", ["x"], ["y"], body=body, num_scan_inputs=1, scan_input_axes=[axis])
    stacked = [shape[axis], *slice_shape]
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.STRING, shape)],
        [helper.make_tensor_value_info("y", TensorProto.STRING, stacked)],
        opset=16,
    )
    lowered = lowering.lower_model(model, ops=["Scan"], strict=True).model
    onnx.checker.check_model(lowered, full_check=True)
    x = strings(shape)
    want = np.moveaxis(x, axis, 0).tolist()
    assert run_onnxruntime(model, {"x": x})[0].tolist() == want
    assert run_both_ways(lowered, {"x": x}) == [[want], [want]]


def test_resize_in_mode_nearest_of_strings():
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [1, 2, 4, 6])],
        opset=19,
        initializer=[scales],
    )
    lowered = lowering.lower_model(model, ops=["Resize"], strict=True).model
    onnx.checker.check_model(lowered, full_check=True)
    x = strings([1, 2, 2, 2])
    want = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3).tolist()
    assert run_both_ways(lowered, {"x": x}) == [[want], [want]]


@pytest.mark.parametrize("pads", [[1, 0, 0, 0], [2, 1, 1, 3], [0, 0, 3, 0]])
def test_pad_wrap_of_strings_converted_to_18(pads):
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [None, None])],
        opset=19,
        initializer=[onnx.numpy_helper.from_array(np.array(pads, np.int64), "pads")],
    )
    converted = lowering.lower(model, target_opset=18, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    x = strings([2, 3])
    want = np.pad(x, [(pads[0], pads[2]), (pads[1], pads[3])], mode="wrap").tolist()
    assert run_both_ways(converted, {"x": x}) == [[want], [want]]


def test_compress_of_strings_along_the_first_axis():
    node = helper.make_node("Compress", ["x", "condition"], ["y"], axis=0)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.STRING, [4, 3]),
         helper.make_tensor_value_info("condition", TensorProto.BOOL, [4])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [None, 3])],
        opset=13,
    )  # fmt: skip
    lowered = lowering.lower_model(model, ops=["Compress"], strict=True).model
    x, condition = strings([4, 3]), np.array([False, True, True, False])
    want = x[[1, 2]].tolist()
    assert run_onnxruntime(model, {"x": x, "condition": condition})[0].tolist() == want
    assert run_both_ways(lowered, {"x": x, "condition": condition}) == [[want], [want]]


@pytest.mark.parametrize("fed", [False, True], ids=["constant pads", "pads fed"])
def test_pad_wrap_of_strings_along_two_axes_converted_to_18(fed):
    """Each padded axis is gathered in turn: the second reads the first's output, whose type the
    adapter's builder does not carry, so the element type is passed along."""
    pads = np.array([1, 1, 0, 0, 0, 0], np.int64)
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="wrap")
    inputs = [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 2, 2])]
    if fed:
        inputs.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [6]))
    model = make_model(
        [node],
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.STRING, [None] * 3)],
        opset=19,
        initializer=[] if fed else [onnx.numpy_helper.from_array(pads, "pads")],
    )
    converted = lowering.lower(model, target_opset=18, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    x = strings([2, 2, 2])
    feeds = {"x": x, **({"pads": pads} if fed else {})}
    want = np.pad(x, [(1, 0), (1, 0), (0, 0)], mode="wrap").tolist()
    assert run_both_ways(converted, feeds) == [[want], [want]]
