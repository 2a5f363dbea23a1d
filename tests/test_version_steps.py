"""Version steps: which ones keep a node's meaning (judged from onnx.defs, then the known
changes of lowering.conversion.adapters), the Softmax-family adapters, and never doing worse than
onnx.version_converter on whole models (real models, backend node models)."""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest
from lowering.rules.versions import reduce
from onnx import TensorProto, helper, numpy_helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import node_cases, ours_where_it_converts, sweep_case

import lowering
from lowering import schemas
from lowering.conversion import adapters, version_steps
from lowering.opcount import count_ops
from lowering.verification.runtime import run_onnxruntime, run_reference

BACKEND_DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")

# float32 values with NaN, ±inf, ±0, denormals and ordinary numbers, rank 3: shape (3, 4, 5)
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, -1.0, 2.5], np.float32)


def edge_input(shape=(3, 4, 5)) -> np.ndarray:
    rng = np.random.default_rng(0)
    values = rng.standard_normal(int(np.prod(shape))).astype(np.float32) * 4
    values[:: len(EDGES) + 3][: len(EDGES)] = EDGES[: len(values[:: len(EDGES) + 3])]
    values[7 : 7 + len(EDGES)] = EDGES
    return values.reshape(shape)


def one_node(op_type: str, opset: int, shape=(3, 4, 5), **attributes) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], name=f"{op_type.lower()}_node", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        opset=opset,
    )


def assert_same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    mismatches = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
    assert mismatches.size == 0, f"{mismatches.size} of {got.size} values differ, first at {mismatches[:5]}"


# -- item 2: Softmax, LogSoftmax, Hardmax across version 13 --------------------------------------

FAMILY = ("Softmax", "LogSoftmax", "Hardmax")
AXES = [0, 1, 2, -1, -2, -3, None]  # None: the version's default (-1 from 13, 1 before)


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", FAMILY)
@pytest.mark.parametrize("source, target", [(13, 12), (13, 11), (13, 10), (13, 9), (12, 13), (11, 13), (10, 13)])
def test_softmax_family_across_13_gives_identical_bits(op_type, source, target):
    x = edge_input()
    for axis in AXES:
        if axis is not None and axis < 0 and source < 11:
            continue  # negative axes do not exist below 11
        model = one_node(op_type, source, **({} if axis is None else {"axis": axis}))
        result = lowering.lower_model(model, target_opset=target, ops=[])
        onnx.checker.check_model(result.model, full_check=True)
        (want,) = run_onnxruntime(model, {"x": x})
        (got,) = run_onnxruntime(result.model, {"x": x})
        assert_same_bits(got, want)
        (label,) = result.report.adapted
        assert label.startswith(f"{op_type}-{schemas.version_in_force(op_type, source)}→")


def test_softmax_13_down_on_an_inner_axis_moves_that_axis_last():
    result = lowering.lower_model(one_node("Softmax", 13, axis=1), target_opset=11, ops=[])
    assert [n.op_type for n in result.model.graph.node] == ["Transpose", "Softmax", "Transpose"]
    assert result.report.adapted == {"Softmax-13→11 via Transpose": 1}
    last = one_node("Softmax", 13, axis=2)
    assert [n.op_type for n in lowering.lower(last, target_opset=11, ops=[]).graph.node] == ["Softmax"]


def test_hardmax_11_up_on_an_inner_axis_flattens_at_it():
    result = lowering.lower_model(one_node("Hardmax", 11, axis=1), target_opset=13, ops=[])
    assert count_ops(result.model) == {"Flatten": 1, "Hardmax": 1, "Constant": 1, "Reshape": 1}  # (Shape folded)
    assert result.report.adapted == {"Hardmax-11→13 via Flatten and Reshape": 1}


def unknown_rank(op_type: str, **attributes) -> onnx.ModelProto:
    """``op_type(Reshape(x, s))`` with ``s`` of unknown length: no one knows the rank."""
    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["r"]),
        helper.make_node(op_type, ["r"], ["y"], name=f"{op_type.lower()}_node", **attributes),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"]),
        helper.make_tensor_value_info("s", TensorProto.INT64, ["K"]),
    ]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["A", "B"])], opset=13)


def test_softmax_13_down_without_the_rank_is_refused_naming_the_node():
    # the adapter needs the rank; the function body (its ReduceSum-13 given constant axes) does not
    body = lowering.lower_model(unknown_rank("LogSoftmax", axis=0), target_opset=12, ops=[])
    assert body.report.rewritten == {"LogSoftmax-13 by its function body": 1}
    # the last axis needs no rank where -1 exists (11, 12); the converter's result would keep axis=0
    kept = lowering.lower(unknown_rank("LogSoftmax", axis=-1), target_opset=12, ops=[])
    assert [(n.op_type, n.attribute[0].i) for n in kept.graph.node if n.attribute] == [("LogSoftmax", -1)]
    with pytest.raises(lowering.LoweringError, match=r"node 'logsoftmax_node' \(LogSoftmax\).*rank of its input 'r'"):
        lowering.lower(unknown_rank("LogSoftmax", axis=-1), target_opset=10, ops=[])


