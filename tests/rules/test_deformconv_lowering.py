"""DeformConv lowered by its rule (rules/deformconv.py) where the target opset cannot say it: below
19 (no DeformConv), and bfloat16 below 22. Every ONNX backend case converted to 11, 13 and 17
against its expected outputs; random inputs with groups, offset groups, strides, dilations, pads,
mask, bias and offsets reaching past the image against onnxruntime's own DeformConv kernel
(float, double, float16) and the rule's numpy reference, within the tolerance the rule states;
shapes given at run time; the refusals."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_within_stated,
    make_model,
    op_type_set,
    refusal,
    runs_in_onnxruntime,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import fed_data_sets, node_cases_of, sweep_case

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime, run_reference

DEFORM_CONV = rule_for("", "DeformConv")
BACKEND_CASES = node_cases_of("DeformConv")
TARGETS = (11, 13, 17)


def assert_within(got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Within the tolerance the rule states for the type."""
    assert_within_stated(DEFORM_CONV.tolerance, got, want, where)


def reference(feeds: dict[str, np.ndarray], **attributes) -> np.ndarray:
    return DEFORM_CONV.reference(
        feeds["x"], feeds["w"], feeds["offset"], feeds.get("b"), feeds.get("mask"), **attributes
    )


# -- every backend case, converted ---------------------------------------------------------------


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 4


PAIRS = [(target, name) for name in sorted(BACKEND_CASES) for target in TARGETS]


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_backend_case_converted(target, name):
    case = BACKEND_CASES[name]
    result = lowering.lower_model(case.model, target_opset=target, ops=[])
    assert result.report.complete, result.report.lines()
    assert dict(result.report.rewritten) == {"DeformConv-22": 1}
    assert [entry.version for entry in result.model.opset_import if entry.domain == ""] == [target]
    onnx.checker.check_model(result.model, full_check=True)
    assert "DeformConv" not in op_type_set(result.model)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(result.model, feeds)
        assert_within(got, expected[0], f"{name} at {target}")


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_corpus_pair_converts(target, name):
    """As tests/version_cases.py sweeps it (the backend's own tolerance)."""
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong


# -- random inputs against onnxruntime's kernel --------------------------------------------------


def output_lengths(x_shape, w_shape, attributes) -> list[int]:
    spatial = len(x_shape) - 2
    strides = attributes.get("strides", [1] * spatial)
    dilations = attributes.get("dilations", [1] * spatial)
    pads = attributes.get("pads", [0] * 2 * spatial)
    return [
        (x_shape[2 + a] + pads[a] + pads[spatial + a] - (dilations[a] * (w_shape[2 + a] - 1) + 1)) // strides[a] + 1
        for a in range(spatial)
    ]


def deform_conv_model(x_shape, w_shape, *, element_type=TensorProto.FLOAT, opset=22, bias=False, mask=False,
                      declared=None, **attributes):  # fmt: skip
    """``y = DeformConv(x, w, offset[, b][, mask])``, every input a graph input; ``declared``
    overrides the shapes written for x, offset and mask (symbolic lengths)."""
    spatial = len(x_shape) - 2
    outputs = output_lengths(x_shape, w_shape, attributes)
    kernel_positions = math.prod(w_shape[2:])
    groups = attributes.get("offset_group", 1)
    shapes = {
        "x": list(x_shape),
        "w": list(w_shape),
        "offset": [x_shape[0], groups * kernel_positions * spatial, *outputs],
        "b": [w_shape[0]],
        "mask": [x_shape[0], groups * kernel_positions, *outputs],
    }
    shapes.update(declared or {})
    names = ["x", "w", "offset", "b" if bias else "", "mask" if mask else ""]
    while not names[-1]:
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], name="deform", **attributes)
    inputs = [helper.make_tensor_value_info(name, element_type, shapes[name]) for name in names if name]
    output = helper.make_tensor_value_info("y", element_type, ["n", "m", *[f"o{a}" for a in range(spatial)]])
    return make_model([node], inputs, [output], opset=opset)


