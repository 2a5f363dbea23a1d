"""The pass over whole models: subgraphs, functions, names, foreign domains, nothing lost."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import helper
from support import make_model, oracle, parse

import lowering
from lowering.opcount import count_ops
from lowering.samples import sample_values
from lowering.verification.runtime import run_onnxruntime

F32 = onnx.TensorProto.FLOAT


def all_op_types(model: onnx.ModelProto) -> set[str]:
    """Every op type in the model, its subgraphs and its local functions."""
    return set(count_ops(model))


def lower_and_check(model: onnx.ModelProto) -> lowering.LoweringResult:
    result = lowering.lower_model(model)
    onnx.checker.check_model(result.model, full_check=True)
    return result


def test_if_branches_read_outer_scope_values():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 16]>
        main (float[N] x, bool c) => (bool[N] y) {
            y = If (c) <
                then_branch = then_graph () => (bool[N] t) { t = IsNaN (x) },
                else_branch = else_graph () => (bool[N] e) { e = IsInf <detect_positive = 0> (x) }
            >
        }
    """)
    result = lower_and_check(model)
    assert "IsNaN" not in all_op_types(result.model) and "IsInf" not in all_op_types(result.model)
    values = sample_values(F32)
    for condition, op_type, flags in ((True, "IsNaN", {}), (False, "IsInf", {"detect_positive": 0})):
        (got,) = run_onnxruntime(result.model, {"x": values, "c": np.array(condition)})
        np.testing.assert_array_equal(got, oracle(op_type, values, **flags))


def test_loop_and_scan_bodies_and_nested_subgraphs():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 16]>
        main (float[N] x, int64 trips, bool c) => (bool[T, N] y, bool[N] s) {
            y = Loop (trips, c) <body = body (int64 i, bool cond) => (bool cond_out, bool[N] flags) {
                cond_out = Identity (cond)
                flags = If (cond) <
                    then_branch = inner_then () => (bool[N] a) { a = IsNaN (x) },
                    else_branch = inner_else () => (bool[N] b) { b = IsInf (x) }
                >
            }>
            s = Scan (x) <num_scan_inputs = 1, body = scan_body (float e) => (bool o) {
                nan = IsNaN (e)
                negative_inf = IsInf <detect_positive = 0> (e)
                o = Or (nan, negative_inf)
            }>
        }
    """)
    result = lower_and_check(model)
    assert result.report.rewritten == {"IsNaN-13": 2, "IsInf-10": 2}
    assert not {"IsNaN", "IsInf"} & set(all_op_types(result.model))
    values = sample_values(F32, random_count=1000)
    feeds = {"x": values, "trips": np.array(1, dtype=np.int64), "c": np.array(True)}
    got = run_onnxruntime(result.model, feeds)
    want = run_onnxruntime(model, feeds)
    assert all(np.array_equal(a.view(np.uint8), b.view(np.uint8)) for a, b in zip(got, want, strict=True))


def test_local_function_is_lowered_for_the_type_it_is_called_with():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 20, "local" : 1]>
        main (bfloat16[N] x) => (bool[N] y) {
            y = local.AnyBad (x)
        }
        <domain: "local", opset_import: ["" : 20]>
        AnyBad (v) => (flag) {
            nan = IsNaN (v)
            inf = IsInf (v)
            flag = Or (nan, inf)
        }
    """)
    result = lower_and_check(model)
    assert result.report.complete
    assert not {"IsNaN", "IsInf"} & set(all_op_types(result.model))
    values = sample_values(onnx.TensorProto.BFLOAT16)
    (got,) = run_onnxruntime(result.model, {"x": values})
    np.testing.assert_array_equal(got, oracle("IsNaN", values) | oracle("IsInf", values))