def test_softmax_family_on_ties_and_nan_rows_in_hardmax():
    """Hardmax picks the first maximum: a transposed row must keep the order of its values."""
    x = np.array([[[1, 3, 3], [3, 3, 1]], [[np.nan, 1, 1], [2, 2, 2]]], np.float32)
    for axis in (0, 1):
        model = one_node("Hardmax", 13, shape=x.shape, axis=axis)
        lowered = lowering.lower(model, target_opset=11, ops=[])
        assert_same_bits(run_onnxruntime(lowered, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


# -- item 3: the judge of a version step ----------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize(
    "op_type, source, targets",
    [("Relu", 14, (13, 11, 6)), ("Abs", 13, (11, 9)), ("Sigmoid", 13, (11,)), ("LeakyRelu", 16, (11, 6))],
)
def test_steps_that_only_gained_a_function_body_or_doc_words_are_re_versioned(op_type, source, targets):
    model = one_node(op_type, source)
    x = edge_input()
    for target in targets:
        result = lowering.lower_model(model, target_opset=target, ops=[])
        assert count_ops(result.model) == {op_type: 1}
        assert list(result.report.adapted) == [f"{op_type}-{source}→{schemas.version_in_force(op_type, target)}"]
        assert_same_bits(run_onnxruntime(result.model, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


RESNET_BLOCK = """
    <ir_version: 7, opset_import: ["" : {opset}]>
    block (float[1, 3, 8, 8] x) => (float[1, 5] probabilities)
    <float[4, 3, 3, 3] w1, float[4] scale, float[4] bias, float[4] mean, float[4] var, float[4, 4, 3, 3] w2,
     float[5, 4] fc, float[5] fc_bias> {
        c1 = Conv <pads = [1, 1, 1, 1]> (x, w1)
        b1 = BatchNormalization <epsilon = 0.001> (c1, scale, bias, mean, var)
        r1 = Relu (b1)
        c2 = Conv <pads = [1, 1, 1, 1]> (r1, w2)
        b2 = BatchNormalization (c2, scale, bias, mean, var)
        sum = Add (b2, r1)
        r2 = Relu (sum)
        pooled = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (r2)
        global = GlobalAveragePool (pooled)
        flat = Flatten (global)
        logits = Gemm <transB = 1> (flat, fc, fc_bias)
        probabilities = Softmax <axis = 1> (logits)
    }
"""


def resnet_block(opset: int) -> onnx.ModelProto:
    model = onnx.parser.parse_model(RESNET_BLOCK.replace("{opset}", str(opset)))
    rng = np.random.default_rng(1)
    shapes = {"w1": (4, 3, 3, 3), "scale": (4,), "bias": (4,), "mean": (4,), "var": (4,), "w2": (4, 4, 3, 3)}
    shapes |= {"fc": (5, 4), "fc_bias": (5,)}
    model.graph.ClearField("initializer")
    for name, shape in shapes.items():
        values = rng.random(shape).astype(np.float32) + (0.5 if name == "var" else 0.0)
        model.graph.initializer.append(numpy_helper.from_array(values, name))
    onnx.checker.check_model(model, full_check=True)
    return model


def test_a_resnet_block_goes_up_to_17_and_back_to_13_and_11():
    original = resnet_block(13)
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (want,) = run_onnxruntime(original, {"x": x})
    up = lowering.lower(original, target_opset=17, ops=[])
    for target in (13, 11):
        result = lowering.lower_model(up, target_opset=target, ops=[])
        onnx.checker.check_model(result.model, full_check=True)
        assert result.report.adapted["BatchNormalization-15→9 via inference form"] == 2
        assert_same_bits(run_onnxruntime(result.model, {"x": x})[0], want)


def test_every_known_change_names_a_real_version_step():
    known = adapters.known_changes()
    for (op_type, version), change in known.items():
        assert version in schemas.op_versions(op_type)[1:], f"{op_type}-{version}: no such step in onnx.defs"
        assert change.reason
    for found in adapters.all_adapters():  # a step that only adds types has none: onnx.defs shows it
        assert all((op_type, found.version) in known or found.types_only for op_type in found.op_types)
        assert not (found.types_only and any((op_type, found.version) in known for op_type in found.op_types))


def _node(op_type: str, inputs=("x",), outputs=("y",), **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), **attributes)


FLOAT = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
INT64 = helper.make_tensor_type_proto(TensorProto.INT64, None)


NAMED_CHANGES = [
    # known changes onnx.defs cannot show
    (_node("GridSample", ("x", "g"), mode="bilinear"), 16, 20, "renames the modes"),
    (_node("RoiAlign", ("x", "r", "i")), 10, 16, "half_pixel", [FLOAT, FLOAT, INT64]),
    (_node("Pad", ("x", "p"), mode="wrap"), 19, 18, "wrap", [FLOAT, INT64]),
    (_node("Concat", ("x", "x"), axis=-1), 11, 4, "negative axes"),
    (_node("AveragePool", kernel_shape=[2], ceil_mode=1), 22, 19, "ceil_mode"),
    (_node("Resize", ("x", "", "s"), coordinate_transformation_mode="half_pixel_symmetric"), 19, 18, "symmetric"),
    (_node("Range", ("a", "b", "c")), 11, 27, "stash_type"),
    (_node("Softmax"), 13, 12, "normalizes along"),
    (_node("BatchNormalization", ("x", "s", "b", "m", "v"), ("y", "m2", "v2"), training_mode=1), 15, 9, "training"),
    # what onnx.defs says
    (_node("Softmax"), 11, 13, "normalizes along"),
    (_node("Reshape", ("x", "s"), allowzero=1), 14, 13, "adds allowzero"),  # its adapter declares the step
    (_node("ReduceMean", ("x", "axes")), 18, 13, "takes axes as an input"),  # its adapter declares the step
    (_node("Selu"), 1, 6, "defaults differently"),
    (_node("Upsample", ("x", "s")), 9, 10, "deprecated"),
    (_node("Gemm", ("a", "b")), 11, 9, "required there"),
    (_node("Cast", to=TensorProto.FLOAT), 13, 9, "unknown and the types taken changed", [None]),
    (_node("Tile", ("x", "r")), 1, 6, "input 1 is tiles here and repeats there"),
]


@slow_but_a_sample()
@pytest.mark.parametrize("node, source, target, reason, types", [(*c, None)[:5] for c in NAMED_CHANGES])
def test_meaning_changes_are_named(node, source, target, reason, types):
    types = [FLOAT] * len(node.input) if types is None else types
    why = version_steps.meaning_change(node, source, target, types)
    assert why is not None and reason in why, why


KEPT_MEANINGS = [
    (_node("Pad", ("x", "p"), mode="reflect"), 19, 18, [FLOAT, INT64]),
    (_node("Concat", ("x", "x"), axis=1), 11, 4),
    (_node("AveragePool", kernel_shape=[2]), 22, 11),
    (_node("Reshape", ("x", "s")), 14, 5, [FLOAT, INT64]),
    (_node("ReduceMean", ("x",), axes=[1]), 13, 11),
    (_node("BatchNormalization", ("x", "s", "b", "m", "v")), 15, 14),
    (_node("Gemm", ("a", "b", "c")), 13, 9),
    (_node("Clip", ("x", "lo", "hi")), 13, 11),
]


@slow_but_a_sample()
@pytest.mark.parametrize("node, source, target, types", [(*c, None)[:4] for c in KEPT_MEANINGS])
def test_nodes_that_keep_their_meaning(node, source, target, types):
    types = [FLOAT] * len(node.input) if types is None else types
    assert version_steps.meaning_change(node, source, target, types) is None


# -- item 4: never worse than onnx's converter on a whole model -------------------------------------


def test_an_opset_6_model_goes_to_7_with_the_shapes_inference_gives():
    path = os.path.join(BACKEND_DATA, "pytorch-converted", "test_Softsign", "model.onnx")
    model = onnx.load(path)
    converted = lowering.lower(model, target_opset=7)
    onnx.checker.check_model(converted, full_check=True)
    (x,) = _data_set(os.path.dirname(path), "input")
    (want,) = _data_set(os.path.dirname(path), "output")
    np.testing.assert_allclose(run_onnxruntime(converted, {model.graph.input[0].name: x})[0], want, rtol=1e-6)


def _data_set(folder: str, kind: str) -> list[np.ndarray]:
    files = sorted(glob.glob(os.path.join(folder, "test_data_set_0", f"{kind}_*.pb")))
    tensors = []
    for file in files:
        tensor = onnx.TensorProto()
        with open(file, "rb") as stream:
            tensor.ParseFromString(stream.read())
        tensors.append(numpy_helper.to_array(tensor))
    return tensors


REAL_MODELS = sorted(glob.glob(os.path.join(BACKEND_DATA, "pytorch-*", "*", "model.onnx")))


def _expected_outputs(model: onnx.ModelProto, folder: str) -> tuple[dict, list] | None:
    """The data set's feeds and expected outputs, unless onnxruntime runs the model itself and
    gets other numbers or fails for a reason but a missing kernel (PRelu-6 with a slope per
    channel, which it refuses to broadcast the version-7 way)."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    feeds = dict(zip((i.name for i in model.graph.input), _data_set(folder, "input"), strict=False))
    want = _data_set(folder, "output")
    try:
        got = run_onnxruntime(model, feeds)
    except OrtNotImplemented:  # no kernel at so old an opset (Add-6, ...): the data set decides
        return feeds, want
    except Exception:
        return None
    return (feeds, want) if _close(got, want) else None


def _close(got: list, want: list) -> bool:
    return all(np.allclose(a, b, rtol=1e-3, atol=1e-5, equal_nan=True) for a, b in zip(got, want, strict=True))


_EXPECTED: dict[str, tuple[dict, list] | None] = {}


def expected_outputs_of(path: str) -> tuple[dict, list] | None:
    """:func:`_expected_outputs` of the model at ``path`` and its data set, once per model in the
    session: the model and its data are the same at every target it is taken to."""
    if path not in _EXPECTED:
        _EXPECTED[path] = _expected_outputs(onnx.load(path), os.path.dirname(path))
    return _EXPECTED[path]


@pytest.mark.slow
@pytest.mark.skipif(not REAL_MODELS, reason="this onnx wheel ships no backend model data")
@pytest.mark.parametrize("target", [7, 9, 11, 13, 17])
def test_backend_pytorch_models_at_other_opsets_give_their_expected_outputs(target):
    """onnx's real-model test data (opset 6 to 9 exports): every model goes to the target and
    gives the expected outputs, or onnx's converter cannot take it there either."""
    refused, wrong = [], []
    for path in REAL_MODELS:
        model = onnx.load(path)
        expected = expected_outputs_of(path)
        if expected is None:
            continue
        try:
            converted = lowering.lower(model, target_opset=target)
        except lowering.LoweringError as error:
            refused.append((path, str(error)))
            continue
        if not _close(run_onnxruntime(converted, expected[0]), expected[1]):
            wrong.append(path)
    assert not wrong
    converter_works = []
    for path, message in refused:  # a refusal is fine only where onnx's converter cannot either
        try:
            converted = onnx.version_converter.convert_version(onnx.load(path), target)
            onnx.checker.check_model(converted, full_check=True)
        except Exception:
            continue
        converter_works.append(f"{path}: {message}")
    assert not converter_works


SAMPLE_EVERY = 9  # a deterministic ninth of the node cases; benchmarks/version_sweep.py runs them all


@pytest.mark.slow
@pytest.mark.parametrize("target", [11, 13, 17])
def test_backend_node_models_convert_wherever_onnx_converter_does(target):
    """Where onnx's converter gives a checked model that runs, so do we (or we refuse for a
    change of meaning the converter misses), and our models give the expected outputs."""
    worse, wrong = [], []
    for case in node_cases()[::SAMPLE_EVERY]:
        # (what the converter does is read only where ours does not convert: there the case is swept in full)
        outcome = ours_where_it_converts(case, target) or sweep_case(case, target)
        if outcome.ours_wrong:
            wrong.append(case.name)
        if outcome.converter == "runs" and outcome.ours != "converts":
            known = any(change.reason in outcome.detail for change in adapters.known_changes().values())
            if not known:
                worse.append(f"{case.name}: {outcome.ours} {outcome.detail}")
    assert not wrong
    assert not worse


def test_constants_the_converter_makes_get_fresh_names_per_node():
    """onnx's converter names the pads it makes for Pad-2 → 11 '_v_4' for every node: two Pads
    defined it twice (refused at the full check) where convert_version on the model works."""
    pads = [0, 0, 1, 1, 0, 0, 1, 1]
    model = make_model(
        [helper.make_node("Pad", ["x"], ["p"], pads=pads), helper.make_node("Pad", ["p"], ["y"], pads=pads)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 6, 6])],
        opset=9,
    )
    converted = lowering.lower(model, target_opset=11, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    x = EDGES[:4].reshape(1, 1, 2, 2)
    expected = np.pad(x, [(0, 0), (0, 0), (2, 2), (2, 2)])
    np.testing.assert_array_equal(run_onnxruntime(converted, {"x": x})[0].view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("target", [18, 21])
def test_split_without_split_input_gains_num_outputs_going_to_18(target):
    model = make_model(
        [helper.make_node("Split", ["x"], ["a", "b"], axis=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        opset=13,
    )
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    (split,) = result.model.graph.node
    assert helper.get_node_attr_value(split, "num_outputs") == 2
    x = EDGES.reshape(4, 3)
    a, b = run_onnxruntime(result.model, {"x": x})
    np.testing.assert_array_equal(a.view(np.uint32), x[:2].view(np.uint32))
    np.testing.assert_array_equal(b.view(np.uint32), x[2:].view(np.uint32))


@pytest.mark.parametrize("op_type", ["QuantizeLinear", "DequantizeLinear"])
def test_quantize_linear_13_goes_to_10_with_a_scalar_scale_only_dequantize_per_axis_as_its_formula(op_type):
    quantize = op_type == "QuantizeLinear"
    x_type, y_type = (TensorProto.FLOAT, TensorProto.UINT8) if quantize else (TensorProto.UINT8, TensorProto.FLOAT)

    def model(scale: np.ndarray) -> onnx.ModelProto:
        zero = np.zeros(scale.shape, np.uint8)
        return make_model(
            [helper.make_node(op_type, ["x", "s", "z"], ["y"], axis=1)],
            [helper.make_tensor_value_info("x", x_type, [2, 3])],
            [helper.make_tensor_value_info("y", y_type, [2, 3])],
            opset=13,
            initializer=[numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero, "z")],
        )

    x = np.array([[0, 1, 2], [100, 200, 255]], np.uint8) if not quantize else EDGES[6:12].reshape(2, 3)
    per_axis = model(np.array([0.5, 0.25, 2.0], np.float32))
    for original in [model(np.array(0.5, np.float32))] + ([] if quantize else [per_axis]):
        converted = lowering.lower(original, target_opset=10, ops=[])
        onnx.checker.check_model(converted, full_check=True)
        (want,), (got,) = run_onnxruntime(original, {"x": x}), run_onnxruntime(converted, {"x": x})
        np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
    if quantize:  # a DequantizeLinear per axis goes as its formula, (x - z) * s; a QuantizeLinear needs Round (11)
        with pytest.raises(lowering.LoweringError, match="QuantizeLinear-13 quantizes per axis, and Round"):
            lowering.lower(per_axis, target_opset=10, ops=[])


REDUCE_INPUT = np.array([[1.5, -0.0, np.inf], [np.nan, 2.0, -3.0]], np.float32)


def _reduce_18(op_type: str, axes: list[int] | None, noop: int) -> onnx.ModelProto:
    inputs, initializer = ["x"], []
    if axes is not None:
        inputs.append("axes")
        initializer.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    return make_model(
        [helper.make_node(op_type, inputs, ["y"], name="reduce", keepdims=1, noop_with_empty_axes=noop)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        opset=18,
        initializer=initializer,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("target", [17, 13, 11])
@pytest.mark.parametrize("axes", [[1], [-1, 0], [], None])
@pytest.mark.parametrize("noop", [0, 1])
@pytest.mark.parametrize("op_type", reduce.REDUCE_AXES_AT_18)
def test_reduce_18_axes_input_goes_down_to_the_attribute_and_back_bit_for_bit(op_type, noop, axes, target):
    """ReduceX-18 → 17/13/11 moves constant axes into the attribute (onnx's converter keeps
    noop_with_empty_axes, which 17 does not have), and back up to 18 as a Constant input."""
    model = _reduce_18(op_type, axes, noop)
    if noop and not axes and op_type not in reduce.NOOP_IS_IDENTITY:
        with pytest.raises(lowering.LoweringError, match="no agreed meaning"):
            lowering.lower(model, target_opset=target, ops=[])
        return
    down = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(down, full_check=True)
    up = lowering.lower(down, target_opset=18, ops=[])
    onnx.checker.check_model(up, full_check=True)
    (want,) = run_onnxruntime(model, {"x": REDUCE_INPUT})
    for converted in (down, up):
        (got,) = run_onnxruntime(converted, {"x": REDUCE_INPUT})
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_reduce_18_with_axes_out_of_range_at_run_time_fails_there_as_the_original_does():
    """Axes computed at run time (here the input's dims, [2, 3] for a rank-2 input) go down as a
    choice among reductions; an axis out of range fails at run time in both."""
    model = make_model(
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("ReduceMean", ["x", "s"], ["y"], name="mean")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        opset=18,
    )
    converted = lowering.lower(model, target_opset=17, ops=[])
    feeds = {"x": np.ones((2, 3), np.float32)}
    for runs in (model, converted):
        with pytest.raises(Exception, match="(?i)out of range|not in valid range|invalid"):
            run_onnxruntime(runs, feeds)


@slow_but_a_sample()
@pytest.mark.parametrize("target", [13, 11])
@pytest.mark.parametrize(
    ("allowzero", "shape"), [(None, [0, -1]), (0, [3, 2]), (0, [0, -1]), (1, [3, 2]), (1, [-1, 2])]
)
def test_reshape_14_goes_down_where_allowzero_means_nothing_new(allowzero, shape, target):
    attributes = {} if allowzero is None else {"allowzero": allowzero}
    model = make_model(
        [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape", **attributes)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        opset=14,
        initializer=[numpy_helper.from_array(np.array(shape, np.int64), "s")],
    )
    converted = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    x = EDGES[:6].reshape(2, 3)
    (want,), (got,) = run_onnxruntime(model, {"x": x}), run_onnxruntime(converted, {"x": x})
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("stated", [["b", 3], ["a", 3]])
def test_reshape_14_with_allowzero_and_a_shape_known_only_at_run_time_goes_by_an_if(stated):
    """Where the result's first size is stated under another symbol than x's (it could be 0
    where x's is not), an If on whether the shape holds a 0 (rules/versions/reshape.py); kept,
    allowzero dropped, where it is x's own (``Shape(x)``)."""
    model = make_model(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Reshape", ["x", "s"], ["y"], name="r", allowzero=1),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, stated)],
        opset=14,
    )
    converted = lowering.lower(model, target_opset=13, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    if stated[0] == "a":
        (reshape,) = [n for n in converted.graph.node if n.op_type == "Reshape"]
        assert not reshape.attribute
        return
    assert "If" in {n.op_type for n in converted.graph.node}
    for rows in (2, 0):
        x = EDGES[: rows * 3].reshape(rows, 3)
        (want,), (got,) = run_onnxruntime(model, {"x": x}), run_onnxruntime(converted, {"x": x})
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("opset", [14, 19, 21])
def test_reshape_with_allowzero_and_a_run_time_shape_below_11_is_refused_naming_its_version(opset):
    """Below 11 If's branches must give alike shapes: refused, naming the node's own version."""
    model = reshape_allowzero(["n", 3], [], shape_input=True)
    model.opset_import[0].version = opset
    version = schemas.version_in_force("Reshape", opset)
    with pytest.raises(
        lowering.ConversionRefused, match=f"node 'r'.*Reshape-{version} with allowzero=1.*from opset 11"
    ):
        lowering.lower(model, target_opset=10, ops=[])


@pytest.mark.parametrize("target", [13, 11])
@pytest.mark.parametrize("x_shape", [[2, 3], [0, 3], ["n", 3]])
def test_reshape_with_allowzero_and_a_run_time_shape_means_the_same_for_every_shape(x_shape, target):
    """Shapes with and without a 0 and a -1: the converted model gives the same. (Of the
    invalid ones, a 0 where x holds elements or a -1 beside a 0, nothing is promised.)"""
    model = reshape_allowzero(x_shape, [], shape_input=True)
    converted = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    rows_of = [x_shape[0]] if isinstance(x_shape[0], int) else [2, 0]
    compared = 0
    for rows in rows_of:
        x = EDGES[: rows * 3].reshape(rows, 3)
        for sizes in ([3, 2], [6], [-1, 2], [1, -1, 3], [0, 5], [5, 0], [0], [0, 6], [2, 0, 3], [0, -1]):
            feeds = {"x": x, "s": np.array(sizes, np.int64)}
            if 0 in sizes and (rows or -1 in sizes):
                continue  # invalid for allowzero=1 (a 0 where x holds elements, a -1 beside a 0)
            try:
                (want,) = run_onnxruntime(model, feeds)
            except Exception:  # noqa: BLE001 - sizes that do not hold x's elements: invalid too
                continue
            (got,) = run_onnxruntime(converted, feeds)
            assert got.shape == want.shape, (x_shape, sizes)
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
            compared += 1
    assert compared >= 4


def reshape_allowzero(x_shape: list, nodes: list, shape_input: bool) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if shape_input:
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [None]))
    nodes = [*nodes, helper.make_node("Reshape", ["x", "s"], ["y"], name="r", allowzero=1)]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])], opset=14)


@pytest.mark.parametrize("target", [13, 11])
def test_reshape_14_allowzero_with_a_shape_computed_from_static_shapes_or_of_a_non_empty_x_goes_down(target):
    """A shape computed from x's static shape is folded (no 0 in it: it goes as it is); a shape
    given at run time to an x of static shape without 0 cannot hold a valid 0 (x holds
    elements): Reshape-13 means the same for every valid shape."""
    x = np.resize(EDGES, 24).reshape(2, 3, 4)
    computed = [
        helper.make_node("Shape", ["x"], ["dims"]),
        helper.make_node("Constant", [], ["first"], value_ints=[0]),
        helper.make_node("Constant", [], ["two"], value_ints=[2]),
        helper.make_node("Slice", ["dims", "first", "two"], ["front"]),
        helper.make_node("ReduceProd", ["front"], ["rows"], keepdims=1),
        helper.make_node("Constant", [], ["rest"], value_ints=[-1]),
        helper.make_node("Concat", ["rows", "rest"], ["s"], axis=0),
    ]
    for model, feeds in (
        (reshape_allowzero([2, 3, 4], computed, False), [{"x": x}]),
        (reshape_allowzero([2, 3, 4], [], True),
         [{"x": x, "s": np.array(s, np.int64)} for s in ([4, 6], [-1, 2, 2], [24], [2, 3, 2, 2])]),
    ):  # fmt: skip
        converted = lowering.lower(model, target_opset=target, ops=[])
        onnx.checker.check_model(converted, full_check=True)
        assert not any(a.name == "allowzero" for n in converted.graph.node for a in n.attribute)
        for fed in feeds:
            (want,), (got,) = run_onnxruntime(model, fed), run_onnxruntime(converted, fed)
            assert got.shape == want.shape
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@slow_but_a_sample()
@pytest.mark.parametrize("target", [13, 11])
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING])
def test_reshape_14_allowzero_of_an_empty_x_goes_down_as_an_expanded_zero(target, element_type):
    """x of a static 0 holds no element: the result is Expand(0, s), -1 taken as 0."""
    model = reshape_allowzero([0, 3, 4], [], True)
    model.graph.input[0].type.tensor_type.elem_type = element_type
    model.graph.output[0].type.tensor_type.elem_type = element_type
    converted = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    x = np.zeros((0, 3, 4), helper.tensor_dtype_to_np_dtype(element_type))
    for s in ([3, 4, 0], [0, 12], [-1, 6], [0], [2, 0, 5, 1], [-1]):
        fed = {"x": x, "s": np.array(s, np.int64)}
        (want,), (got,) = run_onnxruntime(model, fed), run_onnxruntime(converted, fed)
        assert got.shape == want.shape and got.dtype == want.dtype, s


