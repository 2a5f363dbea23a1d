"""Version steps that add types, taken down exactly or refused: Pow-12+ with integer or mixed
types below 12 (the power in double, as onnxruntime's kernel takes it), BitShift-28 on signed
types below 28, QLinearMatMul-21 with float16 scales below 21.

Each converted model is run beside the original on grids of edge values (every bit pattern where
small enough) and compared bit for bit, in onnxruntime where it has a kernel for the original,
else in onnx.reference."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    checked_conversion,
    make_model,
    refusal,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime, run_reference

# -- Pow ---------------------------------------------------------------------------------------------


def output_shape(base_shape, exponent_shape, exponent):
    if exponent is not None:
        exponent_shape = list(np.shape(exponent))
    if exponent_shape is None or not all(isinstance(d, int) for d in (*base_shape, *exponent_shape)):
        return [f"z{index}" for index in range(max(len(base_shape), len(exponent_shape or [])))]
    return list(np.broadcast_shapes(tuple(base_shape), tuple(exponent_shape)))


def pow_model(base_type: int, exponent_type: int, base_shape, exponent_shape, opset: int = 15, exponent=None):
    inputs = [helper.make_tensor_value_info("x", base_type, base_shape)]
    initializers = []
    if exponent is None:
        inputs.append(helper.make_tensor_value_info("y", exponent_type, exponent_shape))
    else:
        initializers.append(onnx.numpy_helper.from_array(np.asarray(exponent, floats.numpy_dtype(exponent_type)), "y"))
    return make_model(
        [helper.make_node("Pow", ["x", "y"], ["z"], name="pow")],
        inputs,
        [helper.make_tensor_value_info("z", base_type, output_shape(base_shape, exponent_shape, exponent))],
        opset=opset,
        initializer=initializers,
    )


def grid(element_type: int) -> np.ndarray:
    """Edge values and ordinary ones of a type: ±0, ±1, ±inf, NaNs, extremes, subnormals, values
    whose squares and cubes overflow 32 and 64 bits or leave double's 53 bits, exponents past 2²⁴
    and 2⁵³ of both parities."""
    dtype = floats.numpy_dtype(element_type)
    rng = np.random.default_rng(element_type)
    if np.issubdtype(dtype, np.floating):
        info = np.finfo(dtype)
        special = [0.0, -0.0, 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.5, -1.5, 10, -10, 0.1, 1e-3, 7, 1e10]
        special += [np.inf, -np.inf, np.nan, -np.nan, info.max, -info.max, info.tiny, info.smallest_subnormal]
        special += [-info.smallest_subnormal, 1 + info.eps, 1 - info.epsneg, -(1 + info.eps)]
        special += [2.0**24, 2.0**24 + 2, 2.0**31, 2.0**32, 2.0**53, 2.0**53 + 2, 2.0**63, 2.0**64]
        ordinary = rng.standard_normal(200) * rng.choice([1, 3, 10, 100], 200)
        values = np.array(special + list(ordinary), dtype=np.float64)
        with np.errstate(over="ignore"):
            return values.astype(dtype)
    info = np.iinfo(dtype)
    special = [0, 1, -1, 2, -2, 3, -3, 4, 5, 7, 10, -10, 31, 32, 63, 64, 1000, 1291, 1292, 46340, 46341]
    special += [2097151, 2097152, 2**24 + 1, 2**31 - 1, -(2**31), 2**31, 2**32, 3037000499, 3037000500]
    special += [2**53 + 1, -(2**53) - 1, 2**62, int(info.max), int(info.min), int(info.max) - 1]
    ordinary = rng.integers(max(-40, int(info.min)), 40, 150)
    return np.array([v for v in special + list(ordinary) if info.min <= v <= info.max], dtype=dtype)


KERNEL_PAIRS = [
    (TensorProto.FLOAT, TensorProto.INT32),
    (TensorProto.FLOAT, TensorProto.INT64),
    (TensorProto.FLOAT, TensorProto.DOUBLE),
    (TensorProto.DOUBLE, TensorProto.INT32),
    (TensorProto.DOUBLE, TensorProto.INT64),
    (TensorProto.DOUBLE, TensorProto.FLOAT),
    (TensorProto.INT32, TensorProto.INT32),
    (TensorProto.INT32, TensorProto.INT64),
    (TensorProto.INT32, TensorProto.FLOAT),
    (TensorProto.INT32, TensorProto.DOUBLE),
    (TensorProto.INT64, TensorProto.INT64),
    (TensorProto.INT64, TensorProto.INT32),
    (TensorProto.INT64, TensorProto.FLOAT),
    (TensorProto.INT64, TensorProto.DOUBLE),
]


def name(element_type: int) -> str:
    return TensorProto.DataType.Name(element_type).lower()


@slow_but_a_sample()
@pytest.mark.parametrize("pair", KERNEL_PAIRS, ids=lambda p: f"{name(p[0])}^{name(p[1])}")
@pytest.mark.parametrize("target", [11, 9])
def test_pow_every_pair_of_grid_values_in_onnxruntime(pair, target):
    """Every base of the grid to every exponent of the grid (element by element: the kernel's
    power in double), bit for bit against onnxruntime's Pow-15."""
    base_type, exponent_type = pair
    bases, exponents = np.meshgrid(grid(base_type), grid(exponent_type), indexing="ij")
    feeds = {"x": bases.reshape(-1), "y": exponents.reshape(-1)}
    model = pow_model(base_type, exponent_type, [feeds["x"].size], [feeds["y"].size])
    want = run_onnxruntime(model, feeds)[0]
    got = run_onnxruntime(checked_conversion(model, target), feeds)[0]
    assert_same_bits(got, want, f"{name(base_type)}^{name(exponent_type)} to {target}")


