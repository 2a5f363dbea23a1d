"""lowering.integer_casts: a Cast between integer types written so that no Cast is given a value
its target does not hold, bit for bit with Cast-13's wraparound (numpy's astype) at every opset."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from lowering import floats
from lowering.builder import Builder, Value
from lowering.errors import NotLowered
from lowering.integer_casts import may_wrap, wrapped_cast
from lowering.naming import NameAllocator
from lowering.targets import DEFAULT_TARGET
from lowering.value_ranges import fits, output_range
from lowering.verification.runtime import run_onnxruntime

INTEGERS = (
    TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16,
    TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64,
)  # fmt: skip
WRAPPING = [(s, t) for s, t in itertools.product(INTEGERS, INTEGERS) if s != t and may_wrap(s, t)]


def values_of(element_type: int) -> np.ndarray:
    """Every value of an 8- or 16-bit type; of a wider one its extremes, the powers of two about
    2^7, 2^8, 2^15, 2^16, 2^31, 2^32 and 2^63 with their neighbours, and random values."""
    dtype = floats.numpy_dtype(element_type)
    info = np.iinfo(dtype)
    if info.bits <= 16:
        return np.arange(int(info.min), int(info.max) + 1).astype(dtype)
    edges = {int(info.min), int(info.max), 0}
    for power in (7, 8, 15, 16, 31, 32, 63):
        edges |= {sign * (2**power) + step for sign in (1, -1) for step in (-1, 0, 1)}
    held = sorted(v for v in edges if info.min <= v <= info.max)
    random = np.random.default_rng(64).integers(info.min, info.max, 2000, dtype, endpoint=True)
    return np.concatenate([np.array(held, dtype=object).astype(dtype), random])


def written(source: int, to: int, opset: int) -> onnx.ModelProto:
    b = Builder(opset=opset, target=DEFAULT_TARGET, names=NameAllocator(), constants=None, name_hint="cast")
    wrapped_cast(b, Value("x", source), source, to, outputs=["y"])
    x, y = helper.make_tensor_value_info("x", source, [None]), helper.make_tensor_value_info("y", to, [None])
    graph = helper.make_graph(b.nodes, "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [7, 9, 10, 12, 13, 21])
def test_the_wraparound_is_cast_13_s_at_every_opset_and_each_cast_is_given_values_its_target_holds(opset):
    """Below 9 the constants are floats cast (Constant takes no integers), below 10 the remainder
    is Div, Mul and Sub (no Mod); every written Cast's input range fits its target."""
    checked = 0
    for source, to in WRAPPING:
        if floats.numpy_dtype(to).itemsize == 8:
            continue
        model = written(source, to, opset)
        onnx.checker.check_model(model, full_check=True)
        last = model.graph.node[-1]
        assert last.op_type == "Cast" and list(last.output) == ["y"]
        model.graph.output.append(onnx.ValueInfoProto(name=last.input[0]))  # (what the last Cast is given)
        x = values_of(source)
        got, given = run_onnxruntime(model, {"x": x})
        want = x.astype(floats.numpy_dtype(to))
        assert got.dtype == want.dtype and np.array_equal(got, want), (source, to, opset)
        info = np.iinfo(floats.numpy_dtype(to))  # (onnxruntime wraps either way: the values given are checked)
        assert int(given.min()) >= info.min and int(given.max()) <= info.max, (source, to, opset)
        checked += 1
    assert checked == len([pair for pair in WRAPPING if floats.numpy_dtype(pair[1]).itemsize < 8])


def test_the_form_from_mod_on_proves_its_range_to_value_ranges():
    """Mod(c + 2^(n-1), 2^n) - 2^(n-1) lies in [-2^(n-1), 2^(n-1) - 1] by interval arithmetic alone,
    so a Cast of it is known in range (what target_forms.cast_within_range reads)."""
    for source, to in WRAPPING:
        if floats.numpy_dtype(to).itemsize == 8:
            continue
        model = written(source, to, 13)
        ranges = {"x": (int(np.iinfo(floats.numpy_dtype(source)).min), int(np.iinfo(floats.numpy_dtype(source)).max))}
        for node in model.graph.node[:-1]:
            inputs = [ranges.get(name) for name in node.input]
            ranges[node.output[0]] = output_range(node, 0, inputs, 1 << 63)
        assert fits(ranges[model.graph.node[-1].input[0]], to), (source, to)


@pytest.mark.parametrize("source", [TensorProto.INT8, TensorProto.INT32, TensorProto.INT64])
def test_a_64_bit_target_no_carrier_holds_is_refused(source):
    with pytest.raises(NotLowered, match="2\\^64"):
        written(source, TensorProto.UINT64, 13)
    with pytest.raises(NotLowered, match="2\\^64"):
        written(TensorProto.UINT64, TensorProto.INT64, 13)


def test_only_integer_pairs_out_of_range_may_wrap():
    assert may_wrap(TensorProto.UINT16, TensorProto.INT16) and may_wrap(TensorProto.INT8, TensorProto.UINT64)
    assert not may_wrap(TensorProto.UINT16, TensorProto.INT32) and not may_wrap(TensorProto.INT8, TensorProto.INT64)
    assert not may_wrap(TensorProto.FLOAT, TensorProto.INT8) and not may_wrap(TensorProto.INT32, TensorProto.BOOL)
