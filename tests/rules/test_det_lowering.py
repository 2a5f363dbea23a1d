"""Det lowered to Gaussian elimination with partial pivoting (rules/det.py): matrices of order 1 to
7 and 16, with no, one and two batch axes, at opsets 11 and 22, on random matrices with singular
ones (a zero row, two equal columns), ties for the pivot (integers) and edge values (NaN, ±inf,
±0, subnormals, the extremes), bit for bit against the rule's reference and onnxruntime's float
and float16 kernels (NaN as NaN); batch axes of unknown size; what is declined; nested graphs.
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

RULE = rule_for("", "Det")
TYPES = {11: (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16),
         22: (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)}  # fmt: skip
CASES = [(opset, t, n) for opset, types in TYPES.items() for t in types for n in range(1, 8)]


def det_model(element_type: int, shape, opset: int) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Det", ["x"], ["y"], name="det")],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", element_type, shape[:-2])],
        opset=opset,
    )


def matrices(element_type: int, batch, n: int, rng) -> np.ndarray:
    """Random matrices, one in 7 with a zero first row, one in 11 with two equal columns, one in 13
    of integers (pivots tie), a twentieth of the entries edge values."""
    x = rng.standard_normal((*batch, n, n))
    flat = x.reshape(-1, n, n)
    flat[::7, 0, :] = 0
    if n > 1:
        flat[::11, :, 0] = flat[::11, :, 1]
    flat[::13] = np.round(flat[::13] * 2)
    edges = rng.random(flat.shape) < 0.05
    flat[edges] = rng.choice(edge_values(element_type).astype(np.float64), edges.sum())
    with np.errstate(over="ignore"):
        return flat.reshape(x.shape).astype(helper.tensor_dtype_to_np_dtype(element_type))


def assert_same(got: np.ndarray, want: np.ndarray, where: str) -> None:
    """The same bits, a NaN meeting any NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape, where
    nan = np.isnan(got.astype(np.float64))
    assert np.array_equal(nan, np.isnan(want.astype(np.float64))), where
    assert got[~nan].tobytes() == want[~nan].tobytes(), where


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("opset, element_type, n", CASES, ids=[f"{o}-{type_name(t)}-{n}" for o, t, n in CASES])
def test_det_gives_the_kernels_bits(opset, element_type, n):
    rng = np.random.default_rng(opset * n + element_type)
    for batch in ((), (40,), (6, 7)):
        x = matrices(element_type, batch, n, rng)
        model = det_model(element_type, list(x.shape), opset)
        (got,) = runs_in_onnxruntime(lowered_wholly(model, "Det"), {"x": x})
        where = f"{type_name(element_type)} order {n}, batch {batch}, opset {opset}"
        assert_same(got, RULE.reference(x), f"{where}: against the reference")
        kernel = runs_in_onnxruntime(model, {"x": x})
        if kernel is not None:
            assert_same(got, kernel[0], f"{where}: against the kernel")


def test_order_16_and_batch_axes_of_unknown_size():
    x = matrices(TensorProto.FLOAT, (5,), 16, np.random.default_rng(16))
    model = det_model(TensorProto.FLOAT, [None, 16, 16], 22)
    lowered = lowered_wholly(model, "Det")
    (got,), (want,) = runs_in_onnxruntime(lowered, {"x": x}), runs_in_onnxruntime(model, {"x": x})
    assert_same(got, want, "order 16")


def test_matrices_of_order_0_have_determinant_1():
    """The empty product, as the kernel gives it, of a batch of three and of one matrix alone."""
    for shape in ([3, 0, 0], [0, 0], [0, 2, 0, 0]):
        x = np.zeros(shape, np.float32)
        model = det_model(TensorProto.FLOAT, shape, 22)
        (got,), (want,) = (
            runs_in_onnxruntime(lowered_wholly(model, "Det"), {"x": x}),
            runs_in_onnxruntime(model, {"x": x}),
        )
        assert_same(got, want, f"order 0, shape {shape}")
        assert_same(got, RULE.reference(x), f"order 0, shape {shape}: against the reference")


def test_zero_determinants_keep_the_kernels_sign():
    """Of an all −0 matrix, a matrix with a −0 pivot, a matrix of ±0 rows: the kernel's zeros."""
    x = np.array([[[-0.0, -0.0], [-0.0, -0.0]], [[-0.0, 1.0], [0.0, 2.0]], [[0.0, -0.0], [-0.0, 0.0]],
                  [[1.0, 2.0], [2.0, 4.0]], [[-1.0, 2.0], [2.0, -4.0]]], np.float32)  # fmt: skip
    model = det_model(TensorProto.FLOAT, list(x.shape), 22)
    (got,), (want,) = runs_in_onnxruntime(lowered_wholly(model, "Det"), {"x": x}), runs_in_onnxruntime(model, {"x": x})
    assert_same(got, want, "zeros")


@pytest.mark.parametrize(
    "shape, why",
    [([2, None, None], "order of x's matrices is not known"), ([17, 17], "up to order 16"), ([3, None], "not known")],
    ids=["unknown order", "order 17", "unknown columns"],
)
def test_det_is_declined_where_the_order_is_unknown_or_large(shape, why):
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-2])
    model = make_model([helper.make_node("Det", ["x"], ["y"])], [x_info], [y_info], opset=22)
    [left] = lowering.lower_model(model, ops=["Det"]).report.remaining
    assert why in left.reason


def test_det_in_branches_and_a_local_function_is_lowered_too():
    x = matrices(TensorProto.FLOAT, (4,), 3, np.random.default_rng(5))
    model = det_model(TensorProto.FLOAT, list(x.shape), 22)
    for label, nested in nested_forms(model).items():
        lowered = lowered_wholly(nested, "Det")
        for branch in (True, False):
            feeds = {"x": x, "branch": np.array(branch)}
            (got,), (want,) = runs_in_onnxruntime(lowered, feeds), runs_in_onnxruntime(nested, feeds)
            assert_same(got, want, label)
