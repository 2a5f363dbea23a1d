"""Every rule at every opset from the op's first to the newest, every input type, every
attribute combination: valid at full check, runs in onnxruntime, bit-identical answers
(every bit pattern for 8/16-bit types, edge values plus random patterns for wider ones)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import support
from support import (
    every_op_case,
    oracle,
    runs_in_onnxruntime,
    slow_but_a_sample,  # noqa: E402
    type_name,
    unary_model,
)

import lowering
from lowering.registry import all_rules
from lowering.samples import sample_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime, run_reference

# Ops whose rule is checked on more than one input, or on matrices, by a test of its own: below
# (Trilu), in tests/rules/test_cumprod_einsum.py (CumProd, Einsum), in
# tests/rules/versions/test_adapters_quantize_scatter.py (TensorScatter), in tests/rules/test_bitwise.py
# (BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot), in tests/rules/test_col2im_lowering.py (Col2Im), in
# tests/rules/test_dft_stft_lowering.py (DFT, STFT), in tests/rules/test_gridsample_lowering.py
# (GridSample), in tests/rules/test_deformconv_lowering.py (DeformConv), in
# tests/rules/test_resize_policies.py (Resize), in tests/rules/test_gathernd_lowering.py (GatherND), in
# tests/rules/test_flatten_lowering.py (Flatten), in tests/rules/test_onehot_lowering.py (OneHot), in
# tests/rules/test_reverse_sequence_lowering.py (ReverseSequence), in
# tests/rules/test_maxunpool_lowering.py (MaxUnpool), in tests/rules/test_integer_products.py
# (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), in
# tests/rules/test_lp_normalization_lowering.py (LpNormalization), in
# tests/rules/test_batch_normalization_lowering.py (BatchNormalization), in
# tests/rules/test_instance_normalization_lowering.py (InstanceNormalization), in
# tests/rules/test_bitshift_lowering.py (BitShift), in tests/rules/test_compress_lowering.py (Compress), in
# tests/rules/test_size_lowering.py (Size: its output is an int64 count, not of the input's type), in
# tests/rules/test_tfidf_vectorizer_lowering.py (TfIdfVectorizer: rows counted against a pool of n-grams), in
# tests/rules/test_hardmax_lowering.py (Hardmax: a one-hot of x's type along an axis), in
# tests/rules/test_hyperbolic_lowering.py (Sinh, Cosh, Asinh, Acosh, Atanh: within a stated tolerance), in
# tests/rules/test_det_lowering.py (Det: matrices), in tests/rules/test_roialign_lowering.py (RoiAlign),
# in tests/rules/test_unique_lowering.py (Unique: four outputs), in tests/rules/test_pad_lowering.py (Pad),
# in tests/rules/test_empty_reduction_lowering.py (ReduceMax, ReduceMin: x of no element only), in
# tests/rules/test_unsqueeze_tile_lowering.py (Unsqueeze, Tile), in tests/rules/test_nonzero_lowering.py
# (NonZero: int64 coordinates, not of the input's type).
SHAPED = {
    "Pad",
    "Unsqueeze",
    "Tile",
    "ReduceMax",
    "ReduceMin",
    "Trilu",
    "Resize",
    "CumProd",
    "Einsum",
    "TensorScatter",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "Col2Im",
    "DFT",
    "STFT",
    "GridSample",
    "DeformConv",
    "RoiAlign",
    "Unique",
    "GatherND",
    "Flatten",
    "OneHot",
    "ReverseSequence",
    "MaxUnpool",
    "MatMulInteger",
    "ConvInteger",
    "QLinearMatMul",
    "QLinearConv",
    "LpNormalization",
    "BatchNormalization",
    "InstanceNormalization",
    "BitShift",
    "Compress",
    "Size",
    "TfIdfVectorizer",
    "Hardmax",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "Det",
    "NonZero",
}

# Every element-wise rule (one input, a bool answer per element) that states its reference, from
# the registry: a new one is tested without a line here.
CASES = [
    (rule.op_type, opset, element_type, attributes)
    for rule in all_rules()
    if rule.reference is not None and rule.op_type not in SHAPED
    for opset, element_type in every_op_case(rule.op_type)
    for attributes in rule.attribute_combinations()
]


def test_every_rule_states_its_reference_or_depends_on_the_graph():
    for rule in all_rules():
        assert rule.reference is not None or rule.emits is not None, f"{rule.op_type}: no reference to check it by"
        if rule.op_type not in SHAPED and rule.reference is not None:
            schema = onnx.defs.get_schema(rule.op_type, max(rule.since_versions), rule.domain)
            assert len(schema.inputs) == 1, f"{rule.op_type} takes more than one input: give it a test in SHAPED"
    assert {case[0] for case in CASES} >= {"IsNaN", "IsInf"}
    assert SHAPED <= {rule.op_type for rule in all_rules()}


def _case_id(case) -> str:
    op_type, opset, element_type, attributes = case
    flags = "".join(f"_{k[7:10]}{v}" for k, v in attributes.items())
    return f"{op_type}-opset{opset}-{type_name(element_type)}{flags}"


@slow_but_a_sample()
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_lowering_is_exact(case):
    op_type, opset, element_type, attributes = case
    original = unary_model(op_type, opset, element_type, **attributes)
    result = lowering.lower_model(original)

    lowered = result.model
    onnx.checker.check_model(lowered, full_check=True)
    assert all(node.op_type != op_type for node in lowered.graph.node)
    assert result.report.complete and sum(result.report.rewritten.values()) == 1
    assert lowered.opset_import == original.opset_import

    values = sample_values(element_type)
    expected = oracle(op_type, values, **attributes)
    (got,) = run_onnxruntime(lowered, {"x": values})
    assert got.dtype == np.bool_
    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, (
        f"{mismatches.size} mismatches, first at bits {values[mismatches[:3]].view(f'u{values.itemsize}')}"
    )

    native = runs_in_onnxruntime(original, {"x": values})
    reference = native if native is not None else run_reference(original, {"x": values})
    assert np.array_equal(reference[0], got)


# -- Trilu: matrices, a diagonal k, upper or lower -------------------------------------------------

# Where (which the rule selects with) runs in onnxruntime's CPU provider on these; bool goes by And.
TRILU_LOWERED = frozenset(
    {
        onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.INT8, onnx.TensorProto.INT32,
        onnx.TensorProto.INT64, onnx.TensorProto.UINT8, onnx.TensorProto.UINT32, onnx.TensorProto.BOOL,
    }
)  # fmt: skip
TRILU_DIAGONALS = (None, 0, 1, -1, 3, -4, 2**62, -(2**62))
TRILU_CASES = [(opset, t) for opset, t in every_op_case("Trilu")] + [
    (opset, onnx.TensorProto.FLOAT)
    for opset in (11, 12, 13)  # below 14: the fallback of conversion
]


def trilu_model(opset: int, element_type: int, *, upper: int) -> onnx.ModelProto:
    """``y = Trilu(x, k, upper)`` at ``opset`` (14 where it is below: the model is then converted)."""
    node = onnx.helper.make_node("Trilu", ["x", "k"], ["y"], name="trilu_node", upper=upper)
    return support.make_model(
        [node],
        [
            onnx.helper.make_tensor_value_info("x", element_type, ["B", "N", "M"]),
            onnx.helper.make_tensor_value_info("k", onnx.TensorProto.INT64, []),
        ],
        [onnx.helper.make_tensor_value_info("y", element_type, ["B", "N", "M"])],
        opset=max(opset, 14),
    )


def trilu_samples(element_type: int) -> list[np.ndarray]:
    """Matrices of every sample value of the type (every bit pattern for 8/16-bit floats: NaN
    payloads and -0 among them), batched as [B, 37, 53], and empty and one-element shapes."""
    dtype = onnx.helper.tensor_dtype_to_np_dtype(element_type)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        values = np.concatenate([np.array([info.min, info.max, 0, 1], dtype), np.arange(-50, 50).astype(dtype)])
    else:
        values = sample_values(element_type)
    batches = -(-values.size // (37 * 53))
    return [np.resize(values, (batches, 37, 53)), np.resize(values, (2, 53, 7)), values[:0].reshape(2, 0, 3)]


def bits(array: np.ndarray) -> np.ndarray:
    return array if array.dtype == np.bool_ else array.view(f"u{array.itemsize}")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("opset", "element_type"), TRILU_CASES, ids=[f"opset{o}-{type_name(t)}" for o, t in TRILU_CASES]
)
def test_trilu_lowering_is_exact(opset, element_type):
    from lowering.rules.trilu import trilu_reference

    for upper in (1, 0):
        original = trilu_model(opset, element_type, upper=upper)
        if opset < 14:  # not requested: Trilu does not exist at the target, so it is decomposed
            result = lowering.lower_model(original, target_opset=opset, ops=[])
        else:
            result = lowering.lower_model(original, ops=["Trilu"])
        if element_type not in TRILU_LOWERED:
            assert not result.report.complete, type_name(element_type)
            assert any(node.op_type == "Trilu" for node in result.model.graph.node)
            continue
        lowered = result.model
        onnx.checker.check_model(lowered, full_check=True)
        assert all(node.op_type != "Trilu" for node in lowered.graph.node)
        assert dict(result.report.rewritten) == {"Trilu-14": 1}
        lowered_runner, original_runner = OnnxruntimeRunner(lowered), support.onnxruntime_runner(original)
        for x in trilu_samples(element_type):
            for k in TRILU_DIAGONALS:
                feeds = {"x": x, "k": np.array(0 if k is None else k, np.int64)}
                expected = trilu_reference(x, feeds["k"], upper=upper)
                (got,) = lowered_runner(feeds)
                where = f"upper={upper} k={k} shape={x.shape}"
                assert got.dtype == expected.dtype and got.shape == expected.shape, where
                mismatches = np.flatnonzero(bits(got).reshape(-1) != bits(expected).reshape(-1))
                assert mismatches.size == 0, f"{where}: {mismatches.size} mismatches, first at {mismatches[:3]}"
                native = original_runner(feeds)
                if native is not None:
                    assert np.array_equal(bits(native[0]), bits(got)), where


def test_trilu_without_k_is_the_main_diagonal():
    node = onnx.helper.make_node("Trilu", ["x"], ["y"], upper=0)
    model = support.make_model(
        [node],
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4, 6])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 6])],
        opset=14,
    )
    x = np.arange(1, 25, dtype=np.float32).reshape(4, 6) * -1.0
    (got,) = run_onnxruntime(lowering.lower(model, target_opset=11, ops=[]), {"x": x})
    assert np.array_equal(got, np.tril(x))
