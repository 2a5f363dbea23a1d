"""The ONNX project's own backend node tests for the ops we lower, run on the lowered models:
each output as onnxruntime gives it for the original (the op's kernel is what the lowered model
must mean), or, where it cannot run the original, the case's expected output."""

from __future__ import annotations

import functools

import numpy as np
import onnx
import pytest
from support import runs_in_onnxruntime, slow_but_a_sample, unread_nodes  # noqa: E402
from version_cases import node_cases

import lowering
from lowering.registry import all_rules
from lowering.verification.runtime import run_reference

OPTIONAL_GRAPH_INPUT = "is an optional input of graph"
# Cases a rule leaves, and the reason the report gives (tests/rules/test_cumprod_einsum.py checks more).
REFUSED = {
    "test_melweightmatrix": "given at run time",  # only constant inputs are computed
    # (onnxruntime checks a fed output_shape against X's shape as it runs: rules/maxunpool.py takes a constant one)
    "test_maxunpool_export_with_output_shape": "output_shape is given at run time",
    # (Scan-8 at its own opset 8, whose Constant holds no int64 index: unrolled on the way to 9 and
    # later, tests/rules/test_scan_lowering.py)
    "test_scan_sum": "Constant holds from opset 9",
    # (at opset 10 QLinearConv's rule writes QuantizeLinear, requested here too, whose rule needs Round:
    # tests/rules/test_integer_products.py lowers this case with QuantizeLinear kept)
    "test_qlinearconv": "Round, which exists from opset 11",
}
# Resize-19 cases the rule leaves, by a word of their name: it lowers modes linear and cubic in
# every coordinate mode but align_corners, and mode nearest with constant scales or sizes
# (tests/rules/test_resize_policies.py, tests/rules/test_nearest_points.py).
RESIZE_LEFT = {  # (the first word a case's name holds gives its reason)
    "nearest": "constant scales or sizes of X of a static shape",  # (their scales or sizes are the cases' inputs)
}


# Ops whose rule lowers some of their forms only (ScatterND and ScatterElements: those with a
# reduction; Pad: constant pads), requested in their own cases only: elsewhere an expansion that
# writes them (TensorScatter's ScatterElements, Col2Im's Pad of an image shape fed at run time)
# could not be lowered at all.
SOME_FORMS_LOWERED = {"ScatterND", "ScatterElements", "Pad"}
# Ops whose rule is requested in their own cases only (rules/unsqueeze.py): elsewhere their nodes are
# those of function bodies, of inputs of unknown rank (AffineGrid's, RotaryEmbedding's).
OWN_CASES_ONLY = {"Unsqueeze", "Tile"}
# Ops whose rule lowers a reduction of no element only (rules/empty_reduction.py), requested in the
# cases of an empty set only: elsewhere they are primitives (Softmax's body writes ReduceMax).
EMPTY_SET_ONLY = {"ReduceMax", "ReduceMin"}
# Ops whose rule lowers a node of one operand only (rules/single_operand.py), requested in the
# cases of one input only: elsewhere they compute (a Max of two), as in the nodes rules write.
ONE_OPERAND_ONLY = {rule.op_type for rule in all_rules() if rule.most_inputs == 1}

# Cases whose original onnxruntime runs otherwise than the spec says, or refuses: the case's
# expected output is the oracle. Its ConvInteger takes no zero point per output channel
# ("Non per-tensor quantization is not supported now"); its ReduceMax of no bool fails ("not defined
# for empty set with bool type").
ONNXRUNTIME_ORIGINAL_WRONG = {"test_convinteger_with_padding", "test_reduce_max_empty_set_bool"}
# Cases whose expected output reads the spec otherwise than onnxruntime, whose meaning a rule
# keeps: onnxruntime's original is the oracle, within the rule's stated tolerance. Resize with
# align_corners and scales places its points by (d - 1) / (o - 1), o the output's length, where
# the backend's reference takes o as s · d (rules/resize.py). The AveragePool case's expected
# outputs are written to four decimals (0.1511 for 0.15105554), coarser than the rule's tolerance.
READ_AS_ONNXRUNTIME = {"test_resize_downsample_scales_linear_align_corners",
                       "test_resize_downsample_scales_cubic_align_corners",
                       "test_averagepool_2d_ceil_last_window_starts_on_pad"}  # fmt: skip

