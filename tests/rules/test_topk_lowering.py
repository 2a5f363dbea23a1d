"""TopK lowered by its rule (rules/topk.py): the backend cases bit for bit against their expected
outputs; random inputs (few values, so that they tie; NaN with any payload, ±inf, ±0,
subnormals; K given and fed; lengths given and left to run time) bit for bit against onnxruntime's
kernel where it has one, and against an independent ordering (numpy's stable lexsort) where it
has none (uint16, uint32, uint64, bfloat16); K outside [0, n] failing as the kernel fails; inside
If branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_values,
    make_model,
    nested_forms,
    op_type_set,
    random_elements,
    slow_but_a_sample,
)
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime

BACKEND_CASES = node_cases_of("TopK")
ONNXRUNTIME_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                     TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8)  # fmt: skip
OTHER_TYPES = (TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BFLOAT16)


def topk_model(element_type, shape, k: int | None = None, opset: int = 11, dims_known: bool = True, **attributes):
    """``TopK(x, k)``: K a constant where given, else fed; X's dims given or named."""
    rank = len(shape)
    dims = list(shape) if dims_known else [f"d{d}" for d in range(rank)]
    inputs = [helper.make_tensor_value_info("x", element_type, dims)]
    nodes = []
    if k is None:
        inputs.append(helper.make_tensor_value_info("k", TensorProto.INT64, [1]))
    else:
        value = helper.make_tensor("k", TensorProto.INT64, [1], [k])
        nodes.append(helper.make_node("Constant", [], ["k"], value=value))
    nodes.append(helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk", **attributes))
    outputs = [helper.make_tensor_value_info(name, t, [f"o{d}" for d in range(rank)])
               for name, t in (("values", element_type), ("indices", TensorProto.INT64))]  # fmt: skip
    return make_model(nodes, inputs, outputs, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["TopK"])
    assert result.report.complete, result.report.lines()
    assert "TopK" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def tying(element_type, shape, rng: np.random.Generator) -> np.ndarray:
    """Values drawn from a few, so that they tie: -3 to 3 (unsigned: 0 to 6), with NaN of two
    payloads, ±inf and ±0 among floats."""
    dtype = floats.numpy_dtype(element_type)
    signed = np.dtype(dtype).kind != "u"
    values = rng.integers(-3 if signed else 0, 4 if signed else 7, shape).astype(np.float64)
    if not floats.is_float(element_type):
        return values.astype(dtype)
    values = values.astype(np.float32)
    draw = rng.random(shape)
    values[draw < 0.1] = np.nan
    values[(draw >= 0.1) & (draw < 0.15)] = np.frombuffer(np.uint32(0xFFC00123).tobytes(), np.float32)[0]
    values[(draw >= 0.15) & (draw < 0.2)] = np.inf
    values[(draw >= 0.2) & (draw < 0.25)] = -np.inf
    values[(values == 0) & (draw < 0.6)] = -0.0
    return values.astype(dtype)


def topk_reference(x: np.ndarray, k: int, axis: int = -1, largest: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The order the rule states, by numpy's lexsort: NaN above every number, ties by index."""
    moved = np.moveaxis(x, axis, -1)
    wide = moved.astype(np.float64) if moved.dtype.kind in "fV" else moved
    nan = np.isnan(wide) if wide.dtype.kind == "f" else np.zeros(wide.shape, bool)
    key = np.where(nan, 0, wide)
    positions = np.broadcast_to(np.arange(moved.shape[-1]), moved.shape)
    if largest:  # descending: NaN first, then larger first (-key for floats, ~key = -key - 1 for integers)
        order_key = -key if key.dtype.kind == "f" else ~key
        order = np.lexsort((positions, order_key, ~nan), axis=-1)
    else:
        order = np.lexsort((positions, key, nan), axis=-1)
    indices = order[..., :k].astype(np.int64)
    values = np.take_along_axis(moved, indices, axis=-1)
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


def assert_outputs_alike(got: list[np.ndarray], want: list[np.ndarray], where: str) -> None:
    assert len(got) == len(want) == 2, where
    for name, g, w in zip(("values", "indices"), got, want, strict=True):
        assert_same_bits(g, w, f"{where}: {name}")


# (shape, attributes)
FORMS = [
    ((9,), {}),
    ((3, 7), {"largest": 0}),
    ((4, 6, 5), {"axis": 1}),
    ((5, 3), {"axis": 0, "largest": 0}),
    ((2, 3, 8), {"axis": -1}),
    ((1, 1), {}),
]


def _ids(forms):
    return [f"{shape}-{attributes}" for shape, attributes in forms]


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 7


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        assert_outputs_alike(run_onnxruntime(model, feeds), list(expected), name)


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("given", ["k given", "k fed", "dims at run time"])
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
@pytest.mark.parametrize("element_type", ONNXRUNTIME_TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_random_inputs_against_onnxruntime(form, element_type, given):
    shape, attributes = form
    length = shape[attributes.get("axis", -1)]
    rng = np.random.default_rng(10)
    for draw, k in enumerate(sorted({0, 1, length // 2, length})):
        constant = k if given == "k given" else None
        original = topk_model(element_type, shape, constant, dims_known=given != "dims at run time", **attributes)
        model = lowered(original)
        feeds = {"x": tying(element_type, shape, rng)} | ({} if constant is not None else {"k": np.array([k])})
        assert_outputs_alike(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), f"draw {draw}, K {k}")


@pytest.mark.parametrize("element_type", ONNXRUNTIME_TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_any_bits_against_onnxruntime(element_type):
    """Every bit pattern alike: NaN of any sign and payload, infinities, subnormals, the largest
    finite values; integers over their whole range. The indices are onnxruntime's, the values
    X's own bits at them: onnxruntime's float16 kernel answers NaN of another payload (0x7E01 as
    0x7E00, measured), any NaN for a NaN there."""
    rng = np.random.default_rng(24)
    for largest in (1, 0):
        original = topk_model(element_type, (6, 40), None, largest=largest)
        model = lowered(original)
        for k in (1, 17, 40):
            feeds = {"x": random_elements(element_type, (6, 40), rng), "k": np.array([k])}
            (values, indices), (kernel_values, kernel_indices) = (
                run_onnxruntime(model, feeds),
                run_onnxruntime(original, feeds),
            )
            assert_same_bits(indices, kernel_indices, f"K {k}: indices")
            assert_same_bits(values, np.take_along_axis(feeds["x"], indices, axis=-1), f"K {k}: X's bits")
            assert_same_values(values, kernel_values, f"K {k}: values")


def test_the_reference_orders_as_onnxruntime():
    """The independent ordering the other types are checked by answers as onnxruntime's kernel on
    the types both have."""
    rng = np.random.default_rng(5)
    compared = 0
    for element_type in (TensorProto.FLOAT, TensorProto.INT32, TensorProto.UINT8):
        for shape, attributes in FORMS:
            x = tying(element_type, shape, rng)
            k = shape[attributes.get("axis", -1)]
            original = topk_model(element_type, shape, k, **attributes)
            assert_outputs_alike(run_onnxruntime(original, {"x": x}), list(topk_reference(x, k, **attributes)), "")
            compared += 1
    assert compared == 3 * len(FORMS)


EXTREMES = {
    TensorProto.UINT64: [0, 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1],
    TensorProto.UINT32: [0, 1, 2**24, 2**24 + 1, 2**31, 2**31 + 1, 2**32 - 1],
    TensorProto.UINT16: [0, 1, 2**15 - 1, 2**15, 2**16 - 1],
}


@pytest.mark.parametrize("element_type", OTHER_TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_types_onnxruntime_has_no_kernel_for(element_type):
    """uint16, uint32, uint64 (compared exactly past 2^53 and from 2^63) and bfloat16 (TopK-24,
    compared in float32, X's own bits gathered) against the independent ordering."""
    rng = np.random.default_rng(16)
    compared = 0
    for shape, attributes in FORMS:
        original = topk_model(element_type, shape, None, opset=24, **attributes)
        model = lowered(original)
        k = shape[attributes.get("axis", -1)] // 2 + 1
        for _ in range(3):
            if element_type in EXTREMES:
                x = rng.choice(np.array(EXTREMES[element_type], floats.numpy_dtype(element_type)), shape)
            else:
                x = tying(element_type, shape, rng)
            want = topk_reference(x, k, **attributes)
            assert_outputs_alike(run_onnxruntime(model, {"x": x, "k": np.array([k])}), list(want), f"{attributes}")
            compared += 1
    assert compared == 3 * len(FORMS)


def test_topk_1_and_10_converted_and_lowered():
    """TopK-1 (k an attribute) and TopK-10 lowered at opset 11, where the rule writes its ops."""
    x = np.array([[-1, 3, np.nan, 3, -0.0, 0.0]], np.float32)
    for opset, attributes, inputs in ((1, {"k": 4}, ["x"]), (10, {}, ["x", "k"])):
        node = helper.make_node("TopK", inputs, ["values", "indices"], name="topk", **attributes)
        declared = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])]
        declared += [helper.make_tensor_value_info("k", TensorProto.INT64, [1])] if "k" in inputs else []
        outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, [1, 4]),
                   helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 4])]  # fmt: skip
        original = make_model([node], declared, outputs, opset=opset)
        result = lowering.lower_model(original, ops=["TopK"], target_opset=11)
        assert result.report.complete and "TopK" not in op_type_set(result.model), result.report.lines()
        feeds = {"x": x} | ({"k": np.array([4])} if "k" in inputs else {})
        got = run_onnxruntime(result.model, feeds)
        assert got[1].tolist() == [[2, 1, 3, 4]], opset
        assert_same_bits(got[0], x[:, [2, 1, 3, 4]], f"TopK-{opset}")


