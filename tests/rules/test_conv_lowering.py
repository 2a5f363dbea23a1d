"""Conv lowered by its rule (rules/conv.py): the backend cases against their expected outputs;
random inputs and weights (weights fed or constant, with groups, strides, dilations, pads,
auto_pad, bias, 1-D to 3-D, infinities and NaN among X) within the rule's tolerance of
onnxruntime's kernel (float) and of onnx.reference's (float64 rounded once: double, float16,
bfloat16);
inside If branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from support import assert_within_stated, make_model, nested_forms, op_type_set, slow_but_a_sample, special_normal
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime

BACKEND_CASES = node_cases_of("Conv")
CONV_TOLERANCE = rule_for("", "Conv").tolerance


def conv_model(x_shape, w_shape, element_type=TensorProto.FLOAT, bias=True, weights=None, opset=11, **attributes):
    """``Conv(x, w[, b])``: W fed, or the constant ``weights``; the output's shape left open."""
    inputs = [helper.make_tensor_value_info("x", element_type, list(x_shape))]
    nodes = []
    if weights is None:
        inputs.append(helper.make_tensor_value_info("w", element_type, list(w_shape)))
    else:
        nodes.append(helper.make_node("Constant", [], ["w"], value=onnx.numpy_helper.from_array(weights, "w")))
    names = ["x", "w"]
    if bias:
        inputs.append(helper.make_tensor_value_info("b", element_type, [w_shape[0]]))
        names.append("b")
    nodes.append(helper.make_node("Conv", names, ["y"], name="conv", **attributes))
    outputs = [helper.make_tensor_value_info("y", element_type, [f"y{d}" for d in range(len(x_shape))])]
    return make_model(nodes, inputs, outputs, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["Conv"])
    assert result.report.complete, result.report.lines()
    assert "Conv" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def test_the_rule_states_its_tolerance_for_every_float_type():
    assert set(CONV_TOLERANCE) == {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 6


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        assert_within_stated(CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], expected[0], name)


# (X's shape, W's shape, attributes)
FORMS = [
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((1, 4, 9, 8), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1]}),
    ((2, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "dilations": [2, 1], "pads": [2, 1, 2, 1]}),
    ((1, 2, 9, 7), (3, 2, 3, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}),
    ((1, 2, 8, 7), (3, 2, 2, 3), {"auto_pad": "SAME_LOWER", "strides": [3, 2]}),
    ((1, 2, 9, 9), (2, 2, 3, 3), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((3, 4, 11), (5, 4, 4), {"strides": [2], "pads": [3, 1], "dilations": [2]}),
    ((1, 2, 4, 5, 6), (4, 1, 2, 3, 2), {"group": 2, "pads": [1, 0, 1, 0, 1, 1]}),
    ((2, 3, 5, 5), (4, 3, 5, 5), {"pads": [4, 4, 4, 4], "strides": [3, 3]}),
    ((1, 1, 1, 1), (1, 1, 1, 1), {}),
]


def _ids(forms):
    return [f"{x}-{w}-{attributes}" for x, w, attributes in forms]


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("weights", ["fed", "constant"])
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
def test_random_inputs_against_onnxruntime(form, weights):
    x_shape, w_shape, attributes = form
    rng = np.random.default_rng(7)
    w = rng.standard_normal(w_shape).astype(np.float32)
    original = conv_model(x_shape, w_shape, weights=w if weights == "constant" else None, **attributes)
    model = lowered(original)
    for draw in range(3):
        x = special_normal(x_shape, rng, np.float32) if draw else rng.standard_normal(x_shape).astype(np.float32)
        feeds = {"x": x, "b": rng.standard_normal(w_shape[0]).astype(np.float32)}
        if weights == "fed":
            feeds["w"] = w
        want = run_onnxruntime(original, feeds)[0]
        assert_within_stated(CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], want, f"draw {draw}")


OTHER_TYPES = [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16]


