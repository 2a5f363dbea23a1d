"""Expansion by the op's own ONNX function body (lowering/function_bodies.py, rules/function_bodies.py)."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import onnx
import onnx.inliner
import pytest
from lowering.rules.function_bodies import last_axis_unflattened, variance_in_two_passes
from onnx import TensorProto, helper
from support import nested_forms, slow_but_a_sample  # noqa: E402
from version_cases import fed_data_sets, node_cases

import lowering
from lowering import schemas
from lowering.errors import NotLowered
from lowering.function_bodies import Expanded, FunctionExpansion, Tolerance, expansion_for
from lowering.graphs import constant_tensor
from lowering.naming import NameAllocator, names_in_model
from lowering.verification.runtime import run_onnxruntime

NUMPY_TYPES = {
    TensorProto.FLOAT: np.float32,
    TensorProto.DOUBLE: np.float64,
    TensorProto.FLOAT16: np.float16,
    TensorProto.BFLOAT16: ml_dtypes.bfloat16,
}


def layer_normalization() -> FunctionExpansion:
    expansion = expansion_for("", "LayerNormalization")
    assert expansion is not None
    return expansion


@functools.cache
def layer_normalization_backend_cases() -> tuple:
    """The ONNX backend node cases whose model runs LayerNormalization (collected once)."""
    return tuple(c for c in node_cases() if any(n.op_type == "LayerNormalization" for n in c.model.graph.node))


def inline(model: onnx.ModelProto, expansion: FunctionExpansion, fresh=None) -> onnx.ModelProto | NotLowered:
    """``model`` with its node(s) of the expansion's op replaced by the body, checked in full;
    the expansion's refusal where it declines."""
    graph = model.graph
    opset = next(o.version for o in model.opset_import if schemas.canonical_domain(o.domain) == "")
    types = {info.name: info.type for info in [*graph.input, *graph.value_info, *graph.output]}
    fresh = fresh or NameAllocator(model=model).fresh
    nodes, written_at = [], opset
    for node in graph.node:
        if node.op_type != expansion.op_type:
            nodes.append(node)
            continue
        try:
            result = expansion.expand(node, opset=opset, input_types=[types.get(n) for n in node.input], fresh=fresh)
        except NotLowered as declined:
            return declined
        nodes += result.nodes
        written_at = result.opset
    inlined_graph = helper.make_graph(nodes, graph.name, graph.input, graph.output, graph.initializer)
    inlined = helper.make_model(
        inlined_graph, opset_imports=[helper.make_opsetid("", written_at)], ir_version=model.ir_version
    )
    onnx.checker.check_model(inlined, full_check=True)
    return inlined


def layer_normalization_model(
    element_type: int, shape: list[int], *, axis: int = -1, opset: int = 17, outputs=("Y",), **attributes
) -> onnx.ModelProto:
    rank = len(shape)
    first = axis % rank
    node = helper.make_node(
        "LayerNormalization", ["X", "Scale", "B"], list(outputs), name="ln", axis=axis, **attributes
    )
    statistics_shape = shape[:first] + [1] * (rank - first)
    return helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info("X", element_type, shape),
                helper.make_tensor_value_info("Scale", element_type, shape[first:]),
                helper.make_tensor_value_info("B", element_type, shape[first:]),
            ],
            [helper.make_tensor_value_info("Y", element_type, shape)]
            + [helper.make_tensor_value_info(name, TensorProto.FLOAT, statistics_shape) for name in outputs[1:]],
        ),
        opset_imports=[helper.make_opsetid("", opset)],
    )


