"""The version steps that add a type to an op that only moves data (rules/versions/type_moves.py):
Where-16, Compress-28, OneHot-28 and ReverseSequence-28 on bfloat16, and Equal-19 on strings.

Each lowered model runs in onnxruntime and is compared bit for bit with the original at its
own opset: in onnxruntime where it has a kernel for it (Compress-28, ReverseSequence-28,
Equal-19, OneHot-28 with an int64 depth), else in onnx.reference (Where-16 on bfloat16), or by
the spec's formula where onnx.reference does arithmetic (OneHot), on every bfloat16 bit
pattern (NaNs of every payload and both signs, ±inf, ±0, subnormals, the extremes), broadcast
shapes and empty tensors.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OnnxruntimeNotImplemented
from support import (
    assert_same_bits,
    make_model,
    refusal,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering.verification.runtime import run_onnxruntime, run_reference

BFLOAT16 = TensorProto.BFLOAT16
EVERY_BFLOAT16 = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16)


def patterns(shape, offset: int = 0) -> np.ndarray:
    """bfloat16 values of ``shape``, running through every bit pattern from ``offset`` (a NaN
    payload, ±0, ±inf, a subnormal and the extremes among the first ones)."""
    specials = np.array(
        [0x7FC1, 0xFFA3, 0x7F81, 0x8000, 0x0000, 0x7F80, 0xFF80, 0x0001, 0x807F, 0x7F7F, 0xFF7F], np.uint16
    )
    count = int(np.prod(shape))
    every = np.concatenate([specials, np.roll(EVERY_BFLOAT16.view(np.uint16), -offset)])
    return np.resize(every, count).view(ml_dtypes.bfloat16).reshape(shape)


def single(op_type, inputs, output, opset, **attributes) -> onnx.ModelProto:
    """One ``op_type`` node at ``opset``; ``inputs`` as (name, element type, shape) and
    ``output`` as (name, element type, rank); each dimension a symbol, so nothing is known
    statically."""
    infos = [
        helper.make_tensor_value_info(name, element_type, [f"{name}{k}" for k in range(len(shape))])
        for name, element_type, shape in inputs
    ]
    outputs = [helper.make_tensor_value_info(output[0], output[1], [f"out{k}" for k in range(output[2])])]
    node = helper.make_node(op_type, [name for name, _, _ in inputs], [output[0]], name="node", **attributes)
    return make_model([node], infos, outputs, opset=opset)


def lowered(model: onnx.ModelProto, target: int, adapted: str) -> onnx.ModelProto:
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.adapted[adapted] == 1, dict(result.report.adapted)
    return result.model


def assert_same(model, target: int, adapted: str, feeds: dict, where: str, oracle=None) -> np.ndarray:
    """The lowered model's output in onnxruntime against the original's (``oracle(feeds)``
    where onnxruntime lacks the original's kernel and onnx.reference does not move bits)."""
    try:
        (want,) = run_onnxruntime(model, feeds)
    except OnnxruntimeNotImplemented:
        (want,) = oracle(feeds) if oracle else run_reference(model, feeds)
    (got,) = run_onnxruntime(lowered(model, target, adapted), feeds)
    assert_same_bits(np.asarray(got), np.asarray(want), where)
    return want


# -- Where-16 on bfloat16 ----------------------------------------------------------------------------

WHERE_SHAPES = [
    ((65536,), (65536,), (65536,)),  # every pattern against every other
    ((2, 1, 3), (4, 1), (1,)),  # broadcast three ways
    ((), (3, 2), ()),  # a scalar condition and b
    ((5,), (), (1, 5)),  # a scalar a
    ((0, 3), (1, 3), (3,)),  # empty condition
    ((2, 1), (2, 0), (1,)),  # empty a, a zero dimension past the first
    ((1,), (1,), (0,)),  # empty b
]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [15, 13])
@pytest.mark.parametrize("shapes", WHERE_SHAPES, ids=str)
def test_where_on_bfloat16_below_16_gathers_the_picked_bits(shapes, target):
    c_shape, a_shape, b_shape = shapes
    model = single(
        "Where",
        [("c", TensorProto.BOOL, c_shape), ("a", BFLOAT16, a_shape), ("b", BFLOAT16, b_shape)],
        ("y", BFLOAT16, max(map(len, shapes))),
        16,
    )
    rng = np.random.default_rng(16)
    feeds = {"c": np.asarray(rng.random(c_shape) < 0.5), "a": patterns(a_shape), "b": patterns(b_shape, 30000)}
    want = assert_same(model, target, "Where-16→9 via gathered by index", feeds, f"Where {shapes} at {target}")
    assert_same_bits(want, np.where(feeds["c"], feeds["a"], feeds["b"]), "onnx.reference is numpy's where")


