"""Property-based tests: random models mixing the ops under lowering with other ops, inside If
branches, Loop bodies and local functions, over random types, opsets, attributes and value
names. Every lowered model passes check_model(full_check=True) and verifies equal to its
original (lowering.verify: edge values included).

Fast by default (CI); ``ONNX_LOWER_PROPERTY_EXAMPLES=500 python -m pytest tests/test_properties.py``
runs many more examples.
"""

from __future__ import annotations

import os

import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper

import lowering
from lowering import schemas
from lowering.conversion.version_steps import lowest_opset_for_type

EXAMPLES = int(os.environ.get("ONNX_LOWER_PROPERTY_EXAMPLES", "30"))
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example, HealthCheck.data_too_large],
    derandomize=True,
)
BOOL = onnx.TensorProto.BOOL
# Names a lowering might like to make, and ones exporters make: all must survive untouched.
NAME_PATTERNS = st.sampled_from(
    [
        "y_equal",
        "y_cast",
        "float_max",
        "double_max",
        "bool_false",
        "x_abs",
        "_v_3",
        "/If_output_0",
        "n0_Equal",
        "onnx::Not_12",
        "t",
        "value.1",
        "flag",
    ]  # fmt: skip
)


@st.composite
def value_names(draw, count: int) -> list[str]:
    """``count`` distinct names, generated-looking ones included."""
    names: list[str] = []
    while len(names) < count:
        name = draw(
            st.one_of(
                NAME_PATTERNS,
                st.from_regex(r"[A-Za-z_][A-Za-z0-9_./:]{0,12}", fullmatch=True),
            )
        )
        if name not in names and name not in ("x", "c"):
            names.append(name)
    return names


def _float_types(opset: int) -> list[int]:
    """Types IsNaN takes at ``opset`` (IsInf may take fewer: checked per node)."""
    return sorted(schemas.input_element_types("IsNaN", opset))


@st.composite
def models(draw) -> onnx.ModelProto:
    opset = draw(st.integers(min_value=11, max_value=schemas.newest_opset()))
    element_type = draw(st.sampled_from(_float_types(opset)))
    steps = draw(st.integers(min_value=1, max_value=6))
    names = iter(draw(value_names(6 * steps + 4)))
    nodes: list[onnx.NodeProto] = []
    bools: list[str] = []
    shapes: dict[str, tuple] = {}  # bool value -> its dims (equal dims: combinable)
    functions: list[onnx.FunctionProto] = []
    isinf_ok = schemas.accepts("IsInf", opset, element_type)

    def classify(source: str, into: str) -> onnx.NodeProto:
        if isinf_ok and draw(st.booleans()):
            flags = {"detect_positive": draw(st.integers(0, 1)), "detect_negative": draw(st.integers(0, 1))}
            return helper.make_node("IsInf", [source], [into], **flags)
        return helper.make_node("IsNaN", [source], [into])

    for _ in range(steps):
        kind = draw(st.sampled_from(["classify", "combine", "if", "loop", "function", "where", "concat"]))
        out = next(names)
        shape: tuple = ("N",)
        same_shape = [b for b in bools if bools and shapes[b] == shapes[bools[-1]]]
        if kind == "combine" and bools:
            other = draw(st.sampled_from(same_shape))
            op_type = draw(st.sampled_from(["Or", "And", "Xor"]))
            nodes.append(helper.make_node(op_type, [bools[-1], other], [out]))
            shape = shapes[bools[-1]]
        elif kind == "if":
            then_out, else_out = next(names), next(names)
            then_graph = helper.make_graph([classify("x", then_out)], "then_" + str(len(nodes)), [],
                                           [helper.make_tensor_value_info(then_out, BOOL, ["N"])])  # fmt: skip
            else_graph = helper.make_graph([classify("x", else_out)], "else_" + str(len(nodes)), [],
                                           [helper.make_tensor_value_info(else_out, BOOL, ["N"])])  # fmt: skip
            nodes.append(helper.make_node("If", ["c"], [out], then_branch=then_graph, else_branch=else_graph))
        elif kind == "loop":
            body_out, cond_out, counter, cond_in = next(names), next(names), next(names), next(names)
            body = helper.make_graph(
                [helper.make_node("Identity", [cond_in], [cond_out]), classify("x", body_out)],
                "body_" + str(len(nodes)),
                [helper.make_tensor_value_info(counter, onnx.TensorProto.INT64, []),
                 helper.make_tensor_value_info(cond_in, BOOL, [])],
                [helper.make_tensor_value_info(cond_out, BOOL, []),
                 helper.make_tensor_value_info(body_out, BOOL, ["N"])],
            )  # fmt: skip
            trips = next(names)
            two = helper.make_tensor("two", onnx.TensorProto.INT64, [], [2])
            nodes.append(helper.make_node("Constant", [], [trips], value=two))
            nodes.append(helper.make_node("Loop", [trips, "c"], [out], body=body))  # stacked: bool[2 or 0, N]
            shape = ("loop",) + shape
        elif kind == "function":
            name = f"F{len(functions)}"
            body_node = classify("v", "r")
            functions.append(helper.make_function("local", name, ["v"], ["r"], [body_node],
                                                  [helper.make_opsetid("", opset)]))  # fmt: skip
            nodes.append(helper.make_node(name, ["x"], [out], domain="local"))
        elif kind == "where" and element_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            flag, kept = next(names), next(names)
            nodes.append(classify("x", flag))
            zero = next(names)
            nodes.append(
                helper.make_node("Constant", [], [zero], value=helper.make_tensor("z", element_type, [], [0.0]))
            )
            nodes.append(helper.make_node("Where", [flag, zero, "x"], [kept]))
            nodes.append(helper.make_node("IsNaN", [kept], [out]))
        elif kind == "concat" and bools:
            nodes.append(helper.make_node("Concat", [bools[-1], draw(st.sampled_from(same_shape))], [out], axis=0))
            shape = (f"concat{len(nodes)}",) + shapes[bools[-1]][1:]  # combinable only with itself
        else:
            nodes.append(classify("x", out))
        bools.append(out)
        shapes[out] = shape
    outputs = [
        helper.make_tensor_value_info(name, BOOL, [d if d == "N" else None for d in shapes[name]])
        for name in dict.fromkeys(bools)
    ]
    graph = helper.make_graph(
        nodes,
        "main",
        [helper.make_tensor_value_info("x", element_type, ["N"]), helper.make_tensor_value_info("c", BOOL, [])],
        outputs,
    )
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)] if functions else [])
    ir_version = max(helper.find_min_ir_version_for(imports[:1]), 8)
    return helper.make_model(graph, opset_imports=imports, functions=functions, ir_version=ir_version)


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(models())
def test_lowered_random_models_are_valid_and_equal(model):
    onnx.checker.check_model(model, full_check=True)
    result = lowering.lower_model(model)
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert [i.name for i in result.model.graph.input] == [i.name for i in model.graph.input]
    assert [o.name for o in result.model.graph.output] == [o.name for o in model.graph.output]
    report = lowering.verify(model, result.model, samples=4)
    assert report.match, report.lines()
    assert lowering.lower(result.model).SerializeToString() == result.model.SerializeToString()


