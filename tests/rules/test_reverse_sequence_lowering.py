"""ReverseSequence lowered to GatherElements of positions computed from the lengths
(rules/reverse_sequence.py): random data of every kind of type (NaN payloads, -0, strings), both
axis orders, ranks 2 to 4, lengths from 0 to the whole time axis, the time axis known and
unknown, at opset 11 and the newest, bit for bit against onnxruntime's kernel and the rule's
numpy reference; what is declined and why. The backend cases are checked against their expected
outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_elements,
    lowered_wholly,
    make_model,
    nested_forms,
    random_elements,
    runs_in_onnxruntime,
    slow_but_a_sample,
)

import lowering
from lowering import schemas
from lowering.registry import rule_for

TYPES = [
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.FLOAT16,
    TensorProto.INT64,
    TensorProto.INT8,
    TensorProto.BOOL,
    TensorProto.STRING,
]


def reverse_sequence_model(element_type, shape, opset, *, batch_axis=1, time_axis=0):
    node = helper.make_node(
        "ReverseSequence", ["x", "lens"], ["y"], name="reverse", batch_axis=batch_axis, time_axis=time_axis
    )
    inputs = [
        helper.make_tensor_value_info("x", element_type, shape),
        helper.make_tensor_value_info("lens", TensorProto.INT64, [None]),
    ]
    output = helper.make_tensor_value_info("y", element_type, [None] * len(shape))
    return make_model([node], inputs, [output], opset=opset)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("element_type", TYPES, ids=lambda t: schemas.type_name(t))
@pytest.mark.parametrize("time_axis", [0, 1])
def test_reverse_sequence_is_bit_for_bit(element_type, time_axis):
    rng = np.random.default_rng(element_type + time_axis)
    batch_axis = 1 - time_axis
    for dims in ([5, 3], [4, 3, 2], [6, 2, 3, 2]):
        dims = list(dims)
        if time_axis == 1:
            dims[0], dims[1] = dims[1], dims[0]
        for stated in (dims, [None] * len(dims)):
            for opset in (11, schemas.newest_opset()):
                model = reverse_sequence_model(element_type, stated, opset, batch_axis=batch_axis, time_axis=time_axis)
                lowered = lowered_wholly(model, "ReverseSequence")
                x = random_elements(element_type, dims, rng)
                lens = rng.integers(0, dims[time_axis] + 1, dims[batch_axis]).astype(np.int64)
                lens[0] = dims[time_axis]
                feeds = {"x": x, "lens": lens}
                (got,) = runs_in_onnxruntime(lowered, feeds)
                want = rule_for("", "ReverseSequence").reference(x, lens, batch_axis=batch_axis, time_axis=time_axis)
                assert_same_elements(got, want)
                kernel = runs_in_onnxruntime(model, feeds)
                if kernel is not None:
                    assert_same_elements(got, kernel[0])


@pytest.mark.parametrize("shape", [[3, 2], [None, None]], ids=["known", "unknown"])
@pytest.mark.parametrize("lens", [[3, 4], [3, 3, 3], [2]], ids=["past the time axis", "one too many", "one"])
def test_lengths_the_op_fails_on_fail(shape, lens):
    model = reverse_sequence_model(TensorProto.FLOAT, shape, 13)
    lowered = lowered_wholly(model, "ReverseSequence")
    feeds = {"x": np.zeros([3, 2], np.float32), "lens": np.array(lens, np.int64)}
    for each in (model, lowered):
        with pytest.raises(Exception, match="(?i)invalid|out of|bound|range|reshape|shape"):
            if each is lowered and lens == [2] and None in shape:
                # (onnxruntime's basic graph optimizations make this Reshape of one length to
                # Concat([1], Gather(Shape(x), [1])) give [1, 1]: without them it fails)
                without_optimizations(lowered, feeds)
            else:
                runs_in_onnxruntime(each, feeds)


def without_optimizations(model, feeds):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_inside_if_branches_and_local_functions():
    model = reverse_sequence_model(TensorProto.FLOAT, [4, 3, 2], 13)
    for label, nested in nested_forms(model).items():
        assert "ReverseSequence" not in str(lowering.lower(nested, ops=["ReverseSequence"])), label


@pytest.mark.parametrize(
    ("model", "why"),
    [
        (reverse_sequence_model(TensorProto.FLOAT, [4, 3], 10), "does not exist at opset 10"),
        (reverse_sequence_model(TensorProto.FLOAT, [4, 3], 13, batch_axis=0, time_axis=0), "are not 0 and 1"),
        (reverse_sequence_model(TensorProto.FLOAT, [4], 13), "fewer than 2 axes"),
    ],
    ids=["opset 10", "one axis for both", "rank 1"],
)
def test_declined(model, why):
    result = lowering.lower_model(model, ops=["ReverseSequence"])
    assert "ReverseSequence" in {node.op_type for node in result.model.graph.node}
    assert why in " ".join(result.report.lines())
