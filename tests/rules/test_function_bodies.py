"""Every op ONNX defines by a function body, lowered on request (rules/function_bodies.py registers them
from onnx.defs) and checked on the ONNX backend node cases of each: the op is gone and the outputs
match the case's expected outputs within the backend's tolerance, in onnxruntime (onnx.reference
where onnxruntime cannot run the lowered model, each named below with why)."""

from __future__ import annotations

import collections
import functools
import re

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.function_bodies import BACKEND_TOLERANCE, BFLOAT16_TOLERANCE, all_negative_infinity_as_a_count
from onnx import TensorProto, helper, numpy_helper
from support import REPO, fast_add_on, nested_forms, slow_but_a_sample, sub_byte_integer_types  # noqa: E402
from version_cases import node_cases

import lowering
from lowering import schemas
from lowering.docs import short_cells
from lowering.function_bodies import all_expansions, body_op_types, expansion_for, ops_with_bodies
from lowering.graphs import nested_graphs
from lowering.patterns import function_body_table
from lowering.schemas import RANDOM_OPS
from lowering.verification.runtime import run_onnxruntime, run_reference


@functools.cache
def all_backend_cases() -> tuple:
    """onnx's backend node cases of kind "node" (:func:`version_cases.node_cases`)."""
    return tuple(case for case in node_cases() if case.kind == "node")


def served_ops(model: onnx.ModelProto) -> list[str]:
    """The ops of the model's main graph whose version there has a registered function body."""
    opsets = [o.version for o in model.opset_import if schemas.canonical_domain(o.domain) == ""]
    if not opsets:
        return []  # a case of another domain only (ai.onnx.ml, preview)
    opset, found = opsets[0], []
    for node in model.graph.node:
        expansion = expansion_for(node.domain, node.op_type)
        version = schemas.version_in_force(node.op_type, opset, node.domain)
        if expansion is not None and version in expansion.versions and node.op_type not in found:
            found.append(node.op_type)
    return found


@functools.cache
def checks() -> tuple[tuple[str, str], ...]:
    """(case name, op) for every backend case and every function-body op it runs."""
    return tuple((case.name, op) for case in all_backend_cases() for op in served_ops(case.model))


# Where a backend case's op version has no body at the model's opset: ONNX wrote these bodies at
# opset 18 only, and the cases import an older opset (the body's CastLike-15 cannot be written
# at 9 or 14). The op stays and the report says why; with the model at opset 18 or above, as
# the same tests of the newer versions are, the body serves.
# (case, op) → the reason the node stays (rules/function_bodies.py BODY_DEFECTS); none today: ONNX's
# AffineGrid body, which feeds Range 1-element tensors, is repaired (rules/function_bodies.py
# range_inputs_as_scalars) and lowers like the rest; Celu's bfloat16 body, computed in float32
# (lowering/function_bodies.py float32_widening), runs where onnxruntime has no bfloat16 Div
REFUSED: dict[tuple[str, str], str] = {}

# Where onnxruntime 1.32's CPU provider has no kernel for an op of the lowered model (Swish-24 in
# SwiGLU's body, RandomUniformLike-22 in Bernoulli's, Cast-25 from or to float4e2m1) it says
# NOT_IMPLEMENTED; onnx.reference is the oracle there and the outcome names the missing kernel.
# A float cast to a 4- or 2-bit integer out of its range is undefined in Cast's spec: the backend
# cases saturate, onnxruntime 1.32 wraps (-9 to uint4 gives 7), so onnx.reference serves the cases
# whose lowered model gives such an integer.
PACKED_INTEGER_TYPES = set(sub_byte_integer_types())


def run_lowered(lowered: onnx.ModelProto, feeds: dict) -> tuple[list, str]:
    """The lowered model's outputs and the runner that gave them (with why, for onnx.reference)."""
    if {output.type.tensor_type.elem_type for output in lowered.graph.output} & PACKED_INTEGER_TYPES:
        return run_reference(lowered, feeds), "onnx.reference (a 4- or 2-bit integer out of range is undefined)"
    try:
        return run_onnxruntime(lowered, feeds), "onnxruntime"
    except Exception as error:  # onnxruntime's own exception types
        message = str(error)
        if "NOT_IMPLEMENTED" not in message:
            raise
        missing = re.search(r"(?:implementation|kernel) for (\w+\(\d+\))", message)
        return run_reference(lowered, feeds), f"onnx.reference (onnxruntime has no kernel for {missing.group(1)})"