def test_where_on_shapes_that_do_not_broadcast_fails_in_both():
    model = single(
        "Where", [("c", TensorProto.BOOL, (2,)), ("a", BFLOAT16, (3,)), ("b", BFLOAT16, (3,))], ("y", BFLOAT16, 1), 16
    )
    feeds = {"c": np.array([True, False]), "a": patterns((3,)), "b": patterns((3,))}
    with pytest.raises(ValueError, match="could not be broadcast"):
        run_reference(model, feeds)
    with pytest.raises(RuntimeError, match="Where node"):
        run_onnxruntime(lowered(model, 13, "Where-16→9 via gathered by index"), feeds)


def test_where_on_a_type_where_9_takes_is_re_versioned_as_it_is():
    model = single(
        "Where", [("c", TensorProto.BOOL, (2,)), ("a", TensorProto.FLOAT, (2,)), ("b", TensorProto.FLOAT, (2,))],
        ("y", TensorProto.FLOAT, 1), 16,
    )  # fmt: skip
    result = lowering.lower_model(model, target_opset=13, ops=[])
    assert dict(result.report.adapted) == {"Where-16→9": 1}
    assert [node.op_type for node in result.model.graph.node] == ["Where"]


# -- Compress-28 on bfloat16 -------------------------------------------------------------------------

COMPRESS_CASES = [
    ((3, 4), [True, False, True], 0),
    ((3, 4), [False, True, True, False], 1),
    ((3, 4), [True, True], -1),  # shorter: only its entries count
    ((3, 4), [True, False, True, True, True], 0),  # longer: onnxruntime ignores the entries past the axis
    ((2, 3), [False, True, False, True, True, True, True, True], None),  # flattened, longer
    ((4, 5), [True, False, False, True, True], None),  # flattened, shorter
    ((3, 2), [False, False, False], 0),  # nothing kept
    ((0, 4), [], 0),  # empty
    ((2, 0), [True, False], 0),  # slices of no values
    ((65536,), list(np.random.default_rng(28).random(65536) < 0.7), 0),  # every pattern
]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [27, 13])
@pytest.mark.parametrize(("shape", "condition", "axis"), COMPRESS_CASES, ids=lambda v: str(v)[:24])
def test_compress_on_bfloat16_below_28_gathers_the_kept_slices(shape, condition, axis, target):
    attributes = {} if axis is None else {"axis": axis}
    condition = np.array(condition, dtype=bool)
    model = single(
        "Compress", [("x", BFLOAT16, shape), ("c", TensorProto.BOOL, condition.shape)],
        ("y", BFLOAT16, 1 if axis is None else len(shape)), 28,
        **attributes,
    )  # fmt: skip
    feeds = {"x": patterns(shape), "c": condition}
    assert_same(model, target, "Compress-28→11 via gathered by index", feeds, f"Compress {shape} {axis}")


# -- OneHot-28 with bfloat16 values ------------------------------------------------------------------


