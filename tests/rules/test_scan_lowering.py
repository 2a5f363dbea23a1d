"""Scan unrolled (rules/scan.py): every backend case of Scan-9 on, Scan-8 batch by batch, scanned forwards and in
reverse along every axis, on float and float16, in an If's branches and a local function, and
the Scan ONNX's LinearAttention body writes, bit for bit as onnxruntime runs the Scan; refused
where the iterations are unknown, none, too many, or the body holds a graph."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from lowering.rules.scan import MOST_UNROLLED_NODES
from onnx import TensorProto, helper, numpy_helper
from support import lowered_wholly, nested_forms
from version_cases import feeds_of, node_cases

import lowering
from lowering.verification.runtime import run_onnxruntime


def assert_same_bits(got: list, want: list) -> None:
    assert [a.shape for a in got] == [b.shape for b in want]
    assert [a.tobytes() for a in got] == [b.tobytes() for b in want]


def scan_model(
    x_shape, axis: int, reverse: int, output_axis: int, prepend: int, opset: int = 21, length=None,
    element_type: int = TensorProto.FLOAT,
) -> onnx.ModelProto:  # fmt: skip
    """(total, rows) = Scan(s0, x): s = s + ReduceSum(x_t) (a running sum of each slice, the
    axes a body initializer) and row_t = s * x_t, x scanned along ``axis`` (``reverse``),
    rows stacked along ``output_axis`` (``prepend``); x's length along the axis left unknown
    where ``length`` says so; of ``element_type``."""
    slice_rank = len(x_shape) - 1
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["xi", "all_axes"], ["r"], keepdims=0),
         helper.make_node("Add", ["s", "r"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "xi"], ["row"])],
        "body",
        [helper.make_tensor_value_info("s", element_type, []),
         helper.make_tensor_value_info("xi", element_type, [f"d{k}" for k in range(slice_rank)])],
        [helper.make_tensor_value_info("s_out", element_type, []),
         helper.make_tensor_value_info("row", element_type, [f"d{k}" for k in range(slice_rank)])],
        [numpy_helper.from_array(np.arange(slice_rank, dtype=np.int64), "all_axes")],
    )  # fmt: skip
    node = helper.make_node(
        "Scan", ["s0", "x"], ["total", "rows"], name="scan", body=body, num_scan_inputs=1,
        scan_input_axes=[axis], scan_input_directions=[reverse],
        scan_output_axes=[output_axis], scan_output_directions=[prepend],
    )  # fmt: skip
    declared = (
        list(x_shape) if length is None else ["n" if k == axis % len(x_shape) else d for k, d in enumerate(x_shape)]
    )
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("s0", element_type, []),
         helper.make_tensor_value_info("x", element_type, declared)],
        [helper.make_tensor_value_info("total", element_type, []),
         helper.make_tensor_value_info("rows", element_type, [f"r{k}" for k in range(len(x_shape))])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds_for(x_shape, dtype=np.float32) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(len(x_shape))
    x = rng.standard_normal(x_shape).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    x.flat[:4] = [np.nan, -0.0, np.inf, tiny]  # (NaN, a negative zero, an infinity and a subnormal travel)
    return {"s0": np.array(0.25, dtype), "x": x}


@pytest.mark.parametrize(
    ("axis", "reverse", "output_axis", "prepend"),
    list(itertools.product([0, 1, -1], [0, 1], [0, -1], [0, 1])),
)
def test_scan_unrolled_is_the_scan_bit_for_bit(axis, reverse, output_axis, prepend):
    x_shape = (4, 3, 2)
    model = scan_model(x_shape, axis, reverse, output_axis, prepend)
    result = lowering.lower_model(model, ops=["Scan"])
    assert "Scan" not in {node.op_type for node in result.model.graph.node}
    assert result.report.rewritten == {"Scan-21": 1}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_for(x_shape)
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


@pytest.mark.parametrize("target", [11, 13, 17])
def test_scan_unrolled_at_an_older_opset_holds_its_body_moved_there(target):
    """The body is made legal at the target first (ReduceSum's axes an attribute below 13)."""
    model = scan_model((3, 2), 0, 1, 0, 1, opset=21)
    result = lowering.lower_model(model, ops=["Scan"], target_opset=target)
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_for((3, 2))
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


@pytest.mark.parametrize("reverse", [0, 1])
def test_scan_unrolled_on_float16_is_the_scan_bit_for_bit(reverse):
    model = scan_model((4, 3), 1, reverse, 0, reverse, element_type=TensorProto.FLOAT16)
    lowered = lowered_wholly(model, "Scan")
    feeds = feeds_for((4, 3), np.float16)
    assert_same_bits(run_onnxruntime(lowered, feeds), run_onnxruntime(model, feeds))


@pytest.mark.parametrize("form", ["if", "function"])
def test_scan_unrolled_in_an_if_branch_and_a_local_function(form):
    model = nested_forms(scan_model((4, 3), 0, 1, -1, 0))[form]
    lowered = lowered_wholly(model, "Scan")
    for taken in (True, False):
        feeds = feeds_for((4, 3)) | {"branch": np.array(taken)}
        assert_same_bits(run_onnxruntime(lowered, feeds), run_onnxruntime(model, feeds))


def test_every_backend_case_of_scan_9_on_is_unrolled_bit_for_bit():
    cases = [c for c in node_cases() if c.name.startswith("test_scan9_") and c.data_sets]
    assert len(cases) >= 3
    for case in cases:
        result = lowering.lower_model(case.model, ops=["Scan"])
        assert "Scan" not in {node.op_type for node in result.model.graph.node}, case.name
        feeds = feeds_of(case.model, case.data_sets[0][0])
        assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(case.model, feeds))


