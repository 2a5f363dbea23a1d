"""The down adapters to opset 11 for ReduceSum-13 (axes input), ArgMax/ArgMin-12
(select_last_index) and GatherND-12 (batch_dims): bit for bit against the original in
onnxruntime on every row of ties and NaN, edge values, negative axes and both keepdims; and
what cannot go (axes computed at run time, select_last_index=1 below 11) refused in our words.
"""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from lowering.rules.versions.reduce import REDUCE_AXES_AT_18
from onnx import TensorProto, helper, numpy_helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import node_cases, sweep_case

import lowering
from lowering import floats
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime

FLOAT_TYPES = (TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE)


def bits(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def assert_same_bits(got: np.ndarray, want: np.ndarray, where: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (
        f"{where}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    )
    differ = np.flatnonzero(bits(got).reshape(-1) != bits(want).reshape(-1))
    assert differ.size == 0, f"{where}: {differ.size} of {got.size} differ, first at {differ[:5]}"


_LOWERED: dict[tuple[bytes, int], lowering.LoweringResult] = {}


def lowered(model: onnx.ModelProto, target: int) -> lowering.LoweringResult:
    """``model`` taken to ``target``, checked in full: once per model and target in the session
    (a symbolic shape makes the same model for every row length; the result is only read)."""
    key = (model.SerializeToString(), target)
    if key not in _LOWERED:
        result = lowering.lower_model(model, target_opset=target, ops=[])
        onnx.checker.check_model(result.model, full_check=True)
        assert next(e.version for e in result.model.opset_import if e.domain in ("", "ai.onnx")) == target
        _LOWERED[key] = result
    return _LOWERED[key]


def assert_lowers_bit_for_bit(model: onnx.ModelProto, target: int, feeds: dict, label: str | None) -> None:
    """``model`` taken to ``target`` runs to the same bits in onnxruntime; ``label``: the
    adapter the report must name (None: the node is moved as it is)."""
    result = lowered(model, target)
    adapted = dict(result.report.adapted)
    if label is not None:
        assert any(key.endswith(f" via {label}") for key in adapted), adapted
    else:
        assert not any(" via " in key for key in adapted), adapted
    for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want, f"{model.graph.node[-1].op_type} to {target}")


# -- ArgMax / ArgMin, select_last_index ----------------------------------------------------------


def float_values(element_type: int) -> np.ndarray:
    """NaN (positive quiet, negative with a payload), ±inf, ±1, ±0 and the smallest subnormal."""
    dtype = floats.numpy_dtype(element_type)
    edges = edge_values(TensorProto.FLOAT if dtype.itemsize <= 2 else element_type)
    nans = edges[np.isnan(edges)]
    picked = [nans[0], nans[-1], -np.inf, -1.0, -0.0, 0.0, float(np.finfo(dtype).smallest_subnormal), 1.0, np.inf]
    return np.array(picked, dtype=np.float64).astype(dtype) if dtype.itemsize <= 2 else np.array(picked, dtype)


def integer_values(dtype: np.dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.unique(np.array([info.min, 0, 1, info.max, max(info.min, -1)], dtype=dtype))


def every_row(values: np.ndarray, length: int) -> np.ndarray:
    """Every sequence of ``length`` of ``values``: each tie and NaN place occurs."""
    return np.array(list(itertools.product(values, repeat=length)), dtype=values.dtype).reshape(-1, length)


def output_of_rank(name: str, element_type: int, rank: int) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, element_type, [f"{name}{k}" for k in range(rank)])


def arg_model(op_type: str, opset: int, element_type: int, shape: list, **attributes) -> onnx.ModelProto:
    rank = len(shape) - (0 if attributes.get("keepdims", 1) else 1)
    return make_model(
        [helper.make_node(op_type, ["x"], ["y"], name="arg", **attributes)],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [output_of_rank("y", TensorProto.INT64, rank)],
        opset=opset,
    )


def layouts(rows: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """The rows laid along the last axis, along the first (transposed), and along the middle axis
    of a rank-3 tensor: (data, the axis holding each row)."""
    middle = np.ascontiguousarray(np.broadcast_to(rows.T[None, :, :], (2, *rows.T.shape)))
    return [(rows, 1), (np.ascontiguousarray(rows.T), 0), (middle, 1)]


def loop_pick(rows: np.ndarray, op_type: str, last: bool) -> np.ndarray:
    """What onnxruntime's kernel picks on each row: a scan from the first element that moves on
    to a later one comparing better (or, for the last index, at least as good)."""
    picked = np.zeros(len(rows), np.int64)
    for r, row in enumerate(rows):
        best, where = row[0], 0
        for i, value in enumerate(row[1:], start=1):
            if op_type == "ArgMax":
                better = value >= best if last else value > best
            else:
                better = value <= best if last else value < best
            if better:
                best, where = value, i
        picked[r] = where
    return picked


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_onnxruntime_keeps_a_first_nan_and_skips_later_ones(op_type):
    """The fact the float form rests on: with select_last_index=1 onnxruntime picks a NaN that
    stands first and never one found later (not numpy's NaN-as-extreme, not the reversed form)."""
    rows = every_row(float_values(TensorProto.FLOAT), 3)
    model = arg_model(op_type, 12, TensorProto.FLOAT, list(rows.shape), axis=1, keepdims=0, select_last_index=1)
    (got,) = run_onnxruntime(model, {"x": rows})
    np.testing.assert_array_equal(got, loop_pick(rows, op_type, last=True))


@pytest.mark.slow
@pytest.mark.parametrize("element_type", FLOAT_TYPES, ids=TensorProto.DataType.Name)
@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_select_last_index_goes_to_11_bit_for_bit_on_every_row_of_ties_and_nan(op_type, element_type):
    """Every row of up to 4 values among NaN (two payloads), ±inf, ±1, ±0 and a subnormal, along
    the last, first and a middle axis, positive and negative axis, keepdims 0 and 1, static and
    symbolic shapes: ArgMax-12 at opset 12 and its rewrite at 11 give the same indices."""
    rng = np.random.default_rng(element_type)
    for length in (1, 2, 3, 4, 17, 33):
        values = float_values(element_type)
        rows = every_row(values, length) if length <= 4 else rng.choice(values, size=(512, length))
        for data, axis in layouts(rows):
            rank = data.ndim
            for keepdims, negative, symbolic in itertools.product((0, 1), (False, True), (False, True)):
                shape = [f"d{k}" for k in range(rank)] if symbolic else list(data.shape)
                attributes = {"axis": axis - rank if negative else axis, "keepdims": keepdims, "select_last_index": 1}
                model = arg_model(op_type, 12, element_type, shape, **attributes)
                assert_lowers_bit_for_bit(model, 11, {"x": data}, "reversed axis")


@slow_but_a_sample()
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint8])
@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_select_last_index_goes_to_11_bit_for_bit_on_integer_ties(op_type, dtype):
    element_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    rows = every_row(integer_values(np.dtype(dtype)), 4)
    for data, axis in layouts(rows):
        for keepdims in (0, 1):
            model = arg_model(op_type, 13, element_type, list(data.shape), axis=axis - data.ndim, keepdims=keepdims,
                              select_last_index=1)  # fmt: skip
            assert_lowers_bit_for_bit(model, 11, {"x": data}, "reversed axis")


@pytest.mark.slow
@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_select_last_index_on_a_1d_input_gives_a_scalar(op_type):
    rows = every_row(float_values(TensorProto.FLOAT), 4)
    for row in rows[::97]:
        model = arg_model(op_type, 13, TensorProto.FLOAT, ["n"], axis=-1, keepdims=0, select_last_index=1)
        assert_lowers_bit_for_bit(model, 11, {"x": row}, "reversed axis")


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 10, 7])
@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_select_last_index_0_drops_the_attribute(op_type, target):
    data = every_row(float_values(TensorProto.FLOAT), 3)
    model = arg_model(op_type, 13, TensorProto.FLOAT, list(data.shape), axis=-1, keepdims=0, select_last_index=0)
    assert_lowers_bit_for_bit(model, target, {"x": data}, "reversed axis")
    (node,) = lowered(model, target).model.graph.node
    assert node.op_type == op_type
    written = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert written == {"axis": -1 if target >= 11 else 1, "keepdims": 0}


