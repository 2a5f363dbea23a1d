"""Lowering to a target opset, down and up: every owned op, source opset, target opset and
type, checked at the target and compared bit for bit in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest
from support import (
    oracle,
    parse,
    slow_but_a_sample,  # noqa: E402
    type_name,
    unary_model,
)

import lowering
from lowering import schemas
from lowering.conversion.version_steps import lowest_opset_for_type
from lowering.opcount import count_ops
from lowering.samples import sample_values
from lowering.schemas import default_opset
from lowering.verification.runtime import run_onnxruntime

NEWEST = schemas.newest_opset()
TARGETS = range(9, NEWEST + 1)


def _sources(op_type: str) -> list[int]:
    """The first opset of every version of the op, and the newest."""
    return sorted({*schemas.op_versions(op_type), NEWEST})


def _matrix():
    cases = []
    for op_type, flag_sets in (("IsNaN", [{}]), ("IsInf", [{}, {"detect_negative": 0}])):
        for source in _sources(op_type):
            for element_type in sorted(schemas.input_element_types(op_type, source)):
                for flags in flag_sets:
                    cases.append((op_type, source, element_type, flags))
    return cases


MATRIX = _matrix()


def _id(case) -> str:
    op_type, source, element_type, flags = case
    return f"{op_type}-from{source}-{type_name(element_type)}{'-pos' if flags else ''}"


def declared_opset(model: onnx.ModelProto) -> int:
    return default_opset(model.opset_import)


@slow_but_a_sample()
@pytest.mark.parametrize("case", MATRIX, ids=[_id(c) for c in MATRIX])
@pytest.mark.parametrize("ops", [None, []], ids=["lower", "keep"])
def test_every_target_opset(case, ops):
    op_type, source, element_type, flags = case
    original = unary_model(op_type, source, element_type, **flags)
    values = sample_values(element_type)
    expected = oracle(op_type, values, **flags)
    for target in TARGETS:
        lowest = lowest_opset_for_type(element_type)
        if target < lowest:
            with pytest.raises(lowering.LoweringError, match=f"value 'x' has type {type_name(element_type)}.*{lowest}"):
                lowering.lower(original, target_opset=target, ops=ops)
            continue
        result = lowering.lower_model(original, target_opset=target, ops=ops)
        lowered = result.model
        assert declared_opset(lowered) == target
        assert lowered.ir_version >= onnx.helper.find_min_ir_version_for([onnx.helper.make_opsetid("", target)])
        onnx.checker.check_model(lowered, full_check=True)
        kept = count_ops(lowered)[op_type]
        exists = schemas.version_in_force(op_type, target) is not None
        if ops is None or not exists:
            assert kept == 0, f"{op_type} must be lowered at opset {target}"
        (got,) = run_onnxruntime(lowered, {"x": values})
        mismatches = np.flatnonzero(got != expected)
        assert mismatches.size == 0, f"target {target}: {mismatches.size} mismatches"


# -- what onnx.version_converter gets wrong, as regression cases -----------------------------


@pytest.mark.parametrize("target", [11, 10, 9])
def test_isnan_20_down_to_11_10_9(target):
    model = unary_model("IsNaN", 20, onnx.TensorProto.FLOAT)
    with pytest.raises(RuntimeError, match="No Adapter"):
        onnx.version_converter.convert_version(model, target)
    for ops in (None, []):
        lowered = lowering.lower(model, target_opset=target, ops=ops)
        onnx.checker.check_model(lowered, full_check=True)
        values = sample_values(onnx.TensorProto.FLOAT)
        np.testing.assert_array_equal(run_onnxruntime(lowered, {"x": values})[0], np.isnan(values))


def test_an_op_onnx_converter_has_no_adapter_for_is_refused_in_words():
    """Or-7 at opset 5 (Or-1 broadcasts only as its ``broadcast`` attribute says): onnx's converter
    fails with ``adapter_lookup: Assertion `false` failed: No Adapter For Or``; the refusal names
    the node, the op's version and both opsets, and says why in words."""
    model = onnx.parser.parse_model("""
        <ir_version: 8, opset_import: ["" : 17]>
        main (bool[N] a, bool[N] b) => (bool[N] y) { y = Or (a, b) }
    """)
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(model, target_opset=5, ops=[])
    message = str(refused.value)
    assert message.endswith("onnx's version converter cannot take Or-7 from opset 17 to 5 (it has no adapter for Or)")
    assert "Assertion" not in message and "adapter_lookup" not in message