def random_feeds(x_shape, w_shape, attributes, dtype, seed: int, *, bias: bool, mask: bool):
    """Standard normal x, w and b; masks in [0, 1]; offsets within ±0.5, ±3 and ±20 pixels (most
    sampling points then fall outside the image, or half outside), and whole pixels (the
    neighbours' weights 0 and 1)."""
    rng = np.random.default_rng(seed)
    spatial = len(x_shape) - 2
    outputs = output_lengths(x_shape, w_shape, attributes)
    kernel_positions = math.prod(w_shape[2:])
    groups = attributes.get("offset_group", 1)
    offset_shape = (x_shape[0], groups * kernel_positions * spatial, *outputs)
    common = {"x": rng.standard_normal(x_shape), "w": rng.standard_normal(w_shape)}
    if bias:
        common["b"] = rng.standard_normal(w_shape[0])
    if mask:
        common["mask"] = rng.uniform(0, 1, (x_shape[0], groups * kernel_positions, *outputs))
    offsets = [rng.uniform(-spread, spread, offset_shape) for spread in (0.5, 3, 20)]
    offsets.append(rng.integers(-2, 3, offset_shape).astype(np.float64))
    return [{k: v.astype(dtype) for k, v in {**common, "offset": offset}.items()} for offset in offsets]


# (x shape, w shape, attributes, bias, mask)
FORMS = [
    ((1, 1, 5, 5), (1, 1, 3, 3), {}, False, False),
    ((2, 4, 7, 6), (6, 2, 3, 3), {"group": 2, "offset_group": 2, "pads": [1, 1, 1, 1]}, True, True),
    (
        (1, 6, 9, 8),
        (4, 3, 3, 2),
        {"group": 2, "offset_group": 3, "strides": [2, 1], "dilations": [1, 2], "pads": [2, 0, 1, 1]},
        True,
        False,
    ),  # fmt: skip
    ((2, 3, 5, 5), (3, 3, 2, 2), {"strides": [2, 2]}, False, True),
    (
        (1, 4, 6, 7),
        (8, 1, 3, 3),
        {"group": 4, "offset_group": 4, "dilations": [2, 2], "pads": [2, 2, 2, 2]},
        True,
        True,
    ),
    ((1, 4, 6, 5), (2, 4, 1, 1), {"offset_group": 2, "kernel_shape": [1, 1]}, True, True),
    ((2, 2, 4, 9), (3, 2, 2, 4), {"strides": [1, 3], "pads": [0, 3, 1, 0]}, False, True),
]


def _form_ids(forms):
    return [f"{x}-{w}-{attributes}-bias{int(b)}-mask{int(m)}" for x, w, attributes, b, m in forms]