# BitCast cases the rule leaves: a float's bits, which no Cast keeps (rules/bitcast.py).
BITCAST_LEFT = ("float32", "float64")
# QuantizeLinear and DequantizeLinear cases their rules leave, by a word of their name: float8,
# 4- and 2-bit types, which no formula of 8- and 16-bit integers says (rules/quantize_linear.py).
QUANTIZE_LEFT = ("e4m3fn", "e5m2", "int4", "int2", "float4e2m1")


def _refused_because(name: str) -> str | None:
    if name in REFUSED:
        return REFUSED[name]
    if name.startswith("test_bitcast_") and any(word in name for word in BITCAST_LEFT):
        return "reinterprets bits no Cast keeps"
    if name.startswith(("test_quantizelinear_", "test_dequantizelinear_")) and any(w in name for w in QUANTIZE_LEFT):
        return "not an 8- or 16-bit integer"
    if name in ("test_constant_pad", "test_constant_pad_axes", "test_constant_pad_negative_axes", "test_edge_pad",
                "test_reflect_pad", "test_wrap_pad") or name.startswith("test_center_crop_pad_"):  # fmt: skip
        return "the pads are given at run time"  # (rules/pad.py copies along axes of constant pads)
    if name in ("test_attention_4d_padded_kv_bf16_expanded", "test_attention_4d_causal_padded_kv_bf16_expanded"):
        return "the target runs no Expand on bfloat16"  # (its Pad: onnxruntime expands no bfloat16)
    if name in ("test_tile", "test_tile_precomputed"):  # (opset 13, repeats fed: a repeat may be 0)
        return "below opset 14 Reshape reads a 0"
    if name.startswith("test_resize_"):
        return next((reason for word, reason in RESIZE_LEFT.items() if word in name), None)
    if name in ("test_scatternd", "test_scatter_elements_with_axis", "test_scatter_elements_without_axis",
                "test_scatter_elements_with_negative_indices"):  # fmt: skip
        return "no reduction: every update is written as it is"
    return None


def _requested(model: onnx.ModelProto, name: str) -> set[str]:
    """Every op a rule owns, but those of SOME_FORMS_LOWERED that the case's graph does not hold,
    those of EMPTY_SET_ONLY outside the cases of an empty set, those of OWN_CASES_ONLY outside
    their own cases and those of ONE_OPERAND_ONLY outside the cases of one input."""
    held = {node.op_type for node in model.graph.node}
    empty_set = EMPTY_SET_ONLY if "empty_set" in name else set()
    own = {op_type for op_type in OWN_CASES_ONLY if name.startswith(f"test_{op_type.lower()}")}
    one_operand = ONE_OPERAND_ONLY if name.endswith("_one_input") else set()
    requested = {rule.op_type for rule in all_rules()} - (SOME_FORMS_LOWERED - held) - (EMPTY_SET_ONLY - empty_set)
    return requested - (OWN_CASES_ONLY - own) - (ONE_OPERAND_ONLY - one_operand)


@functools.lru_cache(maxsize=1)
def _cases():
    all_cases = node_cases()
    covered = {rule.op_type for rule in all_rules()}
    return [case for case in all_cases if any(node.op_type in covered for node in case.model.graph.node)]


CASE_NAMES = [case.name for case in _cases()]


def test_backend_cases_are_found():
    expected = {"test_isnan", "test_isinf", "test_isinf_positive", "test_isinf_negative"}
    expected |= {"test_optional_has_element_empty_no_input_tensor_input", "test_optional_get_element_sequence"}
    assert expected <= set(CASE_NAMES)