def worst_error(got: np.ndarray, want: np.ndarray) -> float:
    """max |got − want| / (1 + |want|) over the finite elements: what atol = rtol must cover."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    finite = np.isfinite(want) & np.isfinite(got)
    return float((np.abs(got - want) / (1 + np.abs(want)))[finite].max(initial=0.0))


# (a) every ONNX backend case of LayerNormalization


@pytest.mark.slow
def test_every_backend_case_expands_and_meets_its_tolerance():
    cases = layer_normalization_backend_cases()
    # 19 cases (2-D, 3-D with epsilon, 4-D, every axis, the default axis), all at opset 17, all
    # naming Mean and InvStdDev, which ONNX's body computes where the node names them.
    assert len(cases) == 19
    expansion = layer_normalization()
    tolerance = expansion.tolerance_for(TensorProto.FLOAT)
    refused, worst, compared = [], 0.0, 0
    for case in cases:
        node = next(n for n in case.model.graph.node if n.op_type == "LayerNormalization")
        assert list(node.output) == ["Y", "Mean", "InvStdDev"]
        inlined = inline(case.model, expansion)
        if isinstance(inlined, NotLowered):
            refused.append((case.name, inlined.reason))
            continue
        assert [o.version for o in inlined.opset_import] == [17]
        for feeds, expected in fed_data_sets(case):
            outputs = run_onnxruntime(inlined, feeds)
            assert len(outputs) == len(expected) == 3
            for got, want in zip(outputs, expected, strict=True):
                assert got.dtype == want.dtype and got.shape == want.shape
                assert not tolerance.mismatches(got, want).any(), case.name
                worst = max(worst, worst_error(got, want))
                compared += 1
    assert refused == []
    assert compared == 57
    assert 0 < worst <= tolerance.atol


def test_a_node_naming_an_output_the_body_lacks_is_refused():
    # No default-domain body in onnx 1.23 leaves an output it declares uncomputed when the node
    # names it (LayerNormalization's builds Mean and InvStdDev on demand), so the refusal is
    # shown on an output past the body's list: Relu's body has one output.
    relu = FunctionExpansion("Relu", "", (14,), {}, _applies)
    node = helper.make_node("Relu", ["x"], ["y", "extra"], name="r")
    with pytest.raises(NotLowered) as refused:
        relu.expand(node, opset=18, input_types=[_tensor(TensorProto.FLOAT)], fresh=NameAllocator().fresh)
    result = refused.value
    assert "output 1" in result.reason and "'extra'" in result.reason and "does not compute it" in result.reason


def test_unnamed_statistics_outputs_are_left_out():
    model = layer_normalization_model(TensorProto.FLOAT, [2, 5], outputs=("Y",))
    node = model.graph.node[0]
    node.output.extend(["", "InvStdDev"])
    model.graph.output.append(helper.make_tensor_value_info("InvStdDev", TensorProto.FLOAT, [2, 1]))
    inlined = inline(model, layer_normalization())
    produced = {name for n in inlined.graph.node for name in n.output}
    assert {"Y", "InvStdDev"} <= produced
    assert "Mean" not in produced
    assert not any(n.op_type == "Reshape" and "Mean2D" in n.input[0] for n in inlined.graph.node)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    y, inverse_std = run_onnxruntime(inlined, {"X": x, "Scale": np.ones(5, np.float32), "B": np.zeros(5, np.float32)})
    want = 1 / np.sqrt(x.astype(np.float64).var(axis=1, keepdims=True) + 1e-5)
    assert not layer_normalization().tolerance_for(TensorProto.FLOAT).mismatches(inverse_std, want).any()


# (b) float16 and bfloat16 (and float, double), random rows and edge values


def edge_rows(element_type: int, width: int) -> np.ndarray:
    """Rows of edge values: ±0, large values centred on 0, subnormals, a NaN, an infinity.
    (A constant row far from 0 is outside the stated range: see the test after next.)"""
    dtype = NUMPY_TYPES[element_type]
    large = 60000.0 if element_type == TensorProto.FLOAT16 else 1.0e18
    smallest = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    rows = [
        [0.0] * width,
        [-0.0] * width,
        [0.0, -0.0] * (width // 2),
        [-large, large] * (width // 2),
        [smallest, -smallest, 0.0, 3 * smallest] * (width // 4),
        [np.nan] + [1.0] * (width - 1),
        [np.inf] + [1.0] * (width - 1),
        [-np.inf, np.inf] + [0.0] * (width - 2),
    ]
    return np.array(rows, dtype=np.float64).astype(dtype)


@slow_but_a_sample()
@pytest.mark.parametrize(
    "element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE]
)
def test_each_float_type_meets_its_tolerance_on_random_and_edge_rows(element_type):
    expansion = layer_normalization()
    tolerance = expansion.tolerance_for(element_type)
    dtype = NUMPY_TYPES[element_type]
    rng = np.random.default_rng(17)
    width = 64
    # Rows centred anywhere within 3 standard deviations of 0 (the tolerance's stated range).
    random_rows = rng.standard_normal((12, width)) + rng.uniform(-3, 3, (12, 1))
    x = np.concatenate([random_rows.astype(dtype), edge_rows(element_type, width)])
    feeds = {
        "X": x,
        "Scale": rng.standard_normal(width).astype(dtype),
        "B": rng.standard_normal(width).astype(dtype),
    }
    original = layer_normalization_model(element_type, list(x.shape))
    inlined = inline(original, expansion)
    want = run_onnxruntime(original, feeds)[0]  # onnxruntime has a kernel for all four types
    # (float16 and bfloat16 computed in float32, which onnxruntime's CPU provider runs: it has no
    # bfloat16 Mul, which the body's second stage uses)
    got = run_onnxruntime(inlined, feeds)[0]
    assert got.dtype == dtype
    mismatched = tolerance.mismatches(got, want)
    assert not mismatched.any(), np.argwhere(mismatched)[:5]
    edges = got[len(random_rows) :].astype(np.float64)
    assert np.isnan(edges[-3:]).all()  # a NaN or an infinity in a row: the whole row NaN
    assert np.isfinite(edges[:-3]).all()
    if element_type in (TensorProto.FLOAT, TensorProto.DOUBLE):
        assert worst_error(got, want) > 0  # the arithmetic does differ from the kernel's
    else:  # computed in float32 and rounded once, as the kernel computes
        assert {n.op_type for n in inlined.graph.node if n.output[0] == "Y"} == {"Cast"}


def test_the_tolerance_is_stated_tightly_for_float32():
    """Rows off-centre by 3 standard deviations use most of float32's stated tolerance; rows off
    by 30 exceed it (the cancellation in Mean(X²) − Mean(X)²): the stated range is real."""
    expansion = layer_normalization()
    tolerance = expansion.tolerance_for(TensorProto.FLOAT)
    rng = np.random.default_rng(3)
    scale, bias = np.ones(768, np.float32), np.zeros(768, np.float32)
    original = layer_normalization_model(TensorProto.FLOAT, [16, 768])
    inlined = inline(original, expansion)

    def error(offset: float) -> float:
        x = (rng.standard_normal((16, 768)) + offset).astype(np.float32)
        feeds = {"X": x, "Scale": scale, "B": bias}
        return worst_error(run_onnxruntime(inlined, feeds)[0], run_onnxruntime(original, feeds)[0])

    assert tolerance.atol / 8 < error(3.0) <= tolerance.atol
    assert error(30.0) > tolerance.atol


def test_overflow_in_float32_is_where_the_body_departs_from_the_kernel():
    """X² or a row's sum past float32's range: the body's NaN where the kernel (summing in
    double) stays finite. The formula states this limit; this pins it."""
    original = layer_normalization_model(TensorProto.FLOAT, [1, 8])
    feeds = {"X": np.array([[3e38, 1.0] * 4], np.float32), "Scale": np.ones(8, np.float32)}
    feeds["B"] = np.zeros(8, np.float32)
    assert np.isnan(run_onnxruntime(inline(original, layer_normalization()), feeds)[0]).all()
    assert np.isfinite(run_onnxruntime(original, feeds)[0]).all()


def test_a_constant_row_far_from_zero_gives_the_bias():
    """Var = 0 exactly: ONNX's body, Mean(X²) − Mean(X)², cancels to a rounding error (float16
    rows of 60000, 64 wide, give Var below −epsilon, so NaN); taken in two passes it is 0, and
    the body gives B, Mean and 1/Sqrt(epsilon), as onnxruntime's kernel does."""
    original = layer_normalization_model(TensorProto.FLOAT16, [1, 64], outputs=("Y", "Mean", "InvStdDev"))
    feeds = {"X": np.full((1, 64), 60000, np.float16), "Scale": np.full(64, 2, np.float16)}
    feeds["B"] = np.full(64, 0.5, np.float16)
    got = run_onnxruntime(inline(original, layer_normalization()), feeds)
    want = run_onnxruntime(original, feeds)
    assert (want[0] == 0.5).all() and (got[0] == want[0]).all()
    assert (got[1] == 60000).all()
    np.testing.assert_allclose(got[2], 1 / np.sqrt(np.float32(1e-5)), rtol=2**-18)