@slow_but_a_sample()
@pytest.mark.parametrize("form", FORMS, ids=_form_ids(FORMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_random_inputs_against_onnxruntime_and_the_reference(form, dtype):
    x_shape, w_shape, attributes, bias, mask = form
    element_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    original = deform_conv_model(x_shape, w_shape, element_type=element_type, bias=bias, mask=mask, **attributes)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert "DeformConv" not in op_type_set(lowered)
    for index, feeds in enumerate(random_feeds(x_shape, w_shape, attributes, dtype, 7, bias=bias, mask=mask)):
        (got,) = run_onnxruntime(lowered, feeds)
        (native,) = run_onnxruntime(original, feeds)
        assert_within(got, native, f"data set {index} against onnxruntime's DeformConv")
        assert_within(got, reference(feeds, **attributes), f"data set {index} against the numpy reference")


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS[1:5], ids=_form_ids(FORMS[1:5]))
def test_float16_against_onnxruntime_and_the_reference(form):
    """Computed in float32 and rounded once, as onnxruntime runs DeformConv on float16 (its float32
    kernel between Casts)."""
    x_shape, w_shape, attributes, bias, mask = form
    original = deform_conv_model(x_shape, w_shape, element_type=TensorProto.FLOAT16, bias=bias, mask=mask,
                                 **attributes)  # fmt: skip
    for target in (11, 17):
        lowered = lowering.lower(original, target_opset=target, ops=[])
        assert "DeformConv" not in op_type_set(lowered)
        for feeds in random_feeds(x_shape, w_shape, attributes, np.float16, 16, bias=bias, mask=mask):
            (got,) = run_onnxruntime(lowered, feeds)
            native = runs_in_onnxruntime(original, feeds)
            assert native is not None, "onnxruntime runs float16 DeformConv (by its float32 kernel)"
            assert_within(got, native[0], f"to {target} against onnxruntime's DeformConv")
            assert_within(got, reference(feeds, **attributes), f"to {target} against the numpy reference")


@pytest.mark.slow
def test_bfloat16_goes_below_22_by_the_rule():
    """DeformConv-19 takes no bfloat16: at 19-21 the rule lowers it too; onnxruntime has no kernel
    for it, so the numpy reference is the oracle."""
    x_shape, w_shape, attributes, bias, mask = FORMS[1]
    original = deform_conv_model(x_shape, w_shape, element_type=TensorProto.BFLOAT16, bias=bias, mask=mask,
                                 **attributes)  # fmt: skip
    dtype = floats.numpy_dtype(TensorProto.BFLOAT16)
    for target in (13, 17, 21):
        result = lowering.lower_model(original, target_opset=target, ops=[])
        assert result.report.complete, result.report.lines()
        assert "DeformConv" not in op_type_set(result.model)
        for feeds in random_feeds(x_shape, w_shape, attributes, np.float32, 22, bias=bias, mask=mask)[:2]:
            feeds = {name: value.astype(dtype) for name, value in feeds.items()}
            (got,) = run_onnxruntime(result.model, feeds)
            assert_within(got, reference(feeds, **attributes), f"to {target}")


def test_version_19_goes_down_too():
    x_shape, w_shape, attributes, bias, mask = FORMS[2]
    original = deform_conv_model(x_shape, w_shape, opset=19, bias=bias, mask=mask, **attributes)
    for target in (11, 17):
        result = lowering.lower_model(original, target_opset=target, ops=[])
        assert dict(result.report.rewritten) == {"DeformConv-19": 1}
        for feeds in random_feeds(x_shape, w_shape, attributes, np.float32, 19, bias=bias, mask=mask)[1:3]:
            (got,) = run_onnxruntime(result.model, feeds)
            assert_within(got, run_onnxruntime(original, feeds)[0], f"to {target}")


def test_empty_batch_gives_an_empty_output():
    """The batch's length is read by Shape and never inferred by a Reshape's -1."""
    x_shape, w_shape, attributes, bias, mask = FORMS[1]
    declared = {"x": ["n", 4, "h", "w"], "offset": ["n", 36, "p", "q"], "mask": ["n", 18, "p", "q"]}
    original = deform_conv_model(x_shape, w_shape, bias=bias, mask=mask, declared=declared, **attributes)
    feeds = random_feeds((0, 4, 7, 6), w_shape, attributes, np.float32, 1, bias=bias, mask=mask)[0]
    (got,) = run_onnxruntime(lowering.lower(original, target_opset=11, ops=[]), feeds)
    assert got.shape == run_onnxruntime(original, feeds)[0].shape == (0, 6, 7, 6)


@pytest.mark.slow
def test_reference_meets_onnx_reference():
    """The rule's numpy reference states the op as onnx.reference does (which samples through
    GridSample's normalized coordinates, hence not bit for bit)."""
    for x_shape, w_shape, attributes, bias, mask in FORMS:
        original = deform_conv_model(x_shape, w_shape, bias=bias, mask=mask, **attributes)
        for feeds in random_feeds(x_shape, w_shape, attributes, np.float32, 3, bias=bias, mask=mask)[1:3]:
            (spec,) = run_reference(original, feeds)
            assert_within(reference(feeds, **attributes), spec, f"{attributes}")


# -- other ranks, shapes at run time, special values ----------------------------------------------

OTHER_RANKS = [
    ((2, 2, 9), (3, 2, 3), {"strides": [2], "pads": [1, 2]}, True, True),
    ((1, 4, 4, 5, 3), (2, 2, 2, 2, 2), {"group": 2, "offset_group": 2, "dilations": [1, 2, 1]}, True, True),
]


@pytest.mark.slow
@pytest.mark.parametrize("form", OTHER_RANKS, ids=_form_ids(OTHER_RANKS))
def test_1d_and_3d_against_the_reference(form):
    """The spec is N-D; onnxruntime's kernel and onnx.reference take 2-D inputs only: the numpy
    reference (the same sampling on each axis) is the oracle."""
    x_shape, w_shape, attributes, bias, mask = form
    original = deform_conv_model(x_shape, w_shape, bias=bias, mask=mask, **attributes)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    for feeds in random_feeds(x_shape, w_shape, attributes, np.float32, 5, bias=bias, mask=mask):
        (got,) = run_onnxruntime(lowered, feeds)
        assert_within(got, reference(feeds, **attributes))


def test_batch_image_and_output_lengths_given_at_run_time():
    """Only W's shape is needed: the batch, the image's and the outputs' lengths symbolic, read by
    Shape at run time; one lowered model serves two image sizes."""
    x_shape, w_shape, attributes, bias, mask = FORMS[2]
    declared = {"x": ["n", 6, "h", "w"], "offset": ["n", 36, "p", "q"], "mask": ["n", 18, "p", "q"]}
    original = deform_conv_model(x_shape, w_shape, bias=True, mask=True, declared=declared, **attributes)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    for shape in (x_shape, (3, 6, 5, 11)):
        for feeds in random_feeds(shape, w_shape, attributes, np.float32, 11, bias=True, mask=True)[1:3]:
            (got,) = run_onnxruntime(lowered, feeds)
            (native,) = run_onnxruntime(original, feeds)
            assert_within(got, native, f"{shape}")


@pytest.mark.slow
def test_infinities_and_nan_in_x_travel_as_the_spec_says():
    """A neighbour outside X reads 0, never an element of X; one inside is multiplied by its weight
    even where that is 0 (0 · inf is NaN), as onnx.reference does. onnxruntime's kernel departs
    from the spec there: a sampling point partly outside X reads an element of X (times weight 0)
    for its outside neighbours, so an infinity at X's corner makes NaNs that the spec does not
    (re-check on an upgrade)."""
    x_shape, w_shape, attributes, bias, mask = FORMS[1]
    original = deform_conv_model(x_shape, w_shape, bias=bias, mask=mask, **attributes)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    for feeds in random_feeds(x_shape, w_shape, attributes, np.float32, 9, bias=bias, mask=mask):
        feeds["x"][0, 0, 0, 0], feeds["x"][1, 3, 4, 2] = np.inf, np.nan
        (got,) = run_onnxruntime(lowered, feeds)
        (spec,) = run_reference(original, feeds)
        assert_within(got, spec, "against onnx.reference")
        assert_within(got, reference(feeds, **attributes), "against the numpy reference")
        (native,) = run_onnxruntime(original, feeds)
        assert np.isnan(native).sum() > np.isnan(spec).sum(), "onnxruntime's kernel follows the spec now"


# -- refusals -------------------------------------------------------------------------------------


def test_w_of_unknown_shape_is_refused():
    original = deform_conv_model((1, 2, 5, 5), (3, 2, 3, 3), declared={"w": [3, 2, "kh", "kw"]})
    message = refusal(original, 17)
    assert "DeformConv-22 cannot be expressed at opset 17" in message
    assert "W's shape is [3, 2, ?, ?]; the rule needs all 4 of its lengths known: output channels" in message


def test_below_opset_11_is_refused():
    original = deform_conv_model((1, 2, 5, 5), (3, 2, 3, 3))
    message = refusal(original, 10)
    assert "DeformConv-22 cannot be expressed at opset 10" in message
    assert "the rule writes ops as they are from opset 11, not 10" in message
