"""Optional lowering beyond the golden cases: exporter output, and what must stay."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.parser
import pytest
from support import GOLDEN, original_outputs, parse, slow_but_a_sample  # noqa: E402

import lowering
from lowering.opcount import count_ops
from lowering.verification.runtime import run_onnxruntime

TORCH_MODELS = GOLDEN / "torch"
OPTIONAL_OPS = {"Optional", "OptionalHasElement", "OptionalGetElement"}


def optional_types_in(model: onnx.ModelProto) -> list[str]:
    """Names of every value the model declares with an optional type, at any depth."""
    found = []

    def visit_graph(graph: onnx.GraphProto) -> None:
        for info in [*graph.input, *graph.output, *graph.value_info]:
            if "optional_type" in str(info.type).split(" ")[0] or info.type.WhichOneof("value") == "optional_type":
                found.append(info.name)
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.GRAPH:
                    visit_graph(attribute.g)
                elif attribute.type == onnx.AttributeProto.GRAPHS:
                    for subgraph in attribute.graphs:
                        visit_graph(subgraph)

    visit_graph(model.graph)
    return found


@pytest.mark.parametrize("opset", [15, 16, 18])
def test_torchscript_optional_local_loses_every_optional(opset):
    original = onnx.load(TORCH_MODELS / f"optional_local_opset{opset}.onnx")
    assert set(count_ops(original)) >= {"Optional", "OptionalHasElement", "OptionalGetElement"}
    result = lowering.lower_model(original)
    lowered = result.model
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(lowered, full_check=True)
    assert not set(count_ops(lowered)) & OPTIONAL_OPS
    assert optional_types_in(lowered) == []
    assert lowered.graph.input == original.graph.input and lowered.graph.output == original.graph.output

    rng = np.random.default_rng(opset)
    for sign in (1.0, -1.0):  # a positive sum keeps x * 2, a negative one drops it
        x = (np.abs(rng.standard_normal((2, 3))) * sign).astype(np.float32)
        y = rng.standard_normal((2, 3)).astype(np.float32)
        expected = y + x * 2 if x.sum() > 0 else y - 1
        (got,) = run_onnxruntime(lowered, {"x": x, "y": y})
        np.testing.assert_array_equal(got, expected)
        if opset >= 16:  # If-13 has no optional outputs: onnxruntime refuses the opset-15 export
            (want,) = original_outputs(original, {"x": x, "y": y})
            np.testing.assert_array_equal(got, want)


def test_optional_graph_input_stays_and_is_reported():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) maybe, float[N] x) => (bool has, float[N] y) {
            has = OptionalHasElement (maybe)
            wrapped = Optional (x)
            y = OptionalGetElement (wrapped)
        }
    """)
    result = lowering.lower_model(model)
    (remaining,) = result.report.remaining
    assert remaining.op_type == "OptionalHasElement" and "node #0" in remaining.location
    assert "'maybe' is an optional input of graph 'main'" in remaining.reason
    assert result.report.rewritten == {"OptionalGetElement-18": 1}
    assert result.model.graph.input == model.graph.input and result.model.graph.output == model.graph.output
    assert "Optional" not in count_ops(result.model), "the now unused Optional(x) is removed"
    onnx.checker.check_model(result.model, full_check=True)


def test_optional_graph_output_keeps_its_optional():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x, bool c) => (optional(float[N]) maybe, bool has) {
            maybe = If (c) <
                then_branch = then_graph () => (optional(float[N]) some) { some = Optional (x) },
                else_branch = else_graph () => (optional(float[N]) none) { none = Optional <type = float[N]> () }
            >
            has = OptionalHasElement (maybe)
        }
    """)
    result = lowering.lower_model(model)
    assert result.report.complete
    assert result.model.graph.output == model.graph.output
    if_node = result.model.graph.node[0]
    assert list(if_node.output) == ["maybe", "maybe_has_element"], "the optional stays; only the flag is added"
    onnx.checker.check_model(result.model, full_check=True)
    for condition in (True, False):
        feeds = {"x": np.arange(3, dtype=np.float32), "c": np.array(condition)}
        maybe, has = run_onnxruntime(result.model, feeds)
        assert bool(has) == condition and (maybe is not None) == condition


def test_loop_carried_optional_is_reported_with_the_reason():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x, int64 trips) => (bool has) {
            start = Optional <type = float[N]> ()
            cond = Constant <value = bool {1}> ()
            carried = Loop (trips, cond, start) <body = body (int64 i, bool c, optional(float[N]) previous)
                    => (bool c_out, optional(float[N]) next) {
                c_out = Identity (c)
                next = Optional (x)
            }>
            has = OptionalHasElement (carried)
        }
    """)
    result = lowering.lower_model(model)
    (remaining,) = result.report.remaining
    assert remaining.op_type == "OptionalHasElement" and "carried by a Loop" in remaining.reason
    assert result.model.SerializeToString() == model.SerializeToString()


def test_reading_an_always_empty_optional_is_left_and_said():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] y) {
            empty = Optional <type = float[N]> ()
            y = OptionalGetElement (empty)
        }
    """)
    result = lowering.lower_model(model)
    (remaining,) = result.report.remaining
    assert "always empty" in remaining.reason


def test_ops_selects_optional_rules_only():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (bool has, bool[N] nan) {
            o = Optional (x)
            has = OptionalHasElement (o)
            nan = IsNaN (x)
        }
    """)
    lowered = lowering.lower(model, ops=["OptionalHasElement"])
    assert set(count_ops(lowered)) == {"Constant", "Identity", "IsNaN"}


@slow_but_a_sample()
@pytest.mark.parametrize("element", ["float", "string", "int64[2,3]", "float16[N]", "seq(int32[N])"])
def test_split_placeholders_for_every_kind_of_element(element):
    """The empty branch yields a placeholder of the same type: a scalar, a zero-size tensor of
    the same rank, or an empty sequence; the model stays valid and runs."""
    model = parse(f"""
        <ir_version: 9, opset_import: ["" : 21]>
        main ({element} v, bool c) => (bool has) {{
            maybe = If (c) <
                then_branch = then_graph () => (optional({element}) some) {{ some = Optional (v) }},
                else_branch = else_graph () => (optional({element}) none) {{ none = Optional <type = {element}> () }}
            >
            has = OptionalHasElement (maybe)
            used = If (has) <
                then_branch = read () => ({element} got) {{ got = OptionalGetElement (maybe) }},
                else_branch = skip () => ({element} same) {{ same = Identity (v) }}
            >
        }}
    """)
    result = lowering.lower_model(model)
    assert result.report.complete, result.report.lines()
    onnx.checker.check_model(result.model, full_check=True)
    assert not set(count_ops(result.model)) & OPTIONAL_OPS and optional_types_in(result.model) == []
    values = {
        "float": np.array(1.5, np.float32),
        "string": np.array("text", dtype=object),
        "int64[2,3]": np.ones((2, 3), np.int64),
    }
    if element in values:
        for condition in (True, False):
            (has,) = run_onnxruntime(result.model, {"v": values[element], "c": np.array(condition)})
            assert bool(has) == condition


def test_optional_function_input_is_reported_as_such():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18, "local" : 1]>
        main (float[N] x) => (bool has) {
            o = Optional (x)
            has = local.Has (o)
        }
        <domain: "local", opset_import: ["" : 18]>
        Has (maybe) => (flag) { flag = OptionalHasElement (maybe) }
    """)
    result = lowering.lower_model(model)
    (remaining,) = result.report.remaining
    assert "'maybe' is an optional input of function 'local.Has'" in remaining.reason
    assert result.model.SerializeToString() == model.SerializeToString()
