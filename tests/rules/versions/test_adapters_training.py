"""Version adapters going down across the steps that added training and layout switches
(rules/versions/dropout.py, normalization.py, recurrent.py, scatter.py, roialign.py): each
converts exactly where the older version can say the node, and is refused with our own sentence
(never onnx's converter's assertion) where it cannot."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.recurrent import RECURRENT_TOLERANCE
from lowering.rules.roialign import ROI_ALIGN_TOLERANCE, roi_align_reference
from onnx import TensorProto, helper, numpy_helper
from support import (
    make_model,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import feeds_of, node_cases, same_outputs, sweep_case

import lowering
from lowering.verification.runtime import run_onnxruntime, run_reference

FLOAT = TensorProto.FLOAT


def bits(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def assert_same_bits(got: list, want: list) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        assert np.array_equal(bits(a), bits(b)), f"{a.reshape(-1)[:6]} vs {b.reshape(-1)[:6]}"


def edge_values(dtype, shape) -> np.ndarray:
    """NaN of both signs with payloads (a signaling one too), ±inf, ±0, subnormals, extremes."""
    dtype = np.dtype(dtype)
    info = np.finfo(dtype)
    special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.smallest_subnormal, -info.smallest_subnormal]
    special += [info.max, -info.max, info.tiny, 1.5, -2.25]
    values = np.resize(np.array(special, dtype), shape).copy()
    flat = values.reshape(-1).view(f"u{dtype.itemsize}")
    exponent_bits = {2: 0x7C00, 4: 0x7F800000, 8: 0x7FF0000000000000}[dtype.itemsize]
    flat[0] = exponent_bits | 1  # a signaling NaN with payload 1
    return values


def lowered(model: onnx.ModelProto, target: int):
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    return result


def op_types(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


def refusal(model: onnx.ModelProto, target: int) -> str:
    with pytest.raises(lowering.LoweringError) as caught:
        lowering.lower(model, target_opset=target, ops=[])
    message = str(caught.value)
    assert "Assertion" not in message and "onnx's version converter" not in message, message
    assert f"cannot go to opset {target}" in message, message
    return message


# -- Dropout ----------------------------------------------------------------------------------------


def dropout_model(opset: int, element_type: int, *, ratio=None, training=None, mask=True) -> onnx.ModelProto:
    """Dropout of x [3, 4] with ratio and training_mode as initializers where given."""
    inputs = ["x", "" if ratio is None else "ratio", "" if training is None else "training_mode"]
    while not inputs[-1]:
        inputs.pop()
    initializers = [numpy_helper.from_array(np.array(ratio, np.float32), "ratio")] if ratio is not None else []
    if training is not None:
        initializers.append(numpy_helper.from_array(np.array(training, np.bool_), "training_mode"))
    outputs = ["y", "mask"] if mask else ["y"]
    node = helper.make_node("Dropout", inputs, outputs, name="dropout")
    output_infos = [helper.make_tensor_value_info("y", element_type, [3, 4])]
    if mask:
        output_infos.append(helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 4]))
    model = make_model([node], [helper.make_tensor_value_info("x", element_type, [3, 4])], output_infos, opset=opset)
    model.graph.initializer.extend(initializers)
    return model


DTYPES = {FLOAT: np.float32, TensorProto.FLOAT16: np.float16, TensorProto.DOUBLE: np.float64}


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", list(DTYPES))
@pytest.mark.parametrize("source", [12, 13, 22])
@pytest.mark.parametrize("target", [11, 9])
@pytest.mark.parametrize(
    "ratio, training", [(None, None), (0.3, None), (0.3, False), (0.0, True)], ids=["plain", "ratio", "off", "zero"]
)
def test_dropout_in_inference_is_an_identity_and_a_true_mask(element_type, source, target, ratio, training):
    model = dropout_model(source, element_type, ratio=ratio, training=training)
    result = lowered(model, target)
    assert op_types(result.model) == ["Identity", "Constant", "ConstantOfShape"]  # (x's static shape folded)
    assert list(result.report.adapted) == [f"Dropout-{source}→{10 if target >= 10 else 7} via Identity"]
    x = edge_values(DTYPES[element_type], (3, 4))
    # the spec's copy of x, its signaling NaN too, and a mask of all true (onnxruntime's own
    # Dropout-10 gives all false)
    assert_same_bits(run_onnxruntime(result.model, {"x": x}), [x, np.ones((3, 4), bool)])
    if element_type == TensorProto.FLOAT16:
        # onnxruntime runs float16 Dropout in float32, which quiets a signaling NaN: compared
        # with the original on quiet NaNs only
        x.reshape(-1).view(np.uint16)[0] |= 0x0200
    assert_same_bits(run_onnxruntime(result.model, {"x": x}), run_onnxruntime(model, {"x": x}))


def test_dropout_without_mask_is_a_lone_identity_down_to_opset_7():
    model = dropout_model(13, FLOAT, ratio=0.5, mask=False)
    result = lowered(model, 7)
    assert op_types(result.model) == ["Identity"]


def test_dropout_13_with_a_mask_no_longer_becomes_dropout_10_whose_mask_is_false():
    """Dropout-13(x) with a mask has Dropout-10's signature; re-versioned as it is, onnxruntime
    would give a mask of all false, so the step's known change sends it through the adapter."""
    model = dropout_model(13, FLOAT)
    result = lowered(model, 10)
    assert "Dropout" not in op_types(result.model)
    assert run_onnxruntime(result.model, {"x": np.ones((3, 4), np.float32)})[1].all()