# Checks per op: one per backend case that runs the op at a version with a body (an
# ``_expanded`` twin counts for the ops its inlined body still holds, e.g. CastLike).
EXPECTED_COUNTS = {
    "AffineGrid": {"onnxruntime": 4},
    "Attention": {"onnxruntime": 93},  # (its bfloat16 cases computed in float32)
    "Bernoulli": {
        "onnx.reference (onnxruntime has no kernel for RandomUniformLike(22)): shape, type, values 0 or 1 (random)": 3
    },
    "BlackmanWindow": {"onnxruntime": 2},
    "CastLike": {
        "onnx.reference (onnxruntime has no kernel for Add(14))": 3,
        "onnx.reference (onnxruntime has no kernel for Cast(25))": 4,
        "onnx.reference (onnxruntime has no kernel for Div(14))": 1,
        "onnx.reference (onnxruntime has no kernel for Expand(13))": 2,
        "onnx.reference (a 4- or 2-bit integer out of range is undefined)": 8,
        "onnxruntime": 209,
    },
    "CausalConvWithState": {"onnxruntime": 13},
    "Celu": {"onnxruntime": 3},
    "CenterCropPad": {"onnxruntime": 6},
    "Clip": {"onnxruntime": 12},
    "DepthToSpace": {"onnxruntime": 2},
    "DynamicQuantizeLinear": {"onnxruntime": 3},
    "Elu": {"onnx.reference (onnxruntime has no kernel for Div(14))": 1, "onnxruntime": 5},
    "Gelu": {"onnxruntime": 4},
    "GreaterOrEqual": {"onnxruntime": 9},
    "GroupNormalization": {"onnxruntime": 2},
    "HammingWindow": {"onnxruntime": 2},
    "HannWindow": {"onnxruntime": 2},
    "HardSigmoid": {"onnxruntime": 4},
    "HardSwish": {"onnxruntime": 1},
    "LayerNormalization": {"onnxruntime": 19},
    "LeakyRelu": {"onnxruntime": 3},
    "LessOrEqual": {"onnxruntime": 18},
    "LinearAttention": {"onnxruntime": 14},
    "LogSoftmax": {"onnxruntime": 41},
    "MeanVarianceNormalization": {"onnxruntime": 1},
    "Mish": {"onnxruntime": 1},
    "NegativeLogLikelihoodLoss": {"onnxruntime": 52},
    "PRelu": {"onnxruntime": 2},
    "RMSNormalization": {"onnxruntime": 19},
    "Range": {  # (the bfloat16 Attention `_expanded` twins: no bfloat16 Add or Expand in onnxruntime)
        "onnx.reference (onnxruntime has no kernel for Add(14))": 3,
        "onnx.reference (onnxruntime has no kernel for Expand(13))": 2,
        "onnxruntime": 65,  # (the AffineGrid twins' Range on 1-element tensors: by its rule, rules/range.py)
    },
    "ReduceL1": {"onnxruntime": 9},
    "ReduceL2": {"onnxruntime": 9},
    "ReduceLogSum": {"onnxruntime": 5},
    "ReduceLogSumExp": {"onnxruntime": 9},
    "ReduceSumSquare": {"onnxruntime": 9},
    "Relu": {"onnxruntime": 5},
    "RotaryEmbedding": {"onnxruntime": 8},
    "Selu": {"onnxruntime": 3},
    "SequenceMap": {"onnxruntime": 6},
    "Shrink": {"onnxruntime": 2},
    "Softmax": {
        "onnx.reference (onnxruntime has no kernel for Add(14))": 3,
        "onnx.reference (onnxruntime has no kernel for Expand(13))": 2,
        "onnxruntime": 106,
    },
    "SoftmaxCrossEntropyLoss": {"onnxruntime": 34},
    "Softplus": {"onnxruntime": 3},
    "Softsign": {"onnxruntime": 2},
    "SpaceToDepth": {"onnxruntime": 4},
    "SwiGLU": {"onnx.reference (onnxruntime has no kernel for Swish(24))": 3},
    "Swish": {"onnxruntime": 4},
    "ThresholdedRelu": {"onnxruntime": 3},
}


def feed_value(value):
    """A backend data set's input as the runners take it (numpy scalars and TensorProtos too)."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, list):
        return [feed_value(item) for item in value]
    return value


def assert_close(got, want, name: str) -> None:
    if isinstance(want, list):
        assert len(got) == len(want), name
        for got_item, want_item in zip(got, want, strict=True):
            assert_close(got_item, want_item, name)
        return
    want = feed_value(want)
    got = np.asarray(got)
    assert got.shape == np.shape(want), (name, got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (name, got.dtype, np.asarray(want).dtype)
    if not np.issubdtype(got.dtype, np.number) and got.dtype != np.bool_ and got.dtype.kind not in "fV":
        np.testing.assert_array_equal(got, want, err_msg=name)
        return
    tolerance = BFLOAT16_TOLERANCE if got.dtype == ml_dtypes.bfloat16 else BACKEND_TOLERANCE
    mismatched = tolerance.mismatches(got, np.asarray(want))
    assert not mismatched.any(), (name, np.argwhere(mismatched)[:5])


def check_random(got, want, name: str) -> None:
    """A random op's output: its shape, its type and that it only holds what the op can draw."""
    got, want = np.asarray(got), feed_value(want)
    assert got.shape == want.shape and got.dtype == want.dtype, name
    assert set(np.unique(got.astype(np.float64)).tolist()) <= {0.0, 1.0}, name


def feeds_for(model: onnx.ModelProto, inputs: list) -> dict:
    """A data set's inputs by name, in the shapes the model declares (some backend data sets
    hold a 1-element tensor for a declared scalar)."""
    feeds = {}
    for info, value in zip(model.graph.input, inputs, strict=True):
        value = feed_value(value)
        dims = info.type.tensor_type.shape.dim if info.type.HasField("tensor_type") else None
        if dims is not None and all(d.HasField("dim_value") for d in dims) and isinstance(value, np.ndarray):
            shape = tuple(d.dim_value for d in dims)
            if value.shape != shape and value.size == int(np.prod(shape)):
                value = value.reshape(shape)
        feeds[info.name] = value
    return feeds