@pytest.mark.slow
@PROPERTY_SETTINGS
@given(models())
def test_random_models_lower_the_same_with_the_speed_shortcuts_off(model):
    """The plain algorithm (``fast=False``: every node through its rule, names listed, node
    lists rebuilt as NodeProtos) gives the fast one's model, byte for byte."""
    fast = lowering.lower(model).SerializeToString()
    assert lowering.lower(model, fast=False).SerializeToString() == fast


@st.composite
def conversions(draw):
    source = draw(st.integers(min_value=9, max_value=schemas.newest_opset()))
    element_type = draw(st.sampled_from(_float_types(source)))
    lowest = max(9, lowest_opset_for_type(element_type))
    target = draw(st.integers(min_value=lowest, max_value=schemas.newest_opset()))
    ops = draw(st.sampled_from([None, [], ["IsNaN"], ["IsInf"]]))
    return source, element_type, target, ops


@PROPERTY_SETTINGS
@given(conversions(), st.data())
def test_random_conversions_between_opsets(conversion, data):
    source, element_type, target, ops = conversion
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"])]
    outputs = ["nan"]
    if schemas.accepts("IsInf", source, element_type):
        flags = {"detect_positive": data.draw(st.integers(0, 1)), "detect_negative": data.draw(st.integers(0, 1))}
        nodes += [helper.make_node("IsInf", ["x"], ["inf"], **flags), helper.make_node("Or", ["nan", "inf"], ["bad"])]
        outputs += ["inf", "bad"]
    graph = helper.make_graph(
        nodes, "main", [helper.make_tensor_value_info("x", element_type, ["N"])],
        [helper.make_tensor_value_info(name, BOOL, ["N"]) for name in outputs],
    )  # fmt: skip
    imports = [helper.make_opsetid("", source)]
    model = helper.make_model(graph, opset_imports=imports, ir_version=max(helper.find_min_ir_version_for(imports), 7))
    lowered = lowering.lower(model, target_opset=target, ops=ops)
    onnx.checker.check_model(lowered, full_check=True)
    assert [e.version for e in lowered.opset_import if e.domain == ""] == [target]
    plain = lowering.lower(model, target_opset=target, ops=ops, fast=False)
    assert plain.SerializeToString() == lowered.SerializeToString()
    report = lowering.verify(model, lowered, samples=4)
    assert report.match, report.lines()
