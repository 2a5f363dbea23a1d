"""BitCast-26 below 26 (rules/bitcast.py): a Cast where the bits mean the same values (integers
of one width, bool to an 8-bit integer), every bit pattern compared with numpy's view of the
bits and with onnx.reference's BitCast; refused in our words where no Cast keeps the bits."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from lowering.rules.bitcast import WRAPPING_CAST_OPSET
from onnx import TensorProto, helper
from support import slow_but_a_sample  # noqa: E402

import lowering
from lowering.verification.runtime import run_onnxruntime, run_reference

SAME_WIDTH = [
    (TensorProto.INT8, TensorProto.UINT8),
    (TensorProto.UINT8, TensorProto.INT8),
    (TensorProto.INT16, TensorProto.UINT16),
    (TensorProto.UINT16, TensorProto.INT16),
    (TensorProto.INT32, TensorProto.UINT32),
    (TensorProto.UINT32, TensorProto.INT32),
    (TensorProto.INT64, TensorProto.UINT64),
    (TensorProto.UINT64, TensorProto.INT64),
    (TensorProto.BOOL, TensorProto.UINT8),
    (TensorProto.BOOL, TensorProto.INT8),
    (TensorProto.INT32, TensorProto.INT32),
    (TensorProto.FLOAT, TensorProto.FLOAT),
]


def bitcast_model(source: int, to: int, opset: int = 26) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("BitCast", ["x"], ["y"], to=to)],
        "g",
        [helper.make_tensor_value_info("x", source, [None])],
        [helper.make_tensor_value_info("y", to, [None])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def every_value(element_type: int) -> np.ndarray:
    """Every bit pattern of 8- and 16-bit types; the extremes and their neighbours, 0, ±1 of wider ones."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    if element_type == TensorProto.BOOL:
        return np.array([True, False, True])
    if dtype.kind == "f":
        return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.5, -2.0], dtype=dtype)
    if dtype.itemsize <= 2:
        return np.arange(0, 1 << (8 * dtype.itemsize), dtype=np.int64).astype(f"u{dtype.itemsize}").view(dtype)
    info = np.iinfo(dtype)
    values = [info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1, info.max]
    return np.array(values, dtype=dtype)


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17, 21, 25])
@pytest.mark.parametrize(("source", "to"), SAME_WIDTH)
def test_bitcast_between_types_whose_bits_mean_the_same_is_a_cast(source, to, target):
    """A Cast where it keeps every bit pattern: between integers of one width from opset 13, where
    Cast wraps out of range (before, undefined: refused); bool to an 8-bit integer at any."""
    model = bitcast_model(source, to)
    if target < WRAPPING_CAST_OPSET and source != to and source != TensorProto.BOOL:
        with pytest.raises(lowering.LoweringError, match="Cast wraps an integer out of range from opset 13"):
            lowering.lower_model(model, target_opset=target, ops=[])
        return
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert [n.op_type for n in result.model.graph.node] == (["Identity"] if source == to else ["Cast"])
    x = every_value(source)
    want = (x.astype(np.uint8) if source == TensorProto.BOOL else x).view(helper.tensor_dtype_to_np_dtype(to))
    got = run_onnxruntime(result.model, {"x": x})[0]
    assert got.dtype == want.dtype and np.array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    reference = run_reference(model, {"x": x})[0]
    assert np.array_equal(reference.view(f"u{reference.itemsize}"), want.view(f"u{want.itemsize}"))


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("source", "to"),
    [
        (TensorProto.FLOAT, TensorProto.INT32),
        (TensorProto.INT32, TensorProto.FLOAT),
        (TensorProto.DOUBLE, TensorProto.INT64),
        (TensorProto.UINT8, TensorProto.BOOL),
        (TensorProto.UINT16, TensorProto.FLOAT16),
    ],
)
def test_bitcast_that_no_cast_says_is_refused_in_our_words(source, to):
    with pytest.raises(lowering.LoweringError, match="reinterprets bits no Cast keeps"):
        lowering.lower_model(bitcast_model(source, to), target_opset=17, ops=[])


@pytest.mark.parametrize("where", ["if_branch", "local_function"])
def test_bitcast_inside_a_branch_or_a_local_function_goes_too(where):
    """The rule where the node sits in an If branch or a local function: the converted model
    passes the full check, no BitCast is left anywhere, and every int8 comes back as its bits."""
    bitcast = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.UINT8)
    x_info = helper.make_tensor_value_info("x", TensorProto.INT8, [None])
    y_info = helper.make_tensor_value_info("y", TensorProto.UINT8, [None])
    functions = []
    if where == "if_branch":
        branch = helper.make_graph([bitcast], "then", [], [y_info])
        other = helper.make_graph(
            [helper.make_node("Cast", ["x"], ["z"], to=TensorProto.UINT8)],
            "else",
            [],
            [helper.make_tensor_value_info("z", TensorProto.UINT8, [None])],
        )
        cond = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)]
        inputs = [cond, x_info]
    else:
        functions = [helper.make_function("local", "F", ["x"], ["y"], [bitcast], [helper.make_opsetid("", 26)])]
        nodes = [helper.make_node("F", ["x"], ["y"], domain="local")]
        inputs = [x_info]
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, [y_info]),
        opset_imports=[helper.make_opsetid("", 26), helper.make_opsetid("local", 1)],
        functions=functions,
    )
    converted = lowering.lower(model, target_opset=17, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    assert "BitCast" not in onnx.printer.to_text(converted)
    x = every_value(TensorProto.INT8)
    feeds = {"x": x, **({"c": np.array(True)} if where == "if_branch" else {})}
    (got,) = run_onnxruntime(converted, feeds)
    assert got.dtype == np.uint8 and np.array_equal(got, x.view(np.uint8))