def test_function_called_with_two_types_is_reported_not_guessed():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 20, "local" : 1]>
        main (float[N] x, float16[N] h) => (bool[N] y, bool[N] z) {
            y = local.Nan (x)
            z = local.Nan (h)
        }
        <domain: "local", opset_import: ["" : 20]>
        Nan (v) => (flag) {
            flag = IsNaN (v)
        }
    """)
    result = lower_and_check(model)
    (remaining,) = result.report.remaining
    assert remaining.op_type == "IsNaN" and remaining.location.startswith("function 'local.Nan'")
    assert "different input types" in remaining.reason and "float16" in remaining.reason


def test_function_called_with_one_type_in_two_shapes_is_lowered_for_both():
    """Calls that differ only in shapes agree on what the body's rules read: the types without
    shapes."""
    model = parse("""
        <ir_version: 8, opset_import: ["" : 20, "local" : 1]>
        main (float[N] x, float[2, 3] m) => (bool[N] y, bool[2, 3] z) {
            y = local.Nan (x)
            z = local.Nan (m)
        }
        <domain: "local", opset_import: ["" : 20]>
        Nan (v) => (flag) {
            flag = IsNaN (v)
        }
    """)
    result = lower_and_check(model)
    assert result.report.complete and "IsNaN" not in all_op_types(result.model)
    values = sample_values(onnx.TensorProto.FLOAT)
    grid = np.resize(values, (2, 3))
    y, z = run_onnxruntime(result.model, {"x": values, "m": grid})
    np.testing.assert_array_equal(y, oracle("IsNaN", values))
    np.testing.assert_array_equal(z, oracle("IsNaN", grid))


def test_uncalled_function_is_reported():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 20, "local" : 1]>
        main (float[N] x) => (float[N] y) { y = Identity (x) }
        <domain: "local", opset_import: ["" : 20]>
        Nan (v) => (flag) { flag = IsNaN (v) }
    """)
    result = lower_and_check(model)
    assert "never called" in result.report.remaining[0].reason


