"""The version steps that only add types (rules/versions/type_lists.py), Mod across version 28,
and the refusals lowering.conversion.version_steps gives before onnx's converter is tried.

Each adapter is run on every pair of 8-bit integers, on every 16-bit integer against chosen
partners (both orders), and on the edges of wider integers (where a double rounds, too): the
original at its own opset against the result at the target, both in onnxruntime (onnx.reference
where onnxruntime has no kernel for the original), compared bit for bit.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OnnxruntimeNotImplemented
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering.conversion import version_steps
from lowering.naming import NameAllocator
from lowering.verification.runtime import run_onnxruntime, run_reference

SMALL = (TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16)
WIDE = (TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64)


def dtype_of(element_type: int) -> np.dtype:
    return np.dtype(helper.tensor_dtype_to_np_dtype(element_type))


@functools.cache
def partners(element_type: int) -> np.ndarray:
    """Values to pair with every value of a 16-bit type, or with each other for wider types:
    the extremes, 0, ±1, ±2, the values next to powers of two, and where a double can no
    longer tell neighbours apart (2⁵³ ± 1), then random values."""
    info = np.iinfo(dtype_of(element_type))
    chosen = {info.min, info.min + 1, info.max - 1, info.max, 0, 1, 2, 3}
    if info.min < 0:
        chosen |= {-1, -2, -3}
    for bits in (7, 8, 15, 16, 24, 31, 32, 53, 63):
        for value in (2**bits - 1, 2**bits, 2**bits + 1, -(2**bits) - 1, -(2**bits), -(2**bits) + 1):
            if info.min <= value <= info.max:
                chosen.add(value)
    rng = np.random.default_rng(element_type)
    randoms = rng.integers(info.min, info.max, size=48, dtype=dtype_of(element_type), endpoint=True)
    return np.concatenate([np.array(sorted(chosen), dtype=object).astype(dtype_of(element_type)), randoms])


@functools.lru_cache(maxsize=2)  # the cases of one type come together; 16-bit pairs are millions
def operand_pairs(element_type: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair for 8-bit types; every value against the partners, both orders, for 16-bit
    types; the partners against each other for wider ones (read-only: built once per type)."""
    pairs = _operand_pairs(element_type)
    for array in pairs:
        array.flags.writeable = False
    return pairs