# (base shape, exponent shape): the exponent one value per innermost span or not
SHAPES = [
    ([40, 4], [40, 1]),  # per span
    ([4, 40], [4, 1]),  # per span
    ([2, 30, 3], [2, 1, 1]),  # per span (the last two axes merged)
    ([2, 30, 1], [2, 1, 1]),  # per span (the trailing 1 is no axis)
    ([40, 4], [1, 1]),  # per span, a scalar exponent
    ([40], []),  # per span, a 0-D exponent
    ([40, 4], [1, 4]),  # element by element
    ([40, 1], [40, 4]),  # the base per span: the power in double
    ([1], [40]),
    ([1, 1], [1]),  # one element: the power in double
]


@slow_but_a_sample()
@pytest.mark.parametrize("pair", KERNEL_PAIRS, ids=lambda p: f"{name(p[0])}^{name(p[1])}")
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_pow_exponent_two_and_three_per_span(pair, shapes):
    """onnxruntime multiplies in T for an exponent of 2 or 3 taken once per span (x·x·x rounds
    twice in float, integer products wrap): the lowered model picks those products there."""
    base_type, exponent_type = pair
    base_shape, exponent_shape = shapes
    model = pow_model(base_type, exponent_type, base_shape, exponent_shape)
    result = checked_conversion(model, 11)
    values = grid(base_type)
    bases = np.resize(values, base_shape).astype(values.dtype)
    want_run, got_run = OnnxruntimeRunner(model), OnnxruntimeRunner(result)  # one session each for every feed
    for exponent in (2, 3, -1, 0, 5):
        feeds = {"x": bases, "y": np.full(exponent_shape, exponent, floats.numpy_dtype(exponent_type))}
        want = want_run(feeds)[0]
        assert_same_bits(got_run(feeds)[0], want, f"y = {exponent}, {shapes}")
    mixed = {"x": bases, "y": np.resize(np.array([2, 3, -2, 1], floats.numpy_dtype(exponent_type)), exponent_shape)}
    assert_same_bits(got_run(mixed)[0], want_run(mixed)[0], f"mixed, {shapes}")


@pytest.mark.parametrize("exponent_type", [TensorProto.INT32, TensorProto.INT64, TensorProto.DOUBLE], ids=name)
def test_pow_cube_of_negative_zero_per_span_keeps_its_sign_in_every_runtime(exponent_type):
    """x·x·x of -0 (and of a negative that underflows) is -0: the lowered graph says so by ONNX's
    own semantics (onnx.reference), not only where onnxruntime's Where drops the sign of a -0."""
    model = pow_model(TensorProto.FLOAT, exponent_type, [2, 3], [2, 1])
    result = checked_conversion(model, 11)
    feeds = {
        "x": np.array([[-0.0, 2.0, -1e-20], [-0.0, 0.0, 3.0]], np.float32),
        "y": np.array([[3], [2]], floats.numpy_dtype(exponent_type)),
    }
    want = run_onnxruntime(model, feeds)[0]
    assert np.signbit(want[0, [0, 2]]).all()
    assert_same_bits(run_onnxruntime(result, feeds)[0], want, "onnxruntime")
    assert_same_bits(run_reference(result, feeds)[0], want, "onnx.reference")