def test_split_13_given_its_sizes_goes_to_18_as_it_is():
    """The Split-18 up adapter once set num_outputs on a Split given a split input too, which
    Split-18 refuses (the model failed the checker at the target)."""
    model = make_model(
        [helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split", axis=0)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [k]) for n, k in (("a", 2), ("b", 3))],
        opset=13,
        initializer=[numpy_helper.from_array(np.array([2, 3], np.int64), "sizes")],
    )
    result = lowering.lower_model(model, target_opset=18, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.adapted["Split-13→18 via num_outputs"] == 1
    (split,) = result.model.graph.node
    assert not split.attribute[1:] and list(split.input) == ["x", "sizes"]
    x = EDGES[:5]
    for got, want in zip(run_onnxruntime(result.model, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _prelu(shape, slope_shape, opset):
    return make_model(
        [helper.make_node("PRelu", ["x", "slope"], ["y"], name="prelu")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
            helper.make_tensor_value_info("slope", TensorProto.FLOAT, slope_shape),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        opset=opset,
    )


def test_prelu_7_with_a_slope_along_the_last_axis_is_refused_below_7():
    """Below version 7 a slope of C values applies per channel (axis 1): onnx's converter kept a
    slope of shape [W] on [N, C, W] as it was, giving it that meaning; now refused, naming why."""
    with pytest.raises(lowering.LoweringError, match="node 'prelu'.*slope of shape \\[5\\].*one per channel"):
        lowering.lower(_prelu((3, 4, 5), (5,), 16), target_opset=6, ops=[])


def test_prelu_7_with_a_slope_lined_up_with_the_channels_goes_below_7_squeezed():
    model = _prelu((2, 3, 4), (3, 1), 16)
    result = lowering.lower_model(model, target_opset=6, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.adapted["PRelu-16→6 via per-channel slope"] == 1
    assert [n.op_type for n in result.model.graph.node] == ["Squeeze", "PRelu"]
    feeds = {"x": edge_input((2, 3, 4)), "slope": np.array([[0.5], [-2.0], [3.0]], np.float32)}
    (want,) = run_onnxruntime(model, feeds)
    (got,) = run_reference(result.model, feeds)  # onnxruntime has no PRelu-6 kernel
    assert_same_bits(got, want)


# -- Shape-15, Squeeze/Unsqueeze-13, Split-13/18 and Pad-11/18 going down --------------------------


def _unknown_rank_input(nodes: list[onnx.NodeProto], outputs, opset: int, initializers=()) -> onnx.ModelProto:
    """``nodes`` reading ``r = Reshape(x, s)``, ``s`` of unknown length: no one knows r's rank."""
    reshape = helper.make_node("Reshape", ["x", "s"], ["r"])
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"]),
        helper.make_tensor_value_info("s", TensorProto.INT64, ["K"]),
    ]
    return make_model([reshape, *nodes], inputs, outputs, opset=opset, initializer=list(initializers))


@slow_but_a_sample()
@pytest.mark.parametrize("target", [13, 10, 9])
@pytest.mark.parametrize("start, end", [(1, None), (-1, None), (None, -1), (-9, 9), (3, 1), (0, None)])
def test_shape_15_slices_the_shape_below_15_without_knowing_the_rank(start, end, target):
    attributes = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    model = _unknown_rank_input(
        [helper.make_node("Shape", ["r"], ["y"], name="shape_node", **attributes)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["n"])],
        opset=15,
    )
    feeds = {"x": np.zeros(24, np.float32), "s": np.array([2, 3, 4], np.int64)}
    lowered = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    (want,) = run_onnxruntime(model, feeds)
    (got,) = run_onnxruntime(lowered, feeds)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    slices = [n for n in lowered.graph.node if n.op_type == "Slice"]
    assert len(slices) == (0 if (start or 0) == 0 and end is None else 1)
    assert all((len(n.input) == 1) == (target < 10) for n in slices)  # Slice-1 takes attributes


@pytest.mark.parametrize("target", [12, 10])
def test_squeeze_13_with_axes_computed_at_run_time_chooses_by_if_and_is_refused_below_11_naming_it(target):
    """x of shape [1, 3, 1]: axes [0] or [2] at run time choose between two Squeeze-11 nodes;
    below 11 If's branches must give one shape."""
    model = make_model(
        [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze_node")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 1]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        opset=13,
    )
    if target < 11:
        with pytest.raises(lowering.LoweringError, match=r"'squeeze_node' \(Squeeze\).*Squeeze-13.*'axes'.*run time"):
            lowering.lower(model, target_opset=target, ops=[])
        return
    lowered = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    x = np.resize(EDGES, (1, 3, 1))
    for axes in ([0], [2], [-1], [-3]):
        feeds = {"x": x, "axes": np.array(axes, np.int64)}
        assert_same_bits(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0])


@pytest.mark.parametrize("target", [12, 10])
def test_unsqueeze_13_negative_axes_go_below_11_counted_in_the_output_rank(target):
    axes = numpy_helper.from_array(np.array([-1, 0], np.int64), "axes")
    model = make_model(
        [helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="unsqueeze_node")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 1])],
        opset=13,
        initializer=[axes],
    )
    lowered = lowering.lower(model, target_opset=target, ops=[])
    (node,) = lowered.graph.node
    assert list(helper.get_attribute_value(node.attribute[0])) == ([-1, 0] if target >= 11 else [3, 0])
    x = np.resize(EDGES, (3, 4))
    assert_same_bits(run_onnxruntime(lowered, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


def _split_18(size, count: int, axis: int = 0, opset: int = 18) -> onnx.ModelProto:
    outputs = [f"y{k}" for k in range(count)]
    return make_model(
        [helper.make_node("Split", ["x"], outputs, name="split_node", axis=axis, num_outputs=count)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, 2])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["a", 2]) for name in outputs],
        opset=opset,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("size, count", [(7, 4), (6, 4), (8, 4), (2, 3)])
@pytest.mark.parametrize("target", [17, 13, 11])
def test_split_18_num_outputs_goes_down_as_sizes_the_last_part_smaller(size, count, target):
    model = _split_18(size, count)
    lowered = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    x = np.resize(EDGES, (size, 2))
    for got, want in zip(run_onnxruntime(lowered, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
        assert_same_bits(got, want)


def test_split_18_on_a_dimension_known_only_at_run_time_computes_its_sizes_at_13_slices_below_and_is_refused_below_10():
    model = _split_18("N", 4, axis=-2)
    for target, op_type in ((13, "Concat"), (12, "Slice"), (10, "Slice")):
        lowered = lowering.lower(model, target_opset=target, ops=[])
        assert op_type in count_ops(lowered)
        for size in (7, 8, 6, 3, 0):
            x = np.resize(EDGES, (size, 2))
            for got, want in zip(run_onnxruntime(lowered, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
                assert_same_bits(got, want)
    with pytest.raises(lowering.LoweringError, match=r"'split_node' \(Split\).*not known statically.*opset 9"):
        lowering.lower(model, target_opset=9, ops=[])


def _pad_18(pads_input: bool, opset: int = 18, mode: str = "constant", **graph_fields) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4, 5])]
    if pads_input:
        inputs.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [4]))
    return make_model(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad_node", mode=mode)],
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])],
        opset=opset,
        **graph_fields,
    )


