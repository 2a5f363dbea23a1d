"""DFT (17, 20) and STFT (17), ops without a function body, lowered by their rule (rules/dft.py)
when converting below 17: every ONNX backend case at 11 and 13 against its expected outputs,
random signals against numpy's float64 FFT within the stated tolerance (odd and even lengths,
real and complex, inverse, one-sided, dft_length shorter and longer, axes inner and next to
last, constant and run-time axes, steps and frame lengths), and what is refused and why."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.dft import DFT_TOLERANCE, LARGEST_CONSTANT, dft_matrix, dft_reference, stft_reference, unit_circle
from onnx import TensorProto, helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import fed_data_sets, node_cases, sweep_case

import lowering
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime

OPS = ("DFT", "STFT")
BACKEND_CASES = {case.name: case for case in node_cases() if any(node.op_type in OPS for node in case.model.graph.node)}
TARGETS = (11, 13)
FLOAT_TYPES = {  # the type, and the opset it is converted to (bfloat16 has no Cast below 13)
    "float": (TensorProto.FLOAT, 11),
    "double": (TensorProto.DOUBLE, 11),
    "float16": (TensorProto.FLOAT16, 11),
    "bfloat16": (TensorProto.BFLOAT16, 13),
}


def assert_within(got: np.ndarray, want: np.ndarray, element_type: int, where: str = "") -> None:
    """Within the rule's stated tolerance for the type (shapes alike)."""
    assert got.shape == want.shape, f"{where}: shape {got.shape}, expected {want.shape}"
    tolerance = DFT_TOLERANCE[element_type]
    mismatches = tolerance.mismatches(got, want)
    assert not mismatches.any(), (
        f"{where}: {int(mismatches.sum())} of {got.size} beyond rtol {tolerance.rtol}, atol {tolerance.atol}; "
        f"largest difference {np.abs(got.astype(np.float64) - want.astype(np.float64)).max()}"
    )


def lowered_ops(model: onnx.ModelProto) -> set[str]:
    found = set()
    for node in model.graph.node:
        found.add(node.op_type)
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                found |= lowered_ops(onnx.helper.make_model(attribute.g))
    return found


def numpy_type(element_type: int):
    return ml_dtypes.bfloat16 if element_type == TensorProto.BFLOAT16 else helper.tensor_dtype_to_np_dtype(element_type)


# -- the backend cases -------------------------------------------------------------------------------


def test_backend_cases_are_found():
    assert sum(name.startswith("test_dft") for name in BACKEND_CASES) >= 10
    assert sum(name.startswith("test_stft") for name in BACKEND_CASES) >= 2


