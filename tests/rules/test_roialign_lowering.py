"""RoiAlign lowered by its rule (rules/roialign.py): the backend cases against their expected
outputs; random inputs (rois within, across and past the image, reversed, of every coordinate
mode, sampling ratio and mode) against onnxruntime's kernel (float, double: max mode value for
value) and the rule's numpy reference (every type, RoiAlign-10 and -22 too), within the tolerance
the rule states; infinities and NaN in X; inputs where the kernel fails failing alike; inside If
branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_values, assert_within_stated, make_model, nested_forms, op_type_set, slow_but_a_sample
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime, run_reference

ROI_ALIGN = rule_for("", "RoiAlign")
BACKEND_CASES = node_cases_of("RoiAlign")


def assert_within(got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Within the tolerance the rule states for the type."""
    assert_within_stated(ROI_ALIGN.tolerance, got, want, where)


def roi_align_model(element_type=TensorProto.FLOAT, opset=16, **attributes) -> onnx.ModelProto:
    """``y = RoiAlign(x, rois, batch_indices)``, every length given at run time."""
    node = helper.make_node("RoiAlign", ["x", "rois", "batch_indices"], ["y"], name="align", **attributes)
    inputs = [
        helper.make_tensor_value_info("x", element_type, ["n", "c", "h", "w"]),
        helper.make_tensor_value_info("rois", element_type, ["r", 4]),
        helper.make_tensor_value_info("batch_indices", TensorProto.INT64, ["r"]),
    ]
    output = helper.make_tensor_value_info("y", element_type, ["r", "c", "p", "q"])
    return make_model([node], inputs, [output], opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["RoiAlign"])
    assert result.report.complete, result.report.lines()
    assert "RoiAlign" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def random_feeds(x_shape, count: int, spatial_scale: float, dtype, seed: int) -> list[dict[str, np.ndarray]]:
    """Standard normal x; rois (in the input's coordinates, 1 / spatial_scale times the image's)
    within the image, across its borders and past them, some reversed (x2 < x1), and whole
    pixels; batch indices over the batch."""
    rng = np.random.default_rng(seed)
    n, _, h, w = x_shape
    x = rng.standard_normal(x_shape).astype(dtype)
    batch = rng.integers(0, n, count)
    corners = []
    low = rng.uniform(0, [w - 1, h - 1], (count, 2))
    corners.append(np.concatenate([low, low + rng.uniform(0.2, [w, h], (count, 2))], axis=1))  # within
    corners.append(rng.uniform(-3, [w + 3, h + 3, w + 3, h + 3], (count, 4)))  # across, some reversed
    corners.append(rng.uniform(-8, [w + 8, h + 8, w + 8, h + 8], (count, 4)) * 2)  # mostly past
    corners.append(rng.integers(-1, [w + 1, h + 1, w + 1, h + 1], (count, 4)).astype(np.float64))  # whole pixels
    return [{"x": x, "rois": (c / spatial_scale).astype(dtype), "batch_indices": batch} for c in corners]


def kernel_fails(feeds, attributes) -> bool:
    try:
        ROI_ALIGN.reference(feeds["x"], feeds["rois"], feeds["batch_indices"], **attributes)
    except ValueError:
        return True
    return False


OLD_PIXELS = {"coordinate_transformation_mode": "output_half_pixel"}  # (RoiAlign-10's)
# (attributes, x shape)
FORMS = [
    ({"output_height": 2, "output_width": 3, "sampling_ratio": 2}, (1, 2, 6, 7)),
    ({"output_height": 3, "output_width": 3, "sampling_ratio": 0, "spatial_scale": 0.5}, (2, 3, 7, 9)),
    ({"output_height": 1, "output_width": 4, "sampling_ratio": 1, **OLD_PIXELS}, (2, 1, 5, 8)),
    ({"output_height": 4, "output_width": 2, "sampling_ratio": 0, **OLD_PIXELS, "spatial_scale": 0.0625}, (1, 3, 9, 6)),
    ({"output_height": 3, "output_width": 2, "sampling_ratio": 3, "spatial_scale": 2.0, "mode": "max"}, (2, 2, 6, 6)),
    ({"output_height": 2, "output_width": 2, "sampling_ratio": 2, "mode": "max", **OLD_PIXELS}, (1, 4, 5, 7)),
    ({"output_height": 5, "output_width": 5, "sampling_ratio": 4, "spatial_scale": 0.25}, (1, 2, 4, 4)),
]