@pytest.mark.parametrize("op_type", ["ArgMax", "ArgMin"])
def test_select_last_index_1_below_11_is_refused_in_our_words(op_type):
    model = arg_model(op_type, 13, TensorProto.FLOAT, [2, 3], axis=1, select_last_index=1)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=10, ops=[])
    message = str(refused.value)
    assert f"node 'arg' ({op_type}): {op_type}-13 with select_last_index=1 cannot go to opset 10" in message
    assert "onnx's version converter" not in message


@pytest.mark.slow
def test_the_corpus_select_last_index_cases_convert_and_match_at_11():
    cases = [c for c in node_cases() if c.name.startswith(("test_argmax_", "test_argmin_")) and "select_last" in c.name]
    assert len(cases) == 16
    for case in cases:
        outcome = sweep_case(case, 11)
        assert (outcome.ours, outcome.ours_wrong) == ("converts", False), (case.name, outcome.detail)


# -- GatherND, batch_dims ------------------------------------------------------------------------


def gather_nd_model(opset: int, element_type: int, data_shape, indices_shape, k, **attributes) -> onnx.ModelProto:
    rank = len(indices_shape) - 1 + len(data_shape) - attributes.get("batch_dims", 0) - k
    return make_model(
        [helper.make_node("GatherND", ["data", "indices"], ["y"], name="gather_nd", **attributes)],
        [
            helper.make_tensor_value_info("data", element_type, data_shape),
            helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape),
        ],
        [output_of_rank("y", element_type, rank)],
        opset=opset,
    )


