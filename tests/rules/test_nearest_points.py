"""Mode nearest with constant scales or sizes of any value, X of a static shape: Resize lowered to
Gathers of the indices onnxruntime reads (rules/nearest_points.py), bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from lowering.rules import nearest_points as points_module
from lowering.rules.nearest_points import nearest_points
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms

import lowering
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime

COORDINATES = ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "half_pixel_symmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")


def resize_model(shape, version: int, scales=None, sizes=None, element_type=TensorProto.FLOAT, **attributes):
    """Resize-``version`` (its own opset) of X of static ``shape`` by constant scales or sizes."""
    initializer = [onnx.numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    inputs = ["x", "roi"]
    if scales is None and version < 13:  # (Resize-11 takes no scales left out)
        scales = []
    if scales is not None:
        initializer.append(onnx.numpy_helper.from_array(np.array(scales, np.float32), "scales"))
    inputs.append("scales" if scales is not None else "")
    if sizes is not None:
        initializer.append(onnx.numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs.append("sizes")
    return make_model(
        [helper.make_node("Resize", inputs, ["y"], name="resize", mode="nearest", **attributes)],
        [helper.make_tensor_value_info("x", element_type, list(shape))],
        [helper.make_tensor_value_info("y", element_type, [None] * len(shape))],
        opset=version,
        initializer=initializer,
    )


def random_form(rng: np.random.Generator, version: int, by: str) -> tuple[list[int], dict]:
    """A random X shape (ranks 1 to 5, lengths 1 to 9, to 5 at ranks 4 and 5) and Resize inputs and
    attributes Resize-``version`` takes: scales 0.2 to 3 (two decimals) or sizes 1 to 2d + 1, from 18 axes and
    a keep_aspect_ratio_policy, from 19 half_pixel_symmetric, at 11 tf_half_pixel_for_nn."""
    rank = int(rng.integers(1, 6))
    shape = [int(v) for v in rng.integers(1, 10 if rank < 4 else 6, rank)]
    coordinates = [c for c in COORDINATES if version >= 19 or c != "half_pixel_symmetric"]
    coordinates += ["tf_half_pixel_for_nn"] if version == 11 else []
    form = {
        "coordinate_transformation_mode": str(rng.choice(coordinates)),
        "nearest_mode": str(rng.choice(NEAREST_MODES)),
    }
    axes = list(range(rank))
    if version >= 18 and rank > 1 and rng.random() < 0.5:
        axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, rank)), replace=False))
        form["axes"] = [a - rank if rng.random() < 0.3 else a for a in axes]
    if by == "scales":
        form["scales"] = [float(v) for v in np.round(rng.uniform(0.2, 3.0, len(axes)), 2)]
    else:
        form["sizes"] = [int(rng.integers(1, 2 * shape[a] + 2)) for a in axes]
        if version >= 18:
            form["keep_aspect_ratio_policy"] = str(rng.choice(POLICIES))
    return shape, form


@pytest.mark.parametrize("by", ["scales", "sizes"])
@pytest.mark.parametrize("version", [11, 13, 18, 19])
def test_any_constant_scales_or_sizes_gather_what_onnxruntime_gathers(version, by):
    """25 random shapes, scales or sizes, policies, axes, coordinate and nearest modes per version:
    no Resize is left, and the lowered model gives onnxruntime's output bit for bit on float
    (NaN, infinities, -0, subnormals among the values), on float16 but a NaN's payload (which
    onnxruntime quiets) and on int32 positions (each output naming the element it read); onnx's
    full checker passes it."""
    rng = np.random.default_rng(version * 2 + (by == "sizes"))
    compared = 0
    for _ in range(25):
        shape, form = random_form(rng, version, by)
        model = resize_model(shape, version, **form)
        floats = rng.choice(edge_values(TensorProto.FLOAT), size=shape).astype(np.float32)
        positions = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        typed = resize_model(shape, version, element_type=TensorProto.INT32, **form)
        halves = rng.choice(edge_values(TensorProto.FLOAT16), size=shape).astype(np.float16)
        half = resize_model(shape, version, element_type=TensorProto.FLOAT16, **form)
        for original, fed in ((model, {"x": floats}), (typed, {"x": positions}), (half, {"x": halves})):
            lowered = lowered_wholly(original, "Resize")
            onnx.checker.check_model(lowered, full_check=True)
            [want], [got] = OnnxruntimeRunner(original)(fed), OnnxruntimeRunner(lowered)(fed)
            assert got.shape == want.shape, (shape, form)
            if got.dtype == np.float16:  # (onnxruntime's float16 Resize goes through float32: a
                # signalling NaN comes back quieted, which a Gather keeps; any NaN for a NaN)
                nan = np.isnan(want)
                assert np.array_equal(np.isnan(got), nan) and got[~nan].tobytes() == want[~nan].tobytes()
            else:
                assert got.tobytes() == want.tobytes(), (shape, form)
            compared += 1
    assert compared == 75


def test_the_backend_downsamplings_by_constant_scales_and_sizes():
    """The ONNX backend's nearest downsamplings (scales 0.6; sizes 1 by 3 of 2 by 4; sizes 3 by 1
    kept in aspect not_larger and not_smaller), their scales or sizes given as constants: the
    cases' expected outputs, bit for bit, which onnxruntime gives too."""
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4)
    cases = (
        ({"scales": [1, 1, 0.6, 0.6]}, [[[[1, 3]]]]),
        ({"sizes": [1, 1, 1, 3]}, [[[[1, 2, 4]]]]),
        ({"sizes": [1, 3], "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"}, [[[[1, 3]]]]),
        ({"sizes": [1, 3], "axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller"}, [[[[1, 2, 4], [5, 6, 8]]]]),
    )
    for form, expected in cases:
        model = resize_model(x.shape, 19, **form)
        lowered = lowered_wholly(model, "Resize")
        [got], [want] = run_onnxruntime(lowered, {"x": x}), run_onnxruntime(model, {"x": x})
        assert np.array_equal(got, np.array(expected, np.float32)) and got.tobytes() == want.tobytes(), form