@slow_but_a_sample()
@pytest.mark.parametrize(
    "pair",
    [
        (TensorProto.FLOAT, TensorProto.UINT32),
        (TensorProto.FLOAT, TensorProto.UINT64),
        (TensorProto.DOUBLE, TensorProto.UINT8),
        (TensorProto.DOUBLE, TensorProto.INT16),
        (TensorProto.DOUBLE, TensorProto.UINT64),
    ],
    ids=lambda p: f"{name(p[0])}^{name(p[1])}",
)
def test_pow_exponents_onnxruntime_lacks_in_onnx_reference(pair):
    """Exponent types onnxruntime's kernel does not run: numpy's power promotes the pair to
    double, as the lowered model does (compared in onnx.reference, bit for bit). In onnxruntime
    the result gives the bits of onnxruntime's own Pow of the pair as doubles: that kernel departs
    from numpy's power on some machines (x·x for x², a NaN's sign dropped: AVX-512 here)."""
    base_type, exponent_type = pair
    exponents = np.array([0, 1, 2, 3, 5, 7, 64, 127, 255], floats.numpy_dtype(exponent_type))
    if np.iinfo(exponents.dtype).max > 2**40:
        exponents = np.concatenate([exponents, np.array([2**53 + 1, 2**63 + 1, 2**64 - 1], exponents.dtype)])
    bases, exponents = np.meshgrid(grid(base_type), exponents, indexing="ij")
    feeds = {"x": bases.reshape(-1), "y": exponents.reshape(-1)}
    model = pow_model(base_type, exponent_type, [feeds["x"].size], [feeds["y"].size])
    result = checked_conversion(model, 11)
    want = run_reference(model, feeds)[0]
    assert_same_bits(run_reference(result, feeds)[0], want, "onnx.reference")
    as_doubles = {name: values.astype(np.float64) for name, values in feeds.items()}
    doubles = pow_model(TensorProto.DOUBLE, TensorProto.DOUBLE, [feeds["x"].size], [feeds["y"].size])
    with np.errstate(over="ignore"):  # (a double past float's range is inf, as Cast makes it)
        runtime_pow = run_onnxruntime(doubles, as_doubles)[0].astype(want.dtype)
    assert_same_bits(run_onnxruntime(result, feeds)[0], runtime_pow, "onnxruntime")


def test_pow_constant_exponent_without_two_or_three_needs_no_shapes():
    model = pow_model(TensorProto.INT32, TensorProto.INT64, ["n", "m"], None, exponent=[5])
    result = checked_conversion(model, 11)
    assert [n.op_type for n in result.graph.node if n.op_type != "Constant"] == ["Cast", "Cast", "Pow", "Cast"]
    feeds = {"x": grid(TensorProto.INT32).reshape(-1, 1)}
    assert_same_bits(run_onnxruntime(result, feeds)[0], run_onnxruntime(model, feeds)[0])


