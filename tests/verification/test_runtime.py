"""lowering.verification.runtime: the sub-byte types (int4, uint4, int2, uint2, float4e2m1) go in
and come out of onnxruntime packed as onnx stores them, every code value of each."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import helper
from support import sub_byte_integer_types, sub_byte_types

from lowering import floats
from lowering.errors import LoweringError
from lowering.verification.runtime import bits_per_element, packed, run_onnxruntime, run_reference, unpacked

SUB_BYTE = list(sub_byte_types())
# Cast takes these from opset 21 (int4, uint4) and 25 (int2, uint2, float4e2m1, ...); onnxruntime
# 1.32 has no Cast kernel from or to the float ones, so those are checked against onnx's packing only.
RUN_IN_ONNXRUNTIME = list(sub_byte_integer_types())


def every_code(element_type: int, repeats: int = 1) -> np.ndarray:
    """Every bit pattern of ``element_type`` (one a byte, in its low bits), ``repeats`` times and
    one more, so that no count of elements fills the last byte."""
    dtype = floats.numpy_dtype(element_type)
    codes = np.arange(1 << bits_per_element(dtype), dtype=np.uint8)
    return np.concatenate([np.tile(codes, repeats), codes[:1]]).view(dtype)


@pytest.mark.parametrize("element_type", SUB_BYTE, ids=onnx.TensorProto.DataType.Name)
@pytest.mark.parametrize("repeats", [0, 1, 3])
def test_packing_is_onnxs(element_type, repeats):
    values = every_code(element_type, repeats)
    bits = bits_per_element(values.dtype)
    assert bits < 8
    stored = onnx.numpy_helper.from_array(values).raw_data
    assert packed(values, bits).tobytes() == stored
    back = unpacked(np.frombuffer(stored, np.uint8), bits, values.size).view(values.dtype)
    assert back.view(np.uint8).tolist() == values.view(np.uint8).tolist()


def test_empty_tensors_pack_to_no_bytes():
    values = np.zeros((0, 3), ml_dtypes.int4)
    assert packed(values, 4).size == 0
    assert unpacked(np.zeros(0, np.uint8), 4, 0).size == 0


@pytest.mark.parametrize("element_type", RUN_IN_ONNXRUNTIME, ids=onnx.TensorProto.DataType.Name)
@pytest.mark.parametrize("shape", [(3, 5), (0, 2), (7,), ()])
def test_every_code_goes_in_and_comes_out_of_onnxruntime(element_type, shape):
    """y = Cast(x, float), z = Cast(y, x's type): y holds x's values, z its bits, for every code."""
    size = int(np.prod(shape, dtype=np.int64))
    codes = every_code(element_type, repeats=4)
    x = np.resize(codes, size).reshape(shape)
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Cast", ["y"], ["z"], to=element_type),
        ],
        "sub_byte",
        [helper.make_tensor_value_info("x", element_type, shape)],
        [
            helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("z", element_type, shape),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    y, z = run_onnxruntime(model, {"x": x})
    want_y, _ = run_reference(model, {"x": x})
    assert y.dtype == np.float32 and y.tolist() == x.astype(np.float32).tolist() == want_y.tolist()
    assert z.dtype == x.dtype and z.shape == x.shape
    assert z.view(np.uint8).tolist() == x.view(np.uint8).tolist()


def cast_model(from_type: int, to_type: int, shape) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=to_type)],
        "cast",
        [helper.make_tensor_value_info("x", from_type, shape)],
        [helper.make_tensor_value_info("y", to_type, shape)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize(
    ("from_type", "to_type"),
    [
        (onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT),
        (onnx.TensorProto.FLOAT, onnx.TensorProto.BFLOAT16),
        (onnx.TensorProto.FLOAT, onnx.TensorProto.INT4),
    ],
    ids=["bfloat16 in", "bfloat16 out", "int4 out"],
)
def test_a_0d_value_stays_0d_where_it_goes_through_the_binding(from_type, to_type):
    x = np.array(-3.0).astype(floats.numpy_dtype(from_type))
    (y,) = run_onnxruntime(cast_model(from_type, to_type, ()), {"x": x})
    (want,) = run_reference(cast_model(from_type, to_type, ()), {"x": x})
    assert y.shape == () == want.shape
    assert y.dtype == want.dtype and y.reshape(-1).view(np.uint8).tolist() == want.reshape(-1).view(np.uint8).tolist()


@pytest.mark.parametrize(
    ("declared", "fed"),
    [
        (onnx.TensorProto.INT4, np.int8),
        (onnx.TensorProto.UINT4, ml_dtypes.int4),
        (onnx.TensorProto.INT4, ml_dtypes.int2),
    ],
    ids=["int8 as int4", "int4 as uint4", "int2 as int4"],
)
def test_an_array_of_another_type_than_declared_is_refused_not_fed_as_its_bytes(declared, fed):
    """Beside a bfloat16 input (so that the feeds go through the binding)."""
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["x"], ["y"], to=onnx.TensorProto.FLOAT),
            helper.make_node("Cast", ["b"], ["c"], to=onnx.TensorProto.FLOAT),
        ],
        "two_casts",
        [
            helper.make_tensor_value_info("x", declared, (5,)),
            helper.make_tensor_value_info("b", onnx.TensorProto.BFLOAT16, (5,)),
        ],
        [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, (5,)) for name in ("y", "c")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    feeds = {"x": np.arange(5).astype(fed), "b": np.arange(5).astype(ml_dtypes.bfloat16)}
    with pytest.raises(LoweringError, match=f"input 'x' .* cannot be fed a {np.dtype(fed)} array"):
        run_onnxruntime(model, feeds)
    feeds["x"] = feeds["x"].astype(floats.numpy_dtype(declared))
    y, c = run_onnxruntime(model, feeds)
    assert y.tolist() == feeds["x"].astype(np.float32).tolist() and c.tolist() == [0, 1, 2, 3, 4]


def test_the_bytes_of_a_value_are_counted_where_onnxruntime_gives_no_count():
    """onnxruntime 1.20 (the oldest declared) has no OrtValue.tensor_size_in_bytes: ⌈n·bits/8⌉."""
    from types import SimpleNamespace

    from lowering.verification.runtime import _bytes_of

    assert _bytes_of(SimpleNamespace(shape=lambda: [3, 5]), 4) == 8
    assert _bytes_of(SimpleNamespace(shape=lambda: [3, 5]), 2) == 4
    assert _bytes_of(SimpleNamespace(shape=lambda: []), 16) == 2
    assert _bytes_of(SimpleNamespace(shape=lambda: [0, 7]), 4) == 0
    counted = SimpleNamespace(shape=lambda: [3, 5], tensor_size_in_bytes=lambda: 8)
    assert _bytes_of(counted, 4) == 8


def _conv_times(constant_first: bool) -> onnx.ModelProto:
    """y = Conv(x, w) · c, the constant c first or second in the Mul."""
    rng = np.random.default_rng(0)
    w = onnx.numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w")
    c = onnx.numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "c")
    factors = ["c", "conv"] if constant_first else ["conv", "c"]
    nodes = [helper.make_node("Conv", ["x", "w"], ["conv"]), helper.make_node("Mul", factors, ["y"])]
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "g", [x], [y], [w, c])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_each_node_runs_by_its_own_kernel_so_that_a_fusion_of_one_side_shows_nothing():
    """Conv(x, w) · c and c · Conv(x, w) are the same numbers (IEEE multiplication commutes) run
    node by node; onnxruntime's optimizations fold c into w for the constant second only, so run
    optimized the two round apart."""
    from lowering import verify

    x = {"x": np.random.default_rng(1).standard_normal((1, 2, 8, 8)).astype(np.float32)}
    second, first = _conv_times(False), _conv_times(True)
    assert run_onnxruntime(second, x)[0].tobytes() == run_onnxruntime(first, x)[0].tobytes()
    fused = run_onnxruntime(second, x, optimized=True)[0]
    assert fused.tobytes() != run_onnxruntime(first, x, optimized=True)[0].tobytes()
    assert verify(second, first).match


def test_a_rewrite_a_fusion_would_undo_is_compared_as_written():
    """AveragePool padded in its attribute against the pool of a Pad by +0.0, on a window of
    -0.0 alone inside the padding: onnxruntime's optimizations merge the Pad into the pool
    (comparing its kernel with itself); node by node the pool of the Pad gives +0.0 on windows
    that hold padding where the padded kernel gives -0.0, and verify sees it."""
    from lowering import verify

    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 5, 6])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    attributes = {"kernel_shape": [3, 3], "strides": [1, 2]}
    padded = helper.make_node("AveragePool", ["x"], ["y"], pads=[2, 0, 1, 1], count_include_pad=1, **attributes)
    original = helper.make_model(
        helper.make_graph([padded], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 11)]
    )
    pads = onnx.numpy_helper.from_array(np.array([0, 0, 2, 0, 0, 0, 1, 1], np.int64), "pads")
    zero = onnx.numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("Pad", ["x", "pads", "zero"], ["x_padded"]),
             helper.make_node("AveragePool", ["x_padded"], ["y"], **attributes)]  # fmt: skip
    rewritten = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], [pads, zero]), opset_imports=[helper.make_opsetid("", 11)]
    )
    feed = {"x": np.full((1, 1, 5, 6), -0.0, np.float32)}
    want, got = run_onnxruntime(original, feed)[0], run_onnxruntime(rewritten, feed)[0]
    assert not want.any() and not got.any() and (np.signbit(want) != np.signbit(got)).any()
    fused = run_onnxruntime(rewritten, feed, optimized=True)[0]
    assert fused.tobytes() == run_onnxruntime(original, feed, optimized=True)[0].tobytes()
    assert not verify(original, rewritten, inputs=[feed]).match