def gather_nd_indices(rng, batch: tuple, rest: tuple, data_shape: tuple, k: int) -> np.ndarray:
    """Index tuples of length ``k`` into ``data_shape`` after its batch dimensions, negative ones
    among them."""
    b = len(batch)
    columns = [rng.integers(-d, d, size=(*batch, *rest)) for d in data_shape[b : b + k]]
    return np.stack(columns, axis=-1).astype(np.int64)


GATHER_ND_SHAPES = [
    # data shape, batch_dims, indices shape between the batch dimensions and the tuple, tuple length
    ((2, 3, 4), 1, (2,), 1),
    ((2, 3, 4), 1, (), 2),
    ((2, 3, 4), 1, (3, 2), 2),
    ((2, 3, 4), 2, (5,), 1),
    ((2, 3, 4, 2), 2, (), 2),
    ((3, 2, 2, 2), 3, (4,), 1),
    ((0, 3, 4), 1, (2,), 1),  # an empty batch
    ((2, 3, 4), 1, (0,), 1),  # no index tuple
]


@slow_but_a_sample()
@pytest.mark.parametrize("source", [12, 13])
@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(("data_shape", "batch_dims", "rest", "k"), GATHER_ND_SHAPES)
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.BOOL])
def test_gather_nd_batch_dims_goes_to_11_bit_for_bit(element_type, data_shape, batch_dims, rest, k, symbolic, source):
    rng = np.random.default_rng(sum(data_shape) + batch_dims + k)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    size = int(np.prod(data_shape))
    if floats.is_float(element_type):
        data = np.resize(edge_values(element_type)[:: max(1, len(edge_values(element_type)) // 64)], size)
    else:
        data = rng.integers(-100, 100, size=size)
    data = data.astype(dtype).reshape(data_shape)
    indices = gather_nd_indices(rng, data_shape[:batch_dims], rest, data_shape, k)
    data_dims = [f"d{j}" for j in range(len(data_shape))] if symbolic else list(data_shape)
    indices_dims = [f"i{j}" for j in range(indices.ndim)] if symbolic else list(indices.shape)
    model = gather_nd_model(source, element_type, data_dims, indices_dims, k, batch_dims=batch_dims)
    assert_lowers_bit_for_bit(model, 11, {"data": data, "indices": indices}, "batch indices spelled out")


def test_gather_nd_batch_dims_0_drops_the_attribute():
    model = gather_nd_model(13, TensorProto.FLOAT, [3, 2], [2, 2], 2, batch_dims=0)
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    assert_lowers_bit_for_bit(
        model, 11, {"data": data, "indices": np.array([[0, 1], [-1, 0]])}, "batch indices spelled out"
    )
    (node,) = lowered(model, 11).model.graph.node
    assert node.op_type == "GatherND" and not node.attribute


def test_gather_nd_batch_dims_without_the_indices_rank_is_refused():
    """Indices reshaped to a shape given at run time: their rank is unknown."""
    model = make_model(
        [
            helper.make_node("Reshape", ["flat", "shape"], ["indices"], name="reshape"),
            helper.make_node("GatherND", ["data", "indices"], ["y"], name="gather_nd", batch_dims=1),
        ],
        [
            helper.make_tensor_value_info("data", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("flat", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, ["r"]),
        ],
        [output_of_rank("y", TensorProto.FLOAT, 1)],
        opset=13,
    )
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=11, ops=[])
    assert str(refused.value) == (
        "graph 'main', node 'gather_nd' (GatherND): GatherND-13 with batch_dims=1 cannot go to opset 11 without the "
        "rank of its indices 'indices', which is unknown; nor by its rule: the last dimension of its indices (how "
        "many axes an index names) is unknown"
    )


def test_the_corpus_batch_dims_case_converts_and_matches_at_11():
    (case,) = [c for c in node_cases() if c.name == "test_gathernd_example_int32_batch_dim1"]
    outcome = sweep_case(case, 11)
    assert (outcome.ours, outcome.ours_wrong) == ("converts", False), outcome.detail


# -- ReduceSum-13 and the Reduce ops of 18 and 28 ----------------------------------------------------

REDUCE_SHAPE = (3, 4, 5)


def reduce_input(element_type: int = TensorProto.FLOAT) -> np.ndarray:
    """Edge values (NaN payloads, ±inf, ±0, subnormals, the largest finite) among ordinary ones."""
    rng = np.random.default_rng(5)
    dtype = floats.numpy_dtype(element_type)
    values = (rng.standard_normal(int(np.prod(REDUCE_SHAPE))) * 3).astype(dtype)
    edges = edge_values(element_type)[:: max(1, len(edge_values(element_type)) // 24)]
    values[::3][: len(edges)] = edges[: len(values[::3])]
    return values.reshape(REDUCE_SHAPE)


def reduce_model(op_type: str, opset: int, axes, *, as_constant_node=False, element_type=TensorProto.FLOAT, **attrs):
    """``op_type`` over x of shape (3, 4, 5), its axes an initializer, a Constant node or absent."""
    nodes, initializer = [], []
    inputs = ["x"]
    if axes is not None:
        value = numpy_helper.from_array(np.array(axes, np.int64), "axes")
        if as_constant_node:
            nodes.append(helper.make_node("Constant", [], ["axes"], name="axes_constant", value=value))
        else:
            initializer.append(value)
        inputs.append("axes")
    nodes.append(helper.make_node(op_type, inputs, ["y"], name="reduce", **attrs))
    keep = attrs.get("keepdims", 1) or (not axes and attrs.get("noop_with_empty_axes"))
    rank = len(REDUCE_SHAPE) if keep else len(REDUCE_SHAPE) - len(axes or REDUCE_SHAPE)
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", element_type, REDUCE_SHAPE)],
        [output_of_rank("y", element_type, rank)],
        opset=opset,
        initializer=initializer,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("target", [12, 11, 10, 7])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("noop", [None, 0, 1])
@pytest.mark.parametrize("axes", [[1], [-1, 0], [-3], [0, 1, 2], [], None])
def test_reduce_sum_13_constant_axes_go_down_bit_for_bit(axes, noop, keepdims, target):
    """Constant axes become the attribute (negative ones get the rank added below 11), no axes
    reduce every axis, no axes with noop_with_empty_axes=1 are the input itself; a node with
    neither axes nor noop_with_empty_axes is moved as it is."""
    attributes = {"keepdims": keepdims} | ({} if noop is None else {"noop_with_empty_axes": noop})
    model = reduce_model("ReduceSum", 13, axes, as_constant_node=target == 11, **attributes)
    untouched = noop is None and axes is None
    assert_lowers_bit_for_bit(model, target, {"x": reduce_input()}, None if untouched else "axes attribute")
    nodes = [n for n in lowered(model, target).model.graph.node if n.op_type != "Constant"]
    if noop and not axes:
        assert [n.op_type for n in nodes] == ["Identity"]
        return
    (node,) = [n for n in nodes if n.op_type == "ReduceSum"]
    assert list(node.input) == ["x"]
    written = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if axes:
        assert written["axes"] == ([a % 3 for a in axes] if target < 11 else axes)
    else:
        assert "axes" not in written


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT32])
def test_reduce_sum_13_goes_down_on_other_types(element_type):
    data = (
        reduce_input(element_type)
        if floats.is_float(element_type)
        else np.arange(60, dtype=np.int32).reshape(REDUCE_SHAPE)
    )
    model = reduce_model("ReduceSum", 13, [-1], element_type=element_type, keepdims=0)
    assert_lowers_bit_for_bit(model, 11, {"x": data}, "axes attribute")


def test_reduce_sum_13_with_an_empty_axes_name_reduces_every_axis():
    model = reduce_model("ReduceSum", 13, None, keepdims=0)
    model.graph.node[0].input.append("")
    assert_lowers_bit_for_bit(model, 11, {"x": reduce_input()}, "axes attribute")
    (node,) = lowered(model, 11).model.graph.node
    assert list(node.input) == ["x"]


def run_time_axes_model(op_type: str, opset: int, element_type=TensorProto.FLOAT, shape=REDUCE_SHAPE, **attrs):
    """``op_type`` over x with its axes a graph input (known only at run time); the result's
    rank depends on them, so the graph gives it flattened and its shape beside it."""
    return make_model(
        [
            helper.make_node(op_type, ["x", "axes"], ["y"], name="reduce", **attrs),
            helper.make_node("Reshape", ["y", "flat"], ["y_flat"], name="flatten"),
            helper.make_node("Shape", ["y"], ["y_shape"], name="shape"),
        ],
        [
            helper.make_tensor_value_info("x", element_type, list(shape)),
            helper.make_tensor_value_info("axes", TensorProto.INT64, ["n"]),
        ],
        [
            helper.make_tensor_value_info("y_flat", element_type, ["m"]),
            helper.make_tensor_value_info("y_shape", TensorProto.INT64, ["r"]),
        ],
        opset=opset,
        initializer=[numpy_helper.from_array(np.array([-1], np.int64), "flat")],
    )


# Every choice of axes of a rank-3 input, some spelled from the end, and none at all.
RUN_TIME_AXES = [[], [0], [1], [2], [-1], [0, 1], [2, 0], [-3, -1], [1, 2], [0, 1, 2], [-1, 0, 1]]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 12])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("noop", [0, 1])
def test_reduce_sum_13_with_axes_computed_at_run_time_goes_down_bit_for_bit(noop, keepdims, target):
    """Axes given at run time choose, by one If per axis, among the reductions over every
    subset of axes, each the older op with its axes as an attribute: the same bits for every
    choice, none included (every axis, or the input itself with noop_with_empty_axes=1)."""
    model = run_time_axes_model("ReduceSum", 13, keepdims=keepdims, noop_with_empty_axes=noop)
    result = lowered(model, target)
    assert any(key.endswith(" via axes attribute") for key in result.report.adapted), result.report.adapted
    ifs = [n for n in result.model.graph.node if n.op_type == "If"]
    assert len(ifs) == 1  # the choice of axis 0; axes 1 and 2 are chosen inside its branches
    got_run, want_run = OnnxruntimeRunner(result.model), OnnxruntimeRunner(model)  # one session each, every axes
    for axes in RUN_TIME_AXES:
        feeds = {"x": reduce_input(), "axes": np.array(axes, np.int64)}
        for got, want in zip(got_run(feeds), want_run(feeds), strict=True):
            assert_same_bits(got, want, f"ReduceSum-13 over {axes} to {target}")


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 13, 17])
@pytest.mark.parametrize("op_type", REDUCE_AXES_AT_18)
def test_reduce_18_with_axes_computed_at_run_time_goes_down_bit_for_bit(op_type, target):
    data = np.abs(reduce_input()) if op_type in ("ReduceLogSum",) else reduce_input()
    for keepdims in (0, 1):
        model = run_time_axes_model(op_type, 18, keepdims=keepdims)
        result = lowered(model, target)
        got_run, want_run = OnnxruntimeRunner(result.model), OnnxruntimeRunner(model)  # one session each, every axes
        for axes in RUN_TIME_AXES:
            feeds = {"x": data, "axes": np.array(axes, np.int64)}
            for got, want in zip(got_run(feeds), want_run(feeds), strict=True):
                assert_same_bits(got, want, f"{op_type}-18 over {axes}, keepdims {keepdims}, to {target}")


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17])
@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_20_on_bool_is_carried_in_integers(op_type, target):
    """Any and all over booleans as the maximum and minimum of 0 and 1 in an integer type the
    older op takes, ``> 0`` giving them back; over no elements false (max) and true (min)."""
    rng = np.random.default_rng(2)
    for shape in (REDUCE_SHAPE, (3, 0, 5)):
        data = rng.random(shape) < 0.3
        for run_time in (True, False):
            if run_time:
                model = run_time_axes_model(op_type, 20, TensorProto.BOOL, shape, keepdims=0)
            else:
                model = reduce_model(op_type, 20, [1], element_type=TensorProto.BOOL, keepdims=1)
                model.graph.input[0].CopyFrom(helper.make_tensor_value_info("x", TensorProto.BOOL, list(shape)))
                model.graph.output[0].CopyFrom(output_of_rank("y", TensorProto.BOOL, len(shape)))
            result = lowered(model, target)
            assert "Cast" in {n.op_type for n in result.model.graph.node}
            for axes in ([1], [], [0, 2]) if run_time else ([1],):
                feeds = {"x": data} | ({"axes": np.array(axes, np.int64)} if run_time else {})
                want = getattr(np, "any" if op_type == "ReduceMax" else "all")(
                    data, axis=tuple(axes) or None, keepdims=not run_time
                )
                got = run_onnxruntime(result.model, feeds)
                assert got[0].dtype == np.bool_ and np.array_equal(got[0], want.reshape(got[0].shape)), (shape, axes)
                assert list(got[-1]) == list(want.shape) if run_time else got[0].shape == want.shape


