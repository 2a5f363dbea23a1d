"""Runtime targets (lowering/runtime_profiles.py, lowering/target_lowering.py): the shipped
profiles are probed data of real ops; a profile's verdicts; every blocker of a model found in
one pass; a model made to run on a target (its opset, the ops it refuses lowered) meaning what
it meant, bit for bit; a target no pattern can satisfy refused listing every node."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from support import make_model, runs_in_onnxruntime

import lowering
from lowering import schemas
from lowering.api import lowerable_ops
from lowering.node_forms import NodeForm, case_forms
from lowering.registry import rule_for
from lowering.report import RemainingOp
from lowering.runtime_profiles import (
    AS_ONNXRUNTIME,
    CONSTANT_OUTPUT,
    DOUBTFUL,
    EMPTY_CONSTANT_OUTPUT,
    EMPTY_FED_OUTPUT,
    OUTPUT_CASE,
    PARTLY,
    PAST_EDGES,
    PROFILES,
    RANK_0_INPUT,
    REFUSED,
    SUPPORTED,
    UNVERIFIED,
    Verdict,
    load_profile,
    profile_from_data,
    profile_names,
)
from lowering.target_lowering import Finding, TargetRefused, check_model, fixes_confirmed, lower_for_target

PROBED = [
    name for name in profile_names() if json.loads((PROFILES / f"{name}.json").read_text()).get("kind") != "table"
]


def test_most_shipped_profiles_are_probed():
    assert {"onnxruntime", "tract-0.23"} <= set(PROBED)


@pytest.mark.parametrize("name", PROBED)
def test_a_shipped_profile_is_probed_data_of_real_ops(name):
    """Each profile names how it was made, loads some opsets, and holds only ops, versions and
    element types onnx.defs knows, each case's verdict one the probe gives."""
    data = json.loads((PROFILES / f"{name}.json").read_text())
    assert data["name"] == name and data["source"]["kind"] == "probed" and data["source"]["how"]
    assert data["opsets"] and data["cases"]
    for case, entry in data["cases"].items():
        assert entry["version"] in schemas.op_versions(entry["op"]), case
        assert entry["verdict"] in ("right", AS_ONNXRUNTIME, "wrong", "fails", "unfed", "crashes", "hangs"), case
        assert entry["verdict"] != "unfed" or entry["detail"].partition(":")[0] in (RANK_0_INPUT, CONSTANT_OUTPUT), case
        if entry["type"]:
            assert getattr(TensorProto, entry["type"]) > 0, case
    assert load_profile(name).name == name


def profile_data(cases: dict[str, tuple], opsets=range(13, 18)) -> dict:
    """A profile's JSON of the given cases: name -> (op, version, type, verdict[, opset[, detail]])."""
    entries = {}
    for name, (op, version, type_name, verdict, *where) in cases.items():
        entry = {"op": op, "version": version, "type": type_name, "verdict": verdict}
        entries[name] = entry | dict(zip(("opset", "detail"), where, strict=False))
    return {
        "name": "made-up", "runtime": "made-up", "runtime_version": "0", "source": {"kind": "probed", "how": "a test"},
        "opsets": list(opsets), "cases": entries,
    }  # fmt: skip


def profile(cases: dict[str, tuple], opsets=range(13, 18)):
    """A profile of the given cases (:func:`profile_data`)."""
    return profile_from_data(profile_data(cases, opsets))


RKNN_OPSETS = range(7, 20)  # (the opsets rknn loads)
MADE_UP_CASES = {
    "abs": ("Abs", 13, "FLOAT", "right"),
    "add": ("Add", 14, "FLOAT", "right"),
    "relu_float": ("Relu", 14, "FLOAT", "right"),
    "relu_attributes": ("Relu", 14, "FLOAT", "wrong"),
    "isnan": ("IsNaN", 13, "FLOAT", "fails"),
    "neg": ("Neg", 13, "FLOAT", "right"),
    "not": ("Not", 1, "BOOL", "right"),
    "equal": ("Equal", 13, "FLOAT", "right"),
    "sqrt": ("Sqrt", 13, "FLOAT", "fails"),
}
MADE_UP = profile(MADE_UP_CASES)


def test_a_profiles_verdicts():
    assert MADE_UP.verdict("Abs", 13, "FLOAT").kind == SUPPORTED
    assert MADE_UP.verdict("Relu", 14, "FLOAT").kind == PARTLY
    assert MADE_UP.verdict("IsNaN", 13, "FLOAT").kind == REFUSED
    assert MADE_UP.verdict("Abs", 13, "DOUBLE").kind == UNVERIFIED  # (Abs-13 ran right on float)
    assert MADE_UP.verdict("Sqrt", 13, "DOUBLE").kind == REFUSED  # (no case of Sqrt-13 ever ran right)
    # A version no case of which ran right, on any type probed, is refused on a type not probed
    # too, though another version ran right (onnx2torch has no Split-18, on any type).
    split = profile({"split_13": ("Split", 13, "FLOAT", "right"), "split_18": ("Split", 18, "FLOAT", "fails")})
    assert split.verdict("Split", 18, "INT64").kind == REFUSED
    assert "Split-18 on INT64 not probed; no case of it ran right on FLOAT" in split.verdict("Split", 18, "INT64").why
    assert split.verdict("Split", 13, "INT64").kind == UNVERIFIED
    # A version never probed (the cases reach back to opset 7: GlobalAveragePool-1, never at
    # version 1 in onnx2torch's probe) is not known to fail, however the probed versions did.
    assert MADE_UP.verdict("Sqrt", 6, "FLOAT").kind == UNVERIFIED
    assert MADE_UP.verdict("Tanh", 13, "FLOAT").kind == UNVERIFIED  # (never probed)
    assert MADE_UP.opset_for(20) == 17 and MADE_UP.opset_for(15) == 15 and MADE_UP.opset_for(9) == 13


def isnan_sqrt_model(opset: int = 20) -> onnx.ModelProto:
    nodes = [
        helper.make_node("IsNaN", ["x"], ["nan"], name="nan"),
        helper.make_node("Abs", ["x"], ["magnitude"], name="magnitude"),
        helper.make_node("Sqrt", ["magnitude"], ["root"], name="root"),
        helper.make_node("Sqrt", ["root"], ["root_root"], name="root_root"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    outputs = [
        helper.make_tensor_value_info("nan", TensorProto.BOOL, [2, 3]),
        helper.make_tensor_value_info("root_root", TensorProto.FLOAT, [2, 3]),
    ]
    return make_model(nodes, [x], outputs, opset=opset)


def test_check_lists_every_blocker_in_one_pass_with_its_fix():
    """The opset the runtime does not load (converted: the fix), IsNaN it refuses (its pattern
    lowers it) and both Sqrt nodes (no pattern): every one, in one pass."""
    findings = check_model(isnan_sqrt_model(), MADE_UP, lowerable=lowerable_ops())
    blockers = [(f.op_type, f.node, f.fix is not None) for f in findings if f.blocks]
    assert blockers == [
        ("(opset)", "", True),
        ("IsNaN", "nan", True),
        ("Sqrt", "root", False),
        ("Sqrt", "root_root", False),
    ]
    assert "IsNaN-13 on FLOAT at graph" in str(findings[1]) and "isnan: fails" in str(findings[1])


def test_a_target_lowers_what_it_refuses_at_the_opset_it_loads_bit_for_bit():
    """IsNaN refused, opset 20 not loaded: the result declares 17, holds no IsNaN (Not(Equal(x, x))),
    and gives the original's bits."""
    model = isnan_sqrt_model()
    del model.graph.node[2:]
    del model.graph.output[1:]
    result = lowering.lower_model(model, target=MADE_UP)
    assert schemas.default_opset(result.model.opset_import) == 17
    assert "IsNaN" not in {node.op_type for node in result.model.graph.node}
    assert not [f for f in check_model(result.model, MADE_UP) if f.blocks]
    onnx.checker.check_model(result.model, full_check=True)
    x = np.array([[np.nan, -np.inf, 0.0], [-0.0, 1e-45, np.float32(-np.nan)]], np.float32)
    assert runs_in_onnxruntime(result.model, {"x": x})[0].tobytes() == runs_in_onnxruntime(model, {"x": x})[0].tobytes()


def test_an_if_of_branches_giving_other_shapes_is_refused_where_the_runtime_analyses_none():
    """A DFT fed its axis at run time: its rule chooses the transform by Ifs on the axis, whose
    branches give other shapes (along axis 1 or 2). tract 0.23 analyses no such If (probed:
    if_other_shapes), so the DFT is refused there naming the If; OpenVINO 2026.4 runs such an
    If and takes the lowered DFT."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10, 10, 1])
    axis = helper.make_tensor_value_info("axis", TensorProto.INT64, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "a", "b", 2])
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"], name="transform", onesided=1)
    model = make_model([node], [x, axis], [y], opset=20)
    with pytest.raises(TargetRefused) as raised:
        lowering.lower_model(model, target="tract-0.23")
    [blocker] = raised.value.blockers
    assert blocker.op_type == "If" and "then_branch=other shapes" in blocker.reason
    assert "if_other_shapes@19: fails" in blocker.reason
    lowered = lowering.lower_model(model, target="openvino-2026.4").model
    assert "If" in {n.op_type for g in [lowered.graph] for n in g.node} and "DFT" not in {
        n.op_type for n in lowered.graph.node
    }


def _if_of(name: str, then_output: str, else_output: str, then_shape, else_shape):
    """An If on ``c`` whose branches give ``then_output`` and ``else_output`` of x [2, 3]: Neg(x)
    and Abs(x) of its shape, Transpose(x) of the shape [3, 2]; each declared of its shape."""

    def branch(label: str, output: str, shape, op: str):
        node, attributes = ("Transpose", {"perm": [1, 0]}) if shape == [3, 2] else (op, {})
        made = helper.make_node(node, ["x"], [output], **attributes)
        return helper.make_graph([made], label, [], [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape)])

    then, otherwise = branch("then", then_output, then_shape, "Neg"), branch("else", else_output, else_shape, "Abs")
    return helper.make_node("If", ["c"], [name], name=name, then_branch=then, else_branch=otherwise)


def test_branches_reusing_a_name_are_judged_by_their_own_shapes():
    """Sibling branches may give outputs of one name (onnx's checker takes it), and so may the
    branches of two Ifs: each branch is judged by its own output's shape, not by the type the
    last graph gives that name. Branches named alike of other shapes are refused on tract 0.23;
    an If of one shape beside one of other shapes, sharing an output name, is not."""
    inputs = [
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])
    alike = make_model([_if_of("y", "out", "out", [2, 3], [3, 2])], inputs, [y], opset=19)
    onnx.checker.check_model(alike, full_check=True)
    assert [b.op_type for b in check_model(alike, "tract-0.23", opset=19) if b.blocks and b.of_a_node] == ["If"]
    one_shape = _if_of("y", "o", "p", [2, 3], [2, 3])
    other_shapes = _if_of("z", "o", "q", [3, 2], [2, 3])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, ["d", "e"])
    two = make_model([one_shape, other_shapes], inputs, [y, z], opset=19)
    onnx.checker.check_model(two, full_check=True)
    blocking = [(b.op_type, b.node) for b in check_model(two, "tract-0.23", opset=19) if b.blocks and b.of_a_node]
    assert blocking == [("If", "z")]
    # (a branch's output named as a value a sibling branch computes inside it, of another shape)
    within = helper.make_graph([helper.make_node("Transpose", ["x"], ["o"], perm=[1, 0]),
                                helper.make_node("Transpose", ["o"], ["w"], perm=[1, 0])], "then", [],
                               [helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])])  # fmt: skip
    beside = helper.make_node("If", ["c"], ["z"], name="z", then_branch=within, else_branch=one_shape.attribute[1].g)
    three = make_model([_if_of("y", "o", "p", [2, 3], [2, 3]), beside], inputs, [y, z], opset=19)
    onnx.checker.check_model(three, full_check=True)
    assert not [b for b in check_model(three, "tract-0.23", opset=19) if b.blocks and b.of_a_node]


def test_an_op_whose_rule_takes_no_node_of_its_form_is_not_asked_for():
    """tract 0.21 runs a Max of two right only in some cases (it drops NaN) and refuses
    GridSample: Max's rule takes a Max of one operand alone, so --target never asks for it (it
    would stop GridSample's pattern, which clamps by a Max of two), and lowers GridSample."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 3, 3])
    grid = helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 2, 2, 2])
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [3])
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 2, 2]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, [3])]  # fmt: skip
    nodes = [helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", padding_mode="border"),
             helper.make_node("Max", ["a", "a"], ["z"], name="larger")]  # fmt: skip
    model = make_model(nodes, [x, grid, a], outputs, opset=20)
    [larger] = [f for f in check_model(model, "tract-0.21", lowerable=lowerable_ops()) if f.op_type == "Max"]
    assert larger.verdict.kind == PARTLY and larger.declined and larger.fix is None
    asked = []

    def lowered_counting(*args, **options):
        asked.append(set(options.get("ops") or ()))
        return lowering.lower_model(*args, **options)

    result = lower_for_target(model, "tract-0.21", lowered_counting, lowerable_ops())
    assert not any("Max" in ops for ops in asked) and len(asked) == 2  # (one round, then the same ops)
    assert "GridSample" not in {n.op_type for n in result.model.graph.node}