def check_case(name: str, op: str) -> str:
    """Lower ``op`` in the case and check it; returns how it was checked."""
    (case,) = [case for case in all_backend_cases() if case.name == name]
    result = lowering.lower_model(case.model, ops=[op])
    refused = REFUSED.get((name, op))
    if refused is not None:
        assert [r.reason for r in result.report.remaining] != [], name
        assert all(refused in r.reason for r in result.report.remaining), result.report.lines()
        return "refused"
    assert result.report.complete, result.report.lines()
    lowered = result.model
    assert op not in {node.op_type for node in lowered.graph.node}
    onnx.checker.check_model(lowered, full_check=True)
    random = bool(RANDOM_OPS.intersection(body_op_types(op, expansion_for("", op).versions[-1]) or ()))
    assert case.data_sets
    runners = set()
    for inputs, expected in case.data_sets:
        outputs, runner = run_lowered(lowered, feeds_for(case.model, inputs))
        runners.add(runner)
        assert len(outputs) == len(expected)
        for got, want in zip(outputs, expected, strict=True):
            (check_random if random else assert_close)(got, want, name)
    (runner,) = runners
    return f"{runner}: shape, type, values 0 or 1 (random)" if random else runner


def test_every_op_with_a_body_is_registered():
    registered = {(e.op_type, e.versions) for e in all_expansions()}
    assert registered == set(ops_with_bodies("").items())
    assert len(registered) == 48


@pytest.mark.slow
def test_backend_cases_per_op():
    """Every registered op has backend cases, and every case of each is checked or refused."""
    outcomes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for name, op in checks():
        outcomes[op][check_case(name, op)] += 1
    counts = {op: dict(sorted(c.items())) for op, c in sorted(outcomes.items())}
    assert set(counts) == {e.op_type for e in all_expansions()}
    assert counts == EXPECTED_COUNTS
    assert len(checks()) == 867  # over the 685 backend cases that run one of these ops at a version with a body
    assert len({name for name, _ in checks()}) == 685


def test_docs_list_every_function_body():
    page = (REPO / "docs" / "function-bodies.md").read_text()
    begin = page.index("<!-- generated: function-bodies")
    start = page.index("\n", begin) + 1
    end = page.index("<!-- end: function-bodies -->")
    assert page[start:end].strip() == short_cells(function_body_table()), (
        "docs/function-bodies.md's table is stale: regenerate it with python -m lowering.docs"
    )
    assert len(page[start:end].strip().splitlines()) == 2 + len(all_expansions())


def test_bodies_made_ready_once_per_kind_give_the_same_bytes():
    """Nodes of one kind share a prepared body; each still gets its own fresh names, and the
    result is the bytes that building the body for every node gives."""
    from onnx import helper

    fast = fast_add_on()
    nodes = [
        helper.make_node("Gelu", [f"v{i}"], [f"v{i + 1}"], name="g", approximate="tanh" if i % 2 else "none")
        for i in range(4)
    ]
    x = helper.make_tensor_value_info("v0", onnx.TensorProto.FLOAT, ["N"])
    y = helper.make_tensor_value_info("v4", onnx.TensorProto.FLOAT, ["N"])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 20)])
    fast.forget_memos()
    memoized = lowering.lower(model, ops=["Gelu"], fast=True)
    built_each_time = lowering.lower(model, ops=["Gelu"], fast=fast.Shortcuts(kind_memo=False))
    assert memoized.SerializeToString() == built_each_time.SerializeToString()
    assert lowering.lower(model, ops=["Gelu"], fast=False).SerializeToString() == memoized.SerializeToString()
    names = [node.name for node in memoized.graph.node]
    assert len(names) == len(set(names))
    tanh_nodes = [node for node in memoized.graph.node if node.op_type == "Tanh"]
    assert len(tanh_nodes) == 2  # the approximate attribute is part of the kind


@slow_but_a_sample()
@pytest.mark.parametrize("target", [None, 13])
@pytest.mark.parametrize("element_type", [onnx.TensorProto.INT32, onnx.TensorProto.INT64])
def test_a_type_the_op_takes_and_its_body_does_not_leaves_the_node_with_why(element_type, target):
    """ReduceLogSum-18 takes int32 and int64; its body is Log(ReduceSum(x)), and Log takes no
    integers. onnx's type inference of the body with the node's types says so before it is
    inlined, so the node stays, reported with why, and the model is valid (the inlined body
    failed the whole model's check, and the pass raised); float goes by the body as before."""
    info = onnx.helper.make_tensor_value_info
    model = onnx.helper.make_model(
        onnx.helper.make_graph(
            [onnx.helper.make_node("ReduceLogSum", ["x"], ["y"], keepdims=1)],
            "g",
            [info("x", element_type, [2, 3])],
            [info("y", element_type, [1, 1])],
        ),
        opset_imports=[onnx.helper.make_opsetid("", 18)],
    )
    result = lowering.lower_model(model, ops=["ReduceLogSum"], target_opset=target)
    onnx.checker.check_model(result.model, full_check=True)
    (left,) = result.report.remaining
    assert left.op_type == "ReduceLogSum" and left.version == 18
    assert "its ONNX function body does not take these input types (Log:" in left.reason
    assert [node.op_type for node in result.model.graph.node] == ["ReduceLogSum"]
    model.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    model.graph.output[0].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    floats = lowering.lower_model(model, ops=["ReduceLogSum"], target_opset=target)
    assert not floats.report.remaining and "ReduceLogSum" not in {n.op_type for n in floats.model.graph.node}


