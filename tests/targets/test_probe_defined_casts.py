"""targets/probe.py defined_casts: a float cast to an integer type is undefined in Cast's spec
where the float is not finite or out of the type's range; those elements of a backend case are
given input 0 and expected output 0, and every other element and case stays as it was."""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from onnx.backend.test.case.test_case import TestCase

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "targets"))

import probe  # noqa: E402
from version_cases import node_cases  # noqa: E402


def made_case(op_type: str, source: int, target: int, x, y, extra_inputs=()) -> TestCase:
    shape = list(x.dims) if isinstance(x, onnx.TensorProto) else x.shape
    inputs = [helper.make_tensor_value_info("x", source, shape)]
    node_inputs = ["x"]
    if op_type == "CastLike":
        inputs.append(helper.make_tensor_value_info("like", target, [0]))
        node_inputs.append("like")
        node = helper.make_node("CastLike", node_inputs, ["y"])
    else:
        node = helper.make_node("Cast", node_inputs, ["y"], to=target)
    graph = helper.make_graph([node], "case", inputs, [helper.make_tensor_value_info("y", target, shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return TestCase(name="test_made", model_name="test_made", url="", model_dir="", model=model,
                    data_sets=[([x, *extra_inputs], [y])], kind="node", rtol=1e-3, atol=1e-7)  # fmt: skip


def test_undefined_elements_of_a_float_to_int8_cast_become_0_in_and_out():
    x = np.array([np.nan, -np.inf, np.inf, -129.0, 128.0, -128.9, 127.9, 2.0, -0.0], np.float32)
    y = np.array([5, 5, 5, 5, 5, -128, 127, 2, 0], np.int8)  # (whatever the case says where undefined)
    ([fed], [expected]) = probe.defined_casts(
        made_case("Cast", onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, x, y)
    ).data_sets[0]
    assert fed.tolist() == [0, 0, 0, 0, 0, x[5], x[6], 2, 0] and fed.dtype == np.float32  # (-128.9 truncates in range)
    assert expected.tolist() == [0, 0, 0, 0, 0, -128, 127, 2, 0] and expected.dtype == np.int8


def test_a_castlike_to_int4_given_as_tensors_keeps_its_form_and_the_like_input():
    x = numpy_helper.from_array(np.array([-9.0, -8.0, 7.0, 8.0], np.float16), name="x")
    y = numpy_helper.from_array(np.array([0, -8, 7, 0], ml_dtypes.int4), name="y")
    like = np.zeros(0, ml_dtypes.int4)
    case = made_case("CastLike", onnx.TensorProto.FLOAT16, onnx.TensorProto.INT4, x, y, extra_inputs=[like])
    (inputs, [expected]) = probe.defined_casts(case).data_sets[0]
    assert isinstance(inputs[0], onnx.TensorProto) and inputs[0].name == "x"
    assert numpy_helper.to_array(inputs[0]).tolist() == [0.0, -8.0, 7.0, 0.0] and inputs[1] is like
    assert isinstance(expected, onnx.TensorProto) and expected.name == "y"
    assert numpy_helper.to_array(expected).astype(np.int8).tolist() == [0, -8, 7, 0]


@pytest.mark.parametrize(
    ("source", "target", "x"),
    [
        (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, np.array([np.nan, 1e30], np.float32)),  # float to float
        (onnx.TensorProto.INT32, onnx.TensorProto.INT8, np.array([300, -7], np.int32)),  # integers wrap, defined
        (onnx.TensorProto.FLOAT, onnx.TensorProto.INT8, np.array([1.0, -128.0], np.float32)),  # all in range
    ],
)
def test_other_casts_stay_as_they_are(source, target, x):
    case = made_case("Cast", source, target, x, np.zeros(x.shape))
    ([fed], [expected]) = probe.defined_casts(case).data_sets[0]
    assert fed is x and expected is case.data_sets[0][1][0]


def test_no_backend_case_casts_a_float_out_of_an_integer_types_range_once_made_defined():
    judged = 0
    # (probe.backend_cases() is each kept case made defined: read them from the kept cases, not collected again)
    for case in map(probe.defined_casts, node_cases()):
        node = probe.main_node(case.model)
        if node is None or node.op_type not in ("Cast", "CastLike"):
            continue
        types = {info.name: info.type.tensor_type.elem_type for info in case.model.graph.input}
        target = case.model.graph.output[0].type.tensor_type.elem_type
        try:
            limits = ml_dtypes.iinfo(helper.tensor_dtype_to_np_dtype(target))
            ml_dtypes.finfo(helper.tensor_dtype_to_np_dtype(types[node.input[0]]))
        except ValueError:
            continue
        for inputs, _ in case.data_sets:
            x = np.asarray(probe.feed(inputs[0])).astype(np.float64)
            assert np.isfinite(x).all() and x.min() >= limits.min and x.max() <= limits.max, case.name
            judged += 1
    assert judged >= 20  # (float and float16 to int4, uint4, int2 and uint2, Cast and CastLike: 24 with onnx 1.23)
