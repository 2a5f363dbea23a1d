"""Unique lowered by its rule (rules/unique.py): the backend cases bit for bit against their
expected outputs; random inputs with many repeats (every output, sorted or in order of first
appearance, with and without an axis, ±0 and empty inputs among them) bit for bit against
onnxruntime's kernel where it has one (float, double, float16, bfloat16, int8, int64) and
onnx.reference elsewhere; NaN as the rule states it, beside what onnxruntime's kernel answers;
inside If branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_bits, make_model, nested_forms, op_type_set, slow_but_a_sample
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats
from lowering.verification.runtime import run_onnxruntime, run_reference

BACKEND_CASES = node_cases_of("Unique")
OUTPUTS = ("y", "indices", "inverse_indices", "counts")
ONNXRUNTIME_TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.INT64)
OTHER_TYPES = (TensorProto.INT32, TensorProto.INT16, TensorProto.UINT8, TensorProto.UINT32, TensorProto.UINT64,
               TensorProto.BOOL)  # fmt: skip


def unique_model(element_type, rank: int, opset: int = 11, outputs=OUTPUTS, **attributes) -> onnx.ModelProto:
    """``Unique(x)`` giving ``outputs`` (the others left out), every length given at run time."""
    names = [name if name in outputs else "" for name in OUTPUTS]
    while not names[-1]:
        names.pop()
    node = helper.make_node("Unique", ["x"], names, name="unique", **attributes)
    y_rank = rank if "axis" in attributes else 1
    declared = [
        helper.make_tensor_value_info(name, element_type if name == "y" else TensorProto.INT64,
                                      [f"{name}{k}" for k in range(y_rank if name == "y" else 1)])
        for name in names if name
    ]  # fmt: skip
    x = helper.make_tensor_value_info("x", element_type, [f"d{k}" for k in range(rank)])
    return make_model([node], [x], declared, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["Unique"])
    assert result.report.complete, result.report.lines()
    assert "Unique" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def assert_outputs_alike(got: list[np.ndarray], want: list[np.ndarray], where: str) -> None:
    assert len(got) == len(want), where
    for name, g, w in zip(OUTPUTS, got, want, strict=False):
        assert_same_bits(g, w, f"{where}: {name}")


def repeating(element_type, shape, rng: np.random.Generator) -> np.ndarray:
    """Values drawn from a few, so that rows repeat: -2 to 2 (bools: both), ±0 for floats."""
    dtype = floats.numpy_dtype(element_type)
    if element_type == TensorProto.BOOL:
        return rng.integers(0, 2, shape).astype(bool)
    values = rng.integers(-2 if np.dtype(dtype).kind in "fiV" else 0, 3, shape).astype(np.float64)
    if floats.is_float(element_type):
        values = np.where((values == 0) & (rng.random(shape) < 0.5), -0.0, values)
    return values.astype(dtype)


# (shape, attributes)
FORMS = [
    ((7,), {}),
    ((9,), {"sorted": 0}),
    ((5, 3), {"axis": 0}),
    ((3, 6), {"axis": 1, "sorted": 0}),
    ((4, 2, 3), {"axis": -1}),
    ((2, 5, 2), {"axis": 1}),
    ((3, 4), {}),
    ((0, 3), {"axis": 0}),
    ((0,), {"sorted": 0}),
    ((), {}),
]


def _ids(forms):
    return [f"{shape}-{attributes}" for shape, attributes in forms]


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 6


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        assert_outputs_alike(run_onnxruntime(model, feeds), list(expected), name)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
@pytest.mark.parametrize("element_type", ONNXRUNTIME_TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_random_inputs_against_onnxruntime(form, element_type):
    shape, attributes = form
    original = unique_model(element_type, len(shape), **attributes)
    model = lowered(original)
    rng = np.random.default_rng(11)
    for draw in range(4):
        feeds = {"x": repeating(element_type, shape, rng)}
        assert_outputs_alike(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), f"draw {draw}")


@slow_but_a_sample()
@pytest.mark.parametrize("form", FORMS[:7], ids=_ids(FORMS[:7]))
@pytest.mark.parametrize("element_type", OTHER_TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_types_onnxruntime_has_no_kernel_for_against_its_int64_kernel(form, element_type):
    """The values (-2 to 2, both bools) as int64 through onnxruntime's int64 kernel, whose order
    and equality are theirs; Y the input's own elements at its indices (onnx.reference misreads
    an axis other than 0 with sorted=0)."""
    shape, attributes = form
    model = lowered(unique_model(element_type, len(shape), **attributes))
    as_int64 = unique_model(TensorProto.INT64, len(shape), **attributes)
    rng = np.random.default_rng(12)
    for draw in range(3):
        x = repeating(element_type, shape, rng)
        _, indices, inverse, counts = run_onnxruntime(as_int64, {"x": x.astype(np.int64)})
        y = np.take(x.reshape(-1) if "axis" not in attributes else x, indices, axis=attributes.get("axis", 0))
        assert_outputs_alike(run_onnxruntime(model, {"x": x}), [y, indices, inverse, counts], f"draw {draw}")


EXTREMES = {
    TensorProto.INT64: [-(2**63), -(2**63) + 1, -(2**53) - 1, -(2**53), 2**53, 2**53 + 1, 2**63 - 2, 2**63 - 1, 0, -1],
    TensorProto.UINT64: [0, 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1],
    TensorProto.INT32: [-(2**31), -(2**31) + 1, 2**24, 2**24 + 1, 2**31 - 1, 0, -1],
    TensorProto.UINT32: [0, 2**24 + 1, 2**31, 2**31 + 1, 2**32 - 1, 1],
}


@pytest.mark.parametrize("element_type", list(EXTREMES), ids=lambda t: TensorProto.DataType.Name(t))
def test_integers_at_their_extremes_keep_their_order(element_type):
    """Integers no float holds apart (past 2^53, or 2^24) and past the signed range (uint64 from
    2^63) are compared exactly, against numpy's unique (sorted) on rows and on elements."""
    dtype = floats.numpy_dtype(element_type)
    rng = np.random.default_rng(64)
    values = np.array(EXTREMES[element_type], dtype)
    x = rng.choice(values, (12, 2))
    for attributes in ({}, {"axis": 0}):
        got = run_onnxruntime(lowered(unique_model(element_type, 2, **attributes)), {"x": x})
        want = np.unique(x.reshape(-1) if not attributes else x, True, True, True, axis=attributes.get("axis"))
        assert_outputs_alike(got, [want[0], *(w.astype(np.int64).reshape(-1) for w in want[1:])], f"{attributes}")


