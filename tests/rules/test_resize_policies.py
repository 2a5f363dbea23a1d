"""Resize-18/19 below 18. keep_aspect_ratio_policy with sizes given at run time (the version
adapter): bit for bit against onnxruntime's Resize-19 (float and float16, edge values included,
sizes at and beside an exact half of rounding), or refused with a sentence of ours. antialias and
half_pixel_symmetric (the Resize rule): within the rule's stated tolerance of the op."""

from __future__ import annotations

import functools
import itertools
import warnings

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.resize import RESIZE_TOLERANCE, resize_reference
from onnx import TensorProto, helper, numpy_helper
from support import (
    assert_same_bits,
    assert_same_values,
    lowered_wholly,
    make_model,
    nested_forms,
    refusal,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import node_cases, ours_where_it_converts, sweep_case

import lowering
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime, run_reference

TARGETS = (11, 13, 17)
# float16 is compared any NaN for a NaN: onnxruntime's float16 Resize goes through float32, and
# which payload a signalling NaN comes back with depends on where it lands in the output buffer
# (measured: the first 8 of 15 outputs quieted, 0xFD60 → 0xFF60, the other 7 the canonical 0xFE00).
TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}


def edge_array(shape, dtype, seed=0) -> np.ndarray:
    """Ordinary numbers with edge values of ``dtype`` (NaN, ±inf, ±0, subnormals, extremes) mixed in."""
    rng = np.random.default_rng(seed)
    pool = edge_values(helper.np_dtype_to_tensor_dtype(np.dtype(dtype))).astype(dtype)
    size = int(np.prod(shape))
    values = (rng.standard_normal(size) * 3).astype(dtype)
    picked = pool[rng.integers(0, len(pool), size)]
    keep = rng.random(size) < 0.4
    values[keep] = picked[keep]
    return values.reshape(shape)