def test_a_target_no_pattern_can_satisfy_is_refused_listing_every_node():
    with pytest.raises(TargetRefused) as raised:
        lowering.lower_model(isnan_sqrt_model(), target=MADE_UP)
    assert [(b.op_type, b.node) for b in raised.value.blockers] == [("Sqrt", "root"), ("Sqrt", "root_root")]
    assert raised.value.where == "target made-up"
    assert "no pattern lowers it" in raised.value.blockers[0].reason


def test_a_node_whose_pattern_left_it_is_refused_in_the_patterns_words():
    """BitCast has a pattern, which takes no float to an integer: --target tract-0.23 (which runs
    no BitCast) refuses a float one named and one unnamed saying so, not "lowered by its
    pattern" (what check foresees before the pattern runs), and lowers the int32 one."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    n = helper.make_tensor_value_info("n", TensorProto.INT32, [3])
    outputs = [helper.make_tensor_value_info(name, t, [3]) for name, t in
               [("y", TensorProto.INT32), ("z", TensorProto.INT32), ("u", TensorProto.UINT32)]]  # fmt: skip
    nodes = [
        helper.make_node("BitCast", ["x"], ["y"], name="bits", to=TensorProto.INT32),
        helper.make_node("BitCast", ["x"], ["z"], to=TensorProto.INT32),
        helper.make_node("BitCast", ["n"], ["u"], name="unsigned", to=TensorProto.UINT32),
    ]
    model = make_model(nodes, [x, n], outputs, opset=26)
    with pytest.raises(TargetRefused) as raised:
        lowering.lower_model(model, target="tract-0.23")
    blockers = raised.value.blockers
    assert [(b.op_type, b.node) for b in blockers] == [("BitCast", "bits"), ("BitCast", "")]
    for blocker in blockers:
        assert "; its pattern (--ops BitCast) left it: BitCast from float to int32" in blocker.reason
        assert "lowered by its pattern" not in blocker.reason
    # check foresees the pattern's fix for both named ones; confirmed by --target, the float one
    # keeps none and says --target's words once (not the verdict again), the other keeps its fix
    del model.graph.node[1], model.graph.output[1]
    findings = check_model(model, "tract-0.23", 26, lowerable_ops())
    assert [f.fix for f in findings] == ["lowered by its pattern (--ops BitCast)"] * 2
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target="tract-0.23"), model)
    assert [f.fix for f in confirmed] == [None, "lowered by its pattern (--ops BitCast)"]
    verdict, _, said = confirmed[0].verdict.why.partition("; --target: ")
    assert said.startswith("its pattern (--ops BitCast) left it: BitCast from float to int32"), said
    assert verdict not in said


@pytest.mark.parametrize("case", ["one name, two reasons", "unnamed, two reasons"])
def test_a_node_whose_pattern_left_it_for_a_reason_not_its_own_alone_is_refused_without_one(case):
    """Two BitCasts the pattern left for different reasons (float to int32, float16 to int16),
    sharing a name or both unnamed: the report's words cannot be told apart by name or op, so
    each is refused as left by its pattern, with no reason that may be the other's."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    h = helper.make_tensor_value_info("h", TensorProto.FLOAT16, [3])
    outputs = [helper.make_tensor_value_info("y", TensorProto.INT32, [3]),
               helper.make_tensor_value_info("z", TensorProto.INT16, [3])]  # fmt: skip
    name = "twin" if case == "one name, two reasons" else ""
    nodes = [helper.make_node("BitCast", ["x"], ["y"], name=name, to=TensorProto.INT32),
             helper.make_node("BitCast", ["h"], ["z"], name=name, to=TensorProto.INT16)]  # fmt: skip
    with pytest.raises(TargetRefused) as raised:
        lowering.lower_model(make_model(nodes, [x, h], outputs, opset=26), target="tract-0.23")
    assert [(b.op_type, b.node) for b in raised.value.blockers] == [("BitCast", name)] * 2
    for blocker in raised.value.blockers:
        assert blocker.reason.endswith("; its pattern (--ops BitCast) left it"), blocker.reason


def test_an_unknown_target_is_a_clear_error():
    with pytest.raises(lowering.LoweringError, match="no target called 'nowhere'"):
        lowering.lower_model(isnan_sqrt_model(), target="nowhere")


def test_the_onnxruntime_profile_takes_a_real_export_as_it_is(tmp_path):
    """The probed onnxruntime profile: a corpus export fits (nothing blocks), and --target
    onnxruntime gives a model that runs and matches."""
    from pathlib import Path

    corpus = Path(__file__).resolve().parents[1] / "golden" / "corpus"
    model = onnx.load(corpus / "distilbert_dynamo18.onnx")
    assert not [f for f in check_model(model, "onnxruntime") if f.blocks]
    data = np.load(corpus / "distilbert_dynamo18.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    result = lowering.lower_model(model, target="onnxruntime")
    for got, want in zip(runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(model, feeds), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_op_it_runs_right_only_in_some_cases_is_lowered_where_a_pattern_can():
    """IsNaN-13 right in one probed case and failing in another (its attributes or inputs decide):
    the target lowers it, as it would one refused, and the result means the same."""
    partly = profile({**MADE_UP_CASES, "isnan_other": ("IsNaN", 13, "FLOAT", "right")})
    assert partly.verdict("IsNaN", 13, "FLOAT").kind == PARTLY
    model = isnan_sqrt_model()
    del model.graph.node[1:]
    del model.graph.output[1:]
    result = lowering.lower_model(model, target=partly)
    assert "IsNaN" not in {node.op_type for node in result.model.graph.node}
    x = np.array([[np.nan, -np.inf, 0.0], [-0.0, 1e-45, 2.0]], np.float32)
    assert runs_in_onnxruntime(result.model, {"x": x})[0].tobytes() == runs_in_onnxruntime(model, {"x": x})[0].tobytes()


def test_strict_applies_to_the_ops_asked_for_not_to_those_the_target_chose():
    """Resize by 1.5 (nearest), which onnxruntime's profile runs right only in some cases: the
    target tries its pattern, which declines; with strict=True that is no error (Resize was not
    asked for), and the model runs."""
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="nearest")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])
    model = make_model([node], [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])], opset=19,
                       initializer=[scales])  # fmt: skip
    result = lowering.lower_model(model, target="onnxruntime", strict=True)
    assert runs_in_onnxruntime(result.model, {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)}) is not None


def reduce_mean_model(opset: int = 18, layer_norm: bool = False) -> onnx.ModelProto:
    """y = ReduceMean(x, axes=[-1]) (axes an input from 18), or LayerNormalization(x) over the
    last axis, on x [2, 3]."""
    if layer_norm:
        nodes = [helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="norm", axis=-1)]
        initializer = [onnx.numpy_helper.from_array(np.ones(3, np.float32), "scale")]
        shape = [2, 3]
    else:
        nodes = [helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean")]
        initializer = [onnx.numpy_helper.from_array(np.array([-1], np.int64), "axes")]
        shape = [2, 1]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    return make_model(nodes, [x], [y], opset=opset, initializer=initializer)


# ReduceMean-18 fails where ReduceMean-13 runs (onnx2torch: converters up to opset 17);
# LayerNormalization fails, so its body is written, at whatever opset the model goes to.
OLDER_RUNS = profile(
    {
        "mean_18": ("ReduceMean", 18, "FLOAT", "fails"),
        "mean_13": ("ReduceMean", 13, "FLOAT", "right"),
        "norm_17": ("LayerNormalization", 17, "FLOAT", "fails"),
    },
    opsets=range(13, 19),
)


def test_check_judges_at_the_opset_where_fewest_nodes_are_refused_that_no_pattern_lowers():
    from lowering.target_lowering import opsets_for_target

    model = reduce_mean_model()
    assert opsets_for_target(model, OLDER_RUNS, lowerable_ops())[0] == 17  # (ReduceMean-13 there, the nearest)
    [opset] = [f for f in check_model(model, OLDER_RUNS, lowerable=lowerable_ops()) if f.blocks]
    assert opset.op_type == "(opset)" and opset.fix == "converted to opset 17"  # (it does not fit as it is)
    assert "at opset 18 the runtime refuses 1 node(s) no pattern lowers (ReduceMean-18 (1)), at opset 17 fewer" in str(
        opset
    )
    assert [f.op_type for f in check_model(model, OLDER_RUNS, 18, lowerable_ops()) if f.blocks] == ["ReduceMean"]
    assert opsets_for_target(reduce_mean_model(17), MADE_UP, lowerable_ops())[0] == 17  # (nothing refused: its own)


def test_an_opset_is_not_better_for_a_version_never_probed_of_an_op_that_ran_right_at_none():
    """Loop-11 fails on TVM and Loop-1 was never probed: going to opset 10 would trade a refused
    node for one never tried, so the model's own opset is kept and --target refuses; where the
    older version was probed and ran right (onnx2torch's GlobalAveragePool-1), it goes there."""
    from lowering.target_lowering import opsets_for_target

    node = helper.make_node("Sqrt", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    never_older = profile({"sqrt": ("Sqrt", 13, "FLOAT", "fails")}, opsets=range(7, 18))
    assert never_older.verdict("Sqrt", 6, "FLOAT").no_version_ran_right
    assert opsets_for_target(model, never_older, lowerable_ops())[0] == 13
    with pytest.raises(TargetRefused, match="sqrt: fails; no pattern lowers it"):
        lowering.lower_model(model, target=never_older)
    older_runs = profile({"sqrt": ("Sqrt", 13, "FLOAT", "fails"), "sqrt_6": ("Sqrt", 6, "FLOAT", "right")},
                         opsets=range(7, 18))  # fmt: skip
    assert opsets_for_target(model, older_runs, lowerable_ops())[0] == 12
    assert lowering.lower_model(model, target=older_runs).model.opset_import[0].version == 12
    # A node of such a version that a pattern lowers does not keep an opset from being taken
    # (onnx2torch's ReduceLogSumExp-13, beside a ReduceMean-18 it runs at 13 only).
    beside = helper.make_node("ReduceLogSumExp", ["y"], ["z"], axes=[0], keepdims=1)
    graph = helper.make_graph([node, beside], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])])  # fmt: skip
    both = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    untried = profile({"sqrt": ("Sqrt", 13, "FLOAT", "fails"), "sqrt_6": ("Sqrt", 6, "FLOAT", "right"),
                       "rlse": ("ReduceLogSumExp", 18, "FLOAT", "fails")}, opsets=range(7, 18))  # fmt: skip
    assert untried.verdict("ReduceLogSumExp", 11, "FLOAT").no_version_ran_right
    assert lowering.lower_model(both, target=untried).model.opset_import[0].version == 12


@pytest.mark.parametrize("layer_norm", [False, True], ids=["ReduceMean-18", "LayerNormalization's body"])
def test_a_target_goes_to_an_older_opset_where_what_it_refuses_has_a_version_it_runs(layer_norm):
    """At 18 ReduceMean-18 is left (the model's, or the one LayerNormalization's body writes
    there): --target tries the next opset, 17, where ReduceMean-13 is written instead (opsets
    are told apart by the versions of the ops the model holds and of those its patterns write:
    LayerNormalization is 17 at 17 as at 18, ReduceMean is not); an opset given is kept, and
    refused as before."""
    model = reduce_mean_model(18, layer_norm)
    result = lowering.lower_model(model, target=OLDER_RUNS)
    opset = schemas.default_opset(result.model.opset_import)
    assert opset == 17
    assert {node.op_type for node in result.model.graph.node} & {"LayerNormalization"} == set()
    assert not [f for f in check_model(result.model, OLDER_RUNS, opset) if f.blocks]
    onnx.checker.check_model(result.model, full_check=True)
    x = np.array([[1.5, -2.0, 0.25], [3.0, 1e-3, -7.0]], np.float32)
    got, want = runs_in_onnxruntime(result.model, {"x": x})[0], runs_in_onnxruntime(model, {"x": x})[0]
    if layer_norm:
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)  # (the body's stated arithmetic)
    else:
        assert got.tobytes() == want.tobytes()
    with pytest.raises(TargetRefused, match="mean_18: fails"):
        lowering.lower_model(model, target=OLDER_RUNS, target_opset=18)


