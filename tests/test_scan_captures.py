"""lowering/scan_captures.py: the values a Scan's body reads from outside are passed in (a small
constant written inside the body, any other value carried as a state the body gives back
unchanged), the model passes onnx's full checker and computes the same bits; and --target does
it on every target (OpenVINO's frontend refuses a body that reads the outer scope)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import lowering
from lowering.graphs import nested_graphs
from lowering.runtime_profiles import profile_from_data
from lowering.scan_captures import scan_captures_passed_in
from lowering.shape_folding import inferred_types
from lowering.target_forms import SCAN_CAPTURES_SAID, constants_in_scope
from lowering.verification.runtime import run_onnxruntime


def _scan_model() -> onnx.ModelProto:
    """s' = s + x_t · scale; y_t = s' + bias + Sum(weights) + (scale or -scale, by an If on
    Sum(x_t) > 0): scale a graph input, bias [2] and weights [5000] initializers, read from the
    body (and the If's branches inside it)."""
    then_branch = helper.make_graph([helper.make_node("Identity", ["scale"], ["picked"])], "then", [],
                                    [helper.make_tensor_value_info("picked", TensorProto.FLOAT, [2])])  # fmt: skip
    else_branch = helper.make_graph([helper.make_node("Neg", ["scale"], ["negated"])], "else", [],
                                    [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [2])])  # fmt: skip
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["x_t", "scale"], ["scaled"]),
            helper.make_node("Add", ["s_in", "scaled"], ["s_out"]),
            helper.make_node("ReduceSum", ["weights"], ["total"], keepdims=1),
            helper.make_node("ReduceSum", ["x_t"], ["row_sum"], keepdims=0),
            helper.make_node("Greater", ["row_sum", "zero"], ["positive"]),
            helper.make_node("If", ["positive"], ["signed"], then_branch=then_branch, else_branch=else_branch),
            helper.make_node("Add", ["s_out", "bias"], ["biased"]),
            helper.make_node("Add", ["biased", "total"], ["summed"]),
            helper.make_node("Add", ["summed", "signed"], ["y_t"]),
        ],
        "body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    scan = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", num_scan_inputs=1, body=body)
    initializers = [
        numpy_helper.from_array(np.array([0.5, -0.0], np.float32), "bias"),
        numpy_helper.from_array(np.linspace(-1, 1, 5000, dtype=np.float32), "weights"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
    ]
    graph = helper.make_graph(
        [scan], "g",
        [helper.make_tensor_value_info("s0", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("xs", TensorProto.FLOAT, [4, 2]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_final", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("ys", TensorProto.FLOAT, [4, 2])],
        initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _feeds() -> dict[str, np.ndarray]:
    xs = np.array([[1.0, -2.0], [np.inf, -0.0], [-3.0, 1.0], [np.nan, 2.0]], np.float32)
    return {"s0": np.array([0.25, -0.0], np.float32), "xs": xs, "scale": np.array([3.0, -1.5], np.float32)}


def _outer_reads(model: onnx.ModelProto) -> set[str]:
    [scan] = [node for node in model.graph.node if node.op_type == "Scan"]
    body = next(a.g for a in scan.attribute if a.name == "body")
    graphs = [body, *nested_graphs(body.node)]
    defined = {info.name for g in graphs for info in g.input} | {n for g in graphs for x in g.node for n in x.output}
    return {name for g in graphs for node in g.node for name in node.input if name and name not in defined}


def test_a_bodys_outer_reads_are_passed_in_and_the_scan_computes_the_same_bits():
    model = _scan_model()
    assert _outer_reads(model) == {"scale", "bias", "weights", "zero"}
    passed = onnx.ModelProto()
    passed.CopyFrom(model)
    count = scan_captures_passed_in(passed, 17, constants_in_scope(passed), inferred_types(passed))
    assert count == 4 and _outer_reads(passed) == set()
    onnx.checker.check_model(passed, full_check=True)
    [scan] = passed.graph.node
    assert list(scan.input) == ["s0", "scale", "weights", "xs"]  # (the small constants written inside)
    assert list(scan.output)[0] == "s_final" and list(scan.output)[-1] == "ys" and len(scan.output) == 4
    body = next(a.g for a in scan.attribute if a.name == "body")
    inside = [node for node in body.node if node.op_type == "Constant"]
    assert len(inside) == 2 and len(body.input) == len(body.output) == 4
    want, got = run_onnxruntime(model, _feeds()), run_onnxruntime(passed, _feeds())
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def test_a_scan_reading_nothing_from_outside_is_left():
    model = _scan_model()
    scan_captures_passed_in(model, 17, constants_in_scope(model), inferred_types(model))
    again = onnx.ModelProto()
    again.CopyFrom(model)
    assert scan_captures_passed_in(again, 17, constants_in_scope(again), inferred_types(again)) == 0
    assert again == model


def test_target_passes_a_bodys_outer_reads_in_on_every_target():
    profile = profile_from_data({
        "name": "scan-runs", "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [17],
        "cases": {"test_scan9_sum": {"op": "Scan", "version": 16, "type": "FLOAT", "verdict": "right"}},
    })  # fmt: skip
    model = _scan_model()
    result = lowering.lower_model(model, target=profile, fold="none")
    assert result.report.forms[SCAN_CAPTURES_SAID] == 4 and _outer_reads(result.model) == set()
    want, got = run_onnxruntime(model, _feeds()), run_onnxruntime(result.model, _feeds())
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def _float(name: str, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _passed(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    passed = onnx.ModelProto()
    passed.CopyFrom(model)
    count = scan_captures_passed_in(passed, 17, constants_in_scope(passed), inferred_types(passed))
    onnx.checker.check_model(passed, full_check=True)
    return passed, count


def _every_body_reads_nothing_from_outside(model: onnx.ModelProto) -> bool:
    for graph in [model.graph, *nested_graphs(model.graph.node)]:
        for node in graph.node:
            if node.op_type != "Scan":
                continue
            body = next(a.g for a in node.attribute if a.name == "body")
            inner = [body, *nested_graphs(body.node)]
            defined = {i.name for g in inner for i in g.input} | {o for g in inner for x in g.node for o in x.output}
            if any(name and name not in defined for g in inner for x in g.node for name in x.input):
                return False
    return True


def test_a_scan_inside_a_scans_body_has_its_outer_reads_passed_in_too():
    """The inner Scan reads the main graph's scale and the outer body's t: each body reads
    nothing from outside afterwards, and the bits are the same."""
    inner = helper.make_graph([helper.make_node("Mul", ["u_t", "scale"], ["a"]),
                               helper.make_node("Add", ["a", "t"], ["b"]),
                               helper.make_node("Add", ["v_in", "b"], ["v_out"])], "inner",
                              [_float("v_in", [2]), _float("u_t", [2])], [_float("v_out", [2])])  # fmt: skip
    outer = helper.make_graph([helper.make_node("Mul", ["x_t", "scale"], ["t"]),
                               helper.make_node("Unsqueeze", ["x_t", "axis"], ["us"]),
                               helper.make_node("Scan", ["s_in", "us"], ["s_out"], num_scan_inputs=1, body=inner)],
                              "outer", [_float("s_in", [2]), _float("x_t", [2])], [_float("s_out", [2])])  # fmt: skip
    scan = helper.make_node("Scan", ["s0", "xs"], ["s_final"], num_scan_inputs=1, body=outer)
    axis = numpy_helper.from_array(np.array([0], np.int64), "axis")
    graph = helper.make_graph([scan], "g", [_float("s0", [2]), _float("xs", [3, 2]), _float("scale", [2])],
                              [_float("s_final", [2])], [axis])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    passed, count = _passed(model)
    assert count == 4 and _every_body_reads_nothing_from_outside(passed)
    feeds = {"s0": np.array([1, -0.0], np.float32), "xs": np.arange(6, dtype=np.float32).reshape(3, 2),
             "scale": np.array([3, np.nan], np.float32)}  # fmt: skip
    assert [g.tobytes() for g in run_onnxruntime(passed, feeds)] == [w.tobytes() for w in run_onnxruntime(model, feeds)]


def test_a_body_output_naming_an_outer_value_gives_it_and_a_sequence_stays_read_from_outside():
    """y_t = scale, the outer value itself as the body's output (onnxruntime refuses that one
    as it is; passed in, the output is an Identity of it, not the new input), and a sequence the
    body reads (a Scan state must be a tensor) left as it is."""
    body = helper.make_graph(
        [helper.make_node("SequenceAt", ["seq", "zero"], ["first"]),
         helper.make_node("Add", ["s_in", "first"], ["s_out"])], "body",
        [_float("s_in", [2]), _float("x_t", [2])], [_float("s_out", [2]), _float("scale", [2])],
    )  # fmt: skip
    scan = helper.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], num_scan_inputs=1, body=body)
    graph = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["scale"], ["seq"]), scan], "g",
        [_float("s0", [2]), _float("xs", [3, 2]), _float("scale", [2])], [_float("s_final", [2]), _float("ys", [3, 2])],
        [numpy_helper.from_array(np.array(0, np.int64), "zero")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    passed, count = _passed(model)
    [_, scan] = passed.graph.node
    body = next(a.g for a in scan.attribute if a.name == "body")
    assert count == 2 and list(scan.input) == ["s0", "scale", "xs"]  # (scale carried, zero written inside)
    reads = {name for node in body.node for name in node.input}
    assert "seq" in reads and body.output[-1].name not in {i.name for i in body.input}
    feeds = {
        "s0": np.array([1, 2], np.float32),
        "xs": np.ones((3, 2), np.float32),
        "scale": np.array([3, -1], np.float32),
    }
    s_final, ys = run_onnxruntime(passed, feeds)
    assert s_final.tolist() == [10, -1] and ys.tolist() == [[3, -1]] * 3


def test_a_scan_inside_an_if_branch_reads_the_main_graph_and_the_branch_passed_in():
    """The Scan in the then-branch reads the main graph's scale (fed), a small constant (the
    main graph's bias) and a value the branch computes (shifted): each passed in there, the
    branch's value carried from the branch itself; the bits are the same on either branch."""
    body = helper.make_graph([helper.make_node("Mul", ["x_t", "scale"], ["a"]),
                              helper.make_node("Add", ["a", "shifted"], ["b"]),
                              helper.make_node("Add", ["b", "bias"], ["c"]),
                              helper.make_node("Add", ["s_in", "c"], ["s_out"])], "body",
                             [_float("s_in", [2]), _float("x_t", [2])], [_float("s_out", [2])])  # fmt: skip
    then_branch = helper.make_graph(
        [helper.make_node("Neg", ["scale"], ["shifted"]),
         helper.make_node("Scan", ["s0", "xs"], ["s_final"], num_scan_inputs=1, body=body)], "then", [],
        [_float("s_final", [2])],
    )  # fmt: skip
    else_branch = helper.make_graph([helper.make_node("Identity", ["s0"], ["kept"])], "else", [], [_float("kept", [2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _float("s0", [2]), _float("xs", [3, 2]),
         _float("scale", [2])],
        [_float("y", [2])], [numpy_helper.from_array(np.array([0.5, -0.0], np.float32), "bias")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model, full_check=True)
    passed, count = _passed(model)
    assert count == 3 and _every_body_reads_nothing_from_outside(passed)
    [then_passed] = [g for g in nested_graphs(passed.graph.node) if g.name == "then"]
    scan = then_passed.node[-1]
    assert scan.op_type == "Scan" and list(scan.input)[:3] == ["s0", "scale", "shifted"]
    for cond in (True, False):
        feeds = {"cond": np.array(cond), "s0": np.array([1, -0.0], np.float32),
                 "xs": np.array([[1, np.inf], [-2, 3], [np.nan, 0.25]], np.float32),
                 "scale": np.array([3, -1.5], np.float32)}  # fmt: skip
        want, got = run_onnxruntime(model, feeds), run_onnxruntime(passed, feeds)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def test_a_value_a_loop_body_gives_is_not_an_outer_constant_of_its_name():
    """A Scan inside a Loop body reads ``c``, the Loop body's carried input, named as a Constant
    outside the Loop: it is passed in as the state it is, not written as the outer constant."""
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "c"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        "scan_body",
        [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y_t", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    loop_body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Scan", ["c", "xs"], ["s_final", "ys"], num_scan_inputs=1, body=scan_body),
         helper.make_node("Identity", ["s_final"], ["c_out"])],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("c_out", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    outer = numpy_helper.from_array(np.array([100.0, 200.0], np.float32), "c")
    nodes = [
        helper.make_node("Constant", [], ["c"], value=outer),
        helper.make_node("Constant", [], ["trips"], value=numpy_helper.from_array(np.array(2, np.int64), "trips")),
        helper.make_node("Constant", [], ["go"], value=numpy_helper.from_array(np.array(True), "go")),
        helper.make_node("Loop", ["trips", "go", "start"], ["last"], body=loop_body),
        helper.make_node("Add", ["last", "c"], ["y"]),
    ]
    inputs = [helper.make_tensor_value_info("start", TensorProto.FLOAT, [2]),
              helper.make_tensor_value_info("xs", TensorProto.FLOAT, [3, 2])]  # fmt: skip
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    onnx.checker.check_model(model, full_check=True)
    passed = onnx.ModelProto()
    passed.CopyFrom(model)
    assert scan_captures_passed_in(passed, 17, constants_in_scope(passed), inferred_types(passed)) == 1
    [loop] = [n for n in passed.graph.node if n.op_type == "Loop"]
    [scan] = [n for n in loop.attribute[0].g.node if n.op_type == "Scan"]
    body = next(a.g for a in scan.attribute if a.name == "body")
    assert list(scan.input).count("c") == 2  # (its first state, and passed in as one more)
    assert not [n for n in body.node if n.op_type == "Constant"]  # (not the outer constant written inside)
    feeds = {"start": np.array([1.0, -2.0], np.float32), "xs": np.ones((3, 2), np.float32)}
    assert run_onnxruntime(passed, feeds)[0].tobytes() == run_onnxruntime(model, feeds)[0].tobytes()
