"""Pad lowered to copies along each padded axis (rules/pad.py): constant (its value fed at run time
or constant, NaN payloads and -0 among them, or absent), edge, reflect and wrap; negative pads,
axes (negative ones too), shapes known or not, at opsets 11 to the newest; bit for bit against
onnxruntime's kernel and the rule's numpy reference, every type onnxruntime pads; what
onnxruntime fails the rule declines (and onnxruntime is checked to fail it)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import (
    assert_same_elements,
    lowered_wholly,
    make_model,
    nested_forms,
    output_or_error,
    random_elements,
    runs_in_onnxruntime,
)
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for

VALUES = np.array([0x80000000, 0x7FC00005, 0xFF800000, 0x3F800000, 0x00000001], np.uint32).view(np.float32)
NEWEST = schemas.newest_opset()


def pad_model(shape, pads, mode, *, value=None, fed_value=False, axes=None, opset=NEWEST, known=True,
              element_type=TensorProto.FLOAT):  # fmt: skip
    """y = Pad(x, pads, value, axes): pads and axes constants, value fed (a 0-D input ``v``) or constant."""
    names, inputs = (
        ["x", "pads"],
        [helper.make_tensor_value_info("x", element_type, shape if known else [None] * len(shape))],
    )
    initializer = [numpy_helper.from_array(np.array(pads, np.int64), "pads")]
    if value is not None:
        names.append("v")
        if fed_value:
            inputs.append(helper.make_tensor_value_info("v", element_type, []))
        else:
            initializer.append(floats.tensor(np.array(value, floats.numpy_dtype(element_type)), "v"))
    if axes is not None:
        names += [""] * (value is None) + ["axes"]
        initializer.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    node = helper.make_node("Pad", names, ["y"], name="pad", mode=mode)
    output = helper.make_tensor_value_info("y", element_type, [None] * len(shape))
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def random_form(rng):
    rank = int(rng.integers(1, 4))
    shape = [int(s) for s in rng.integers(1, 5, rank)]
    mode = str(rng.choice(["constant", "edge", "reflect", "wrap"]))
    opset = int(rng.choice([11, 13, 18, 19, 21, NEWEST]))
    opset = max(opset, 19) if mode == "wrap" else opset
    axes = None
    if opset >= 18 and rng.random() < 0.4:
        chosen = rng.permutation(rank)[: int(rng.integers(1, rank + 1))]
        axes = [int(a) - rank if rng.random() < 0.5 else int(a) for a in chosen]
    pads = [int(p) for p in rng.integers(-2, 5, 2 * (rank if axes is None else len(axes)))]
    value = VALUES[rng.integers(0, len(VALUES))] if mode == "constant" and rng.random() < 0.8 else None
    return shape, pads, mode, {"value": value, "fed_value": bool(rng.random() < 0.5), "axes": axes, "opset": opset,
                               "known": bool(rng.random() < 0.7)}  # fmt: skip


@pytest.mark.parametrize("seed", range(4))
def test_random_forms_are_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    reference = rule_for("", "Pad").reference
    lowered_count = 0
    for _ in range(60):
        shape, pads, mode, form = random_form(rng)
        model = pad_model(shape, pads, mode, **form)
        x = random_elements(TensorProto.FLOAT, shape, rng)
        feeds = {"x": x} | (
            {"v": np.array(form["value"], np.float32)} if form["fed_value"] and form["value"] is not None else {}
        )
        result = lowering.lower_model(model, ops=["Pad"])
        kernel = output_or_error(model, feeds)
        where = f"{shape} pads {pads} {mode} {form}"
        if not result.report.complete:
            assert not form["known"] or isinstance(kernel, str), f"declined what onnxruntime runs: {where}"
            continue
        lowered_count += 1
        written = {node.op_type for node in result.model.graph.node} - {"Identity"}  # (x itself, unpadded)
        assert written <= set(rule_for("", "Pad").emits), f"{where}: writes {written}, which the rule's emits leave out"
        got = output_or_error(result.model, feeds)
        if isinstance(kernel, str):
            assert isinstance(got, str), f"onnxruntime fails, the lowered model runs: {where}"
            continue
        assert_same_elements(got, kernel)
        axes = None if form["axes"] is None else np.array(form["axes"])
        assert_same_elements(reference(x, pads, form["value"], axes, mode=mode), kernel)
    assert lowered_count > 20


@pytest.mark.parametrize("value", VALUES, ids=["-0", "NaN payload", "-inf", "1", "subnormal"])
def test_a_value_fed_at_run_time_is_copied_as_it_is(value):
    """The form tract and TVM refuse (Pad's value not a constant): the lowered model writes no Pad."""
    model = pad_model([2, 3], [1, 0, 2, -1], "constant", value=value, fed_value=True)
    lowered = lowered_wholly(model, "Pad")
    x = random_elements(TensorProto.FLOAT, [2, 3], np.random.default_rng(1))
    feeds = {"x": x, "v": np.array(value, np.float32)}
    assert_same_elements(runs_in_onnxruntime(lowered, feeds)[0], runs_in_onnxruntime(model, feeds)[0])


@pytest.mark.parametrize(
    "element_type",
    [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8, TensorProto.UINT8,
     TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL, TensorProto.STRING],
    ids=schemas.type_name,
)  # fmt: skip
@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_other_types(element_type, mode):
    """Against onnxruntime's kernel where it pads the type, else against the rule's reference."""
    if element_type == TensorProto.STRING and mode != "constant":
        return  # (declined: test_strings_are_padded_by_concat_only)
    if element_type == TensorProto.BFLOAT16 and mode == "constant":
        return  # (declined, no bfloat16 Expand: test_what_onnxruntime_fails_or_runs_otherwise_is_declined)
    rng = np.random.default_rng(element_type)
    x = random_elements(element_type, [3, 4], rng)
    value = random_elements(element_type, [], rng) if mode == "constant" else None
    model = pad_model([3, 4], [1, 2, 2, -1], mode, value=value, fed_value=True, element_type=element_type)
    lowered = lowered_wholly(model, "Pad")
    feeds = {"x": x} | ({"v": np.asarray(value)} if value is not None else {})
    got = runs_in_onnxruntime(lowered, feeds)
    want = rule_for("", "Pad").reference(x, [1, 2, 2, -1], value, mode=mode)
    if got is None:  # no onnxruntime kernel for the lowered ops on this type either
        got = [lowering.verification.runtime.run_reference(lowered, feeds)[0]]
    kernel = runs_in_onnxruntime(model, feeds)
    if kernel is not None:
        assert_same_elements(want, kernel[0])
    assert_same_elements(got[0], want)


@pytest.mark.parametrize(
    ("shape", "pads", "mode", "reason"),
    [
        ([2, 3], [0, 3, 0, 0], "reflect", "by more than 2: onnxruntime fails"),
        ([2, 3], [0, -2, 0, 1], "reflect", "by more than 0: onnxruntime fails"),
        ([2, 3], [0, -3, 0, 0], "edge", "cropped to nothing"),
        ([2, 0], [0, 1, 0, 0], "edge", "of length 0"),
        ([0, 3], [0, 1, 0, 0], "wrap", "holds no element"),
    ],
)
def test_what_onnxruntime_fails_is_declined(shape, pads, mode, reason):
    model = pad_model(shape, pads, mode)
    result = lowering.lower_model(model, ops=["Pad"])
    assert reason in " ".join(result.report.lines())
    assert isinstance(output_or_error(model, {"x": np.ones(shape, np.float32)}), str), "onnxruntime runs it"


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (pad_model([2, 3], [0, 1, 0, 1], "edge", known=False), "of length None"),
        (pad_model([2, 3], [0, -1, 0, 1], "constant", known=False), "crop axis 1 of unknown length"),
    ],
    ids=["edge of unknown length", "crop of unknown length"],
)
def test_lengths_the_copies_need_unknown_are_declined(model, reason):
    assert reason in " ".join(lowering.lower_model(model, ops=["Pad"]).report.lines())