def test_reduce_with_axes_computed_at_run_time_and_no_known_rank_is_refused_in_our_words():
    """x is reshaped to a shape given at run time: its rank is unknown."""
    model = run_time_axes_model("ReduceSum", 13, keepdims=1)
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("data", TensorProto.FLOAT, [60]))
    model.graph.input.append(helper.make_tensor_value_info("shape", TensorProto.INT64, ["k"]))
    model.graph.node.insert(0, helper.make_node("Reshape", ["data", "shape"], ["x"], name="reshape"))
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=11, ops=[])
    assert str(refused.value) == (
        "graph 'main', node 'reduce' (ReduceSum): ReduceSum-13 takes its axes from 'axes', which is computed at run "
        "time, so it cannot go to opset 11 where axes is an attribute: the rank or type of its input 'x' is not "
        "known, so no reduction can be written per choice"
    )


def test_reduce_with_axes_computed_at_run_time_below_11_is_refused_in_our_words():
    """Below 11 If's branches must give results of one rank (If-1's shape inference)."""
    model = run_time_axes_model("ReduceSum", 13, keepdims=0)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=10, ops=[])
    assert "which is computed at run time, so it cannot go to opset 10 where axes is an attribute" in str(refused.value)
    assert "choosing among its reductions at run time needs opset 11" in str(refused.value)


