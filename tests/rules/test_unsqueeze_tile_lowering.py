"""Unsqueeze and Tile lowered to Reshape and Expand of computed shapes (rules/unsqueeze.py): axes
and repeats constant or fed at run time (the forms OpenVINO refuses or gets wrong), negative,
out of range or named twice (failing as the op fails), lengths and repeats of 0, shapes known or
not, at opsets 11 to the newest; bit for bit against onnxruntime's kernel and the rules' numpy
references, every type; what they decline, declined."""

from __future__ import annotations

import numpy as np
import onnxruntime
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

import lowering
from lowering import schemas
from lowering.registry import rule_for

NEWEST = schemas.newest_opset()


def op_model(op_type, declared, given, *, fed=False, opset=NEWEST, element_type=TensorProto.FLOAT, out_rank=None):
    """y = Unsqueeze(x, axes) or Tile(x, repeats): ``given`` an attribute (Unsqueeze below 13),
    an initializer, or fed (``g``)."""
    inputs, initializer, attributes = [helper.make_tensor_value_info("x", element_type, declared)], [], {}
    names = ["x"]
    if op_type == "Unsqueeze" and opset < 13:
        attributes["axes"] = given
    elif fed:
        names.append("g")
        inputs.append(helper.make_tensor_value_info("g", TensorProto.INT64, [len(given)]))
    else:
        names.append("g")
        initializer.append(numpy_helper.from_array(np.array(given, np.int64), "g"))
    node = helper.make_node(op_type, names, ["y"], name="op", **attributes)
    rank = out_rank if out_rank is not None else len(declared)
    output = helper.make_tensor_value_info("y", element_type, [None] * rank)
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def random_case(rng):
    op_type = str(rng.choice(["Unsqueeze", "Tile"]))
    rank = int(rng.integers(0 if op_type == "Unsqueeze" else 1, 4))
    shape = [int(s) for s in rng.integers(0, 4, rank)]
    opset = int(rng.choice([11, 13, 14, 18, NEWEST]))
    if op_type == "Unsqueeze":
        count = int(rng.integers(1, 3))
        out_rank = rank + count
        if rng.random() < 0.2:  # (out of range or named twice: the op fails)
            given = [int(a) for a in rng.integers(-out_rank - 1, out_rank + 1, count)]
        else:
            given = [int(a) - (out_rank if rng.random() < 0.5 else 0) for a in rng.permutation(out_rank)[:count]]
    else:
        given, out_rank = [int(r) for r in rng.integers(0, 3, rank)], rank
    fed = bool(rng.random() < 0.5) and not (op_type == "Unsqueeze" and opset < 13)
    declared = shape if rng.random() < 0.6 else [None] * rank
    return op_type, shape, given, fed, opset, declared, out_rank


@pytest.mark.parametrize("seed", range(3))
def test_random_forms_are_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    lowered_count = 0
    for _ in range(60):
        op_type, shape, given, fed, opset, declared, out_rank = random_case(rng)
        model = op_model(op_type, declared, given, fed=fed, opset=opset, out_rank=out_rank)
        x = random_elements(TensorProto.FLOAT, shape, rng)
        feeds = {"x": x} | ({"g": np.array(given, np.int64)} if fed else {})
        result = lowering.lower_model(model, ops=[op_type])
        where = f"{op_type} {shape} {given} fed {fed} opset {opset} declared {declared}"
        if not result.report.complete:
            assert opset < 14 or "the op fails" in " ".join(result.report.lines()), where
            continue
        lowered_count += 1
        written = {node.op_type for node in result.model.graph.node} - {"Identity"}
        assert written <= set(rule_for("", op_type).emits), f"{where}: writes {written}, which its emits leave out"
        kernel, got = output_or_error(model, feeds), output_or_error(result.model, feeds)
        assert isinstance(kernel, str) == isinstance(got, str), f"{where}: {kernel if isinstance(kernel, str) else got}"
        if not isinstance(kernel, str):
            assert_same_elements(got, kernel)
            reference = rule_for("", op_type).reference
            assert_same_elements(reference(x, np.array(given)), kernel)
    assert lowered_count > 25


@pytest.mark.parametrize(
    "element_type",
    [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.UINT16, TensorProto.INT64,
     TensorProto.BOOL, TensorProto.STRING, TensorProto.BFLOAT16],
    ids=schemas.type_name,
)  # fmt: skip
@pytest.mark.parametrize(("op_type", "given"), [("Unsqueeze", [-1, 0]), ("Tile", [2, 3])])
def test_other_types_fed(op_type, given, element_type):
    model = op_model(
        op_type, [2, 3], given, fed=True, element_type=element_type, out_rank=2 + (op_type == "Unsqueeze") * 2
    )
    result = lowering.lower_model(model, ops=[op_type])
    if not result.report.complete:  # (onnxruntime expands no bfloat16)
        assert element_type == TensorProto.BFLOAT16 and op_type == "Tile", result.report.lines()
        return
    x = random_elements(element_type, [2, 3], np.random.default_rng(element_type))
    feeds = {"x": x, "g": np.array(given, np.int64)}
    want = rule_for("", op_type).reference(x, np.array(given))
    got = runs_in_onnxruntime(result.model, feeds)
    assert got is not None, "the lowered model does not run in onnxruntime"
    assert_same_elements(got[0], want)
    kernel = runs_in_onnxruntime(model, feeds)
    if kernel is not None:
        assert_same_elements(kernel[0], want)


