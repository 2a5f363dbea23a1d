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
from lowering.target_forms import SCAN_CAPTURES_SAID, constants_by_name
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
    count = scan_captures_passed_in(passed, 17, constants_by_name(passed), inferred_types(passed))
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
    scan_captures_passed_in(model, 17, constants_by_name(model), inferred_types(model))
    again = onnx.ModelProto()
    again.CopyFrom(model)
    assert scan_captures_passed_in(again, 17, constants_by_name(again), inferred_types(again)) == 0
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