def test_types_are_inferred_when_not_declared():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 13]>
        main (float16[N] x) => (bool[N] y) {
            doubled = Add (x, x)
            y = IsNaN (doubled)
        }
    """)
    assert not model.graph.value_info
    result = lower_and_check(model)
    assert result.report.complete
    assert not result.model.graph.value_info, "inferred types must not be added to the model"
    cast = next(n for n in result.model.graph.node if n.op_type == "Cast")
    assert cast.input[0] == "doubled"


def test_new_names_avoid_names_already_in_use():
    taken = [
        "y_cast",
        "y_equal",
        "y_Cast",
        "y_Equal_1",
        "bool_false",
        "y_Equal",
        "float_max",
        "float_max_1",
        "y_greater",
    ]
    nodes = [helper.make_node("IsNaN", ["h"], ["y"])]
    nodes += [helper.make_node("Identity", ["h"], [name], name=name) for name in taken]
    nodes.append(helper.make_node("IsInf", ["x"], ["z"]))
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT16, ["N"]),
            helper.make_tensor_value_info("x", F32, ["N"]),
        ],
        [
            helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"]),
            helper.make_tensor_value_info("z", onnx.TensorProto.BOOL, ["N"]),
        ]
        + [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT16, ["N"]) for name in taken],
        opset=13,
    )
    result = lower_and_check(model)
    new_nodes = [n for n in result.model.graph.node if n.op_type not in ("Identity",)]
    new_values = [o for n in new_nodes for o in n.output if o not in ("y", "z")]
    assert not set(new_values) & set(taken)
    assert not {n.name for n in new_nodes} & set(taken)
    all_values = [o for n in result.model.graph.node for o in n.output]
    assert len(all_values) == len(set(all_values))


def test_constants_are_shared_within_a_graph():
    nodes = [helper.make_node("IsInf", ["x"], [f"y{k}"]) for k in range(5)]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [helper.make_tensor_value_info(f"y{k}", onnx.TensorProto.BOOL, ["N"]) for k in range(5)],
        opset=20,
    )
    result = lower_and_check(model)
    constants = [n for n in result.model.graph.node if n.op_type == "Constant"]
    assert len(constants) == 1
    assert result.report.rewritten == {"IsInf-20": 5}


def test_foreign_domains_and_unrelated_ops_are_kept():
    custom = helper.make_node("IsNaN", ["x"], ["custom_out"], domain="com.example", name="custom_isnan")
    model = make_model(
        [custom, helper.make_node("IsNaN", ["x"], ["y"]), helper.make_node("Relu", ["x"], ["r"], name="relu")],
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [
            helper.make_tensor_value_info("custom_out", onnx.TensorProto.BOOL, ["N"]),
            helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"]),
            helper.make_tensor_value_info("r", F32, ["N"]),
        ],
        opset=13,
        extra_opsets={"com.example": 1},
    )
    result = lowering.lower_model(model)
    kept = [n for n in result.model.graph.node if n.name in ("custom_isnan", "relu")]
    assert kept == [custom, model.graph.node[2]]
    assert result.report.rewritten == {"IsNaN-13": 1}


def _rich_model() -> onnx.ModelProto:
    model = parse("""
        <ir_version: 8, opset_import: ["" : 18, "local" : 1, "com.example" : 2],
         producer_name: "exporter", producer_version: "1.2", model_version: 7, doc_string: "model doc">
        main (float[N] x, float[3] w) => (bool[N] y, float[N] r, bool[N] f) <float[3] w = {1.0, 2.0, 3.0}> {
            r = Relu (x)
            y = IsNaN (r)
            f = local.Helper (x)
            c = com.example.Custom (x)
        }
        <domain: "local", opset_import: ["" : 18]>
        Helper (v) => (flag) { flag = IsInf (v) }
    """)
    model.graph.doc_string = "graph doc"
    model.graph.node[0].doc_string = "relu doc"
    model.graph.value_info.append(helper.make_tensor_value_info("c", F32, ["N"]))
    model.graph.value_info.append(helper.make_tensor_value_info("r", F32, ["N"]))
    helper.set_model_props(model, {"author": "someone", "license": "MIT"})
    model.graph.metadata_props.add(key="graph_key", value="graph_value")
    return model


def test_nothing_else_is_lost():
    model = _rich_model()
    lowered = lowering.lower(model)
    for field in ("ir_version", "producer_name", "producer_version", "model_version", "doc_string", "domain"):
        assert getattr(lowered, field) == getattr(model, field)
    assert lowered.opset_import == model.opset_import
    assert lowered.metadata_props == model.metadata_props
    assert lowered.graph.metadata_props == model.graph.metadata_props
    assert lowered.graph.doc_string == model.graph.doc_string
    assert lowered.graph.name == model.graph.name
    assert lowered.graph.input == model.graph.input
    assert lowered.graph.output == model.graph.output
    assert lowered.graph.initializer == model.graph.initializer
    assert lowered.graph.value_info == model.graph.value_info
    assert len(lowered.functions) == 1 and lowered.functions[0].name == "Helper"
    assert lowered.functions[0].opset_import == model.functions[0].opset_import
    untouched = [n for n in model.graph.node if n.op_type != "IsNaN"]
    assert untouched == [n for n in lowered.graph.node if n.output[0] in ("r", "f", "c")]
    assert not {"IsNaN", "IsInf"} & set(all_op_types(lowered))


def test_argument_is_left_untouched():
    model = _rich_model()
    before = model.SerializeToString()
    lowering.lower(model)
    assert model.SerializeToString() == before


def test_model_with_nothing_to_lower_comes_back_identical():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] y) { y = Relu (x) }
    """)
    result = lowering.lower_model(model)
    assert result.model.SerializeToString() == model.SerializeToString()
    assert not result.modified and result.report.lines() == ["nothing to lower"]


def test_lowering_is_idempotent_and_deterministic():
    model = _rich_model()
    once = lowering.lower(model)
    twice = lowering.lower(once)
    assert once.SerializeToString() == twice.SerializeToString()
    assert lowering.lower(model).SerializeToString() == once.SerializeToString()


@pytest.mark.slow
def test_output_is_identical_across_hash_seeds(tmp_path):
    model_path = tmp_path / "rich.onnx"
    onnx.save(_rich_model(), model_path)
    script = (
        "import sys, onnx, lowering, hashlib;"
        "print(hashlib.sha256(lowering.lower(onnx.load(sys.argv[1])).SerializeToString()).hexdigest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", script, str(model_path)],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("0", "1", "12345")
    }
    assert len(digests) == 1


def test_ops_selects_what_to_lower():
    model = _rich_model()
    result = lowering.lower_model(model, ops=["IsInf"])
    ops = all_op_types(result.model)
    assert "IsNaN" in ops and "IsInf" not in ops
    assert result.report.rewritten == {"IsInf-13": 1} or result.report.rewritten == {"IsInf-10": 1}