def test_reduce_with_axes_computed_at_run_time_on_a_rank_6_input_is_refused_in_our_words():
    model = run_time_axes_model("ReduceMax", 18, shape=(1, 2, 1, 2, 1, 2), keepdims=1)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=13, ops=[])
    assert "which is computed at run time" in str(refused.value)
    assert "its input is of rank 6, which would need 2^6 reductions" in str(refused.value)


def test_reduce_sum_13_negative_axes_below_11_without_the_rank_are_refused():
    """Data reshaped to a shape given at run time: its rank is unknown, so -1 names no axis of ReduceSum-1."""
    model = make_model(
        [
            helper.make_node("Reshape", ["flat", "shape"], ["x"], name="reshape"),
            helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="reduce", keepdims=1),
        ],
        [
            helper.make_tensor_value_info("flat", TensorProto.FLOAT, [6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, ["r"]),
        ],
        [output_of_rank("y", TensorProto.FLOAT, 2)],
        opset=13,
        initializer=[numpy_helper.from_array(np.array([-1], np.int64), "axes")],
    )
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=10, ops=[])
    assert str(refused.value) == (
        "graph 'main', node 'reduce' (ReduceSum): ReduceSum-13 with negative axes [-1] cannot go to opset 10, which "
        "takes no negative axes, without the rank of its input 'x'"
    )


