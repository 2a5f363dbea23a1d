"""RNN, GRU and LSTM unrolled (static sequence length) or as a Scan (dynamic): every direction,
layout, optional input and attribute, against onnxruntime's kernels within the stated tolerance."""

from __future__ import annotations

import itertools
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.recurrent import RECURRENT_TOLERANCE
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from support import runs_in_onnxruntime, slow_but_a_sample, unread_nodes

import lowering

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
ACTIVATION_COUNT = {"RNN": 1, "GRU": 2, "LSTM": 3}
INPUTS = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
T, B, I, H = 4, 3, 5, 6  # noqa: E741 (the spec's letters: time, batch, input, hidden)
LENGTHS = np.array([4, 2, 1], np.int32)


def recurrent_model(op, attributes, shapes, opset=14, element_type=TensorProto.FLOAT) -> onnx.ModelProto:
    """One ``op`` node reading the graph inputs named in ``shapes`` (in the op's input order)."""
    inputs = [name if name in shapes else "" for name in INPUTS]
    while inputs[-1] == "":
        inputs.pop()
    outputs = ["Y", "Y_h", "Y_c"][: 3 if op == "LSTM" else 2]
    node = helper.make_node(op, inputs, outputs, **attributes)
    declared = [
        helper.make_tensor_value_info(name, TensorProto.INT32 if name == "sequence_lens" else element_type, shape)
        for name, shape in shapes.items()
    ]
    results = [helper.make_tensor_value_info(o, element_type, [None] * (4 if o == "Y" else 3)) for o in outputs]
    graph = helper.make_graph([node], "recurrent", declared, results)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def shapes_of(op, direction, layout, options, time=T) -> dict[str, list]:
    directions, gates = 2 if direction == "bidirectional" else 1, GATES[op]
    shapes = {"X": [B, time, I] if layout else [time, B, I], "W": [directions, gates * H, I]}
    shapes["R"] = [directions, gates * H, H]
    if "bias" in options:
        shapes["B"] = [directions, 2 * gates * H]
    if "lengths" in options:
        shapes["sequence_lens"] = [B]
    if "initial" in options:
        shapes["initial_h"] = [B, directions, H] if layout else [directions, B, H]
        if op == "LSTM":
            shapes["initial_c"] = shapes["initial_h"]
    if "peepholes" in options and op == "LSTM":
        shapes["P"] = [directions, 3 * H]
    return shapes


def feeds_for(shapes, rng, dtype=np.float32, time=T) -> dict[str, np.ndarray]:
    feeds = {}
    for name, shape in shapes.items():
        shape = [time if d == "T" else d for d in shape]
        feeds[name] = LENGTHS if name == "sequence_lens" else rng.standard_normal(shape).astype(dtype)
    return feeds


def onnxruntime_answer(op, attributes, shapes, feeds) -> list[np.ndarray]:
    """onnxruntime's kernel; for layout 1 (which it lacks) the layout-0 model on the inputs
    transposed, its outputs transposed back."""
    if not attributes.get("layout"):
        return runs_in_onnxruntime(recurrent_model(op, attributes, shapes), feeds)
    batch_major = ("X", "initial_h", "initial_c")
    shapes = {n: [s[1], s[0], s[2]] if n in batch_major else s for n, s in shapes.items()}
    feeds = {n: v.transpose(1, 0, 2) if n in batch_major else v for n, v in feeds.items()}
    y, *states = runs_in_onnxruntime(recurrent_model(op, {**attributes, "layout": 0}, shapes), feeds)
    return [y.transpose(2, 0, 1, 3), *(s.transpose(1, 0, 2) for s in states)]


def assert_within_tolerance(got, want, element_type=TensorProto.FLOAT):
    tolerance = RECURRENT_TOLERANCE[element_type]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert not tolerance.mismatches(g, w).any(), np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))


def lowered(model, ops, **options) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=ops, **options)
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert not {node.op_type for node in result.model.graph.node} & {"RNN", "GRU", "LSTM"}
    return result.model


CASES = [
    (op, direction, layout, options, time)
    for op, direction, layout, options, time in itertools.product(
        GATES,
        ("forward", "reverse", "bidirectional"),
        (0, 1),
        ((), ("bias",), ("lengths",), ("initial", "clip"), ("bias", "lengths", "initial", "peepholes", "variant")),
        (T, "T"),
    )
]


