"""Size lowered to the one dimension of x flattened (rules/size.py): every kind of element type
(strings, bools, bfloat16 and float8 included), scalars, empty tensors, shapes known (a constant), partly
known and unknown, at opset 9, 13 and the newest, against onnxruntime's kernel and the rule's
numpy reference; inside an If and a local function; the opset below which it declines. The
backend cases are checked by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from lowering.rules.size import FIRST_OPSET, size_reference
from onnx import TensorProto, helper
from support import lowered_wholly, make_model, nested_forms, random_elements, runs_in_onnxruntime, slow_but_a_sample

import lowering
from lowering import schemas

TYPES = [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING,
         TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2]  # fmt: skip
CASES = [
    (element_type, opset)
    for element_type in TYPES
    for opset in (FIRST_OPSET, 13, schemas.newest_opset())
    if element_type in schemas.input_element_types("Size", opset)  # (bfloat16 from version 13, float8 from 19)
]
SHAPES = [(), (0,), (3, 0, 2), (1,), (2, 3), (2, 3, 4, 1)]


def size_model(element_type: int, opset: int, stated) -> object:
    """n = Size(x) at ``opset``, x of ``stated`` dimensions."""
    node = helper.make_node("Size", ["x"], ["n"], name="size")
    x = helper.make_tensor_value_info("x", element_type, stated)
    return make_model([node], [x], [helper.make_tensor_value_info("n", TensorProto.INT64, [])], opset=opset)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize(("element_type", "opset"), CASES, ids=[f"{schemas.type_name(t)}-opset{o}" for t, o in CASES])
def test_size_is_the_count_of_elements_whatever_is_known_of_the_shape(element_type, opset):
    rng = np.random.default_rng(element_type + opset)
    for shape in SHAPES:
        x = random_elements(element_type, shape, rng)
        for stated in (list(shape), [None] * len(shape), ["n", *shape[1:]] if shape else []):
            lowered = lowered_wholly(size_model(element_type, opset, stated), "Size")
            (got,) = runs_in_onnxruntime(lowered, {"x": x})
            want = size_reference(x)
            assert got.dtype == np.int64 and got.shape == () and got == want == x.size, (shape, stated)
            kernel = runs_in_onnxruntime(size_model(element_type, opset, stated), {"x": x})
            if kernel is not None:
                assert kernel[0].tolist() == got.tolist()


def test_a_known_shape_gives_a_constant_and_an_unknown_one_reads_no_value():
    known = lowered_wholly(size_model(TensorProto.FLOAT, 13, [2, 3]), "Size")
    assert [n.op_type for n in known.graph.node if n.op_type != "Constant"] in ([], ["Identity"])
    unknown = lowered_wholly(size_model(TensorProto.FLOAT, 13, ["n", 3]), "Size")
    assert [n.op_type for n in unknown.graph.node if n.op_type != "Constant"] == ["Reshape", "Shape", "Squeeze"]


def test_declined_below_opset_9_in_its_words():
    model = size_model(TensorProto.FLOAT, 8, ["n"])
    result = lowering.lower_model(model, ops=["Size"])
    assert [n.op_type for n in result.model.graph.node] == ["Size"]
    assert "which exists from opset 9, not 8" in "\n".join(result.report.lines())


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.STRING], ids=schemas.type_name)
def test_inside_if_branches_and_local_functions(element_type):
    """The node in both branches of an If and in a local function: lowered in each, the full
    checker passing, and the count whichever branch runs."""
    x = random_elements(element_type, (3, 4), np.random.default_rng(7))
    for label, nested in nested_forms(size_model(element_type, 13, ["n", 4])).items():
        lowered = lowered_wholly(nested, "Size")
        for branch in (True, False):
            (got,) = runs_in_onnxruntime(lowered, {"x": x, "branch": np.array(branch)})
            assert got.tolist() == 12, (label, branch)