def one_hot_by_the_spec(indices, depth, values, axis) -> list:
    """OneHot as the spec says: values[1] where an index (a negative one counted from depth)
    meets its place along ``axis``, values[0] elsewhere, their bits copied. (onnx.reference
    computes hot * (on - off) + off, which loses NaN payloads and -0; onnxruntime has no
    OneHot kernel for bfloat16 values with a float depth.)"""
    depth = int(depth)
    indices = np.where(indices < 0, indices + depth, indices)
    axis = axis % (indices.ndim + 1)
    places = np.arange(depth).reshape((1,) * axis + (depth,) + (1,) * (indices.ndim - axis))
    hot = np.expand_dims(indices, axis) == places
    return [np.where(hot, values[1], values[0])]


def test_onnx_reference_one_hot_is_no_oracle_for_bits():
    """Why the spec's formula is the oracle here, not onnx.reference: on -0 (off) and +0 (on) it
    gives +0 everywhere."""
    model = single(
        "OneHot", [("i", TensorProto.INT64, (2,)), ("d", TensorProto.FLOAT, ()), ("v", TensorProto.FLOAT, (2,))],
        ("y", TensorProto.FLOAT, 2), 11,
    )  # fmt: skip
    feeds = {"i": np.array([0, 1]), "d": np.array(2, np.float32), "v": np.array([-0.0, 0.0], np.float32)}
    assert not np.signbit(run_reference(model, feeds)[0]).any()
    assert np.signbit(run_onnxruntime(model, feeds)[0]).tolist() == [[False, True], [True, False]]
    assert_same_bits(run_onnxruntime(model, feeds)[0], one_hot_by_the_spec(feeds["i"], 2, feeds["v"], -1)[0], "spec")


ONEHOT_PAIRS = [(0x7FC1, 0xFFA3), (0x8000, 0x0000), (0x7F80, 0x0001), (0xFF7F, 0x807F), (0x3F80, 0x7F81)]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [27, 13])
@pytest.mark.parametrize("depth_type", [TensorProto.FLOAT, TensorProto.INT64], ids=["float_depth", "int64_depth"])
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("pair", ONEHOT_PAIRS, ids=lambda p: f"{p[0]:04x}_{p[1]:04x}")
def test_one_hot_with_bfloat16_values_below_28_gathers_off_and_on(pair, axis, depth_type, target):
    model = single(
        "OneHot",
        [("i", TensorProto.INT64, (2, 3)), ("d", depth_type, ()), ("v", BFLOAT16, (2,))],
        ("y", BFLOAT16, 3),
        28,
        axis=axis,
    )
    indices = np.array([[0, 3, -1], [-4, 7, -5]], np.int64)  # out of range both ways: every place off
    depth = np.array(4, helper.tensor_dtype_to_np_dtype(depth_type))
    feeds = {"i": indices, "d": depth, "v": np.array(pair, np.uint16).view(ml_dtypes.bfloat16)}
    if depth_type == TensorProto.INT64:  # onnxruntime's own OneHot-28 kernel is the oracle
        assert_same_bits(run_onnxruntime(model, feeds)[0], one_hot_by_the_spec(indices, depth, feeds["v"], axis)[0], "")
    oracle = lambda fed: one_hot_by_the_spec(fed["i"], fed["d"], fed["v"], axis)  # noqa: E731
    assert_same(model, target, "OneHot-28→11 via values gathered", feeds, f"OneHot {pair} axis {axis}", oracle)


def test_one_hot_with_empty_indices():
    model = single(
        "OneHot", [("i", TensorProto.INT64, (0,)), ("d", TensorProto.FLOAT, ()), ("v", BFLOAT16, (2,))],
        ("y", BFLOAT16, 2), 28,
    )  # fmt: skip
    feeds = {"i": np.zeros(0, np.int64), "d": np.array(3, np.float32), "v": patterns((2,))}
    oracle = lambda fed: one_hot_by_the_spec(fed["i"], fed["d"], fed["v"], -1)  # noqa: E731
    assert_same(model, 13, "OneHot-28→11 via values gathered", feeds, "OneHot of no indices", oracle)