def _ids(forms):
    return [str(attributes) for attributes, _ in forms]


# -- the backend cases -----------------------------------------------------------------------------


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 3


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(model, feeds)
        assert_within(got, expected[0], name)


# -- random inputs against onnxruntime's kernel and the reference ----------------------------------


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_random_inputs_against_onnxruntime_and_the_reference(form, dtype):
    attributes, x_shape = form
    element_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    original = roi_align_model(element_type, **attributes)
    model = lowered(original)
    for index, feeds in enumerate(random_feeds(x_shape, 6, attributes.get("spatial_scale", 1.0), dtype, 5)):
        where = f"data set {index}"
        if kernel_fails(feeds, attributes):
            with pytest.raises(Exception, match="out of range|indices|Gather"):
                run_onnxruntime(model, feeds)
            continue
        (got,) = run_onnxruntime(model, feeds)
        (native,) = run_onnxruntime(original, feeds)
        assert_within(got, native, f"{where} against onnxruntime's RoiAlign")
        want = ROI_ALIGN.reference(feeds["x"], feeds["rois"], feeds["batch_indices"], **attributes)
        assert_within(got, want, f"{where} against the numpy reference")
        if attributes.get("mode") == "max":  # the kernel's own products and running maximum (a zero's sign
            assert np.array_equal(got, native, equal_nan=True), where  # aside: onnxruntime's Where drops a -0)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
def test_sixteen_bit_floats_against_the_reference(element_type):
    """Computed in float32 and rounded once; onnxruntime has no kernel for either (bfloat16 from
    version 22), so the numpy reference is the oracle."""
    dtype = floats.numpy_dtype(element_type)
    compared = 0
    for attributes, x_shape in FORMS[1], FORMS[4]:
        model = lowered(roi_align_model(element_type, opset=22, **attributes))
        scale = attributes.get("spatial_scale", 1.0)
        for feeds in random_feeds(x_shape, 5, scale, np.float32, 16)[:2]:
            feeds = {k: v.astype(dtype) if v.dtype == np.float32 else v for k, v in feeds.items()}
            if kernel_fails(feeds, attributes):
                with pytest.raises(Exception, match="out of range|indices|Gather"):
                    run_onnxruntime(model, feeds)
                continue
            (got,) = run_onnxruntime(model, feeds)
            assert_within(got, ROI_ALIGN.reference(feeds["x"], feeds["rois"], feeds["batch_indices"], **attributes))
            compared += 1
    assert compared >= 3, "the data sets reach the values"


def test_version_10_means_output_half_pixel():
    """RoiAlign-10 has no coordinate_transformation_mode: it places its points as version 16's
    output_half_pixel, not as that version's default half_pixel."""
    attributes = {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.5}
    original = roi_align_model(opset=13, **attributes)
    model = lowered(original)
    for feeds in random_feeds((2, 3, 6, 8), 4, 0.5, np.float32, 10)[:2]:
        (got,) = run_onnxruntime(model, feeds)
        assert_within(got, run_onnxruntime(original, feeds)[0])
        as_16 = ROI_ALIGN.reference(*feeds.values(), coordinate_transformation_mode="output_half_pixel", **attributes)
        assert_within(got, as_16)


@pytest.mark.slow
def test_reference_meets_onnx_reference():
    """The rule's numpy reference states the op as onnx.reference does (both follow onnxruntime's
    kernel, max mode's running maximum of weighted neighbours included)."""
    compared = 0
    for attributes, x_shape in FORMS:
        original = roi_align_model(**attributes)
        for feeds in random_feeds(x_shape, 4, attributes.get("spatial_scale", 1.0), np.float32, 3)[:2]:
            if kernel_fails(feeds, attributes):  # (onnx.reference answers there)
                continue
            (spec,) = run_reference(original, feeds)
            assert_within(ROI_ALIGN.reference(*feeds.values(), **attributes), spec, f"{attributes}")
            compared += 1
    assert compared >= len(FORMS), "every form is compared"


