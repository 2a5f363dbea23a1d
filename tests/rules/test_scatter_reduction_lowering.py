"""ScatterND and ScatterElements with a reduction, lowered one update at a time
(rules/scatter_reduction.py): bit for bit against onnxruntime's kernels (every pair of float edge
values for max and min, NaN payloads and ±0 among them; duplicate and negative indices), or
against the spec's loop where onnxruntime has no kernel (float16: ScatterND's reductions,
ScatterElements' add and mul);
unrolled where the updates are few and counted, a Loop otherwise; written by a mask where
ScatterND itself is lowered."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.scatter_reduction import UNROLLED_AT_MOST
from onnx import TensorProto, helper
from support import assert_same_bits, lowered_wholly, make_model, nested_forms, slow_but_a_sample  # noqa: E402

import lowering
from lowering.samples import edge_values
from lowering.verification.runtime import run_onnxruntime

REDUCTIONS = ("add", "mul", "max", "min")


def spec_loop(op_type: str, data, indices, updates, reduction: str, axis: int = 0) -> np.ndarray:
    """The spec's loop, each update combined in index order: max and min as onnxruntime takes
    them where it has a kernel (the update unless it is strictly below, for max, or above, for
    min, what is there)."""
    combine = {
        "add": lambda old, new: old + new,
        "mul": lambda old, new: old * new,
        "max": lambda old, new: np.where(new < old, old, new),
        "min": lambda old, new: np.where(old < new, old, new),
    }[reduction]
    out = data.copy()
    if op_type == "ScatterND":
        for position in np.ndindex(indices.shape[:-1]):
            at = tuple(int(i) for i in indices[position])
            out[at] = combine(out[at], updates[position])
        return out
    for position in np.ndindex(indices.shape):
        at = list(position)
        at[axis] = int(indices[position])
        out[tuple(at)] = combine(out[tuple(at)], updates[position])
    return out


def scatter_model(op_type: str, element_type: int, shapes: dict, reduction: str, axis: int = 0) -> onnx.ModelProto:
    attributes = {"reduction": reduction, **({"axis": axis} if op_type == "ScatterElements" else {})}
    node = helper.make_node(op_type, ["data", "indices", "updates"], ["y"], name="scatter", **attributes)
    types = {"data": element_type, "indices": TensorProto.INT64, "updates": element_type}
    inputs = [helper.make_tensor_value_info(name, types[name], shape) for name, shape in shapes.items()]
    return make_model([node], inputs, [helper.make_tensor_value_info("y", element_type, shapes["data"])], opset=18)


def lowered(model: onnx.ModelProto, ops: list[str]) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=ops)
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert not {node.op_type for node in result.model.graph.node} & set(ops)
    return result.model


def left_why(model: onnx.ModelProto, ops: list[str]) -> str:
    """The report's lines, lowering ``model`` with ``ops`` asked, where the rule leaves a node."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, ops=ops)
    assert not result.report.complete
    return "\n".join(result.report.lines())


def _want(model, op_type, feeds, reduction, axis=0):
    try:
        return run_onnxruntime(model, feeds)[0]
    except Exception:  # (onnxruntime runs no ScatterND reduction on float16, no ScatterElements add or mul)
        assert feeds["data"].dtype == np.float16
        return spec_loop(op_type, feeds["data"], feeds["indices"], feeds["updates"], reduction, axis)


# float16's edge values (of its 65536 patterns, whose pairs are too many): NaN of both signs,
# quiet and signalling, with payloads; ±inf, ±0, the smallest and largest subnormals and
# normals, ordinary numbers
FLOAT16_EDGES = np.array(
    [0x7E00, 0x7C01, 0x7E5A, 0x7FFF, 0xFE00, 0xFC01, 0xFFFF, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x8001,
     0x03FF, 0x83FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x3C00, 0xBC00, 0x3800, 0x4200],
    np.uint16,
).view(np.float16)  # fmt: skip