@pytest.mark.parametrize("target", [17, 13, 11])
def test_pad_18_axes_with_pads_computed_at_run_time_are_spread_by_gather(target):
    axes = numpy_helper.from_array(np.array([-1, 0], np.int64), "axes")
    model = _pad_18(True, initializer=[axes])
    lowered = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert "Gather" in count_ops(lowered)
    x = edge_input()
    for pads in ([1, 2, 0, 3], [0, 0, 2, 1], [-1, 1, 1, -2]):
        feeds = {"x": x, "pads": np.array(pads, np.int64)}
        assert_same_bits(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0])
    with pytest.raises(lowering.LoweringError, match=r"'pad_node' \(Pad\).*'pads'.*run time.*opset 10"):
        lowering.lower(model, target_opset=10, ops=[])


def test_pad_wrap_goes_below_19_as_gathers_and_is_refused_below_9_naming_the_node():
    pads = numpy_helper.from_array(np.array([1, 1, 1, 1], np.int64), "pads")
    axes = numpy_helper.from_array(np.array([0, 1], np.int64), "axes")
    model = _pad_18(False, opset=19, mode="wrap", initializer=[pads, axes])
    x = edge_input()
    for target in (18, 17, 10):
        lowered = lowering.lower(model, target_opset=target, ops=[])
        onnx.checker.check_model(lowered, full_check=True)
        assert "Pad" not in count_ops(lowered) and "Gather" in count_ops(lowered)
        assert_same_bits(run_onnxruntime(lowered, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])
    with pytest.raises(lowering.LoweringError, match=r"'pad_node' \(Pad\).*mode wrap.*opset 8"):
        lowering.lower(model, target_opset=8, ops=[])