@slow_but_a_sample()
@pytest.mark.parametrize("base_type", [TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64], ids=name)
@pytest.mark.parametrize(
    ("base_shape", "exponent"),
    [([40, 4], [[3]]), ([40, 4], 2), ([1, 4], np.full([40, 1], 3)), ([40, 4], [[3], [2], [5], [-1]] * 10)],
    ids=["3", "2", "3 broadcast", "mixed"],
)
def test_pow_constant_exponent_per_span(base_type, base_shape, exponent):
    model = pow_model(base_type, TensorProto.INT64, base_shape, None, exponent=exponent)
    result = checked_conversion(model, 11)
    values = grid(base_type)
    feeds = {"x": np.resize(values, base_shape).astype(values.dtype)}
    assert_same_bits(run_onnxruntime(result, feeds)[0], run_onnxruntime(model, feeds)[0])


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("model", "phrase"),
    [
        (pow_model(TensorProto.FLOAT, TensorProto.INT32, ["n"], ["n"]), "not known statically"),
        (pow_model(TensorProto.INT64, TensorProto.INT32, ["n", 3], [1]), "not known statically"),
        (pow_model(TensorProto.INT32, TensorProto.UINT32, [3], [3]), "is not the power in double"),
        (pow_model(TensorProto.FLOAT, TensorProto.INT8, [3], [3]), "is not the power in double"),
        (pow_model(TensorProto.FLOAT16, TensorProto.INT32, [3], [3]), "is not the power in double"),
        (pow_model(TensorProto.FLOAT, TensorProto.FLOAT16, [3], [3]), "is not the power in double"),
        (pow_model(TensorProto.INT32, TensorProto.FLOAT, [4, 3], [4, 1]), "lacks Equal"),
    ],
)
def test_pow_refusals(model, phrase):
    target = 9 if phrase == "lacks Equal" else 11
    message = refusal(model, target)
    assert phrase in message and f"cannot go to opset {target}" in message, message


# -- BitShift-28 on int64, right ----------------------------------------------------------------------


def shift_model(direction: str, shape, opset: int = 28) -> onnx.ModelProto:
    return make_model(
        [helper.make_node("BitShift", ["x", "y"], ["z"], name="shift", direction=direction)],
        [helper.make_tensor_value_info(v, TensorProto.INT64, shape) for v in ("x", "y")],
        [helper.make_tensor_value_info("z", TensorProto.INT64, shape)],
        opset=opset,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17, 21, 27])
def test_int64_right_shift_is_arithmetic_for_every_amount(target):
    """Edge values and random ones, every amount in [-70, 130] and the extremes: against
    onnxruntime's BitShift-28 and onnx.reference's (floor(x / 2^s); -1 or 0 out of range)."""
    info = np.iinfo(np.int64)
    edges = [info.min, info.min + 1, -(2**62), -(2**32) - 1, -256, -3, -2, -1, 0, 1, 2, 3, 255, 2**62, info.max]
    rng = np.random.default_rng(64)
    values = np.concatenate([np.array(edges, np.int64), rng.integers(info.min, info.max, 300, np.int64)])
    amounts = np.array([*range(-70, 131), info.min, info.max, info.min + 1], np.int64)
    x, y = np.tile(values, amounts.size), np.repeat(amounts, values.size)
    model = shift_model("RIGHT", [x.size])
    result = checked_conversion(model, target)
    assert not any(n.op_type == "BitShift" and n.input[0] == "x" for n in result.graph.node)
    feeds = {"x": x, "y": y}
    inside = (y >= 0) & (y < 64)
    expected = np.where(inside, x >> np.where(inside, y, 0), np.where(x < 0, -1, 0))
    assert_same_bits(run_onnxruntime(model, feeds)[0], expected, "onnxruntime's BitShift-28")
    assert_same_bits(run_reference(model, feeds)[0], expected, "onnx.reference's BitShift-28")
    assert_same_bits(run_onnxruntime(result, feeds)[0], expected, f"lowered to {target}")


# -- QLinearMatMul-21 with float16 scales --------------------------------------------------------------

QUANTIZED = {TensorProto.UINT8: np.uint8, TensorProto.INT8: np.int8}