@pytest.mark.parametrize(
    "ratio, training, words",
    [
        (0.5, True, "at random in training mode with ratio 0.5"),
        (None, True, "with the default ratio 0.5"),
    ],
)
def test_dropout_in_training_is_refused(ratio, training, words):
    message = refusal(dropout_model(22, FLOAT, ratio=ratio, training=training), 11)
    assert words in message and "Dropout-22" in message


def test_dropout_with_training_mode_fed_at_run_time_is_refused():
    model = dropout_model(22, FLOAT, ratio=0.5)
    model.graph.node[0].input.append("t")
    model.graph.input.append(helper.make_tensor_value_info("t", TensorProto.BOOL, []))
    assert "computed at run time" in refusal(model, 11)


def test_dropout_mask_below_opset_9_is_refused():
    assert "ConstantOfShape (from opset 9)" in refusal(dropout_model(13, FLOAT), 8)


# -- BatchNormalization -----------------------------------------------------------------------------


def batch_norm_model(opset: int, types=(FLOAT,) * 5, outputs=("y",), **attributes) -> onnx.ModelProto:
    names = ["x", "scale", "bias", "mean", "var"]
    shapes = [[2, 3, 4], [3], [3], [3], [3]]
    node = helper.make_node("BatchNormalization", names, list(outputs), name="bn", **attributes)
    infos = [helper.make_tensor_value_info(n, t, s) for n, t, s in zip(names, types, shapes, strict=True)]
    out_infos = [helper.make_tensor_value_info("y", types[0], [2, 3, 4])]
    out_infos += [helper.make_tensor_value_info(name, types[3], [3]) for name in outputs[1:]]
    return make_model([node], infos, out_infos, opset=opset)


# No adapter takes these below 14 (training mode has no agreed meaning at 9-13; version 9 takes one
# type and no bfloat16): the rule for BatchNormalization-14/15 (rules/batch_normalization.py) writes
# the node's own formula there, within its stated tolerance.
@pytest.mark.parametrize(
    ("target", "types", "attributes", "outputs"),
    [
        (13, (FLOAT,) * 5, {"training_mode": 1}, ("y", "running_mean", "running_var")),
        (11, (FLOAT,) * 5, {"training_mode": 1}, ("y", "running_mean", "running_var")),
        (9, (FLOAT,) * 5, {"training_mode": 1}, ("y",)),
        (13, (TensorProto.FLOAT16, FLOAT, FLOAT, FLOAT, FLOAT), {}, ("y",)),
        (13, (TensorProto.BFLOAT16,) * 5, {}, ("y",)),
    ],
    ids=["training at 13", "training at 11", "training at 9", "float16 x with float scale", "bfloat16 at 13"],
)
def test_batch_norm_no_adapter_takes_down_goes_by_its_rule(target, types, attributes, outputs):
    model = batch_norm_model(15, types=types, outputs=outputs, **attributes)
    result = lowering.lower_model(model, target_opset=target, ops=[])
    assert result.report.rewritten == {"BatchNormalization-15": 1}
    onnx.checker.check_model(result.model, full_check=True)
    rng = np.random.default_rng(target)
    dtypes = [DTYPES.get(t) or ml_dtypes.bfloat16 for t in types]
    feeds = {"x": rng.standard_normal([2, 3, 4]).astype(dtypes[0])}
    feeds |= {
        name: rng.uniform(0.5, 1.5, 3).astype(d)
        for name, d in zip(("scale", "bias", "mean", "var"), dtypes[1:], strict=True)
    }
    got = run_onnxruntime(result.model, feeds)
    rule = lowering.registry.rule_for("", "BatchNormalization")
    want = rule.reference(*feeds.values(), **attributes)
    want = want if isinstance(want, tuple) else (want,)
    for value, expected in zip(got, want[: len(outputs)], strict=True):
        assert not rule.tolerance[types[0]].mismatches(value, expected).any()