def test_a_downsampling_inside_if_branches_and_local_functions():
    """Scales 0.6 of a static X where an If branch or a local function holds the Resize: lowered
    there too, bit for bit, either branch taken."""
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 7)).astype(np.float32)
    model = resize_model(x.shape, 19, scales=[1, 1, 0.6, 0.7])
    for label, nested in nested_forms(model).items():
        made = lowered_wholly(nested, "Resize")
        for branch in (True, False):
            fed = {"x": x, "branch": np.array(branch)}
            [got], [want] = run_onnxruntime(made, fed), run_onnxruntime(nested, fed)
            assert got.tobytes() == want.tobytes(), f"{label} {branch}"


def test_points_per_axis_and_none_where_they_cannot_be_known(monkeypatch):
    """nearest_points: per axis the indices read (an axis of scale 1 read whole); None for an
    empty X, a node onnxruntime fails (scales of the wrong length, exclude_outside in mode
    nearest), X of a type it resizes not (double: the spec's points, onnx.reference's, may lie
    elsewhere) and X above the bound."""
    attributes = {"coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    scales, float32 = np.array([1, 0.6], np.float32), TensorProto.FLOAT
    found = nearest_points([2, 5], float32, 19, scales, None, attributes)
    assert [a.tolist() for a in found] == [[0, 1], [0, 1, 3]]
    assert nearest_points([0, 5], float32, 19, scales, None, attributes) is None
    assert nearest_points([2, 5], float32, 19, np.array([0.6], np.float32), None, attributes) is None
    assert nearest_points([2, 5], TensorProto.DOUBLE, 19, scales, None, attributes) is None
    assert nearest_points([2, 5], float32, 19, scales, None, {**attributes, "exclude_outside": 1}) is None
    monkeypatch.setattr(points_module, "MOST_ELEMENTS", 9)
    assert nearest_points([2, 5], float32, 19, scales, None, attributes) is None


def test_a_resize_that_moves_no_point_is_an_identity():
    """Sizes kept by policy not_larger that give X's own shape: X comes through, bit for bit."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    model = resize_model(x.shape, 19, sizes=[4, 3], keep_aspect_ratio_policy="not_larger")
    lowered = lowered_wholly(model, "Resize")
    assert [node.op_type for node in lowered.graph.node] == ["Identity"]
    assert run_onnxruntime(lowered, {"x": x})[0].tobytes() == run_onnxruntime(model, {"x": x})[0].tobytes()


def test_scales_of_a_length_not_static_are_left_with_why():
    model = resize_model([1, "h"], 19, scales=[1, 0.6])
    (left,) = lowering.lower_model(model, ops=["Resize"]).report.remaining
    assert "constant scales or sizes of X of a static shape" in left.reason


@pytest.mark.parametrize(
    ("mode", "scale", "reason"),
    [("nearest", np.inf, "reads no points"), ("nearest", 1e30, "2e+30 long: the op fails"),
     ("linear", 1e30, "2e+30 long: the op fails")],
)  # fmt: skip
def test_scales_of_no_finite_length_are_left_with_why(mode, scale, reason):
    """An infinite scale or one making an axis longer than 2^62 (the op fails): left, with why
    (not an OverflowError)."""
    model = resize_model([1, 1, 2, 2], 19, scales=[1, 1, scale, 1])
    model.graph.node[0].attribute[0].s = mode.encode()
    left = lowering.lower_model(model, ops=["Resize"]).report.remaining
    assert len(left) == 1 and reason in left[0].reason, left


@pytest.mark.parametrize("attribute", ["antialias", "exclude_outside"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 0.5, 0.5], [1, 1, 0.6, 0.6]])
def test_a_nearest_resize_onnxruntime_fails_is_left_with_why(attribute, scales):
    """antialias or exclude_outside in mode nearest: onnxruntime fails the node (at whole-number
    and halving scales too), so nothing is written for it."""
    model = resize_model([1, 1, 4, 4], 19, scales=scales, **{attribute: 1})
    (left,) = lowering.lower_model(model, ops=["Resize"]).report.remaining
    assert "onnxruntime fails the node" in left.reason