def affine_grid_model() -> onnx.ModelProto:
    """AffineGrid-20 of a fed theta [2, 2, 3] and a constant size [2, 3, 4, 5]."""
    nodes = [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], name="grid", align_corners=0)]
    theta = helper.make_tensor_value_info("theta", TensorProto.FLOAT, [2, 2, 3])
    grid = helper.make_tensor_value_info("grid", TensorProto.FLOAT, [2, 4, 5, 2])
    size = onnx.numpy_helper.from_array(np.array([2, 3, 4, 5], np.int64), "size")
    return make_model(nodes, [theta], [grid], opset=20, initializer=[size])


def assert_computes_its_grid(made: onnx.ModelProto, model: onnx.ModelProto) -> None:
    """``made`` meets ``model``'s grid (onnx's reference) within the body's stated arithmetic."""
    theta_value = np.random.default_rng(0).standard_normal((2, 2, 3)).astype(np.float32)
    got = runs_in_onnxruntime(made, {"theta": theta_value})[0]
    want = ReferenceEvaluator(model).run(None, {"theta": theta_value})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_op_lowered_where_it_has_no_version_goes_to_the_opset_where_what_its_pattern_writes_runs():
    """AffineGrid-20, which the runtime fails, exists at no older opset; below 20 its function
    body is written, and its ops (Constant, Reshape, ...) run at 13 and fail at 19: the opsets
    are told apart by the versions of the ops the pattern writes, and --target writes the body
    at the nearest opset where those run."""
    from lowering.target_lowering import opsets_for_target

    made = {"affine_grid": ("AffineGrid", 20, "FLOAT", "fails")}
    for op_type in ("Constant", "Reshape"):
        made[f"{op_type}_13"] = (op_type, 13, "INT64", "right")
        made[f"{op_type}_19"] = (op_type, 19, "INT64", "fails")
    fails_at_19 = profile(made, opsets=range(13, 21))
    model = affine_grid_model()
    assert opsets_for_target(model, fails_at_19, lowerable_ops())[0] == 18  # (Reshape-14 and Constant-13 there)
    result = lowering.lower_model(model, target=fails_at_19)
    assert schemas.default_opset(result.model.opset_import) == 18
    assert not [f for f in check_model(result.model, fails_at_19, 18) if f.blocks]
    assert_computes_its_grid(result.model, model)


def test_a_float16_celu_goes_where_the_casts_its_body_writes_in_turn_run():
    """Celu takes float16 from version 28 on: below 28 its body is written, and the CastLike of
    that body as a Cast. onnx2torch runs no Cast-19 or later, so the opsets tried first are those
    where that Cast is Cast-13 (the ops the patterns write count, at any depth, and the nodes an
    older version does not take the type of count as lowered); the body computes the same bits
    as at 28."""
    from lowering.target_lowering import opsets_for_target

    nodes = [helper.make_node("Celu", ["x"], ["y"], name="celu", alpha=2.0)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [5])
    model = make_model(nodes, [x], [y], opset=28)
    onnx2torch = load_profile("onnx2torch")
    assert opsets_for_target(model, onnx2torch, lowerable_ops())[0] <= 18
    result = lowering.lower_model(model, target=onnx2torch)
    opset = schemas.default_opset(result.model.opset_import)
    assert opset <= 18 and "Celu" not in {node.op_type for node in result.model.graph.node}
    assert not [f for f in check_model(result.model, onnx2torch, opset) if f.blocks]
    fed = {"x": np.array([-3.0, -0.5, -0.0, 0.25, 60000.0], np.float16)}
    body_at_28 = lowering.lower(model, ops=["Celu"])
    assert runs_in_onnxruntime(result.model, fed)[0].tobytes() == runs_in_onnxruntime(body_at_28, fed)[0].tobytes()


def test_an_op_whose_body_onnx_builds_for_the_node_goes_where_that_bodys_ops_run():
    """RotaryEmbedding-23's body is one ONNX builds from the node (its inputs' ranks): its ops
    found so (Split-18, Constant-21, ...), onnx2torch's --target writes it at 17, where those
    run, not at 22, the nearest opset without RotaryEmbedding; the body meets the case's output
    within the backend's tolerance."""
    from version_cases import feeds_of, node_cases

    from lowering.target_lowering import opsets_for_target

    case = next(c for c in node_cases() if c.name == "test_rotary_embedding")
    onnx2torch = load_profile("onnx2torch")
    assert opsets_for_target(case.model, onnx2torch, lowerable_ops())[0] == 17
    result = lowering.lower_model(case.model, target=onnx2torch)
    assert schemas.default_opset(result.model.opset_import) == 17
    inputs, expected = case.data_sets[0]
    got = runs_in_onnxruntime(result.model, feeds_of(case.model, inputs))[0]
    np.testing.assert_allclose(got, expected[0], rtol=1e-3, atol=1e-7)


def test_a_refusal_lists_the_blockers_of_the_opset_tried_that_leaves_fewest():
    """At 18 the runtime refuses ReduceMean-18 and Sqrt, at 17 only Sqrt (no pattern lowers it,
    at any version): --target refuses, listing Sqrt alone, what is left where it came nearest."""
    model = reduce_mean_model(18)
    root = helper.make_node("Sqrt", ["y"], ["root"], name="root")
    model.graph.node.append(root)
    model.graph.output[0].name = "root"
    made = dict(OLDER_RUNS.cases)
    made[("Sqrt", 13, "FLOAT")] = [("sqrt_13", "fails", "")]
    sqrt_fails = dataclasses.replace(OLDER_RUNS, cases=made)
    with pytest.raises(TargetRefused) as refused:
        lowering.lower_model(model, target=sqrt_fails)
    assert [(b.op_type, b.version) for b in refused.value.blockers] == [("Sqrt", 13)]


def test_an_op_the_runtime_never_ran_counts_its_patterns_ops_where_it_may_go_as_its_body():
    """onnx2torch never ran a GroupNormalization, and no case probed its version 18: at 20 and
    18 a GroupNormalization-21 (which goes below 21 as its body) is unverified, yet its body's
    ReduceMean-18 is not run there; 17, where it writes ReduceMean-13, is tried first."""
    from version_cases import node_cases

    from lowering.target_lowering import opsets_for_target

    case = next(c for c in node_cases() if c.name == "test_group_normalization_example")
    onnx2torch = load_profile("onnx2torch")
    assert opsets_for_target(case.model, onnx2torch, lowerable_ops())[0] == 17
    result = lowering.lower_model(case.model, target=onnx2torch)
    assert schemas.default_opset(result.model.opset_import) == 17


def test_a_form_fed_as_no_case_that_ran_right_is_refused_whatever_its_attributes():
    """Every Conv case fed its weights failed (onnx2torch's KeyError 'W'), whatever its group;
    those given them as constants ran: a node fed its weights is refused, not doubtful."""
    from lowering.node_forms import NodeForm

    made = profile({
        "test_basic_conv_with_padding": ("Conv", 11, "FLOAT", "fails"),
        "test_basic_conv_with_padding#constant": ("Conv", 11, "FLOAT", "right"),
    })  # fmt: skip
    fed = NodeForm(frozenset({0, 1}), frozenset({0, 1}), frozenset(), frozenset({0}), (("group", "4"),))
    verdict = made.verdict("Conv", 11, "FLOAT", fed)
    assert verdict.kind == REFUSED and "no case fed its inputs [0, 1] as the node is ran right" in verdict.why
    weights = NodeForm(frozenset({0, 1}), frozenset({0}), frozenset({1}), frozenset({0}), (("group", "4"),))
    assert made.verdict("Conv", 11, "FLOAT", weights).kind != REFUSED
    # fed its bias too, which no case feeds: judged by the cases fed most of what it is fed
    with_bias = NodeForm(frozenset({0, 1, 2}), frozenset({0, 1, 2}), frozenset(), frozenset({0}), (("group", "4"),))
    assert made.verdict("Conv", 11, "FLOAT", with_bias).kind == REFUSED
    # on a type no case probed at that version: judged by the types probed
    assert made.verdict("Conv", 11, "FLOAT16", fed).kind == REFUSED


def test_a_node_judged_at_a_version_it_is_not_written_in_is_not_refused_by_what_is_fed():
    """tract fails every Pad-18 fed its pads, and runs them constant: a Pad-25 in wrap mode fed
    its pads is not refused so at 18, where the wrap adapter writes it as Gathers that tract
    runs; --target goes there, bit for bit."""
    from version_cases import feeds_of, node_cases

    case = next(c for c in node_cases() if c.name == "test_wrap_pad")
    result = lowering.lower_model(case.model, target="tract-0.23")
    assert schemas.default_opset(result.model.opset_import) == 18
    assert "Pad" not in {node.op_type for node in result.model.graph.node}
    feeds = feeds_of(case.model, case.data_sets[0][0])
    got, want = runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(case.model, feeds)
    assert [a.tobytes() for a in got] == [b.tobytes() for b in want]


def test_wrong_only_on_a_real_exports_own_values_is_doubtful_not_refused():
    """A corpus case computes on its export's values (rknn's float16 on -3.4e38): wrong there says
    nothing of other values; one that fails, or a backend case that is wrong, still refuses."""
    made = {
        "corpus_bert_add": ("Add", 14, "FLOAT", "wrong"),
        "corpus_bert_where": ("Where", 16, "FLOAT", "fails"),
        "test_sub": ("Sub", 14, "FLOAT", "wrong"),
    }
    judged = profile(made)
    assert judged.verdict("Add", 14, "FLOAT").kind == DOUBTFUL
    assert "wrong only on a real export's own values" in judged.verdict("Add", 14, "FLOAT").why
    assert judged.verdict("Where", 16, "FLOAT").kind == REFUSED
    assert judged.verdict("Sub", 14, "FLOAT").kind == REFUSED


@pytest.mark.parametrize("fed_axes", [False, True], ids=["constant axes", "axes fed at run time"])
def test_another_opset_is_not_taken_where_reaching_it_writes_control_flow(fed_axes):
    """ReduceSum-13 refused, ReduceSum-11 run: constant axes go to opset 12 (the nearest where
    ReduceSum is 11) as an attribute; fed ones would need an If per axis there (which tract
    cannot analyse), so the node is refused."""
    sums = profile({"sum_13": ("ReduceSum", 13, "FLOAT", "fails"), "sum_11": ("ReduceSum", 11, "FLOAT", "right")},
                   opsets=range(11, 14))  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])
    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum")
    if fed_axes:
        model = make_model([node], [x, helper.make_tensor_value_info("axes", TensorProto.INT64, [1])], [y], opset=13)
        with pytest.raises(TargetRefused, match="sum_13: fails"):
            lowering.lower_model(model, target=sums)
        return
    axes = onnx.numpy_helper.from_array(np.array([1], np.int64), "axes")
    model = make_model([node], [x], [y], opset=13, initializer=[axes])
    result = lowering.lower_model(model, target=sums)
    assert schemas.default_opset(result.model.opset_import) == 12
    assert [n.op_type for n in result.model.graph.node] == ["ReduceSum"]
    data = np.array([[1.5, -2.0, 0.25], [3.0, 1e-3, -7.0]], np.float32)
    assert (
        runs_in_onnxruntime(result.model, {"x": data})[0].tobytes()
        == runs_in_onnxruntime(model, {"x": data})[0].tobytes()
    )