@pytest.mark.parametrize("name", ["test_linear_attention_gated_delta", "test_linear_attention_fp16"])
def test_linear_attentions_body_and_its_scan_lowered_together_mean_the_body_with_the_scan(name):
    """LinearAttention's body writes a Scan: both lowered in one pass, the Scan by its rule
    inside the body, the model computes the body's bits."""
    case = next(c for c in node_cases() if c.name == name)
    with_scan = lowering.lower_model(case.model, ops=["LinearAttention"]).model
    assert "Scan" in {node.op_type for node in with_scan.graph.node}
    result = lowering.lower_model(case.model, ops=["LinearAttention", "Scan"])
    assert not result.report.remaining
    assert not {"Scan", "LinearAttention"} & {node.op_type for node in result.model.graph.node}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_of(case.model, case.data_sets[0][0])
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(with_scan, feeds))


def test_scan_stays_where_its_iterations_are_unknown_none_too_many_or_its_body_holds_a_graph():
    unknown = lowering.lower_model(scan_model((4, 3), 0, 0, 0, 0, length="n"), ops=["Scan"])
    assert "the number of iterations is unknown" in unknown.report.remaining[0].reason
    none = lowering.lower_model(scan_model((0, 3), 0, 0, 0, 0), ops=["Scan"])
    assert "it scans 0 iterations" in none.report.remaining[0].reason
    long = lowering.lower_model(scan_model((MOST_UNROLLED_NODES, 2), 0, 0, 0, 0), ops=["Scan"])
    assert f"over {MOST_UNROLLED_NODES} unrolled" in long.report.remaining[0].reason
    model = scan_model((4, 3), 0, 0, 0, 0)
    body = model.graph.node[0].attribute[0].g
    branch = helper.make_graph([helper.make_node("Identity", ["r"], ["r_if"])], "branch", [],
                               [helper.make_tensor_value_info("r_if", TensorProto.FLOAT, [])])  # fmt: skip
    body.node.append(helper.make_node("Constant", [], ["yes"], value_int=1))
    body.node.append(helper.make_node("Cast", ["yes"], ["cond"], to=TensorProto.BOOL))
    body.node.append(helper.make_node("If", ["cond"], ["unused"], then_branch=branch, else_branch=branch))
    holds_if = lowering.lower_model(model, ops=["Scan"])
    assert "holds a node holding a graph" in holds_if.report.remaining[0].reason