@pytest.mark.parametrize("mean_over_std", [1e2, 1e3, 1e4])
def test_rows_far_off_centre_stray_as_little_as_the_kernel(mean_over_std):
    """Rows whose mean is 100 to 10000 standard deviations from 0, float32: against a float64
    computation, the body strays at most twice as far as onnxruntime's kernel (the mean's
    rounding in float32 sets both: 5e-6 and 3.5e-6 at 100), where ONNX's one-pass variance
    strays 400 times as far at 100, 3000 times at 1000, and gives NaN at 10000."""
    rng = np.random.default_rng(11)
    x = (mean_over_std + rng.standard_normal((8, 64))).astype(np.float32)
    original = layer_normalization_model(TensorProto.FLOAT, [8, 64])
    feeds = {"X": x, "Scale": np.ones(64, np.float32), "B": np.zeros(64, np.float32)}
    (got,) = run_onnxruntime(inline(original, layer_normalization()), feeds)
    (kernel,) = run_onnxruntime(original, feeds)
    wide = x.astype(np.float64)
    want = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5)
    assert np.abs(got - want).max() <= 2 * np.abs(kernel - want).max()


# (c) refusals, each with its reason


def _tensor(element_type: int) -> onnx.TypeProto:
    return helper.make_tensor_type_proto(element_type, None)


def _applies(node: onnx.NodeProto) -> None:
    """The test expansions' formula: the body as ONNX writes it."""
    return None


def _expand(node, *, opset=17, types=(TensorProto.FLOAT,) * 3, expansion=None) -> Expanded | NotLowered:
    """The node expanded, or the expansion's refusal."""
    expansion = expansion or layer_normalization()
    input_types = [None if t is None else _tensor(t) for t in types]
    try:
        return expansion.expand(node, opset=opset, input_types=input_types, fresh=NameAllocator().fresh)
    except NotLowered as declined:
        return declined


def _ln_node(**attributes):
    return helper.make_node("LayerNormalization", ["X", "Scale", "B"], ["Y"], name="ln", **attributes)


def test_refusals_say_why():
    refusals = {
        "unknown type": (_expand(_ln_node(), types=(TensorProto.FLOAT, None, TensorProto.FLOAT)), "input 1"),
        "opset before the op": (_expand(_ln_node(), opset=16), "does not exist at opset 16"),
        "stash_type": (_expand(_ln_node(stash_type=TensorProto.BFLOAT16)), "stash_type 16 (bfloat16)"),
    }
    referring = _ln_node()
    referring.attribute.append(helper.make_attribute_ref("axis", onnx.AttributeProto.INT))
    referring.attribute[-1].ref_attr_name = "outer_axis"
    refusals["ref_attr"] = (_expand(referring), "refers to the enclosing function's attribute 'outer_axis'")
    hard_sigmoid = FunctionExpansion("HardSigmoid", "", (6,), {}, _applies)
    node = helper.make_node("HardSigmoid", ["x"], ["y"], name="hs")
    refusals["unserved version"] = (  # (a version served later across steps that only add types would serve)
        _expand(node, opset=22, types=(TensorProto.FLOAT,), expansion=hard_sigmoid),
        "HardSigmoid-22 (opset 22) is not served; the expansion serves 6",
    )
    # A body ONNX wrote only at later opsets (HardSigmoid-6's at 18) is used, written at its own
    # opset: the driver moves its nodes down to the node's opset (tests/test_legalize.py).
    both = FunctionExpansion("HardSigmoid", "", (6, 22), {}, _applies)
    later = _expand(node, opset=17, types=(TensorProto.FLOAT,), expansion=both)
    assert not isinstance(later, NotLowered) and later.opset == 18
    for what, (result, reason) in refusals.items():
        assert isinstance(result, NotLowered), what
        assert reason in result.reason, (what, result.reason)
        assert result.reason.startswith(
            f"{node.op_type if what == 'unserved version' else 'LayerNormalization'} node"
        ), what


