"""Declaring inputs static (lowering/input_shapes.py, ``--input-shape``): the shapes set, what the
model contradicts refused naming the input, and the shape arithmetic the shapes decide folded."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, runs_in_onnxruntime

import lowering
from lowering.cli.main import main
from lowering.input_shapes import dimension_names, dimension_value, parse_input_shape, with_input_shapes


def dynamic_model() -> onnx.ModelProto:
    """y = Reshape(x, [Shape(x)[0], -1]) + 1 on x [batch, 3, 4], and its batch size as an output."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], name="batch", axis=0),
        helper.make_node("Concat", ["batch", "minus_one"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["rows"], name="rows"),
        helper.make_node("Add", ["rows", "one"], ["y"], name="y"),
    ]
    initializers = [
        onnx.numpy_helper.from_array(np.array([0], np.int64), "zero"),
        onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
        onnx.numpy_helper.from_array(np.float32(1), "one"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4])
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 12]),
        helper.make_tensor_value_info("batch", TensorProto.INT64, [1]),
    ]
    return make_model(nodes, [x], outputs, opset=17, initializer=initializers)


@pytest.mark.parametrize("shapes", [{"x": [2, 3, 4]}, {"batch": 2}])
def test_a_static_input_folds_the_shape_arithmetic_and_means_the_same(shapes):
    model = dynamic_model()
    result = lowering.lower_model(model, ops=[], input_shapes=shapes)
    assert [node.op_type for node in result.model.graph.node] == ["Constant", "Constant", "Reshape", "Add"]
    assert [d.dim_value for d in result.model.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 4]
    assert dict(result.report.folded) == {"Shape": 1, "Gather": 1, "Concat": 1}
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for got, want in zip(
        runs_in_onnxruntime(result.model, {"x": x}), runs_in_onnxruntime(model, {"x": x}), strict=True
    ):
        assert got.tobytes() == want.tobytes()
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"  # (the input is left alone)


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ({"x": [2, 3]}, "input 'x' has rank 3, and 2 sizes were given"),
        ({"x": [2, 3, 5]}, "dimension 2 of input 'x' is 4, not 5"),
        ({"z": [1]}, "the model has no input 'z' (inputs: x)"),
        ({"time": 4}, "no input dimension is named 'time'"),
    ],
)
def test_a_shape_the_model_contradicts_is_refused_naming_the_input(shapes, message):
    with pytest.raises(lowering.LoweringError, match="--input-shape") as caught:
        lowering.lower_model(dynamic_model(), ops=[], input_shapes=shapes)
    assert message in str(caught.value)


def test_a_shape_a_reshape_cannot_take_is_refused():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    shape = onnx.numpy_helper.from_array(np.array([5, -1], np.int64), "shape")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    model = make_model([node], [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, None])], opset=17,
                       initializer=[shape])  # fmt: skip
    assert with_input_shapes(model, {"n": 5}).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 5
    with pytest.raises(lowering.LoweringError, match="the model cannot take these shapes"):
        with_input_shapes(model, {"n": 3})  # 12 elements: no [5, -1]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("x:1,3,224,224", ("x", [1, 3, 224, 224])), ("batch=1", ("batch", 1)), ("a:b:2", ("a:b", [2])), ("s:", ("s", []))],
)
def test_input_shape_syntax(text, parsed):
    assert parse_input_shape(text) == parsed


@pytest.mark.parametrize("text", ["x", "x:1,-2", "batch=many"])
def test_input_shape_syntax_errors_say_what_is_wrong(text):
    with pytest.raises(lowering.LoweringError, match=f"--input-shape {text}"):
        parse_input_shape(text)