# -- special values, shapes, failures ---------------------------------------------------------------


@pytest.mark.parametrize("form", [FORMS[0], FORMS[4]], ids=_ids([FORMS[0], FORMS[4]]))
def test_infinities_and_nan_in_x_travel_as_the_kernel_carries_them(form):
    """A sample past the image weighs X's element (0, 0) by 0 (0 · inf is NaN), as the kernel does;
    max mode keeps a NaN it holds and never takes one."""
    attributes, x_shape = form
    original = roi_align_model(**attributes)
    model = lowered(original)
    for feeds in random_feeds(x_shape, 6, attributes.get("spatial_scale", 1.0), np.float32, 9)[1:3]:
        feeds["x"][0, 0, 0, 0], feeds["x"][0, -1, 2, 3] = np.inf, np.nan
        feeds["x"][-1, 0, 3, 1] = -np.inf
        (got,) = run_onnxruntime(model, feeds)
        (native,) = run_onnxruntime(original, feeds)
        assert np.isnan(native).any(), "the data set reaches the special values"
        assert_within(got, native)


def test_no_rois_give_an_empty_output():
    for attributes, _ in FORMS[1], FORMS[4]:
        model = lowered(roi_align_model(**attributes))
        feeds = {
            "x": np.ones((1, 3, 5, 5), np.float32),
            "rois": np.zeros((0, 4), np.float32),
            "batch_indices": np.zeros(0, np.int64),
        }
        (got,) = run_onnxruntime(model, feeds)
        assert got.shape == (0, 3, attributes["output_height"], attributes["output_width"])


def test_image_lengths_given_at_run_time():
    """One lowered model serves images of two sizes: H, W and N are read by Shape at run time."""
    attributes = FORMS[1][0]
    original = roi_align_model(**attributes)
    model = lowered(original)
    for shape in ((2, 3, 7, 9), (3, 2, 12, 5)):
        feeds = random_feeds(shape, 5, 0.5, np.float32, 2)[0]
        (got,) = run_onnxruntime(model, feeds)
        assert_within(got, run_onnxruntime(original, feeds)[0], f"{shape}")


def test_a_batch_index_outside_the_batch_fails_as_the_kernel_does():
    model = lowered(roi_align_model(output_height=2, output_width=2, sampling_ratio=2))
    feeds = random_feeds((2, 1, 5, 5), 3, 1.0, np.float32, 4)[0]
    for wrong in (2, -1):
        feeds["batch_indices"] = np.array([0, wrong, 1], np.int64)
        with pytest.raises(Exception, match="out of range|indices"):
            run_onnxruntime(model, feeds)
        with pytest.raises(Exception, match="batch_indices"):
            run_onnxruntime(roi_align_model(output_height=2, output_width=2, sampling_ratio=2), feeds)


def test_a_grid_negative_along_one_axis_fails_as_the_kernel_does():
    """half_pixel keeps a reversed roi's negative extent; an adaptive grid ⌈extent / bins⌉ negative
    along one axis only overflows the kernel's count of samples (negative along both, or 0
    along one, is no sample at all: 0)."""
    original = roi_align_model(output_height=2, output_width=2, sampling_ratio=0)
    model = lowered(original)
    x = np.random.default_rng(0).standard_normal((1, 1, 6, 6)).astype(np.float32)
    for box, fails in (([3, 1, 1, 5], True), ([1, 3, 5, 1], True), ([3, 3, 1, 1], False), ([3, 3, 2.1, 1], False)):
        feeds = {"x": x, "rois": np.array([box], np.float32), "batch_indices": np.zeros(1, np.int64)}
        if fails:
            with pytest.raises(Exception, match="overflow"):
                run_onnxruntime(original, feeds)
            with pytest.raises(Exception, match="out of range|indices"):
                run_onnxruntime(model, feeds)
        else:
            (got,) = run_onnxruntime(model, feeds)
            assert_same_values(got, run_onnxruntime(original, feeds)[0], f"{box}")