def test_k_outside_the_axis_fails_as_the_kernel_fails():
    original = topk_model(TensorProto.FLOAT, (5,), None, dims_known=False)
    model = lowered(original)
    x = np.arange(5, dtype=np.float32)
    for k in (-1, 6):
        for side in (original, model):
            with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
                run_onnxruntime(side, {"x": x, "k": np.array([k])})
    assert_outputs_alike(run_onnxruntime(model, {"x": x, "k": np.array([5])}),
                         [x[::-1].copy(), np.arange(5)[::-1].astype(np.int64)], "K = n")  # fmt: skip


def test_k_of_unknown_rank_is_checked_at_run_time():
    """K made by a Reshape to a fed shape: its rank is unknown, so the lowered model checks it,
    failing where K is not [1] as the kernel fails."""
    nodes = [helper.make_node("Reshape", ["k_data", "k_shape"], ["k"]),
             helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")]  # fmt: skip
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
              helper.make_tensor_value_info("k_data", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("k_shape", TensorProto.INT64, ["r"])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["o"]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, ["o"])]  # fmt: skip
    original = make_model(nodes, inputs, outputs, opset=11)
    model = lowered(original)
    x = np.array([3, 1, 4, 1, 5], np.float32)
    feeds = {"x": x, "k_data": np.array([2])}
    assert_outputs_alike(run_onnxruntime(model, feeds | {"k_shape": np.array([1])}),
                         run_onnxruntime(original, feeds | {"k_shape": np.array([1])}), "K [1]")  # fmt: skip
    for shape in ([], [1, 1]):
        for side in (original, model):
            with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own error types)
                run_onnxruntime(side, feeds | {"k_shape": np.array(shape, np.int64)})