def test_rows_of_no_elements_are_one_row():
    """Rows of no elements are all equal (one unique row), as onnx.reference answers; onnxruntime's
    kernel aborts the process on them, so it is not run here."""
    original = unique_model(TensorProto.FLOAT, 2, axis=0)
    feeds = {"x": np.zeros((3, 0), np.float32)}
    got = run_onnxruntime(lowered(original), feeds)
    assert [g.shape for g in got] == [(1, 0), (1,), (3,), (1,)]
    assert_outputs_alike(got, run_reference(original, feeds), "rows of no elements")


def test_bfloat16_against_onnxruntime():
    """Unique-28 takes bfloat16 (compared in float32, X's own bits gathered)."""
    original = unique_model(TensorProto.BFLOAT16, 2, opset=28, axis=0)
    model = lowered(original)
    rng = np.random.default_rng(28)
    for _ in range(3):
        feeds = {"x": repeating(TensorProto.BFLOAT16, (6, 2), rng)}
        assert_outputs_alike(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), "bfloat16")


def test_bfloat16_goes_below_28_by_the_rule():
    """Unique-11 takes no bfloat16: converting Unique-28 to 17 lowers it (tests/rules/versions/
    test_adapters_types.py named the refusal before the rule)."""
    original = unique_model(TensorProto.BFLOAT16, 1, opset=28, sorted=0)
    result = lowering.lower_model(original, target_opset=17, ops=[])
    assert result.report.complete and "Unique" not in op_type_set(result.model), result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"x": repeating(TensorProto.BFLOAT16, (9,), np.random.default_rng(17))}
    assert_outputs_alike(run_onnxruntime(result.model, feeds), run_onnxruntime(original, feeds), "to 17")


def test_only_the_outputs_asked_for_are_written():
    original = unique_model(TensorProto.FLOAT, 1, outputs=("y", "counts"), sorted=0)
    model = lowered(original)
    feeds = {"x": np.array([3, 1, 3, 2, 1, 3], np.float32)}
    got = run_onnxruntime(model, feeds)
    assert_outputs_alike(got, run_onnxruntime(original, feeds), "y and counts")
    assert [g.tolist() for g in got] == [[3, 1, 2], [3, 2, 1]]


