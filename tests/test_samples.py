"""The shared sample generator really carries the edge values every rule is tested on."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from support import slow_but_a_sample  # noqa: E402

from lowering import floats
from lowering.samples import edge_values, every_bit_pattern, sample_values


@pytest.mark.parametrize("element_type", [onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE])
def test_wide_types_carry_every_edge(element_type):
    values = edge_values(element_type)
    dtype = floats.numpy_dtype(element_type)
    info = np.finfo(dtype)
    with np.errstate(all="ignore"):
        nan = np.isnan(values)
        assert (nan & np.signbit(values)).any() and (nan & ~np.signbit(values)).any()
        assert len({v.tobytes() for v in values[nan]}) >= 6, "several NaN payloads"
        assert np.isposinf(values).any() and np.isneginf(values).any()
        zeros = values[values == 0]
        assert np.signbit(zeros).any() and (~np.signbit(zeros)).any()
        subnormal = (values != 0) & (np.abs(values) < info.tiny)
        assert subnormal.sum() >= 4
        assert (values == info.max).any() and (values == -info.max).any()


@slow_but_a_sample()
@pytest.mark.parametrize(
    "element_type",
    [onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E5M2],
)
def test_narrow_types_are_exhaustive(element_type):
    values = sample_values(element_type)
    bits = 8 * floats.numpy_dtype(element_type).itemsize
    assert values.size == 2**bits
    assert len(set(values.view(f"u{bits // 8}").tolist())) == 2**bits


def test_random_patterns_are_appended_and_reproducible():
    a = sample_values(onnx.TensorProto.FLOAT, random_count=100, seed=3)
    b = sample_values(onnx.TensorProto.FLOAT, random_count=100, seed=3)
    assert a.size == edge_values(onnx.TensorProto.FLOAT).size + 100 and a.tobytes() == b.tobytes()


def test_only_narrow_types_are_enumerated():
    with pytest.raises(ValueError):
        every_bit_pattern(onnx.TensorProto.FLOAT)