def test_an_initializer_a_graph_input_overrides_is_read_at_run_time():
    """K an initializer that is also a graph input (a default): its value is fed, not a constant."""
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5]),
              helper.make_tensor_value_info("k", TensorProto.INT64, [1])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["o"]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, ["o"])]  # fmt: skip
    original = make_model([node], inputs, outputs, opset=11)
    original.graph.initializer.append(helper.make_tensor("k", TensorProto.INT64, [1], [2]))
    model = lowered(original)
    x = np.array([3, 1, 4, 1, 5], np.float32)
    for feeds in ({"x": x}, {"x": x, "k": np.array([4])}):
        assert_outputs_alike(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), f"{feeds.keys()}")
    assert len(run_onnxruntime(model, {"x": x, "k": np.array([4])})[0]) == 4


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)], ids=str)
def test_no_elements(shape):
    """An empty axis (K = 0 the only K) or an empty other axis: empty outputs, as the kernel's."""
    for given in (True, False):
        original = topk_model(TensorProto.FLOAT, shape, 0 if given else None, dims_known=given)
        feeds = {"x": np.zeros(shape, np.float32)} | ({} if given else {"k": np.array([0])})
        got, want = run_onnxruntime(lowered(original), feeds), run_onnxruntime(original, feeds)
        assert_outputs_alike(got, want, f"{shape}")


def test_writes_only_the_ops_it_names():
    """EMITS (which a target's opset ranking reads) holds every op the rule writes, over the
    backend cases and K fed with lengths at run time."""
    models = [case.model for case in BACKEND_CASES.values()]
    models += [topk_model(TensorProto.FLOAT16, (3, 4), None, dims_known=False, axis=0)]
    for original in models:
        written = {node.op_type for node in lowered(original).graph.node}
        assert written <= set(rule_for("", "TopK").emits), sorted(written - set(rule_for("", "TopK").emits))


