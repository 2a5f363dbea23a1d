"""Range lowered without a loop (rules/range.py): bit for bit against onnxruntime's kernel and the
rule's reference on every combination of edge bounds and steps per type, failing where the op
fails; and an op a rule emits that is to be lowered too is lowered in turn (Trilu's Range)."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from lowering.rules.range import range_count, range_reference
from onnx import TensorProto, helper
from support import make_model, nested_forms, op_type_set, slow_but_a_sample  # noqa: E402

import lowering
from lowering import floats, schemas
from lowering.errors import NotLowered
from lowering.registry import body_replaced
from lowering.verification.runtime import OnnxruntimeRunner

TYPES = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.INT16: np.int16,
    TensorProto.INT32: np.int32,
    TensorProto.INT64: np.int64,
}
MOST_ELEMENTS = 4096  # bounds whose range is longer are left out (onnxruntime would build it)


def range_model(element_type: int, opset: int) -> onnx.ModelProto:
    scalars = [helper.make_tensor_value_info(name, element_type, []) for name in ("start", "limit", "delta")]
    node = helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")
    return make_model([node], scalars, [helper.make_tensor_value_info("y", element_type, [None])], opset=opset)


def edge_values(dtype) -> list:
    if np.dtype(dtype).kind == "f":
        return [0.0, -0.0, 1.0, -1.0, 0.1, -0.3, 2.5, 7.0, 1e-3, 1e7, 1e-45, 3.4e38, -3.4e38, np.nan, np.inf, -np.inf]
    info = np.iinfo(dtype)
    return [0, 1, -1, 3, -7, 100, info.max, info.min, info.max - 5, info.min + 5]


def edge_feeds(dtype, values_dtype):
    """Every (start, limit, delta) of edge values of ``values_dtype``, taken to ``dtype``, whose
    range is short enough (or fails), with its feeds."""
    for bounds in itertools.product(edge_values(values_dtype), repeat=3):
        names = ("start", "limit", "delta")
        feeds = {name: np.array(value, values_dtype).astype(dtype) for name, value in zip(names, bounds, strict=True)}
        if short_enough(*feeds.values()):
            yield bounds, feeds


def reference_or_none(feeds) -> np.ndarray | None:
    """The range as onnxruntime's kernel gives it, or None where the op fails."""
    try:
        return range_reference(*feeds.values())
    except ValueError:
        return None


def outcome(run, feeds) -> np.ndarray | None:
    """The outputs, or None where the model fails at run time."""
    try:
        return run(feeds)[0]
    except Exception:  # the op's own failure (delta 0, a count that is not finite)
        return None


def short_enough(start, limit, delta) -> bool:
    """Whether the range has at most MOST_ELEMENTS elements, or fails (no count)."""
    try:
        return range_count(start, limit, delta) <= MOST_ELEMENTS
    except ValueError:
        return True


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [11, 13, schemas.newest_opset()])
@pytest.mark.parametrize("element_type", TYPES, ids=schemas.type_name)
def test_range_goes_loop_free_and_matches_the_kernel_bit_for_bit(element_type, opset):
    dtype = TYPES[element_type]
    original = range_model(element_type, opset)
    lowered = lowering.lower(original, ops=["Range"])
    onnx.checker.check_model(lowered, full_check=True)
    assert op_type_set(lowered).isdisjoint({"Range", "Loop", "Scan", "If"})
    want_run, got_run = OnnxruntimeRunner(original), OnnxruntimeRunner(lowered)
    compared = failed = 0
    for (start, limit, delta), feeds in edge_feeds(dtype, dtype):
        want, got = outcome(want_run, feeds), outcome(got_run, feeds)
        where = f"Range({start}, {limit}, {delta}) of {dtype.__name__}"
        assert (want is None) == (got is None), where
        reference = reference_or_none(feeds)
        assert (reference is None) == (want is None), where
        if want is None:
            failed += 1
            continue
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes() == reference.tobytes(), where
        compared += 1
    assert compared > 300 and failed > 0


@pytest.mark.parametrize("form", ["if", "function"])
@pytest.mark.parametrize("element_type", [TensorProto.INT16, TensorProto.INT32], ids=schemas.type_name)
def test_a_narrow_integer_range_in_an_if_branch_and_a_local_function_counts_in_int64(element_type, form):
    """A Range of int16 or int32 in both branches of an If and in a local function, its bounds
    the type's extremes (limit - start past the type's range, counted in int64): the kernel's
    values bit for bit, and its failures where it fails."""
    dtype = TYPES[element_type]
    original = nested_forms(range_model(element_type, 13))[form]
    lowered = lowering.lower(original, ops=["Range"], strict=True)
    onnx.checker.check_model(lowered, full_check=True)
    want_run, got_run = OnnxruntimeRunner(original), OnnxruntimeRunner(lowered)
    info = np.iinfo(dtype)
    compared = 0
    for start, limit, delta in [
        (info.min, info.max, info.max),
        (info.max, info.min, info.min),
        (info.min + 5, info.max, 2 ** (info.bits - 2)),
        (info.max, info.min, -(2 ** (info.bits - 3))),
        (-7, 100, 0),
        (info.min, info.max, 1),
    ]:
        feeds = {
            name: np.array(value, dtype)
            for name, value in zip(("start", "limit", "delta"), (start, limit, delta), strict=True)
        }
        if not short_enough(*feeds.values()):
            continue
        for taken in (True, False):
            given = feeds | {"branch": np.array(taken)}
            want, got = outcome(want_run, given), outcome(got_run, given)
            assert (want is None) == (got is None), (start, limit, delta)
            if want is not None:
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (start, limit, delta)
                compared += 1
    assert compared >= 8