PAIRS = [(target, name) for name in sorted(BACKEND_CASES) for target in TARGETS]


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_backend_case_converts_within_the_tolerance(target, name):
    case = BACKEND_CASES[name]
    lowered = lowering.lower(case.model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert not lowered_ops(lowered) & set(OPS)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(lowered, feeds)
        assert_within(got, expected[0], TensorProto.FLOAT, name)


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_corpus_pair_converts(target, name):
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong


@slow_but_a_sample()
@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered_on_request(name):
    case = BACKEND_CASES[name]
    (op_type,) = {node.op_type for node in case.model.graph.node} & set(OPS)
    result = lowering.lower_model(case.model, ops=[op_type])
    assert result.report.complete, result.report.lines()
    assert op_type not in lowered_ops(result.model)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(result.model, feeds)
        assert_within(got, expected[0], TensorProto.FLOAT, name)


def test_dft_20_goes_to_17_by_its_adapter_where_the_axis_is_constant_and_by_the_rule_where_not():
    case = BACKEND_CASES["test_dft_axis"]
    constant_axis = onnx.ModelProto()
    constant_axis.CopyFrom(case.model)
    axis_value = np.asarray(case.data_sets[0][0][1])
    graph = constant_axis.graph
    graph.initializer.append(onnx.numpy_helper.from_array(np.asarray(axis_value), "axis"))
    del graph.input[1]
    moved = lowering.lower(constant_axis, target_opset=17, ops=[])
    (node,) = moved.graph.node
    assert node.op_type == "DFT" and helper.get_attribute_value(node.attribute[0]) == int(axis_value)
    decomposed = lowering.lower(case.model, target_opset=17, ops=[])
    assert "DFT" not in lowered_ops(decomposed) and "If" in lowered_ops(decomposed)


# -- the coefficients ----------------------------------------------------------------------------------


def test_coefficients_are_exact_at_quarter_turns_and_symmetric():
    for n in (1, 2, 3, 4, 8, 12, 17, 64, 1000):
        turns = np.arange(3 * n)
        cos, sin = unit_circle(turns, n)
        assert np.allclose(cos, np.cos(2 * np.pi * turns / n), atol=1e-13)
        assert np.allclose(sin, np.sin(2 * np.pi * turns / n), atol=1e-13)
        quarter = (4 * turns) % n == 0
        assert set(np.abs(cos[quarter])) <= {0.0, 1.0} and set(np.abs(sin[quarter])) <= {0.0, 1.0}
        assert np.array_equal(cos[1:n], cos[1:n][::-1]) and np.array_equal(sin[1:n], -sin[1:n][::-1])


def test_matrix_is_the_transform():
    rng = np.random.default_rng(5)
    for length, n in [(7, 7), (8, 5), (5, 8), (1, 1)]:
        x = rng.standard_normal((3, length)) + 1j * rng.standard_normal((3, length))
        pairs = np.stack([x.real, x.imag], -1).reshape(3, -1)
        y = (pairs @ dft_matrix(length, 2, n, inverse=0, onesided=0)).reshape(3, n, 2)
        assert np.allclose(y[..., 0] + 1j * y[..., 1], np.fft.fft(x, n=n), atol=1e-12)


# -- random signals: DFT -------------------------------------------------------------------------------

LENGTHS = (1, 2, 5, 8, 17, 64)
MODES = [  # (inverse, onesided, channels)
    (0, 0, 1), (0, 0, 2), (1, 0, 1), (1, 0, 2), (0, 1, 1), (1, 1, 2),
]  # fmt: skip


def dft_model(element_type: int, shape, *, opset=20, axis=None, dft_length=None, run_time=(), **attributes):
    """``y = DFT(x, dft_length, axis)``: dft_length and DFT-20's axis constants (initializers),
    or graph inputs where named in ``run_time``; DFT-17's axis an attribute."""
    inputs, initializers, names = [helper.make_tensor_value_info("x", element_type, shape)], [], ["x", "", ""]
    given = {"dft_length": dft_length, "axis": axis if opset == 20 else None}
    for position, (name, value) in enumerate(given.items(), start=1):
        if name in run_time:
            inputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, []))
            names[position] = name
        elif value is not None:
            initializers.append(helper.make_tensor(name, TensorProto.INT64, [], [value]))
            names[position] = name
    while not names[-1]:
        names.pop()
    if opset == 17 and axis is not None:
        attributes["axis"] = axis
    node = helper.make_node("DFT", names, ["y"], name="dft_node", **attributes)
    output = helper.make_tensor_value_info("y", element_type, [f"d{k}" for k in range(len(shape))])
    return make_model([node], inputs, [output], opset=opset, initializer=initializers)


def signal(element_type: int, shape, seed: int = 0) -> np.ndarray:
    values = np.random.default_rng(seed).standard_normal(shape)
    return values.astype(numpy_type(element_type))


def run_lowered(model: onnx.ModelProto, target: int, feeds: dict) -> np.ndarray:
    lowered = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert not lowered_ops(lowered) & set(OPS)
    (got,) = run_onnxruntime(lowered, feeds)
    return got