def test_unknown_op_and_target_opset_are_clear_errors():
    model = _rich_model()
    with pytest.raises(lowering.LoweringError, match="onnx defines no op Abz"):
        lowering.lower(model, ops=["Abz"])
    with pytest.raises(lowering.LoweringError, match="target opset 99 does not exist"):
        lowering.lower(model, target_opset=99)


def test_an_op_no_pattern_lowers_is_left_and_reported_the_rest_lowered():
    """--ops LSTM,Gelu refused the whole command: now the ops a pattern lowers are lowered, the
    others stay, each node reported with why (an error only under strict)."""
    model = parse("""
        <ir_version: 8, opset_import: ["" : 18]>
        main (float[N] x) => (bool[N] y) {
            a = Abs (x)
            y = IsNaN (a)
        }
    """)
    result = lowering.lower_model(model, ops=["Abs", "IsNaN"])
    assert "IsNaN" not in all_op_types(result.model) and "Abs" in all_op_types(result.model)
    assert {entry.op_type for entry in result.report.remaining} == {"Abs"}
    assert all("no pattern lowers Abs" in entry.reason for entry in result.report.remaining)
    with pytest.raises(lowering.IncompleteLowering, match="no pattern lowers Abs"):
        lowering.lower(model, ops=["Abs"], strict=True)


def test_invalid_model_is_a_lowering_error():
    model = make_model(
        [helper.make_node("IsNaN", ["missing"], ["y"])],
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=13,
    )
    with pytest.raises(lowering.LoweringError, match="not valid ONNX"):
        lowering.lower(model)


def test_attribute_the_op_does_not_have_names_the_node():
    model = make_model(
        [helper.make_node("IsInf", ["x"], ["y"], name="bad_isinf", detect_nan=1)],
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=20,
    )
    with pytest.raises(lowering.LoweringError, match="bad_isinf"):
        lowering.lower(model)


@pytest.mark.slow
def test_onnx_ir_model_in_onnx_ir_model_out():
    import onnx_ir

    model = onnx_ir.serde.deserialize_model(_rich_model())
    lowered = lowering.lower(model)
    assert isinstance(lowered, onnx_ir.Model)
    op_types = {node.op_type for node in lowered.graph}
    assert "IsNaN" not in op_types and "Equal" in op_types
    assert "IsNaN" in {node.op_type for node in model.graph}, "the argument is left untouched"


def test_an_input_type_the_op_does_not_take_is_an_error_naming_the_node():
    model = make_model(
        [helper.make_node("IsNaN", ["x"], ["y"], name="mystery")],
        [helper.make_tensor_value_info("x", onnx.TensorProto.INT32, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=13,
    )
    with pytest.raises(
        lowering.LoweringError, match=r"node 'mystery' \(IsNaN\): IsNaN-13 does not accept tensor\(int32\)"
    ):
        lowering.lower(model)


def test_report_names_what_is_left_and_why():
    model = parse("""
        <ir_version: 8, opset_import: ["" : 20, "local" : 1]>
        main (float[N] x) => (float[N] y) { y = Identity (x) }
        <domain: "local", opset_import: ["" : 20]>
        Nan (v) => (flag) { flag = IsNaN (v) }
    """)
    result = lowering.lower_model(model)
    (remaining,) = result.report.remaining
    assert remaining.location == "function 'local.Nan', node #0 (IsNaN)" and remaining.version == 20
    assert any(line.startswith("not lowered: IsNaN-20 at function 'local.Nan'") for line in result.report.lines())
    assert result.report.as_dict()["remaining"][0]["reason"] == remaining.reason


def test_nan_sanitizer_keeps_negative_zero_under_onnxruntime_optimizations():
    """Where(IsNaN(x), 0, x) must keep -0: onnxruntime's NotWhereFusion plus its Where kernel
    would turn a lowered Not(Equal(x, x)) into +0 there."""
    model = parse("""
        <ir_version: 8, opset_import: ["" : 17]>
        main (float[N] x) => (float[N] clean) {
            nan = IsNaN (x)
            zero = Constant <value = float {0.0}> ()
            clean = Where (nan, zero, x)
        }
    """)
    lowered = lower_and_check(model).model
    values = sample_values(F32)
    (want,) = run_onnxruntime(model, {"x": values}, optimized=True)
    (got,) = run_onnxruntime(lowered, {"x": values}, optimized=True)
    assert got.tobytes() == want.tobytes()


def test_replayed_templates_equal_running_every_rule():
    """Nodes of one kind share a recorded expansion; replaying it must give the very bytes
    running the rule on each node gives (the plain path)."""
    nodes, outputs = [], []
    for k, (op_type, attrs) in enumerate(
        [("IsNaN", {}), ("IsInf", {}), ("IsNaN", {}), ("IsInf", {"detect_negative": 0}), ("IsInf", {})] * 3
    ):
        source = "h" if k % 2 else "x"
        nodes.append(helper.make_node(op_type, [source], [f"out{k}"], name=f"n{k}" if k % 3 else "", **attrs))
        outputs.append(helper.make_tensor_value_info(f"out{k}", onnx.TensorProto.BOOL, ["N"]))
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("x", F32, ["N"]),
            helper.make_tensor_value_info("h", onnx.TensorProto.FLOAT16, ["N"]),
        ],
        outputs,
        opset=20,
    )
    replayed = lowering.lower(model).SerializeToString()
    assert lowering.lower(model, fast=False).SerializeToString() == replayed