@slow_but_a_sample()
@pytest.mark.parametrize("target", [None, 13])
def test_every_constant_a_body_writes_holds_its_value_as_a_tensor(target):
    """GroupNormalization's body stated value_ints, which older runtimes refuse (tract 0.21:
    "Could not extract value out of Constant node"): every body's Constants hold ``value``."""
    checked = set()
    for case in all_backend_cases():
        ops = served_ops(case.model)
        if not ops or ops[0] in checked:
            continue
        try:
            result = lowering.lower_model(case.model, ops=ops, target_opset=target)
        except lowering.LoweringError:
            continue
        graphs = [result.model.graph, *nested_graphs(result.model.graph.node)]
        own = {
            name
            for graph in [case.model.graph, *nested_graphs(case.model.graph.node)]
            for n in graph.node
            for name in n.output
        }
        made = [
            node for graph in graphs for node in graph.node if node.op_type == "Constant" and node.output[0] not in own
        ]
        stated = {attribute.name for node in made for attribute in node.attribute}
        assert stated <= {"value"}, (case.name, stated)
        checked.add(ops[0])
    assert {"GroupNormalization", "LayerNormalization"} <= checked


def test_a_version_without_a_body_takes_a_later_body_across_steps_that_only_add_types():
    """Clip-11 (DynamicQuantizeLinear's expanded cases) stayed when asked to lower it: ONNX gives
    Clip a body only at 13, and steps 12 and 13 only add types, so Clip-13's body serves it,
    its nodes moved down to the node's opset; the outputs are onnxruntime's, bit for bit."""
    cases = [
        c for c in all_backend_cases() if c.name.startswith("test_dynamicquantizelinear") and "_expanded" in c.name
    ]
    assert len(cases) == 3
    for case in cases:
        result = lowering.lower_model(case.model, ops=["Clip"])
        assert result.report.rewritten == {"Clip-11 by its function body": 1}, result.report.lines()
        inputs, _ = case.data_sets[0]
        feeds = {info.name: value for info, value in zip(case.model.graph.input, inputs, strict=True)}
        for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(case.model, feeds), strict=True):
            assert got.tobytes() == want.tobytes(), case.name
    assert expansion_for("", "Clip").body_version(6) is None  # step 11 changes more than types


@pytest.mark.slow
def test_every_pad_a_body_writes_pads_with_a_scalar():
    """ONNX's Attention body pads its mask with a 1-element tensor [-inf] where Pad takes a scalar
    (tract refuses it); the repaired body reshapes it to shape [] first (rules/function_bodies.py
    pad_values_as_scalars): in every Attention backend case lowered, each Pad's value is of rank
    0, as onnx's inference types it."""
    padded = 0
    for case in all_backend_cases():
        if served_ops(case.model) != ["Attention"]:
            continue
        lowered = lowering.lower(case.model, ops=["Attention"], fold="none")
        inferred = onnx.shape_inference.infer_shapes(lowered)
        types = {info.name: info.type for info in [*inferred.graph.value_info, *inferred.graph.input]}
        for node in lowered.graph.node:
            if node.op_type == "Pad" and len(node.input) > 2 and node.input[2]:
                assert len(types[node.input[2]].tensor_type.shape.dim) == 0, (case.name, node.name)
                padded += 1
    assert padded >= 10, padded


def _masked_row_body(
    limit: onnx.NodeProto, extra_reader: bool = False, keepdims: int = 1, axis: int = -1, held: bool = False
) -> onnx.FunctionProto:
    """A body testing a row fully masked as ONNX's Attention body does: Equal(ReduceMax(x, [axis]),
    CastLike(limit, x)); with ``extra_reader`` the row maximum is an output too, with ``held``
    an If's branch reads it."""
    nodes = [
        helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("axes", TensorProto.INT64, [1], [axis])),
        helper.make_node("ReduceMax", ["x", "axes"], ["row_max"], keepdims=keepdims),
        limit,
        helper.make_node("CastLike", ["limit", "x"], ["limit_t"]),
        helper.make_node("Equal", ["row_max", "limit_t"], ["all_masked"]),
    ]
    outputs = ["all_masked", "row_max"] if extra_reader else ["all_masked"]
    if held:
        read = helper.make_graph([helper.make_node("Identity", ["row_max"], ["kept"])], "then", [],
                                 [helper.make_tensor_value_info("kept", TensorProto.FLOAT, None)])  # fmt: skip
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["other"])], "else", [],
                                  [helper.make_tensor_value_info("other", TensorProto.FLOAT, None)])  # fmt: skip
        nodes.append(helper.make_node("If", ["flag"], ["chosen"], then_branch=read, else_branch=other))
        outputs.append("chosen")
    return helper.make_function("test", "masked", ["x", "flag"] if held else ["x"], outputs, nodes,
                                [helper.make_opsetid("", 23)])  # fmt: skip


def _run_body(body: onnx.FunctionProto, x: np.ndarray, reference: bool = False) -> list[np.ndarray]:
    """The body's outputs on ``x``, in onnxruntime (or onnx.reference, whose ReduceMax is numpy's)."""
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph(
        list(body.node),
        "body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in body.output],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    if reference:
        return ReferenceEvaluator(model).run(None, {"x": x})
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(inferred, full_check=True)
    return run_onnxruntime(inferred, {"x": x})


def _minus_inf(shape: list[int]) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], ["limit"], value=helper.make_tensor("limit", TensorProto.FLOAT, shape, [-np.inf])
    )