def test_pad_18_axes_without_the_rank_are_refused_naming_the_node():
    pads = numpy_helper.from_array(np.array([1, 1], np.int64), "pads")
    axes = numpy_helper.from_array(np.array([0], np.int64), "axes")
    model = _unknown_rank_input(
        [helper.make_node("Pad", ["r", "pads", "", "axes"], ["y"], name="pad_node")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a"])],
        opset=18,
        initializers=[pads, axes],
    )
    with pytest.raises(lowering.LoweringError, match=r"'pad_node' \(Pad\).*axes 'axes'.*rank"):
        lowering.lower(model, target_opset=17, ops=[])


def test_pad_11_value_float32_cannot_hold_goes_below_11_by_pads_rule():
    value = numpy_helper.from_array(np.array(0.1, np.float64), "value")
    pads = numpy_helper.from_array(np.array([1, 0], np.int64), "pads")
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "value"], ["y"], name="pad_node")],
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [4])],
        opset=11,
        initializer=[value, pads],
    )
    # (Pad-2's value is a float32 attribute: the node goes down by Pad's rule, copies of x and of v)
    converted = lowering.lower(model, target_opset=10, ops=[])
    assert "Pad" not in {node.op_type for node in converted.graph.node}
    x = np.array([1.5, -0.0, np.nan])
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(converted, {"x": x})
    assert got.tobytes() == want.tobytes() and got[0] == 0.1