def blocked_twice() -> onnx.ModelProto:
    """Two Reshape-14 nodes with allowzero=1 and sizes known only at run time (which cannot go
    below opset 11), a Relu between them, and one in an If branch."""
    info = helper.make_tensor_value_info
    branch = helper.make_graph(
        [helper.make_node("Reshape", ["y", "s"], ["z"], name="in_branch", allowzero=1)],
        "branch",
        [],
        [info("z", onnx.TensorProto.FLOAT, [None, None])],
    )
    passing = helper.make_graph(
        [helper.make_node("Identity", ["y"], ["w"])], "passing", [], [info("w", onnx.TensorProto.FLOAT, [None, None])]
    )
    nodes = [
        helper.make_node("Reshape", ["x", "s"], ["a"], name="first", allowzero=1),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Reshape", ["b", "s"], ["y"], name="second", allowzero=1),
        helper.make_node("If", ["c"], ["out"], name="choice", then_branch=branch, else_branch=passing),
    ]
    inputs = [info("x", onnx.TensorProto.FLOAT, ["n", 3]), info("s", onnx.TensorProto.INT64, [2])]
    inputs.append(info("c", onnx.TensorProto.BOOL, []))
    return make_model(nodes, inputs, [info("out", onnx.TensorProto.FLOAT, [None, None])], opset=14)


def test_a_refused_conversion_names_every_node_that_cannot_go_in_one_pass():
    """It named only its first blocker: every one is found, with its op, version, graph, node
    and reason, and nothing is returned."""
    with pytest.raises(lowering.ConversionRefused) as refused:
        lowering.lower(blocked_twice(), target_opset=10, ops=[])
    blockers = refused.value.blockers
    assert [(b.op_type, b.version, b.node) for b in blockers] == [
        ("Reshape", 14, "first"),
        ("Reshape", 14, "second"),
        ("Reshape", 14, "in_branch"),
    ]
    assert blockers[0].graph == "graph 'main'" and "then_branch" in blockers[2].graph
    assert all("allowzero=1 and a shape computed at run time cannot go to opset 10" in b.reason for b in blockers)
    assert str(refused.value).startswith("3 nodes cannot go to opset 10: Reshape-14 at graph 'main', node 'first'")
    assert isinstance(refused.value, lowering.LoweringError)


def test_one_blocker_is_named_as_before():
    model = blocked_twice()
    del model.graph.node[1:]
    model.graph.output[0].name = "a"
    with pytest.raises(lowering.ConversionRefused, match=r"^graph 'main', node 'first' \(Reshape\): Reshape-14 with"):
        lowering.lower(model, target_opset=10, ops=[])