@pytest.mark.slow
@pytest.mark.parametrize("type_name", sorted(FLOAT_TYPES))
@pytest.mark.parametrize(("inverse", "onesided", "channels"), MODES)
def test_dft_random_signals_within_the_tolerance(type_name, inverse, onesided, channels):
    element_type, target = FLOAT_TYPES[type_name]
    for length in LENGTHS:
        if inverse and onesided and length == 1:
            continue  # IRFFT's default length 2 (m - 1) is 0 there
        for dft_length in (None, max(1, length // 2), length + 3):
            for axis, shape in [(1, [3, length, 4, channels]), (-2, [2, 3, length, channels])]:
                model = dft_model(element_type, shape, axis=axis, dft_length=dft_length, inverse=inverse,
                                  onesided=onesided)  # fmt: skip
                x = signal(element_type, shape, seed=length)
                got = run_lowered(model, target, {"x": x})
                exact = dft_reference(x.astype(np.float64), dft_length, axis, inverse=inverse, onesided=onesided)
                where = f"length {length} dft_length {dft_length} axis {axis}"
                assert_within(got, exact.astype(x.dtype), element_type, where)
                assert_within(got, dft_reference(x, dft_length, axis, inverse=inverse, onesided=onesided),
                              element_type, where)  # fmt: skip


def test_dft_17_and_20_default_axes():
    """DFT-17 without an axis attribute transforms axis 1, DFT-20 without an axis input -2."""
    shape = [2, 5, 7, 3, 1]
    x = signal(TensorProto.FLOAT, shape)
    for opset, axis in ((17, 1), (20, -2)):
        got = run_lowered(dft_model(TensorProto.FLOAT, shape, opset=opset), 11, {"x": x})
        assert_within(got, dft_reference(x, None, axis), TensorProto.FLOAT, f"DFT-{opset}")


def test_dft_run_time_axis_takes_every_valid_axis_and_fails_on_the_others():
    shape = [3, 6, 5, 2]
    model = dft_model(TensorProto.FLOAT, shape, run_time=("axis",), inverse=1, onesided=1)
    lowered = lowering.lower(model, target_opset=11, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert "If" in lowered_ops(lowered) and "DFT" not in lowered_ops(lowered)
    x = signal(TensorProto.FLOAT, shape)
    for axis in range(-6, 6):
        feeds = {"x": x, "axis": np.array(axis, np.int64)}
        if -4 <= axis <= -2 or 0 <= axis <= 2:
            (got,) = run_onnxruntime(lowered, feeds)
            assert_within(got, dft_reference(x, None, axis, inverse=1, onesided=1), TensorProto.FLOAT, f"axis {axis}")
        else:
            with pytest.raises(Exception, match="Gather"):
                run_onnxruntime(lowered, feeds)
            with pytest.raises(Exception):  # noqa: B017 (onnxruntime's own kernel refuses it too)
                run_onnxruntime(model, feeds)


def _no_empty_matrix_nor_division_by_zero(model: onnx.ModelProto) -> bool:
    """Whether no graph of ``model`` holds a constant of no element or a Div (OpenVINO 2026.4
    reads a Constant of no element as a scalar; TVM 0.27 refuses to fold a division by 0)."""
    for graph in [model.graph, *(a.g for n in model.graph.node for a in n.attribute if a.type == a.GRAPH)]:
        tensors = [*graph.initializer, *(a.t for n in graph.node if n.op_type == "Constant" for a in n.attribute)]
        if any(0 in t.dims for t in tensors) or any(n.op_type == "Div" for n in graph.node):
            return False
    return True


def test_an_irfft_of_no_bins_is_an_empty_transform_as_onnxruntimes():
    """An IRFFT along an axis of length 1 (a default length 0; an If's branch where the axis is
    fed at run time, or the axis given) gives no bins, as onnxruntime's kernel does: Slices of
    x, no matrix of no columns and no division by 0. dft_length 0, which onnxruntime's kernel
    refuses, is not lowered."""
    shape = [1, 6, 5, 2]  # IRFFT along axis 0 (length 1): a default length 0
    model = dft_model(TensorProto.FLOAT, shape, run_time=("axis",), inverse=1, onesided=1)
    feeds = {"x": signal(TensorProto.FLOAT, shape), "axis": np.array(0, np.int64)}
    got = run_lowered(model, 11, feeds)
    (native,) = run_onnxruntime(model, feeds)
    assert got.shape == native.shape == (0, 6, 5, 1)
    given = dft_model(TensorProto.FLOAT, shape, axis=0, inverse=1, onesided=1)
    lowered = lowering.lower(given, ops=["DFT"])
    onnx.checker.check_model(lowered, full_check=True)
    assert "DFT" not in lowered_ops(lowered) and _no_empty_matrix_nor_division_by_zero(lowered)
    (got,) = run_onnxruntime(lowered, {"x": feeds["x"]})
    assert got.shape == run_onnxruntime(given, {"x": feeds["x"]})[0].shape == (0, 6, 5, 1)
    for element_type in (TensorProto.FLOAT16, TensorProto.BFLOAT16):  # (computed in float32, cast back)
        x = signal(element_type, shape)
        for run_time in ((), ("axis",)):
            typed = dft_model(element_type, shape, axis=0, run_time=run_time, inverse=1, onesided=1)
            lowered = lowering.lower(typed, ops=["DFT"])
            onnx.checker.check_model(lowered, full_check=True)
            (got,) = run_onnxruntime(lowered, {"x": x, **({"axis": np.array(0, np.int64)} if run_time else {})})
            assert got.shape == (0, 6, 5, 1) and got.dtype == x.dtype, (element_type, run_time)
    zero = dft_model(TensorProto.FLOAT, [3, 4, 1], axis=1, dft_length=0)
    result = lowering.lower_model(zero, ops=["DFT"])
    assert "DFT" in lowered_ops(result.model)
    assert "dft_length is 0, and the transform takes a length of 1 or more" in "\n".join(result.report.lines())
    with pytest.raises(Exception, match="dft_length must be greater than zero"):
        run_onnxruntime(zero, {"x": signal(TensorProto.FLOAT, [3, 4, 1])})


def test_a_dft_along_an_axis_of_no_samples_is_empty_as_onnxruntimes_and_an_rfft_of_none_fails():
    """Along an axis of length 0 a DFT (forward or inverse, real or complex input) gives no bins
    of re and im, as onnxruntime's kernel does; an RFFT of no samples, which onnxruntime's kernel
    refuses, is declined, and fails in its If branch where the axis is fed at run time."""
    for inverse, channels in [(0, 1), (0, 2), (1, 1), (1, 2)]:
        model = dft_model(TensorProto.FLOAT, [3, 0, channels], axis=1, inverse=inverse)
        feeds = {"x": signal(TensorProto.FLOAT, [3, 0, channels])}
        lowered = lowering.lower(model, ops=["DFT"])
        assert "DFT" not in lowered_ops(lowered)
        (got,) = run_onnxruntime(lowered, feeds)
        assert got.shape == run_onnxruntime(model, feeds)[0].shape == (3, 0, 2), (inverse, channels)
    rfft = dft_model(TensorProto.FLOAT, [3, 0, 1], axis=1, onesided=1)
    result = lowering.lower_model(rfft, ops=["DFT"])
    assert "DFT" in lowered_ops(result.model)
    assert "a one-sided forward DFT (RFFT) of no samples" in "\n".join(result.report.lines())
    fed = dft_model(TensorProto.FLOAT, [3, 0, 1], run_time=("axis",), onesided=1)
    feeds = {"x": signal(TensorProto.FLOAT, [3, 0, 1]), "axis": np.array(1, np.int64)}
    with pytest.raises(Exception, match="DFT"):
        run_onnxruntime(fed, feeds)
    with pytest.raises(Exception, match="If"):
        run_onnxruntime(lowering.lower(fed, ops=["DFT"]), feeds)


# -- random signals: STFT ------------------------------------------------------------------------------


def stft_model(element_type: int, length: int, channels: int, *, step=None, size=None, window=None, run_time=(),
               onesided=1) -> onnx.ModelProto:  # fmt: skip
    """``y = STFT(signal, frame_step, window, frame_length)``: each constant, or a graph input
    where named in ``run_time``, or absent where None and not named."""
    inputs = [helper.make_tensor_value_info("signal", element_type, [2, length, channels])]
    initializers, names = [], ["signal", "frame_step", "", ""]
    for position, (name, value) in enumerate([("frame_step", step), ("window", window), ("frame_length", size)],
                                              start=1):  # fmt: skip
        if name in run_time:
            shape = [len(window)] if name == "window" else []
            inputs.append(helper.make_tensor_value_info(name, element_type if name == "window" else TensorProto.INT64,
                                                        shape))  # fmt: skip
            names[position] = name
        elif value is not None:
            array = np.asarray(value).astype(numpy_type(element_type) if name == "window" else np.int64)
            initializers.append(onnx.numpy_helper.from_array(array, name))
            names[position] = name
    while not names[-1]:
        names.pop()
    node = helper.make_node("STFT", names, ["y"], name="stft_node", onesided=onesided)
    output = helper.make_tensor_value_info("y", element_type, ["b", "f", "k", "c"])
    return make_model([node], inputs, [output], opset=17, initializer=initializers)


STFT_FORMS = [  # (what is given at run time, onesided, channels)
    ((), 1, 1), ((), 0, 2), (("frame_step",), 1, 1), (("frame_step", "frame_length"), 0, 1),
    (("frame_step", "window"), 1, 1), (("frame_length",), 0, 2),
]  # fmt: skip


@slow_but_a_sample()
@pytest.mark.parametrize("type_name", sorted(FLOAT_TYPES))
@pytest.mark.parametrize(("run_time", "onesided", "channels"), STFT_FORMS)
def test_stft_random_signals_within_the_tolerance(type_name, run_time, onesided, channels):
    element_type, target = FLOAT_TYPES[type_name]
    length = 40
    for step, size in [(1, 1), (3, 7), (8, 16), (5, 40), (16, 9)]:
        for window in (None, np.hanning(size + 2)[1:-1]):
            if window is None and "window" in run_time:
                continue
            model = stft_model(element_type, length, channels, step=step, size=size, window=window, run_time=run_time,
                               onesided=onesided)  # fmt: skip
            x = signal(element_type, [2, length, channels], seed=size)
            feeds = {"signal": x}
            for name, value in (("frame_step", step), ("frame_length", size), ("window", window)):
                if name in run_time:
                    feeds[name] = np.asarray(value).astype(x.dtype if name == "window" else np.int64)
            got = run_lowered(model, target, feeds)
            w = None if window is None else window.astype(x.dtype)
            exact = stft_reference(x.astype(np.float64), step, None if w is None else w.astype(np.float64), size,
                                   onesided=onesided)  # fmt: skip
            assert_within(got, exact.astype(x.dtype), element_type, f"step {step} size {size} window {w is not None}")


def test_stft_frame_length_from_the_window_or_the_signal():
    x = signal(TensorProto.FLOAT, [2, 30, 1])
    window = np.hanning(12).astype(np.float32)
    got = run_lowered(stft_model(TensorProto.FLOAT, 30, 1, step=4, window=window), 11, {"signal": x})
    assert_within(got, stft_reference(x, 4, window), TensorProto.FLOAT, "window's length")
    got = run_lowered(stft_model(TensorProto.FLOAT, 30, 1, step=4), 11, {"signal": x})
    assert_within(got, stft_reference(x, 4), TensorProto.FLOAT, "signal's length")


def test_stft_run_time_step_and_length_below_one_fail_as_the_op():
    model = stft_model(TensorProto.FLOAT, 20, 1, run_time=("frame_step", "frame_length"), onesided=0)
    lowered = lowering.lower(model, target_opset=11, ops=[])
    x = signal(TensorProto.FLOAT, [2, 20, 1])
    for step, size in [(0, 4), (-1, 4), (3, 0), (3, -2), (3, 21)]:
        with pytest.raises(Exception, match="Range|Gather"):
            run_onnxruntime(lowered, {"signal": x, "frame_step": np.array(step), "frame_length": np.array(size)})


# -- refusals ------------------------------------------------------------------------------------------


def test_dft_length_computed_at_run_time_is_refused_in_our_words():
    model = dft_model(TensorProto.FLOAT, [2, 8, 1], axis=1, run_time=("dft_length",))
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=11, ops=[])
    message = str(refused.value)
    assert "DFT-20 cannot be expressed at opset 11" in message
    assert "dft_length is computed at run time, and the rule needs it known" in message


@pytest.mark.parametrize(
    ("attributes", "channels", "reason"),
    [
        ({"onesided": 1}, 2, "takes real input only"),
        ({"onesided": 1, "inverse": 1}, 1, "takes complex input only"),
    ],
)
def test_dft_forms_the_op_does_not_take_are_refused(attributes, channels, reason):
    model = dft_model(TensorProto.FLOAT, [2, 8, channels], axis=1, **attributes)
    result = lowering.lower_model(model, ops=["DFT"])
    assert not result.report.complete
    assert any(reason in remaining.reason for remaining in result.report.remaining)


def test_rules_state_reference_and_tolerance():
    for op_type in OPS:
        found = rule_for("", op_type)
        assert (
            found.reference is not None
            and found.tolerance is DFT_TOLERANCE
            or dict(found.tolerance) == dict(DFT_TOLERANCE)
        )


def test_dft_matrix_past_the_largest_constant_is_refused():
    model = dft_model(TensorProto.FLOAT, [1, 2048, 1], axis=1)
    with pytest.raises(lowering.LoweringError, match="more than the 4194304 this rule writes into a model"):
        lowering.lower(model, target_opset=11, ops=[])


@pytest.mark.slow
def test_stft_matrix_and_indices_past_the_largest_constant_are_built_at_run_time():
    length, size = 1600, 1500  # W would hold 1500 · 2 · 1500 · 2 values
    model = stft_model(TensorProto.FLOAT, length, 2, step=1, size=size, onesided=0)
    lowered = lowering.lower(model, target_opset=11, ops=[])
    assert {"Cos", "Sin"} <= lowered_ops(lowered)  # (its small Ranges fold; the indices stay run-time values)
    constants = [n.attribute[0].t for n in lowered.graph.node if n.op_type == "Constant"]
    assert max(int(np.prod(t.dims)) for t in constants) <= LARGEST_CONSTANT
    x = signal(TensorProto.FLOAT, [2, length, 2]) / 8
    (got,) = run_onnxruntime(lowered, {"signal": x})
    exact = stft_reference(x.astype(np.float64), 1, None, size, onesided=0)
    assert_within(got, exact.astype(np.float32), TensorProto.FLOAT, "frame of 1500")