def test_batch_norm_inference_with_statistics_outputs_is_refused():
    model = batch_norm_model(15, outputs=("y", "running_mean", "running_var"), training_mode=0)
    assert "invalid in inference" in refusal(model, 13)


@pytest.mark.parametrize("element_type", [FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE])
def test_batch_norm_inference_of_one_type_keeps_its_bits(element_type):
    model = batch_norm_model(15, types=(element_type,) * 5, training_mode=0)
    result = lowered(model, 11)
    assert list(result.report.adapted) == ["BatchNormalization-15→9 via inference form"]
    rng = np.random.default_rng(3)
    dtype = DTYPES[element_type]
    feeds = {"x": edge_values(dtype, (2, 3, 4))}
    feeds |= {name: rng.standard_normal(3).astype(dtype) for name in ("scale", "bias", "mean")}
    feeds["var"] = rng.random(3).astype(dtype) + dtype(0.5)
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


# -- LSTM, GRU, RNN ---------------------------------------------------------------------------------

BATCH, SEQ, INPUT, HIDDEN = 3, 4, 2, 5
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(op_type: str, opset: int, layout: int | None, directions: int = 2) -> onnx.ModelProto:
    """op_type over every input and output, batch first where layout=1: X, W, R, B,
    sequence_lens, initial_h (and initial_c, P for LSTM); Y, Y_h (and Y_c)."""
    lstm = op_type == "LSTM"
    gates = GATES[op_type]

    def batch_first(shape):
        return [shape[1], shape[0], *shape[2:]] if layout == 1 else shape

    state = batch_first([directions, BATCH, HIDDEN])
    inputs = [
        ("X", batch_first([SEQ, BATCH, INPUT])),
        ("W", [directions, gates * HIDDEN, INPUT]),
        ("R", [directions, gates * HIDDEN, HIDDEN]),
        ("B", [directions, 2 * gates * HIDDEN]),
        ("sequence_lens", [BATCH]),
        ("initial_h", state),
    ]
    if lstm:
        inputs += [("initial_c", state), ("P", [directions, 3 * HIDDEN])]
    y_shape = [BATCH, SEQ, directions, HIDDEN] if layout == 1 else [SEQ, directions, BATCH, HIDDEN]
    outputs = [("Y", y_shape), ("Y_h", state)] + ([("Y_c", state)] if lstm else [])
    attributes = {"hidden_size": HIDDEN, "direction": "bidirectional" if directions == 2 else "forward"}
    if layout is not None:
        attributes["layout"] = layout
    node = helper.make_node(op_type, [n for n, _ in inputs], [n for n, _ in outputs], name="cell", **attributes)
    infos = [
        helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else FLOAT, s) for n, s in inputs
    ]
    return make_model([node], infos, [helper.make_tensor_value_info(n, FLOAT, s) for n, s in outputs], opset=opset)