@functools.lru_cache(maxsize=2)
def operand_pairs_without_zero_divisors(element_type: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`operand_pairs` where b is not 0 (read-only)."""
    a, b = operand_pairs(element_type)
    pairs = a[b != 0], b[b != 0]
    for array in pairs:
        array.flags.writeable = False
    return pairs


def _operand_pairs(element_type: int) -> tuple[np.ndarray, np.ndarray]:
    dtype = dtype_of(element_type)
    if dtype.itemsize == 1:
        every = np.arange(256, dtype=np.uint8).view(dtype)
        a, b = np.meshgrid(every, every)
        return a.ravel(), b.ravel()
    if dtype.itemsize == 2:
        every = np.arange(65536, dtype=np.uint16).view(dtype)
        a, b = np.meshgrid(every, partners(element_type))
        return np.concatenate([a.ravel(), b.ravel()]), np.concatenate([b.ravel(), a.ravel()])
    a, b = np.meshgrid(partners(element_type), partners(element_type))
    return a.ravel(), b.ravel()


def binary_model(op_type: str, element_type: int, opset: int, inputs: int = 2, **attributes) -> onnx.ModelProto:
    names = ["a", "b", "c"][:inputs]
    return make_model(
        [helper.make_node(op_type, names, ["y"], name=f"{op_type.lower()}_node", **attributes)],
        [helper.make_tensor_value_info(name, element_type, ["N"]) for name in names],
        [helper.make_tensor_value_info("y", element_type, ["N"])],
        opset=opset,
    )


def run(model: onnx.ModelProto, feeds: dict) -> list:
    """onnxruntime's outputs, or onnx.reference's where onnxruntime has no kernel (Max-13 on int16)."""
    try:
        return run_onnxruntime(model, feeds)
    except OnnxruntimeNotImplemented:
        return run_reference(model, feeds)


_LAST_ORIGINAL: dict[tuple, np.ndarray] = {}


def original_output(model: onnx.ModelProto, operands: str, feeds: dict, run_model=run_onnxruntime) -> np.ndarray:
    """``run_model(model, feeds)``'s one output, kept for the last model and operands asked
    (``operands`` names the feeds): the cases of one op and type come one per target, together,
    and the original is the same at each."""
    key = (run_model.__name__, model.SerializeToString(), operands)
    if key not in _LAST_ORIGINAL:
        _LAST_ORIGINAL.clear()
        (_LAST_ORIGINAL[key],) = run_model(model, feeds)
        _LAST_ORIGINAL[key].flags.writeable = False
    return _LAST_ORIGINAL[key]


def converted(model: onnx.ModelProto, target: int, adapted: str) -> onnx.ModelProto:
    """``model`` taken to ``target``; the report must name ``adapted`` ("Max-13→8 via ...")."""
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.adapted[adapted] == 1, dict(result.report.adapted)
    return result.model


def assert_same_bits(got: np.ndarray, want: np.ndarray, where: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, where
    differ = np.flatnonzero(got.view(f"u{got.dtype.itemsize}") != want.view(f"u{want.dtype.itemsize}"))
    first = differ[:3]
    assert differ.size == 0, f"{where}: {differ.size} differ, first at {first}: {got[first]} vs {want[first]}"


# -- Min and Max on integers, below 12 ------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 8])
@pytest.mark.parametrize("element_type", SMALL + WIDE, ids=lambda t: TensorProto.DataType.Name(t).lower())
@pytest.mark.parametrize("op_type", ["Max", "Min"])
def test_integer_min_and_max_are_exact(op_type, element_type, target):
    model = binary_model(op_type, element_type, 13)
    a, b = operand_pairs(element_type)
    label = f"{op_type}-13→8 via integers compared"
    if dtype_of(element_type).itemsize == 8 and target < 9:
        with pytest.raises(lowering.LoweringError) as refused:
            lowering.lower(model, target_opset=target, ops=[])
        assert f"{op_type}-13 cannot go to opset 8: its input 'a' is tensor({dtype_of(element_type).name})" in str(
            refused.value
        )
        assert "double does not hold every 64-bit integer, and Where comes at opset 9" in str(refused.value)
        return
    lowered = converted(model, target, label)
    want = original_output(model, f"operand_pairs({element_type})", {"a": a, "b": b}, run)
    (got,) = run_onnxruntime(lowered, {"a": a, "b": b})
    assert_same_bits(got, want, f"{op_type} {dtype_of(element_type).name} 13→{target}")
    np.testing.assert_array_equal(want, (np.maximum if op_type == "Max" else np.minimum)(a, b))


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", SMALL + WIDE, ids=lambda t: TensorProto.DataType.Name(t).lower())
def test_integer_max_of_three_broadcast_inputs_is_exact(element_type):
    """Max-13(a[N], b[1], c[N]) at 11: every input of several, broadcast as Max-8 does."""
    model = binary_model("Max", element_type, 13, inputs=3)
    model.graph.input[1].type.tensor_type.shape.dim[0].dim_value = 1
    values = partners(element_type)
    feeds = {"a": values, "b": values[len(values) // 2 : len(values) // 2 + 1], "c": values[::-1].copy()}
    lowered = converted(model, 11, "Max-13→8 via integers compared")
    assert_same_bits(run_onnxruntime(lowered, feeds)[0], run(model, feeds)[0], "Max of three")
    assert_same_bits(run_onnxruntime(lowered, feeds)[0], np.maximum(np.maximum(feeds["a"], feeds["b"]), feeds["c"]), "")


def test_float_min_and_max_are_re_versioned_as_they_are():
    model = binary_model("Min", TensorProto.FLOAT, 13)
    result = lowering.lower_model(model, target_opset=11, ops=[])
    assert dict(result.report.adapted) == {"Min-13→8": 1}
    assert [node.op_type for node in result.model.graph.node] == ["Min"]


# -- Add, Sub, Mul, Div on 8- and 16-bit integers, below 14 ----------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize("target", [13, 7])
@pytest.mark.parametrize("element_type", SMALL, ids=lambda t: TensorProto.DataType.Name(t).lower())
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
def test_small_integer_arithmetic_wraps_around_as_before(op_type, element_type, target):
    model = binary_model(op_type, element_type, 14)
    # division by zero fails in both (the next test)
    operands = "operand_pairs_without_zero_divisors" if op_type == "Div" else "operand_pairs"
    a, b = (operand_pairs_without_zero_divisors if op_type == "Div" else operand_pairs)(element_type)
    version = 13 if target >= 13 else 7
    lowered = converted(model, target, f"{op_type}-14→{version} via in 32 bits")
    want = original_output(model, f"{operands}({element_type})", {"a": a, "b": b})
    (got,) = run_onnxruntime(lowered, {"a": a, "b": b})
    assert_same_bits(got, want, f"{op_type} {dtype_of(element_type).name} 14→{target}")
    np.testing.assert_array_equal(want, wrapped_around(op_type, element_type))  # the original wraps around


@functools.lru_cache(maxsize=1)  # the cases of one op and type come together, one per target
def wrapped_around(op_type: str, element_type: int) -> np.ndarray:
    """``op_type`` on the operands of the arithmetic test, computed in int64 and wrapped around
    to their type (read-only)."""
    a, b = (operand_pairs_without_zero_divisors if op_type == "Div" else operand_pairs)(element_type)
    exact = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}.get(op_type)
    wide_a, wide_b = a.astype(np.int64), b.astype(np.int64)
    wrapped = (exact(wide_a, wide_b) if exact else np.trunc(wide_a / wide_b).astype(np.int64)).astype(a.dtype)
    wrapped.flags.writeable = False
    return wrapped


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", SMALL, ids=lambda t: TensorProto.DataType.Name(t).lower())
def test_small_integer_division_by_zero_fails_in_both(element_type):
    model = binary_model("Div", element_type, 14)
    lowered = converted(model, 13, "Div-14→13 via in 32 bits")
    feeds = {"a": np.array([5, 0], dtype_of(element_type)), "b": np.array([0, 1], dtype_of(element_type))}
    for each in (model, lowered):
        with pytest.raises(Exception, match="Integer division by zero"):
            run_onnxruntime(each, feeds)


def test_wider_integer_and_float_arithmetic_is_re_versioned_as_it_is():
    for element_type in (TensorProto.INT32, TensorProto.FLOAT):
        result = lowering.lower_model(binary_model("Add", element_type, 14), target_opset=13, ops=[])
        assert dict(result.report.adapted) == {"Add-14→13": 1}


# -- Mod across version 28 -----------------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize("target", [27, 10])
@pytest.mark.parametrize("element_type", SMALL + WIDE, ids=lambda t: TensorProto.DataType.Name(t).lower())
@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_means_the_same_before_28(fmod, element_type, target):
    model = binary_model("Mod", element_type, 28, fmod=fmod)
    a, b = operand_pairs_without_zero_divisors(element_type)
    version = 13 if target >= 13 else 10
    adapted = f"Mod-28→{version} via fmod=0 kept or built from fmod=1" if fmod == 0 else f"Mod-28→{version}"
    lowered = converted(model, target, adapted)
    want = original_output(model, f"operand_pairs_without_zero_divisors({element_type})", {"a": a, "b": b})
    (got,) = run_onnxruntime(lowered, {"a": a, "b": b})
    assert_same_bits(got, want, f"Mod fmod={fmod} {dtype_of(element_type).name} 28→{target}")


@slow_but_a_sample()
@pytest.mark.parametrize("target", [27, 13])
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE])
def test_float_mod_with_fmod_0_is_built_from_fmod_1_below_28(element_type, target):
    """Version 28 defines fmod=0 on floats; below it the floored remainder is built from the
    truncated one (rules/versions/type_lists.py floored_remainder; every bit pattern is checked
    in tests/rules/versions/test_adapters_mod_bitshift.py). Here: the op is no longer the fmod=0 Mod."""
    lowered = lowering.lower(binary_model("Mod", element_type, 28), target_opset=target, ops=[])
    mods = [node for node in lowered.graph.node if node.op_type == "Mod"]
    assert len(mods) == 1 and [a.i for a in mods[0].attribute if a.name == "fmod"] == [1]


def test_float_mod_with_fmod_1_is_re_versioned():
    model = binary_model("Mod", TensorProto.FLOAT, 28, fmod=1)
    lowered = converted(model, 13, "Mod-28→13")
    values = np.array([5.5, -5.5, 0.0, -0.0, np.inf, np.nan, 1e-45, 3.0], np.float32)
    feeds = {"a": values, "b": values[::-1].copy()}
    assert_same_bits(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0], "fmod=1")


# -- bfloat16 through float: not exact in onnxruntime ----------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [13, 16, 21, 25])
def test_onnxruntime_casts_float_to_bfloat16_dropping_nan_payloads(opset):
    """Why no adapter carries bfloat16 in float (Where-16, Compress-28, ...): a Cast from float
    to bfloat16 makes every NaN the canonical quiet one of its sign (252 of the 65536 bfloat16
    patterns change), though Cast(Cast(x, float), bfloat16) alone gives every pattern back (the
    pair is dropped by onnxruntime's optimizer): an op between the two Casts keeps both."""
    every = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16)
    widened = (every.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    to_bfloat16 = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [65536])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [65536])],
        opset=opset,
    )
    (narrowed,) = run_onnxruntime(to_bfloat16, {"x": widened})
    changed = np.flatnonzero(narrowed.view(np.uint16) != every.view(np.uint16))
    assert changed.size == 252 and np.isnan(every[changed].astype(np.float32)).all()
    assert set(narrowed.view(np.uint16)[changed].tolist()) == {0x7FC0, 0xFFC0}
    round_trip = make_model(
        [
            helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Cast", ["f"], ["y"], to=TensorProto.BFLOAT16),
        ],
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [65536])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [65536])],
        opset=opset,
    )
    assert_same_bits(run_onnxruntime(round_trip, {"x": every})[0], every, "the Cast pair")