def test_pads_given_at_run_time_are_declined():
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="constant")
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("pads", TensorProto.INT64, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])],
        opset=13,
    )  # fmt: skip
    assert "pads are given at run time" in " ".join(lowering.lower_model(model, ops=["Pad"]).report.lines())


def test_inside_if_branches_and_local_functions():
    model = pad_model([2, 3], [1, 1, 0, 2], "constant", value=VALUES[1], fed_value=True)
    for label, nested in nested_forms(model).items():
        assert 'op_type: "Pad"' not in str(lowering.lower(nested, ops=["Pad"])), label


def test_strings_are_padded_by_concat_only():
    """onnxruntime's Gather on strings copies one string of each block it gathers along a leading
    axis (the others come back empty): the modes copying by Gather decline strings."""
    x = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    node = helper.make_node("Gather", ["x", "i"], ["y"], axis=0)
    gather = make_model(
        [node], [helper.make_tensor_value_info("x", TensorProto.STRING, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2, 3])], opset=13,
        initializer=[numpy_helper.from_array(np.array([1, 0], np.int64), "i")],
    )  # fmt: skip
    assert runs_in_onnxruntime(gather, {"x": x})[0].tolist() != x[[1, 0]].tolist()
    model = pad_model([2, 3], [1, 0, 1, 0], "edge", element_type=TensorProto.STRING)
    assert "on strings" in " ".join(lowering.lower_model(model, ops=["Pad"]).report.lines())