def policy_model(element_type: int, rank: int, axes, policy: str, **attributes) -> onnx.ModelProto:
    node = helper.make_node(
        "Resize",
        ["x", "", "", "sizes"],
        ["y"],
        name="resize",
        keep_aspect_ratio_policy=policy,
        **({} if axes is None else {"axes": list(axes)}),
        **attributes,
    )
    count = rank if axes is None else len(axes)
    return make_model(
        [node],
        [
            helper.make_tensor_value_info("x", element_type, [f"d{i}" for i in range(rank)]),
            helper.make_tensor_value_info("sizes", TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info("y", element_type, [f"e{i}" for i in range(rank)])],
        opset=19,
    )


def with_axes_counted_from_the_front(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with negative axes counted from the front: onnxruntime 1.32's Resize-19 ignores
    negative axes with a policy (it returns X as it is), which the op's text counts from the back."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    rank = len(model.graph.input[0].type.tensor_type.shape.dim)
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "axes":
            attribute.ints[:] = [a + rank if a < 0 else a for a in attribute.ints]
    return model


def lowered(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert any("Resize-19" in key for key in result.report.adapted), dict(result.report.adapted)
    return result.model


# (input shape, axes, sizes): upsampling, downsampling, a scale of 1, and sizes whose product s · d
# falls on an exact half (2 · 2.5: onnxruntime rounds it away from zero) or just beside one
SHAPES = [
    ((1, 1, 2, 4), (2, 3), (1, 3)),
    ((1, 1, 2, 2), (2, 3), (7, 8)),
    ((1, 1, 2, 5), (2, 3), (1, 100)),  # s = 0.5, 0.5 · 5 = 2.5 → 3
    ((1, 1, 2, 5), (3, 2), (100, 1)),  # the same, axes out of order
    ((2, 5), (-1, -2), (100, 1)),
    ((3, 7, 4), (1, 2), (5, 3)),
    ((3, 7, 4), None, (3, 5, 3)),
    ((1, 2, 6, 10), (2, 3), (9, 13)),  # s = 1.3 · 10 = 13, 1.5 · 6 = 9
    ((1, 1, 6, 10), (2, 3), (3, 9)),
    ((4, 6), (0, 1), (4, 6)),
    ((1, 1, 3, 7), (2, 3), (5, 11)),
]


def run_each(model: onnx.ModelProto, feeds: list[dict]) -> list[list]:
    """``run_onnxruntime(model, fed)`` for each of ``feeds``, through one session (made once, not
    once a feed), closed before returning: an open session's idle threads spin, taking a core
    from the lowering that runs next."""
    runner = OnnxruntimeRunner(model)
    return [runner(fed) for fed in feeds]


_ORIGINAL_OUTPUTS: dict[tuple, list] = {}


def _original_outputs(model: onnx.ModelProto, feeds: list[dict]) -> list[list]:
    """``run_onnxruntime(model, fed)`` for each of ``feeds``, once per model and feeds in the
    session (the original is the same at every target it is converted to), those not yet run
    through one session."""
    serialized = model.SerializeToString()
    keys = [
        (serialized, tuple((k, v.dtype.str, v.shape, v.tobytes()) for k, v in sorted(fed.items()))) for fed in feeds
    ]
    missing = {key: fed for key, fed in zip(keys, feeds, strict=True) if key not in _ORIGINAL_OUTPUTS}
    if missing:
        _ORIGINAL_OUTPUTS.update(zip(missing, run_each(model, list(missing.values())), strict=True))
    return [_ORIGINAL_OUTPUTS[key] for key in keys]


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("element_type", sorted(TYPES))
@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_policy_at_run_time_bit_for_bit(target, element_type, policy):
    dtype = TYPES[element_type]
    same = assert_same_bits if element_type == TensorProto.FLOAT else assert_same_values
    # The model depends on the rank and axes, not on the shape or sizes fed (its dimensions are
    # symbolic): each is converted once, and run on every shape and sizes of SHAPES it takes.
    models: dict[tuple, list[tuple]] = {}
    for (shape, axes, sizes), mode, nearest in itertools.product(
        SHAPES, ("half_pixel", "asymmetric"), ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
    ):
        models.setdefault((len(shape), axes, mode, nearest), []).append((shape, sizes))
    for (rank, axes, mode, nearest), cases in models.items():
        model = policy_model(
            element_type, rank, axes, policy, mode="nearest", coordinate_transformation_mode=mode,
            nearest_mode=nearest,
        )  # fmt: skip
        converted = lowered(model, target)
        feeds = [
            {"x": edge_array(shape, dtype, seed=len(shape)), "sizes": np.array(sizes, np.int64)}
            for shape, sizes in cases
        ]
        wanted = _original_outputs(with_axes_counted_from_the_front(model), feeds)
        for (shape, sizes), (got,), (want,) in zip(cases, run_each(converted, feeds), wanted, strict=True):
            same(got, want, f"{shape} {axes} {sizes} {mode} {nearest}")


def test_exact_half_rounds_away_from_zero():
    """2.5 becomes 3 (onnxruntime's std::round), not 2 (Round's half to even)."""
    model = policy_model(TensorProto.FLOAT, 4, (2, 3), "not_larger", mode="nearest")
    feeds = {"x": np.arange(10, dtype=np.float32).reshape(1, 1, 2, 5), "sizes": np.array([1, 100], np.int64)}
    (want,) = run_onnxruntime(model, feeds)
    assert want.shape == (1, 1, 1, 3)
    (got,) = run_onnxruntime(lowered(model, 13), feeds)
    assert_same_bits(got, want)


@pytest.mark.parametrize(
    ("attributes", "words"),
    [
        ({"mode": "linear"}, "computed at run time"),
        ({"mode": "nearest", "coordinate_transformation_mode": "align_corners"}, "computed at run time"),
        ({"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"}, "computed at run time"),
    ],
)
def test_policy_at_run_time_refused_where_lengths_are_read(attributes, words):
    message = refusal(policy_model(TensorProto.FLOAT, 4, (2, 3), "not_smaller", **attributes), 13)
    assert "Resize-19 keeps the aspect ratio" in message and words in message and "opset 13" in message


# -- antialias and half_pixel_symmetric: the Resize rule, within its stated tolerance -----------------

FILTER_CASES = [
    "test_resize_downsample_scales_linear_antialias",
    "test_resize_downsample_sizes_linear_antialias",
    "test_resize_downsample_scales_cubic_antialias",
    "test_resize_downsample_sizes_cubic_antialias",
    "test_resize_downsample_scales_linear_half_pixel_symmetric",
    "test_resize_upsample_scales_linear_half_pixel_symmetric",
]


_SWEPT: dict[tuple[str, int], object] = {}


def swept(case, target: int):
    """``sweep_case(case, target)``, swept once per case and target in the session: one
    conversion's outcome, which several assertions read (what ours does only: where ours
    converts, onnx's converter is not run, see ours_where_it_converts)."""
    if (case.name, target) not in _SWEPT:
        _SWEPT[case.name, target] = ours_where_it_converts(case, target) or sweep_case(case, target)
    return _SWEPT[case.name, target]


@slow_but_a_sample()
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", FILTER_CASES)
def test_backend_filter_cases_go_down_by_the_rule_within_its_tolerance(name, target):
    (case,) = [c for c in node_cases() if c.name == name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(case.model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert "Resize-19" in result.report.rewritten, dict(result.report.rewritten)
    assert not any(node.op_type == "Resize" for node in result.model.graph.node)
    feeds = [
        {info.name: value for info, value in zip(case.model.graph.input, inputs, strict=True)}
        for inputs, _ in case.data_sets
    ]
    for (_, (want,)), (got,) in zip(case.data_sets, run_each(result.model, feeds), strict=True):
        tolerance = RESIZE_TOLERANCE[helper.np_dtype_to_tensor_dtype(want.dtype)]
        assert not tolerance.mismatches(got, want).any(), np.abs(got - want).max()
        assert swept(case, target).ours == "converts"


def filter_model(element_type: int, kind: str, count: int, **attributes) -> onnx.ModelProto:
    inputs = ["x", "", "scales"] if kind == "scales" else ["x", "", "", "sizes"]
    return make_model(
        [helper.make_node("Resize", inputs, ["y"], name="resize", **attributes)],
        [
            helper.make_tensor_value_info("x", element_type, ["n", "c", "h", "w"]),
            helper.make_tensor_value_info(kind, TensorProto.FLOAT if kind == "scales" else TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info("y", element_type, ["n", "c", "p", "q"])],
        opset=19,
    )


def lowered_by_the_rule(model: onnx.ModelProto) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=["Resize"])
    assert result.report.complete, result.report.lines()
    assert not any(node.op_type == "Resize" for node in result.model.graph.node)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


FILTERS = [
    (mode, coordinates, antialias, exclude)
    for mode, coordinates, antialias, exclude in itertools.product(
        ("linear", "cubic"), ("half_pixel", "half_pixel_symmetric", "asymmetric"), (0, 1), (0, 1)
    )
    if not (mode == "linear" and exclude and not antialias)  # onnxruntime refuses it; so does the rule
]


@pytest.mark.slow
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
@pytest.mark.parametrize(("mode", "coordinates", "antialias", "exclude"), FILTERS)
def test_rule_within_its_tolerance_of_the_reference(mode, coordinates, antialias, exclude, element_type):
    """Against onnx.reference; antialias with exclude_outside against onnxruntime's kernel (float
    and float16, sizes), where onnx.reference 1.23 strays from both when upsampling."""
    dtype = {TensorProto.FLOAT: np.float32, TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16}[
        element_type
    ]
    if antialias and exclude and element_type == TensorProto.DOUBLE:
        return  # onnxruntime has no double Resize-19
    rng = np.random.default_rng(7)
    attributes = {
        "mode": mode, "coordinate_transformation_mode": coordinates, "antialias": antialias,
        "exclude_outside": exclude, "axes": [2, 3],
    }  # fmt: skip
    trials = []  # (kind, shape, given, x), drawn as the trials come
    for trial in range(6):
        # onnxruntime places points apart from the reference where s · d is not whole: sizes only
        kind = "sizes" if antialias and exclude else ("scales", "sizes")[trial % 2]
        shape = (1, 2, *(int(v) for v in rng.integers(2, 12, 2)))
        given = (
            rng.uniform(0.3, 3, 2).astype(np.float32) if kind == "scales" else rng.integers(1, 25, 2).astype(np.int64)
        )
        trials.append((kind, shape, given, rng.standard_normal(shape).astype(dtype)))
    # one model per kind: lowered once, it and the original each run on that kind's trials in one session
    outputs = {}
    for kind in dict.fromkeys(kind for kind, *_ in trials):
        model = filter_model(element_type, kind, 2, **attributes)
        feeds = [{"x": x, kind: given} for each, _, given, x in trials if each == kind]
        outputs[kind] = iter(run_each(lowered_by_the_rule(model), feeds))
        if antialias and exclude:
            outputs[kind, "original"] = iter(run_each(model, feeds))
    for kind, shape, given, x in trials:
        (got,) = next(outputs[kind])
        if antialias and exclude:
            (want,) = next(outputs[kind, "original"])
        else:
            want = resize_reference(x, **{kind: given}, **attributes)
        assert got.shape == want.shape and got.dtype == want.dtype
        stray = RESIZE_TOLERANCE[element_type].mismatches(got, want)
        assert not stray.any(), f"{kind} {given} {shape}: {np.abs(got.astype(float) - want).max()}"


def crop_model(element_type: int, kind: str, **attributes) -> onnx.ModelProto:
    """Resize-19 of x [n, c, h, w] on axes [3, 2], its roi (float, [4]) and scales or sizes fed."""
    inputs = ["x", "roi", "scales"] if kind == "scales" else ["x", "roi", "", "sizes"]
    return make_model(
        [helper.make_node("Resize", inputs, ["y"], name="resize", axes=[3, 2], **attributes)],
        [
            helper.make_tensor_value_info("x", element_type, ["n", "c", "h", "w"]),
            helper.make_tensor_value_info("roi", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info(kind, TensorProto.FLOAT if kind == "scales" else TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", element_type, ["n", "c", "p", "q"])],
        opset=19,
    )


def assert_within_tolerance_of_onnxruntime(model_of, element_type: int, kind: str, feeds: list[dict]) -> None:
    """The rule's lowering of ``model_of(element_type)`` within its tolerance of onnxruntime's
    kernel on each feed (double: its float kernel on X rounded to float; onnxruntime has no
    double Resize-19)."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    lowered_outputs = run_each(lowered_by_the_rule(model_of(element_type)), feeds)
    if element_type == TensorProto.DOUBLE:
        single = [{**fed, "x": fed["x"].astype(np.float32)} for fed in feeds]
        wanted = run_each(model_of(TensorProto.FLOAT), single)
    else:
        wanted = run_each(model_of(element_type), feeds)
    for fed, (got,), (want,) in zip(feeds, lowered_outputs, wanted, strict=True):
        assert got.shape == want.shape and got.dtype == dtype
        stray = RESIZE_TOLERANCE[element_type].mismatches(got, want)
        assert not stray.any(), f"{kind} {fed[kind]} {fed['x'].shape}: {np.abs(got.astype(float) - want).max()}"


CROPS = [
    (mode, coordinates, exclude)
    for mode, coordinates, exclude in itertools.product(
        ("linear", "cubic"), ("tf_crop_and_resize", "pytorch_half_pixel"), (0, 1)
    )
    if not (mode == "linear" and exclude)  # onnxruntime refuses it; so does the rule
]


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE])
@pytest.mark.parametrize(("mode", "coordinates", "exclude"), CROPS)
def test_crop_and_pytorch_half_pixel_within_tolerance_of_onnxruntime(mode, coordinates, exclude, element_type):
    """Against onnxruntime's kernel (double: its float kernel on X rounded to float), which places
    the points by the output length o where the reference places them by s · d, and leaves an
    axis of scale 1 uncropped; crops reversed and reaching past X (extrapolated), scales of 1
    and lengths kept among the draws."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    rng = np.random.default_rng(11)
    attributes = {
        "mode": mode, "coordinate_transformation_mode": coordinates, "exclude_outside": exclude,
        "extrapolation_value": -3.5,
    }  # fmt: skip
    for kind in ("scales", "sizes"):
        feeds = []
        for trial in range(8):
            shape = (1, 2, *(int(v) for v in rng.integers(1, 10, 2)))
            if kind == "scales":
                given = rng.uniform(0.3, 3, 2).astype(np.float32)
                given[trial % 2] = (1.0, 1.0 + 0.5 / shape[3 - trial % 2])[trial % 4 // 2]  # s = 1; o = d, s > 1
            else:
                given = rng.integers(1, 12, 2).astype(np.int64)
                given[trial % 2] = shape[3 - trial % 2]  # o = d
            roi = rng.uniform(-0.3, 1.3, 4).astype(np.float32)
            feeds.append({"x": rng.standard_normal(shape).astype(dtype), "roi": roi, kind: given})
        model_of = functools.partial(crop_model, kind=kind, **attributes)
        assert_within_tolerance_of_onnxruntime(model_of, element_type, kind, feeds)


ALIGNED = [
    (mode, antialias, exclude)
    for mode, antialias, exclude in itertools.product(("linear", "cubic"), (0, 1), (0, 1))
    if not (mode == "linear" and exclude and not antialias)  # onnxruntime refuses it; so does the rule
]


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE])
@pytest.mark.parametrize(("mode", "antialias", "exclude"), ALIGNED)
def test_align_corners_within_tolerance_of_onnxruntime(mode, antialias, exclude, element_type):
    """Against onnxruntime's kernel (double: its float kernel on X rounded to float), which
    places point i at i · (d - 1) / (o - 1), o the output's length, where the backend's reference
    takes o as s · d: scales whose s · d is not whole among the draws (0.2 to 3.5), lengths of 1
    (o = 1: every point at 0), downsampling under antialias."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    rng = np.random.default_rng(13)
    attributes = {"mode": mode, "coordinate_transformation_mode": "align_corners", "antialias": antialias,
                  "exclude_outside": exclude, "axes": [2, 3]}  # fmt: skip
    for kind in ("scales", "sizes"):
        feeds = []
        for _ in range(10):
            shape = (1, 2, *(int(v) for v in rng.integers(1, 12, 2)))
            given = (
                rng.uniform(0.2, 3.5, 2).astype(np.float32)
                if kind == "scales"
                else rng.integers(1, 25, 2).astype(np.int64)
            )
            feeds.append({"x": rng.standard_normal(shape).astype(dtype), kind: given})
        model_of = functools.partial(filter_model, kind=kind, count=2, **attributes)
        assert_within_tolerance_of_onnxruntime(model_of, element_type, kind, feeds)


@pytest.mark.parametrize("mode", ["linear", "cubic", "nearest"])
def test_align_corners_and_nearest_halvings_on_bfloat16_against_onnx_reference(mode):
    """bfloat16 X (onnxruntime runs no bfloat16 Resize): the lowered model, run in onnxruntime,
    within the rule's bfloat16 tolerance of onnx.reference (align_corners by sizes, where the
    reference places points as onnxruntime does); mode nearest halving (or doubling) by constant
    scales bit for bit."""
    rng = np.random.default_rng(12)
    for shape, sizes in (((1, 2, 5, 4), (3, 7)), ((2, 1, 8, 6), (8, 2)), ((1, 1, 4, 4), (1, 4))):
        x = rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
        if mode == "nearest":
            scales = (1, 1, *(0.5 if length % 2 == 0 else 2.0 for length in shape[2:]))  # (halved where even)
            model, fed = (
                nearest_model(shape, "scales", scales, coordinate_transformation_mode="align_corners"),
                {"x": x},
            )
            model.graph.input[0].type.tensor_type.elem_type = TensorProto.BFLOAT16
            model.graph.output[0].type.tensor_type.elem_type = TensorProto.BFLOAT16
        else:
            model = filter_model(TensorProto.BFLOAT16, "sizes", 2, mode=mode,
                                 coordinate_transformation_mode="align_corners", axes=[2, 3])  # fmt: skip
            fed = {"x": x, "sizes": np.array(sizes, np.int64)}
        [got] = run_onnxruntime(lowered_by_the_rule(model), fed)
        [want] = run_reference(model, fed)
        assert got.dtype == want.dtype == ml_dtypes.bfloat16 and got.shape == want.shape, shape
        if mode == "nearest":
            assert got.tobytes() == want.tobytes(), shape
        else:
            assert not RESIZE_TOLERANCE[TensorProto.BFLOAT16].mismatches(got, want).any(), shape


def test_align_corners_places_points_by_the_output_length_as_onnxruntime():
    """Length 4 to 2 by a scale of 0.6 (s · d = 2.4): onnxruntime and the rule place the second
    point at 1 · 3 / (2 - 1) = 3 and read 4; the backend's reference places it at 3 / 1.4."""
    model = filter_model(TensorProto.FLOAT, "scales", 2, mode="linear", coordinate_transformation_mode="align_corners",
                         axes=[2, 3])  # fmt: skip
    fed = {"x": np.arange(1, 9, dtype=np.float32).reshape(1, 1, 2, 4), "scales": np.float32([1, 0.6])}
    (got,) = run_onnxruntime(lowered_by_the_rule(model), fed)
    (want,) = run_onnxruntime(model, fed)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got.tolist() == [[[[1.0, 4.0], [5.0, 8.0]]]]
    np.testing.assert_allclose(resize_reference(fed["x"], scales=fed["scales"], axes=[2, 3], mode="linear",
                                                coordinate_transformation_mode="align_corners")[0, 0, 0],
                               [1, 1 + 3 / 1.4], rtol=1e-6)  # fmt: skip


def test_a_crop_inside_if_branches_and_local_functions():
    """tf_crop_and_resize where an If branch or a local function holds the Resize: lowered
    there too, within the rule's tolerance of onnxruntime's kernel, either branch taken."""
    model = crop_model(TensorProto.FLOAT, "sizes", mode="linear", coordinate_transformation_mode="tf_crop_and_resize")
    rng = np.random.default_rng(9)
    feeds = {
        "x": rng.standard_normal((1, 2, 5, 4)).astype(np.float32),
        "roi": np.array([0.1, -0.2, 0.8, 1.1], np.float32),
        "sizes": np.array([3, 7], np.int64),
    }
    for label, nested in nested_forms(model).items():
        made = lowered_wholly(nested, "Resize")
        for branch in (True, False):
            fed = {**feeds, "branch": np.array(branch)}
            [got], [want] = run_onnxruntime(made, fed), run_onnxruntime(nested, fed)
            assert not RESIZE_TOLERANCE[TensorProto.FLOAT].mismatches(got, want).any(), f"{label} {branch}"


def test_align_corners_and_a_nearest_halving_inside_if_branches_and_local_functions():
    """align_corners (cubic, sizes fed) and mode nearest halving a static length by a constant
    scale where an If branch or a local function holds the Resize: lowered there too, within the
    rule's tolerance of onnxruntime's kernel (nearest: bit for bit), either branch taken."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 2, 6, 4)).astype(np.float32)
    aligned = filter_model(TensorProto.FLOAT, "sizes", 2, mode="cubic", coordinate_transformation_mode="align_corners",
                           axes=[2, 3])  # fmt: skip
    halved = nearest_model((1, 2, 6, 4), "scales", (1, 1, 0.5, 0.5), coordinate_transformation_mode="half_pixel")
    for model, feeds in ((aligned, {"x": x, "sizes": np.array([3, 7], np.int64)}), (halved, {"x": x})):
        for label, nested in nested_forms(model).items():
            made = lowered_wholly(nested, "Resize")
            for branch in (True, False):
                fed = {**feeds, "branch": np.array(branch)}
                [got], [want] = run_onnxruntime(made, fed), run_onnxruntime(nested, fed)
                if model is halved:
                    assert got.tobytes() == want.tobytes(), f"{label} {branch}"
                else:
                    assert not RESIZE_TOLERANCE[TensorProto.FLOAT].mismatches(got, want).any(), f"{label} {branch}"


@pytest.mark.parametrize("coordinates", ["half_pixel", "asymmetric", "tf_crop_and_resize"])
def test_x_comes_back_whole_where_no_length_changes_as_onnxruntime_gives_it(coordinates):
    """Scales 1.1 on lengths 4 and 5 keep both (floor(4.4) = 4, floor(5.5) = 5): onnxruntime
    returns X bit for bit, every value (NaN, infinities, -0 as +0) where it stands; the reference
    would resize it by 1.1 and crop it."""
    model = crop_model(TensorProto.FLOAT, "scales", mode="linear", coordinate_transformation_mode=coordinates)
    x = edge_array((1, 2, 4, 5), np.float32, seed=5)
    fed = {"x": x, "roi": np.array([0.1, 0.2, 0.7, 0.9], np.float32), "scales": np.array([1.1, 1.1], np.float32)}
    (got,) = run_onnxruntime(lowered_by_the_rule(model), fed)
    (want,) = run_onnxruntime(model, fed)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize(
    ("axes", "reason"),
    [([4], "not all axes of X's rank 4"), ([-5], "not all axes of X's rank 4"), ([3, -1], "name an axis twice")],
)
def test_axes_the_op_fails_on_are_left_with_why(mode, axes, reason):
    """Axes outside [-r, r - 1] or named twice fail the op (onnx's checker and onnxruntime):
    the rule leaves the node, with scales or sizes (a whole multiple: the nearest path reads
    each axis's length), rather than wrapping an axis round."""
    for name, given in (("scales", np.array([2.0] * len(axes), np.float32)), ("sizes", np.array([10] * len(axes)))):
        inputs = ["x", "", name] if name == "scales" else ["x", "", "", name]
        model = make_model(
            [helper.make_node("Resize", inputs, ["y"], name="resize", mode=mode, axes=axes)],
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)],
            opset=19,
            initializer=[onnx.numpy_helper.from_array(given, name)],
        )
        (left,) = lowering.lower_model(model, ops=["Resize"]).report.remaining
        assert reason in left.reason, (name, left.reason)


@pytest.mark.parametrize(
    ("inputs", "attributes", "reason"),
    [
        (["x", "", "scales"], {}, "with a roi and without antialias only"),
        (["x", "roi", "scales"], {"antialias": 1}, "with a roi and without antialias only"),
        (["x", "roi3", "scales"], {}, "roi has shape [3], not [4]"),
    ],
)
def test_a_crop_the_rule_cannot_place_is_left_with_why(inputs, attributes, reason):
    model = make_model(
        [
            helper.make_node(
                "Resize",
                inputs,
                ["y"],
                axes=[2, 3],
                mode="linear",
                coordinate_transformation_mode="tf_crop_and_resize",
                **attributes,
            )
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
            helper.make_tensor_value_info("roi", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("scales", TensorProto.FLOAT, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "p", "q"])],
        opset=19,
        initializer=[numpy_helper.from_array(np.array([0.1, 0.2, 0.9], np.float32), "roi3")],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=["Resize"])
    assert not result.report.complete
    assert reason in "\n".join(result.report.lines()), result.report.lines()


@pytest.mark.parametrize("kind", ["scales", "sizes"])
def test_axes_of_a_constant_unit_scale_are_not_resized(kind):
    """Scales [1, 1, 2, 1] (sizes [2, 3, 8, 5] on X [2, 3, 4, 5]), constant: one axis resized,
    one ReduceSum of taps; the others come through as they are, within the tolerance of
    onnxruntime's kernel on the whole."""
    given = np.array([1, 1, 2, 1], np.float32) if kind == "scales" else np.array([2, 3, 8, 5], np.int64)
    inputs = ["x", "", "scales"] if kind == "scales" else ["x", "", "", "sizes"]
    model = make_model(
        [helper.make_node("Resize", inputs, ["y"], mode="linear")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 8, 5])],
        opset=19,
        initializer=[numpy_helper.from_array(given, kind)],
    )
    made = lowered_by_the_rule(model)
    assert [node.op_type for node in made.graph.node].count("ReduceSum") == 1
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5)).astype(np.float32)
    [got], [want] = run_onnxruntime(made, {"x": x}), run_onnxruntime(model, {"x": x})
    assert not RESIZE_TOLERANCE[TensorProto.FLOAT].mismatches(got, want).any()


def test_a_tap_of_weight_zero_reads_nothing():
    """Axes of scale 1 come through as they are, infinities and NaN included (the taps beside a
    point weigh 0); -0 comes back +0 (onnxruntime's ReduceSum adds from +0), equal in value."""
    model = filter_model(TensorProto.FLOAT, "scales", 4, mode="linear", antialias=1)
    x = edge_array((2, 3, 4, 4), np.float32, seed=3)
    (got,) = run_onnxruntime(lowered_by_the_rule(model), {"x": x, "scales": np.array([1, 1, 1, 1], np.float32)})
    np.testing.assert_array_equal(got, x)  # NaN where NaN, -0 equal to +0


@pytest.mark.parametrize(
    ("attributes", "reason"),
    [
        ({"mode": "linear", "antialias": 1, "coordinate_transformation_mode": "tf_crop_and_resize"},
         "tf_crop_and_resize is lowered with a roi and without antialias only"),
        ({"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric",
          "keep_aspect_ratio_policy": "not_larger"}, "keep_aspect_ratio_policy not_larger"),
    ],
)  # fmt: skip
def test_what_neither_adapter_nor_rule_can_say_is_refused_with_both_reasons(attributes, reason):
    model = filter_model(TensorProto.FLOAT, "sizes", 2, axes=[2, 3], **attributes)
    message = refusal(model, 13)
    assert "Resize-19" in message and "cannot go to opset 13" in message
    assert "nor by its rule" in message and reason in message, message


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in FILTER_CASES if "symmetric" in n])
def test_half_pixel_symmetric_to_18_is_decomposed_not_kept(name):
    """Resize-18 has no half_pixel_symmetric: the known change refuses keeping it, the rule lowers it."""
    (case,) = [c for c in node_cases() if c.name == name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(case.model, target_opset=18, ops=[])
    assert not any(node.op_type == "Resize" for node in result.model.graph.node)
    assert swept(case, 18).ours == "converts" and not swept(case, 18).ours_wrong


def test_a_scale_of_zero_gives_an_empty_output_not_endless_taps():
    model = filter_model(TensorProto.FLOAT, "scales", 4, mode="cubic", antialias=1)
    feeds = {"x": np.ones((1, 1, 4, 4), np.float32), "scales": np.array([1, 1, 0, 0.5], np.float32)}
    (got,) = run_onnxruntime(lowered_by_the_rule(model), feeds)
    assert got.shape == (1, 1, 0, 2)


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [10])
@pytest.mark.parametrize("target", [None, 11, 13])
@pytest.mark.parametrize("fast", [True, False])
def test_a_requested_resize_of_a_version_the_rule_does_not_serve_is_left_and_reported(opset, target, fast):
    """ops=["Resize"] on Resize-10, which the rule (11, 13, 18, 19) does not serve: the node is
    left (moved where converting) and the report says why, on both paths alike (it failed the
    pass's own count of requested ops left before)."""
    model = filter_model(TensorProto.FLOAT, "scales", 4, mode="linear")
    model.opset_import[0].version = opset
    if opset == 10:
        model.graph.node[0].input[:] = ["x", "scales"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=["Resize"], target_opset=target, fast=fast)
    (left,) = result.report.remaining
    assert left.op_type == "Resize" and "rules cover versions 11, 13, 18, 19" in left.reason, left
    assert [node.op_type for node in result.model.graph.node if node.op_type != "Constant"] == ["Resize"]
    other = lowering.lower_model(model, ops=["Resize"], target_opset=target, fast=not fast)
    assert other.model.SerializeToString() == result.model.SerializeToString()


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_resize_11_and_13_are_lowered_by_the_same_rule_within_its_tolerance(mode, opset):
    """TorchScript exports Resize-13 (cubic, linear): "no rule for Resize-13" before. Versions 11
    and 13 mean what 18 does in these modes (every axis, no antialias)."""
    rng = np.random.default_rng(opset)
    model = filter_model(TensorProto.FLOAT, "scales", 4, mode=mode, coordinate_transformation_mode="half_pixel")
    model.opset_import[0].version = opset
    model.graph.node[0].input[1] = "roi"  # (Resize-11 takes roi as a required input; 13 an empty one alike)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros(0, np.float32), "roi"))
    lowered = lowered_by_the_rule(model)
    onnx.checker.check_model(lowered, full_check=True)
    every_scales = ([1, 1, 2, 2], [1, 1, 0.5, 1.5], [1, 1, 1.75, 0.6])
    every_feeds = [
        {"x": rng.standard_normal((1, 2, 5, 6)).astype(np.float32), "scales": np.array(scales, np.float32)}
        for scales in every_scales
    ]
    for scales, feeds, (got,) in zip(every_scales, every_feeds, run_each(lowered, every_feeds), strict=True):
        x = feeds["x"]
        want = resize_reference(x, scales=feeds["scales"], mode=mode, coordinate_transformation_mode="half_pixel")
        assert got.shape == want.shape
        assert not RESIZE_TOLERANCE[TensorProto.FLOAT].mismatches(got, want).any(), scales