# -- refusals in words of ours, before onnx's converter --------------------------------------------


def refusal(model: onnx.ModelProto, target: int) -> str:
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=target, ops=[])
    message = str(refused.value)
    assert "Assertion" not in message and "version converter" not in message, message
    return message


def single(op_type, inputs, outputs, opset, **attributes) -> onnx.ModelProto:
    return make_model(
        [helper.make_node(op_type, [i.name for i in inputs], [o.name for o in outputs], name="node", **attributes)],
        inputs,
        outputs,
        opset=opset,
    )


def tensor(name: str, element_type: int, shape=("N",)) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, element_type, list(shape))


@pytest.mark.parametrize(
    ("op_type", "element_type", "version", "first", "target"),
    [
        ("ImageDecoder", TensorProto.UINT8, 20, 20, 19),
        ("BitCast", TensorProto.INT32, 26, 26, 21),
        ("CumProd", TensorProto.FLOAT, 26, 26, 21),
    ],
)
def test_an_op_newer_than_the_target_without_a_body_is_refused_by_name(op_type, element_type, version, first, target):
    if op_type == "BitCast":
        source, made = [tensor("x", TensorProto.FLOAT)], [tensor("y", element_type)]
        model = single("BitCast", source, made, version, to=element_type)
    elif op_type == "ImageDecoder":
        model = single(
            "ImageDecoder", [tensor("x", element_type)], [tensor("y", element_type, ("H", "W", "C"))], version
        )
    else:
        axis = helper.make_tensor_value_info("axis", TensorProto.INT64, [])
        model = single("CumProd", [tensor("x", element_type), axis], [tensor("y", element_type)], version)
    message = refusal(model, target)
    # BitCast and CumProd have rules (rules/bitcast.py, rules/cumprod.py), which say why they cannot serve the node
    if op_type == "CumProd":
        assert message.endswith(
            "CumProd-26 cannot be expressed at opset 21: the op does not exist there for this input, and it cannot "
            "be lowered (the length of axis 0 (the axis is no constant) of x is unknown)"
        )
        return
    if op_type == "BitCast":
        assert message.endswith(
            "BitCast-26 cannot be expressed at opset 21: the op does not exist there for this input, and it cannot "
            "be lowered (BitCast from float to int32 reinterprets bits no Cast keeps (only integers of one width, "
            "and bool to an 8-bit integer, are a Cast))"
        )
        return
    assert message.endswith(
        f"{op_type}-{version} does not exist at opset {target} (ONNX first defines it at {first}) and has no function "
        "body to write it with"
    )