def scan_8_model(
    batch: int, directions: list[int] | None, lengths: bool = False, element_type: int = TensorProto.FLOAT
) -> onnx.ModelProto:
    """(total, rows) = Scan-8(s0, x) over a batch: per sequence s = s + x_t and row_t = s * x_t,
    x of shape (batch, 3, 2) scanned along axis 1 (``directions``), given sequence ``lengths``;
    of ``element_type``."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xi"], ["s_out"]), helper.make_node("Mul", ["s_out", "xi"], ["row"])],
        "body",
        [helper.make_tensor_value_info(name, element_type, [2]) for name in ("s", "xi")],
        [helper.make_tensor_value_info(name, element_type, [2]) for name in ("s_out", "row")],
    )
    given = {} if directions is None else {"directions": directions}
    node = helper.make_node("Scan", ["lengths" if lengths else "", "s0", "x"], ["total", "rows"], name="scan",
                            body=body, num_scan_inputs=1, **given)  # fmt: skip
    inputs = [helper.make_tensor_value_info("s0", element_type, [batch, 2]),
              helper.make_tensor_value_info("x", element_type, [batch, 3, 2])]  # fmt: skip
    if lengths:
        inputs.append(helper.make_tensor_value_info("lengths", TensorProto.INT64, [batch]))
    outputs = [helper.make_tensor_value_info("total", element_type, [batch, 2]),
               helper.make_tensor_value_info("rows", element_type, [batch, 3, 2])]  # fmt: skip
    graph = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("directions", [None, [0], [1]])
@pytest.mark.parametrize("target", [9, 13])
def test_scan_8_unrolled_batch_by_batch_is_the_scan_bit_for_bit(batch, directions, target):
    """Scan-8 scans a batch of sequences (axis 0), each along axis 1: unrolled per batch on the
    way to opset 9 or later, the same bits as onnxruntime's Scan-8, NaN, -0, inf and subnormals
    included (the backend's test_scan_sum too). At opset 8, whose Constant holds no int64
    index, it stays."""
    model = scan_8_model(batch, directions)
    kept = lowering.lower_model(model, ops=["Scan"])
    assert "Constant holds from opset 9" in kept.report.remaining[0].reason
    result = lowering.lower_model(model, ops=["Scan"], target_opset=target)
    assert result.report.rewritten == {"Scan-8": 1}
    assert "Scan" not in {node.op_type for node in result.model.graph.node}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_for((batch, 3, 2))
    feeds["s0"] = np.linspace(-1.5, 1.5, batch * 2, dtype=np.float32).reshape(batch, 2)
    assert_same_bits(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds))


@pytest.mark.parametrize("form", ["plain", "if", "function"])
def test_scan_8_on_float16_unrolled_in_an_if_branch_and_a_local_function_is_the_scan_bit_for_bit(form):
    """Scan-8 on float16 (NaN, -0, inf and a subnormal among its values), as the main graph's
    node, in both branches of an If and in a local function: unrolled on the way to opset 13,
    no Scan left anywhere, the same bits as onnxruntime's Scan-8 on the original. The other
    values are quarters, whose sums and products float16 holds exactly: onnxruntime computes a
    chain of float16 Adds in float32, rounding once at its end (the unrolled sum), where its
    Scan rounds each iteration's."""
    from lowering.opcount import count_ops

    plain = scan_8_model(2, [1], element_type=TensorProto.FLOAT16)
    model = plain if form == "plain" else nested_forms(plain)[form]
    result = lowering.lower_model(model, ops=["Scan"], target_opset=13, strict=True)
    assert result.report.rewritten == {"Scan-8": 1 if form != "if" else 2}
    assert "Scan" not in count_ops(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    feeds = feeds_for((2, 3, 2), np.float16)
    quarters = np.random.default_rng(8).integers(-8, 8, (2, 3, 2)) / 4
    feeds["x"].flat[4:] = quarters.flat[4:]
    feeds["s0"] = np.array([[-1.5, 0.0], [2.25, -0.0]], np.float16)
    for taken in (True, False) if form != "plain" else (None,):
        given = feeds if taken is None else feeds | {"branch": np.array(taken)}
        assert_same_bits(run_onnxruntime(result.model, given), run_onnxruntime(model, given))


def test_scan_8_is_refused_where_it_is_given_sequence_lengths_or_its_batch_is_unknown():
    """Scan-9 on has no batch, so a Scan-8 the rule cannot unroll cannot go there."""
    with pytest.raises(lowering.LoweringError, match="cannot be lowered .Scan-8 is given sequence_lens"):
        lowering.lower_model(scan_8_model(2, None, lengths=True), ops=["Scan"], target_opset=9)
    unknown = scan_8_model(2, None)
    for info in [*unknown.graph.input, *unknown.graph.output]:
        info.type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(lowering.LoweringError, match="batch size of Scan-8's inputs is unknown"):
        lowering.lower_model(unknown, ops=["Scan"], target_opset=9)


def test_scan_8_of_strings_is_the_scan_where_gathered_by_gather_elements():
    """A string state and a string sequence, batch 2: each batch taken by GatherElements (a
    Gather of strings along a leading axis keeps each slice's first in onnxruntime), so the
    strings come out as onnxruntime's Scan-8 gives them, from opset 11; at 9, refused in words."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["s_out"]), helper.make_node("Identity", ["word"], ["seen"])],
        "body",
        [helper.make_tensor_value_info("s", TensorProto.STRING, [3]),
         helper.make_tensor_value_info("word", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("s_out", TensorProto.STRING, [3]),
         helper.make_tensor_value_info("seen", TensorProto.STRING, [2])],
    )  # fmt: skip
    node = helper.make_node("Scan", ["", "s0", "words"], ["final", "seen"], body=body, num_scan_inputs=1,
                            directions=[1])  # fmt: skip
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("s0", TensorProto.STRING, [2, 3]),
         helper.make_tensor_value_info("words", TensorProto.STRING, [2, 4, 2])],
        [helper.make_tensor_value_info("final", TensorProto.STRING, [2, 3]),
         helper.make_tensor_value_info("seen", TensorProto.STRING, [2, 4, 2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    feeds = {"s0": np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object),
             "words": np.array([f"w{k}" for k in range(16)], dtype=object).reshape(2, 4, 2)}  # fmt: skip
    want = run_onnxruntime(model, feeds)
    for target in (11, 13):
        lowered = lowering.lower_model(model, ops=["Scan"], target_opset=target).model
        assert "Scan" not in {n.op_type for n in lowered.graph.node}
        got = run_onnxruntime(lowered, feeds)
        assert [a.tolist() for a in got] == [b.tolist() for b in want]
    with pytest.raises(lowering.LoweringError, match="GatherElements, which does not exist at opset 9"):
        lowering.lower_model(model, ops=["Scan"], target_opset=9)