def test_a_case_at_an_opset_the_runtime_does_not_load_says_nothing_of_its_op():
    """rknn loads opsets up to 19: Add-14 in a case at opset 23 fails there for its opset alone
    ("need <= 19"); the verdict on Add-14 is its cases' at the opsets it loads."""
    data = profile_data({
        "add_at_14": ("Add", 14, "FLOAT", "right", 14),
        "add_at_23": ("Add", 14, "FLOAT", "fails", 23, "load_onnx: Unsupport onnx opset 23, need <= 19!"),
    }, RKNN_OPSETS)  # fmt: skip
    assert profile_from_data(data).verdict("Add", 14, "FLOAT").kind == SUPPORTED
    del data["cases"]["add_at_14"]
    assert profile_from_data(data).verdict("Add", 14, "FLOAT").kind == UNVERIFIED


def test_a_case_right_as_onnxruntime_counts_as_right():
    """tract's float32 DFT sums miss the backend's float64 answer by 1.5e-5, onnxruntime's by
    3.4e-4: as right as onnxruntime is what onnx-lower promises, so DFT is not lowered for it."""
    data = profile_data({
        "dft_a": ("DFT", 17, "FLOAT", "right", 19),
        "dft_b": ("DFT", 17, "FLOAT", AS_ONNXRUNTIME, 19, "output 0: largest error 1.53e-05"),
    }, RKNN_OPSETS)  # fmt: skip
    assert profile_from_data(data).verdict("DFT", 17, "FLOAT").kind == SUPPORTED
    data["cases"]["dft_b"]["verdict"] = "wrong"
    assert profile_from_data(data).verdict("DFT", 17, "FLOAT").kind == PARTLY


def test_an_interface_blocker_target_met_that_check_did_not_foresee_is_added():
    """Where --target, run by check, refuses the model for an input or output check did not
    find (the model it made has a constant output: a pattern's, a folding's), check lists it, in
    --target's words, beside its own findings (the opset's fix kept: it is what --target does)."""
    opset_finding = Finding("(opset)", 25, "", "main", "", Verdict(REFUSED, "loads 7-19, not 25"), "converted to 19")
    said = "output 'n' follows from no input's values (from Constant), so is constant; no pattern lowers it"

    def refusing():
        raise TargetRefused([RemainingOp("(output)", None, "graph 'main'", said, "main", "")], "rknn")

    model = make_model([], [], [], opset=14)
    confirmed = fixes_confirmed([opset_finding], refusing, model)
    assert confirmed[0] == opset_finding
    assert [(f.op_type, f.blocks, f.fix, f.verdict.why) for f in confirmed[1:]] == [
        ("(output)", True, None, f"--target: {said}")
    ]
    # (one check found is not said twice; another output --target met is added all the same)
    foreseen_why = "output 'e' follows from no input's values (from Shape), so is constant"
    foreseen = Finding("(output)", None, "INT64", "main", "", Verdict(REFUSED, foreseen_why), None)

    def refusing_both():
        both = [RemainingOp("(output)", None, "graph 'main'", f"{foreseen_why}; no pattern lowers it", "main", ""),
                RemainingOp("(output)", None, "graph 'main'", said, "main", "")]  # fmt: skip
        raise TargetRefused(both, "rknn")

    confirmed = fixes_confirmed([opset_finding, foreseen], refusing_both, model)
    assert [f.verdict.why for f in confirmed] == [opset_finding.verdict.why, foreseen_why, f"--target: {said}"]


def test_a_branch_node_the_if_form_copied_and_target_refused_is_the_one_check_found():
    """The If form (onnx2torch runs no If) copies each branch's nodes into the graph, named
    ``{if}_{then|else}_{node}`` (a fresh suffix where taken): where --target refuses such a copy,
    it is check's finding of the branch node, its fix taken back in --target's words, not a
    second blocker."""
    cast = Finding("Cast", 13, "INT32", "then_g", "narrow", Verdict(REFUSED, "fails (to uint16)"), "lowered by X")
    copy = RemainingOp("Cast", 13, "graph 'main', node 'choose_then_narrow_1'", "fails (to uint16)", "main",
                       "choose_then_narrow_1")  # fmt: skip
    elsewhere = RemainingOp("Cast", 13, "graph 'main', node 'choose_then_narrowing'", "fails", "main",
                            "choose_then_narrowing")  # fmt: skip

    def refusing(*blockers):
        def lower():
            raise TargetRefused(list(blockers), "onnx2torch")

        return lower

    model = make_model([], [], [], opset=16)
    confirmed = fixes_confirmed([cast], refusing(copy), model)
    assert [(f.node, f.fix, f.verdict.why) for f in confirmed] == [
        ("narrow", None, "fails (to uint16); --target: fails (to uint16)")
    ]
    confirmed = fixes_confirmed([cast], refusing(copy, elsewhere), model)  # (another name: its own blocker)
    assert [(f.node, f.fix) for f in confirmed] == [("narrow", None), ("choose_then_narrowing", None)]


def test_a_node_a_pattern_wrote_that_target_refused_is_added_where_no_fix_taken_back_names_it():
    """BitShift's pattern writes a Mod and a Div, which rknn fails; check, judging the BitShift
    a note (lowered by its pattern), foresaw neither: they are added, in --target's words, and
    the opset keeps its fix. A node of the model check let pass and --target refused takes the
    opset's fix back, naming it, and is not said twice."""
    opset_finding = Finding("(opset)", 28, "", "main", "", Verdict(REFUSED, "loads 7-19, not 28"), "converted to 19")
    mod = RemainingOp("Mod", 13, "graph 'main', node 'z_Mod'", "fails (build: Mod)", "main", "z_Mod")
    div = RemainingOp("Div", 14, "graph 'main', node 'z_Div'", "fails (build: Div)", "main", "z_Div")

    def refusing():
        raise TargetRefused([mod, div], "rknn")

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    written = make_model([], [], [], opset=14)  # (neither node is the model's)
    confirmed = fixes_confirmed([opset_finding], refusing, written)
    assert [(f.op_type, f.version, f.node, f.blocks, f.fix, f.verdict.why) for f in confirmed] == [
        ("(opset)", 28, "", True, "converted to 19", "loads 7-19, not 28"),
        ("Mod", 13, "z_Mod", True, None, "--target: fails (build: Mod)"),
        ("Div", 14, "z_Div", True, None, "--target: fails (build: Div)"),
    ]
    misjudged = make_model([helper.make_node("Div", ["x", "x"], ["y"], name="z_Div")], [x], [x], opset=14)
    confirmed = fixes_confirmed([opset_finding], refusing, misjudged)
    assert [(f.op_type, f.fix) for f in confirmed] == [("(opset)", None), ("Mod", None)]
    assert "refused: Div-14 at graph 'main', node 'z_Div'" in confirmed[0].verdict.why


def test_a_node_a_pattern_wrote_is_blamed_on_the_node_it_was_written_for():
    """Softmax's and Range's patterns both write Sub: a refused Sub named after the Range (the
    names a pattern makes for a node start with the node's name) takes back the Range's fix,
    not the Softmax's, and is not said again."""
    refused = Verdict(REFUSED, "fails")
    softmax = Finding("Softmax", 13, "FLOAT", "main", "soft", refused, "lowered by its pattern (--ops Softmax)")
    arange = Finding("Range", 11, "INT64", "main", "node_arange", refused, "lowered by its pattern (--ops Range)")
    sub = RemainingOp("Sub", 14, "graph 'main', node 'node_arange_Sub'", "fails (Sub)", "main", "node_arange_Sub")

    def refusing():
        raise TargetRefused([sub], "rknn")

    confirmed = fixes_confirmed([softmax, arange], refusing, make_model([], [], [], opset=14))
    assert [(f.node, f.fix) for f in confirmed] == [("soft", softmax.fix), ("node_arange", None)]
    assert (
        "its pattern wrote what it refuses: Sub-14 at graph 'main', node 'node_arange_Sub'" in confirmed[1].verdict.why
    )


def test_a_blocking_node_target_folded_away_is_fixed_so():
    """gpt2's Shape, which rknn fails fed, is a value its static shapes decide: where --target
    succeeds having folded Shapes, a blocking Shape whose name is gone from its graph is fixed by
    that folding, whatever fix check foresaw (a retyping: --target folded it first) unless a
    pattern lowered nodes of its op too; one still there keeps its own; one of an op none of whose
    nodes was folded is gone where check named no fix, and keeps the fix it named."""
    from types import SimpleNamespace

    from lowering.report import LoweringReport
    from lowering.target_lowering import FOLD_FIX, GONE_FIX

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    left = make_model([helper.make_node("Shape", ["x"], ["s"], name="kept")], [x], [x], opset=14)
    graph = left.graph.name
    report = LoweringReport()
    report.folded["Shape"] = 1
    refused = Verdict(REFUSED, "fails fed")
    report.folded["Range"] = 1
    report.rewritten["Range-11"] = 1  # (one Range folded, one lowered by its pattern: which is which, unknown)
    by_pattern = "lowered by its pattern (--ops Range)"
    findings = [
        Finding("Shape", 15, "FLOAT", graph, "gone", refused, None),
        Finding("Shape", 15, "INT64", graph, "retyped", refused, "retyped to int32 (--retype int64=int32)"),
        Finding("Shape", 15, "FLOAT", graph, "kept", refused, None),
        Finding("Shape", 15, "FLOAT", "elsewhere", "kept", refused, None),
        Finding("Softmax", 13, "FLOAT", graph, "soft", refused, None),
        Finding("Softmax", 13, "FLOAT", graph, "soft_lowered", refused, "lowered by its pattern (--ops Softmax)"),
        Finding("Range", 11, "INT64", graph, "range", refused, by_pattern),
    ]
    confirmed = fixes_confirmed(findings, lambda: SimpleNamespace(report=report, model=left), left)
    assert [(f.graph, f.node, f.fix) for f in confirmed] == [
        (graph, "gone", FOLD_FIX),
        (graph, "retyped", FOLD_FIX),
        (graph, "kept", None),
        ("elsewhere", "kept", FOLD_FIX),
        (graph, "soft", GONE_FIX),
        (graph, "soft_lowered", "lowered by its pattern (--ops Softmax)"),
        (graph, "range", by_pattern),
    ]


def refused_and_opsets_tried(model: onnx.ModelProto, target) -> tuple[list[str], set]:
    """The op types of the blockers ``lower_for_target`` refuses ``model`` for on ``target``, and
    the target opsets it lowered it at (None: the model's own)."""
    tried = []

    def lowered_counting(*args, **options):
        tried.append(options.get("target_opset"))
        return lowering.lower_model(*args, **options)

    with pytest.raises(TargetRefused) as raised:
        lower_for_target(model, target, lowered_counting, lowerable_ops())
    return [b.op_type for b in raised.value.blockers], set(tried)


def test_a_case_whose_feeds_the_runtime_takes_none_of_says_nothing_of_its_op():
    """rknn's simulator takes no 0-d input: a Sqrt fed a 0-d value fails there whatever the op
    (``"unfed"``), so a Sqrt of a 0-d constant inside a model is judged by the other cases."""
    data = profile_data({
        "sqrt_vector": ("Sqrt", 13, "FLOAT", "right", 13),
        "sqrt_0d": ("Sqrt", 13, "FLOAT", "unfed", 13, f"{RANK_0_INPUT}: inputs ['x']: the simulator takes none"),
    }, RKNN_OPSETS)  # fmt: skip
    assert profile_from_data(data).verdict("Sqrt", 13, "FLOAT").kind == SUPPORTED
    data["cases"]["sqrt_0d"]["verdict"] = "fails"
    assert profile_from_data(data).verdict("Sqrt", 13, "FLOAT").kind == PARTLY
    del data["cases"]["sqrt_vector"]
    data["cases"]["sqrt_0d"]["verdict"] = "unfed"
    assert profile_from_data(data).verdict("Sqrt", 13, "FLOAT").kind == UNVERIFIED


def test_an_op_version_whose_other_cases_were_unfed_is_not_refused_for_running_right_nowhere():
    """rknn gives no constant output, so a Constant alone is unfed on every type but bfloat16,
    which fails at build: Constant-13 on bfloat16 is refused, on int64 unverified (not seen to
    run), and Constant-11 (never probed) is not taken for a version that ran right nowhere.
    Without the unfed cases, no case of the version ran right on any type: refused."""
    unfed = f"{CONSTANT_OUTPUT}: the builder refuses a model of no other outputs"
    data = profile_data({
        "constant_INT64@13": ("Constant", 13, "INT64", "unfed", 13, unfed),
        "constant_BFLOAT16@13": ("Constant", 13, "BFLOAT16", "fails", 13, "No corresponding Numpy type"),
    }, RKNN_OPSETS)  # fmt: skip
    found = profile_from_data(data)
    assert found.verdict("Constant", 13, "BFLOAT16").kind == REFUSED
    assert found.verdict("Constant", 13, "INT64").kind == UNVERIFIED
    assert "unfed" in found.verdict("Constant", 13, "INT64").why
    older = found.verdict("Constant", 11, "INT64")
    assert older.kind == UNVERIFIED and not older.no_version_ran_right
    del data["cases"]["constant_INT64@13"]
    assert profile_from_data(data).verdict("Constant", 13, "INT64").kind == REFUSED
    assert profile_from_data(data).verdict("Constant", 11, "INT64").no_version_ran_right