@pytest.mark.parametrize("opset", [9, 10])
@pytest.mark.parametrize(
    ("mode", "pads", "value"), [("constant", [1, -1, 0, 2], 2.5), ("reflect", [0, 2, 1, -1], None)]
)
def test_version_2_takes_its_pads_and_value_as_attributes(opset, mode, pads, value):
    attributes = {"mode": mode, "pads": pads} | ({"value": value} if value is not None else {})
    node = helper.make_node("Pad", ["x"], ["y"], **attributes)
    model = make_model(
        [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], opset=opset,
    )  # fmt: skip
    lowered = lowered_wholly(model, "Pad")
    x = random_elements(TensorProto.FLOAT, [3, 4], np.random.default_rng(opset))
    want = runs_in_onnxruntime(model, {"x": x})[0]
    assert_same_elements(runs_in_onnxruntime(lowered, {"x": x})[0], want)
    assert_same_elements(rule_for("", "Pad").reference(x, pads, value, mode=mode), want)


@pytest.mark.parametrize("name", ["test_col2im", "test_col2im_pads", "test_col2im_5d"])
def test_lowered_in_turn_inside_another_rule_s_expansion(name):
    """Where Pad is lowered too, the Pad of constant pads Col2Im's expansion writes (its image and
    block shapes constant) is lowered by this rule: the values of the Constant nodes an expansion
    made are constants to the rule lowering its ops in turn (Builder)."""
    case = node_cases_of("Col2Im")[name]
    feeds, _ = next(fed_data_sets(case))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    shapes = [info for info in model.graph.input if info.name != "input"]
    model.graph.initializer.extend(numpy_helper.from_array(np.asarray(feeds.pop(i.name)), i.name) for i in shapes)
    model.graph.input.remove(shapes[0])
    model.graph.input.remove(shapes[1])
    result = lowering.lower_model(model, ops=["Col2Im", "Pad"])
    assert result.report.complete, result.report.lines()
    assert not {"Col2Im", "Pad"} & {node.op_type for node in result.model.graph.node}
    assert_same_elements(runs_in_onnxruntime(result.model, feeds)[0], runs_in_onnxruntime(model, feeds)[0])