# -- Resize going down: what its adapters refuse, and why ------------------------------------------

RESIZE_REFUSALS = [
    # (source opset, target opset, attributes, inputs, words of the refusal, X's type)
    # antialias and half_pixel_symmetric go down by the Resize rule, where it lowers the node
    # (not tf_crop_and_resize with antialias: the rule lowers it with a roi and without antialias only)
    (19, 13, {"antialias": 1, "mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     ("x", "", "scales"), "Resize-19 filters with antialias=1", TensorProto.FLOAT),
    # axes go down spread over every axis, a policy as one common scale where floor(s·d) is its round(s·d)
    # (else computed at run time, in coordinate modes half_pixel and asymmetric); in mode nearest the
    # Resize rule gathers the points onnxruntime reads (tests/rules/test_nearest_points.py), but not of
    # a double X, which onnxruntime resizes not (the last field: X's type):
    (18, 13, {"keep_aspect_ratio_policy": "not_smaller", "coordinate_transformation_mode": "align_corners"},
     ("x", "", "", "sizes2"), "round(1.5 * 1) = 2", TensorProto.DOUBLE),
    (19, 13, {"coordinate_transformation_mode": "half_pixel_symmetric", "mode": "nearest"}, ("x", "", "scales15"),
     "half_pixel_symmetric (from version 19)", TensorProto.DOUBLE),
    (13, 11, {"coordinate_transformation_mode": "tf_crop_and_resize"}, ("x", "", "", "sizes"), "and no roi",
     TensorProto.FLOAT),
]  # fmt: skip


def _resize_model(source: int, attributes: dict, inputs, element_type: int) -> onnx.ModelProto:
    initializers = [
        onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        onnx.numpy_helper.from_array(np.array([2, 2], np.float32), "scales2"),
        onnx.numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "scales15"),
        onnx.numpy_helper.from_array(np.array([1, 2, 6, 8], np.int64), "sizes"),
        onnx.numpy_helper.from_array(np.array([1, 3, 3, 4], np.int64), "sizes2"),
    ]
    return make_model(
        [helper.make_node("Resize", list(inputs), ["y"], name="up", **attributes)],
        [helper.make_tensor_value_info("x", element_type, [1, 2, 3, 4])],
        [helper.make_tensor_value_info("y", element_type, ("n", "c", "h", "w"))],
        opset=source,
        initializer=initializers,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("source, target, attributes, inputs, words, element_type", RESIZE_REFUSALS)
def test_resize_refusals_name_the_node_the_versions_and_what_cannot_be_said(
    source, target, attributes, inputs, words, element_type
):
    model = _resize_model(source, attributes, inputs, element_type)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=target, ops=[])
    message = str(refused.value)
    assert "node 'up' (Resize)" in message and words in message, message
    assert f"cannot go to opset {target}" in message, message


@pytest.mark.parametrize("refused", [r for r in RESIZE_REFUSALS if r[-1] == TensorProto.DOUBLE])
def test_resize_in_mode_nearest_the_adapter_refuses_goes_down_by_the_rule_for_a_float_x(refused):
    """The two nearest refusals above, X float: the Resize rule's Gathers of the points
    onnxruntime reads, bit for bit."""
    source, target, attributes, inputs, _, _ = refused
    model = _resize_model(source, attributes, inputs, TensorProto.FLOAT)
    converted = lowering.lower(model, target_opset=target, ops=[])
    assert "Resize" not in {node.op_type for node in converted.graph.node}
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4)).astype(np.float32)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(converted, {"x": x})
    assert got.tobytes() == want.tobytes()