def test_a_0d_graph_input_blocks_where_the_probe_found_the_runtime_takes_none():
    """A profile whose probe found 0-d feeds "unfed" (rknn's simulator) refuses a model with a
    0-d graph input a node reads (in an If branch too), naming it, whatever its nodes: no pattern
    changes the model's inputs. Not an input given by an initializer too, one nothing reads, one whose readers' ops
    ran right fed a 0-d value there (rknn drops Dropout's ratio outside training), nor any where
    the profile found no such thing."""
    data = profile_data({
        "add": ("Add", 14, "FLOAT", "right", 14),
        "add_0d": ("Add", 14, "FLOAT", "unfed", 14, f"{RANK_0_INPUT}: inputs ['b']: the simulator takes none"),
    }, RKNN_OPSETS)  # fmt: skip
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = make_model([node], [a, b], [y], opset=14)
    findings = check_model(model, profile_from_data(data))
    assert [(f.op_type, f.blocks, f.fix) for f in findings] == [("(input)", True, None)]
    assert "input 'b' is 0-d, read by Add 'add' (input 1)" in str(findings[0]) and "add_0d" in str(findings[0])
    blockers, tried = refused_and_opsets_tried(model, profile_from_data(data))
    assert blockers == ["(input)"]
    assert tried == {None}  # (lowered at the model's opset 14 only: no other opset changes an input)
    given = make_model([node], [a, b], [y], opset=14, initializer=[onnx.numpy_helper.from_array(np.float32(1.0), "b")])
    assert [i.name for i in given.graph.input] == ["a", "b"] and not check_model(given, profile_from_data(data))
    unread = make_model([helper.make_node("Add", ["a", "a"], ["y"])], [a, b], [y], opset=14)
    assert not check_model(unread, profile_from_data(data))
    branch = helper.make_graph([helper.make_node("Add", ["a", "b"], ["t"], name="in_branch")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])  # fmt: skip
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])  # fmt: skip
    flag = helper.make_tensor_value_info("flag", TensorProto.BOOL, [1])
    chosen = helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=other)
    in_a_branch = check_model(make_model([chosen], [a, b, flag], [y], opset=14), profile_from_data(data))
    assert [f.op_type for f in in_a_branch if f.blocks] == ["(input)"]
    assert "read by Add 'in_branch'" in str(in_a_branch[0])
    del data["cases"]["add_0d"]
    assert not check_model(model, profile_from_data(data))


def test_an_output_computed_ahead_blocks_where_the_probe_found_the_runtime_gives_none():
    """A profile whose probe found constant outputs "unfed" (rknn's builder refuses a model of
    such outputs alone and drops one beside others) refuses a model with an output that follows
    from no input's values (a Shape; Dropout's mask outside training) or holds no elements, naming
    each, at the model's opset alone (no opset, no pattern changes what an output holds); a model
    of fed outputs alone passes, and no profile that found no such thing refuses any; nor one
    that found it of other ops than those the output follows from (rknn computes EyeLike's).
    (--target folds the Shape to an initializer: a Constant, found lost too.)"""
    data = profile_data({
        "neg": ("Neg", 13, "FLOAT", "right", 14),
        "shape": ("Shape", 13, "FLOAT", "right", 14),
        "dropout": ("Dropout", 13, "FLOAT", "right", 14),
        "shape_alone": ("Shape", 13, "FLOAT", "unfed", 14,
                        f"{CONSTANT_OUTPUT}: the builder refuses a model of no other outputs"),
        "dropout_mask": ("Dropout", 13, "FLOAT", "unfed", 14, f"{CONSTANT_OUTPUT}: outputs ['mask']: ..."),
        "constant_alone": ("Constant", 13, "FLOAT", "unfed", 14,
                           f"{CONSTANT_OUTPUT}: the builder refuses a model of no other outputs"),
    }, RKNN_OPSETS)  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    nodes = [helper.make_node("Neg", ["x"], ["y"]), helper.make_node("Shape", ["x"], ["s"])]
    model = make_model(nodes, [x], [y, s], opset=14)
    findings = check_model(model, profile_from_data(data))
    assert [(f.op_type, f.element_type, f.blocks, f.fix) for f in findings] == [("(output)", "INT64", True, None)]
    assert "output 's' follows from no input's values" in str(findings[0]) and "shape_alone" in str(findings[0])
    assert refused_and_opsets_tried(model, profile_from_data(data)) == (["(output)"], {None})
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, [2, 3])
    dropout = make_model([helper.make_node("Dropout", ["x"], ["y", "mask"])], [x], [y, mask], opset=14)
    assert [f.op_type for f in check_model(dropout, profile_from_data(data)) if f.blocks] == ["(output)"]
    assert not check_model(make_model(nodes[:1], [x], [y], opset=14), profile_from_data(data))
    # (an output of an op no constant output of which the probe found lost: rknn computes EyeLike's)
    eye = make_model([helper.make_node("EyeLike", ["x"], ["y"])], [x], [y], opset=14)
    assert not [f for f in check_model(eye, profile_from_data(data)) if f.op_type == "(output)"]
    data["cases"]["eyelike_alone"] = ("EyeLike", 9, "FLOAT", "unfed", 14, f"{CONSTANT_OUTPUT}: outputs ['y']: ...")
    data["cases"]["eyelike_alone"] = dict(zip(("op", "version", "type", "verdict", "opset", "detail"),
                                              data["cases"]["eyelike_alone"], strict=True))  # fmt: skip
    assert [f.op_type for f in check_model(eye, profile_from_data(data)) if f.blocks] == ["(output)"]
    # (a Size, of which no constant output was found lost, is not folded by --target: rknn computes it)
    size = make_model([helper.make_node("Size", ["x"], ["n"])], [x],
                      [helper.make_tensor_value_info("n", TensorProto.INT64, [])], opset=14)  # fmt: skip
    data["cases"]["size"] = dict(zip(("op", "version", "type", "verdict", "opset"), ("Size", 13, "FLOAT", "right", 14),
                                     strict=True))  # fmt: skip
    sized = profile_from_data(data)
    assert not check_model(size, sized)
    made = lower_for_target(size, sized, lowering.lower_model, lowerable_ops()).model
    assert [n.op_type for n in made.graph.node] == ["Size"]
    for name in ("shape_alone", "dropout_mask", "constant_alone", "eyelike_alone"):
        del data["cases"][name]
    assert not check_model(model, profile_from_data(data))


def test_an_output_of_no_elements_from_constants_blocks_where_the_probed_one_failed():
    """OpenVINO 2024.6 crashes on a graph output of no elements computed from constants alone
    (its probed ``output_constant_empty``): a model of such an output (a Shape from 2 to 1 of x,
    and the Slice of constants --target folds it to) is refused, naming it, at the model's opset
    alone; one of no elements that reads x's values (a Slice of x to nothing, which it computes)
    passes, as does every model where that case ran right or was unfed (rknn's constant outputs
    are its own finding), and the case says nothing of Slice. Where the probed output of no
    elements from a fed value failed (``output_fed_empty``), the Slice of x blocks."""
    crash = ("Slice", 13, "INT64", "crashes", 13, "exit code -11")
    data = profile_data({"neg": ("Neg", 13, "FLOAT", "right", 13), "shape": ("Shape", 15, "FLOAT", "right", 15),
                         "slice": ("Slice", 13, "FLOAT", "right", 13),
                         f"{OUTPUT_CASE}{EMPTY_CONSTANT_OUTPUT}": crash}, range(7, 19))  # fmt: skip
    profile = profile_from_data(data)
    assert profile.verdict("Slice", 13, "INT64").kind != REFUSED and "output_" not in str(profile.cases)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])
    none = helper.make_tensor_value_info("none", TensorProto.INT64, [0])
    nodes = [helper.make_node("Shape", ["x"], ["none"], start=2, end=1), helper.make_node("Neg", ["x"], ["y"])]
    shape = make_model(nodes, [x], [y, none], opset=15)
    findings = check_model(shape, profile)
    assert [(f.op_type, f.element_type, f.blocks, f.fix) for f in findings] == [("(output)", "INT64", True, None)]
    assert "output 'none' holds no elements and follows from no input's values" in str(findings[0])
    assert "output_constant_empty: crashes (exit code -11)" in str(findings[0])
    assert refused_and_opsets_tried(shape, profile) == (["(output)"], {None})
    starts, ends = (onnx.numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("s", 1), ("e", 0)))
    of_x = make_model([helper.make_node("Slice", ["x", "s", "e"], ["nothing"])], [x],
                      [helper.make_tensor_value_info("nothing", TensorProto.FLOAT, [0, 4])], opset=15,
                      initializer=[starts, ends])  # fmt: skip
    assert not check_model(of_x, profile)
    for verdict, detail in (("right", ""), ("unfed", f"{CONSTANT_OUTPUT}: the builder refuses ...")):
        data["cases"][f"{OUTPUT_CASE}{EMPTY_CONSTANT_OUTPUT}"].update(verdict=verdict, detail=detail)
        assert not check_model(shape, profile_from_data(data))
    # (a runtime whose probed output of no elements from a fed value failed: that one blocks)
    data["cases"][f"{OUTPUT_CASE}{EMPTY_FED_OUTPUT}"] = {**data["cases"]["slice"], "verdict": "fails",
                                                          "detail": "empty output"}  # fmt: skip
    [finding] = check_model(of_x, profile_from_data(data))
    assert finding.op_type == "(output)" and finding.blocks and "follows from a fed value's values" in str(finding)
    assert "output_fed_empty: fails (empty output)" in str(finding) and not check_model(shape, profile_from_data(data))


def test_an_input_of_a_rank_the_runtime_takes_none_of_its_type_at_blocks():
    """rknn's simulator crashes on an int8 graph input of rank 4, even an Identity's, and takes
    int8 at ranks 1 to 3: a model with such an input is refused, naming it, at the model's opset
    alone; one of rank 3 is not; an int16 input, failing at every rank, is the type's matter (the
    nodes reading it judge it), and an initializer's is not an input. The input cases say nothing
    of Identity."""
    data = profile_data({
        "neg": ("Neg", 13, "INT8", "right", 14),
        "input_INT8_3d": ("Identity", 13, "INT8", "right", 13),
        "input_INT8_4d": ("Identity", 13, "INT8", "crashes", 13, "exit code -11"),
        "input_INT16_3d": ("Identity", 13, "INT16", "fails", 13),
        "input_INT16_4d": ("Identity", 13, "INT16", "fails", 13),
    }, RKNN_OPSETS)  # fmt: skip
    found = profile_from_data(data)
    assert found.verdict("Identity", 13, "INT8").kind == UNVERIFIED

    def model_of(element_type: int, shape: list[int], **fields) -> onnx.ModelProto:
        x = helper.make_tensor_value_info("x", element_type, shape)
        y = helper.make_tensor_value_info("y", element_type, shape)
        return make_model([helper.make_node("Neg", ["x"], ["y"])], [x], [y], opset=14, **fields)

    findings = check_model(model_of(TensorProto.INT8, [1, 2, 3, 4]), found)
    assert [(f.op_type, f.element_type, f.blocks, f.fix) for f in findings] == [("(input)", "INT8", True, None)]
    assert "input 'x' is INT8 of rank 4" in str(findings[0]) and "input_INT8_4d: crashes (exit code -11)" in str(
        findings[0]
    )
    assert refused_and_opsets_tried(model_of(TensorProto.INT8, [1, 2, 3, 4]), found) == (["(input)"], {None})
    assert not [f for f in check_model(model_of(TensorProto.INT8, [2, 3, 4]), found) if f.op_type == "(input)"]
    assert not [f for f in check_model(model_of(TensorProto.INT16, [1, 2, 3, 4]), found) if f.op_type == "(input)"]
    weight = onnx.numpy_helper.from_array(np.zeros([1, 2, 3, 4], np.int8), "x")
    assert not check_model(model_of(TensorProto.INT8, [1, 2, 3, 4], initializer=[weight]), found)
    unread = helper.make_tensor_value_info("unread", TensorProto.INT8, [1, 2, 3, 4])  # (a runtime may drop it)
    with_unread = model_of(TensorProto.INT8, [2, 3, 4])
    with_unread.graph.input.append(unread)
    assert not [f for f in check_model(with_unread, found) if f.op_type == "(input)"]
    data["cases"]["input_OPTIONAL_INT8_3d"] = data["cases"]["input_INT16_3d"] | {"type": "INT8"}
    optional = helper.make_value_info("x", helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TensorProto.INT8, [2, 3, 4])))  # fmt: skip
    y = helper.make_tensor_value_info("y", TensorProto.INT8, [2, 3, 4])
    held = make_model([helper.make_node("OptionalGetElement", ["x"], ["y"])], [optional], [y], opset=18)
    [finding] = [f for f in check_model(held, profile_from_data(data)) if f.op_type == "(input)"]
    assert "input 'x' is optional(INT8) of rank 3" in str(finding) and "INT8 right at rank 3 as a tensor" in str(
        finding
    )