def _has_optional_graph_input(model: onnx.ModelProto) -> bool:
    return any(info.type.WhichOneof("value") == "optional_type" for info in model.graph.input)


@slow_but_a_sample()
@pytest.mark.parametrize("name", CASE_NAMES)
def test_backend_case_lowered(name):
    (case,) = [case for case in _cases() if case.name == name]
    # every op a rule owns is requested: the seed ops are lowered by default, the others (Trilu) asked for
    requested = _requested(case.model, name)
    result = lowering.lower_model(case.model, ops=sorted(requested))
    if _has_optional_graph_input(case.model):
        # Only the caller decides an optional graph input: the op stays, and the report says why.
        assert result.report.remaining and all(OPTIONAL_GRAPH_INPUT in r.reason for r in result.report.remaining)
        assert result.model.SerializeToString() == case.model.SerializeToString()
        return
    refused = _refused_because(name)
    if refused is not None:
        assert any(refused in r.reason for r in result.report.remaining), result.report.lines()
        return
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    lowered_ops = {node.op_type for node in result.model.graph.node}
    assert not lowered_ops & (requested | {"Optional"})
    original_values = {name for node in case.model.graph.node for name in node.output}  # (an _expanded case's own)
    graph = result.model.graph
    unread = [
        n.op_type
        for n in unread_nodes(graph.node, [o.name for o in graph.output])
        if not original_values & set(n.output)
    ]
    # (a constant shared across the graph may stay where its reader was left out)
    assert set(unread) <= {"Constant"}, f"nodes the lowering wrote that nothing reads: {unread}"
    assert case.data_sets
    for inputs, expected_outputs in case.data_sets:
        feeds = {info.name: _fed(value) for info, value in zip(case.model.graph.input, inputs, strict=True)}
        outputs = runs_in_onnxruntime(result.model, feeds)
        original = runs_in_onnxruntime(case.model, feeds) if name not in ONNXRUNTIME_ORIGINAL_WRONG else None
        if outputs is None:  # an op of the original's own, which onnxruntime cannot run either (bfloat16 Mul)
            assert original is None
            outputs = run_reference(result.model, feeds)
        # (an output numpy cannot hold as it is, int16 among them in some cases, is a TensorProto)
        expected_outputs = [_as_array(e) for e in expected_outputs]
        if not _stated_tolerance(case.model, expected_outputs[0]) or name in READ_AS_ONNXRUNTIME:
            expected_outputs = original or expected_outputs  # (a stated tolerance is against the expected)
        for got, expected in zip(outputs, expected_outputs, strict=True):
            if isinstance(expected, list):
                assert len(got) == len(expected)
                for got_item, expected_item in zip(got, expected, strict=True):
                    np.testing.assert_array_equal(got_item, expected_item)
            else:
                _assert_as_stated(case.model, got, expected)


def _as_array(value):
    return onnx.numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else value


def _fed(value):
    """A case's input as onnxruntime takes it (a numpy scalar as a 0-D array)."""
    return np.asarray(value) if isinstance(value, np.generic) else value


def _stated_tolerance(model: onnx.ModelProto, expected):
    """The tolerance a rule of the model's ops states for the expected output's type, or None."""
    if not isinstance(expected, np.ndarray):
        return None
    tolerances = [
        rule.tolerance.get(onnx.helper.np_dtype_to_tensor_dtype(expected.dtype))
        for rule in all_rules()
        if rule.tolerance and any(node.op_type == rule.op_type for node in model.graph.node)
    ]
    return next((t for t in tolerances if t is not None), None)


def _assert_as_stated(model: onnx.ModelProto, got: np.ndarray, expected: np.ndarray) -> None:
    """Bit for bit, or within the tolerance a rule states for the type (Einsum's sums)."""
    stated = _stated_tolerance(model, expected)
    if stated is None:
        np.testing.assert_array_equal(got, expected)
    else:
        assert got.dtype == expected.dtype and got.shape == expected.shape
        assert not stated.mismatches(got, expected).any()