@pytest.mark.parametrize("sampling_ratio", [0, 2])
@pytest.mark.parametrize("corner", [np.nan, np.inf, -np.inf])
def test_a_roi_not_finite_fails_as_the_kernel_does(corner, sampling_ratio):
    original = roi_align_model(output_height=2, output_width=2, sampling_ratio=sampling_ratio)
    model = lowered(original)
    feeds = random_feeds((2, 2, 6, 6), 3, 1.0, np.float32, 6)[0]
    feeds["rois"][1, 2] = corner
    with pytest.raises(Exception, match="finite"):
        run_onnxruntime(original, feeds)
    with pytest.raises(Exception, match="out of range|indices|Range"):  # (adaptive: its Range fails first)
        run_onnxruntime(model, feeds)


@pytest.mark.parametrize(
    ("rois_shape", "indices_length"),
    [((1, 5), 1), ((3, 4), 1), ((1, 4), 3), ((1, 4), 0), ((0, 5), 0)],
    ids=["five-columns", "three-rois-one-index", "one-roi-three-indices", "one-roi-no-index", "no-rois-five-columns"],
)
def test_inputs_of_the_wrong_shapes_fail_as_the_kernel_does(rois_shape, indices_length):
    """The rule checks the shapes it does not know (here all given at run time)."""
    node = helper.make_node("RoiAlign", ["x", "rois", "batch_indices"], ["y"], name="align", sampling_ratio=2)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", "c", "h", "w"]),
        helper.make_tensor_value_info("rois", TensorProto.FLOAT, ["r", "k"]),
        helper.make_tensor_value_info("batch_indices", TensorProto.INT64, ["b"]),
    ]
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["r", "c", 1, 1])
    original = make_model([node], inputs, [output], opset=16)
    model = lowered(original)
    feeds = {
        "x": np.ones((1, 2, 5, 5), np.float32),
        "rois": np.ones(rois_shape, np.float32),
        "batch_indices": np.zeros(indices_length, np.int64),
    }
    with pytest.raises(Exception, match="rois|num_rois"):
        run_onnxruntime(original, feeds)
    with pytest.raises(Exception, match="out of|indices|broadcast|Incompatible"):
        run_onnxruntime(model, feeds)


@pytest.mark.parametrize("form", [FORMS[1], FORMS[5]], ids=_ids([FORMS[1], FORMS[5]]))
def test_inside_if_branches_and_local_functions(form):
    attributes, x_shape = form
    original = roi_align_model(**attributes)
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        for feeds in random_feeds(x_shape, 4, attributes.get("spatial_scale", 1.0), np.float32, 8)[:1]:
            for branch in (True, False):
                feeds["branch"] = np.array(branch)
                (got,) = run_onnxruntime(model, feeds)
                (native,) = run_onnxruntime(original, {k: v for k, v in feeds.items() if k != "branch"})
                assert_within(got, native, f"{label}, branch {branch}")


# -- refusals ---------------------------------------------------------------------------------------


def refused(model: onnx.ModelProto, **options) -> str:
    result = lowering.lower_model(model, ops=["RoiAlign"], **options)
    assert not result.report.complete
    return "\n".join(result.report.lines())


def test_max_mode_with_an_adaptive_grid_is_refused():
    message = refused(roi_align_model(mode="max", sampling_ratio=0))
    assert "max mode with sampling_ratio 0" in message


def test_more_than_64_samples_per_bin_in_max_mode_are_refused():
    message = refused(roi_align_model(mode="max", sampling_ratio=9))
    assert "81 samples per bin, more than the 64" in message


def test_a_negative_sampling_ratio_is_refused():
    assert "sampling_ratio -1 is negative" in refused(roi_align_model(sampling_ratio=-1))


def test_below_opset_12_is_refused():
    message = refused(roi_align_model(opset=11, sampling_ratio=2))
    assert "from opset 12, not 11" in message