def recurrent_feeds(model: onnx.ModelProto, seed: int = 5) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for info in model.graph.input:
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        if info.name == "sequence_lens":
            feeds[info.name] = np.array([SEQ, 2, 3], np.int32)
        else:
            feeds[info.name] = (rng.standard_normal(shape) * 0.7).astype(np.float32)
    return feeds


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", list(GATES))
@pytest.mark.parametrize("target", [13, 11])
def test_batch_first_recurrence_is_the_layout_0_node_between_transposes(op_type, target):
    """The result in onnxruntime (which refuses layout=1 itself) gives the bits of the layout-0
    node fed the transposed inputs, transposed back; onnx.reference gives the same bits for
    the original and the result."""
    model = recurrent_model(op_type, 22, layout=1)
    result = lowered(model, target)
    assert list(result.report.adapted) == [f"{op_type}-22→{14 if target >= 14 else 7} via batch-first Transposes"]
    cell = next(n for n in result.model.graph.node if n.op_type == op_type)
    assert all(a.name != "layout" for a in cell.attribute)
    feeds = recurrent_feeds(model)
    got = run_onnxruntime(result.model, feeds)

    layout_0 = recurrent_model(op_type, target, layout=None)
    swapped = {k: (v.transpose(1, 0, 2) if k in ("X", "initial_h", "initial_c") else v) for k, v in feeds.items()}
    y, *states = run_onnxruntime(layout_0, swapped)
    assert_same_bits(got, [y.transpose(2, 0, 1, 3), *[s.transpose(1, 0, 2) for s in states]])
    assert_same_bits(run_reference(result.model, feeds), run_reference(model, feeds))


@pytest.mark.parametrize("op_type", list(GATES))
def test_layout_0_is_dropped(op_type):
    model = recurrent_model(op_type, 22, layout=0, directions=1)
    result = lowered(model, 13)
    assert op_types(result.model) == [op_type]
    feeds = recurrent_feeds(model)
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


def test_bfloat16_recurrence_goes_to_13_lowered():
    """GRU-7 takes no bfloat16: at 13 the node is lowered (rules/recurrent.py), within its tolerance."""
    model = recurrent_model("GRU", 22, layout=1, directions=1)
    for info in [*model.graph.input, *model.graph.output]:
        if info.type.tensor_type.elem_type == FLOAT:
            info.type.tensor_type.elem_type = TensorProto.BFLOAT16
    result = lowered(model, 13)
    assert result.report.lines() == ["lowered 1 x GRU-22"]
    assert "GRU" not in op_types(result.model)
    rng = np.random.default_rng(0)
    feeds = {  # (every sequence whole: onnx.reference's GRU reads no sequence_lens)
        info.name: np.full(dims(info), SEQ, np.int32)
        if info.name == "sequence_lens"
        else rng.standard_normal(dims(info)).astype(ml_dtypes.bfloat16)
        for info in model.graph.input
    }
    tolerance = RECURRENT_TOLERANCE[TensorProto.BFLOAT16]
    for got, want in zip(run_onnxruntime(result.model, feeds), run_reference(model, feeds), strict=True):
        assert not tolerance.mismatches(got, want).any()


def dims(info: onnx.ValueInfoProto) -> list[int]:
    return [d.dim_value for d in info.type.tensor_type.shape.dim]


# -- ScatterND, ScatterElements ---------------------------------------------------------------------


def scatter_model(op_type: str, opset: int, rows: int = 3, element_type: int = FLOAT, **attributes) -> onnx.ModelProto:
    """op_type on data [4, 3] with ``rows`` rows of indices (ScatterND: one index each)."""
    nd = op_type == "ScatterND"
    node = helper.make_node(op_type, ["data", "indices", "updates"], ["y"], name="scatter", **attributes)
    return make_model(
        [node],
        [
            helper.make_tensor_value_info("data", element_type, [4, 3]),
            helper.make_tensor_value_info("indices", TensorProto.INT64, [rows, 1] if nd else [rows, 3]),
            helper.make_tensor_value_info("updates", element_type, [rows, 3]),
        ],
        [helper.make_tensor_value_info("y", element_type, [4, 3])],
        opset=opset,
    )