def test_one_hot_with_values_of_another_shape_fails_in_both():
    """onnxruntime's OneHot checks that values holds two values: its inner OneHot's [0, 1] is
    numbered along values' own shape, so the lowered model fails as the original does."""
    model = single(
        "OneHot", [("i", TensorProto.INT64, (2,)), ("d", TensorProto.FLOAT, ()), ("v", TensorProto.FLOAT, (3,))],
        ("y", TensorProto.FLOAT, 2), 11,
    )  # fmt: skip
    bfloat16_model = single(
        "OneHot", [("i", TensorProto.INT64, (2,)), ("d", TensorProto.FLOAT, ()), ("v", BFLOAT16, (3,))],
        ("y", BFLOAT16, 2), 28,
    )  # fmt: skip
    feeds = {"i": np.array([0, 1]), "d": np.array(3, np.float32), "v": np.zeros(3, np.float32)}
    with pytest.raises(Exception, match="Invalid argument for values"):
        run_onnxruntime(model, feeds)
    feeds["v"] = feeds["v"].astype(ml_dtypes.bfloat16)
    with pytest.raises(Exception, match="Invalid argument for values"):
        run_onnxruntime(lowered(bfloat16_model, 13, "OneHot-28→11 via values gathered"), feeds)


# -- ReverseSequence-28 on bfloat16 ------------------------------------------------------------------

REVERSE_CASES = [
    ((4, 3), [4, 1, 3], {"time_axis": 0, "batch_axis": 1}),
    ((3, 5, 2), [1, 5, 2], {"time_axis": 1, "batch_axis": 0}),
    ((6, 2, 3, 2), [6, 3], {}),  # the defaults: batch_axis 1, time_axis 0
    ((0, 4), [], {"time_axis": 1, "batch_axis": 0}),  # no batch
    ((8192, 8), [8192, 1, 5, 8, 2, 3, 7, 4], {}),  # every pattern
]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [27, 13])
@pytest.mark.parametrize(("shape", "lens", "axes"), REVERSE_CASES, ids=lambda v: str(v)[:24])
def test_reverse_sequence_on_bfloat16_below_28_gathers_reversed_positions(shape, lens, axes, target):
    model = single(
        "ReverseSequence", [("x", BFLOAT16, shape), ("lens", TensorProto.INT64, (len(lens),))],
        ("y", BFLOAT16, len(shape)), 28,
        **axes,
    )  # fmt: skip
    feeds = {"x": patterns(shape), "lens": np.array(lens, np.int64)}
    label = "ReverseSequence-28→10 via positions reversed"
    assert_same(model, target, label, feeds, f"ReverseSequence {shape} {axes}")


# -- Equal-19 on strings -----------------------------------------------------------------------------

STRINGS = ["", "a", "A", "a ", "ab", "b", "\u00e9", "e\u0301", "\x00", "a\x00", "longer text", "a"]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [18, 11])
@pytest.mark.parametrize(
    ("x_shape", "y_shape"),
    [((12,), (12,)), ((3, 4), (4,)), ((4, 1), (1, 3)), ((), (2, 3)), ((0, 3), (3,)), ((2, 0), (1,)), ((), ())],
    ids=str,
)
def test_equal_on_strings_below_19_compares_unique_numbers(x_shape, y_shape, target):
    model = single("Equal", [("x", TensorProto.STRING, x_shape), ("y", TensorProto.STRING, y_shape)],
                   ("z", TensorProto.BOOL, max(len(x_shape), len(y_shape))), 19)  # fmt: skip
    rng = np.random.default_rng(19)
    pool = np.array(STRINGS, dtype=object)
    feeds = {"x": rng.choice(pool, size=x_shape), "y": rng.choice(pool, size=y_shape)}
    if x_shape == (12,):
        feeds = {"x": pool, "y": np.roll(pool, 1)}  # "a" against "a", and neighbours that differ by a byte
    label = f"Equal-19→{13 if target >= 13 else 11} via strings numbered by Unique"
    want = assert_same(model, target, label, feeds, f"Equal {x_shape}")
    assert np.array_equal(want, np.asarray(feeds["x"] == feeds["y"]))


