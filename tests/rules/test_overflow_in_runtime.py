"""IsInf and IsNaN lowered after float16 arithmetic that overflows, run in onnxruntime.

onnxruntime's CPU provider runs float16 Mul/Add/Neg in float32 and drops the Cast pair it
inserts around them where the next node casts to float32 itself, so the lowered graph's
``Cast(x, float32)`` can hold an unrounded product such as 4.29e9 where float16 holds inf.
The lowered graph must still answer as the original op does on float16 values."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering import floats
from lowering.verification.runtime import run_onnxruntime

FLOAT16 = onnx.TensorProto.FLOAT16
ISINF_FLAGS = [(1, 1), (1, 0), (0, 1)]


def _operands_around_overflow() -> tuple[np.ndarray, np.ndarray]:
    """Pairs of float16 values whose float32 product lies on either side of 65520, the
    smallest value that rounds to inf in float16, plus plain edge values."""
    bits = np.arange(0x7400, 0x7C00, dtype=np.uint16)  # every finite float16 from 16384 up
    a = bits.view(np.float16)
    near = (np.float32(65520) / a.astype(np.float32)).astype(np.float16)
    near_bits = near.view(np.uint16).astype(np.int32)
    b = np.concatenate([(near_bits + step).astype(np.uint16).view(np.float16) for step in (-2, -1, 0, 1, 2)])
    a = np.tile(a, 5)
    edges = np.array([-65500, 65500, 65504, 255.875, 256, np.inf, -np.inf, np.nan, 0, -0.0, 1e-7], np.float16)
    a = np.concatenate([a, -a, edges, edges[::-1]])
    b = np.concatenate([b, b, edges, edges])
    return a, b


def _model(opset: int, op_type: str, arithmetic: list[str], **attributes) -> onnx.ModelProto:
    """``y = op_type(arithmetic(a, b))``, every value float16."""
    nodes = [helper.make_node(arithmetic[0], ["a", "b"], ["v0"], name="arith0")]
    for k, op in enumerate(arithmetic[1:], start=1):
        nodes.append(helper.make_node(op, [f"v{k - 1}"], [f"v{k}"], name=f"arith{k}"))
    nodes.append(helper.make_node(op_type, [f"v{len(arithmetic) - 1}"], ["y"], name="tested", **attributes))
    return make_model(
        nodes,
        [helper.make_tensor_value_info(name, FLOAT16, ["N"]) for name in "ab"],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=opset,
    )


def _expected(op_type: str, arithmetic: list[str], a, b, detect_positive: int = 1, detect_negative: int = 1):
    """The op on float16 values, as ONNX defines it: each float16 result rounded once."""
    with np.errstate(all="ignore"):
        value = {"Mul": np.multiply, "Add": np.add, "Sub": np.subtract}[arithmetic[0]](a, b)
        for op in arithmetic[1:]:
            value = {"Neg": np.negative, "Abs": np.abs}[op](value)
    if op_type == "IsNaN":
        return np.isnan(value)
    return (np.isposinf(value) & bool(detect_positive)) | (np.isneginf(value) & bool(detect_negative))


CASES = [
    (op_type, arithmetic, flags)
    for arithmetic in (["Mul"], ["Add"], ["Mul", "Neg"], ["Sub", "Neg"])
    for op_type, flags in [("IsNaN", None), *(("IsInf", f) for f in ISINF_FLAGS)]
]


@slow_but_a_sample()
@pytest.mark.parametrize("target_opset", [None, 13, 11], ids=["same-opset", "to-13", "to-11"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}{c[2] or ''}-after-{'-'.join(c[1])}")
def test_lowered_graph_answers_as_float16_after_overflow(case, target_opset):
    op_type, arithmetic, flags = case
    attributes = {} if flags is None else dict(zip(("detect_positive", "detect_negative"), flags, strict=True))
    original = _model(21, op_type, arithmetic, **attributes)
    lowered = lowering.lower(original, ops=None if target_opset is None else [], target_opset=target_opset)
    assert all(node.op_type != op_type for node in lowered.graph.node) or op_type == "IsNaN"

    a, b = _operands_around_overflow()
    expected = _expected(op_type, arithmetic, a, b, **attributes)
    assert expected.any() and not expected.all()  # both answers occur
    (native,) = run_onnxruntime(original, {"a": a, "b": b})
    np.testing.assert_array_equal(native, expected)
    (got,) = run_onnxruntime(lowered, {"a": a, "b": b})
    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, f"{mismatches.size} mismatches, first a={a[mismatches[:3]]} b={b[mismatches[:3]]}"


def test_the_bound_is_the_float32_value_below_the_midpoint_past_float16s_largest():
    bound = floats.largest_rounding_to_finite(FLOAT16, onnx.TensorProto.FLOAT)
    assert bound == float(np.nextafter(np.float32(65520), np.float32(0)))
    with np.errstate(over="ignore"):
        assert np.isfinite(np.float32(bound).astype(np.float16))
        assert np.isinf(np.nextafter(np.float32(bound), np.float32(np.inf)).astype(np.float16))
    assert floats.largest_rounding_to_finite(FLOAT16, FLOAT16) == 65504.0


@pytest.mark.parametrize(
    "element_type", [onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT8E5M2]
)
def test_every_wider_value_up_to_the_bound_rounds_to_finite_and_past_it_to_inf(element_type):
    bound = np.float32(floats.largest_rounding_to_finite(element_type, onnx.TensorProto.FLOAT))
    narrow = floats.numpy_dtype(element_type)
    below = (np.float32(bound).view(np.uint32) - np.arange(0, 4096, dtype=np.uint32)).view(np.float32)
    above = (np.float32(bound).view(np.uint32) + np.arange(1, 4096, dtype=np.uint32)).view(np.float32)
    with np.errstate(all="ignore"):
        assert np.isfinite(below.astype(narrow).astype(np.float32)).all()
        assert np.isinf(above[above <= np.float32(3.4e38)].astype(narrow).astype(np.float32)).all()