@slow_but_a_sample(keep=6)
@pytest.mark.parametrize(("op", "direction", "layout", "options", "time"), CASES)
def test_every_direction_layout_and_optional_input_matches_the_kernel(op, direction, layout, options, time):
    """A static time dimension is unrolled (no Scan), a dynamic one becomes one Scan per direction."""
    shapes = shapes_of(op, direction, layout, options, time)
    attributes = {"hidden_size": H, "direction": direction, "layout": layout}
    if "clip" in options:
        attributes["clip"] = 0.7
    if "variant" in options and op == "GRU":
        attributes["linear_before_reset"] = 1
    if "variant" in options and op == "LSTM":
        attributes["input_forget"] = 1
    model = lowered(recurrent_model(op, attributes, shapes), [op])
    scans = [node for node in model.graph.node if node.op_type == "Scan"]
    assert len(scans) == (0 if time == T else 2 if direction == "bidirectional" else 1)
    feeds = feeds_for(shapes, np.random.default_rng(len(CASES)))
    assert_within_tolerance(runs_in_onnxruntime(model, feeds), onnxruntime_answer(op, attributes, shapes, feeds))


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_a_dynamic_length_is_left_where_its_scan_is_to_be_lowered_too(op):
    """A dynamic time dimension is a Scan, which Scan's rule (a known number of steps unrolled)
    cannot lower in turn: where Scan is asked for too, the recurrence is left, reported with why
    and what unrolls it, the model as it was (an LSTM tagger of dynamic length for webgpu, which
    runs neither)."""
    shapes = shapes_of(op, "forward", 0, (), "T")
    model = recurrent_model(op, {"hidden_size": H, "direction": "forward", "layout": 0}, shapes)
    result = lowering.lower_model(model, ops=[op, "Scan"])
    [left] = result.report.remaining
    assert left.op_type == op and "the Scan it would be is to be lowered too" in left.reason
    assert "(--input-shape)" in left.reason
    assert [n.op_type for n in result.model.graph.node] == [op]


@pytest.mark.parametrize(
    ("op", "activations", "alphas", "betas"),
    [
        ("RNN", ["LeakyRelu"], [], []),
        ("RNN", ["Affine"], [0.5], [0.25]),
        ("RNN", ["ScaledTanh"], [1.5], [0.7]),
        ("RNN", ["ThresholdedRelu"], [0.3], []),
        ("RNN", ["HardSigmoid"], [], []),
        ("RNN", ["Elu"], [0.4], []),
        ("GRU", ["Softsign", "Softplus"], [], []),
        ("LSTM", ["HardSigmoid", "Elu", "Relu"], [0.3], [0.2]),
        ("LSTM", ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "LeakyRelu", "Elu"], [0.1, 0.02, 0.9], [0.6]),
    ],
)
def test_activations_take_their_alphas_and_betas_in_order_of_use(op, activations, alphas, betas):
    direction = "bidirectional" if len(activations) == 2 * ACTIVATION_COUNT[op] else "forward"
    shapes = shapes_of(op, direction, 0, ("bias",))
    attributes = {"hidden_size": H, "activations": activations, "direction": direction}
    if alphas:
        attributes["activation_alpha"] = alphas
    if betas:
        attributes["activation_beta"] = betas
    model = recurrent_model(op, attributes, shapes)
    feeds = feeds_for(shapes, np.random.default_rng(1))
    assert_within_tolerance(runs_in_onnxruntime(lowered(model, [op]), feeds), runs_in_onnxruntime(model, feeds))


@pytest.mark.parametrize("op", GATES)
def test_float16_matches_the_kernel_and_double_meets_onnx_reference(op):
    """onnxruntime computes a float16 RNN in float32, as the rule does; it has no double GRU or
    LSTM (nor double RNN), so onnx.reference answers for double."""
    shapes = shapes_of(op, "forward", 0, ("bias", "initial"))
    rng = np.random.default_rng(2)
    model16 = recurrent_model(op, {"hidden_size": H}, shapes, element_type=TensorProto.FLOAT16)
    feeds = feeds_for(shapes, rng, np.float16)
    got = runs_in_onnxruntime(lowered(model16, [op]), feeds)
    assert_within_tolerance(got, runs_in_onnxruntime(model16, feeds), TensorProto.FLOAT16)
    model64 = recurrent_model(op, {"hidden_size": H}, shapes, element_type=TensorProto.DOUBLE)
    feeds = feeds_for(shapes, rng, np.float64)
    got = runs_in_onnxruntime(lowered(model64, [op]), feeds)
    assert_within_tolerance(got, ReferenceEvaluator(model64).run(None, feeds), TensorProto.DOUBLE)


@pytest.mark.parametrize("op", GATES)
def test_bfloat16_at_22_runs_in_onnxruntime_and_meets_onnx_reference(op):
    shapes = shapes_of(op, "bidirectional", 0, ("bias",))
    model = recurrent_model(op, {"hidden_size": H, "direction": "bidirectional"}, shapes, 22, TensorProto.BFLOAT16)
    feeds = feeds_for(shapes, np.random.default_rng(3), ml_dtypes.bfloat16)
    assert runs_in_onnxruntime(model, feeds) is None  # no bfloat16 kernel: onnx.reference is the oracle
    got = runs_in_onnxruntime(lowered(model, [op]), feeds)
    assert_within_tolerance(got, ReferenceEvaluator(model).run(None, feeds), TensorProto.BFLOAT16)