@pytest.mark.parametrize("form", [FORMS[1], FORMS[2]], ids=_ids([FORMS[1], FORMS[2]]))
def test_inside_if_branches_and_local_functions(form):
    shape, attributes = form
    original = topk_model(TensorProto.FLOAT, shape, None, **attributes)
    rng = np.random.default_rng(3)
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        feeds = {"x": tying(TensorProto.FLOAT, shape, rng), "k": np.array([2])}
        want = run_onnxruntime(original, feeds)
        for branch in (True, False):
            assert_outputs_alike(run_onnxruntime(model, {**feeds, "branch": np.array(branch)}), want, label)


# -- refusals ---------------------------------------------------------------------------------------


def refused(model: onnx.ModelProto) -> str:
    result = lowering.lower_model(model, ops=["TopK"])
    assert not result.report.complete
    return "\n".join(result.report.lines())


def test_unsorted_is_refused():
    """sorted=0: onnxruntime answers in its selection order, neither sorted nor by index."""
    original = topk_model(TensorProto.INT64, (100,), 11, sorted=0)
    assert "sorted=0 leaves the order to the kernel" in refused(original)
    got = run_onnxruntime(original, {"x": np.arange(100, dtype=np.int64) % 7})[1]
    assert sorted(got.tolist()) != got.tolist() and sorted(got.tolist(), reverse=True) != got.tolist()


def test_k_known_outside_the_axis_is_refused():
    assert "K = 6 is outside [0, 5], the length along the axis: the op fails" in refused(
        topk_model(TensorProto.FLOAT, (5,), 6)
    )


def test_too_many_pairs_are_refused():
    assert "more than the 2^24 this rule compares at once" in refused(topk_model(TensorProto.FLOAT, (4, 3000), 5))


def test_unknown_rank_is_refused():
    """X reshaped to a fed shape of unknown length: its rank, and so the axis, is unknown."""
    nodes = [helper.make_node("Reshape", ["data", "shape"], ["x"]),
             helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")]  # fmt: skip
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [6]),
              helper.make_tensor_value_info("shape", TensorProto.INT64, ["s"]),
              helper.make_tensor_value_info("k", TensorProto.INT64, [1])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["v"]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, ["v"])]  # fmt: skip
    assert "X's rank is unknown" in refused(make_model(nodes, inputs, outputs, opset=11))


def test_opsets_below_11_are_refused():
    node = helper.make_node("TopK", ["x"], ["values", "indices"], name="topk", k=2)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, [2]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, [2])]  # fmt: skip
    assert "the rule writes ops as they are from opset 11, not 9" in refused(make_model([node], [x], outputs, opset=9))


def test_k_constant_and_negative_is_refused_whatever_the_length():
    assert "K = -1 is outside [0, n]" in refused(topk_model(TensorProto.FLOAT, (5,), -1, dims_known=False))


def test_k_not_shaped_1_is_refused():
    """The op fails on a K not shaped [1], constant or declared so."""
    for k_shape, constant in (([], False), ([1, 1], False), ([1, 1], True)):
        node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])
        k = helper.make_tensor_value_info("k", TensorProto.INT64, k_shape)
        outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["o"]),
                   helper.make_tensor_value_info("indices", TensorProto.INT64, ["o"])]  # fmt: skip
        model = make_model([node], [x] if constant else [x, k], outputs, opset=11)
        if constant:
            model.graph.initializer.append(helper.make_tensor("k", TensorProto.INT64, k_shape, [2]))
        assert f"K is {'shaped' if constant else 'declared'} {k_shape}, not [1]: the op fails" in refused(model)


def test_too_many_pairs_with_lengths_at_run_time_are_refused():
    """An unknown batch is at least 1: one row of 8000 makes 6.4e7 pairs."""
    node = helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8000])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [1])
    outputs = [helper.make_tensor_value_info("values", TensorProto.FLOAT, ["b", "o"]),
               helper.make_tensor_value_info("indices", TensorProto.INT64, ["b", "o"])]  # fmt: skip
    model = make_model([node], [x, k], outputs, opset=11)
    assert "at least 8000 elements each compared with the 8000" in refused(model)