def test_command_line_with_input_shape_verifies_on_those_shapes(tmp_path, capsys):
    source, target = tmp_path / "dynamic.onnx", tmp_path / "static.onnx"
    onnx.save(dynamic_model(), source)
    status = main([str(source), "-o", str(target), "--ops", "none", "--input-shape", "x:2,3,4", "--verify", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert status == 0 and record["folded"] == {"Concat": 1, "Gather": 1, "Shape": 1}
    assert "Shape" not in {node.op_type for node in onnx.load(target).graph.node}


def test_command_line_fold_takes_one_of_three(tmp_path, capsys):
    source, target = tmp_path / "dynamic.onnx", tmp_path / "kept.onnx"
    onnx.save(dynamic_model(), source)
    assert main([str(source), "--dry-run", "--fold", "some"]) == 2
    assert "invalid choice: 'some'" in capsys.readouterr().err
    assert main([str(source), "-o", str(target), "--ops", "none", "--input-shape", "batch=2", "--fold", "none"]) == 0
    assert [node.op_type for node in onnx.load(target).graph.node] == ["Shape", "Gather", "Concat", "Reshape", "Add"]


def test_the_exporters_dimension_names_in_value_info_take_the_sizes_given():
    """A dynamo export states its values' shapes with its own names (s0, s26): declared static,
    every name an input's dimension had is that size throughout, and the rest of value_info
    holds the sizes inference proves; a runtime that unifies declared shapes (tract) finds no
    stale name beside a number. The model still means the same."""
    from pathlib import Path

    from lowering.input_shapes import with_input_shapes

    corpus = Path(__file__).resolve().parents[1] / "golden" / "corpus"
    model = onnx.load(corpus / "bert_dynamic_dynamo18.onnx")
    named = {d.dim_param for info in model.graph.input for d in info.type.tensor_type.shape.dim if d.dim_param}
    assert named and any(
        d.dim_param in named for info in model.graph.value_info for d in info.type.tensor_type.shape.dim
    )
    data = np.load(corpus / "bert_dynamic_dynamo18.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    static = with_input_shapes(model, {name: list(value.shape) for name, value in feeds.items()})
    stated = [d for info in [*static.graph.value_info, *static.graph.output] for d in info.type.tensor_type.shape.dim]
    assert not [d.dim_param for d in stated if d.dim_param in named]
    assert not [d.dim_param for d in stated if dimension_names(d.dim_param) & named]  # "Min(64, s0)" too
    sizes = {info.name: [d.dim_value for d in info.type.tensor_type.shape.dim] for info in static.graph.value_info}
    assert sizes["slice_1"] == [1, feeds["input_ids"].shape[1]]  # was [1, "Min(64, s0)"]
    assert sum(d.HasField("dim_value") for d in stated) > sum(
        d.HasField("dim_value") for info in [*model.graph.value_info, *model.graph.output]
        for d in info.type.tensor_type.shape.dim
    )  # fmt: skip
    onnx.checker.check_model(static, full_check=True)
    for got, want in zip(runs_in_onnxruntime(static, feeds), runs_in_onnxruntime(model, feeds), strict=True):
        assert got.tobytes() == want.tobytes()


def test_one_dimension_name_given_two_sizes_is_refused():
    """x [N] and y [N] share the name N: given 2 and 4, the shapes contradict the model."""
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N"]) for n in ("x", "y")]
    model = make_model([helper.make_node("Add", ["x", "y"], ["z"])], inputs,
                       [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N"])], opset=17)  # fmt: skip
    with pytest.raises(lowering.LoweringError, match="named 'N', which another input's dimension shares"):
        with_input_shapes(model, {"x": [2], "y": [4]})


@pytest.mark.parametrize(
    ("expression", "value"),
    [("s0", 8), ("Min(64, s0)", 8), ("Max(1, s0 - 9)", 1), ("((s1*s0)//s2)", 5), ("((s0//3)) - 1", 1),
     ("s0 % 3 + -1", 1), ("2*s0 - s1", 14),
     ("floor(s0)", None), ("s0 / 2", None), ("s0**2", None), ("s9 + 1", None), ("s0 - 9", None),
     ("s0 //", None), ("1.5", None), ("s0 // (s1 - 2)", None), ("s0" + "*s0" * 30, None)],
)  # fmt: skip
def test_a_dimension_named_by_arithmetic_on_sizes_takes_its_value(expression, value):
    """+, -, *, //, %, Min and Max on known sizes (s0 = 8, s1 = 2, s2 = 3); anything else, an
    unknown name, a negative size or a division by zero is no value."""
    assert dimension_value(expression, {"s0": 8, "s1": 2, "s2": 3}) == value


@pytest.mark.parametrize("name", ["batch-size", "past_sequence_length + 1", "?", "input.1_dim0"])
def test_a_dimension_named_as_an_input_dimension_takes_its_size_whatever_the_name(name):
    """A name an input's dimension has is that size in value_info and outputs too, whether or not
    it reads as arithmetic (an exporter's "past_sequence_length + 1" is one name here)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [name, 3])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    unknown = helper.make_node("Reshape", ["x", "s"], ["y"])  # (inference cannot prove y's shape: s is fed)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [name, 3])
    model = make_model([unknown], [x, s], [y], opset=17)
    static = with_input_shapes(model, {"x": [2, 3]})
    assert [d.dim_value for d in static.graph.output[0].type.tensor_type.shape.dim] == [2, 3]