def test_a_batch_entry_of_length_zero_gives_zero_states_as_the_kernel_does():
    shapes = shapes_of("LSTM", "bidirectional", 0, ("lengths", "initial"))
    model = recurrent_model("LSTM", {"hidden_size": H, "direction": "bidirectional"}, shapes)
    feeds = {**feeds_for(shapes, np.random.default_rng(4)), "sequence_lens": np.array([0, 3, 4], np.int32)}
    want = runs_in_onnxruntime(model, feeds)
    assert not want[1][:, 0].any() and not want[2][:, 0].any()  # (not the initial states)
    assert_within_tolerance(runs_in_onnxruntime(lowered(model, ["LSTM"]), feeds), want)


def test_an_output_left_unnamed_costs_no_node():
    """GRU giving Y_h only: the Y stack (its Unsqueezes and Concat) is not written."""
    shapes = shapes_of("GRU", "forward", 0, ())
    model = recurrent_model("GRU", {"hidden_size": H}, shapes)
    model.graph.node[0].output[0] = ""
    del model.graph.output[0]
    result = lowered(model, ["GRU"])
    assert "Concat" not in {node.op_type for node in result.graph.node}
    feeds = feeds_for(shapes, np.random.default_rng(5))
    assert_within_tolerance(runs_in_onnxruntime(result, feeds), runs_in_onnxruntime(model, feeds))


def test_layout_1_lowered_at_opset_11():
    """LSTM-14 in the batch-major layout, lowered and taken to opset 11 in one run."""
    shapes = shapes_of("LSTM", "bidirectional", 1, ("bias",))
    attributes = {"hidden_size": H, "direction": "bidirectional", "layout": 1}
    result = lowering.lower_model(recurrent_model("LSTM", attributes, shapes), ops=["LSTM"], target_opset=11)
    assert result.report.complete, result.report.lines()
    assert "LSTM" not in {node.op_type for node in result.model.graph.node}
    feeds = feeds_for(shapes, np.random.default_rng(6))
    assert_within_tolerance(
        runs_in_onnxruntime(result.model, feeds), onnxruntime_answer("LSTM", attributes, shapes, feeds)
    )


@pytest.mark.parametrize(
    ("attributes", "reason"),
    [
        ({"activations": ["ThresholdedRelu"]}, "no default is certain"),
        ({"activations": ["Affine"], "activation_alpha": [1.0]}, "no default is certain"),
        ({"activations": ["Tanh", "Tanh"]}, "2 activations given where the op takes 1 per direction"),
        ({"activations": ["Swish"]}, "activation Swish is none the op defines"),
        ({"activations": ["elu"]}, "activation elu is none the op defines"),
    ],
)
def test_what_the_rule_cannot_settle_stays_with_the_reason(attributes, reason):
    model = recurrent_model("RNN", {"hidden_size": H, **attributes}, shapes_of("RNN", "forward", 0, ()))
    result = lowering.lower_model(model, ops=["RNN"])
    assert [r.reason for r in result.report.remaining if reason in r.reason], result.report.lines()
    assert result.model.graph.node[0].op_type == "RNN"


def test_below_the_opset_of_its_ops_the_node_stays():
    model = recurrent_model("GRU", {"hidden_size": H}, shapes_of("GRU", "forward", 0, ()), opset=22)
    result = lowering.lower_model(model, ops=["GRU"], target_opset=8)
    assert any("do not all exist at opset 8" in r.reason for r in result.report.remaining), result.report.lines()
    assert [node.op_type for node in result.model.graph.node] == ["GRU"]


@pytest.mark.parametrize("time", [T, "T"])
@pytest.mark.parametrize("length", [-1, T + 1])
def test_a_length_outside_the_sequence_fails_as_the_op_does(time, length):
    shapes = shapes_of("RNN", "forward", 0, ("lengths",), time)
    model = recurrent_model("RNN", {"hidden_size": H}, shapes)
    feeds = {**feeds_for(shapes, np.random.default_rng(7)), "sequence_lens": np.array([2, length, 1], np.int32)}
    for failing in (model, lowered(model, ["RNN"])):
        with pytest.raises(Exception, match="sequence_lens|out of|indices"):
            runs_in_onnxruntime(failing, feeds)
    feeds["sequence_lens"] = np.array([2, T, 0], np.int32)
    assert_within_tolerance(runs_in_onnxruntime(lowered(model, ["RNN"]), feeds), runs_in_onnxruntime(model, feeds))


EXPORTS = Path(__file__).resolve().parents[2] / "golden" / "exports"