def test_registration_checks_versions_and_bodies():
    from lowering.function_bodies import function_expansion

    with pytest.raises(ValueError, match="no versions \\[16\\]"):
        function_expansion("Softsign", versions=(16,), tolerance={})(_applies)
    with pytest.raises(ValueError, match="no function body"):
        function_expansion("Abs", versions=(13,), tolerance={})(_applies)
    expansion = layer_normalization()
    assert expansion.name == "layer_normalization_body"
    assert expansion.formula.startswith("LayerNormalization(X, Scale, B) = (X − Mean(X))")
    assert expansion.versions == (17,)


# (d) the body's opset follows the node's


@slow_but_a_sample()
@pytest.mark.parametrize("opset", range(17, schemas.newest_opset() + 1))
def test_the_body_is_written_at_the_newest_body_opset_not_above_the_nodes(opset):
    result = _expand(_ln_node(), opset=opset)
    assert isinstance(result, Expanded)
    reduce_means = [n for n in result.nodes if n.op_type == "ReduceMean"]
    assert len(reduce_means) == 2
    if opset == 17:
        assert result.opset == 17
        assert all(len(n.input) == 1 and n.attribute[0].name == "axes" for n in reduce_means)
    else:
        assert result.opset == 18
        assert all(len(n.input) == 2 and not n.attribute for n in reduce_means)


@pytest.mark.parametrize("opset", [17, 18])
def test_both_body_opsets_run(opset):
    original = layer_normalization_model(TensorProto.FLOAT, [3, 4, 5], axis=1, opset=opset)
    inlined = inline(original, layer_normalization())
    assert [o.version for o in inlined.opset_import] == [opset]
    rng = np.random.default_rng(opset)
    feeds = {"X": rng.standard_normal((3, 4, 5)).astype(np.float32)}
    feeds |= {"Scale": rng.standard_normal((4, 5)).astype(np.float32), "B": np.ones((4, 5), np.float32)}
    got, want = run_onnxruntime(inlined, feeds)[0], run_onnxruntime(original, feeds)[0]
    assert not layer_normalization().tolerance_for(TensorProto.FLOAT).mismatches(got, want).any()


def test_a_plain_body_takes_the_nodes_attributes_and_the_schemas_defaults():
    hard_sigmoid = FunctionExpansion("HardSigmoid", "", (6,), {}, _applies)
    node = helper.make_node("HardSigmoid", ["x"], ["y"], name="hs", alpha=0.25)
    result = _expand(node, opset=18, types=(TensorProto.FLOAT,), expansion=hard_sigmoid)
    assert isinstance(result, Expanded) and result.opset == 18
    constants = [onnx.numpy_helper.to_array(constant_tensor(n)).item() for n in result.nodes if n.op_type == "Constant"]
    assert not any(a.ref_attr_name for n in result.nodes for a in n.attribute)
    assert sorted(constants) == [0.0, 0.25, 0.5, 1.0]  # alpha from the node, beta the default; the bounds
    model = helper.make_model(
        helper.make_graph(
            result.nodes,
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [7])],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    onnx.checker.check_model(model, full_check=True)
    x = np.array([-9, -2, -1, 0, 1, 2, 9], np.float32)
    np.testing.assert_array_equal(run_onnxruntime(model, {"x": x})[0], np.clip(0.25 * x + 0.5, 0, 1))


def test_a_missing_bias_is_left_out_of_the_body():
    node = helper.make_node("LayerNormalization", ["X", "Scale", ""], ["Y"], name="ln")
    result = _expand(node, types=(TensorProto.FLOAT, TensorProto.FLOAT, None))
    assert isinstance(result, Expanded)
    assert not any("" in n.input or "B" in n.input for n in result.nodes)


# (e) names


def test_fresh_names_avoid_the_models_names_and_expansion_is_deterministic():
    original = layer_normalization_model(TensorProto.FLOAT, [2, 6])
    # Names the expansion would otherwise choose, already taken by the model.
    taken = ["ln_XShape", "ln_Mul", "ln_Normalized", "ln_Constant"]
    original.graph.node.extend(helper.make_node("Identity", ["X"], [name], name=name) for name in taken)
    model_names = names_in_model(original)

    def expanded_nodes() -> list[onnx.NodeProto]:
        result = layer_normalization().expand(
            original.graph.node[0],
            opset=17,
            input_types=[_tensor(TensorProto.FLOAT)] * 3,
            fresh=NameAllocator(model=original).fresh,
        )
        assert isinstance(result, Expanded)
        return result.nodes

    nodes = expanded_nodes()
    new_names = [n.name for n in nodes] + [o for n in nodes for o in n.output if o != "Y"]
    assert len(set(new_names)) == len(new_names)
    assert model_names.isdisjoint(new_names)
    assert all(name.startswith("ln_") for name in new_names)
    assert "ln_XShape_1" in new_names and "ln_Mul_1" in new_names
    again = expanded_nodes()
    assert [n.SerializeToString() for n in nodes] == [n.SerializeToString() for n in again]


def test_tolerance_treats_nan_and_infinities_exactly():
    tolerance = Tolerance(rtol=0.1, atol=0.0)
    want = np.array([1.0, np.nan, np.inf, -np.inf, 0.0])
    assert not tolerance.mismatches(np.array([1.05, np.nan, np.inf, -np.inf, 0.0]), want).any()
    assert tolerance.mismatches(np.array([1.2, 0.0, -np.inf, np.nan, np.nan]), want).tolist() == [True] * 5


# (f) identities left out