def test_an_op_newer_than_the_target_with_a_body_is_not_said_to_lack_one():
    """Mish-22 handed to the converter step for opset 17 (Mish first comes at 18): the engine
    tries its body next, and adds why that fails where it does."""
    node = helper.make_node("Mish", ["x"], ["y"], name="mish")
    with pytest.raises(lowering.LoweringError) as refused:
        version_steps.convert_node(
            node,
            types={"x": helper.make_tensor_type_proto(TensorProto.FLOAT, ["N"])},
            constants={},
            source_opset=22,
            target_opset=17,
            ir_version=10,
            names=NameAllocator(),
            location="here",
        )
    assert str(refused.value) == "here: Mish-22 does not exist at opset 17 (ONNX first defines it at 18)"


def test_a_type_the_target_lacks_with_a_body_says_why_the_body_cannot_go_either():
    """(Celu-28 on bfloat16 goes to 13 by its body now, its Where moved by index:
    rules/versions/type_moves.py; Bernoulli's body holds RandomUniformLike, which lacks bfloat16 below 22.)"""
    model = single("Bernoulli", [tensor("x", TensorProto.BFLOAT16)], [tensor("y", TensorProto.BFLOAT16)], 22)
    message = refusal(model, 15)
    assert (
        "Bernoulli-22 cannot go to opset 15: its input 'x' is tensor(bfloat16), which Bernoulli-15 does not take"
        in (message)
    )
    assert "(it takes tensor(double|float|float16))" in message
    assert "has no function body" not in message and "nor by its function body" in message
    assert "RandomUniformLike-22 cannot go to opset 15: its input 'x' is tensor(bfloat16)" in message


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("model", "target", "words"),
    [
        (
            single("Equal", [tensor("x", TensorProto.STRING), tensor("z", TensorProto.STRING)],
                   [tensor("y", TensorProto.BOOL)], 19),
            10,  # (from 11, strings are compared by Unique: rules/versions/type_moves.py)
            "Equal-19 cannot go to opset 10: its input 'x' is tensor(string), which Equal-7 does not take (it takes "
            "tensor(bool|int32|int64))",
        ),
        (
            single("Pow", [tensor("x", TensorProto.INT32), tensor("e", TensorProto.UINT32)],
                   [tensor("y", TensorProto.INT32)], 15),
            11,
            "Pow-15 cannot go to opset 11: its input 'x' is tensor(int32), which Pow-7 does not take (it takes "
            "tensor(double|float|float16)); int32 to the power of uint32 is not the power in double",
        ),
        (
            single("QuantizeLinear", [tensor("x", TensorProto.BFLOAT16), tensor("s", TensorProto.BFLOAT16, ()),
                                      tensor("z", TensorProto.INT8, ())], [tensor("y", TensorProto.INT8)], 21),
            17,
            "QuantizeLinear-21 cannot go to opset 17: its input 'x' is tensor(bfloat16), which QuantizeLinear-13 "
            "does not take",  # the quantize adapter's check (require_types_taken), before the converter's
        ),
        (
            single("QuantizeLinear", [tensor("x", TensorProto.BFLOAT16), tensor("s", TensorProto.BFLOAT16, ())],
                   [tensor("y", TensorProto.INT16)], 21, output_dtype=TensorProto.INT16),
            17,
            "QuantizeLinear-21 quantizes to int16, which QuantizeLinear-13 cannot, and not to an 8- or 16-bit "
            "integer from a float or float16 x",  # (a float x goes as the formula, saturate(Round(x / s) + z))
        ),
    ],
    ids=["equal-string", "pow-integer-exponent", "bfloat16-x", "output-dtype"],  # (bfloat16 Unique goes by its rule)
)  # fmt: skip
def test_a_type_the_target_version_does_not_take_is_named(model, target, words):
    assert words in refusal(model, target)