NEAREST_COORDINATES = (
    "half_pixel", "asymmetric", "pytorch_half_pixel", "align_corners", "tf_half_pixel_for_nn", "half_pixel_symmetric",
)  # fmt: skip


# (opset, coordinate mode) pairs: half_pixel_symmetric exists from Resize-19 only
NEAREST_OPSETS = [
    (opset, mode)
    for opset in (11, 13, 19)
    for mode in NEAREST_COORDINATES
    if opset >= 19 or mode != "half_pixel_symmetric"
]


@slow_but_a_sample()
@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize(("opset", "coordinates"), NEAREST_OPSETS)
def test_nearest_with_whole_number_scales_gathers_what_onnxruntime_gathers(coordinates, nearest_mode, opset):
    """mode nearest (U-Net's upsample_nearest2d: "mode nearest is not a filter" before), bit for
    bit with onnxruntime's kernel, on float, float16, uint8 and int32, every length from 1 to 9;
    the result passes onnx's full checker."""
    rng = np.random.default_rng(opset)
    compared = 0
    for element_type, dtype in (
        (TensorProto.FLOAT, np.float32),
        (TensorProto.FLOAT16, np.float16),
        (TensorProto.UINT8, np.uint8),
        (TensorProto.INT32, np.int32),
    ):
        for scales in ([1, 1, 2, 2], [1, 1, 3, 1], [1, 2, 1, 4]):
            model = make_model(
                [
                    helper.make_node(
                        "Resize",
                        ["x", "roi", "scales"],
                        ["y"],
                        name="resize",
                        mode="nearest",
                        coordinate_transformation_mode=coordinates,
                        nearest_mode=nearest_mode,
                    )
                ],  # fmt: skip
                [helper.make_tensor_value_info("x", element_type, ["n", "c", "h", "w"])],
                [helper.make_tensor_value_info("y", element_type, ["n", "c", "p", "q"])],
                opset=opset,
                initializer=[
                    onnx.numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
                    onnx.numpy_helper.from_array(np.array(scales, np.float32), "scales"),
                ],
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lowered = lowered_by_the_rule(model)
            onnx.checker.check_model(lowered, full_check=True)
            sizes = ((1, 1), (3, 5), (9, 2))
            feeds = [{"x": rng.integers(0, 200, (1, 2, height, width)).astype(dtype)} for height, width in sizes]
            for (height, width), (want,), (got,) in zip(
                sizes, run_each(model, feeds), run_each(lowered, feeds), strict=True
            ):
                assert got.shape == want.shape and got.tobytes() == want.tobytes(), (scales, height, width)
                compared += 1
    assert compared == 36


def nearest_model(shape, name: str, given, axes=None, **attributes) -> onnx.ModelProto:
    """Resize(x, scales or sizes: a constant ``name``) in mode nearest, X of ``shape``, opset 19."""
    inputs = ["x", "", "scales"] if name == "scales" else ["x", "", "", "sizes"]
    dtype = np.float32 if name == "scales" else np.int64
    return make_model(
        [helper.make_node("Resize", inputs, ["y"], name="resize", mode="nearest", **attributes,
                          **({"axes": axes} if axes else {}))],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))],
        opset=19,
        initializer=[onnx.numpy_helper.from_array(np.array(given, dtype), name)],
    )  # fmt: skip


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("nearest_mode", ["round_prefer_floor", "ceil"])
@pytest.mark.parametrize("coordinates", NEAREST_COORDINATES)
def test_nearest_with_exact_scales_or_sizes_gathers_what_onnxruntime_gathers(coordinates, nearest_mode):
    """Constant scales or sizes giving each resized axis of a static length d a scale s = o / d
    that is a whole number or a halving 1 / 2^k (d divisible by 2^k): bit for bit with
    onnxruntime's kernel, ranks 3 to 5, axes named or not; a length not static is declined
    (other scales of static lengths: tests/rules/test_nearest_points.py)."""
    rng = np.random.default_rng(3)
    attributes = {"coordinate_transformation_mode": coordinates, "nearest_mode": nearest_mode}
    for shape, name, given, axes in (
        ((1, 2, 3, 5), "sizes", (1, 2, 6, 5), None),
        ((2, 3, 4), "sizes", (2, 9, 8), None),
        ((1, 1, 2, 3, 2), "sizes", (4, 3, 6), [2, 3, 4]),
        ((1, 2, 4, 4), "sizes", (8, 8), [2, 3]),
        ((1, 2, 8, 12), "sizes", (4, 3), [2, 3]),  # halvings: by 2 and by 4
        ((1, 2, 8, 6), "scales", (1, 1, 0.5, 2), None),
        ((1, 2, 6, 5), "scales", (1, 1, 0.5, 1), None),  # (6 halved; 5, of scale 1, kept)
        ((2, 16, 6), "scales", (0.125, 0.5), [1, 2]),
    ):
        model = nearest_model(shape, name, given, axes, **attributes)
        lowered = lowered_by_the_rule(model)
        fed = {"x": rng.standard_normal(shape).astype(np.float32)}
        ((want,),), ((got,),) = run_each(model, [fed]), run_each(lowered, [fed])
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), (shape, given)
    for shape, name, given in (
        ((1, 2, None, 5), "sizes", (1, 2, 6, 10)),
        ((1, 2, None, 4), "scales", (1, 1, 0.5, 0.5)),
    ):
        model = nearest_model(shape, name, given, **attributes)
        left = lowering.lower_model(model, ops=["Resize"]).report.remaining
        assert len(left) == 1 and "constant scales or sizes of X of a static shape" in left[0].reason, (shape, given)


@pytest.mark.parametrize(
    ("inputs", "given"),
    [(["x", "", "scales"], np.array([1, 1, 1.5, 2], np.float32)), (["x", "", "", "sizes"], np.array([1, 1, 6, 8]))],
)
def test_nearest_with_other_scales_or_sizes_of_lengths_not_static_is_left_with_why(inputs, given):
    name = inputs[-1]
    model = make_model(
        [helper.make_node("Resize", inputs, ["y"], name="resize", mode="nearest")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, None, None])],
        opset=19,
        initializer=[onnx.numpy_helper.from_array(given, name)],
    )
    (left,) = lowering.lower_model(model, ops=["Resize"]).report.remaining
    assert "constant scales or sizes of X of a static shape" in left.reason