def test_equal_on_strings_below_11_is_refused_in_our_words():
    model = single("Equal", [("x", TensorProto.STRING, (2,)), ("y", TensorProto.STRING, (2,))],
                   ("z", TensorProto.BOOL, 1), 19)  # fmt: skip
    assert "Equal-19 cannot go to opset 10: its input 'x' is tensor(string), which Equal-7 does not take" in refusal(
        model, 10
    )


def test_equal_on_a_type_equal_13_takes_is_re_versioned_as_it_is():
    model = single("Equal", [("x", TensorProto.INT32, (2,)), ("y", TensorProto.INT32, (2,))],
                   ("z", TensorProto.BOOL, 1), 19)  # fmt: skip
    result = lowering.lower_model(model, target_opset=13, ops=[])
    assert [node.op_type for node in result.model.graph.node] == ["Equal"]


def test_where_in_a_function_body_is_moved_too():
    """ThresholdedRelu-22 on bfloat16 at 13 goes by its body (Where-16 on bfloat16: a body that
    only compares and selects keeps its type, function_bodies.NOT_WIDENED): the same bits as the
    body written at 16, where Where-16 stays (both in onnx.reference), for a runtime whose kernels
    are not known."""
    model = single("ThresholdedRelu", [("x", BFLOAT16, (65536,))], ("y", BFLOAT16, 1), 22, alpha=0.5)
    unknown_kernels = dataclasses.replace(lowering.DEFAULT_TARGET, name="kernels unknown", kernels=lambda: None)
    at_16 = lowering.lower(model, target_opset=16, ops=[], target=unknown_kernels)
    assert "Where" in [node.op_type for node in at_16.graph.node]
    at_13 = lowering.lower(model, target_opset=13, ops=[], target=unknown_kernels)
    assert "Where" in [node.op_type for node in at_13.graph.node]  # Where-9 on int64 positions
    assert "Cast" not in [node.op_type for node in at_13.graph.node if "x" in node.input]
    onnx.checker.check_model(at_13, full_check=True)
    feeds = {"x": EVERY_BFLOAT16}
    assert_same_bits(run_reference(at_13, feeds)[0], run_reference(at_16, feeds)[0], "ThresholdedRelu at 13 and 16")


def test_a_bfloat16_celu_converted_is_computed_in_float32():
    """Celu-28 on bfloat16 at 13 goes by its body computed in float32 (function_bodies.float32_widening),
    which onnxruntime runs (it has no bfloat16 Div-13 or Div-14, which the body in bfloat16 would
    need): the float body's bits rounded once to bfloat16 (any NaN for a NaN)."""
    model = single("Celu", [("x", BFLOAT16, (65536,))], ("y", BFLOAT16, 1), 28)
    at_13 = lowering.lower(model, target_opset=13, ops=[])
    onnx.checker.check_model(at_13, full_check=True)
    nodes = at_13.graph.node
    assert (nodes[0].op_type, nodes[0].attribute[0].i) == ("Cast", TensorProto.FLOAT)
    assert (nodes[-1].op_type, nodes[-1].attribute[0].i) == ("Cast", BFLOAT16)
    float_celu = single("Celu", [("x", TensorProto.FLOAT, (65536,))], ("y", TensorProto.FLOAT, 1), 28)
    in_float = lowering.lower(float_celu, target_opset=13, ops=["Celu"])  # (its body, not Celu-12)
    back = make_model(
        [helper.make_node("Cast", ["v"], ["w"], to=BFLOAT16)],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [65536])],
        [helper.make_tensor_value_info("w", BFLOAT16, [65536])],
        opset=13,
    )
    (wide,) = run_onnxruntime(in_float, {"x": EVERY_BFLOAT16.astype(np.float32)})
    (want,) = run_onnxruntime(back, {"v": wide})
    (got,) = run_onnxruntime(at_13, {"x": EVERY_BFLOAT16})
    nan = np.isnan(got.astype(np.float32))
    assert np.array_equal(nan, np.isnan(want.astype(np.float32)))
    assert np.array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
