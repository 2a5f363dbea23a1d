"""GridSample lowered by its rule (rules/gridsample.py) where the target opset cannot say it: below
16 (no GridSample) for 4-D and 5-D inputs, and at 16-19 for 5-D and bfloat16 inputs (GridSample-16
takes neither). Every ONNX backend case converted to 11, 13 and 17 against its expected outputs;
random inputs and grids reaching past the borders against onnxruntime's own GridSample-20 and the
rule's numpy reference, within the tolerance the rule states; the two paths; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from lowering.rules.gridsample import onnxruntime_follows_the_spec
from onnx import TensorProto, helper
from support import (
    assert_within_stated,
    make_model,
    op_type_set,
    refusal,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import node_cases_of, sweep_case

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for
from lowering.verification.runtime import OnnxruntimeRunner, ReferenceRunner, run_onnxruntime, run_reference

GRID_SAMPLE = rule_for("", "GridSample")
GRID_SAMPLE_TOLERANCE = GRID_SAMPLE.tolerance
gridsample_reference = GRID_SAMPLE.reference
BACKEND_CASES = node_cases_of("GridSample")
MODES = ("nearest", "linear", "cubic")
PADDINGS = ("zeros", "border", "reflection")


def assert_within(got: np.ndarray, want: np.ndarray, where: str = "") -> None:
    """Within the tolerance the rule states for the type."""
    assert_within_stated(GRID_SAMPLE_TOLERANCE, got, want, where)


def run_each(model: onnx.ModelProto, feeds: list[dict], *, reference: bool = False) -> list[list]:
    """``run_onnxruntime(model, fed)`` (or ``run_reference``) for each of ``feeds``, through one
    session (made once, not once a feed: a lowered GridSample's takes milliseconds), closed
    before returning: an open session's idle threads spin, taking a core from what runs next."""
    runner = ReferenceRunner(model) if reference else OnnxruntimeRunner(model)
    return [runner(fed) for fed in feeds]


def grid_sample_model(x_shape, grid_shape, *, element_type=TensorProto.FLOAT, opset=20, **attributes):
    return make_model(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", **attributes)],
        [
            helper.make_tensor_value_info("x", element_type, x_shape),
            helper.make_tensor_value_info("grid", element_type, grid_shape),
        ],
        [helper.make_tensor_value_info("y", element_type, [f"d{i}" for i in range(len(x_shape))])],
        opset=opset,
    )


# -- every backend case, converted ---------------------------------------------------------------


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 18
    assert sum("volumetric" in name for name in BACKEND_CASES) >= 4


BACKEND_PAIRS = [(target, name) for name in sorted(BACKEND_CASES) for target in (11, 13, 17)]


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), BACKEND_PAIRS, ids=[f"{n}-to{t}" for t, n in BACKEND_PAIRS])
def test_backend_case_converted(target, name):
    """Below 16 every case is decomposed; at 17 a 4-D case keeps GridSample-16 (the adapter
    renames its mode) and a 5-D one is decomposed. Outputs within the stated tolerance of the
    expected ones (onnx.reference's)."""
    case = BACKEND_CASES[name]
    result = lowering.lower_model(case.model, target_opset=target, ops=[])
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    volumetric = len(case.model.graph.input[0].type.tensor_type.shape.dim) == 5
    kept = target >= 16 and not volumetric
    assert ("GridSample" in op_type_set(result.model)) == kept
    if not kept:
        assert dict(result.report.rewritten) == {f"GridSample-{schemas.version_in_force('GridSample', 22)}": 1}
    feeds = [
        {info.name: value for info, value in zip(case.model.graph.input, inputs, strict=True)}
        for inputs, _ in case.data_sets
    ]
    for (_, expected), (got,) in zip(case.data_sets, run_each(result.model, feeds), strict=True):
        assert_within(got, expected[0], f"{name} at {target}")


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), BACKEND_PAIRS, ids=[f"{n}-to{t}" for t, n in BACKEND_PAIRS])
def test_corpus_pair_converts(target, name):
    """As tests/version_cases.py sweeps it (the backend's own tolerance)."""
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong


# -- random inputs, grids past the borders -------------------------------------------------------

SPATIAL = {4: ((2, 3, 5, 4), (2, 6, 7, 2)), 5: ((2, 3, 4, 3, 5), (2, 3, 4, 5, 3))}


