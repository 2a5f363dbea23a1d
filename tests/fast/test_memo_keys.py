"""A rule's expansion is memoized per kind of node; the rule must not be able to read
anything the memo's key leaves out (the input's shape), or later nodes would get another
node's expansion."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper
from support import make_model

import lowering
from lowering import registry
from lowering.verification.runtime import run_onnxruntime


def test_rules_see_types_without_shapes_so_the_memo_key_holds_all_they_read():
    """On the fast path, where a rule's expansion is recorded once per kind of node."""
    real = registry.rule_for("", "IsNaN")
    seen: list[onnx.TypeProto] = []

    def probe(b, x):
        seen.append(x.type)
        return real.body(b, x)

    float_type = onnx.TensorProto.FLOAT
    model = make_model(
        [helper.make_node("IsNaN", ["a"], ["p"]), helper.make_node("IsNaN", ["m"], ["q"])],
        [helper.make_tensor_value_info("a", float_type, [5]), helper.make_tensor_value_info("m", float_type, [2, 3])],
        [
            helper.make_tensor_value_info("p", onnx.TensorProto.BOOL, [5]),
            helper.make_tensor_value_info("q", onnx.TensorProto.BOOL, [2, 3]),
        ],
        opset=17,
    )
    with registry.body_replaced("IsNaN", probe):
        lowered = lowering.lower(model, fast=True)
    assert seen, "the rule ran"
    assert all(not t.tensor_type.HasField("shape") for t in seen), "no shape, so no rank, reaches the rule"
    a = np.array([np.nan, 1, -np.inf, 0, -0.0], np.float32)
    m = np.array([[np.nan, 2, 3], [4, np.nan, 6]], np.float32)
    p, q = run_onnxruntime(lowered, {"a": a, "m": m})
    np.testing.assert_array_equal(p, np.isnan(a))
    np.testing.assert_array_equal(q, np.isnan(m))