# Distinct indices (for no reduction), and duplicate ones, negative too (-3 is row 1), whose
# updates give another sum in another order (1e8 + 1 - 1e8 is 0 in float32 in that order only).
SCATTER_INDICES = {
    ("ScatterND", False): [[3], [0], [1]],
    ("ScatterND", True): [[1], [-3], [3]],
    ("ScatterElements", False): [[3, 0, -1], [1, 2, 0], [0, 1, 1]],
    ("ScatterElements", True): [[1, 2, -1], [-3, 2, 3], [1, 2, 3]],
}
SCATTER_UPDATES = np.array([[1e8, -0.0, np.inf], [1.0, np.nan, -3.0], [-1e8, 2.5, -np.inf]], np.float32)


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", ["ScatterND", "ScatterElements"])
@pytest.mark.parametrize("target", [17, 13, 11])
@pytest.mark.parametrize("reduction", [None, "none", "add", "mul", "max", "min"])
def test_scatter_goes_down_with_the_bits_of_its_reduction(op_type, target, reduction):
    """No reduction: the node re-versioned; add and mul below 16, max and min below 18: one
    update at a time in index order (rules/scatter_reduction.py), giving the bits of
    onnxruntime's own sequential reduction, NaN and ±inf too (max and min as onnxruntime takes
    NaN and ±0)."""
    model = scatter_model(op_type, 18, **({} if reduction is None else {"reduction": reduction}))
    result = lowered(model, target)
    stepped = (reduction in ("add", "mul") and target < 16) or reduction in ("max", "min")
    reductions = [a for n in result.model.graph.node for a in n.attribute if a.name == "reduction"]
    assert (not reductions and len(result.model.graph.node) > 1) if stepped else len(result.model.graph.node) == 1
    if target < 16 and not stepped:
        (node,) = result.model.graph.node
        assert all(a.name != "reduction" for a in node.attribute)
    duplicates = reduction not in (None, "none")
    feeds = {
        "data": edge_values(np.float32, (4, 3)),
        "indices": np.array(SCATTER_INDICES[(op_type, duplicates)], np.int64),
        "updates": SCATTER_UPDATES,
    }
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", ["ScatterND", "ScatterElements"])
@pytest.mark.parametrize("element_type", [TensorProto.INT32, TensorProto.INT64, TensorProto.DOUBLE])
@pytest.mark.parametrize("reduction", ["add", "mul"])
def test_scatter_reductions_on_other_types_and_no_updates(op_type, element_type, reduction):
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    for rows in (3, 0):
        model = scatter_model(op_type, 18, rows=rows, element_type=element_type, reduction=reduction)
        result = lowered(model, 11)
        indices = np.array(SCATTER_INDICES[(op_type, True)], np.int64)[:rows]
        updates = (np.arange(9).reshape(3, 3)[:rows] - 4).astype(dtype)
        feeds = {"data": (np.arange(12).reshape(4, 3) + 1).astype(dtype), "indices": indices, "updates": updates}
        assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


def test_scatter_add_on_a_type_add_lacks_at_the_target_is_refused():
    model = scatter_model("ScatterND", 18, element_type=TensorProto.INT8, reduction="add")
    assert "of type int8, which Add at opset 13 does not take" in refusal(model, 13)


# -- RoiAlign ---------------------------------------------------------------------------------------