def random_feeds(rank: int, dtype, seed: int) -> list[dict[str, np.ndarray]]:
    """Standard normal X; grids within [-2.5, 2.5] (every padding reached), far past the borders
    (±750: reflection turns many times), and on the exact borders and half-pixel points."""
    rng = np.random.default_rng(seed)
    x_shape, grid_shape = SPATIAL[rank]
    x = rng.standard_normal(x_shape).astype(dtype)
    near = rng.uniform(-2.5, 2.5, grid_shape)
    far = rng.uniform(-750, 750, grid_shape)
    exact = rng.choice([-1.0, 1.0, 0.0, -0.5, 0.5, -1.5, 1.5, 0.25, -0.75], grid_shape)
    return [{"x": x, "grid": grid.astype(dtype)} for grid in (near, far, exact)]


CASES = [
    (rank, mode, padding, corners) for rank in (4, 5) for mode in MODES for padding in PADDINGS for corners in (0, 1)
]


def _ids(cases):
    return [f"{rank}d-{mode}-{padding}-corners{corners}" for rank, mode, padding, corners in cases]


@slow_but_a_sample()
@pytest.mark.parametrize(("rank", "mode", "padding", "corners"), CASES, ids=_ids(CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float", "double"])
def test_random_grids_against_onnxruntime_and_the_reference(rank, mode, padding, corners, dtype):
    element_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    x_shape, grid_shape = SPATIAL[rank]
    attributes = {"mode": mode, "padding_mode": padding, "align_corners": corners}
    original = grid_sample_model(x_shape, grid_shape, element_type=element_type, **attributes)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    assert "GridSample" not in op_type_set(lowered)
    every_feeds = random_feeds(rank, dtype, seed=rank * 100 + corners)
    follows = onnxruntime_follows_the_spec(rank, mode, padding)
    # each model run on every feed through one session (or one onnx.reference evaluator)
    every_got = run_each(lowered, every_feeds)
    if follows:
        others = run_each(original, every_feeds)
    elif dtype == np.float32:  # onnx.reference computes coordinates in float32 only
        others = run_each(original, every_feeds, reference=True)
    for index, (feeds, (got,)) in enumerate(zip(every_feeds, every_got, strict=True)):
        reference = gridsample_reference(feeds["x"], feeds["grid"], **attributes)
        assert_within(got, reference, "against the numpy reference")
        if follows:
            (native,) = others[index]
            assert_within(got, native, "against onnxruntime's GridSample-20")
        elif dtype == np.float32:
            (spec,) = others[index]
            assert_within(got, spec, "against onnx.reference")


@pytest.mark.slow
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("rank", [4, 5])
def test_16_bit_floats_against_the_reference(element_type, rank):
    """Computed in float32 and rounded once: within one unit in the last place of the numpy
    reference (float64 sums rounded to the type); bfloat16 needs opset 13, and goes below 22 by
    the rule at 17 too (GridSample-16 and -20 take no bfloat16)."""
    dtype = floats.numpy_dtype(element_type)
    x_shape, grid_shape = SPATIAL[rank]
    targets = (11, 17) if element_type == TensorProto.FLOAT16 else (13, 17, 21)
    for mode in MODES if rank == 4 else ("nearest", "linear"):
        for padding in PADDINGS:
            attributes = {"mode": mode, "padding_mode": padding, "align_corners": int(padding == "border")}
            original = grid_sample_model(x_shape, grid_shape, element_type=element_type, opset=22, **attributes)
            for target in targets:
                result = lowering.lower_model(original, target_opset=target, ops=[])
                decomposed = "GridSample" not in op_type_set(result.model)
                assert decomposed == (target < 16 or rank == 5 or element_type == TensorProto.BFLOAT16)
                if not decomposed and not onnxruntime_follows_the_spec(rank, mode, padding):
                    continue  # GridSample-16 kept: onnxruntime's kernel answers (see the float tests)
                every_feeds = random_feeds(rank, dtype, seed=7)
                for feeds, (got,) in zip(every_feeds, run_each(result.model, every_feeds), strict=True):
                    assert_within(got, gridsample_reference(feeds["x"], feeds["grid"], **attributes), f"{target}")


@pytest.mark.slow
def test_reference_meets_onnx_reference():
    """The rule's numpy reference states the op as onnx.reference does (4-D and 5-D, every mode)."""
    for rank, mode, padding, corners in CASES:
        attributes = {"mode": mode, "padding_mode": padding, "align_corners": corners}
        original = grid_sample_model(*SPATIAL[rank], **attributes)
        for feeds in random_feeds(rank, np.float32, seed=3)[:1]:
            (spec,) = run_reference(original, feeds)
            assert_within(gridsample_reference(feeds["x"], feeds["grid"], **attributes), spec, f"{rank} {attributes}")


@pytest.mark.slow
def test_infinities_and_nan_in_x_travel_as_the_op_says():
    """A neighbour read is multiplied by its weight even where that is 0 (0 · inf is NaN), as the
    kernels do; a neighbour outside X under zeros padding is 0 and reads nothing. onnxruntime
    agrees except with border padding, where it clamps both coordinates of a point when one is
    past the borders (a neighbour of weight 0 is then read, inf times 0), the spec only that one."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    x[0, 0, 1, 2], x[0, 1, 3, 4], x[0, 1, 0, 0] = np.inf, np.nan, -np.inf
    grid = rng.uniform(-1.3, 1.3, (1, 5, 6, 2)).astype(np.float32)
    for mode in ("nearest", "linear"):
        for padding in PADDINGS:
            attributes = {"mode": mode, "padding_mode": padding, "align_corners": 0}
            original = grid_sample_model(x.shape, grid.shape, **attributes)
            lowered = lowering.lower(original, target_opset=13, ops=[])
            (got,) = run_onnxruntime(lowered, {"x": x, "grid": grid})
            (spec,) = run_reference(original, {"x": x, "grid": grid})
            assert_within(got, spec, f"{attributes} against onnx.reference")
            assert_within(got, gridsample_reference(x, grid, **attributes), f"{attributes} against numpy")
            if padding != "border":
                (native,) = run_onnxruntime(original, {"x": x, "grid": grid})
                assert_within(got, native, f"{attributes} against onnxruntime")


@pytest.mark.slow
def test_nearest_is_onnxruntimes_bit_for_bit():
    """Nearest reads one element per point and adds nothing: -0 and NaN payloads as onnxruntime
    reads them, every padding (a neighbour outside X under zeros padding is +0, as there)."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    x[:, :, ::2] = -0.0
    x[0, 0, 1, 1] = np.array(0x7FC12345, np.uint32).view(np.float32)
    every_feeds = random_feeds(4, np.float32, seed=12)
    for feeds in every_feeds:
        feeds["x"] = x
    # the grids are of one shape: each model is lowered once and run on every feed in one session
    (grid_shape,) = {feeds["grid"].shape for feeds in every_feeds}
    for padding in PADDINGS:
        for corners in (0, 1):
            attributes = {"mode": "nearest", "padding_mode": padding, "align_corners": corners}
            original = grid_sample_model(x.shape, grid_shape, **attributes)
            lowered = lowering.lower(original, target_opset=11, ops=[])
            for (got,), (want,) in zip(run_each(lowered, every_feeds), run_each(original, every_feeds), strict=True):
                assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), attributes


def test_nodes_of_either_rank_in_one_model_on_both_paths():
    """The rule reads the input's rank, so its expansion is made per node (never replayed for a
    node of another rank): a 4-D and a 5-D node lowered together, plain and fast paths alike."""
    nodes = [
        helper.make_node("GridSample", ["x4", "g4"], ["y4"], name="flat", mode="cubic"),
        helper.make_node("GridSample", ["x5", "g5"], ["y5"], name="volume", mode="linear", padding_mode="reflection"),
    ]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
        for name, shape in (("x4", SPATIAL[4][0]), ("g4", SPATIAL[4][1]), ("x5", SPATIAL[5][0]), ("g5", SPATIAL[5][1]))
    ]
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, [None] * rank) for name, rank in (("y4", 4), ("y5", 5))
    ]
    original = make_model(nodes, inputs, outputs, opset=20)
    feeds = {**{k + "4": v for k, v in _short(random_feeds(4, np.float32, 9)[0]).items()}}
    feeds.update({k + "5": v for k, v in _short(random_feeds(5, np.float32, 9)[0]).items()})
    results = [lowering.lower(original, target_opset=11, ops=[], fast=fast) for fast in (False, True)]
    answers = [run_onnxruntime(model, feeds) for model in results]
    for plain, fast in zip(*answers, strict=True):
        assert np.array_equal(plain, fast, equal_nan=True)
    for got, name in zip(answers[0], ("y4", "y5"), strict=True):
        node = next(n for n in nodes if n.output[0] == name)
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        x, grid = feeds[node.input[0]], feeds[node.input[1]]
        assert_within(got, gridsample_reference(x, grid, **attributes), name)