def test_resize_with_sizes_goes_to_11_with_empty_roi_and_scales():
    model = make_model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="up", mode="linear", axes=[0, 1, 2, 3])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ("n", "c", "h", "w"))],
        opset=18,
        initializer=[onnx.numpy_helper.from_array(np.array([1, 2, 7, 5], np.int64), "sizes")],
    )
    result = lowering.lower_model(model, target_opset=11, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.adapted["Resize-18→11 via roi and scales given"] == 1
    (resize,) = [node for node in result.model.graph.node if node.op_type == "Resize"]
    assert len(resize.input) == 4 and all(resize.input) and not any(a.name == "axes" for a in resize.attribute)
    x = np.random.default_rng(3).standard_normal((1, 2, 3, 4)).astype(np.float32)
    assert_same_bits(run_onnxruntime(result.model, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


@pytest.mark.parametrize("target", [17, 11])
def test_reduce_18_with_axes_computed_from_a_static_shape_goes_down_with_them_folded(target):
    """axes = Range(rank - 1, rank, 1), rank = Size(Shape(x)) of an x of static shape: the value is
    folded (Scope.constant_value) and moved into the attribute, as RMSNormalization's body does."""
    nodes = [
        helper.make_node("Shape", ["x"], ["dims"]),
        helper.make_node("Size", ["dims"], ["rank"]),
        helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.int64))),
        helper.make_node("Sub", ["rank", "one"], ["last"]),
        helper.make_node("Range", ["last", "rank", "one"], ["axes"]),
        helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean"),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])],
        opset=18,
    )
    converted = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    (mean,) = [n for n in converted.graph.node if n.op_type == "ReduceMean"]
    assert [list(a.ints) for a in mean.attribute if a.name == "axes"] == [[1]]
    x = np.resize(EDGES, 6).reshape(2, 3)
    (want,), (got,) = run_onnxruntime(model, {"x": x}), run_onnxruntime(converted, {"x": x})
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_dropout_10_going_up_is_a_copy_and_its_mask_is_refused():
    """Dropout-10 in inference copies x (Identity at 13), but its mask has no agreed value there
    (all false in onnxruntime, all true in onnx.reference; version 12 states all true): refused,
    naming the node, the mask and the target, where it is given."""
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    info = helper.make_tensor_value_info
    plain = make_model(
        [helper.make_node("Dropout", ["x"], ["y"], ratio=0.25)],
        [info("x", TensorProto.FLOAT, (2, 3))],
        [info("y", TensorProto.FLOAT, (2, 3))],
        opset=10,
    )
    result = lowering.lower_model(plain, target_opset=13, ops=[])
    assert count_ops(result.model) == {"Identity": 1}
    assert result.report.adapted == {"Dropout-10→13 via Identity": 1}
    assert_same_bits(run_onnxruntime(result.model, {"x": x})[0], run_onnxruntime(plain, {"x": x})[0])
    masked = make_model(
        [helper.make_node("Dropout", ["x"], ["y", "mask"])],
        [info("x", TensorProto.FLOAT, (2, 3))],
        [info("y", TensorProto.FLOAT, (2, 3)), info("mask", TensorProto.BOOL, (2, 3))],
        opset=10,
    )
    with pytest.raises(lowering.LoweringError, match=r"Dropout-10 gives its mask 'mask'.*cannot go to opset 13"):
        lowering.lower(masked, target_opset=13, ops=[])


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_an_op_asked_for_whose_rule_does_not_apply_is_moved_by_its_adapter(element_type):
    """Resize-18 (linear, exclude_outside=1, antialias=0) asked to be lowered at 13: its rule
    does not apply (onnxruntime refuses that form), so the node stays, reported, and goes to 13 as
    any Resize-18 does: by its adapter, which drops antialias=0 (kept as it was, it held an
    attribute Resize-13 lacks, and the model's check refused it in onnx's words)."""
    info = helper.make_tensor_value_info
    scales = numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")
    model = make_model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=0, exclude_outside=1)],
        [info("x", element_type, (1, 1, 4, 4))],
        [info("y", element_type, (1, 1, 2, 2))],
        opset=18,
        initializer=[scales],
    )
    result = lowering.lower_model(model, ops=["Resize"], target_opset=13)
    onnx.checker.check_model(result.model, full_check=True)
    (resize,) = result.model.graph.node
    assert sorted(a.name for a in resize.attribute) == ["exclude_outside", "mode"]
    assert result.report.adapted == {"Resize-18→13 via new attributes at defaults": 1}
    assert [(left.op_type, left.reason) for left in result.report.remaining] == [
        ("Resize", "exclude_outside=1 in mode linear without antialias (onnxruntime refuses it)")
    ]