def test_a_fully_masked_row_is_found_by_counting_its_minus_infinities():
    """all_negative_infinity_as_a_count: Equal(ReduceMax(x), -inf) becomes ReduceMin(x == -inf) > 0.5,
    which is true exactly where numpy's max of the row (the spec's reference) is -inf: rows of
    -inf, of NaN before or after -inf, of ±0, of the largest finite values, of subnormals."""
    body = _masked_row_body(_minus_inf([]))
    repaired = all_negative_infinity_as_a_count(body, [])
    assert "ReduceMax" not in [node.op_type for node in repaired.node]
    lowest, smallest = np.finfo(np.float32).min, np.finfo(np.float32).smallest_subnormal
    x = np.array(
        [
            [-np.inf, -np.inf, -np.inf],
            [np.nan, -np.inf, -np.inf],
            [-np.inf, -np.inf, np.nan],
            [-np.inf, lowest, -np.inf],
            [-0.0, -np.inf, 0.0],
            [smallest, -smallest, -np.inf],
            [np.inf, -np.inf, -np.inf],
        ],
        np.float32,
    )
    (got,) = _run_body(repaired, x)
    want = np.isneginf(np.max(x, axis=-1, keepdims=True))
    assert got.dtype == np.bool_ and np.array_equal(got, want), (got.ravel(), want.ravel())
    assert list(got.ravel()) == [True, False, False, False, False, False, False]


@pytest.mark.parametrize(
    ("limit_shape", "keepdims", "axis", "repaired"),
    [([], 1, -1, True), ([], 0, 0, True), ([1], 1, 0, True), ([1], 1, -1, True), ([1], 0, 1, False),
     ([1, 1], 1, 0, False), ([1, 1, 1], 0, -1, False)],
)  # fmt: skip
def test_the_count_is_made_only_where_it_keeps_the_shape_the_maximum_gave(limit_shape, keepdims, axis, repaired):
    """-inf of rank 0 (any keepdims) or 1 (with keepdims, as the Attention body has it), reduced
    over either axis of x [4, 3]: the repaired body gives the original's shape and values
    (onnx.reference); of a higher rank, or rank 1 without keepdims, where Equal(x, c) could have
    another shape than x, the body is left."""
    x = np.array([[-np.inf] * 3, [np.nan, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [-np.inf] * 3], np.float32)
    body = _masked_row_body(_minus_inf(limit_shape), keepdims=keepdims, axis=axis)
    result = all_negative_infinity_as_a_count(body, [])
    assert (result is not body) == repaired
    (want,) = _run_body(body, x, reference=True)
    (got,) = _run_body(result, x)
    assert got.shape == want.shape and np.array_equal(got, want), (got, want)


def _bias_body(float_mask: bool = False) -> onnx.FunctionProto:
    """A fully-masked-row test as ONNX's Attention body writes it, of a bias built from a bool
    mask [N, 3, 4] (Where(mask, 0, -inf)), padded by a column of -inf, plus a causal constant of
    0s and -infs and a ConstantOfShape of zeros, cast to float; with ``float_mask`` plus a float
    mask given as an input too (a value not built from constants)."""

    def constant(name: str, array: np.ndarray) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))

    causal = np.where(np.triu(np.ones((3, 5), bool), 2), -np.inf, 0).astype(np.float32)
    nodes = [
        constant("zero", np.zeros(1, np.float32)),
        constant("minus_inf", np.full(1, -np.inf, np.float32)),
        constant("minus_inf_scalar", np.array(-np.inf, np.float32)),
        constant("pads", np.array([0, 0, 0, 0, 0, 1], np.int64)),
        constant("causal", causal),
        constant("shape", np.array([1, 3, 5], np.int64)),
        constant("axes", np.array([-1], np.int64)),
        helper.make_node("Where", ["mask", "zero", "minus_inf"], ["short"]),
        helper.make_node("Identity", ["short"], ["bias"]),
        helper.make_node("Pad", ["bias", "pads", "minus_inf_scalar"], ["padded"]),
        helper.make_node("Add", ["padded", "causal"], ["causal_bias"]),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
        helper.make_node("Add", ["causal_bias", "zeros"], ["summed"]),
    ]
    if float_mask:
        nodes.append(helper.make_node("Add", ["summed", "given"], ["total"]))
    else:
        nodes.append(helper.make_node("Cast", ["summed"], ["total"], to=TensorProto.FLOAT))
    nodes += [
        helper.make_node("ReduceMax", ["total", "axes"], ["row_max"], keepdims=1),
        helper.make_node("CastLike", ["minus_inf", "total"], ["minus_inf_t"]),
        helper.make_node("Equal", ["row_max", "minus_inf_t"], ["all_masked"]),
    ]
    inputs = ["mask", "given"] if float_mask else ["mask"]
    return helper.make_function("test", "masked", inputs, ["all_masked"], nodes, [helper.make_opsetid("", 23)])


def every_mask() -> np.ndarray:
    """Each of the 4096 bool masks of shape [3, 4], stacked: [4096, 3, 4]."""
    return ((np.arange(4096)[:, None] >> np.arange(12)) & 1).astype(bool).reshape(4096, 3, 4)


def _run_bias_body(body: onnx.FunctionProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The body's ``all_masked`` on ``feeds`` (a bool ``mask``, a float ``given``), in onnxruntime."""
    types = {"mask": TensorProto.BOOL, "given": TensorProto.FLOAT}
    graph = helper.make_graph(
        list(body.node), "body",
        [helper.make_tensor_value_info(name, types[name], list(feeds[name].shape)) for name in body.input],
        [helper.make_tensor_value_info("all_masked", TensorProto.BOOL, None)],
    )  # fmt: skip
    model = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)]))
    onnx.checker.check_model(model, full_check=True)
    [got] = run_onnxruntime(model, feeds)
    return got