@pytest.mark.slow
def test_empty_grids_batches_and_channels_give_empty_outputs():
    """No Reshape in the rule: a grid, batch or channel axis of length 0 gives onnxruntime's empty
    output, symbolic or declared lengths alike."""
    for x_shape, grid_shape in [
        ((1, 2, 4, 4), (1, 0, 3, 2)),
        ((0, 2, 4, 4), (0, 2, 3, 2)),
        ((1, 0, 4, 4), (1, 2, 3, 2)),
    ]:
        feeds = {"x": np.ones(x_shape, np.float32), "grid": np.zeros(grid_shape, np.float32)}
        for declared in ((x_shape, grid_shape), (["n", "c", "h", "w"], ["n", "p", "q", 2])):
            for mode in MODES:
                original = grid_sample_model(*declared, mode=mode, padding_mode="reflection")
                (got,) = run_onnxruntime(lowering.lower(original, target_opset=11, ops=[]), feeds)
                (native,) = run_onnxruntime(original, feeds)
                assert got.shape == native.shape and got.size == 0, (declared, mode)


def _short(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"x": feeds["x"], "g": feeds["grid"]}


def test_going_up_from_16_keeps_the_op_with_its_modes_renamed():
    """GridSample-16 is not lowered going up: the up adapter renames its modes (nearest too, which
    onnx's converter gives back unrenamed), and the answers are onnxruntime's own, bit for bit."""
    feeds = random_feeds(4, np.float32, seed=11)[0]
    for mode, named_at_20 in (("bilinear", b"linear"), ("nearest", b"nearest"), ("bicubic", b"cubic")):
        original = grid_sample_model(*SPATIAL[4], opset=16, mode=mode, padding_mode="reflection")
        result = lowering.lower_model(original, target_opset=21, ops=[])
        (node,) = result.model.graph.node
        assert helper.get_attribute_value(next(a for a in node.attribute if a.name == "mode")) == named_at_20
        assert dict(result.report.adapted) == {"GridSample-16→20 via modes renamed": 1}
        (got,), (want,) = run_onnxruntime(result.model, feeds), run_onnxruntime(original, feeds)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), mode