@slow_but_a_sample()
@pytest.mark.parametrize("source", [7, 11, 12])
@pytest.mark.parametrize("axes", [[1], [0, 2], None])
def test_reduce_sum_up_to_13_takes_the_axes_as_an_input(axes, source):
    attributes = {"keepdims": 0} | ({} if axes is None else {"axes": axes})
    model = make_model(
        [helper.make_node("ReduceSum", ["x"], ["y"], name="reduce", **attributes)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, REDUCE_SHAPE)],
        [output_of_rank("y", TensorProto.FLOAT, 3 - len(axes or REDUCE_SHAPE))],
        opset=source,
    )
    assert_lowers_bit_for_bit(model, 13, {"x": reduce_input()}, "axes input")


@slow_but_a_sample()
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("axes", [[1], [-1, 0], []])
@pytest.mark.parametrize("op_type", ["ReduceLogSum", "ReduceLogSumExp"])
def test_reduce_log_sum_18_goes_to_11_by_the_adapter_and_28_by_its_function_body(op_type, axes, keepdims):
    """Version 18 moves its constant axes into the attribute; version 28 (only its integer types
    dropped), which onnxruntime runs by its function body, goes down by that body: both bit for
    bit on edge values."""
    data = np.abs(reduce_input())  # the log of a negative sum is NaN either way; keep the values telling
    model_18 = reduce_model(op_type, 18, axes, keepdims=keepdims)
    assert_lowers_bit_for_bit(model_18, 11, {"x": data}, "axes attribute")
    model_28 = reduce_model(op_type, 28, axes, keepdims=keepdims)
    result = lowered(model_28, 11)
    assert result.report.rewritten == {f"{op_type}-28 by its function body": 1} | (
        {"CastLike-25 by its function body": 1} if op_type == "ReduceLogSumExp" else {}
    )
    for got, want in zip(
        run_onnxruntime(result.model, {"x": data}), run_onnxruntime(model_28, {"x": data}), strict=True
    ):
        assert_same_bits(got, want, f"{op_type}-28 to 11")


