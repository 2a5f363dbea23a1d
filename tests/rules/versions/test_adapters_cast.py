"""Cast down across version 13 (rules/versions/cast.py): from 13 a Cast between integer types
wraps a value out of the target's range (two's complement); Cast-6 and -9 leave it undefined, so
the adapter writes the wraparound first, and Add, Sub, Mul and Div of 8- and 16-bit integers
carried in 32 bits below 13 take their low bits so too. Each is compared bit for bit in
onnxruntime with the original at its own opset (whose Cast wraps, as numpy's astype)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model

import lowering
from lowering import floats
from lowering.verification.runtime import run_onnxruntime


def cast_model(source: int, to: int, opset: int = 21) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=to)],
        [helper.make_tensor_value_info("x", source, [None])],
        [helper.make_tensor_value_info("y", to, [None])],
        opset=opset,
    )


def edges(element_type: int, around: int) -> np.ndarray:
    """The type's extremes, 0, ±1 and the values about ±2^(around-1) and 2^around it holds."""
    info = np.iinfo(floats.numpy_dtype(element_type))
    wanted = {int(info.min), int(info.max), 0, 1, -1}
    wanted |= {v + step for v in (2 ** (around - 1), -(2 ** (around - 1)), 2**around) for step in (-1, 0, 1)}
    held = sorted(v for v in wanted if info.min <= v <= info.max)
    return np.array(held, dtype=object).astype(floats.numpy_dtype(element_type))


@pytest.mark.parametrize("target", [12, 9, 7])
@pytest.mark.parametrize(
    "source, to",
    [(TensorProto.INT32, TensorProto.INT8), (TensorProto.UINT16, TensorProto.INT16),
     (TensorProto.INT64, TensorProto.UINT32), (TensorProto.UINT64, TensorProto.INT16),
     (TensorProto.INT8, TensorProto.UINT32)],
)  # fmt: skip
def test_an_integer_cast_out_of_range_goes_below_13_with_its_wraparound_written(source, to, target):
    model = cast_model(source, to)
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert [name for name in result.report.adapted if "wraparound written" in name]
    x = edges(source, 8 * floats.numpy_dtype(to).itemsize)
    [got] = run_onnxruntime(result.model, {"x": x})
    want = x.astype(floats.numpy_dtype(to))
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_a_cast_that_cannot_wrap_moves_as_it_is():
    for source, to in [(TensorProto.FLOAT, TensorProto.INT8), (TensorProto.INT8, TensorProto.INT32),
                       (TensorProto.UINT16, TensorProto.INT64), (TensorProto.INT32, TensorProto.BOOL)]:  # fmt: skip
        result = lowering.lower_model(cast_model(source, to), target_opset=12, ops=[])
        assert [node.op_type for node in result.model.graph.node] == ["Cast"]


def test_a_64_bit_wraparound_is_refused_below_13():
    with pytest.raises(lowering.LoweringError, match="cannot go to opset 12.*2\\^64"):
        lowering.lower_model(cast_model(TensorProto.INT32, TensorProto.UINT64), target_opset=12, ops=[])


@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("element_type", [TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16])
def test_8_and_16_bit_arithmetic_carried_in_32_bits_takes_its_low_bits_below_13(op_type, element_type):
    model = make_model(
        [helper.make_node(op_type, ["a", "b"], ["y"])],
        [helper.make_tensor_value_info(name, element_type, [None]) for name in "ab"],
        [helper.make_tensor_value_info("y", element_type, [None])],
        opset=14,
    )
    values = edges(element_type, 8 * floats.numpy_dtype(element_type).itemsize)
    a, b = (v.ravel() for v in np.meshgrid(values, values))
    if op_type == "Div":
        a, b = a[b != 0], b[b != 0]
    [want] = run_onnxruntime(model, {"a": a, "b": b})
    for target in (12, 9):
        result = lowering.lower_model(model, target_opset=target, ops=[])
        assert result.model.graph.node[-1].op_type == "Cast"
        [got] = run_onnxruntime(result.model, {"a": a, "b": b})
        assert got.dtype == want.dtype and np.array_equal(got, want), target