def test_a_requested_op_that_moving_another_writes_is_reported_left():
    """Upsample-9 taken to opset 10 is written as Resize-10; with Resize requested, that Resize
    is reported left in the report (it was an internal error), the model runs as before, and
    --strict refuses it."""
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 1, 2, 2]),
         helper.make_tensor_value_info("scales", onnx.TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None] * 4)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    result = lowering.lower_model(model, ops=["Resize"], target_opset=10)
    [left] = result.report.remaining
    assert (left.op_type, left.version) == ("Resize", 10)
    assert "written by moving Upsample to opset 10" in left.reason
    assert [n.op_type for n in result.model.graph.node] == ["Resize"]
    feeds = {"x": np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2), "scales": np.array([1, 1, 2, 3], np.float32)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()
    with pytest.raises(lowering.IncompleteLowering):
        lowering.lower_model(model, ops=["Resize"], target_opset=10, strict=True)


def _one_node_model(node: onnx.NodeProto, opset: int, inputs: dict[str, tuple[int, list[int]]]) -> onnx.ModelProto:
    infos = [helper.make_tensor_value_info(name, element_type, shape) for name, (element_type, shape) in inputs.items()]
    rank = len(next(iter(inputs.values()))[1])
    output = helper.make_tensor_value_info(node.output[0], onnx.TensorProto.FLOAT, [None] * rank)
    graph = helper.make_graph([node], "g", infos, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


FLOAT, INT64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64


@pytest.mark.parametrize(
    ("node", "opset", "inputs", "ops", "target", "left"),
    [
        # (a requested op moved into another: Upsample-7 at 10 is Resize-10, no Upsample left)
        (helper.make_node("Upsample", ["x"], ["y"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]), 7,
         {"x": (FLOAT, [1, 1, 2, 2])}, ["Upsample"], 10, []),
        # (a requested op kept, its move writing another requested op: Softmax-11 at 13 writes a Flatten)
        (helper.make_node("Softmax", ["x"], ["y"], axis=1), 11, {"x": (FLOAT, [2, 3, 4])}, ["Softmax", "Flatten"], 13,
         ["Softmax", "Flatten"]),
        # (an op a rule owns, kept by its version's adapter, which writes a requested op: GatherND-12 at 11)
        (helper.make_node("GatherND", ["d", "i"], ["y"], batch_dims=1), 12,
         {"d": (FLOAT, [2, 3, 4]), "i": (INT64, [2, 1, 1])}, ["Gather"], 11, ["Gather"]),
    ],
    ids=["Upsample-7 to 10", "Softmax-11 to 13", "GatherND-12 to 11"],
)  # fmt: skip
def test_every_requested_op_a_conversion_leaves_is_reported_as_the_model_holds_it(
    node, opset, inputs, ops, target, left
):
    """Converting with ops requested, each node of a requested op the result holds is reported
    left by the op it is (those were internal errors: the postcondition counted otherwise), on
    the plain path as on the fast one; the model means what it did."""
    model = _one_node_model(node, opset, inputs)
    feeds = {name: np.arange(int(np.prod(shape)), dtype=np.float32 if element_type == FLOAT else np.int64)
             .reshape(shape) % 2 for name, (element_type, shape) in inputs.items()}  # fmt: skip
    [want] = run_onnxruntime(model, feeds)
    for fast in (None, False):
        result = lowering.lower_model(model, ops=ops, target_opset=target, fold="none", fast=fast)
        assert sorted(entry.op_type for entry in result.report.remaining) == sorted(left)
        held = [n.op_type for n in result.model.graph.node if n.op_type in ops]
        assert sorted(held) == sorted(left)
        [got] = run_onnxruntime(result.model, feeds)
        assert got.tobytes() == want.tobytes()


def test_a_requested_op_its_adapter_writes_inside_a_graph_is_reported_left():
    """ReduceMax-20 of bools with fed axes, asked lowered at opset 17: its rule declines (x is not
    empty) and its adapter writes an If whose branches each hold a ReduceMax-13 of constant axes;
    each of those is reported left (the postcondition counts nodes in every graph), not an
    internal error (a target trying every opset of a small model met it: rknn)."""
    graph = helper.make_graph(
        [helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1)], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.BOOL, [4, 2]),
         helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, [None, None])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    result = lowering.lower_model(model, target_opset=17, ops=["ReduceMax"])
    left = count_ops(result.model)["ReduceMax"]
    assert left >= 2 and len(result.report.remaining) == left
    assert all("not known to hold no element" in r.reason for r in result.report.remaining)
    with pytest.raises(lowering.IncompleteLowering):
        lowering.lower(model, target_opset=17, ops=["ReduceMax"], strict=True)
