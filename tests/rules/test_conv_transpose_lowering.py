"""ConvTranspose lowered by its rule (rules/conv_transpose.py): the backend cases against their
expected outputs; random inputs and weights (fed or constant; groups, strides, dilations, pads,
output_padding, output_shape and auto_pad with odd and negative total padding, bias, 1-D to 3-D,
infinities and NaN among X) within the rule's tolerance of onnxruntime's kernel (float) and of
onnx.reference's (float64 rounded once: double, float16, bfloat16); the refusals."""

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

BACKEND_CASES = node_cases_of("ConvTranspose")
TOLERANCE = rule_for("", "ConvTranspose").tolerance


def conv_transpose_model(x_shape, w_shape, element_type=TensorProto.FLOAT, bias=True, weights=None, opset=11,
                         **attributes):  # fmt: skip
    """``ConvTranspose(x, w[, b])``: W fed, or the constant ``weights``."""
    inputs = [helper.make_tensor_value_info("x", element_type, list(x_shape))]
    nodes = []
    if weights is None:
        inputs.append(helper.make_tensor_value_info("w", element_type, list(w_shape)))
    else:
        nodes.append(helper.make_node("Constant", [], ["w"], value=onnx.numpy_helper.from_array(weights, "w")))
    names = ["x", "w"]
    if bias:
        inputs.append(helper.make_tensor_value_info("b", element_type, [w_shape[1] * attributes.get("group", 1)]))
        names.append("b")
    nodes.append(helper.make_node("ConvTranspose", names, ["y"], name="conv_transpose", **attributes))
    outputs = [helper.make_tensor_value_info("y", element_type, [f"y{d}" for d in range(len(x_shape))])]
    return make_model(nodes, inputs, outputs, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["ConvTranspose"])
    assert result.report.complete, result.report.lines()
    assert "ConvTranspose" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def feeds_for(x_shape, w_shape, group: int, rng: np.random.Generator, dtype, special: bool = False) -> dict:
    x = special_normal(x_shape, rng, dtype) if special else rng.standard_normal(x_shape).astype(dtype)
    return {"x": x, "w": rng.standard_normal(w_shape).astype(dtype),
            "b": rng.standard_normal(w_shape[1] * group).astype(dtype)}  # fmt: skip


def test_the_rule_states_its_tolerance_for_every_float_type():
    assert set(TOLERANCE) == {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 11


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], expected[0], name)


# (X's shape, W's shape, attributes)
FORMS = [
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((1, 4, 3, 4), (4, 3, 3, 2), {"group": 2, "strides": [2, 3], "pads": [1, 0, 2, 1]}),
    ((1, 3, 4, 4), (3, 2, 3, 3), {"strides": [2, 2], "output_padding": [1, 0], "dilations": [2, 1]}),
    ((1, 2, 3, 5), (2, 2, 3, 2), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 3, 5), (2, 2, 3, 4), {"auto_pad": "SAME_LOWER", "strides": [2, 1]}),
    ((1, 2, 4, 3), (2, 3, 3, 3), {"output_shape": [10, 6], "strides": [2, 2]}),
    ((1, 2, 4, 3), (2, 3, 3, 3), {"output_shape": [11, 9], "strides": [3, 3]}),
    ((1, 2, 3, 3), (2, 1, 2, 2), {"auto_pad": "VALID", "strides": [2, 2]}),
    ((3, 4, 5), (4, 2, 4), {"strides": [3], "pads": [2, 1], "dilations": [2], "group": 2}),
    ((1, 2, 2, 3, 2), (2, 2, 2, 2, 3), {"strides": [1, 2, 2], "pads": [0, 1, 1, 1, 0, 1]}),
]


