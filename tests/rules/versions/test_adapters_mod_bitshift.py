"""Mod-28 with fmod=0 on floats going below version 28: bit for bit against onnxruntime's Mod-28
(every float16 bit pattern against a set of divisors; edge values and random pairs of float and
double), at every target from 10, and where the runtime takes fmod through the quotient; bfloat16
refused where the ops it needs lack it."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from support import slow_but_a_sample  # noqa: E402

import lowering
from lowering.verification.runtime import run_onnxruntime

TYPES = [(TensorProto.FLOAT16, np.float16, np.uint16), (TensorProto.FLOAT, np.float32, np.uint32),
         (TensorProto.DOUBLE, np.float64, np.uint64)]  # fmt: skip


def mod_model(element_type: int, opset: int = 28, fmod: int = 0) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(name, element_type, ["n"]) for name in "ab"]
    output = helper.make_tensor_value_info("y", element_type, ["n"])
    node = helper.make_node("Mod", ["a", "b"], ["y"], fmod=fmod)
    graph = helper.make_graph([node], "mod", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def specials(dtype, unsigned) -> np.ndarray:
    info = np.finfo(dtype)
    quiet = np.array([np.nan], dtype).view(unsigned)[0]
    top, one = unsigned(1) << unsigned(info.bits - 1), unsigned(1)
    signalling = (quiet ^ (one << unsigned(info.nmant - 1))) | unsigned(3)
    nans = np.array([quiet, quiet | one, quiet | top, signalling], unsigned).view(dtype)
    plain = [0.0, -0.0, np.inf, -np.inf, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
             info.max, -info.max, 1, -1, 3, -3, 0.5, -0.5, 1.5, -2.5, 1e-3, -7.5, 2, -6, 0.1, -0.1]  # fmt: skip
    return np.concatenate([np.array(plain, dtype), nans])


def pairs(dtype, unsigned) -> tuple[np.ndarray, np.ndarray]:
    values = specials(dtype, unsigned)
    a, b = (grid.ravel() for grid in np.meshgrid(values, values))
    rng = np.random.default_rng(0)
    a = np.concatenate([a, (rng.standard_normal(5000) * 100).astype(dtype)])
    b = np.concatenate([b, (rng.standard_normal(5000) * 10).astype(dtype)])
    if dtype == np.float16:  # every bit pattern of a against each special b
        every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        a = np.concatenate([a, np.tile(every, values.size)])
        b = np.concatenate([b, np.repeat(values, every.size)])
    return a, b


@pytest.mark.slow
@pytest.mark.parametrize("target", [10, 11, 13, 17, 21, 27])
@pytest.mark.parametrize(("element_type", "dtype", "unsigned"), TYPES)
def test_float_floored_remainder_is_bit_exact(element_type, dtype, unsigned, target):
    a, b = pairs(dtype, unsigned)
    original = mod_model(element_type)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lowered = lowering.lower(original, target_opset=target, ops=[])
    assert max(o.version for o in lowered.opset_import if o.domain in ("", "ai.onnx")) == target
    want = run_onnxruntime(original, {"a": a, "b": b})[0]
    got = run_onnxruntime(lowered, {"a": a, "b": b})[0]
    differ = np.flatnonzero(want.view(unsigned) != got.view(unsigned))
    assert differ.size == 0, (a[differ[:3]], b[differ[:3]], want[differ[:3]], got[differ[:3]])


@pytest.mark.parametrize("target", [13, 15])
def test_bfloat16_refused_where_an_op_lacks_it(target):
    with pytest.raises(lowering.LoweringError, match="floored remainder needs .*Where.* on tensor\\(bfloat16\\)"):
        lowering.lower(mod_model(TensorProto.BFLOAT16), target_opset=target, ops=[])


def test_fmod_one_is_re_versioned_as_it_is():
    lowered = lowering.lower(mod_model(TensorProto.FLOAT, fmod=1), target_opset=13, ops=[])
    assert [node.op_type for node in lowered.graph.node] == ["Mod"]


class Mod(OpRun):
    """Mod taken through the quotient, a - trunc(a / b)·b, as OpenVINO computes fmod: NaN for a
    finite a by an infinite b, where C's fmod gives a (onnx.reference runs a class in ``new_ops``
    for the op its name names)."""

    op_domain = ""

    def _run(self, a, b, fmod=None):
        with np.errstate(all="ignore"):
            return ((a - np.trunc(a / b) * b).astype(a.dtype),)


@pytest.mark.parametrize("target", [10, 27])
@pytest.mark.parametrize(("element_type", "dtype", "unsigned"), TYPES)
def test_finite_by_infinite_needs_no_fmod_by_infinity(element_type, dtype, unsigned, target):
    """A finite a by ±inf floors to a or to b from a itself, not from the truncated remainder's
    node: bit for bit with onnxruntime's Mod-28 where that node is taken through the quotient
    (NaN there), at 10 (NaN found by IsNaN) and 27 (by Equal)."""
    values = specials(dtype, unsigned)
    a = np.tile(values[np.isfinite(values)], 2)
    b = np.repeat(np.array([np.inf, -np.inf], dtype), a.size // 2)
    lowered = lowering.lower(mod_model(element_type), target_opset=target, ops=[])
    [want] = run_onnxruntime(mod_model(element_type), {"a": a, "b": b})
    [quotient] = ReferenceEvaluator(mod_model(element_type, opset=target, fmod=1), new_ops=[Mod]).run(
        None, {"a": a, "b": b}
    )
    assert np.isnan(quotient).all()
    [got] = ReferenceEvaluator(lowered, new_ops=[Mod]).run(None, {"a": a, "b": b})
    assert got.view(unsigned).tobytes() == want.view(unsigned).tobytes()


# -- BitShift-28 going down -------------------------------------------------------------------------

INTEGERS = [(TensorProto.INT8, np.int8), (TensorProto.INT16, np.int16), (TensorProto.INT32, np.int32),
            (TensorProto.INT64, np.int64), (TensorProto.UINT8, np.uint8), (TensorProto.UINT16, np.uint16),
            (TensorProto.UINT32, np.uint32), (TensorProto.UINT64, np.uint64)]  # fmt: skip


def shift_model(element_type: int, direction: str, amounts: np.ndarray | None, size: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", element_type, [size])
    y = helper.make_tensor_value_info("y", element_type, [size])
    z = helper.make_tensor_value_info("z", element_type, [size])
    initializer = [] if amounts is None else [onnx.numpy_helper.from_array(amounts, "y")]
    graph = helper.make_graph(
        [helper.make_node("BitShift", ["x", "y"], ["z"], direction=direction)], "shift",
        [x] if amounts is not None else [x, y], [z], initializer=initializer,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])


def integer_values(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    if info.bits <= 16:
        return np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype)
    rng = np.random.default_rng(0)
    edges = np.array([info.min, info.min + 1, -1 if info.min else 1, 0, 1, info.max - 1, info.max], dtype)
    return np.concatenate([edges, rng.integers(info.min, info.max, 20000, dtype=dtype, endpoint=True)])


def amounts_of(dtype) -> np.ndarray:
    """Every amount in range, and out of it: the width and past it, the largest, and negative ones."""
    info = np.iinfo(dtype)
    out = [info.bits, info.bits + 1, 2 * info.bits, info.max] + ([-1, -info.bits, info.min] if info.min else [])
    return np.array([*range(info.bits), *out], dtype)


@slow_but_a_sample()
@pytest.mark.parametrize("fed", [False, True], ids=["constant", "fed"])
@pytest.mark.parametrize("target", [11, 27])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize(("element_type", "dtype"), INTEGERS)
def test_bitshift_is_exact(element_type, dtype, direction, target, fed):
    """Every value of 8- and 16-bit types (edges and random ones wider) shifted by every amount
    in range and by amounts out of it, fed or a constant, against onnxruntime's BitShift-28."""
    values = integer_values(dtype)
    amounts = amounts_of(dtype)
    x = np.tile(values, amounts.size)
    y = np.repeat(amounts, values.size)
    original = shift_model(element_type, direction, None if fed else y, x.size)
    feeds = {"x": x, "y": y} if fed else {"x": x}
    lowered = lowering.lower(original, target_opset=target, ops=[])
    want = run_onnxruntime(original, feeds)[0]
    got = run_onnxruntime(lowered, feeds)[0]
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
@pytest.mark.parametrize(("element_type", "dtype"), INTEGERS)
def test_every_cast_carries_a_value_its_type_holds(element_type, dtype, direction):
    """Cast below opset 13 leaves a value out of its target type's range undefined: at opset 11
    every Cast the adapter writes is given, over the values and amounts of the exactness test,
    only values the type it casts to holds (each Cast's input made an output of the model)."""
    values = integer_values(dtype)
    amounts = amounts_of(dtype)
    feeds = {"x": np.tile(values, amounts.size), "y": np.repeat(amounts, values.size)}
    lowered = lowering.lower(
        shift_model(element_type, direction, None, values.size * amounts.size), target_opset=11, ops=[]
    )
    casts = [node for node in lowered.graph.node if node.op_type == "Cast"]
    given = [node.input[0] for node in casts]
    probed = onnx.ModelProto()
    probed.CopyFrom(lowered)
    probed.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in given)
    outputs = run_onnxruntime(probed, feeds)[len(lowered.graph.output) :]
    for node, value in zip(casts, outputs, strict=True):
        to = helper.get_attribute_value(next(a for a in node.attribute if a.name == "to"))
        info = np.iinfo(helper.tensor_dtype_to_np_dtype(to))
        wide = value.astype(np.int64) if value.dtype != np.uint64 else value
        assert value.dtype == np.bool_ or (wide.min() >= info.min and wide.max() <= info.max), (
            f"{node.name} casts {wide.min()}..{wide.max()} to {info.dtype}"
        )


def test_unsigned_constant_amounts_in_range_are_kept():
    original = shift_model(TensorProto.UINT16, "RIGHT", np.array([0, 15], np.uint16), 2)
    lowered = lowering.lower(original, target_opset=13, ops=[])
    assert [node.op_type for node in lowered.graph.node] == ["BitShift"]