def onnx_body(original: onnx.ModelProto, *, opset: int = 17, last_axis_repair: bool = False) -> onnx.FunctionProto:
    """ONNX's own body for the model's LayerNormalization node, built at ``opset`` from the
    graph's stated input types, with its variance in two passes (as the expansion repairs it),
    unflattened over the last axis where ``last_axis_repair``."""
    schema = onnx.defs.get_schema("LayerNormalization", 17)
    node = original.graph.node[0]
    canonical = helper.make_node("LayerNormalization", ["X", "Scale", "B"], list(node.output), name="ln", **{
        a.name: helper.get_attribute_value(a) for a in node.attribute
    })  # fmt: skip
    stated = {info.name: info.type for info in original.graph.input}
    types = [stated[name] for name in node.input]
    body = onnx.FunctionProto.FromString(
        schema.get_context_dependent_function_with_opset_version(
            opset, canonical.SerializeToString(), [t.SerializeToString() for t in types]
        )
    )
    body = variance_in_two_passes(body)
    return last_axis_unflattened(body, types) if last_axis_repair else body


def with_body_inlined(original: onnx.ModelProto, body: onnx.FunctionProto, *, opset: int = 17) -> onnx.ModelProto:
    """``original`` with its node replaced by ``body``, inlined by onnx's own inliner (not ours)."""
    body = onnx.FunctionProto.FromString(body.SerializeToString())
    body.name, body.domain = "LayerNormalizationBody", "local"
    del body.attribute[:]  # built for the node's attributes: none is referred to
    node = original.graph.node[0]
    call = helper.make_node("LayerNormalizationBody", list(node.input), list(node.output), domain="local")
    return onnx.inliner.inline_local_functions(
        helper.make_model(
            helper.make_graph([call], "g", list(original.graph.input), list(original.graph.output)),
            opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("local", 1)],
            functions=[body],
        )
    )


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_casts_to_the_type_a_value_has_are_left_out_and_change_no_bit(element_type):
    """Cast(x, to = type of x) = x: the body without those Casts gives the bits of ONNX's own
    body with them (run as a local function), NaN payloads, infinities and signed zeros
    included. float16 is computed in float32 (the body ONNX builds for float inputs, between
    Casts to float and back: function_bodies.float32_widening), so the same bits as ONNX's float
    body, rounded once to float16 (any NaN for a NaN: onnxruntime's and numpy's casts of a NaN's
    payload differ)."""
    original = layer_normalization_model(element_type, [4, 6])
    pruned = inline(original, layer_normalization())
    casts = [n.attribute[0].i for n in pruned.graph.node if n.op_type == "Cast"]
    assert casts == ([] if element_type == TensorProto.FLOAT else [TensorProto.FLOAT] * 3 + [element_type])

    computed_in = layer_normalization_model(TensorProto.FLOAT, [4, 6])
    body = onnx_body(computed_in)
    assert sum(n.op_type == "Cast" for n in body.node) > 0  # ONNX's body has the identities
    whole = with_body_inlined(computed_in, body)

    dtype = NUMPY_TYPES[element_type]
    bits = np.uint32 if element_type == TensorProto.FLOAT else np.uint16
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6)).astype(dtype)
    x.view(bits)[0, :3] = [0x7FC00123, 0xFFC00001, 0x7F800000] if bits is np.uint32 else [0x7E01, 0xFD23, 0x7C00]
    x[1, :2] = [-0.0, np.finfo(dtype).max]
    x[2, :2] = [np.finfo(dtype).smallest_subnormal, -np.inf]
    feeds = {"X": x, "Scale": rng.standard_normal(6).astype(dtype), "B": rng.standard_normal(6).astype(dtype)}
    got = run_onnxruntime(pruned, feeds)[0]
    want = run_onnxruntime(whole, {name: value.astype(np.float32) for name, value in feeds.items()})[0].astype(dtype)
    assert got.dtype == want.dtype and np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got.view(bits)[~np.isnan(got)], want.view(bits)[~np.isnan(want)])


# (g) over the last axis, X unflattened