def test_a_bias_built_from_zeros_and_minus_infinities_is_tested_through_its_indicator():
    """A bias built from a bool mask, a -inf pad, a causal constant and zeros: its fully masked
    rows found from 0/1 indicators put through the same Where, Pad and sums (Max), no -inf
    compared at run time (rknn computes the mask's -inf as -10000 and compares it with a -inf
    unequal); the original's answer on every one of the 4096 masks of [3, 4]."""
    body = _bias_body()
    repaired = all_negative_infinity_as_a_count(body, [])
    ops = collections.Counter(node.op_type for node in repaired.node)
    assert "Equal" not in ops and "ReduceMax" not in ops and ops["Max"] == 2 and ops["Pad"] == 2, ops
    masks = every_mask()
    want, got = _run_bias_body(body, {"mask": masks}), _run_bias_body(repaired, {"mask": masks})
    assert got.shape == want.shape == (4096, 3, 1) and np.array_equal(got, want)
    assert 0 < want.sum() < want.size


def _moved_bias_body(moving: list[onnx.NodeProto], constants: dict[str, np.ndarray], rows: bool = True):
    """Where(mask, 0, -inf) of a bool mask [N, 3, 4] as ``bias``, then ``moving`` (which gives
    ``total``), tested by Equal(ReduceMax(total, [-1]), CastLike(-inf of shape [1], total)) with
    keepdims (without ``rows``, ReduceMax over every axis); ``constants`` as Constant nodes."""
    made = {"zero": np.zeros(1, np.float32), "minus_inf": np.full(1, -np.inf, np.float32),
            "limit": np.full([1], -np.inf, np.float32), "axes": np.array([-1], np.int64), **constants}  # fmt: skip
    nodes = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))
             for name, array in made.items()]  # fmt: skip
    nodes += [
        helper.make_node("Where", ["mask", "zero", "minus_inf"], ["bias"]),
        *moving,
        helper.make_node("ReduceMax", ["total", "axes"] if rows else ["total"], ["row_max"], keepdims=1),
        helper.make_node("CastLike", ["limit", "total"], ["limit_t"]),
        helper.make_node("Equal", ["row_max", "limit_t"], ["all_masked"]),
    ]
    return helper.make_function("test", "masked", ["mask"], ["all_masked"], nodes, [helper.make_opsetid("", 23)])


MOVED_BIASES = {
    "concat": ([helper.make_node("Concat", ["bias", "bias"], ["total"], axis=-1)], {}),
    "slice backwards": ([helper.make_node("Slice", ["bias", "starts", "ends", "axes", "steps"], ["total"])],
                        {"starts": np.array([-1]), "ends": np.array([-5]), "steps": np.array([-1])}),
    "transpose, expand, reshape": ([
        helper.make_node("Transpose", ["bias"], ["turned"], perm=[0, 2, 1]),
        helper.make_node("Expand", ["turned", "wide"], ["spread"]),
        helper.make_node("Reshape", ["spread", "flat"], ["total"])],
        {"wide": np.array([2, 1, 4, 3]), "flat": np.array([0, -1, 3])}),
    "pad without a value, tile": ([
        helper.make_node("Pad", ["bias", "pads"], ["padded"], mode="constant"),
        helper.make_node("Tile", ["padded", "twice"], ["total"])],
        {"pads": np.array([0, 0, 0, 0, 1, 0]), "twice": np.array([1, 1, 2])}),
    "castlike and cast to float16, pad by edge": ([
        helper.make_node("Cast", ["bias"], ["halved"], to=TensorProto.FLOAT16),
        helper.make_node("CastLike", ["causal", "halved"], ["causal_half"]),
        helper.make_node("Add", ["halved", "causal_half"], ["summed"]),
        helper.make_node("Pad", ["summed", "pads"], ["total"], mode="edge")],
        {"causal": np.where(np.triu(np.ones((3, 4), bool), 1), -np.inf, 0).astype(np.float32),
         "pads": np.array([0, 0, 0, 0, 0, 2])}),
}  # fmt: skip


@pytest.mark.parametrize("name", MOVED_BIASES)
def test_a_bias_moved_by_ops_that_copy_its_elements_is_tested_through_its_indicator(name):
    """Concat, Slice (backwards), Transpose, Expand, Reshape, Pad (its value left out; by edge),
    Tile, Cast and CastLike to float16 and a causal sum: each bias built from the mask's
    Where(mask, 0, -inf) so gives the original's fully masked rows on every mask of [3, 4], no
    Equal left."""
    moving, constants = MOVED_BIASES[name]
    constants = {key: value if value.dtype.kind == "f" else value.astype(np.int64) for key, value in constants.items()}
    if "slice" in name:
        constants["axes"] = np.array([-1], np.int64)
    body = _moved_bias_body(moving, constants)
    repaired = all_negative_infinity_as_a_count(body, [])
    assert "Equal" not in {node.op_type for node in repaired.node}
    masks = every_mask()
    want, got = _run_bias_body(body, {"mask": masks}), _run_bias_body(repaired, {"mask": masks})
    assert got.shape == want.shape and np.array_equal(got, want)
    assert 0 < want.sum() < want.size