def _ids(forms):
    return [f"{x}-{w}-{attributes}" for x, w, attributes in forms]


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("weights", ["fed", "constant"])
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
def test_random_inputs_against_onnxruntime(form, weights):
    x_shape, w_shape, attributes = form
    rng = np.random.default_rng(17)
    w = rng.standard_normal(w_shape).astype(np.float32)
    original = conv_transpose_model(x_shape, w_shape, weights=w if weights == "constant" else None, **attributes)
    model = lowered(original)
    for draw in range(3):
        feeds = feeds_for(x_shape, w_shape, attributes.get("group", 1), rng, np.float32, special=draw > 0)
        feeds = feeds | {"w": w} if weights == "fed" else {name: feeds[name] for name in ("x", "b")}
        want = run_onnxruntime(original, feeds)[0]
        assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], want, f"draw {draw}")


OTHER_TYPES = [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16]


# (onnx.reference's ConvTranspose fails where W's output channels differ from X's channels)
REFERENCE_FORMS = [FORMS[k] for k in (0, 2, 3, 4, 7, 9)]


@pytest.mark.parametrize("element_type", OTHER_TYPES, ids=TensorProto.DataType.Name)
@pytest.mark.parametrize("form", REFERENCE_FORMS, ids=_ids(REFERENCE_FORMS))
def test_other_types_against_the_reference(form, element_type):
    """double, float16 and bfloat16 (ConvTranspose-22, computed in float32) against onnx.reference's
    ConvTranspose computed in float64 and rounded once."""
    x_shape, w_shape, attributes = form
    dtype = floats.numpy_dtype(element_type)
    opset = 22 if element_type == TensorProto.BFLOAT16 else 11
    original = conv_transpose_model(x_shape, w_shape, element_type, opset=opset, **attributes)
    model = lowered(original)
    wide = ReferenceEvaluator(conv_transpose_model(x_shape, w_shape, TensorProto.DOUBLE, **attributes))
    feeds = feeds_for(x_shape, w_shape, attributes.get("group", 1), np.random.default_rng(12), dtype)
    want = wide.run(None, {name: value.astype(np.float64) for name, value in feeds.items()})[0].astype(dtype)
    assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], want, TensorProto.DataType.Name(element_type))


@pytest.mark.parametrize(
    "attributes",
    [{"strides": [3, 1]}, {"strides": [1, 1]}, {"strides": [2, 2], "output_shape": [7, 8]},
     {"strides": [3, 2], "dilations": [2, 1], "pads": [1, 0, 2, 1]}],
    ids=str,
)  # fmt: skip
def test_weights_not_finite_as_onnxruntime(attributes):
    """An infinite or NaN weight meets only the inputs the kernel scatters: where no input
    reaches an output position it adds nothing (masked after the product)."""
    rng = np.random.default_rng(21)
    original = conv_transpose_model((1, 2, 3, 3), (2, 2, 2, 3), **attributes)
    model = lowered(original)
    for special in (np.inf, -np.inf, np.nan):
        feeds = feeds_for((1, 2, 3, 3), (2, 2, 2, 3), 1, rng, np.float32)
        feeds["w"][0, 1, 1, 2] = special
        want = run_onnxruntime(original, feeds)[0]
        assert np.isfinite(want).any()
        assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], want, f"{special}")


@pytest.mark.parametrize("auto_pad", ["NOTSET", "SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("longer", [1, 2])
def test_output_shape_longer_than_the_full_output(longer, auto_pad):
    """output_shape up to ``s·d + dilated kernel - 1`` (here 2 past the full output; one more is
    refused, as onnxruntime refuses it): onnxruntime pads nothing, the positions at the end that
    no input reaches are B."""
    rng = np.random.default_rng(longer)
    full = 3 * 3 + 2  # s·(d - 1) + dilated kernel, d = 4, s = 3, k = 2
    original = conv_transpose_model((1, 2, 4), (2, 2, 2), strides=[3], output_shape=[full + longer], auto_pad=auto_pad)
    model = lowered(original)
    feeds = feeds_for((1, 2, 4), (2, 2, 2), 1, rng, np.float32)
    assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0], auto_pad)