@pytest.mark.parametrize("element_type", OTHER_TYPES, ids=TensorProto.DataType.Name)
@pytest.mark.parametrize("form", FORMS[:8], ids=_ids(FORMS[:8]))
def test_other_types_against_the_reference(form, element_type):
    """double, float16 and bfloat16 (Conv-22; no onnxruntime kernel: computed in float32) against
    onnx.reference's Conv computed in float64 and rounded once."""
    x_shape, w_shape, attributes = form
    dtype = floats.numpy_dtype(element_type)
    rng = np.random.default_rng(12)
    opset = 22 if element_type == TensorProto.BFLOAT16 else 11
    original = conv_model(x_shape, w_shape, element_type, opset=opset, **attributes)
    model = lowered(original)
    wide = ReferenceEvaluator(conv_model(x_shape, w_shape, TensorProto.DOUBLE, **attributes))
    feeds = {name: rng.standard_normal(shape).astype(dtype) for name, shape in
             (("x", x_shape), ("w", w_shape), ("b", (w_shape[0],)))}  # fmt: skip
    want = wide.run(None, {name: value.astype(np.float64) for name, value in feeds.items()})[0].astype(dtype)
    assert_within_stated(
        CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], want, TensorProto.DataType.Name(element_type)
    )


def test_no_bias_and_the_kernel_from_w():
    rng = np.random.default_rng(3)
    original = conv_model((2, 3, 6, 6), (2, 3, 2, 2), bias=False, strides=[2, 2])
    model = lowered(original)
    feeds = {"x": rng.standard_normal((2, 3, 6, 6)).astype(np.float32),
             "w": rng.standard_normal((2, 3, 2, 2)).astype(np.float32)}  # fmt: skip
    assert_within_stated(CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0], "")


def test_bias_not_shaped_m_refused():
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5]),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, [3, 2, 3, 3]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 3])]  # fmt: skip
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"])
    model = make_model([node], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 3, 3])], opset=11)
    result = lowering.lower_model(model, ops=["Conv"])
    assert "Conv" in op_type_set(result.model)
    assert "not [3] (M)" in " ".join(result.report.lines())


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize(("size", "kernel", "stride"), [(7, 1, 4), (56, 1, 2), (9, 2, 4), (5, 1, 3)], ids=str)
def test_same_padding_less_than_nothing_as_onnxruntime(size, kernel, stride, auto_pad):
    """SAME where ``t = (⌈d/s⌉ - 1)·s + kernel - d`` is -1 or -2: onnxruntime pads nothing, its
    last window stops short of X's end; below -2 (size 8, stride 4; size 5, stride 5) it starts
    its windows elsewhere (measured): refused."""
    rng = np.random.default_rng(size)
    original = conv_model((1, 2, size, size), (3, 2, kernel, kernel), auto_pad=auto_pad, strides=[stride, stride])
    model = lowered(original)
    feeds = {"x": rng.standard_normal((1, 2, size, size)).astype(np.float32),
             "w": rng.standard_normal((3, 2, kernel, kernel)).astype(np.float32),
             "b": rng.standard_normal(3).astype(np.float32)}  # fmt: skip
    assert_within_stated(
        CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0], auto_pad
    )
    for below_size, below_stride in ((8, 4), (5, 5)):
        below = conv_model((1, 2, below_size), (3, 2, 1), auto_pad=auto_pad, strides=[below_stride])
        result = lowering.lower_model(below, ops=["Conv"])
        assert "Conv" in op_type_set(result.model) and "below -2" in " ".join(result.report.lines())


def test_batch_left_to_run_time():
    rng = np.random.default_rng(5)
    original = conv_model(("n", 2, 5, 5), (3, 2, 3, 3), pads=[1, 1, 1, 1])
    model = lowered(original)
    for batch in (1, 3, 0):
        feeds = {"x": rng.standard_normal((batch, 2, 5, 5)).astype(np.float32),
                 "w": rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
                 "b": rng.standard_normal(3).astype(np.float32)}  # fmt: skip
        want = run_onnxruntime(original, feeds)[0]
        assert_within_stated(CONV_TOLERANCE, run_onnxruntime(model, feeds)[0], want, f"batch {batch}")