def dynamic_view(result_dims: list | None) -> onnx.ModelProto:
    """A dynamo export's view: ``Reshape(linear, Concat(Shape(x)[0:1], Shape(bias)[1:2], 3, 2, 8),
    allowzero=1)``, its sizes from other tensors' shapes at run time; ``linear`` stated
    [N, L, 48] and the result ``result_dims`` (None: not stated)."""
    info = helper.make_tensor_value_info
    weight = numpy_helper.from_array(np.linspace(-1, 1, 16 * 48, dtype=np.float32).reshape(16, 48), "w")
    tail = numpy_helper.from_array(np.array([3, 2, 8], np.int64), "tail")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["linear"]),
        helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
        helper.make_node("Shape", ["bias"], ["length"], start=1, end=2),
        helper.make_node("Concat", ["batch", "length", "tail"], ["sizes"], axis=0),
        helper.make_node("Reshape", ["linear", "sizes"], ["view"], name="view", allowzero=1),
    ]
    stated = [info("linear", TensorProto.FLOAT, ["N", "L", 48])]
    if result_dims is not None:
        stated.append(info("view", TensorProto.FLOAT, result_dims))
    graph = helper.make_graph(
        nodes,
        "main",
        [info("x", TensorProto.FLOAT, ["N", "L", 16]), info("bias", TensorProto.FLOAT, ["L", "L"])],
        [info("view", TensorProto.FLOAT, [None] * 5)],
        initializer=[weight, tail],
        value_info=stated,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize("target", [13, 11])
def test_reshape_14_whose_zeros_can_only_be_its_inputs_own_drops_allowzero(target):
    """allowzero=1 with sizes computed at run time: where the result is stated [N, L, 3, 2, 8]
    and the input [N, L, 48], a 0 in the sizes can only stand where the input's own size is 0,
    which the older Reshape copies: the same result, empty batches and empty lengths too."""
    model = dynamic_view(["N", "L", 3, 2, 8])
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    reshape = schemas.version_in_force("Reshape", target)
    assert result.report.adapted[f"Reshape-14→{reshape} via allowzero dropped"] == 1
    rng = np.random.default_rng(14)
    for batch, length in ((2, 6), (0, 5), (3, 0), (1, 1)):
        feeds = {
            "x": rng.standard_normal((batch, length, 16)).astype(np.float32),
            "bias": np.zeros((length, length), np.float32),
        }
        (want,) = run_onnxruntime(model, feeds)
        (got,) = run_onnxruntime(result.model, feeds)
        assert want.shape == got.shape == (batch, length, 3, 2, 8)
        assert_same_bits(got, want)


@slow_but_a_sample()
@pytest.mark.parametrize("result_dims", [None, ["N", "M", 3, 2, 8], ["N", None, 3, 2, 8], ["N", "L", 3, 2, "K"]])
def test_reshape_14_whose_zeros_may_be_its_own_goes_by_an_if(result_dims):
    """The result not stated, a size under another symbol or none, or a symbol past the input's
    rank: a 0 there could be the sizes' own, which allowzero=1 keeps and Reshape-5 copies: an If
    on whether the sizes hold a 0 (GPT-2's and the LLaMA family's views, dynamo at 18 and 20)."""
    model = dynamic_view(result_dims)
    converted = lowering.lower(model, target_opset=13, ops=[])
    assert "If" in {n.op_type for n in converted.graph.node}
    rng = np.random.default_rng(14)
    for batch, length in ((2, 6), (0, 5), (3, 0)):
        feeds = {
            "x": rng.standard_normal((batch, length, 16)).astype(np.float32),
            "bias": np.zeros((length, length), np.float32),
        }
        (want,), (got,) = run_onnxruntime(model, feeds), run_onnxruntime(converted, feeds)
        assert want.shape == got.shape == (batch, length, 3, 2, 8)
        assert_same_bits(got, want)


def test_reshape_14_proof_and_dropout_10_going_up_hold_inside_if_branches():
    """Inside If branches, reading the outer graph's values: a dynamic export's view (its zeros
    proved x's own from the branch's stated shapes) goes to 13 with allowzero dropped, and a
    Dropout-10 without its mask goes up to 13 as Identity; each gives what the original gives,
    an empty batch too."""
    info = helper.make_tensor_value_info
    outputs = [info("view", TensorProto.FLOAT, [None] * 5)]

    def if_of(branch: onnx.GraphProto, inputs: list, opset: int, ir_version: int) -> onnx.ModelProto:
        node = helper.make_node("If", ["c"], ["view"], then_branch=branch, else_branch=branch)
        graph = helper.make_graph([node], "main", [info("c", TensorProto.BOOL, []), *inputs], outputs)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=ir_version)

    view = dynamic_view(["N", "L", 3, 2, 8])
    viewing = helper.make_graph(
        list(view.graph.node),
        "viewing",
        [],
        outputs,
        initializer=list(view.graph.initializer),
        value_info=list(view.graph.value_info),
    )
    dynamic = [info("x", TensorProto.FLOAT, ["N", "L", 16]), info("bias", TensorProto.FLOAT, ["L", "L"])]
    written_at_18 = if_of(viewing, dynamic, 18, 8)
    viewed = lowering.lower_model(written_at_18, target_opset=13, ops=[])
    onnx.checker.check_model(viewed.model, full_check=True)
    assert viewed.report.adapted["Reshape-14→13 via allowzero dropped"] == 2
    rng = np.random.default_rng(15)
    for batch, length in ((2, 6), (0, 5)):
        feeds = {
            "c": np.array(True),
            "x": rng.standard_normal((batch, length, 16)).astype(np.float32),
            "bias": np.zeros((length, length), np.float32),
        }
        assert_same_bits(run_onnxruntime(viewed.model, feeds)[0], run_onnxruntime(written_at_18, feeds)[0])

    dropping = helper.make_graph(
        [
            helper.make_node("Dropout", ["x"], ["dropped"], ratio=0.25),
            helper.make_node("Reshape", ["dropped", "five"], ["view"]),
        ],
        "dropping",
        [],
        outputs,
        initializer=[numpy_helper.from_array(np.array([2, 6, 16, 1, 1], np.int64), "five")],
    )
    written_at_10 = if_of(dropping, [info("x", TensorProto.FLOAT, [2, 6, 16])], 10, 5)
    copied = lowering.lower_model(written_at_10, target_opset=13, ops=[])
    onnx.checker.check_model(copied.model, full_check=True)
    assert copied.report.adapted["Dropout-10→13 via Identity"] == 2
    feeds = {"c": np.array(False), "x": rng.standard_normal((2, 6, 16)).astype(np.float32)}
    assert_same_bits(run_onnxruntime(copied.model, feeds)[0], run_onnxruntime(written_at_10, feeds)[0])
