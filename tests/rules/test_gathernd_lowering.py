"""GatherND lowered to one Gather of row numbers (rules/gathernd.py): every ONNX backend case, and
random data, indices (negative ones among them), batch_dims, ranks, types and empty tensors, bit
for bit against onnxruntime's kernel and the rule's numpy reference at opsets 11, 12, 13 and the
newest; an index outside its dimension fails as the op fails; what is declined and why."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_elements,
    lowered_wholly,
    make_model,
    nested_forms,
    random_elements,
    runs_in_onnxruntime,
    slow_but_a_sample,
)
from version_cases import fed_data_sets, node_cases

import lowering
from lowering import schemas
from lowering.registry import rule_for

BACKEND_CASES = [case for case in node_cases() if case.name.startswith("test_gathernd")]
TYPES = [
    TensorProto.FLOAT,
    TensorProto.INT64,
    TensorProto.INT8,
    TensorProto.BOOL,
    TensorProto.FLOAT16,
    TensorProto.BFLOAT16,
    TensorProto.STRING,
]


def reference(data, indices, batch_dims=0):
    return rule_for("", "GatherND").reference(data, indices, batch_dims=batch_dims)


def gathernd_model(element_type, data_shape, indices_shape, opset, batch_dims=None, constant_indices=None):
    """y = GatherND(data, indices), indices an input or a constant; y's rank from the op's rule."""
    attributes = {} if batch_dims is None else {"batch_dims": batch_dims}
    node = helper.make_node("GatherND", ["data", "indices"], ["y"], name="gather", **attributes)
    inputs = [helper.make_tensor_value_info("data", element_type, data_shape)]
    initializer = []
    if constant_indices is None:
        inputs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, indices_shape))
    else:
        initializer.append(onnx.numpy_helper.from_array(constant_indices, "indices"))
    rank = len(indices_shape) - 1 + len(data_shape) - (batch_dims or 0) - (indices_shape[-1] or 0)
    output = helper.make_tensor_value_info("y", element_type, [None] * rank)
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def lowered(model):
    return lowered_wholly(model, "GatherND")


def random_indices(data_shape, batch_dims, depth, tuples, rng):
    """Indices of shape data_shape[:batch_dims] + tuples + [depth], each within [-d, d)."""
    sizes = data_shape[batch_dims : batch_dims + depth]
    shape = (*data_shape[:batch_dims], *tuples)
    columns = [rng.integers(-size, size, shape) if size else np.zeros(shape, np.int64) for size in sizes]
    return np.stack(columns, axis=-1).astype(np.int64) if columns else np.zeros((*shape, 0), np.int64)


@pytest.mark.parametrize("case", BACKEND_CASES, ids=[case.name for case in BACKEND_CASES])
def test_backend_cases_give_their_expected_outputs(case):
    assert len(BACKEND_CASES) >= 3
    result = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        for got, want in zip(runs_in_onnxruntime(result, feeds), expected, strict=True):
            assert_same_bits(got, want, case.name)


SHAPES = [  # data shape, batch_dims, depth, tuple shape
    ((5,), 0, 1, (3,)),
    ((4, 3), 0, 2, (2, 2)),
    ((4, 3), 0, 1, (6,)),
    ((2, 3, 4), 0, 2, ()),
    ((2, 3, 4, 5), 0, 3, (2, 1, 1)),
    ((2, 8), 0, 2, (1, 1, 8)),  # a dynamo export's attention mask: indices [2, 1, 1, 8, 2]
    ((2, 3, 4), 1, 1, (5,)),
    ((2, 3, 4, 5), 2, 1, (2,)),
    ((2, 3, 4, 5), 1, 2, (3, 1)),
    ((3, 0, 4), 0, 1, (2,)),  # rows of no elements
    ((3, 4), 0, 1, (0,)),  # no index tuples
]
CASES = [
    (shape, element_type, opset)
    for shape, element_type, opset in itertools.product(SHAPES, TYPES, (11, 12, 13, 21))
    if not (shape[1] and opset < 12)  # (batch_dims from GatherND-12)
    and schemas.accepts("GatherND", opset, element_type)
    and not (element_type == TensorProto.STRING and len(shape[0]) != shape[1] + shape[2])
]  # strings where each index tuple names one string (see the test below)


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize(("shape", "element_type", "opset"), CASES)
def test_random_cases_bit_for_bit(shape, element_type, opset):
    """Against onnxruntime's kernel and the reference: indices given at run time and as a constant."""
    data_shape, batch_dims, depth, tuples = shape
    rng = np.random.default_rng(len(CASES))
    data = random_elements(element_type, data_shape, rng)
    indices = random_indices(data_shape, batch_dims, depth, tuples, rng)
    want = reference(data, indices, batch_dims)
    for constant in (None, indices):
        model = gathernd_model(element_type, list(data_shape), list(indices.shape), opset,
                               batch_dims=batch_dims or None, constant_indices=constant)  # fmt: skip
        feeds = {"data": data} if constant is not None else {"data": data, "indices": indices}
        result = lowered(model)
        got = runs_in_onnxruntime(result, feeds)
        if 0 not in want.shape:  # (every dimension known and none 0: a constant shape, no allowzero)
            assert not [a for n in result.graph.node for a in n.attribute if a.name == "allowzero" and a.i]
        original = runs_in_onnxruntime(model, feeds)
        if original is not None:  # (where onnxruntime has the kernel)
            assert_same_elements(original[0], want)
        assert_same_elements(got[0], want)


