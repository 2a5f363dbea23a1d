"""Hardmax lowered to the one-hot of ArgMax's index (rules/hardmax.py): every version (1 and 11
take x as a matrix cut before the axis, 13 one axis) at the opsets where each is in force, every
type, every axis of ranks 1 to 4 given and left out, on lines of edge values (NaN of every sign
and payload, ±inf, ±0, subnormals, the extremes) and ties, bit for bit against the rule's
reference and onnxruntime's kernel; in an If's branches and a local function; what is declined.
The backend cases are checked against their expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, runs_in_onnxruntime, slow_but_a_sample, type_name

import lowering
from lowering.registry import rule_for
from lowering.samples import edge_values
from lowering.verification.runtime import run_reference

RULE = rule_for("", "Hardmax")
SHAPES = [[7], [4, 6], [2, 3, 5], [3, 1, 2, 4]]
# (opset, element types): each version in force, bfloat16 from 13
OPSETS = [
    (9, (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)),
    (11, (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)),
    (13, (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)),
    (22, (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)),
]


def hardmax_model(element_type: int, shape, opset: int, **attributes) -> onnx.ModelProto:
    node = helper.make_node("Hardmax", ["x"], ["y"], name="hardmax", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, shape)],
        opset=opset,
    )


def data(element_type: int, shape, rng) -> np.ndarray:
    """The type's edge values and small integers (ties), shuffled over x."""
    values = edge_values(element_type)
    ties = rng.integers(-3, 3, size=3 * values.size).astype(values.dtype)
    return rng.permutation(np.resize(np.concatenate([values, ties]), int(np.prod(shape)))).reshape(shape)


def has_nan_line(x: np.ndarray, axis: int, coerced: bool) -> np.ndarray:
    """Per element of x, whether its line (along the axis, or the matrix row where coerced) holds a NaN."""
    wide = np.isnan(x.astype(np.float64))
    if coerced:
        rows = wide.reshape(int(np.prod(x.shape[:axis])), -1)
        return np.repeat(rows.any(axis=1), rows.shape[1]).reshape(x.shape)
    return np.broadcast_to(wide.any(axis=axis, keepdims=True), x.shape)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("opset, element_types", OPSETS, ids=[str(o) for o, _ in OPSETS])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_hardmax_gives_the_references_bits_and_the_kernels_on_lines_without_nan(opset, element_types, shape):
    """onnx.reference's bits (numpy's argmax: a NaN counts as the largest; version 13) and the
    rule's reference's on every line; onnxruntime's kernel's (float and float16: it has none of
    double or bfloat16) on every line holding no NaN, and on x with its NaNs made numbers (its
    kernels take NaNs otherwise, and unlike each other: its float kernel maxes by lanes, and of
    [3, 1, -0, NaN, 0, 3.4e38] marks the 3; its float16 kernel walks the line and lets a later
    NaN pass)."""
    rng = np.random.default_rng(opset + len(shape))
    coerced = opset < 13
    for element_type in element_types:
        axes = range(-len(shape), len(shape))
        for axis in [*([None] if len(shape) > 1 or not coerced else []), *axes]:
            given = {} if axis is None else {"axis": axis}
            model = hardmax_model(element_type, shape, opset, **given)
            lowered = lowered_wholly(model, "Hardmax")
            cut = (1 if coerced else -1) if axis is None else axis
            cut = cut + len(shape) if cut < 0 else cut
            for _ in range(3):
                x = data(element_type, shape, rng)
                (got,) = runs_in_onnxruntime(lowered, {"x": x})
                where = f"{type_name(element_type)} axis {axis} at opset {opset}"
                want = RULE.reference(x, axis=cut, coerced=coerced)
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), f"{where}: against the reference"
                # (onnx.reference takes versions 1 and 11 along the axis alone, not as a matrix; its
                # Cast of bool to bfloat16 fails)
                if not coerced and element_type != TensorProto.BFLOAT16:
                    (reference,) = run_reference(model, {"x": x})
                    assert got.tobytes() == reference.tobytes(), f"{where}: against onnx.reference"
                kernel = runs_in_onnxruntime(model, {"x": x})
                if kernel is None:
                    continue
                clean = ~has_nan_line(x, cut, coerced)
                assert np.array_equal(got[clean], kernel[0][clean]), f"{where}: against the kernel"
                numbers = np.where(np.isnan(x.astype(np.float64)), rng.integers(-3, 3, x.shape), x).astype(x.dtype)
                (got,), (want,) = (
                    runs_in_onnxruntime(lowered, {"x": numbers}),
                    runs_in_onnxruntime(model, {"x": numbers}),
                )
                assert got.tobytes() == want.tobytes(), f"{where}: against the kernel, NaNs made numbers"