def qlinear_matmul_model(scale_type, a_type, b_type, a_shape, b_shape, b_scale_shape=()) -> onnx.ModelProto:
    names = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
    types = [a_type, scale_type, a_type, b_type, scale_type, b_type, scale_type, a_type]
    shapes = [a_shape, [], [], b_shape, list(b_scale_shape), list(b_scale_shape), [], []]
    output = list(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2]))) + [a_shape[-2], b_shape[-1]]
    return make_model(
        [helper.make_node("QLinearMatMul", names, ["y"], name="qmm")],
        [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(names, types, shapes, strict=True)],
        [helper.make_tensor_value_info("y", a_type, output)],
        opset=21,
    )


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 20])
@pytest.mark.parametrize(
    ("a_type", "b_type"),
    [
        (TensorProto.UINT8, TensorProto.UINT8),
        (TensorProto.UINT8, TensorProto.INT8),
        (TensorProto.INT8, TensorProto.INT8),
    ],
    ids=["u8u8", "u8i8", "i8i8"],
)
@pytest.mark.parametrize(
    ("a_shape", "b_shape", "b_scale_shape"),
    [([5, 7], [7, 6], ()), ([2, 5, 7], [2, 7, 6], ()), ([5, 7], [7, 6], (6,))],
    ids=["2D", "3D", "per column"],
)
@pytest.mark.filterwarnings("ignore:overflow encountered")  # scales past float16's range: inf, on purpose
def test_float16_scales_cast_to_float_as_onnxruntime_runs_them(target, a_type, b_type, a_shape, b_shape, b_scale_shape):
    """Random products and scales over the float16 range (subnormal to large, and 0, inf, NaN
    scales), bit for bit against onnxruntime's QLinearMatMul-21."""
    model = qlinear_matmul_model(TensorProto.FLOAT16, a_type, b_type, a_shape, b_shape, b_scale_shape)
    result = checked_conversion(model, target)
    rng = np.random.default_rng(21)
    a_dtype, b_dtype = QUANTIZED[a_type], QUANTIZED[b_type]

    def integers(dtype, shape):
        info = np.iinfo(dtype)
        return np.asarray(rng.integers(info.min, info.max, shape, endpoint=True), dtype)

    specials = np.array([0.0, np.inf, np.nan, 6.0e-8, 6.1e-5, 65504.0, 1.0], np.float16)
    want_run, got_run = OnnxruntimeRunner(model), OnnxruntimeRunner(result)  # one session each for every trial
    for trial in range(120):
        scales = np.exp(rng.uniform(-12, 4, 3)).astype(np.float16)
        if trial < specials.size * 3:
            scales[trial % 3] = specials[trial // 3]
        feeds = {
            "a": integers(a_dtype, a_shape),
            "b": integers(b_dtype, b_shape),
            "a_zero_point": integers(a_dtype, []),
            "b_zero_point": integers(b_dtype, b_scale_shape),
            "y_zero_point": integers(a_dtype, []),
            "a_scale": np.array(scales[0]),
            "b_scale": np.asarray(scales[1] * np.exp(rng.uniform(-1, 1, b_scale_shape)), np.float16),
            "y_scale": np.array(scales[2] * np.float16(40)),
        }
        want = want_run(feeds)[0]
        assert_same_bits(got_run(feeds)[0], want, f"trial {trial}")


def test_qlinear_matmul_of_float8_is_refused():
    model = qlinear_matmul_model(
        TensorProto.FLOAT16, TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FN, [2, 3], [3, 2]
    )
    message = refusal(model, 20)
    assert "'a' is tensor(float8e4m3fn)" in message and "cannot go to opset 20" in message, message


def test_qlinear_matmul_of_bfloat16_scales_goes_down_by_its_rule():
    """No adapter takes bfloat16 scales below 21 bit for bit; the rule (rules/integer_products.py)
    computes the op within its stated tolerance, one step, at any opset."""
    model = qlinear_matmul_model(TensorProto.BFLOAT16, TensorProto.UINT8, TensorProto.UINT8, [2, 3], [3, 2])
    result = lowering.lower_model(model, target_opset=20, ops=[])
    assert result.report.rewritten == {"QLinearMatMul-21": 1}
    assert "QLinearMatMul" not in {node.op_type for node in result.model.graph.node}
    rng = np.random.default_rng(21)
    bfloat16 = floats.numpy_dtype(TensorProto.BFLOAT16)
    feeds = {
        "a": rng.integers(0, 256, [2, 3]).astype(np.uint8),
        "a_scale": np.array(0.03, bfloat16),
        "a_zero_point": np.array(7, np.uint8),
        "b": rng.integers(0, 256, [3, 2]).astype(np.uint8),
        "b_scale": np.array(0.05, bfloat16),
        "b_zero_point": np.array(130, np.uint8),
        "y_scale": np.array(0.2, bfloat16),
        "y_zero_point": np.array(100, np.uint8),
    }
    (got,) = run_onnxruntime(result.model, feeds)
    want = rule_for("", "QLinearMatMul").reference(*feeds.values())
    assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1  # (the stated tolerance)
    assert np.count_nonzero((got > 0) & (got < 255)) > 0


# -- MelWeightMatrix-17 of constant inputs ------------------------------------------------------------

MEL_INPUTS = ["num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"]
MEL_TYPES = [TensorProto.INT64, TensorProto.INT64, TensorProto.INT64, TensorProto.FLOAT, TensorProto.FLOAT]


def mel_model(values: list | None, output_datatype: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """MelWeightMatrix-17 with its inputs as initializers (``values``), or fed (None)."""
    node = helper.make_node("MelWeightMatrix", MEL_INPUTS, ["matrix"], name="mel", output_datatype=output_datatype)
    inputs = [helper.make_tensor_value_info(n, t, []) for n, t in zip(MEL_INPUTS, MEL_TYPES, strict=True)]
    initializers = []
    if values is not None:
        dtypes = [np.int64, np.int64, np.int64, np.float32, np.float32]
        initializers = [
            onnx.numpy_helper.from_array(np.array(v, d), n) for n, v, d in zip(MEL_INPUTS, values, dtypes, strict=True)
        ]
        inputs = []
    return make_model(
        [node],
        inputs,
        [helper.make_tensor_value_info("matrix", output_datatype, ["bins", "mels"])],
        opset=17,
        initializer=initializers,
    )


def mel_configurations() -> list[list]:
    rng = np.random.default_rng(17)
    chosen = [[8, 16, 8192, 0.0, 4096.0], [1, 2, 100, 0.0, 50.0], [40, 512, 16000, 20.0, 8000.0], [3, 8, 8, 1.0, 4.0]]
    for _ in range(60):
        rate = int(rng.choice([8000, 16000, 22050, 44100, 48000]))
        low = float(rng.uniform(0, 500))
        chosen.append(
            [
                int(rng.integers(1, 80)),
                int(rng.choice([16, 64, 256, 400, 512, 1024])),
                rate,
                low,
                float(rng.uniform(1000, rate / 2)),
            ]
        )
    return chosen


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 13])
def test_constant_mel_weight_matrix_computed_once(target):
    """Bit for bit with onnx.reference's MelWeightMatrix-17 on 64 configurations, in float,
    float16 and double, and with onnxruntime's in float (its only kernel)."""
    for index, values in enumerate(mel_configurations()):
        output_type = [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE][index % 3]
        model = mel_model(values, output_type)
        result = checked_conversion(model, target)
        assert [n.op_type for n in result.graph.node] == ["Constant"]
        got = run_onnxruntime(result, {})[0]
        if output_type == TensorProto.FLOAT:  # onnxruntime's kernel gives float only
            assert_same_bits(got, run_onnxruntime(model, {})[0], f"{values} in onnxruntime")
        assert_same_bits(got, run_reference(model, {})[0], f"{values} in onnx.reference")