# -- refusals --------------------------------------------------------------------------------------


def test_refusals_name_what_the_rule_cannot_take():
    unknown = grid_sample_model((1, 1, 3, 3), (1, 2, 2, 2), opset=20)
    for info in list(unknown.graph.input):  # reshaped by a shape of unknown length: ranks unknown
        name = info.name
        info.name = f"{name}_given"
        unknown.graph.input.append(helper.make_tensor_value_info(f"{name}_shape", TensorProto.INT64, ["k"]))
        unknown.graph.node.insert(0, helper.make_node("Reshape", [info.name, f"{name}_shape"], [name]))
    message = refusal(unknown, 13)
    assert "GridSample-20 cannot be expressed at opset 13" in message
    assert "the ranks of X and grid are unknown, so the number of spatial axes to sample is unknown" in message

    integers = grid_sample_model((1, 1, 3, 3), (1, 2, 2, 2), opset=20, mode="nearest")
    integers.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
    integers.graph.output[0].type.tensor_type.elem_type = TensorProto.INT32
    assert "X is int32; the rule samples float, double, float16 and bfloat16 values only" in refusal(integers, 13)

    assert "the rule writes ops as they are from opset 11, not 10" in refusal(
        grid_sample_model((1, 1, 3, 3), (1, 2, 2, 2), opset=20), 10
    )


def test_too_many_neighbours_are_refused():
    """Cubic sampling of 4 spatial axes reads 256 neighbours per point: more than the rule gathers."""
    result = lowering.lower_model(grid_sample_model((1, 1, 2, 2, 2, 2), (1, 1, 1, 1, 1, 4), mode="cubic"),
                                  ops=["GridSample"])  # fmt: skip
    (remaining,) = result.report.remaining
    assert "cubic sampling of 4 spatial axes reads 256 neighbours per point, more than the 64" in remaining.reason


def test_the_rule_is_registered_with_its_tolerance():
    found = rule_for("", "GridSample")
    assert found.since_versions == (16, 20, 22)
    assert set(found.tolerance) == {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