def roi_align_model(opset: int, element_type=FLOAT, **attributes) -> onnx.ModelProto:
    node = helper.make_node(
        "RoiAlign", ["X", "rois", "batch_indices"], ["Y"], name="roi_align", output_height=3, output_width=4,
        sampling_ratio=2, spatial_scale=0.5, **attributes,
    )  # fmt: skip
    return make_model(
        [node],
        [
            helper.make_tensor_value_info("X", element_type, [2, 3, 8, 9]),
            helper.make_tensor_value_info("rois", element_type, [3, 4]),
            helper.make_tensor_value_info("batch_indices", TensorProto.INT64, [3]),
        ],
        [helper.make_tensor_value_info("Y", element_type, [3, 3, 3, 4])],
        opset=opset,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("element_type", [FLOAT, TensorProto.DOUBLE])
@pytest.mark.parametrize("target", [15, 13, 10])
def test_roi_align_output_half_pixel_is_roi_align_10(mode, element_type, target):
    model = roi_align_model(16, element_type, mode=mode, coordinate_transformation_mode="output_half_pixel")
    result = lowered(model, target)
    (node,) = result.model.graph.node
    assert all(a.name != "coordinate_transformation_mode" for a in node.attribute)
    dtype = DTYPES[element_type]
    rng = np.random.default_rng(16)
    feeds = {
        "X": (rng.standard_normal((2, 3, 8, 9)) * 3).astype(dtype),
        # one roi narrower than a pixel once scaled: stretched to one pixel by both
        "rois": np.array([[0.0, 0.0, 13.0, 11.0], [3.3, 2.1, 9.7, 15.2], [4.0, 4.0, 4.5, 5.0]], dtype),
        "batch_indices": np.array([0, 1, 1], np.int64),
    }
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


ROI_FEEDS_RNG = 16


def roi_feeds(dtype) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(ROI_FEEDS_RNG)
    return {
        "X": (rng.standard_normal((2, 3, 8, 9)) * 3).astype(dtype),
        "rois": np.array([[0.0, 0.0, 13.0, 11.0], [3.3, 2.1, 9.7, 15.2], [4.0, 4.0, 4.5, 5.0]], dtype),
        "batch_indices": np.array([0, 1, 1], np.int64),
    }


@pytest.mark.parametrize("attributes", [{}, {"coordinate_transformation_mode": "half_pixel"}])
def test_roi_align_half_pixel_goes_below_16_by_the_rule_from_12(attributes):
    """RoiAlign-10 knows no half_pixel: from opset 12 the rule (rules/roialign.py) lowers the node,
    within its tolerance; below 12 it is refused."""
    model = roi_align_model(16, **attributes)
    result = lowered(model, 13)
    assert "RoiAlign" not in op_types(result.model)
    feeds = roi_feeds(np.float32)
    (got,) = run_onnxruntime(result.model, feeds)
    assert not ROI_ALIGN_TOLERANCE[FLOAT].mismatches(got, run_onnxruntime(model, feeds)[0]).any()
    assert "coordinate_transformation_mode half_pixel" in refusal(model, 11)


def test_roi_align_on_bfloat16_goes_to_13_by_the_rule():
    """RoiAlign-10 takes no bfloat16: the rule lowers the node (onnxruntime has no bfloat16 RoiAlign,
    so the rule's reference is the oracle)."""
    model = roi_align_model(22, TensorProto.BFLOAT16, coordinate_transformation_mode="output_half_pixel")
    result = lowered(model, 13)
    assert "RoiAlign" not in op_types(result.model)
    feeds = roi_feeds(ml_dtypes.bfloat16)
    (got,) = run_onnxruntime(result.model, feeds)
    attributes = {a.name: helper.get_attribute_value(a) for a in model.graph.node[0].attribute}
    want = roi_align_reference(*feeds.values(), **attributes)
    assert not ROI_ALIGN_TOLERANCE[TensorProto.BFLOAT16].mismatches(got, want).any()


# -- the backend corpus pairs issue 13 names --------------------------------------------------------

CONVERTING = {
    11: [
        "test_dropout_default", "test_dropout_default_ratio", "test_dropout_default_mask",
        "test_dropout_default_mask_ratio", "test_gru_batchwise", "test_lstm_batchwise", "test_simple_rnn_batchwise",
        "test_roialign_aligned_false", "test_roialign_mode_max", "test_scatternd_add", "test_scatternd_multiply",
        "test_scatter_elements_with_duplicate_indices", "test_scatter_elements_with_reduction_mul",
        "test_batchnorm_example_training_mode",  # (by its rule: rules/batch_normalization.py)
    ],
    13: [
        "test_gru_batchwise", "test_lstm_batchwise", "test_simple_rnn_batchwise", "test_roialign_aligned_false",
        "test_roialign_mode_max", "test_scatternd_add", "test_scatter_elements_with_reduction_mul",
        "test_batchnorm_epsilon_training_mode", "test_scatternd_max", "test_scatter_elements_with_reduction_min",
    ],
    17: ["test_scatternd_max", "test_scatter_elements_with_reduction_min"],
}  # fmt: skip
REFUSED = {
    11: ["test_training_dropout", "test_roialign_aligned_true"],
}
PAIRS = [(t, name, True) for t, names in CONVERTING.items() for name in names]
PAIRS += [(t, name, False) for t, names in REFUSED.items() for name in names]


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name", "converts"), PAIRS, ids=[f"{t}-{n}" for t, n, _ in PAIRS])
def test_backend_pairs_convert_and_match_or_are_refused_in_our_words(target, name, converts):
    case = next(c for c in node_cases() if c.name == name)
    outcome = sweep_case(case, target)
    if not converts:
        assert outcome.ours == "refuses" and "cannot go to opset" in outcome.detail, outcome.detail
        assert "Assertion" not in outcome.detail
        return
    assert outcome.ours == "converts" and not outcome.ours_wrong, outcome.detail
    # the batch-first recurrences do not run in onnxruntime as they are: ours is compared with
    # the case's expected outputs here
    ours = lowering.lower(case.model, target_opset=target, ops=[])
    for inputs, expected in case.data_sets:
        assert same_outputs(run_onnxruntime(ours, feeds_of(ours, inputs)), expected)