def test_identity_of_a_sequence_is_refused_below_14():
    sequence = helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, None)
    model = single("Identity", [sequence], [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)], 16)
    assert (
        "Identity-16 cannot go to opset 13: its input 'x' is seq(tensor(float)), which Identity-13 does not take "
        "(it takes tensor(bfloat16|bool|complex128|complex64|double|float|float16|int16|int32|int64|int8|string|"
        "uint16|uint32|uint64|uint8))"
    ) in refusal(model, 13)


def test_integers_are_not_compared_through_float_below_9():
    """onnx's converter takes Greater-9 on integers to 8 by casting both inputs to float, which
    says 2⁵³ + 1 > 2⁵³ is false (and so for 2²⁴ + 1 in float): refused instead."""
    model = single(
        "Greater", [tensor("a", TensorProto.INT64), tensor("b", TensorProto.INT64)], [tensor("y", TensorProto.BOOL)], 9
    )
    converted_by_onnx = onnx.version_converter.convert_version(model, 8)
    assert [node.op_type for node in converted_by_onnx.graph.node] == ["Cast", "Cast", "Greater"]
    feeds = {"a": np.array([2**53 + 1, 2**24 + 1], np.int64), "b": np.array([2**53, 2**24], np.int64)}
    assert run_onnxruntime(model, feeds)[0].tolist() == [True, True]
    assert run_onnxruntime(converted_by_onnx, feeds)[0].tolist() == [False, False]
    assert "Greater-9 cannot go to opset 8: its input 'a' is tensor(int64), which Greater-7 does not take" in refusal(
        model, 8
    )