@pytest.mark.parametrize("index", [3, -4, 100])
def test_an_index_outside_its_dimension_fails_as_the_op_fails(index):
    model = gathernd_model(TensorProto.FLOAT, [3, 2], [1, 1], 13)
    feeds = {"data": np.arange(6, dtype=np.float32).reshape(3, 2), "indices": np.array([[index]], np.int64)}
    with pytest.raises(IndexError):
        reference(feeds["data"], feeds["indices"])
    for candidate in (model, lowered(model)):
        with pytest.raises(Exception, match="(?i)indices|index|out of (range|bounds)"):
            runs_in_onnxruntime(candidate, feeds)


def test_dimensions_it_cannot_know_are_declined_with_why():
    unknown_depth = gathernd_model(TensorProto.FLOAT, [3, 2], [1, None], 13)
    empty_tuples = gathernd_model(TensorProto.FLOAT, [3, 2], [4, 0], 13)
    unknown_rest = gathernd_model(TensorProto.FLOAT, [3, 2, None, 4], [5, 1], 13)
    for model, why in [
        (unknown_depth, "last dimension of its indices .* is unknown"),
        (empty_tuples, "index tuples are empty"),
        (unknown_rest, "not known to hold no 0"),
    ]:
        with pytest.raises(lowering.LoweringError, match=why):
            lowering.lower(model, ops=["GatherND"], strict=True)
    at_14 = lowered(gathernd_model(TensorProto.FLOAT, [3, 2, None, 4], [5, 1], 14))  # allowzero=1 there
    data = np.arange(3 * 2 * 0 * 4, dtype=np.float32).reshape(3, 2, 0, 4)
    got = runs_in_onnxruntime(at_14, {"data": data, "indices": np.array([[0], [2], [-1], [1], [0]], np.int64)})
    assert got[0].shape == (5, 2, 0, 4)


def test_strings_are_lowered_only_where_each_tuple_names_one_string():
    """onnxruntime's Gather on strings keeps the first string of each row it takes (measured
    here, so that the day it is mended shows): rows of strings are declined."""
    data = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    gather = make_model([helper.make_node("Gather", ["data", "rows"], ["y"], axis=0)],
                        [helper.make_tensor_value_info("data", TensorProto.STRING, [2, 3])],
                        [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 3])], opset=13,
                        initializer=[onnx.numpy_helper.from_array(np.array([1, 0], np.int64), "rows")])  # fmt: skip
    assert runs_in_onnxruntime(gather, {"data": data})[0].tolist() == [["d", "", ""], ["a", "", ""]]
    rows = gathernd_model(TensorProto.STRING, [2, 3], [2, 1], 13)
    with pytest.raises(lowering.LoweringError, match="keeps only the first string of each row"):
        lowering.lower(rows, ops=["GatherND"], strict=True)
    single = lowered(gathernd_model(TensorProto.STRING, [2, 3], [2, 2], 13))
    got = runs_in_onnxruntime(single, {"data": data, "indices": np.array([[1, 2], [-2, 0]], np.int64)})
    assert got[0].tolist() == ["f", "a"]


@pytest.mark.parametrize(("data_shape", "indices_shape"), [([3, 4], [2, 1]), ([None, 4], [2, 1])])
def test_batch_dimensions_not_known_equal_are_declined(data_shape, indices_shape):
    """GatherND fails where data's and indices' batch dimensions differ; the batch coordinates
    would not: the rule lowers only where they are known equal."""
    model = gathernd_model(TensorProto.FLOAT, data_shape, indices_shape, 13, batch_dims=1)
    with pytest.raises(lowering.LoweringError, match="batch dimensions are not known equal"):
        lowering.lower(model, ops=["GatherND"], strict=True)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.BFLOAT16])
@pytest.mark.parametrize("where", ["if", "function"])
def test_lowered_inside_if_branches_and_a_local_function(where, element_type):
    """The rule lowers GatherND in both branches of an If and in a local function's body, bit
    for bit against the reference on either branch."""
    rng = np.random.default_rng(3)
    data, indices = random_elements(element_type, (4, 3), rng), np.array([[1], [-1], [0]], np.int64)
    model = nested_forms(gathernd_model(element_type, [4, 3], [3, 1], 16, constant_indices=indices))[
        where
    ]  # (If: bfloat16 from 16)
    result = lowered(model)
    for branch in (True, False):
        assert_same_elements(
            runs_in_onnxruntime(result, {"data": data, "branch": np.array(branch)})[0], reference(data, indices)
        )