@pytest.mark.parametrize("source, target", [(11, 13), (11, 22), (13, 11), (12, 9), (9, 13)])
def test_hardmax_taken_to_another_opset_keeps_its_versions_meaning(source, target):
    """A Hardmax written at ``source`` lowered while the model goes to ``target``: x as a matrix
    where the node's own version takes it so (1, 11), one axis where 13 does, whatever the
    target's version (axis 1 of a 2 by 3 by 4 x: the rows of 12, or the lines of 3)."""
    model = hardmax_model(TensorProto.FLOAT, [2, 3, 4], source, axis=1)
    result = lowering.lower_model(model, ops=["Hardmax"], target_opset=target)
    onnx.checker.check_model(result.model, full_check=True)
    assert not [entry for entry in result.report.remaining if entry.op_type == "Hardmax"]
    x = data(TensorProto.FLOAT, [2, 3, 4], np.random.default_rng(source * target))
    (got,) = runs_in_onnxruntime(result.model, {"x": x})
    assert got.tobytes() == RULE.reference(x, axis=1, coerced=source < 13).tobytes()
    numbers = np.where(np.isnan(x), 0, x).astype(np.float32)
    (got,), (want,) = runs_in_onnxruntime(result.model, {"x": numbers}), runs_in_onnxruntime(model, {"x": numbers})
    assert got.tobytes() == want.tobytes()


def test_a_nan_counts_as_the_largest_and_ties_mark_the_first():
    """[NaN, 1, 3] and [1, NaN, 3]: the NaN; [1, NaN, inf, NaN]'s first NaN; [2, 5, 5]: the
    first 5; [-0, 0]: the -0, met first; [-inf, -inf]: the first; [inf, 3.4e38]: inf."""
    lines = np.array([[np.nan, 1, 3, 0], [1, np.nan, 3, 0], [1, np.nan, np.inf, np.nan], [2, 5, 5, 0],
                      [-0.0, 0, -1, -1], [-np.inf, -np.inf, -np.inf, -np.inf], [np.inf, 3.4e38, 0, 0]],
                     np.float32)  # fmt: skip
    model = hardmax_model(TensorProto.FLOAT, list(lines.shape), 13, axis=1)
    (got,) = runs_in_onnxruntime(lowered_wholly(model, "Hardmax"), {"x": lines})
    marked = [[0, 0, 0, 0] for _ in lines]
    for row, index in enumerate([0, 1, 1, 1, 0, 0, 0]):
        marked[row][index] = 1
    assert got.tolist() == marked


@pytest.mark.parametrize("opset", [11, 13])
def test_hardmax_in_branches_and_a_local_function_is_lowered_too(opset):
    model = hardmax_model(TensorProto.FLOAT, [3, 4], opset, axis=1)
    x = data(TensorProto.FLOAT, [3, 4], np.random.default_rng(opset))
    x[np.isnan(x)] = 0  # (the kernel's lines: without NaN)
    for label, nested in nested_forms(model).items():
        lowered = lowered_wholly(nested, "Hardmax")
        for branch in (True, False):
            feeds = {"x": x, "branch": np.array(branch)}
            (got,), (want,) = runs_in_onnxruntime(lowered, feeds), runs_in_onnxruntime(nested, feeds)
            assert got.tobytes() == want.tobytes(), label


@pytest.mark.parametrize(
    "shape, opset, axis, why",
    [
        ([3, None], 13, -1, "not known or is 0"),
        ([3, 0], 13, -1, "not known or is 0"),
        ([None, 4], 13, -1, None),
        ([None, 4], 11, 1, None),
        ([2, None, 4], 11, 1, "not known or is 0"),
        ([3, 4], 7, 1, "int64 Constant"),
        ([3, 4], 13, 2, "outside x's rank"),
    ],
    ids=[
        "unknown line",
        "empty line",
        "unknown rows",
        "unknown rows coerced",
        "unknown matrix row",
        "opset 7",
        "axis out of range",
    ],  # fmt: skip
)
def test_hardmax_is_declined_only_where_the_line_is_not_known(shape, opset, axis, why):
    """Declined where the line's length is unknown or 0, below opset 9, and for an axis outside
    the rank; lowered where only the other dimensions are unknown."""
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    node = helper.make_node("Hardmax", ["x"], ["y"], name="hardmax", axis=axis)
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, None if shape is None else [None] * len(shape))
    model = make_model([node], [x_info], [y_info], opset=opset)
    result = lowering.lower_model(model, ops=["Hardmax"])
    left = [entry for entry in result.report.remaining if entry.op_type == "Hardmax"]
    if why is None:
        assert not left
        onnx.checker.check_model(result.model, full_check=True)
        x = np.array([[1, 3, 3, np.nan], [np.nan, 2, 0, -1]], np.float32)
        assert runs_in_onnxruntime(result.model, {"x": x})[0].tolist() == [[0, 0, 0, 1], [1, 0, 0, 0]]
    else:
        [entry] = left
        assert why in entry.reason