def test_nan_is_one_value_above_every_number():
    """The rule's NaN, as onnx.reference answers without an axis. onnxruntime's kernel answers by
    its map's balance (NaN neither below nor above anything), so that its answer depends on
    where the NaNs stand; checked here, so that a kernel that changes is seen."""
    original = unique_model(TensorProto.FLOAT, 1)
    model = lowered(original)
    x = np.array([2, np.nan, np.nan, np.nan, 1, -0.0, 0.0], np.float32)
    x[2] = np.frombuffer(np.uint32(0xFFC00001).tobytes(), np.float32)[0]  # (another NaN's bits)
    got = run_onnxruntime(model, {"x": x})
    assert [g.tolist() for g in got[1:]] == [[5, 4, 0, 1], [2, 3, 3, 3, 1, 0, 0], [2, 1, 1, 3]]
    assert_same_bits(got[0], x[[5, 4, 0, 1]])
    spec = run_reference(original, {"x": x})
    for g, w in zip(got, spec, strict=True):
        np.testing.assert_array_equal(g, w)
    native = run_onnxruntime(original, {"x": np.array([2, np.nan, np.nan, np.nan, 1], np.float32)})
    assert [n.tolist() for n in native[::3]] == [[1, 2], [1, 4]], "onnxruntime's kernel answers NaN otherwise now"


def test_rows_holding_nan_along_an_axis():
    """With an axis, a NaN meets a NaN at the same place as an equal element; rows are ordered
    at their first unequal element, NaN above every number."""
    model = lowered(unique_model(TensorProto.DOUBLE, 2, axis=0))
    x = np.array([[1, np.nan], [1, 2], [1, np.nan], [np.nan, 0], [1, 2]])
    y, indices, inverse, counts = run_onnxruntime(model, {"x": x})
    assert indices.tolist() == [1, 0, 3] and inverse.tolist() == [1, 0, 1, 2, 0] and counts.tolist() == [2, 2, 1]
    assert_same_bits(y, x[[1, 0, 3]])


@pytest.mark.parametrize("form", [FORMS[1], FORMS[2]], ids=_ids([FORMS[1], FORMS[2]]))
def test_inside_if_branches_and_local_functions(form):
    shape, attributes = form
    original = unique_model(TensorProto.FLOAT, len(shape), **attributes)
    rng = np.random.default_rng(3)
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        feeds = {"x": repeating(TensorProto.FLOAT, shape, rng)}
        want = run_onnxruntime(original, feeds)
        for branch in (True, False):
            assert_outputs_alike(run_onnxruntime(model, {**feeds, "branch": np.array(branch)}), want, label)


# -- refusals ---------------------------------------------------------------------------------------


def refused(model: onnx.ModelProto) -> str:
    result = lowering.lower_model(model, ops=["Unique"])
    assert not result.report.complete
    return "\n".join(result.report.lines())


def test_strings_are_refused():
    assert "X is string, which no comparison orders" in refused(unique_model(TensorProto.STRING, 1))


def test_too_many_pairs_are_refused():
    node = helper.make_node("Unique", ["x"], ["y"], name="unique")
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5000])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["u"])], opset=11)  # fmt: skip
    assert "5000 rows make at least 25000000 pairs of elements to compare, more than the 2^24" in refused(model)


@pytest.mark.parametrize("columns", [0, "m"])
def test_too_many_rows_of_no_or_unknown_elements_are_refused(columns):
    """The n×n comparisons are made whatever the rows hold: a row of no elements, or of an unknown
    number, counts as at least one."""
    node = helper.make_node("Unique", ["x"], ["y"], name="unique", axis=0)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6000, columns])
    model = make_model([node], [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["u", columns])], opset=11)
    assert "6000 rows make at least 36000000 pairs of elements" in refused(model)


def test_an_axis_of_an_unknown_rank_is_refused():
    nodes = [
        helper.make_node("Reshape", ["a", "shape"], ["x"], name="reshape"),
        helper.make_node("Unique", ["x"], ["y"], name="unique", axis=0),
    ]
    inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["n"]),
              helper.make_tensor_value_info("shape", TensorProto.INT64, ["r"])]  # fmt: skip
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["u"])], opset=11)
    assert "X's rank is unknown" in refused(model)