def test_a_0d_graph_input_whose_readers_ran_right_fed_one_there_blocks_nothing(monkeypatch):
    """rknn's simulator takes no 0-d input it keeps, but drops one nothing it keeps reads
    (Dropout's ratio outside training): a 0-d input read only where a probed case of the reader's
    op fed a 0-d value at that position and ran right blocks nothing; read elsewhere too, it does."""
    forms = {
        "dropout_0d_ratio": NodeForm(frozenset({0, 1}), frozenset({0, 1}), frozenset(), frozenset({0}), (),
                                     ((0, 1), (1, 0))),
        "add_0d": NodeForm(frozenset({0, 1}), frozenset({0, 1}), frozenset(), frozenset({0}), (), ((0, 1), (1, 0))),
    }  # fmt: skip
    monkeypatch.setattr("lowering.runtime_profiles.case_forms", lambda: forms)
    data = profile_data({
        "dropout_0d_ratio": ("Dropout", 13, "FLOAT", "right", 13),
        "add_0d": ("Add", 14, "FLOAT", "unfed", 14, f"{RANK_0_INPUT}: inputs ['b']: the simulator takes none"),
    }, RKNN_OPSETS)  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    ratio = helper.make_tensor_value_info("ratio", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    dropout = helper.make_node("Dropout", ["x", "ratio"], ["y"], name="dropout")
    assert not check_model(make_model([dropout], [x, ratio], [y], opset=14), profile_from_data(data))
    scaled = helper.make_node("Add", ["y0", "ratio"], ["y"], name="scaled")
    dropout_then_add = [helper.make_node("Dropout", ["x", "ratio"], ["y0"], name="dropout"), scaled]
    findings = check_model(make_model(dropout_then_add, [x, ratio], [y], opset=14), profile_from_data(data))
    assert [f.op_type for f in findings if f.blocks] == ["(input)"] and "read by Add 'scaled'" in str(findings[0])


def test_the_constants_a_pattern_writes_are_of_a_version_the_runtime_runs():
    """onnx2torch implements Constant-9 to -13, not -25 (probed: constant_FLOAT@25 fails). Celu-28
    lowered at opset 28 writes Constant-25, which onnx2torch refuses: --target goes to an opset
    where nothing it refuses is left (Celu-12, its own kernel), and check finds no blocker there;
    the result means what the model meant, bit for bit."""
    profile = load_profile("onnx2torch")
    assert profile.verdict("Constant", 25, "FLOAT").kind == REFUSED
    assert profile.verdict("Constant", 13, "FLOAT").kind == SUPPORTED
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    model = make_model([helper.make_node("Celu", ["x"], ["y"], alpha=2.0)], [x], [y], opset=28)
    result = lowering.lower_model(model, target="onnx2torch")
    opset = schemas.default_opset(result.model.opset_import)
    assert not [f for f in check_model(result.model, profile, opset) if f.blocks]
    assert opset < 19 or all(n.op_type != "Constant" for n in result.model.graph.node)  # (Constant-13 at most)
    onnx.checker.check_model(result.model, full_check=True)
    values = np.array([[-np.inf, -3.0, -0.0], [0.0, 1e-40, np.nan]], np.float32)
    got, want = runs_in_onnxruntime(result.model, {"x": values})[0], runs_in_onnxruntime(model, {"x": values})[0]
    assert got.tobytes() == want.tobytes()


# QuantizeLinear fails at every version; of the ops its formula writes, Cast-25, Round-22 and
# Equal-19 run in no case, their older versions do (onnx2torch: converters up to about opset 17)
FORMULA_RUNS_OLDER = profile(
    {
        "quantize_25": ("QuantizeLinear", 25, "FLOAT", "fails"),
        "quantize_24": ("QuantizeLinear", 24, "FLOAT", "fails"),
        "quantize_23": ("QuantizeLinear", 23, "FLOAT", "fails"),
        "quantize_21": ("QuantizeLinear", 21, "FLOAT", "fails"),
        "quantize_19": ("QuantizeLinear", 19, "FLOAT", "fails"),
        "quantize_13": ("QuantizeLinear", 13, "FLOAT", "fails"),
        "cast_25": ("Cast", 25, "FLOAT", "fails"),
        "cast_13": ("Cast", 13, "FLOAT", "right"),
        "round_22": ("Round", 22, "FLOAT", "fails"),
        "round_11": ("Round", 11, "FLOAT", "right"),
        "equal_19": ("Equal", 19, "FLOAT", "fails"),
        "equal_13": ("Equal", 13, "FLOAT", "right"),
    },
    opsets=range(13, 26),
)


def test_a_target_ranks_opsets_by_the_ops_the_patterns_write_there_too():
    """An unnamed QuantizeLinear-25 that the runtime refuses at every opset (so each ties on
    nodes no pattern lowers): the opsets where the ops its formula writes run in some case rank
    first, and --target lowers it at one of them, not at 25, where Cast-25 and Round-22 would fail."""
    from lowering.target_lowering import opsets_for_target

    scale = onnx.numpy_helper.from_array(np.array(0.5, np.float32), "scale")
    zero = onnx.numpy_helper.from_array(np.array(3, np.uint8), "zero")
    model = make_model(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [6])],
        opset=25, initializer=[scale, zero],
    )  # fmt: skip
    ranked = opsets_for_target(model, FORMULA_RUNS_OLDER, lowerable_ops())
    assert ranked[0] <= 18 and 25 not in ranked[:2], ranked  # (Round-22 from 22, Equal-19 from 19)
    result = lowering.lower_model(model, target=FORMULA_RUNS_OLDER)
    opset = schemas.default_opset(result.model.opset_import)
    assert opset <= 18 and "QuantizeLinear" not in {node.op_type for node in result.model.graph.node}
    x = np.array([0.25, 0.75, -1e9, np.nan, np.inf, 1.25], np.float32)
    [got], [want] = runs_in_onnxruntime(result.model, {"x": x}), runs_in_onnxruntime(model, {"x": x})
    assert got.tobytes() == want.tobytes()


def less_or_equal_model() -> onnx.ModelProto:
    nodes = [helper.make_node("LessOrEqual", ["a", "b"], ["c"], name="at_most")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT32, [4]) for name in "ab"]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.BOOL, [4])], opset=16)


@pytest.mark.parametrize("wrong_on_small_values", [False, True], ids=["wrong past the edges only", "wrong on small"])
def test_an_op_wrong_only_on_integers_past_the_edges_is_named_and_kept(wrong_on_small_values):
    """A runtime right on small int32 values and wrong past 2^24 (OpenVINO computes them through
    float32) is partly right, and the verdict says where; the node is kept, since the Less, Equal
    and Or its pattern writes are wrong there too, and check offers no fix. Wrong on small values
    as well, it is lowered as any partly node is."""
    cases = {
        "small_LessOrEqual_INT32@16": ("LessOrEqual", 16, "INT32", "wrong" if wrong_on_small_values else "right"),
        "wide_LessOrEqual_INT32@16": ("LessOrEqual", 16, "INT32", "wrong"),
        "test_less_or_equal_int32": ("LessOrEqual", 16, "INT32", "right"),
        "wide_Less_INT32@13": ("Less", 13, "INT32", "wrong"),
        "small_Less_INT32@13": ("Less", 13, "INT32", "right"),
        "wide_Equal_INT32@13": ("Equal", 13, "INT32", "wrong"),
        "small_Equal_INT32@13": ("Equal", 13, "INT32", "right"),
        "or": ("Or", 7, "BOOL", "right"),
    }
    judged = profile(cases, opsets=range(16, 17))
    verdict = judged.verdict("LessOrEqual", 16, "INT32")
    assert verdict.kind == PARTLY and verdict.only_past_edges is not wrong_on_small_values
    # (a node known to be given no integer past 2^24 is judged by the other cases alone)
    within = judged.verdict("LessOrEqual", 16, "INT32", free_of=PAST_EDGES)
    assert within.kind == (PARTLY if wrong_on_small_values else SUPPORTED)
    assert ("past 2^24" in verdict.why) is not wrong_on_small_values
    model = less_or_equal_model()
    [finding] = check_model(model, judged, lowerable=lowerable_ops())
    assert finding.verdict.kind == PARTLY and (finding.fix is None) is not wrong_on_small_values
    result = lowering.lower_model(model, target=judged)
    kept = [node.op_type for node in result.model.graph.node] == ["LessOrEqual"]
    assert kept is not wrong_on_small_values
    left = ["LessOrEqual-16"] if kept else ["Equal-13", "Less-13"]  # (what its pattern writes, partly right too)
    assert result.report.partly == {f"{op} on INT32 (wrong only on integers past 2^24)": 1 for op in left}
    a, b = np.int32([2**24 + 1, -7, 3, 2**31 - 1]), np.int32([2**24, -7, 4, -(2**31)])
    [got] = runs_in_onnxruntime(result.model, {"a": a, "b": b})
    assert got.tolist() == [False, True, True, False]


def test_openvinos_integer_arithmetic_past_float32s_integers_is_named_in_its_profile():
    """Probed: OpenVINO 2026.4 divides int32 through float32 (2147483647 / 1 is -2147483648) and
    narrows int64 to int32, right on small values; tract 0.23 is right on both."""
    openvino, tract = load_profile("openvino-2026.4"), load_profile("tract-0.23")
    for op_type, version, type_name in (("Div", 14, "INT32"), ("Add", 14, "INT64"), ("Equal", 13, "INT64")):
        said = openvino.verdict(op_type, version, type_name)
        assert said.kind == PARTLY and said.only_past_edges and f"wide_{op_type}_{type_name}@" in said.why
        assert tract.verdict(op_type, version, type_name).kind == SUPPORTED


def test_a_form_is_not_chosen_for_a_node_wrong_only_on_integers_past_the_edges():
    """OpenVINO 2026.4 narrows int64 to int32, in Max as in the Less and Where of the form
    Max -> Where(Less(a, b), b, a): the form does no better, and the Max is kept."""
    dims = [1, 2, 3, 4]
    nodes = [helper.make_node("Max", ["a", "b"], ["c"], name="larger")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in "ab"]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.INT64, dims)], opset=17)
    verdict = load_profile("openvino-2026.4").verdict("Max", 13, "INT64")
    assert verdict.kind == PARTLY and verdict.only_past_edges
    result = lowering.lower_model(model, target="openvino-2026.4")
    assert [node.op_type for node in result.model.graph.node] == ["Max"]
    assert not result.report.forms
    said = "Max-13 on INT64 (wrong only on integers past 2^24)"
    assert result.report.partly == {said: 1} and result.report.as_dict()["partly"] == {said: 1}
    assert f"left 1 x {said}: partly right on the runtime, as probed (check -v lists them)" in result.report.lines()


def divide_model(constant_divisor: bool) -> onnx.ModelProto:
    """Div-14 of a fed float vector by a fed one, or by an initializer."""
    divisor = [onnx.numpy_helper.from_array(np.float32([2, 3, 4, 5]), "b")] if constant_divisor else []
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [4]) for name in ("ab"[:1] if divisor else "ab")]
    nodes = [helper.make_node("Div", ["a", "b"], ["c"], name="divide")]
    output = helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])
    return make_model(nodes, inputs, [output], opset=14, initializer=divisor)