@pytest.mark.parametrize("op_type", ["ScatterND", "ScatterElements"])
@pytest.mark.parametrize("reduction", ["max", "min"])
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16])
def test_max_and_min_take_every_pair_of_edge_values_as_onnxruntime_does(op_type, reduction, element_type):
    """data[p] ∘ updates[p] for every pair (what is there, the update) of the type's edge values:
    NaN of both signs and payloads, ±inf, ±0, subnormals, extremes; bit for bit."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    values = edge_values(element_type).astype(dtype) if element_type != TensorProto.FLOAT16 else FLOAT16_EDGES
    there, update = (np.array(v, dtype) for v in zip(*[(a, b) for a in values for b in values], strict=True))
    count = there.size
    indices = np.arange(count, dtype=np.int64).reshape((count, 1) if op_type == "ScatterND" else (count,))
    shapes = {"data": [count], "indices": list(indices.shape), "updates": [count]}
    model = scatter_model(op_type, element_type, shapes, reduction)
    feeds = {"data": there, "indices": indices, "updates": update}
    [got] = run_onnxruntime(lowered(model, [op_type]), feeds)
    assert_same_bits(got, _want(model, op_type, feeds, reduction))


# (data shape, indices, updates shape): duplicate and negative indices; ScatterND indexing
# elements, rows, and a whole matrix
ND_CASES = [
    ((4, 3), [[1], [-3], [3], [1]], (4, 3)),
    ((2, 3, 2), [[0, 1], [1, 2], [0, -2], [-1, 2]], (4, 2)),
    ((2, 3), [[[0, 1], [1, 2]], [[0, 1], [-2, -3]]], (2, 2)),
    ((2, 2, 2), [[1], [1]], (2, 2, 2)),
]
ELEMENTS_CASES = [  # (data shape, axis, indices)
    ((4, 3), 0, [[1, 2, -1], [-3, 2, 3]]),
    ((3, 4), 1, [[1, 1, -4], [0, 3, 3], [2, 2, 2]]),
    ((2, 3, 2), -2, [[[0, 1], [2, -1]], [[1, 1], [-3, 0]]]),
]


def _feeds(rng, data_shape, indices, updates_shape, dtype) -> dict:
    if np.dtype(dtype).kind == "f":
        data = (rng.standard_normal(data_shape) * 3).astype(dtype)
        updates = (rng.standard_normal(updates_shape) * 3).astype(dtype)
        data.reshape(-1)[:3] = np.array([np.nan, -0.0, np.inf], dtype)
        updates.reshape(-1)[-2:] = np.array([np.nan, 0.0], dtype)
    else:
        data = rng.integers(-9, 10, data_shape).astype(dtype)
        updates = rng.integers(-9, 10, updates_shape).astype(dtype)
    return {"data": data, "indices": np.array(indices, np.int64), "updates": updates}


# (op, ops lowered): ScatterND's own steps write by choosing rows (ScatterND is lowered),
# ScatterElements' by ScatterND, or by choosing rows where ScatterND is lowered too
PATHS = [("ScatterND", ["ScatterND"]), ("ScatterElements", ["ScatterElements"]),
         ("ScatterElements", ["ScatterElements", "ScatterND"])]  # fmt: skip


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.float64, np.int32, np.int64], ids=lambda d: np.dtype(d).name
)
@pytest.mark.parametrize(("op_type", "ops"), PATHS, ids=["nd", "elements", "elements-nd-lowered"])
def test_reductions_go_one_update_at_a_time_bit_for_bit(reduction, dtype, op_type, ops):
    """Each case lowered with the path's ops asked: the same bits as onnxruntime's kernel,
    duplicates combined in index order (a float sum's order shows in its rounding)."""
    rng = np.random.default_rng(3)
    element_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    if op_type == "ScatterND":
        for data_shape, indices, updates_shape in ND_CASES:
            feeds = _feeds(rng, data_shape, indices, updates_shape, dtype)
            shapes = {name: list(value.shape) for name, value in feeds.items()}
            model = scatter_model("ScatterND", element_type, shapes, reduction)
            [got] = run_onnxruntime(lowered(model, ops), feeds)
            assert_same_bits(got, _want(model, "ScatterND", feeds, reduction), f"{data_shape} {indices}")
        return
    for data_shape, axis, indices in ELEMENTS_CASES:
        feeds = _feeds(rng, data_shape, indices, np.array(indices).shape, dtype)
        shapes = {name: list(value.shape) for name, value in feeds.items()}
        model = scatter_model("ScatterElements", element_type, shapes, reduction, axis)
        [got] = run_onnxruntime(lowered(model, ops), feeds)
        assert_same_bits(got, _want(model, "ScatterElements", feeds, reduction, axis), f"{data_shape} {indices}")


@pytest.mark.parametrize(("op_type", "ops"), PATHS, ids=["nd", "elements", "elements-nd-lowered"])
def test_updates_uncounted_or_many_go_by_a_loop_a_few_counted_by_a_chain(op_type, ops):
    """A Loop where the number of updates is unknown before run time (its axis named) or past
    UNROLLED_AT_MOST, a chain of steps where it is known and few: the same bits each way."""
    rng = np.random.default_rng(5)
    many = UNROLLED_AT_MOST + 6
    for count, named in ((5, False), (5, True), (many, False)):
        if op_type == "ScatterND":
            indices = rng.integers(-6, 6, (count, 1))
            feeds = _feeds(rng, (6, 2), indices, (count, 2), np.float32)
            shapes = {"data": [6, 2], "indices": ["n" if named else count, 1], "updates": ["n" if named else count, 2]}
        else:
            indices = rng.integers(-6, 6, (count,))
            feeds = _feeds(rng, (6,), indices, (count,), np.float32)
            shapes = {"data": [6], "indices": ["n" if named else count], "updates": ["n" if named else count]}
        model = scatter_model(op_type, TensorProto.FLOAT, shapes, "add")
        made = lowered(model, ops)
        looped = named or count > UNROLLED_AT_MOST
        assert ("Loop" in {node.op_type for node in made.graph.node}) == looped
        [got] = run_onnxruntime(made, feeds)
        assert_same_bits(got, run_onnxruntime(model, feeds)[0], f"{count} {named}")


def test_no_reduction_is_left_with_why():
    model = scatter_model("ScatterND", TensorProto.FLOAT, {"data": [4], "indices": [2, 1], "updates": [2]}, "none")
    assert "no reduction: every update is written as it is" in left_why(model, ["ScatterND"])


def test_indices_of_unknown_depth_are_left_with_why():
    """The rows an index tuple names are read on Flatten(data, k): k, the indices' last
    dimension, must be known."""
    shapes = {"data": [4, 3], "indices": [2, "k"], "updates": [2, 3]}
    model = scatter_model("ScatterND", TensorProto.FLOAT, shapes, "add")
    said = left_why(model, ["ScatterND"])
    assert "the last dimension of its indices (how many axes an index names) is unknown" in said


@pytest.mark.parametrize("op_type", ["ScatterND", "ScatterElements"])
def test_an_index_outside_its_axis_fails_as_the_op_does(op_type):
    """[0, 3] on data [2, 3] names no element, though its row number (3) is one of the six (3
    along axis 1 of ScatterElements likewise): the lowered model fails on it, as onnxruntime's
    kernel does, and writes nothing elsewhere; [1, -3] names [1, 0]."""
    nd = op_type == "ScatterND"
    shapes = {"data": [2, 3], "indices": [1, 2] if nd else [1, 1], "updates": [1] if nd else [1, 1]}
    model = scatter_model(op_type, TensorProto.FLOAT, shapes, "add", axis=1)
    made = lowered(model, [op_type])
    feeds = {"data": np.zeros((2, 3), np.float32), "updates": np.ones(shapes["updates"], np.float32)}
    inside, outside = ([[1, -3]], [[0, 3]]) if nd else ([[-3]], [[3]])
    [got] = run_onnxruntime(made, {**feeds, "indices": np.array(inside, np.int64)})
    assert_same_bits(got, run_onnxruntime(model, {**feeds, "indices": np.array(inside, np.int64)})[0])
    for runs in (made, model):
        with pytest.raises(Exception, match="(?i)indice|out of|range"):
            run_onnxruntime(runs, {**feeds, "indices": np.array(outside, np.int64)})


def test_updates_of_another_shape_fail_as_the_op_does():
    """Updates [4, 2] where ScatterND takes [2, 4] (as many elements), and ScatterElements
    updates unlike its indices: refused where the shapes say so before run time, failing at run
    time where they do not, as onnxruntime's kernels do."""
    static = scatter_model(
        "ScatterND", TensorProto.FLOAT, {"data": [3, 4], "indices": [2, 1], "updates": [4, 2]}, "add"
    )
    assert "its updates are of shape [4, 2] where the op takes [2, 4]" in left_why(static, ["ScatterND"])
    feeds = {"data": np.zeros((3, 4), np.float32), "indices": np.array([[0], [2]], np.int64)}
    for op_type, shapes, updates in (
        ("ScatterND", {"data": [3, 4], "indices": [2, 1], "updates": ["a", "b"]}, np.ones((4, 2), np.float32)),
        ("ScatterElements", {"data": [3, 4], "indices": [2, 1], "updates": ["a", "b"]}, np.ones((2, 2), np.float32)),
    ):
        model = scatter_model(op_type, TensorProto.FLOAT, shapes, "add")
        made = lowered(model, [op_type])
        for runs in (made, model):
            with pytest.raises(Exception):  # noqa: B017 (each runtime's own words)
                run_onnxruntime(runs, {**feeds, "updates": updates})
        fitting = np.ones((2, 4) if op_type == "ScatterND" else (2, 1), np.float32)
        assert_same_bits(
            run_onnxruntime(made, {**feeds, "updates": fitting})[0],
            run_onnxruntime(model, {**feeds, "updates": fitting})[0],
        )


def test_data_of_no_elements_and_shapes_known_at_run_time_go_down_bit_for_bit():
    """ScatterND max on data [3, 0] (every update empty) and ScatterElements add on shapes
    known at run time only (data of no elements among them), taken to 17: the same bits as
    onnxruntime; Flatten takes the empty updates, which a Reshape to [-1, 0] would refuse. To
    13, whose Reshape reads a 0 as a copy, both are refused."""
    empty = scatter_model("ScatterND", TensorProto.FLOAT, {"data": [3, 0], "indices": [2, 1], "updates": [2, 0]}, "max")
    feeds = {"data": np.zeros((3, 0), np.float32), "indices": np.array([[1], [2]], np.int64),
             "updates": np.zeros((2, 0), np.float32)}  # fmt: skip
    converted = lowering.lower_model(empty, target_opset=17, ops=[]).model
    onnx.checker.check_model(converted, full_check=True)
    assert_same_bits(run_onnxruntime(converted, feeds)[0], run_onnxruntime(empty, feeds)[0])
    shapes = {"data": ["a", "b"], "indices": ["n", "m"], "updates": ["n", "m"]}
    dynamic = scatter_model("ScatterElements", TensorProto.FLOAT, shapes, "add", axis=1)
    converted = lowering.lower_model(dynamic, target_opset=17, ops=[]).model
    onnx.checker.check_model(converted, full_check=True)
    rng = np.random.default_rng(2)
    for data_shape, indices_shape in (((3, 4), (2, 3)), ((0, 4), (0, 2)), ((3, 0), (3, 0))):
        fed = {
            "data": rng.standard_normal(data_shape).astype(np.float32),
            "indices": rng.integers(-data_shape[1], max(data_shape[1], 1), indices_shape),
            "updates": rng.standard_normal(indices_shape).astype(np.float32),
        }
        assert_same_bits(run_onnxruntime(converted, fed)[0], run_onnxruntime(dynamic, fed)[0], f"{data_shape}")
    for model in (empty, dynamic):
        with pytest.raises(lowering.ConversionRefused, match="which a Reshape at opset 13"):
            lowering.lower_model(model, target_opset=13, ops=[])


def test_updates_unlike_the_op_takes_fail_with_no_update_to_write():
    """Indices of no rows ([0, 1]) and updates fed [0, 5] where the op takes [0, 3]: onnxruntime
    fails; so does the lowered model, whose check reads the shape taken back, not the rows."""
    shapes = {"data": [2, "b"], "indices": [0, 1], "updates": ["p", "q"]}
    model = scatter_model("ScatterND", TensorProto.FLOAT, shapes, "add")
    made = lowered(model, ["ScatterND"])
    feeds = {"data": np.zeros((2, 3), np.float32), "indices": np.zeros((0, 1), np.int64)}
    for runs in (made, model):
        with pytest.raises(Exception):  # noqa: B017 (each runtime's own words)
            run_onnxruntime(runs, {**feeds, "updates": np.zeros((0, 5), np.float32)})
    fitting = {**feeds, "updates": np.zeros((0, 3), np.float32)}
    assert_same_bits(run_onnxruntime(made, fitting)[0], run_onnxruntime(model, fitting)[0])


def test_a_rank_unknown_is_left_with_why():
    """Updates of a shape known by no rank (a Reshape's output, fed its shape): whether they
    fit the op cannot be said, so the rule does not write it."""
    node_shape = helper.make_node("Reshape", ["flat", "shape"], ["updates"], name="reshape")
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"], name="scatter", reduction="add")
    model = make_model(
        [node_shape, node],
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("flat", TensorProto.FLOAT, [1]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, ["r"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        opset=18,
    )  # fmt: skip
    assert "the rank of its data, indices or updates is unknown" in left_why(model, ["ScatterND"])


def test_a_type_onnxruntime_moves_no_element_of_is_refused():
    """bfloat16: onnxruntime's CPU provider has no Expand for it, which the steps that choose
    rows write (max and min, or ScatterND lowered): refused, not written into a model it cannot load."""
    model = scatter_model(
        "ScatterElements", TensorProto.BFLOAT16, {"data": [4, 3], "indices": [3, 3], "updates": [3, 3]}, "max"
    )
    assert "does not run on bfloat16" in left_why(model, ["ScatterElements"])


@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_bfloat16_sums_and_products_go_through_float32_rounded_once(reduction):
    """ScatterElements add and mul on bfloat16 (onnxruntime has no Add or Mul for it, nor the
    original's kernel): each step computed in float32 and rounded to bfloat16 once, the spec's
    loop in ml_dtypes' bfloat16 arithmetic bit for bit."""
    shapes = {"data": [4, 3], "indices": [3, 3], "updates": [3, 3]}
    model = scatter_model("ScatterElements", TensorProto.BFLOAT16, shapes, reduction)
    rng = np.random.default_rng(6)
    feeds = {
        "data": (rng.standard_normal((4, 3)) * 3).astype(ml_dtypes.bfloat16),
        "indices": np.array([[1, 2, 0], [3, 0, 1], [1, 1, -3]], np.int64),
        "updates": (rng.standard_normal((3, 3)) * 3).astype(ml_dtypes.bfloat16),
    }
    [got] = run_onnxruntime(lowered(model, ["ScatterElements"]), feeds)
    want = spec_loop("ScatterElements", feeds["data"], feeds["indices"], feeds["updates"], reduction)
    assert_same_bits(got, want)


@pytest.mark.parametrize(("op_type", "reduction"), [("ScatterND", "add"), ("ScatterElements", "max")])
def test_inside_if_branches_and_local_functions(op_type, reduction):
    """The rule lowers the node where an If branch or a local function holds it: the same bits
    as onnxruntime's kernel on the original, either branch taken."""
    nd = op_type == "ScatterND"
    shapes = {"data": [4, 3], "indices": [3, 1] if nd else [3, 3], "updates": [3, 3]}
    model = scatter_model(op_type, TensorProto.FLOAT, shapes, reduction)
    rng = np.random.default_rng(8)
    feeds = _feeds(rng, (4, 3), [[1], [-3], [3]] if nd else [[1, 2, 0], [3, 0, 1], [1, 1, -3]], (3, 3), np.float32)
    for label, nested in nested_forms(model).items():
        made = lowered_wholly(nested, op_type)
        for branch in (True, False):
            fed = {**feeds, "branch": np.array(branch)}
            assert_same_bits(run_onnxruntime(made, fed)[0], run_onnxruntime(nested, fed)[0], f"{label} {branch}")
