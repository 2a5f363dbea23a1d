"""NonZero lowered to the positions TopK picks and their coordinates (rules/nonzero.py): float
values of every class (NaN payloads and ±0 among them; every 16-bit pattern), integers of every
width to their extremes, bools; ranks 1 to 5; lengths of 0 and 1; shapes known, partly known and
unknown; at opset 11, 13 and the newest, against onnxruntime's kernel and the rule's numpy
reference; with TopK lowered too; inside an If and a local function; what it declines. The backend cases are checked by
tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from lowering.rules.nonzero import FIRST_OPSET, nonzero_reference
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, random_elements, runs_in_onnxruntime, slow_but_a_sample

import lowering
from lowering import schemas

TYPES = [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE, TensorProto.INT64,
         TensorProto.INT32, TensorProto.INT16, TensorProto.INT8, TensorProto.UINT64, TensorProto.UINT32,
         TensorProto.UINT16, TensorProto.UINT8, TensorProto.BOOL]  # fmt: skip
OPSETS = (FIRST_OPSET, 13, schemas.newest_opset())
SHAPES = [(7,), (1,), (0,), (2, 3), (3, 1, 4), (2, 0, 3), (1, 1, 1), (2, 3, 2, 2), (2, 1, 3, 1, 2)]


def nonzero_model(element_type: int, opset: int, stated) -> object:
    """y = NonZero(x) at ``opset``, x of ``stated`` dimensions."""
    node = helper.make_node("NonZero", ["x"], ["y"], name="nonzero")
    x = helper.make_tensor_value_info("x", element_type, stated)
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [len(stated), None])
    return make_model([node], [x], [y], opset=opset)


def sparse(element_type: int, shape, rng: np.random.Generator) -> np.ndarray:
    """Random elements of every class, about half of them zeros (±0 for floats)."""
    x = random_elements(element_type, shape, rng)
    zeros = rng.random(shape) < 0.5
    if x.dtype == bool:
        return x & ~zeros
    x[zeros] = np.zeros((), x.dtype)
    if x.dtype.kind == "f" and x.size:  # (a -0, which is zero, and a NaN, which is not)
        x.reshape(-1)[0], x.reshape(-1)[-1] = -x.dtype.type(0), np.nan
    if x.dtype.kind in "iu" and x.size:  # (the type's extremes, nonzero both)
        x.reshape(-1)[0], x.reshape(-1)[-1] = np.iinfo(x.dtype).min or np.iinfo(x.dtype).max, np.iinfo(x.dtype).max
    return x


CASES = [
    (element_type, opset)
    for element_type in TYPES
    for opset in OPSETS
    if element_type in schemas.input_element_types("NonZero", opset)  # (bfloat16 from version 13)
]


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize(("element_type", "opset"), CASES, ids=[f"{schemas.type_name(t)}-opset{o}" for t, o in CASES])
def test_nonzero_gives_the_coordinates_of_the_nonzero_elements_in_order(element_type, opset):
    rng = np.random.default_rng(element_type + opset)
    for shape in SHAPES:
        x = sparse(element_type, shape, rng)
        for stated in (list(shape), [f"d{i}" for i in range(len(shape))], ["n", *shape[1:]]):
            model = nonzero_model(element_type, opset, stated)
            (got,) = runs_in_onnxruntime(lowered_wholly(model, "NonZero"), {"x": x})
            want = nonzero_reference(x)
            assert got.dtype == np.int64 and got.shape == want.shape and (got == want).all(), (shape, stated)
            kernel = runs_in_onnxruntime(model, {"x": x})
            if kernel is not None:  # (onnxruntime has no NonZero of bfloat16)
                assert kernel[0].shape == got.shape and (kernel[0] == got).all()


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_every_16_bit_pattern(element_type):
    """Each of the 65536 bit patterns of a 16-bit float, the zeros (±0) zero and every other one
    (NaNs, infinities, subnormals) nonzero."""
    from lowering import floats

    x = np.arange(2**16, dtype=np.uint16).view(floats.numpy_dtype(element_type)).reshape(256, 256)
    model = lowered_wholly(nonzero_model(element_type, 13, ["a", 256]), "NonZero")
    (got,) = runs_in_onnxruntime(model, {"x": x})
    want = nonzero_reference(x)
    assert got.shape == want.shape == (2, 2**16 - 2) and (got == want).all()


@pytest.mark.parametrize("shape", [(7,), (2, 3), (3, 1, 4), (2, 3, 2, 2)])
def test_with_topk_lowered_too(shape):
    """Where the target lowers TopK too, its rule's expansion picks the keys, x's shape stated
    or not; declined where the lengths known make more than 2^24 pairs of keys (the TopK rule
    compares every pair)."""
    rng = np.random.default_rng(len(shape))
    x = sparse(TensorProto.FLOAT, shape, rng)
    for stated in (list(shape), [f"d{i}" for i in range(len(shape))]):
        result = lowering.lower_model(nonzero_model(TensorProto.FLOAT, 13, stated), ops=["NonZero", "TopK"])
        assert not {"NonZero", "TopK"} & {n.op_type for n in result.model.graph.node}
        (got,) = runs_in_onnxruntime(result.model, {"x": x})
        assert got.shape == nonzero_reference(x).shape and (got == nonzero_reference(x)).all()
    declined = lowering.lower_model(nonzero_model(TensorProto.FLOAT, 13, [4097, "n"]), ops=["NonZero", "TopK"])
    assert "TopK is lowered too" in " ".join(declined.report.lines())


def test_every_zero_and_every_nonzero():
    model = lowered_wholly(nonzero_model(TensorProto.FLOAT, 13, ["a", "b"]), "NonZero")
    for x in (np.zeros([2, 3], np.float32), np.full([2, 3], -0.0, np.float32), np.ones([2, 3], np.float32)):
        (got,) = runs_in_onnxruntime(model, {"x": x})
        assert got.shape == nonzero_reference(x).shape and (got == nonzero_reference(x)).all()


def test_a_stated_length_of_0_gives_a_constant():
    model = lowered_wholly(nonzero_model(TensorProto.FLOAT, 13, [2, 0, 3]), "NonZero")
    assert {n.op_type for n in model.graph.node} <= {"Constant", "Identity"}
    (got,) = runs_in_onnxruntime(model, {"x": np.zeros([2, 0, 3], np.float32)})
    assert got.dtype == np.int64 and got.shape == (3, 0)


def test_inside_if_branches_and_local_functions():
    model = nonzero_model(TensorProto.INT64, 13, ["a", 3])
    x = np.array([[0, 5, 0], [7, 0, 1]], np.int64)
    for label, nested in nested_forms(model).items():
        lowered = lowering.lower(nested, ops=["NonZero"])
        assert 'op_type: "NonZero"' not in str(lowered), label
        for branch in (True, False):
            (got,) = runs_in_onnxruntime(lowered, {"x": x, "branch": np.array(branch)})
            assert got.shape == nonzero_reference(x).shape and (got == nonzero_reference(x)).all(), label


@pytest.mark.parametrize(
    "element_type, stated, opset, reason",
    [
        (TensorProto.FLOAT, ["n"], 10, "Range exists from opset 11"),
        (TensorProto.STRING, ["n"], 13, "no Cast makes bool of string"),
        (TensorProto.FLOAT, [], 13, "x is a scalar"),
        (TensorProto.FLOAT, None, 13, "x's rank is unknown"),  # (x reshaped by a fed shape of unknown length)
    ],
)
def test_declined(element_type, stated, opset, reason):
    nodes = [helper.make_node("NonZero", ["x"], ["y"], name="nonzero")]
    inputs = [helper.make_tensor_value_info("x", element_type, stated)]
    if stated is None:
        fed = (("v", element_type), ("s", TensorProto.INT64))
        inputs = [helper.make_tensor_value_info(name, t, ["n"]) for name, t in fed]
        nodes.insert(0, helper.make_node("Reshape", ["v", "s"], ["x"]))
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [None, None])
    result = lowering.lower_model(make_model(nodes, inputs, [y], opset=opset), ops=["NonZero"])
    assert reason in " ".join(result.report.lines())
    assert "NonZero" in {n.op_type for n in result.model.graph.node}


def test_onnx2torch_is_given_the_positions_topk_picks():
    """onnx2torch gets NonZero wrong (the backend's case and the one Compress's rule writes):
    --target lowers it, and the result verifies."""
    model = nonzero_model(TensorProto.BOOL, 13, [2, 2])
    result = lowering.lower_model(model, target="onnx2torch")
    assert "NonZero" not in {n.op_type for n in result.model.graph.node}
    x = np.array([[True, False], [True, True]])
    assert lowering.verify(model, result.model, inputs=[{"x": x}]).match