@pytest.mark.parametrize(
    "name", ["lstm_dynamo18", "lstm_dynamo23", "lstm_torchscript17", "gru_dynamo23", "gru_torchscript17"]
)
def test_pytorch_exports_lower_at_their_opset_and_at_11(name):
    """PyTorch's LSTM (two layers, bidirectional) and GRU exports (golden/exports/export_models.py)."""
    model = onnx.load(EXPORTS / f"{name}.onnx")
    data = np.load(EXPORTS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    want = runs_in_onnxruntime(model, feeds)
    for target in (None, 11):
        got = runs_in_onnxruntime(lowered(model, ["LSTM", "GRU"], target_opset=target), feeds)
        assert_within_tolerance(got, want)


def test_lowered_inside_both_branches_of_an_if_and_inside_a_local_function():
    """LSTM in each branch of an If (reading the outer X, W, R, B) and in a model-local function."""
    shapes = shapes_of("LSTM", "forward", 0, ("bias",))

    def cell(direction: str, prefix: str) -> onnx.GraphProto:
        node = helper.make_node("LSTM", ["X", "W", "R", "B"], ["", f"{prefix}_h"], hidden_size=H, direction=direction)
        return helper.make_graph(
            [node], prefix, [], [helper.make_tensor_value_info(f"{prefix}_h", TensorProto.FLOAT, None)]
        )

    choose = helper.make_node(
        "If", ["c"], ["h"], then_branch=cell("forward", "then"), else_branch=cell("reverse", "else")
    )
    call = helper.make_node("Cell", ["X", "W", "R", "B"], ["h2"], domain="local", name="call")
    inner = helper.make_node("LSTM", ["X", "W", "R", "B"], ["", "h"], hidden_size=H)
    function = helper.make_function(
        "local", "Cell", ["X", "W", "R", "B"], ["h"], [inner], [helper.make_opsetid("", 14)]
    )
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()]
    inputs.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, B, H]) for name in ("h", "h2")]
    graph = helper.make_graph([choose, call], "recurrent_in_subgraphs", inputs, outputs)
    opsets = [helper.make_opsetid("", 14), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=[function])
    result = lowering.lower_model(model, ops=["LSTM"])
    assert result.report.rewritten == {"LSTM-14": 3}, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    branches = [a.g for a in result.model.graph.node[0].attribute]
    everywhere = [*result.model.graph.node, *result.model.functions[0].node, *(n for g in branches for n in g.node)]
    assert "LSTM" not in {node.op_type for node in everywhere}
    feeds = feeds_for(shapes, np.random.default_rng(8))
    for flag in (True, False):
        feeds["c"] = np.array(flag)
        assert_within_tolerance(runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(model, feeds))


def _unread(nodes, given_out) -> list[str]:
    """The ops of the nodes (Constants aside: a pooled one may stay) none of whose values is read
    or given out."""
    return [node.op_type for node in unread_nodes(nodes, given_out) if node.op_type != "Constant"]


def test_a_first_step_of_zero_state_writes_no_unread_node_in_a_branch_or_a_local_function():
    """GRU over one step from a zero state, both outputs given, reads neither its reset gate nor
    R's rows for it: the lowering leaves them out inside an If branch and a local function as in
    a main graph (rknn's build failed on them), and the model gives onnxruntime's answer."""
    shapes = shapes_of("GRU", "forward", 0, (), time=1)
    gru = helper.make_node("GRU", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=H)
    given = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1, B, H]),
             helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, B, H])]  # fmt: skip
    branch = helper.make_graph([gru], "branch", [], given)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in shapes.items()]
    condition = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, B, H] if n.endswith("y") else [1, B, H])
               for n in ("if_y", "if_h", "f_y", "f_h")]  # fmt: skip
    opset = [helper.make_opsetid("", 14)]
    function = helper.make_function("local", "Step", ["X", "W", "R"], ["Y", "Y_h"], [gru], opset)
    nodes = [
        helper.make_node("If", ["c"], ["if_y", "if_h"], then_branch=branch, else_branch=branch),
        helper.make_node("Step", ["X", "W", "R"], ["f_y", "f_h"], domain="local"),
    ]
    graph = helper.make_graph(nodes, "steps", [condition, *inputs], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14), helper.make_opsetid("local", 1)],
                              functions=[function])  # fmt: skip
    result = lowering.lower_model(model, ops=["GRU"])
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    [if_node] = [node for node in result.model.graph.node if node.op_type == "If"]
    for attribute in if_node.attribute:
        assert _unread(attribute.g.node, [o.name for o in attribute.g.output]) == []
    [step] = result.model.functions
    assert "GRU" not in {node.op_type for node in step.node} and _unread(step.node, step.output) == []
    feeds = {"c": np.array(True), **feeds_for(shapes, np.random.default_rng(9), time=1)}
    assert_within_tolerance(runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(model, feeds))