def _with_value_of_shape(shape, mode, value_shape, *, opset=18):
    """Pad(x, pads [1, 1], v) with v a float initializer of ``value_shape``."""
    node = helper.make_node("Pad", ["x", "pads", "v"], ["y"], name="pad", mode=mode)
    initializer = [numpy_helper.from_array(np.array([1, 1], np.int64), "pads"),
                   numpy_helper.from_array(np.full(value_shape, 7.0, np.float32), "v")]  # fmt: skip
    return make_model(
        [node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])], opset=opset, initializer=initializer,
    )  # fmt: skip


@pytest.mark.parametrize("value_shape", [[], [1], [1, 1], [2]])
def test_a_value_of_one_element_is_taken_as_a_scalar_and_another_fails_as_the_op_fails(value_shape):
    model = _with_value_of_shape([3], "constant", value_shape)
    lowered = lowered_wholly(model, "Pad")
    x = np.arange(3, dtype=np.float32)
    want, got = output_or_error(model, {"x": x}), output_or_error(lowered, {"x": x})
    assert isinstance(want, str) == isinstance(got, str) == (value_shape == [2])
    if not isinstance(want, str):
        assert_same_elements(got, want)


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (pad_model([], [], "constant"), "x of rank 0"),
        (_with_value_of_shape([3], "edge", [2]), "a constant_value of shape [2] in mode edge"),
        (pad_model([2, 3], [0, 1, 0, 1], "constant", axes=[[1, 0]], opset=18), "not 1-D"),
        (pad_model([2], [1, 0], "constant", opset=21, element_type=TensorProto.BFLOAT16), "runs no Expand"),
    ],
    ids=["rank 0", "value of two in edge mode", "axes 2-D", "bfloat16 Expand"],
)
def test_what_onnxruntime_fails_or_runs_otherwise_is_declined(model, reason):
    assert reason in " ".join(lowering.lower_model(model, ops=["Pad"]).report.lines())


def test_x_of_unknown_rank_is_declined():
    """onnxruntime checks the pads against x's rank as it runs (x = Reshape(x, s), s fed)."""
    nodes = [helper.make_node("Reshape", ["a", "s"], ["x"]), helper.make_node("Pad", ["x", "pads"], ["y"])]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])], opset=13,
        initializer=[numpy_helper.from_array(np.array([1, 0, 1], np.int64), "pads")],
    )  # fmt: skip
    assert "rank is unknown" in " ".join(lowering.lower_model(model, ops=["Pad"]).report.lines())


@pytest.mark.parametrize("mode", ["constant", "edge"])
def test_float16_nan_payloads_are_kept_where_onnxruntime_rewrites_them(mode):
    """onnxruntime pads float16 in float32 between Casts, which rewrite NaN payloads (measured):
    the copies keep x's and v's bits; every other value bit for bit, NaN for NaN."""
    x = np.array([0x7E05, 0xFEB7, 0x7C01, 0x3C00, 0x8000, 0x0001], np.uint16).view(np.float16)
    model = pad_model([6], [1, 2], mode, value=np.uint16(0xFC01).view(np.float16) if mode == "constant" else None,
                      fed_value=True, opset=13, element_type=TensorProto.FLOAT16)  # fmt: skip
    feeds = {"x": x} | ({"v": np.array(np.uint16(0xFC01).view(np.float16))} if mode == "constant" else {})
    want, got = runs_in_onnxruntime(model, feeds)[0], runs_in_onnxruntime(lowering.lower(model, ops=["Pad"]), feeds)[0]
    reference = rule_for("", "Pad").reference(x, [1, 2], feeds.get("v"), mode=mode)
    assert_same_elements(got, reference)
    assert not np.array_equal(want.view(np.uint16), got.view(np.uint16))  # (the kernel's rewriting, measured)
    nan = np.isnan(want)
    assert np.array_equal(nan, np.isnan(got))
    assert np.array_equal(want.view(np.uint16)[~nan], got.view(np.uint16)[~nan])