def test_isinf_20_down_to_9_has_no_previous_version_in_onnx():
    model = unary_model("IsInf", 20, onnx.TensorProto.DOUBLE)
    with pytest.raises(RuntimeError):
        onnx.version_converter.convert_version(model, 9)
    result = lowering.lower_model(model, target_opset=9, ops=[])
    assert "IsInf" not in count_ops(result.model) and result.report.rewritten == {"IsInf-20": 1}
    values = sample_values(onnx.TensorProto.DOUBLE)
    np.testing.assert_array_equal(run_onnxruntime(result.model, {"x": values})[0], np.isinf(values))


@pytest.mark.parametrize("element_type", [onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16])
def test_isinf_on_16_bit_types_below_20_is_lowered_not_fed_through_a_cast(element_type):
    """IsInf-10 takes no 16-bit floats, and a Cast to float32 in front of it is not safe:
    onnxruntime may drop it after float16 arithmetic and hand IsInf an unrounded value
    (tests/rules/test_overflow_in_runtime.py), so the node is lowered with float16's own bound."""
    model = unary_model("IsInf", 20, element_type)
    result = lowering.lower_model(model, target_opset=13, ops=[])
    assert count_ops(result.model)["IsInf"] == 0
    assert result.report.rewritten == {"IsInf-20": 1} and not result.report.adapted
    values = sample_values(element_type)
    np.testing.assert_array_equal(run_onnxruntime(result.model, {"x": values})[0], oracle("IsInf", values))


def test_isnan_on_float8_below_20_still_goes_behind_an_exact_cast():
    """IsNaN answers an unrounded wider value as its rounding (NaN stays NaN), so the Cast is safe."""
    model = unary_model("IsNaN", 20, onnx.TensorProto.FLOAT8E4M3FN)
    result = lowering.lower_model(model, target_opset=19, ops=[])
    assert count_ops(result.model)["IsNaN"] == 1 and count_ops(result.model)["Cast"] == 1
    assert not result.report.rewritten and result.report.adapted == {"IsNaN-20→13 via Cast to float16": 1}