@pytest.mark.parametrize("op_type", ["ReduceL1", "ReduceSumSquare", "ReduceLogSum"])
def test_reduce_with_run_time_axes_and_noop_1_is_refused_where_no_axes_have_no_agreed_meaning(op_type):
    """The axes may turn out empty at run time, where noop_with_empty_axes=1 means the input
    itself by the spec and the element-wise step by onnx.reference and onnxruntime."""
    model = run_time_axes_model(op_type, 18, keepdims=1, noop_with_empty_axes=1)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=11, ops=[])
    message = str(refused.value)
    assert f"{op_type}-18 takes its axes from 'axes', which is computed at run time" in message
    assert "with noop_with_empty_axes=1 no axes have no agreed meaning" in message
    assert "onnx's version converter" not in message and "Assertion" not in message


@pytest.mark.slow
@pytest.mark.parametrize("op_type", ["ReduceLogSum", "ReduceLogSumExp"])
def test_reduce_28_with_axes_computed_at_run_time_goes_down_by_its_function_body(op_type):
    """Version 28 goes down by its body only; the body's ReduceSum-13 reads the same run-time
    axes and chooses among its reductions: bit for bit against the op (run by that body)."""
    model = run_time_axes_model(op_type, 28, keepdims=0)
    result = lowered(model, 11)
    assert f"{op_type}-28 by its function body" in result.report.rewritten
    got_run, want_run = OnnxruntimeRunner(result.model), OnnxruntimeRunner(model)  # one session each, every axes
    for axes in RUN_TIME_AXES:
        feeds = {"x": np.abs(reduce_input()), "axes": np.array(axes, np.int64)}
        for got, want in zip(got_run(feeds), want_run(feeds), strict=True):
            assert_same_bits(got, want, f"{op_type}-28 over {axes} to 11")


def test_run_time_axes_carry_the_node_doc_and_metadata_once_on_both_paths():
    """The outermost If carries the node's doc_string and metadata_props; the leaves carry
    nothing; the fast path's markers never reach a subgraph (fast and plain give one model)."""
    models = []
    for fast in (True, False):
        model = run_time_axes_model("ReduceMean", 18, keepdims=0)
        for index in range(3):  # three of a kind: the fast path records the first and replays the rest
            if index:
                copy = onnx.NodeProto()
                copy.CopyFrom(model.graph.node[0])
                copy.output[0] = f"y{index}"
                model.graph.node.insert(index, copy)  # y1, y2 unread: every node still lowers
        for node in model.graph.node[:3]:
            node.doc_string = "mean of the chosen axes"
            node.metadata_props.add(key="source", value="export")
        models.append(lowering.lower(model, target_opset=13, ops=[], fast=fast).SerializeToString())
    assert models[0] == models[1]
    assert b"carried" not in models[0]
    lowered_model = onnx.ModelProto.FromString(models[0])
    ifs = [n for n in lowered_model.graph.node if n.op_type == "If"]
    assert len(ifs) == 3 and all(n.doc_string == "mean of the chosen axes" for n in ifs)
    assert all([(p.key, p.value) for p in n.metadata_props] == [("source", "export")] for n in ifs)
    assert models[0].count(b"mean of the chosen axes") == 3