def test_a_cast_to_a_float8_type_keeps_no_indicator_and_no_minus_infinity():
    """A Cast to float8e5m2 saturates -inf to -57344 (saturate 1, its default): a bias cast there
    and back has no indicator (the test stays Equal), and a -inf so cast is no -inf to compare
    with (the body is left): the original's answers, on every mask."""
    through_float8 = [helper.make_node("Cast", ["bias"], ["narrow"], to=TensorProto.FLOAT8E5M2),
                      helper.make_node("Cast", ["narrow"], ["total"], to=TensorProto.FLOAT)]  # fmt: skip
    body = _moved_bias_body(through_float8, {})
    repaired = all_negative_infinity_as_a_count(body, [])
    assert "Equal" in {node.op_type for node in repaired.node}
    assert not any(output.endswith("_is_minus_inf") for node in repaired.node for output in node.output)
    masks = every_mask()
    assert np.array_equal(_run_bias_body(repaired, {"mask": masks}), _run_bias_body(body, {"mask": masks}))
    limit_through_float8 = _masked_row_body(_minus_inf([]))
    limit_through_float8.node.insert(3, helper.make_node("Cast", ["limit"], ["limit8"], to=TensorProto.FLOAT8E5M2))
    limit_through_float8.node[4].input[0] = "limit8"
    assert all_negative_infinity_as_a_count(limit_through_float8, []) is limit_through_float8


def test_a_scalar_bias_compared_with_a_minus_infinity_of_rank_1_keeps_the_shape_1():
    """Equal(ReduceMax(x), c) of a scalar x (the bias' first element) and c of shape [1] is of
    shape [1]: the indicator's test gives that shape too (0.5 of c's rank)."""
    scalar = [helper.make_node("Slice", ["bias", "starts", "ends"], ["first"]),
              helper.make_node("Reshape", ["first", "no_lengths"], ["total"])]  # fmt: skip
    firsts = {"starts": np.zeros(3, np.int64), "ends": np.ones(3, np.int64), "no_lengths": np.zeros(0, np.int64)}
    body = _moved_bias_body(scalar, firsts, rows=False)
    repaired = all_negative_infinity_as_a_count(body, [])
    assert "Equal" not in {node.op_type for node in repaired.node}
    for mask in (np.zeros((1, 3, 4), bool), np.ones((1, 3, 4), bool)):
        want, got = _run_bias_body(body, {"mask": mask}), _run_bias_body(repaired, {"mask": mask})
        assert got.shape == want.shape == (1,) and np.array_equal(got, want)


def test_a_bias_with_a_value_not_built_from_constants_is_tested_by_equal_and_writes_nothing_else():
    """A float mask given as an input added to the bias: its indicator is not known, the test is
    Cast(Equal(x, -inf)) as before, and no node of the indicators tried is left in the body."""
    body = _bias_body(float_mask=True)
    repaired = all_negative_infinity_as_a_count(body, [])
    kept = collections.Counter(node.op_type for node in body.node) - collections.Counter({"ReduceMax": 1})
    added = collections.Counter(node.op_type for node in repaired.node) - kept
    assert added == collections.Counter(["Cast", "ReduceMin", "Constant", "Greater"]), added
    rng = np.random.default_rng(5)
    given = np.where(rng.random((8, 3, 5)) < 0.5, -np.inf, rng.standard_normal((8, 3, 5))).astype(np.float32)
    given[0, 0, 0] = np.nan
    feeds = {"mask": rng.random((8, 3, 4)) < 0.3, "given": given}
    assert np.array_equal(_run_bias_body(repaired, feeds), _run_bias_body(body, feeds))


def test_a_row_maximum_read_elsewhere_or_compared_with_another_value_is_left():
    """The repair applies only where the ReduceMax feeds the Equal alone (not an output, not a
    graph the body holds) and the other side is -inf."""
    lowest = _minus_inf([])
    lowest.attribute[0].t.CopyFrom(helper.make_tensor("limit", TensorProto.FLOAT, [], [np.finfo(np.float32).min]))
    for body in (
        _masked_row_body(_minus_inf([]), extra_reader=True),
        _masked_row_body(_minus_inf([]), held=True),
        _masked_row_body(lowest),
    ):
        assert all_negative_infinity_as_a_count(body, []) is body


def test_every_attention_body_tests_masked_rows_without_a_maximum():
    """In every Attention backend case lowered, no Equal reads a ReduceMax (tract, OpenVINO 2024.6
    and TVM reduce a row of -inf to float's lowest finite value). (The outputs against each case's
    expected ones: test_backend_cases_per_op.)"""
    counted = 0
    for case in all_backend_cases():
        if served_ops(case.model) != ["Attention"]:
            continue
        lowered = lowering.lower(case.model, ops=["Attention"], fold="none")
        producers = {output: node.op_type for node in lowered.graph.node for output in node.output}
        for node in lowered.graph.node:
            if node.op_type == "Equal":
                assert "ReduceMax" not in [producers.get(name) for name in node.input], case.name
            counted += node.op_type == "ReduceMin"
    assert counted >= 10, counted