def test_nested():
    original = conv_model((1, 2, 5, 5), (2, 2, 3, 3), pads=[1, 1, 1, 1])
    rng = np.random.default_rng(2)
    feeds = {"x": rng.standard_normal((1, 2, 5, 5)).astype(np.float32),
             "w": rng.standard_normal((2, 2, 3, 3)).astype(np.float32),
             "b": rng.standard_normal(2).astype(np.float32)}  # fmt: skip
    want = run_onnxruntime(original, feeds)[0]
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        for branch in (True, False):
            got = run_onnxruntime(model, {**feeds, "branch": np.array(branch)})[0]
            assert_within_stated(CONV_TOLERANCE, got, want, f"{label}, branch {branch}")


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (conv_model(("n", 2, "h", 5), (3, 2, 3, 3)), "spatial sizes are unknown"),
        (conv_model((1, 3, 5, 5), (4, 3, 3, 3), group=2), "not divisible by group"),
        (conv_model((1, 2, 2, 2), (3, 2, 3, 3)), "no output position"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), auto_pad="SAME_UPPER", dilations=[2, 1]), "kernel refuses it"),
        (conv_model((1, 2, 300, 300), (3, 2, 5, 5)), "more than the 1048576"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), opset=8), "opset 9"),
        (conv_model((1, 4, 5, 5), (3, 4, "h", "w"), kernel_shape=[3, 3]), "W's shape is not known"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), kernel_shape=[3, 2]), "is not W's kernel"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), auto_pad="VALID", pads=[1, 1, 1, 1]), "onnxruntime refuses"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), auto_pad="FOO"), "is none of"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), dilations=[0, 1]), "values the op refuses"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), pads=[-1, 0, 0, 0]), "values the op refuses"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), pads=[1, 1]), "do not fit 2 spatial axes"),
        (conv_model((1, 2, 0, 5), (3, 2, 3, 3), pads=[1, 1, 1, 1]), "a size of 0"),
        (conv_model((1, 2, 5, 5), (3, 2, 3, 3), group=0), "not divisible by group 0"),
    ],
    ids=[
        "sizes",
        "group",
        "no output",
        "SAME dilated",
        "gathered",
        "opset 8",
        "W unknown",
        "kernel_shape",
        "auto_pad with pads",
        "auto_pad unknown",
        "dilations",
        "pads",
        "pads' length",
        "size 0",
        "group 0",
    ],  # fmt: skip
)
def test_refused(model, said):
    result = lowering.lower_model(model, ops=["Conv"])
    assert "Conv" in op_type_set(result.model)
    assert said in " ".join(result.report.lines())


@pytest.mark.parametrize(
    ("op_type", "name"),
    [("ConvInteger", "test_convinteger_without_padding"), ("QLinearConv", "test_qlinearconv"),
     ("LpPool", "test_lppool_2d_pads")],
)  # fmt: skip
def test_lowered_in_turn_inside_another_rule_s_expansion(op_type, name):
    """Where Conv is lowered too, the Conv an expansion writes is lowered by this rule: the shapes
    of the values the expansion made come from onnx's inference over its nodes (Builder)."""
    case = node_cases_of(op_type)[name]
    result = lowering.lower_model(case.model, ops=[op_type, "Conv"])
    assert result.report.complete, result.report.lines()
    assert not {op_type, "Conv"} & op_type_set(result.model)
    for feeds, expected in fed_data_sets(case):
        got = run_onnxruntime(result.model, {key: np.asarray(value) for key, value in feeds.items()})[0]
        if np.issubdtype(expected[0].dtype, np.floating):
            assert_within_stated(CONV_TOLERANCE, got, expected[0], name)
        else:
            np.testing.assert_array_equal(got, expected[0], name)