def test_the_count_is_onnxruntimes_not_the_function_bodys():
    """(2.5 - 0.1) / 0.1 in float32, as the function body divides, is 24.000002: 25 elements;
    onnxruntime divides in double, 23.99999998: 24, and so does the rule."""
    feeds = {"start": np.float32(0.1), "limit": np.float32(2.5), "delta": np.float32(0.1)}
    lowered = lowering.lower(range_model(TensorProto.FLOAT, 13), ops=["Range"])
    assert len(OnnxruntimeRunner(lowered)({k: np.array(v) for k, v in feeds.items()})[0]) == 24


def trilu_model(opset: int = 14) -> onnx.ModelProto:
    node = helper.make_node("Trilu", ["x"], ["y"], name="trilu", upper=1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    return make_model([node], [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], opset=opset)


def test_an_op_a_rule_emits_that_is_to_be_lowered_too_is_lowered_in_turn():
    """--ops Range,Trilu on a Trilu model was an internal error ("3 requested ops left in the
    model, 0 reported"): Trilu's rule writes Range, which is now lowered by its own rule."""
    result = lowering.lower_model(trilu_model(), ops=["Range", "Trilu"])
    assert result.report.complete, result.report.lines()
    assert op_type_set(result.model).isdisjoint({"Trilu", "Range", "Loop"})
    x = np.arange(12, dtype=np.float32).reshape(3, 4) - 5.5
    np.testing.assert_array_equal(OnnxruntimeRunner(result.model)({"x": x})[0], np.triu(x))


def test_an_op_a_rule_emits_that_cannot_be_lowered_in_turn_leaves_the_node_with_why():
    def declining(b, start, limit, delta):
        """Range(s, l, d) = nothing here."""
        raise NotLowered("a probe declines")

    with body_replaced("Range", declining):
        result = lowering.lower_model(trilu_model(), ops=["Range", "Trilu"])
    (left,) = result.report.remaining
    assert left.op_type == "Trilu"
    assert "its expansion holds Range, which is to be lowered too" in left.reason and "a probe declines" in left.reason
    assert op_type_set(result.model) == {"Trilu"}


@slow_but_a_sample()  # (the fast tier: float16 here, bfloat16 in the If branch below)
@pytest.mark.skipif(schemas.newest_opset() < 27, reason="Range takes float16 and bfloat16 from version 27")
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=schemas.type_name)
def test_16_bit_floats_go_by_a_loop_adding_in_float32_bit_for_bit(element_type):
    """CumSum sums no float16 or bfloat16 in their own type here: a Loop whose body adds in float32
    and rounds each element back, as the op adds in the type; onnxruntime has no kernel for the
    original, so the reference is numpy's sequential sum (range_reference), and the op fails
    (delta 0, a count that is not finite) where the lowered model fails."""
    dtype = floats.numpy_dtype(element_type)
    result = lowering.lower_model(range_model(element_type, 27), ops=["Range"])
    assert result.report.complete and dict(result.report.rewritten) == {"Range-27": 1}, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert "Range" not in op_type_set(result.model)
    run = OnnxruntimeRunner(result.model)
    compared = failed = 0
    for bounds, feeds in edge_feeds(dtype, np.float32):
        got, want = outcome(run, feeds), reference_or_none(feeds)
        assert (got is None) == (want is None), bounds
        if want is None:
            failed += 1
            continue
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes(), bounds
        compared += 1
    assert compared > 300 and failed > 0
    feeds = {"start": np.array(250, dtype), "limit": np.array(300, dtype), "delta": np.array(1, dtype)}
    np.testing.assert_array_equal(run(feeds)[0].view(np.uint16), range_reference(*feeds.values()).view(np.uint16))


@pytest.mark.skipif(schemas.newest_opset() < 27, reason="Range takes bfloat16 from version 27")
def test_16_bit_floats_go_by_a_loop_inside_an_if_branch_too():
    """The Loop the rule writes nests inside an If branch (its body reads the branch's values)."""
    scalars = [helper.make_tensor_value_info(name, TensorProto.BFLOAT16, []) for name in ("start", "limit", "delta")]
    branches = {}
    for label, limit in (("then_branch", "limit"), ("else_branch", "start")):  # (else: an empty range)
        node = helper.make_node("Range", ["start", limit, "delta"], [f"{label}_y"])
        output = helper.make_tensor_value_info(f"{label}_y", TensorProto.BFLOAT16, None)
        branches[label] = helper.make_graph([node], label, [], [output])
    choose = helper.make_node("If", ["c"], ["y"], name="choose", **branches)
    condition = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    output = helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [None])
    result = lowering.lower_model(make_model([choose], [*scalars, condition], [output], opset=27), ops=["Range"])
    assert dict(result.report.rewritten) == {"Range-27": 2}, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    for branch in result.model.graph.node[0].attribute:
        assert "Range" not in {node.op_type for node in branch.g.node}
    dtype = floats.numpy_dtype(TensorProto.BFLOAT16)
    bounds = {"start": np.array(250, dtype), "limit": np.array(300, dtype), "delta": np.array(1, dtype)}
    run = OnnxruntimeRunner(result.model)
    (got,) = run({**bounds, "c": np.array(True)})
    assert got.shape == (50,) and got.tobytes() == range_reference(*bounds.values()).tobytes()
    assert run({**bounds, "c": np.array(False)})[0].shape == (0,)