@pytest.mark.parametrize("form", ["if", "function"])
def test_a_bool_masked_attention_in_an_if_branch_and_a_local_function_is_tested_through_its_indicator(form):
    """Attention-23 of a bool mask whose second row masks everything, in both branches of an If
    and in a local function: lowered there by its body, its fully masked rows found from the
    mask's indicator (in each body), the masked row 0 and the rest onnxruntime's kernel's within
    the body's tolerance, whichever branch runs."""
    four_d = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 3, 4]) for n in ("q", "k", "v")]
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 4])
    plain = helper.make_model(
        helper.make_graph([helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"])], "g", [*four_d, mask], [y]),
        opset_imports=[helper.make_opsetid("", 23)],
    )
    model = nested_forms(plain)[form]
    lowered = lowering.lower(model, ops=["Attention"], fold="none")
    onnx.checker.check_model(lowered, full_check=True)
    nodes = [n for g in [lowered.graph, *nested_graphs(lowered.graph.node)] for n in g.node]
    nodes += [n for f in lowered.functions for n in f.node]
    assert "Attention" not in {n.op_type for n in nodes}
    tests = [n for n in nodes if n.op_type == "ReduceMin" and n.input[0].endswith("_is_minus_inf")]
    assert len(tests) == (2 if form == "if" else 1)  # (each body's row test reads the mask's indicator)
    rng = np.random.default_rng(23)
    feeds = {name: rng.standard_normal([1, 2, 3, 4]).astype(np.float32) for name in ("q", "k", "v")}
    feeds["mask"] = np.array([[True, False, True], [False] * 3, [True, True, False]])
    for taken in (True, False):
        given = feeds | {"branch": np.array(taken)}
        [want], [got] = run_onnxruntime(model, given), run_onnxruntime(lowered, given)
        assert (got[:, :, 1] == 0).all()
        np.testing.assert_allclose(got, want, rtol=BACKEND_TOLERANCE.rtol, atol=BACKEND_TOLERANCE.atol)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_a_bool_masked_attention_of_16_bit_floats_is_tested_through_its_indicator(element_type):
    """Attention-23 of float16 and bfloat16 with a bool mask whose second row masks everything:
    lowered by its body, the fully masked row found from the mask's indicator (float32 0s and
    1s, whatever the element type), the row 0 and the rest the oracle's within the body's
    tolerance for the type: onnxruntime's kernel for float16, onnx.reference for bfloat16 (which
    onnxruntime's kernel does not take); the lowered model runs in onnxruntime either way."""
    four_d = [helper.make_tensor_value_info(n, element_type, [1, 2, 3, 4]) for n in ("q", "k", "v")]
    mask = helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 3])
    y = helper.make_tensor_value_info("y", element_type, [1, 2, 3, 4])
    model = helper.make_model(
        helper.make_graph([helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"])], "g", [*four_d, mask], [y]),
        opset_imports=[helper.make_opsetid("", 23)],
    )
    lowered = lowering.lower(model, ops=["Attention"], fold="none")
    onnx.checker.check_model(lowered, full_check=True)
    assert [n.input[0] for n in lowered.graph.node if n.op_type == "ReduceMin"] == ["y_AttnBiasShort_is_minus_inf"]
    dtype = ml_dtypes.bfloat16 if element_type == TensorProto.BFLOAT16 else np.float16
    rng = np.random.default_rng(16)
    feeds = {name: rng.standard_normal([1, 2, 3, 4]).astype(dtype) for name in ("q", "k", "v")}
    feeds["mask"] = np.array([[True, False, True], [False] * 3, [True, True, False]])
    if element_type == TensorProto.BFLOAT16:
        [want] = run_reference(model, feeds)
        tolerance = BFLOAT16_TOLERANCE
    else:
        [want] = run_onnxruntime(model, feeds)
        tolerance = BACKEND_TOLERANCE
    [got] = run_onnxruntime(lowered, feeds)
    assert got.dtype == dtype and (got[:, :, 1].astype(np.float32) == 0).all()
    assert (np.asarray(want)[:, :, 1].astype(np.float32) == 0).all()
    np.testing.assert_allclose(got.astype(np.float32), np.asarray(want).astype(np.float32), rtol=tolerance.rtol,
                               atol=tolerance.atol)  # fmt: skip


def test_a_fully_masked_row_inside_a_local_function_is_counted_too():
    """Attention-23 in a local function, its mask's second row all -inf: lowered there by its body,
    repaired as in the main graph (no Equal reads a ReduceMax), and the row's output 0 as
    onnxruntime's kernel gives it, the rest within the body's tolerance."""
    four_d = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 3, 4]) for n in ("q", "k", "v")]
    function = helper.make_function(
        "local", "Attend", ["q", "k", "v", "mask"], ["y"],
        [helper.make_node("Attention", ["q", "k", "v", "mask"], ["y"])], [helper.make_opsetid("", 23)],
    )  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Attend", ["q", "k", "v", "mask"], ["y"], domain="local", name="call")], "g",
        [*four_d, helper.make_tensor_value_info("mask", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 4])],
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 23), helper.make_opsetid("local", 1)], functions=[function]
    )
    onnx.checker.check_model(model, full_check=True)
    lowered = lowering.lower(model, ops=["Attention"], fold="none")
    onnx.checker.check_model(lowered, full_check=True)
    bodies = [lowered.graph, *lowered.functions]
    nodes = [node for body in bodies for node in body.node]
    assert "Attention" not in {node.op_type for node in nodes} and "ReduceMin" in {node.op_type for node in nodes}
    producers = {output: node.op_type for node in nodes for output in node.output}
    assert all("ReduceMax" not in [producers.get(name) for name in n.input] for n in nodes if n.op_type == "Equal")
    rng = np.random.default_rng(23)
    feeds = {name: rng.standard_normal([1, 2, 3, 4]).astype(np.float32) for name in ("q", "k", "v")}
    feeds["mask"] = np.array([[0, -1, 0], [-np.inf] * 3, [0, 0, -np.inf]], np.float32)
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(lowered, feeds)
    assert (want[:, :, 1] == 0).all() and (got[:, :, 1] == 0).all()
    np.testing.assert_allclose(got, want, rtol=BACKEND_TOLERANCE.rtol, atol=BACKEND_TOLERANCE.atol)