def test_mel_weight_matrix_of_run_time_inputs_refused():
    message = refusal(mel_model(None), 13)
    assert "given at run time" in message and "log1p and expm1" in message, message


@pytest.mark.parametrize(
    "values",
    [[4, 16, 0, 0.0, 50.0], [4, 16, 100, 60.0, 50.0], [4, 16, 100, 0.0, float("nan")]],
    ids=["no sample rate", "lower edge above upper", "NaN edge"],
)
def test_mel_weight_matrix_of_constants_the_op_fails_on_refused_in_our_words(values):
    """Constant inputs onnxruntime's kernel fails on (and onnx.reference's algorithm too): a
    refusal naming the op, not the reference's IndexError."""
    message = refusal(mel_model(values), 13)
    assert "MelWeightMatrix" in message and "cannot be computed" in message and "opset 13" in message, message


def test_pow_of_unknown_types_is_left_as_any_node():
    """A Pow in a branch whose values carry no types is re-versioned as before (float^float)."""
    x, c = (
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
    )
    then_branch = helper.make_graph(
        [helper.make_node("Pow", ["x", "x"], ["p"])],
        "then",
        [],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [3])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["q"])],
        "else",
        [],
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [3])],
    )
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)
    model = make_model([node], [c, x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], opset=15)
    feeds = {"c": np.array(True), "x": np.array([2.0, -0.5, 3.0], np.float32)}
    assert_same_bits(run_onnxruntime(checked_conversion(model, 11), feeds)[0], run_onnxruntime(model, feeds)[0])