def _session_output(model, feeds, level):
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = level
    try:
        return onnxruntime.InferenceSession(model.SerializeToString(), options).run(None, feeds)[0]
    except Exception as error:
        return type(error).__name__


def test_a_repeat_of_zero_runs_where_onnxruntime_s_optimizer_drops_an_expand():
    """Reshape(x, [1, 1]) → Expand to [0, 1] → Reshape to [0]: onnxruntime's graph optimizer drops
    the Expand (the last Reshape then sees [1, 1] and fails), measured; without it the model runs.
    Tile's expansion cuts the expanded value to [r_0, d_0, …] by a Slice where a repeat or length
    may be 0, and so runs optimized or not."""
    shapes = {name: numpy_helper.from_array(np.array(v, np.int64), name) for name, v in
              [("ones", [1, 1]), ("zero_one", [0, 1]), ("none", [0])]}  # fmt: skip
    nodes = [helper.make_node("Reshape", ["x", "ones"], ["r"], allowzero=1),
             helper.make_node("Expand", ["r", "zero_one"], ["e"]),
             helper.make_node("Reshape", ["e", "none"], ["y"], allowzero=1)]  # fmt: skip
    chain = make_model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])], opset=14, initializer=list(shapes.values()),
    )  # fmt: skip
    x = {"x": np.ones([1], np.float32)}
    assert _session_output(chain, x, onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL).shape == (0,)
    assert isinstance(_session_output(chain, x, onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL), str)
    model = op_model("Tile", [2, 3], [0, 2], fed=True)
    lowered = lowered_wholly(model, "Tile")
    feeds = {"x": np.ones([2, 3], np.float32), "g": np.array([0, 2], np.int64)}
    for level in (
        onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL,
        onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL,
    ):
        assert _session_output(lowered, feeds, level).shape == (0, 6)


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (op_model("Unsqueeze", [2, None], [0], opset=13, out_rank=3), "below opset 14 Reshape reads a 0"),
        (op_model("Tile", [2, 3], [2], out_rank=2), "repeats of shape [1] for x of rank 2"),
        (op_model("Unsqueeze", [2, 3], [0, 0], out_rank=4), "not each an axis of the output's rank 4 once"),
        (op_model("Unsqueeze", [2, 3], [[0], [1]], out_rank=4), "the axes are of rank 2"),
        (op_model("Tile", [2, 3], [-1, 2], out_rank=2), "below 0: the op fails"),
    ],
    ids=["a length 0 below 14", "repeats of another rank", "an axis twice", "axes 2-D", "a repeat below 0"],
)
def test_declined(model, reason):
    op_type = model.graph.node[0].op_type
    assert reason in " ".join(lowering.lower_model(model, ops=[op_type]).report.lines())


@pytest.mark.parametrize("op_type", ["Unsqueeze", "Tile"])
def test_inside_if_branches_and_local_functions(op_type):
    model = op_model(op_type, [2, 3], [1, 2], fed=True, out_rank=4 if op_type == "Unsqueeze" else 2)
    for label, nested in nested_forms(model).items():
        assert f'op_type: "{op_type}"' not in str(lowering.lower(nested, ops=[op_type])), label


def test_fed_repeats_of_a_length_known_by_name_only_are_lowered():
    model = op_model("Tile", [2, 3], [2, 2], fed=True)
    model.graph.input[1].CopyFrom(helper.make_tensor_value_info("g", TensorProto.INT64, ["k"]))
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "g": np.array([2, 2], np.int64)}
    assert_same_elements(
        runs_in_onnxruntime(lowered_wholly(model, "Tile"), feeds)[0], runs_in_onnxruntime(model, feeds)[0]
    )


def test_float16_signalling_nans_are_kept_where_onnxruntime_s_tile_quiets_them():
    x = np.array([[0x7C01, 0x3C00]], np.uint16).view(np.float16)
    model = op_model("Tile", [1, 2], [1, 2], element_type=TensorProto.FLOAT16)
    want, got = runs_in_onnxruntime(model, {"x": x})[0], runs_in_onnxruntime(lowered_wholly(model, "Tile"), {"x": x})[0]
    assert got.view(np.uint16)[0, 0] == 0x7C01 and want.view(np.uint16)[0, 0] != 0x7C01
    assert np.array_equal(np.isnan(want), np.isnan(got)) and np.array_equal(want[~np.isnan(want)], got[~np.isnan(got)])