def edge_filled(element_type: int, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values with NaN payloads of both signs, ±inf, -0, the largest finite value and
    the smallest subnormal in the first row."""
    dtype = NUMPY_TYPES[element_type]
    bits = np.uint32 if element_type == TensorProto.FLOAT else np.uint16
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    if flat.size >= 7:
        nan_bits = [0x7FC00123, 0xFFC00001, 0x7F800000] if bits is np.uint32 else [0x7E01, 0xFD23, 0x7C00]
        flat.view(bits)[:3] = nan_bits
        flat[3:7] = [-np.inf, -0.0, np.finfo(dtype).max, np.finfo(dtype).smallest_subnormal]
    return x


def _run_both(original, inlined, element_type, seed=5):
    x_shape = [d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"X": edge_filled(element_type, tuple(x_shape), seed)}
    for info in original.graph.input[1:]:
        shape = tuple(d.dim_value for d in info.type.tensor_type.shape.dim)
        feeds[info.name] = np.random.default_rng(seed + 1).standard_normal(shape).astype(NUMPY_TYPES[element_type])
    return run_onnxruntime(inlined, feeds), feeds


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16])
@pytest.mark.parametrize("shape", [[6], [4, 6], [2, 3, 6], [3, 4, 1000]])
@pytest.mark.parametrize("outputs", [("Y",), ("Y", "Mean", "InvStdDev")])
def test_over_the_last_axis_x_scale_and_b_stay_unflattened_and_no_bit_changes(element_type, shape, outputs):
    """axis=-1 with Scale and B of shape [N]: the body reduces X's last axis itself, with no
    Flatten, Shape or Reshape of Y, and gives the bits of ONNX's body (two-pass variance) run
    as a local function: every output, NaN payloads, infinities, -0, subnormals and the
    largest value included."""
    original = layer_normalization_model(element_type, shape, outputs=outputs)
    inlined = inline(original, layer_normalization())
    op_types = [n.op_type for n in inlined.graph.node]
    assert "Flatten" not in op_types
    if outputs == ("Y",):
        assert "Reshape" not in op_types and "Shape" not in op_types
    reduce_axes = [list(a.ints) for n in inlined.graph.node if n.op_type == "ReduceMean" for a in n.attribute]
    assert reduce_axes == [[-1], [-1]]
    got, feeds = _run_both(original, inlined, element_type)
    want = run_onnxruntime(with_body_inlined(original, onnx_body(original)), feeds)
    for got_one, want_one in zip(got, want, strict=True):
        assert got_one.shape == want_one.shape and got_one.dtype == want_one.dtype
        assert np.array_equal(got_one.view(np.uint8), want_one.view(np.uint8))


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("shape", "axis", "parameter_shape", "flattened"),
    [
        ([4, 6], -1, [1, 6], ["Scale", "B"]),  # Scale and B of rank 2: Flatten kept for them, and the Reshape
        ([6], -1, [1, 6], ["Scale", "B"]),  # X of rank 1 with Scale [1, 6]: Y comes back as [6]
        ([2, 3, 6], 2, [6], []),  # the last axis by its number: X's rank stated
        ([2, 3, 6], 1, [3, 6], ["X", "Scale", "B"]),  # not the last axis: ONNX's body as it is
    ],
)
def test_the_body_stays_flattened_where_it_must(shape, axis, parameter_shape, flattened):
    """Only X's last axis is reduced unflattened, and only a Scale or B of at most one
    dimension skips Flatten (with the Reshape back to X's shape): elsewhere the body keeps
    ONNX's form, and still gives its bits."""
    original = layer_normalization_model(TensorProto.FLOAT, shape, axis=axis)
    for info in original.graph.input[1:]:
        info.CopyFrom(helper.make_tensor_value_info(info.name, TensorProto.FLOAT, parameter_shape))
    inlined = inline(original, layer_normalization())
    assert sorted(n.input[0] for n in inlined.graph.node if n.op_type == "Flatten") == sorted(flattened)
    assert any(n.op_type == "Reshape" for n in inlined.graph.node) == bool(flattened)
    got, feeds = _run_both(original, inlined, TensorProto.FLOAT)
    want = run_onnxruntime(with_body_inlined(original, onnx_body(original)), feeds)
    assert got[0].shape == want[0].shape == tuple(shape)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32))


def test_the_opset_18_body_reduces_the_last_axis_by_its_axes_input():
    """ONNX's body at 18 states the axis as a Constant [1] read by ReduceMean: it becomes [-1]."""
    original = layer_normalization_model(TensorProto.FLOAT, [2, 3, 6], opset=18)
    body = onnx_body(original, opset=18, last_axis_repair=True)
    assert not any(n.op_type in ("Flatten", "Reshape") for n in body.node)
    axes_read = {r.input[1] for r in body.node if r.op_type == "ReduceMean"}
    axes = [n for n in body.node if n.op_type == "Constant" and n.output[0] in axes_read]
    assert [onnx.numpy_helper.to_array(n.attribute[0].t).tolist() for n in axes] == [[-1]]
    inlined = with_body_inlined(original, body, opset=18)
    got, feeds = _run_both(original, inlined, TensorProto.FLOAT)
    want = run_onnxruntime(with_body_inlined(original, onnx_body(original, opset=18), opset=18), feeds)
    assert np.array_equal(got[0].view(np.uint32), want[0].view(np.uint32))


def _converted_layer_norms(scales: dict[str, np.ndarray], x_shape: list[int], via_identity: bool = False):
    """A model of one LayerNormalization per Scale given (an initializer each, read through an
    Identity where ``via_identity``, as TorchScript reads shared weights), B absent, converted
    to opset 11 with nothing folded (the forms are the witness: folded, a Scale's Flatten of a
    few values would be a constant); and the model itself."""
    nodes, initializers, outputs = [], [], []
    for name, scale in scales.items():
        initializers.append(onnx.numpy_helper.from_array(scale, f"{name}_weight"))
        read = f"{name}_weight"
        if via_identity:
            nodes.append(helper.make_node("Identity", [read], [f"{name}_read"], name=f"{name}_identity"))
            read = f"{name}_read"
        nodes.append(helper.make_node("LayerNormalization", ["x", read], [name], name=name, axis=-1))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, x_shape))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)], outputs, initializers
    )
    import lowering

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return lowering.lower(model, target_opset=11, ops=[], fold="none"), model


@slow_but_a_sample()
@pytest.mark.parametrize("via_identity", [False, True])
@pytest.mark.parametrize("x_shape", [[6], ["rows", 6]])
def test_a_converted_models_held_scale_shapes_decide_the_form_node_by_node(via_identity, x_shape):
    """Converting, a Scale an initializer holds (directly or through Identity) with one
    dimension goes unflattened; one of shape [1, N] beside it keeps Flatten and the Reshape
    (the nodes are of one kind but for that shape: a replay of the first must not serve the
    second, nor a replay of the second the third). The result runs, and matches the kernel, X
    of rank 1 included."""
    scales = {"flat": np.linspace(0.5, 2, 6, dtype=np.float32)}
    if len(x_shape) > 1:  # (onnxruntime's kernel refuses a Scale of higher rank than X)
        scales["wide"] = np.linspace(-1, 1, 6, dtype=np.float32).reshape(1, 6)
    scales["flat_again"] = np.linspace(2, 3, 6, dtype=np.float32)
    converted, original = _converted_layer_norms(scales, x_shape, via_identity)
    onnx.checker.check_model(converted, full_check=True)
    flattened = [n.input[0] for n in converted.graph.node if n.op_type == "Flatten"]
    assert len(flattened) == ("wide" in scales) and all(name.startswith("wide") for name in flattened)
    assert sum(n.op_type == "Reshape" for n in converted.graph.node) == ("wide" in scales)
    for shape in ([6],) if x_shape == [6] else ([3, 6], [1, 6]):
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        got, want = run_onnxruntime(converted, {"x": x}), run_onnxruntime(original, {"x": x})
        for got_one, want_one in zip(got, want, strict=True):
            assert got_one.shape == want_one.shape
            assert not layer_normalization().tolerance_for(TensorProto.FLOAT).mismatches(got_one, want_one).any()