@pytest.mark.parametrize(
    "op_type, attributes", [("LpNormalization", {}), ("Sinh", {}), ("MaxUnpool", {"kernel_shape": [2]})]
)
def test_an_op_giving_its_input_type_is_lowered_not_kept_behind_a_widening_cast(op_type, attributes):
    """A bfloat16 node at 22 taken to 21, whose version there takes no bfloat16 and whose answer
    is of its input's type: a Cast to float before it would leave it giving float where the graph
    declares bfloat16 (the checker refuses such a model), so it is lowered, and the model checks."""
    inputs = [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.BFLOAT16, [1, 1, 4])]
    given = ["x"]
    if op_type == "MaxUnpool":
        inputs.append(onnx.helper.make_tensor_value_info("i", onnx.TensorProto.INT64, [1, 1, 4]))
        given.append("i")
    node = onnx.helper.make_node(op_type, given, ["y"], **attributes)
    output = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.BFLOAT16, [None, None, None])
    model = onnx.helper.make_model(onnx.helper.make_graph([node], "g", inputs, [output]),
                                   opset_imports=[onnx.helper.make_opsetid("", 22)])  # fmt: skip
    result = lowering.lower_model(model, target_opset=21, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert count_ops(result.model)[op_type] == 0 and result.report.rewritten == {f"{op_type}-22": 1}
    assert not any("via Cast" in key for key in result.report.adapted)


def test_optional_has_element_on_a_tensor_goes_below_18():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (bool has) { has = OptionalHasElement (x) }
    """)
    with pytest.raises((RuntimeError, onnx.checker.ValidationError, onnx.shape_inference.InferenceError)):
        converted = onnx.version_converter.convert_version(model, 15)
        onnx.checker.check_model(converted, full_check=True)
    for target in (9, 15, 17):
        lowered = lowering.lower(model, target_opset=target, ops=[])
        onnx.checker.check_model(lowered, full_check=True)
        assert bool(run_onnxruntime(lowered, {"x": np.zeros(2, np.float32)})[0])


def test_isnan_13_bfloat16_becomes_runnable():
    model = unary_model("IsNaN", 13, onnx.TensorProto.BFLOAT16)
    values = sample_values(onnx.TensorProto.BFLOAT16)
    for target, ops in ((13, []), (13, None), (20, []), (NEWEST, [])):
        result = lowering.lower_model(model, target_opset=target, ops=ops)
        np.testing.assert_array_equal(run_onnxruntime(result.model, {"x": values})[0], oracle("IsNaN", values))
    kept_at_13 = lowering.lower_model(model, target_opset=13, ops=[])
    assert "IsNaN" not in count_ops(kept_at_13.model), "onnxruntime has no IsNaN-13 bfloat16 kernel: lowered"
    assert count_ops(lowering.lower(model, target_opset=20, ops=[]))["IsNaN"] == 1, "IsNaN-20 runs bfloat16"


# -- mixed graphs ----------------------------------------------------------------------------------

MIXED = """
    <ir_version: 8, opset_import: ["" : 13]>
    main (float[N, 1] x, bool c) => (float[N] clean, bool[N] bad, float total) {
        axes = Constant <value = int64[1] {1}> ()
        flat = Squeeze (x, axes)
        nan = IsNaN (flat)
        inf = IsInf <detect_negative = 0> (flat)
        bad = Or (nan, inf)
        zero = Constant <value = float {0.0}> ()
        clean = Where (bad, zero, flat)
        total = If (c) <
            then_branch = sum_graph () => (float s) { s = ReduceSum <keepdims = 0> (clean) },
            else_branch = negated_graph () => (float m) {
                negated = Neg (clean)
                m = ReduceSum <keepdims = 0> (negated)
            }
        >
    }
"""


@slow_but_a_sample()
@pytest.mark.parametrize("target", [9, 10, 11, 12, 14, 16, 18, 20, NEWEST])
@pytest.mark.parametrize("ops", [None, []], ids=["lower", "keep"])
def test_mixed_graph_whose_other_ops_change_version(target, ops):
    model = parse(MIXED)
    result = lowering.lower_model(model, target_opset=target, ops=ops)
    lowered = result.model
    onnx.checker.check_model(lowered, full_check=True)
    assert declared_opset(lowered) == target
    x = sample_values(onnx.TensorProto.FLOAT, random_count=500).reshape(-1, 1)
    for condition in (True, False):
        feeds = {"x": x, "c": np.array(condition)}
        want = run_onnxruntime(model, feeds)
        got = run_onnxruntime(lowered, feeds)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("target", [9, 10, 12])
def test_mixed_graph_with_squeeze_axes_computed_at_run_time_goes_to_11_and_fails_below_naming_the_node(target):
    """Squeeze-13's axes computed at run time choose between Squeeze-11 nodes by If from opset
    11; below, where If's branches must give one shape, the whole call fails, nothing
    half-converted."""
    model = parse(
        MIXED.replace("bool c)", "bool c, int64[1] axes)").replace("axes = Constant <value = int64[1] {1}> ()", "")
    )
    if target >= 11:
        lowered = lowering.lower(model, target_opset=target)
        onnx.checker.check_model(lowered, full_check=True)
        x = sample_values(onnx.TensorProto.FLOAT, random_count=500).reshape(-1, 1)
        for axes, condition in (([1], True), ([-1], False)):
            feeds = {"x": x, "c": np.array(condition), "axes": np.array(axes, np.int64)}
            for a, b in zip(run_onnxruntime(lowered, feeds), run_onnxruntime(model, feeds), strict=True):
                np.testing.assert_array_equal(a, b)
        return
    with pytest.raises(
        lowering.LoweringError, match=r"node #0 \(Squeeze\).*Squeeze-13 takes its axes from 'axes'.*run time"
    ):
        lowering.lower(model, target_opset=target)


def test_a_node_the_converter_cannot_move_is_named():
    # RegexFullMatch-20 has no function body and no rule (Col2Im and BitwiseNot, once the
    # example, have rules now).
    model = parse("""
        <ir_version: 10, opset_import: ["" : 20]>
        main (string[3] x) => (bool[3] y) {
            y = RegexFullMatch <pattern = "a+"> (x)
        }
    """)
    with pytest.raises(
        lowering.LoweringError,
        match=r"node #0 \(RegexFullMatch\): RegexFullMatch-20 does not exist at opset 17 "
        r"\(ONNX first defines it at 20\) and has no function body to write it with$",
    ):
        lowering.lower(model, target_opset=17)


def test_a_node_the_converter_cannot_move_goes_through_its_function_body():
    """Mish-18 does not exist at 17 (onnx's converter refuses it); its body does."""
    model = parse("""
        <ir_version: 8, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] y) { y = Mish (x) }
    """)
    result = lowering.lower_model(model, target_opset=17)
    assert result.report.lines() == ["lowered 1 x Mish-18 by its function body"]
    assert [node.op_type for node in result.model.graph.node] == ["Softplus", "Tanh", "Mul"]


@pytest.mark.parametrize(
    "element_type, lowest",
    [(onnx.TensorProto.BFLOAT16, 13), (onnx.TensorProto.FLOAT8E4M3FN, 19), (onnx.TensorProto.FLOAT8E5M2, 19)],
)
def test_impossible_targets_name_the_value_type_and_lowest_opset(element_type, lowest):
    model = unary_model("IsNaN", 20, element_type)
    with pytest.raises(lowering.LoweringError) as raised:
        lowering.lower(model, target_opset=lowest - 1)
    message = str(raised.value)
    assert (
        "'x'" in message
        and type_name(element_type) in message
        and f"lowest opset that can hold it is {lowest}" in message
    )


def test_target_newer_than_onnx_knows():
    with pytest.raises(lowering.LoweringError, match=f"onnx knows opsets 1 to {NEWEST}"):
        lowering.lower(unary_model("IsNaN", 13, onnx.TensorProto.FLOAT), target_opset=NEWEST + 1)


def test_pure_version_conversion_keeps_what_it_can():
    model = unary_model("IsNaN", 9, onnx.TensorProto.FLOAT)
    result = lowering.lower_model(model, target_opset=20, ops=[])
    assert count_ops(result.model) == {"IsNaN": 1}
    assert result.report.adapted == {"IsNaN-9→20": 1} and not result.report.rewritten


def test_optional_ops_below_15_are_lowered_or_refused():
    decidable = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (bool has, float[N] y) {
            o = Optional (x)
            has = OptionalHasElement (o)
            y = OptionalGetElement (o)
        }
    """)
    lowered = lowering.lower(decidable, target_opset=11, ops=[])
    assert not set(count_ops(lowered)) & {"Optional", "OptionalHasElement", "OptionalGetElement"}
    onnx.checker.check_model(lowered, full_check=True)
    undecidable = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) o) => (bool has) { has = OptionalHasElement (o) }
    """)
    with pytest.raises(lowering.LoweringError, match="cannot be expressed at opset 14"):
        lowering.lower(undecidable, target_opset=14)


def test_local_function_bodies_move_to_the_target_too():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 20, "local" : 1]>
        main (float[N] x) => (bool[N] y) { y = local.Bad (x) }
        <domain: "local", opset_import: ["" : 20]>
        Bad (v) => (flag) {
            nan = IsNaN (v)
            inf = IsInf (v)
            flag = Or (nan, inf)
        }
    """)
    for ops in (None, []):
        lowered = lowering.lower(model, target_opset=11, ops=ops)
        onnx.checker.check_model(lowered, full_check=True)
        assert [e.version for e in lowered.functions[0].opset_import if e.domain == ""] == [11]
        assert "IsInf" in count_ops(lowered) if ops == [] else "IsInf" not in count_ops(lowered)
        values = sample_values(onnx.TensorProto.FLOAT)
        (got,) = run_onnxruntime(lowered, {"x": values})
        np.testing.assert_array_equal(got, np.isnan(values) | np.isinf(values))


def test_a_node_onnx_converter_would_re_version_blindly_across_a_known_change_is_not_kept():
    """onnx's converter gives GroupNormalization-21 back as it is at 20, though version 21 takes
    scale and bias per channel, not per group: the move is refused (the known change's reason),
    and the driver writes the node by its function body instead. (MaxPool-22 with ceil_mode and
    BitShift-28, found by the corpus sweep, went down blindly this way; both have adapters now.)"""
    model = onnx.parser.parse_model("""<ir_version: 10, opset_import: ["" : 21]>
        main (float[1,4,2,2] x, float[4] s, float[4] b) => (float[1,4,2,2] y) {
            y = GroupNormalization <num_groups = 2> (x, s, b) }""")
    result = lowering.lower_model(model, target_opset=20, ops=[])
    assert "lowered 1 x GroupNormalization-21 by its function body" in result.report.lines()
    assert "GroupNormalization" not in {node.op_type for node in result.model.graph.node}
    from lowering.conversion import node_moves

    node = model.graph.node[0]
    with pytest.raises(lowering.LoweringError, match="takes scale and bias per channel"):
        node_moves.refuse_blind_re_versioning(node, [node], 21, 18, "here", 20)


def test_a_node_the_known_change_does_not_affect_still_converts():
    model = onnx.parser.parse_model("""<ir_version: 10, opset_import: ["" : 22]>
        main (float[1,1,N,M] x) => (float[1,1,?,?] y) { y = MaxPool <kernel_shape = [3,3], strides = [2,2]> (x) }""")
    result = lowering.lower_model(model, target_opset=21, ops=[])
    assert [node.op_type for node in result.model.graph.node] == ["MaxPool"]


def test_a_constant_given_as_value_ints_is_read_as_a_constant():
    """Constant(value_ints=...) is as constant as Constant(value=...): ReduceMean-18's axes from
    one go into the attribute at 13 (the backend's CenterCropPad and MVN bodies write them so)."""
    model = onnx.parser.parse_model("""<ir_version: 10, opset_import: ["" : 18]>
        main (float[2, 3, 4] x) => (float[2, 1, 4] y) {
            axes = Constant <value_ints = [1]> ()
            y = ReduceMean <keepdims = 1> (x, axes) }""")
    converted = lowering.lower(model, target_opset=13, ops=[])
    (reduce,) = [node for node in converted.graph.node if node.op_type == "ReduceMean"]
    assert [onnx.helper.get_attribute_value(a) for a in reduce.attribute if a.name == "axes"] == [[1]]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    from lowering.verification.runtime import run_onnxruntime

    (want,) = run_onnxruntime(model, {"x": x})
    (got,) = run_onnxruntime(converted, {"x": x})
    assert want.tobytes() == got.tobytes()


@pytest.mark.parametrize("noop, expected_ops", [(0, ["ReduceMax"]), (1, ["Identity"])])
def test_axes_of_shape_zero_are_empty_whatever_they_hold(noop, expected_ops):
    """ReduceMax-18 whose axes input is a graph input of shape [0]: empty axes at run time too."""
    model = onnx.parser.parse_model(f"""<ir_version: 10, opset_import: ["" : 18]>
        main (float[2, 3] x, int64[0] axes) => (float[?, ?] y) {{
            y = ReduceMax <keepdims = 1, noop_with_empty_axes = {noop}> (x, axes) }}""")
    converted = lowering.lower(model, target_opset=13, ops=[])
    assert [node.op_type for node in converted.graph.node] == expected_ops
    from lowering.verification.runtime import run_onnxruntime

    feeds = {"x": np.array([[1, -2, 3], [4, np.nan, -6]], np.float32), "axes": np.zeros(0, np.int64)}
    (want,) = run_onnxruntime(model, feeds)
    (got,) = run_onnxruntime(converted, feeds)
    assert want.tobytes() == got.tobytes()


def test_a_model_without_default_domain_ops_comes_back_as_it_is_at_the_target():
    """An ai.onnx.ml model has nothing to move: its nodes stay, and it declares the target."""
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["ai.onnx.ml" : 3]>
        main (float[2, 3] x) => (float[2, 3] y) { y = ai.onnx.ml.Binarizer <threshold = 0.5> (x) }""")
    converted = lowering.lower(model, target_opset=13, ops=[])
    assert converted.graph.node == model.graph.node
    assert {(o.domain, o.version) for o in converted.opset_import} == {("ai.onnx.ml", 3), ("", 13)}
    onnx.checker.check_model(converted, full_check=True)
    from lowering.verification.runtime import run_onnxruntime

    x = np.array([[0.1, 0.5, 0.9], [-0.0, -1, 2]], np.float32)
    assert run_onnxruntime(converted, {"x": x})[0].tobytes() == run_onnxruntime(model, {"x": x})[0].tobytes()