@pytest.mark.parametrize("failing", [False, True], ids=["gives other values", "fails"])
def test_an_op_wrong_only_on_ieee_values_is_named_by_the_case_nearest_its_form_and_kept(failing):
    """A runtime right in the backend's Div cases and wrong in the IEEE case of two fed inputs
    (it divides by the reciprocal) is partly right on a Div of two fed inputs, only on such
    values, and the node is kept (no form or pattern is chosen for values); a Div by a constant
    is judged by the IEEE case of a constant divisor, right here. An IEEE case that fails says
    nothing of values: no note."""
    cases = {
        "test_div": ("Div", 14, "FLOAT", "right"),
        "test_div_bcast": ("Div", 14, "FLOAT", "right"),
        "ieee_Div_FLOAT@14": ("Div", 14, "FLOAT", "fails" if failing else "wrong"),
        "ieee_Div_FLOAT@14#constant": ("Div", 14, "FLOAT", "right"),
        "ieee_Div_FLOAT@14#node": ("Div", 14, "FLOAT", "right"),
    }
    judged = profile(cases, opsets=range(14, 15))
    fed, constant = divide_model(False), divide_model(True)
    findings = check_model(fed, judged, lowerable=lowerable_ops())
    assert check_model(constant, judged, lowerable=lowerable_ops()) == []
    if failing:
        assert findings == [] and judged.verdict("Div", 14, "FLOAT").kind == SUPPORTED
        return
    [finding] = findings
    verdict = finding.verdict
    assert verdict.kind == PARTLY and verdict.only_on_values and not verdict.only_past_edges
    assert verdict.kind_for_choices == verdict.kind_for_forms == SUPPORTED
    assert verdict.wrong_values == "float values the backend's cases lack" and "ieee_Div_FLOAT@14: wrong" in verdict.why
    assert finding.as_dict()["wrong_values"] == verdict.wrong_values and not finding.as_dict()["only_past_edges"]
    result = lowering.lower_model(fed, target=judged)
    assert [node.op_type for node in result.model.graph.node] == ["Div"] and not result.report.forms
    said = "Div-14 on FLOAT (wrong only on float values the backend's cases lack)"
    assert result.report.partly == {said: 1}
    assert f"left 1 x {said}: partly right on the runtime, as probed (check -v lists them)" in result.report.lines()


def test_a_lowerable_op_wrong_only_on_ieee_values_is_kept_with_no_fix():
    """OpenVINO 2026.4 finds NaN greater than anything (probed): GreaterOrEqual-16 on float, fed
    as the IEEE case is, is partly right only on such values; its pattern writes Greater too, so
    check offers no fix and --target keeps the node."""
    nodes = [helper.make_node("GreaterOrEqual", ["a", "b"], ["c"], name="at_least")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [4]) for name in "ab"]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.BOOL, [4])], opset=16)
    [finding] = check_model(model, "openvino-2026.4", lowerable=lowerable_ops())
    assert "GreaterOrEqual" in lowerable_ops() and finding.verdict.only_on_values and finding.fix is None
    result = lowering.lower_model(model, target="openvino-2026.4")
    assert [node.op_type for node in result.model.graph.node] == ["GreaterOrEqual"]


def test_ieee_cases_choose_no_form_and_judge_no_op_run_or_untyped_node():
    """A runtime wrong in the IEEE case of an Add reading a Constant node and right in the one
    reading an initializer: the Add is partly right only on values, and no form is chosen for it
    (the Constant stays a node); an op version whose only cases are IEEE cases, wrong, is not
    taken for one the runtime never ran; and a node of unknown element type (an int64 Div in a
    local function) is not judged by float cases."""
    cases = {
        "test_add": ("Add", 14, "FLOAT", "right"),
        "test_add_bcast": ("Add", 14, "FLOAT", "right"),
        "ieee_Add_FLOAT@14": ("Add", 14, "FLOAT", "right"),
        "ieee_Add_FLOAT@14#constant": ("Add", 14, "FLOAT", "right"),
        "ieee_Add_FLOAT@14#node": ("Add", 14, "FLOAT", "wrong"),
        "ieee_Max_FLOAT@6": ("Max", 6, "FLOAT", "wrong"),
        "test_div": ("Div", 14, "FLOAT", "right"),
        "ieee_Div_FLOAT@14": ("Div", 14, "FLOAT", "wrong"),
    }
    judged = profile(cases, opsets=range(14, 15))
    nodes = [helper.make_node("Constant", [], ["two"], value=onnx.numpy_helper.from_array(np.float32([2] * 4))),
             helper.make_node("Add", ["a", "two"], ["c"], name="add")]  # fmt: skip
    model = make_model(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [4])],
                       [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])], opset=14)  # fmt: skip
    [finding] = [f for f in check_model(model, judged, lowerable=lowerable_ops()) if f.op_type == "Add"]
    assert finding.verdict.kind == PARTLY and finding.verdict.only_on_values and finding.fix is None
    result = lowering.lower_model(model, target=judged)
    assert [node.op_type for node in result.model.graph.node] == ["Constant", "Add"] and not result.report.forms
    assert judged.runs_at_all("Max", 6) is None and judged.runs_at_all("Add", 14) is True
    assert judged.verdict("Div", 14, "").kind == SUPPORTED and judged.verdict("Div", 14, "FLOAT").kind == PARTLY


def test_the_ieee_cases_name_the_runtimes_float_arithmetic_wrong_on_values():
    """Probed: OpenVINO 2026.4 computes double as float and float fmod through a float32
    quotient, tract 0.23 and TVM 0.27 drop NaN in Max; each is partly right there, only on such
    values. onnxruntime gets every IEEE case right, so a node of each such op, type and version,
    fed as the cases are, is supported there. (Such ops with patterns, LessOrEqual and
    GreaterOrEqual, write comparisons wrong there too: the test below.)"""
    said = {name: load_profile(name) for name in ("openvino-2026.4", "tract-0.23", "tvm-0.27", "onnxruntime")}
    forms = case_forms()
    wrong_on_values = (("openvino-2026.4", "Mod", 13, "FLOAT"), ("openvino-2026.4", "Abs", 13, "DOUBLE"),
                       ("tract-0.23", "Max", 13, "FLOAT"), ("tvm-0.27", "Min", 13, "FLOAT16"))  # fmt: skip
    for name, op_type, version, type_name in wrong_on_values:
        label = f"{op_type}_1" if op_type == "Mod" else op_type
        form = forms[f"ieee_{label}_{type_name}@{version}"]
        verdict = said[name].verdict(op_type, version, type_name, form)
        assert verdict.kind == PARTLY and verdict.wrong_values == "float values the backend's cases lack", name
        assert verdict.only_on_values and not verdict.only_past_edges
        assert said["onnxruntime"].verdict(op_type, version, type_name, form).kind == SUPPORTED
    ieee = [case for case in json.loads((PROFILES / "onnxruntime.json").read_text())["cases"]
            if case.startswith("ieee_")]  # fmt: skip
    assert len(ieee) > 300
    ops = {case.removeprefix("ieee_").split("_")[0] for case in ieee}
    assert {"LessOrEqual", "GreaterOrEqual"} <= ops & set(lowerable_ops())


@pytest.mark.parametrize("name", PROBED)
def test_an_op_kept_for_being_wrong_only_past_the_edges_has_patterns_writing_ops_wrong_there_too(name):
    """Where a shipped profile finds a lowerable op wrong only on integers past 2^24 or on IEEE
    values (and kept by --target for it), some op its pattern writes on that type is wrong there
    too, so lowering would do no better; were the runtime right there in each, the op should be
    lowered instead. (A rule that takes no such case's form, Max's of one operand, lowers none.)"""
    from lowering.target_lowering import ops_written_for

    profile_data = json.loads((PROFILES / f"{name}.json").read_text())["cases"]
    wide: dict[tuple, list[str]] = {}
    for case, c in profile_data.items():
        if case.startswith(("wide_", "ieee_")):
            wide.setdefault((c["op"], c["version"], c["type"]), []).append(case)
    loaded, lowerable, forms = load_profile(name), lowerable_ops(), case_forms()

    def taken(key: tuple) -> bool:
        rule = rule_for("", key[0])
        return rule is None or any(rule.takes_form(f.fed, f.empty, f.inputs) for f in map(forms.get, wide[key]) if f)

    kept = [
        key for key in sorted(wide) if key[0] in lowerable and loaded.verdict(*key).only_on_values and taken(key)
    ]  # fmt: skip
    for op_type, version, type_name in kept:
        written = ops_written_for(op_type, version)
        opset = max(version, 7)
        wrong_too = [
            op for op in written
            if (found := schemas.version_in_force(op, opset)) is not None
            and (op, found, type_name) in wide and not loaded.verdict(op, found, type_name).kind == SUPPORTED
        ]  # fmt: skip
        assert wrong_too, (op_type, version, type_name, sorted(written))
    if name.startswith("openvino"):
        assert ("LessOrEqual", 16, "INT32") in kept and ("GreaterOrEqual", 16, "FLOAT") in kept


def test_a_where_is_judged_past_the_edges_by_the_cases_of_its_own_value_type():
    """Where's probe cases go by their condition's type (bool): OpenVINO 2026.4's int64 Where is
    noted wrong past the edges (it narrows int64 to int32), a float Where is not."""
    profile_2026 = load_profile("openvino-2026.4")
    for value_type, noted in ((TensorProto.FLOAT, False), (TensorProto.INT64, True)):
        inputs = [helper.make_tensor_value_info("c", TensorProto.BOOL, [4])]
        inputs += [helper.make_tensor_value_info(name, value_type, [4]) for name in "ab"]
        nodes = [helper.make_node("Where", ["c", "a", "b"], ["y"], name="pick")]
        model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", value_type, [4])], opset=16)
        findings = check_model(model, profile_2026, lowerable=lowerable_ops())
        assert [(f.verdict.kind, f.verdict.only_past_edges) for f in findings] == ([(PARTLY, True)] if noted else [])


def test_an_older_opset_named_as_the_fix_is_taken_back_where_the_model_cannot_go_there():
    """Cast-21 to int4 runs wrong on the made-up runtime and Cast-19 on float right; but Cast-19
    writes no int4, so the conversion the check names cannot be made: --target refuses, and
    check (its fixes confirmed by running --target) names no fix."""
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT4, name="to_int4")],
        "cast",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
        [helper.make_tensor_value_info("y", TensorProto.INT4, [5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    runtime = profile(
        {"cast_21": ("Cast", 21, "FLOAT", "wrong"), "cast_19": ("Cast", 19, "FLOAT", "right")}, range(19, 22)
    )
    findings = check_model(model, runtime, lowerable=lowerable_ops())
    assert [(f.op_type, f.fix) for f in findings if f.blocks] == [("(opset)", "converted to opset 20")]
    with pytest.raises(TargetRefused):
        lowering.lower_model(model, target=runtime)
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target=runtime), model)
    assert [f.fix for f in confirmed if f.blocks] == [None]
    assert "--target: refused: Cast-21 at graph 'cast', node 'to_int4'" in confirmed[0].verdict.why


def test_a_retyping_keeps_no_fix_where_the_casts_it_writes_are_refused():
    """TensorRT 8.6's table lists Concat on int32, not int64, and no Cast of int64: check names
    retyping int64 to int32 as the fix of an int64 Concat of the model's input (with --retype-io)
    and of a Concat of that, but --target, keeping the model's int64 input, casts it down, which
    the table refuses: each fix is taken back, saying so and that --retype-io (the input made
    int32) avoids that Cast; with it the model fits."""
    nodes = [helper.make_node("Concat", ["x", "x"], ["t"], name="first", axis=0),
             helper.make_node("Concat", ["t", "t"], ["y"], name="second", axis=0)]  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.INT64, [2])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.INT64, [8])], opset=17)
    findings = check_model(model, load_profile("tensorrt-8.6"), lowerable=lowerable_ops())
    first, second = [f for f in findings if f.blocks]
    assert first.fix.startswith("retyped to int32 (--retype int64=int32 --retype-io")
    assert second.fix == "retyped to int32 (--retype int64=int32)"
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target="tensorrt-8.6"), model)
    for finding in [f for f in confirmed if f.blocks]:
        assert finding.fix is None and "--target: the retyping wrote what it refuses: Cast-13" in finding.verdict.why
        assert "(with --retype-io the model's inputs change type instead)" in finding.verdict.why

    # (a refused Cast the retyping did not write, by its name, is not blamed on it: a version adapter's)
    def adapter_cast_refused():
        raise TargetRefused([RemainingOp("Cast", 13, "graph 'main', node 'pad_adapter_Cast'", "refused", "main",
                                         "pad_adapter_Cast")], "tensorrt-8.6")  # fmt: skip

    kept = [(f.op_type, f.node, f.fix) for f in fixes_confirmed(findings, adapter_cast_refused, model) if f.blocks]
    # (the adapter's Cast is said apart: a blocker --target met that check did not foresee)
    assert kept == [(first.op_type, first.node, first.fix), (second.op_type, second.node, second.fix),
                    ("Cast", "pad_adapter_Cast", None)]  # fmt: skip
    made = lowering.lower_model(model, target="tensorrt-8.6", retype_io=True).model
    assert [i.type.tensor_type.elem_type for i in made.graph.input] == [TensorProto.INT32]
    assert not [f for f in check_model(made, load_profile("tensorrt-8.6"), lowerable=lowerable_ops()) if f.blocks]