@slow_but_a_sample()
@pytest.mark.parametrize(("shape", "axis"), [([2, 3, 4], 2), ([4], 0)])
@pytest.mark.parametrize("target", [10, 9])
def test_the_last_axis_by_its_number_goes_below_opset_11(shape, axis, target):
    """A last axis stated by its number is reduced by that number (a negative axis exists only
    from ReduceMean-11, as from Flatten-11): the model still goes to opsets 10 and 9, as ONNX's
    flattened body did, and matches the kernel."""
    import lowering

    original = layer_normalization_model(TensorProto.FLOAT, shape, axis=axis)
    for info in original.graph.input[1:]:
        original.graph.initializer.append(
            onnx.numpy_helper.from_array(np.linspace(0.5, 1.5, shape[-1], dtype=np.float32), info.name)
        )
    converted = lowering.lower(original, target_opset=target, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    assert not any(n.op_type in ("Flatten", "Reshape") for n in converted.graph.node)
    assert {tuple(a.ints) for n in converted.graph.node if n.op_type == "ReduceMean" for a in n.attribute} == {(axis,)}
    x = np.random.default_rng(9).standard_normal(shape).astype(np.float32)
    got, want = run_onnxruntime(converted, {"X": x})[0], run_onnxruntime(original, {"X": x})[0]
    assert not layer_normalization().tolerance_for(TensorProto.FLOAT).mismatches(got, want).any()


def test_in_an_if_branch_and_a_local_function_held_shapes_are_read_where_they_are_held():
    """A branch reading the main graph's 1-D initializers as Scale and B gets the unflattened
    body; a local function's LayerNormalization, whose Scale and B are the function's inputs
    (nothing holds them there), keeps ONNX's flattened form. Both converted to 11 match the
    kernel."""
    import lowering

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", 6])
    branch_out = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["rows", 6])
    then_branch = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["b"], name="in_branch")],
        "then",
        [],
        [branch_out],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b"], name="other")], "else", [], [branch_out]
    )
    function = helper.make_function(
        "local", "Norm", ["v", "s", "t"], ["w"],
        [helper.make_node("LayerNormalization", ["v", "s", "t"], ["w"], name="in_function")],
        [helper.make_opsetid("", 17)],
    )  # fmt: skip
    weights = [onnx.numpy_helper.from_array(np.linspace(0.5, 2, 6, dtype=np.float32), n) for n in ("scale", "bias")]
    graph = helper.make_graph(
        [
            helper.make_node("If", ["flag"], ["branched"], name="choose", then_branch=then_branch,
                             else_branch=else_branch),  # fmt: skip
            helper.make_node("Norm", ["branched", "scale", "bias"], ["y"], domain="local", name="call"),
        ],
        "g", [helper.make_tensor_value_info("flag", TensorProto.BOOL, []), x], [y], weights,
    )  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[function]
    )
    converted = lowering.lower(model, target_opset=11, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    branch_nodes = next(a.g for a in converted.graph.node[0].attribute if a.name == "then_branch").node
    assert not any(n.op_type in ("Flatten", "Reshape") for n in branch_nodes)
    assert {n.op_type for n in converted.functions[0].node} >= {"Flatten", "Reshape"}
    feeds = {"x": np.random.default_rng(4).standard_normal((3, 6)).astype(np.float32)}
    for flag in (True, False):
        feeds["flag"] = np.array(flag)
        got, want = run_onnxruntime(converted, feeds)[0], run_onnxruntime(model, feeds)[0]
        assert not layer_normalization().tolerance_for(TensorProto.FLOAT).mismatches(got, want).any()


# (h) float16 and bfloat16 computed in float32 (function_bodies.float32_widening)


def one_node_model(op_type: str, element_type: int, shapes: dict[str, list[int]], opset: int, **attributes):
    node = helper.make_node(op_type, list(shapes), ["Y"], name="op", **attributes)
    inputs = [helper.make_tensor_value_info(name, element_type, shape) for name, shape in shapes.items()]
    output = helper.make_tensor_value_info("Y", element_type, [None] * len(next(iter(shapes.values()))))
    return helper.make_model(
        helper.make_graph([node], "g", inputs, [output]), opset_imports=[helper.make_opsetid("", opset)]
    )


WIDENED = [
    ("Gelu", {"X": [3, 40]}, 20, {"approximate": "tanh"}),
    ("Softmax", {"X": [3, 40]}, 13, {}),
    ("Mish", {"X": [3, 40]}, 18, {}),
    ("Attention", {"Q": [1, 2, 4, 8], "K": [1, 2, 6, 8], "V": [1, 2, 6, 8]}, 23, {}),
    ("RMSNormalization", {"X": [3, 40], "scale": [40]}, 23, {}),
]


@pytest.mark.parametrize(("op_type", "shapes", "opset", "attributes"), WIDENED, ids=[w[0] for w in WIDENED])
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16], ids=["float16", "bfloat16"])
def test_a_narrow_node_is_its_float_body_rounded_once(op_type, shapes, opset, attributes, element_type):
    """Body(x16) = Cast(Body(Cast(x16, float)), float16): the lowered narrow model gives the bits
    of the lowered float model on the same values, each output rounded once (any NaN for a NaN),
    and runs in onnxruntime, which has no bfloat16 Mul or Add."""
    dtype = NUMPY_TYPES[element_type]
    narrow = one_node_model(op_type, element_type, shapes, opset, **attributes)
    wide = one_node_model(op_type, TensorProto.FLOAT, shapes, opset, **attributes)
    lowered_narrow = lowering.lower(narrow, ops=[op_type], strict=True)
    lowered_wide = lowering.lower(wide, ops=[op_type], strict=True)
    nodes = lowered_narrow.graph.node
    assert [n.op_type for n in nodes[: len(shapes)]] == ["Cast"] * len(shapes) and nodes[-1].op_type == "Cast"
    assert nodes[-1].attribute[0].i == element_type and nodes[-1].output[0] == "Y"
    rng = np.random.default_rng(len(op_type))
    feeds = {name: (rng.standard_normal(shape) * 3).astype(dtype) for name, shape in shapes.items()}
    feeds[next(iter(shapes))].reshape(-1)[:4] = [np.inf, -np.inf, np.nan, -0.0]
    (got,) = run_onnxruntime(lowered_narrow, feeds)
    (wanted,) = run_onnxruntime(lowered_wide, {name: value.astype(np.float32) for name, value in feeds.items()})
    want = wanted.astype(dtype)
    assert got.dtype == dtype and np.array_equal(np.isnan(got), np.isnan(want))
    bits = np.uint16
    assert np.array_equal(got.view(bits)[~np.isnan(got)], want.view(bits)[~np.isnan(want)])