def test_batch_left_to_run_time_and_in_nested_graphs():
    rng = np.random.default_rng(5)
    original = conv_transpose_model(("n", 2, 3, 3), (2, 3, 3, 3), strides=[2, 2], pads=[1, 1, 1, 1])
    model = lowered(original)
    for batch in (1, 3, 0):
        feeds = feeds_for((batch, 2, 3, 3), (2, 3, 3, 3), 1, rng, np.float32)
        want = run_onnxruntime(original, feeds)[0]
        assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], want, f"batch {batch}")
    feeds = feeds_for((2, 2, 3, 3), (2, 3, 3, 3), 1, rng, np.float32)
    want = run_onnxruntime(original, feeds)[0]
    for label, nested in nested_forms(original).items():
        for branch in (True, False):
            got = run_onnxruntime(lowered(nested), {**feeds, "branch": np.array(branch)})[0]
            assert_within_stated(TOLERANCE, got, want, f"{label}, branch {branch}")


@pytest.mark.parametrize(
    ("model", "said"),
    [
        (conv_transpose_model(("n", 2, "h", 5), (2, 3, 3, 3)), "spatial sizes are unknown"),
        (conv_transpose_model((1, 3, 5, 5), (3, 2, 3, 3), group=2), "not divisible by group"),
        (conv_transpose_model((1, 2, 2, 2), (2, 2, 3, 3), pads=[3, 3, 3, 3]), "the output has"),
        (conv_transpose_model((1, 2, 3, 5), (2, 2, 3, 2), auto_pad="SAME_UPPER", strides=[2, 3]), "the full 14"),
        (conv_transpose_model((1, 2, 300, 300), (2, 2, 3, 3), strides=[2, 2]), "more than the 1048576"),
        (conv_transpose_model((1, 2, 5, 5), (2, 3, 3, 3), opset=8), "opset 9"),
        (conv_transpose_model((1, 2, 5, 5), (3, 3, 3, 3)), "input channels"),
        (conv_transpose_model((1, 2, 5, 5), (2, 3, 3, 3), output_padding=[1]), "do not fit 2 spatial axes"),
        (conv_transpose_model((1, 2, 5, 5), (2, 3, 3, 3), auto_pad="SAME_UPPER", pads=[1, 1, 1, 1]), "refuses"),
        (conv_transpose_model((1, 2, 4, 4), (2, 3, 3, 3), strides=[2, 2], output_padding=[2, 0]), "not below"),
        (conv_transpose_model((1, 2, 4, 4), (2, 3, 3, 3), strides=[2, 2], output_shape=[11, 9]), "longer than"),
        (conv_transpose_model((1, 2, 4, 4), (2, 3, 3, 3), strides=[2, 2], output_shape=[1, 3, 9, 9]), "do not fit"),
    ],
    ids=[
        "sizes",
        "group",
        "no output",
        "SAME less than nothing",
        "gathered",
        "opset 8",
        "W's channels",
        "output_padding",
        "auto_pad with pads",
        "output_padding of the stride",
        "output_shape too long",
        "output_shape of N and C",
    ],
)
def test_refused(model, said):
    result = lowering.lower_model(model, ops=["ConvTranspose"])
    assert "ConvTranspose" in op_type_set(result.model)
    assert said in " ".join(result.report.lines())


def test_long_channel_sums_within_tolerance():
    """1024 channels at stride 1, where onnxruntime's kernel sums in another order than the rule
    (9.2e-5 apart on outputs of about 300, measured): within the stated tolerance."""
    rng = np.random.default_rng(0)
    original = conv_transpose_model((2, 1024, 4, 4), (1024, 16, 3, 3))
    model = lowered(original)
    feeds = feeds_for((2, 1024, 4, 4), (1024, 16, 3, 3), 1, rng, np.float32)
    assert_within_stated(TOLERANCE, run_onnxruntime(model, feeds)[0], run_onnxruntime(original, feeds)[0], "")