def test_the_opset_a_model_must_leave_keeps_no_fix_where_the_model_cannot_go_there():
    """A runtime that loads opsets 11 to 20, fails Squeeze-13 and runs Squeeze-11: the model's
    opset 21 blocks in any case, and check, judging the Squeeze at 12 as Squeeze-11, names
    converting to 12 as its fix; but a Squeeze fed its axes at run time cannot go below 13
    (Squeeze-11 takes them as an attribute), and --target refuses the Squeeze-13, which check did
    not foresee: the opset keeps no fix."""
    nodes = [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3]),
              helper.make_tensor_value_info("axes", TensorProto.INT64, [1])]  # fmt: skip
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], opset=21)
    runtime = profile(
        {"squeeze_13": ("Squeeze", 13, "FLOAT", "fails"), "squeeze_11": ("Squeeze", 11, "FLOAT", "right")},
        range(11, 21),
    )
    findings = check_model(model, runtime, lowerable=lowerable_ops())
    assert [(f.op_type, f.fix) for f in findings if f.blocks] == [("(opset)", "converted to opset 12")]
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target=runtime), model)
    assert [f.fix for f in confirmed if f.blocks] == [None]
    assert "--target: refused: Squeeze-13 at graph" in confirmed[0].verdict.why


def test_the_opset_a_model_must_leave_keeps_its_fix_where_target_refuses_only_what_a_pattern_wrote():
    """Cosh fails on the made-up runtime and so does Exp, which Cosh's pattern writes: --target
    converts to opset 20 as check says and refuses the pattern's Exps, nodes check never judged;
    the opset keeps its fix, Cosh's pattern does not (it wrote what the runtime refuses)."""
    nodes = [helper.make_node("Cosh", ["x"], ["c"], name="cosh"), helper.make_node("Relu", ["c"], ["y"], name="relu")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])], opset=21)
    right = {op: ("right", version) for op, version in [("Relu", 14), ("Add", 14), ("Mul", 14), ("Div", 14),
                                                        ("Neg", 13), ("Sub", 14)]}  # fmt: skip
    runtime = profile({
        "cosh": ("Cosh", 9, "FLOAT", "fails"), "exp": ("Exp", 13, "FLOAT", "fails"),
        **{op.lower(): (op, version, "FLOAT", verdict) for op, (verdict, version) in right.items()},
    }, range(11, 21))  # fmt: skip
    findings = check_model(model, runtime, lowerable=lowerable_ops())
    with pytest.raises(TargetRefused, match="cosh_Exp"):
        lowering.lower_model(model, target=runtime)
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target=runtime), model)
    assert [(f.op_type, f.fix) for f in confirmed] == [("(opset)", "converted to opset 20"), ("Cosh", None)]
    assert "its pattern wrote what it refuses: Exp-13 at graph 'main', node 'cosh_Exp'" in confirmed[1].verdict.why


def test_an_older_opset_named_as_the_fix_stays_where_another_node_blocks_there_too():
    """Cast-21 (float to int8) runs wrong and Cast-19 right, and the Mul after it fails on int8 at
    every version: --target goes to opset 20 and refuses the Mul only, which check foresaw, so
    the opset keeps its fix and the Mul has none."""
    nodes = [
        helper.make_node("Cast", ["x"], ["c"], to=TensorProto.INT8, name="a"),
        helper.make_node("Mul", ["c", "c"], ["y"], name="b"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.INT8, [5])], opset=21)
    runtime = profile({
        "cast_21": ("Cast", 21, "FLOAT", "wrong"), "cast_19": ("Cast", 19, "FLOAT", "right"),
        "mul": ("Mul", 14, "INT8", "fails"),
    }, range(19, 22))  # fmt: skip
    findings = check_model(model, runtime, lowerable=lowerable_ops())
    assert [(f.op_type, f.fix) for f in findings if f.blocks] == [("(opset)", "converted to opset 20"), ("Mul", None)]
    confirmed = fixes_confirmed(findings, lambda: lowering.lower_model(model, target=runtime), model)
    assert [(f.op_type, f.fix) for f in confirmed if f.blocks] == [("(opset)", "converted to opset 20"), ("Mul", None)]


def test_after_a_refusal_the_opsets_tried_next_are_those_where_a_blocking_op_has_another_version():
    """AffineGrid-20's body writes Split-18 with num_outputs in its If branches at opsets 18 to
    20, which this runtime fails (OpenVINO 2024.6 on an uneven cut), and Split-13 with its sizes
    below 18, which it runs. The opsets are ranked by the ops of the body, not of its branches
    (and of the rules that may lower those: Unsqueeze's writes ReduceMax, whose version 18 sets
    18 apart): 20, 19, 18, 17 (16 and 17 count as one), 15. After the refusal at 20 and again at
    19 and 18, --target tries 17, the best opset where Split has another version, and makes the
    model there."""
    made = {"affine_grid": ("AffineGrid", 20, "FLOAT", "fails"), "split_18": ("Split", 18, "FLOAT", "fails"),
            "split_13": ("Split", 13, "FLOAT", "right")}  # fmt: skip
    split_18_fails = profile(made, opsets=range(13, 21))
    model = affine_grid_model()
    with pytest.raises(TargetRefused, match="Split-18"):
        lowering.lower_model(model, target=split_18_fails, target_opset=20)
    result = lowering.lower_model(model, target=split_18_fails)
    opset = schemas.default_opset(result.model.opset_import)
    assert opset == 17 and "Split" in {node.op_type for node in result.model.graph.node}
    assert not [f for f in check_model(result.model, split_18_fails, opset) if f.blocks]
    assert_computes_its_grid(result.model, model)


def test_the_opsets_tried_first_after_a_refusal_are_the_best_ranked_whatever_the_blockers():
    """ThresholdedRelu-22, which the runtime fails, has a body that writes Where-16, which it
    fails too; at 16 to 21 ThresholdedRelu-10 runs and no Where is written, though Where is
    Where-16 there too; at 13 to 15 RoiAlign-10 is refused. The best-ranked opsets are tried
    first whether or not a blocker's op has another version there, so the model is made at 21,
    not refused at 15 and 14."""
    made = {"tr22": ("ThresholdedRelu", 22, "FLOAT", "fails"), "tr10": ("ThresholdedRelu", 10, "FLOAT", "right"),
            "where16": ("Where", 16, "FLOAT", "fails"), "where9": ("Where", 9, "FLOAT", "fails"),
            "roi22": ("RoiAlign", 22, "FLOAT", "right"), "roi16": ("RoiAlign", 16, "FLOAT", "right"),
            "roi10": ("RoiAlign", 10, "FLOAT", "fails")}  # fmt: skip
    where_fails = profile(made, opsets=range(13, 23))
    nodes = [
        helper.make_node("ThresholdedRelu", ["x"], ["z"], name="thr", alpha=0.5),
        helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], name="roi", output_height=2, output_width=2),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4]),
        helper.make_tensor_value_info("rois", TensorProto.FLOAT, [2, 4]),
        helper.make_tensor_value_info("idx", TensorProto.INT64, [2]),
    ]
    outputs = [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 4, 4]),
               helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 2, 2])]  # fmt: skip
    model = make_model(nodes, inputs, outputs, opset=22)
    result = lowering.lower_model(model, target=where_fails)
    assert schemas.default_opset(result.model.opset_import) == 21
    assert {node.op_type for node in result.model.graph.node} == {"ThresholdedRelu", "RoiAlign"}


def test_a_conversion_refused_at_the_first_opset_is_tried_at_the_best_ranked_next():
    """A ScatterND-18 with reduction max whose index depth is unknown cannot go to 17, the first
    opset the profile loads below the model's 18 (its blockers name the node's version, 18, not
    one in force at 17): the best-ranked next opset, 19, where it needs no conversion, is tried
    first."""
    made = {"sn18": ("ScatterND", 18, "FLOAT", "right"), "sn16": ("ScatterND", 16, "FLOAT", "right"),
            "sn13": ("ScatterND", 13, "FLOAT", "right"), "add13": ("Add", 13, "FLOAT", "right"),
            "add14": ("Add", 14, "FLOAT", "right")}  # fmt: skip
    gap_at_18 = profile(made, opsets=[13, 14, 15, 16, 17, 19, 20])
    nodes = [helper.make_node("ScatterND", ["x", "idx", "u"], ["s"], name="scatter", reduction="max"),
             helper.make_node("Add", ["s", "s"], ["y"], name="add")]  # fmt: skip
    inputs = [
        helper.make_tensor_value_info(name, element_type, shape)
        for name, element_type, shape in (
            ("x", TensorProto.FLOAT, [1, 4]),
            ("idx", TensorProto.INT64, [1, "k"]),
            ("u", TensorProto.FLOAT, [1]),
        )
    ]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], opset=18)
    with pytest.raises(lowering.ConversionRefused, match="last dimension of its indices"):
        lowering.lower_model(model, target_opset=17)
    result = lowering.lower_model(model, target=gap_at_18)
    assert schemas.default_opset(result.model.opset_import) == 19


def test_a_deprecated_op_goes_to_the_opset_where_the_op_replacing_it_runs():
    """Upsample-9 (its scales constant), which the runtime fails, is Resize from opset 10 on
    (the version adapter writes it in Upsample's place): opsets are ranked by Resize's versions
    too, so --target reaches 11, where Resize-11 runs, past 10, where Resize-10 fails (TVM 0.27
    and tract 0.23 answer so, probed)."""
    made = {"upsample": ("Upsample", 9, "FLOAT", "fails"), "resize_10": ("Resize", 10, "FLOAT", "fails"),
            "resize_11": ("Resize", 11, "FLOAT", "right"), "constant": ("Constant", 9, "FLOAT", "right")}  # fmt: skip
    resize_11_runs = profile(made, opsets=range(8, 14))
    scales = onnx.numpy_helper.from_array(np.array([1, 1, 2, 3], np.float32), "scales")
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 6])], opset=9,
                       initializer=[scales])  # fmt: skip
    result = lowering.lower_model(model, target=resize_11_runs)
    opset = schemas.default_opset(result.model.opset_import)
    assert opset == 11 and {node.op_type for node in result.model.graph.node} <= {"Resize", "Constant"}
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    (want,), (got,) = (ReferenceEvaluator(m).run(None, {"x": x}) for m in (model, result.model))
    np.testing.assert_array_equal(got, want)


def test_a_small_model_refused_at_the_first_opsets_is_tried_at_every_other():
    """rknn crashes on the Cast of bools to uint8 and the Greater of uint8 that carry a bool
    ReduceMax-20 at opsets 12 to 19; a model of few nodes (FEW_NODES) is tried at each opset it
    loads before it is refused, and goes to 11, where ReduceMax-11 takes no uint8 and int32
    carries them."""
    axes = onnx.numpy_helper.from_array(np.array([1], np.int64), "a")
    nodes = [helper.make_node("ReduceMax", ["x", "a"], ["y"], keepdims=1)]
    x = helper.make_tensor_value_info("x", TensorProto.BOOL, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.BOOL, [2, 1])
    result = lowering.lower_model(make_model(nodes, [x], [y], opset=20, initializer=[axes]), target="rknn")
    assert schemas.default_opset(result.model.opset_import) <= 11
    [cast] = [node for node in result.model.graph.node if node.op_type == "Cast"]
    assert cast.attribute[0].i == TensorProto.INT32
    got = runs_in_onnxruntime(result.model, {"x": np.array([[True, False, False], [False, False, False]])})
    assert got[0].tolist() == [[True], [False]]