@pytest.mark.parametrize(
    ("op_type", "opset", "attributes"),
    [("Relu", 14, {}), ("LeakyRelu", 16, {"alpha": 0.1}), ("ThresholdedRelu", 22, {"alpha": 0.5})],
)
def test_ops_that_only_compare_select_or_round_once_keep_their_type_bit_for_bit(op_type, opset, attributes):
    """NOT_WIDENED: their float16 body, in float16, gives onnxruntime's kernel's bits on every
    float16 pattern but NaNs (its Relu quiets a signalling NaN, the body's Max keeps it)."""
    model = one_node_model(op_type, TensorProto.FLOAT16, {"X": [1 << 16]}, opset, **attributes)
    lowered = lowering.lower(model, ops=[op_type], strict=True)
    assert not [n for n in lowered.graph.node if n.op_type == "Cast" and "X" in n.input]
    every = {"X": np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)}
    (got,) = run_onnxruntime(lowered, every)
    (want,) = run_onnxruntime(model, every)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got.view(np.uint16)[~np.isnan(got)], want.view(np.uint16)[~np.isnan(want)])


def test_outputs_of_another_constraint_keep_their_type():
    """LayerNormalization's Mean and InvStdDev are of its U constraint (float here): only Y, of
    X's type, is cast back to float16."""
    original = layer_normalization_model(TensorProto.FLOAT16, [2, 8], outputs=("Y", "Mean", "InvStdDev"))
    lowered = lowering.lower(original, ops=["LayerNormalization"], strict=True)
    back = [n.output[0] for n in lowered.graph.node if n.op_type == "Cast" and n.attribute[0].i == TensorProto.FLOAT16]
    assert back == ["Y"]
    feeds = {"X": np.linspace(-3, 3, 16, dtype=np.float16).reshape(2, 8), "Scale": np.ones(8, np.float16)}
    feeds["B"] = np.zeros(8, np.float16)
    got = run_onnxruntime(lowered, feeds)
    assert [g.dtype for g in got] == [np.float16, np.float32, np.float32]


def test_castlike_to_a_narrow_type_is_not_widened():
    """CastLike(x: double, like: float16) stays one Cast from double to float16: through float32 a
    value would be rounded twice (1 + 2^-11 + 2^-30 goes to 1 so, to 1 + 2^-10 direct); how the
    one Cast rounds is the runtime's (onnxruntime's own goes through float32)."""
    node = helper.make_node("CastLike", ["X", "L"], ["Y"])
    inputs = [
        helper.make_tensor_value_info("X", TensorProto.DOUBLE, [1]),
        helper.make_tensor_value_info("L", TensorProto.FLOAT16, [1]),
    ]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    lowered = lowering.lower(model, ops=["CastLike"], strict=True)
    assert [(n.op_type, list(n.input), n.attribute[0].i) for n in lowered.graph.node] == [
        ("Cast", ["X"], TensorProto.FLOAT16)
    ]


def test_a_narrow_node_in_an_if_branch_or_a_local_function_is_widened_too():
    """A float16 Gelu in both branches of an If and in a local function's body: each computed in
    float32 between a Cast to float and one back, with the bits of the same node lowered in the
    main graph."""
    model = one_node_model("Gelu", TensorProto.FLOAT16, {"X": [3, 40]}, 20)
    x = (np.random.default_rng(20).standard_normal([3, 40]) * 3).astype(np.float16)
    (want,) = run_onnxruntime(lowering.lower(model, ops=["Gelu"], strict=True), {"X": x})
    for label, nested in nested_forms(model).items():
        lowered = lowering.lower(nested, ops=["Gelu"], strict=True)
        held = [attribute.g for node in lowered.graph.node for attribute in node.attribute if attribute.g.node]
        bodies = [*held, *lowered.functions]
        casts = [n.attribute[0].i for body in bodies for n in body.node if n.op_type == "Cast"]
        assert casts == [TensorProto.FLOAT, TensorProto.FLOAT16] * len(bodies), label
        (got,) = run_onnxruntime(lowered, {"X": x, "branch": np.array(True)})
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16)), label
