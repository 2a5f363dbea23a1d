"""Converting, each node the pass touched is checked at the target in a model of its own
(lowering.nodecheck); the whole result goes through onnx's full checker only where such a
check does not pass. Both paths decide alike, refusals included."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import lowering
from lowering import nodecheck
from lowering.naming import NameAllocator
from lowering.scopes import Scope
from lowering.verification.runtime import run_onnxruntime

sys.path.insert(0, str(Path(__file__).parent))

from support import fast_add_on, make_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def whole_checks(monkeypatch) -> list[str]:
    """The graph names of every model onnx's full checker is asked about, but node checks."""
    seen: list[str] = []
    check_model = onnx.checker.check_model

    def counting(model, full_check=False, *args, **kwargs):
        if full_check and isinstance(model, onnx.ModelProto) and model.graph.name != "checked":
            seen.append(model.graph.name)
        return check_model(model, full_check, *args, **kwargs)

    monkeypatch.setattr(onnx.checker, "check_model", counting)
    return seen


def _chain(opset: int, count: int) -> onnx.ModelProto:
    """``count`` blocks of ReduceMean (axes as an input) and Relu, each a value of [N, 8]."""
    nodes, previous = [], "x"
    for k in range(count):
        nodes += [
            helper.make_node("ReduceMean", [previous, "axes"], [f"m{k}"], name=f"mean{k}", keepdims=1),
            helper.make_node("Sub", [previous, f"m{k}"], [f"d{k}"], name=f"sub{k}"),
            helper.make_node("Relu", [f"d{k}"], [f"r{k}"], name=f"relu{k}"),
        ]
        previous = f"r{k}"
    axes = onnx.numpy_helper.from_array(__import__("numpy").array([1], "int64"), "axes")
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["N", 8])],
        opset=opset,
        initializer=[axes],
    )


@pytest.mark.parametrize("fast", [True, False])
def test_a_conversion_whose_nodes_pass_their_own_checks_is_not_checked_whole(whole_checks, fast):
    model = _chain(18, 20)
    lowered = lowering.lower(model, target_opset=13, ops=[], fast=fast)
    assert whole_checks == []
    onnx.checker.check_model(lowered, full_check=True)  # and yet it passes the whole check
    assert [n.op_type for n in lowered.graph.node][:3] == ["ReduceMean", "Sub", "Relu"]
    axes = [list(a.ints) for a in lowered.graph.node[0].attribute if a.name == "axes"]
    assert axes == [[1]]  # axes moved to the attribute at 13


@pytest.mark.parametrize("fast", [True, False])
def test_a_node_holding_a_subgraph_has_the_whole_result_checked(whole_checks, fast):
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "branch",
        [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = make_model(
        [helper.make_node("If", ["c"], ["out"], then_branch=branch, else_branch=branch)],
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [3])],
        opset=18,
    )
    lowering.lower(model, target_opset=13, ops=[], fast=fast)
    assert whole_checks == ["main"]


def test_the_check_stands_in_unknown_ranks_and_judges_types():
    """Identity on a sequence is valid at 14 and not at 13; Relu of a tensor of any rank is."""
    sequence = make_model(
        [helper.make_node("Identity", ["s"], ["t"])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)],
        [helper.make_tensor_sequence_value_info("t", TensorProto.FLOAT, None)],
        opset=14,
    )
    imports = [helper.make_opsetid("", 13)]
    scope = Scope(sequence.graph, opset=13, source_opset=14, location="graph 'main'", names=NameAllocator())
    assert not nodecheck.check_at_target(scope, sequence.graph.node[0], None, 8, imports)
    scope = Scope(sequence.graph, opset=14, source_opset=14, location="graph 'main'", names=NameAllocator())
    assert nodecheck.check_at_target(scope, sequence.graph.node[0], None, 8, [helper.make_opsetid("", 14)])
    relu = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [2, 3, 4])],
        opset=14,
    )
    scope = Scope(relu.graph, opset=13, source_opset=14, location="graph 'main'", names=NameAllocator())
    assert nodecheck.check_at_target(scope, relu.graph.node[0], None, 8, imports)
    scope = Scope(
        relu.graph, opset=12, source_opset=14, location="graph 'main'", names=NameAllocator()
    )  # no bfloat16 Relu at 12
    assert not nodecheck.check_at_target(scope, relu.graph.node[0], None, 8, [helper.make_opsetid("", 12)])


@pytest.mark.parametrize("fast", [True, False])
def test_a_refusal_comes_from_the_whole_check_on_both_paths(fast):
    """An If (its own check cannot be made: it holds graphs) beside a MeanVarianceNormalization
    with its default axes, whose function body onnx's full checker cannot infer (the node is
    the same at 18 and 13, so the pass leaves it): the whole check refuses, in the same words on
    both paths."""
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b"])],
        "branch",
        [],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)],
    )
    model = make_model(
        [
            helper.make_node("If", ["c"], ["chosen"], then_branch=branch, else_branch=branch),
            helper.make_node("MeanVarianceNormalization", ["chosen"], ["y"]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 5])],
        opset=18,
    )  # fmt: skip
    with pytest.raises(lowering.LoweringError, match="the model cannot be expressed at opset 13") as raised:
        lowering.lower(model, target_opset=13, ops=[], fast=fast)
    assert "MeanVarianceNormalization" in str(raised.value)


@pytest.mark.parametrize(
    ("case", "target", "words"),
    [
        ("test_if_seq", 11, "If-13 cannot go to opset 11: its output 'res' is seq(tensor(float)), "
         "which If-11 does not take"),
        ("test_if_opt", 13, "If-16 cannot go to opset 13: its output 'sequence' is optional(seq(tensor(float))), "
         "which If-13 does not take"),
        ("test_optional_get_element_sequence", 13, "its element is seq(tensor(int32)), which Identity, passing it on, "
         "does not take at opset 13"),
    ],
)  # fmt: skip
def test_outputs_of_a_type_the_target_lacks_are_refused_in_our_words(case, target, words):
    """An If yielding a sequence or optional, and an optional's element that is a sequence, kept
    or passed on at an opset whose If or Identity takes no such type: refused naming the node,
    not by the whole model's check."""
    model = _backend_case(case).model
    for fast in (True, False):
        with pytest.raises(lowering.LoweringError) as raised:
            lowering.lower(model, target_opset=target, ops=[], fast=fast)
        assert words in str(raised.value)
        assert str(raised.value).startswith(f"graph '{case}'")
    converted = lowering.lower(model, target_opset=target + 4, ops=[])  # where the types exist it converts
    onnx.checker.check_model(converted, full_check=True)


def _backend_case(name: str):
    from version_cases import node_cases

    return next(c for c in node_cases() if c.name == name)


@pytest.mark.parametrize("fast", [True, False])
def test_a_result_made_from_shapes_is_checked_against_the_stated_shapes(fast):
    """ReduceMean-18 whose axes come from Shape(x): at 18 inference cannot read them, so an
    output stated as [2, 5] passes the full check; at 17 the axes are folded into the attribute
    from x's static shape, inference computes [2, 1], and the node's check (made with shapes, as
    the result was made from them) fails, so the whole check decides: refused, as onnx's full
    checker refuses the result. The same model stating [2, 1] converts."""
    import numpy as np

    def model(stated: list[int]) -> onnx.ModelProto:
        one = onnx.numpy_helper.from_array(np.array(1, np.int64))
        nodes = [
            helper.make_node("Shape", ["x"], ["dims"]),
            helper.make_node("Size", ["dims"], ["rank"]),
            helper.make_node("Constant", [], ["one"], value=one),
            helper.make_node("Sub", ["rank", "one"], ["last"]),
            helper.make_node("Range", ["last", "rank", "one"], ["axes"]),
            helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean"),
        ]
        return make_model(
            nodes,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, stated)],
            opset=18,
        )

    wrong = model([2, 5])
    onnx.checker.check_model(wrong, full_check=True)
    with pytest.raises(lowering.LoweringError, match="cannot be expressed at opset 17.*differ"):
        lowering.lower(wrong, target_opset=17, ops=[], fast=fast)
    converted = lowering.lower(model([2, 1]), target_opset=17, ops=[], fast=fast)
    onnx.checker.check_model(converted, full_check=True)
    mean = next(n for n in converted.graph.node if n.op_type == "ReduceMean")
    assert [list(a.ints) for a in mean.attribute if a.name == "axes"] == [[1]]


@pytest.fixture
def node_checks(monkeypatch) -> list[str]:
    """The op of each node checked at the target on its own, and whether it passed."""
    from lowering import engine

    checked: list[str] = []
    check_at_target = nodecheck.check_at_target

    def counting(scope, node, result, *args):
        passed = check_at_target(scope, node, result, *args)
        checked.append(f"{node.op_type} {'passed' if passed else 'failed'}")
        return passed

    monkeypatch.setattr(engine.nodecheck, "check_at_target", counting)
    return checked


@pytest.mark.parametrize("fast", [True, False])
def test_a_rules_nodes_reading_the_shared_constants_pass_their_own_check(whole_checks, node_checks, fast):
    """Trilu-14 at 13 goes by its rule, whose nodes read the graph's shared constants (Constant
    nodes made once for every rule of the graph, put in it when the pass ends): the check holds
    those Constant nodes, and passes, so the whole result is not checked. On the fast path the
    nodes of a kind are made from one recording, so one check stands for them all."""
    count = 12
    nodes = [helper.make_node("Trilu", [f"x{k}"], [f"y{k}"], name=f"trilu{k}", upper=k % 2) for k in range(count)]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, ["N", 3, 4]) for k in range(count)],
        [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, ["N", 3, 4]) for k in range(count)],
        opset=14,
    )
    if fast:
        fast_add_on()
    lowered = lowering.lower(model, target_opset=13, ops=[], fast=fast)
    assert whole_checks == []
    assert node_checks == ["Trilu passed"] * (2 if fast else count)  # (upper 0 and 1: two kinds)
    onnx.checker.check_model(lowered, full_check=True)
    assert "Trilu" not in {node.op_type for node in lowered.graph.node}
    feeds = {f"x{k}": np.arange(24, dtype=np.float32).reshape(2, 3, 4) - k for k in range(count)}
    for got, want in zip(run_onnxruntime(lowered, feeds), run_onnxruntime(model, feeds), strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_rules_nodes_in_a_branch_and_a_local_function_read_their_own_graphs_shared_constants():
    """Trilu-14 at 13 inside both branches of an If and inside a local function: each graph has
    its own pool of shared constants, which the rule's nodes read there. Both paths give the same
    bytes, the result passes the full check, and each branch and the function give onnxruntime's
    values of the original."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])

    def branch(name: str, upper: int) -> onnx.GraphProto:
        trilu = helper.make_node("Trilu", ["x"], [f"{name}_y"], name=f"{name}_trilu", upper=upper)
        return helper.make_graph(
            [trilu], name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)]
        )

    function = helper.make_function(
        "local", "lower_half", ["a"], ["b"], [helper.make_node("Trilu", ["a"], ["b"], upper=0)],
        opset_imports=[helper.make_opsetid("", 14)],
    )  # fmt: skip
    model = make_model(
        [
            helper.make_node("If", ["c"], ["z"], then_branch=branch("then", 1), else_branch=branch("else", 0)),
            helper.make_node("lower_half", ["x"], ["w"], domain="local"),
        ],
        [x, helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3, 4]) for n in "zw"],
        opset=14,
        functions=[function],
        extra_opsets={"local": 1},
    )
    onnx.checker.check_model(model, full_check=True)
    lowered = lowering.lower(model, target_opset=13, ops=[])
    assert lowered.SerializeToString() == lowering.lower(model, target_opset=13, ops=[], fast=False).SerializeToString()
    onnx.checker.check_model(lowered, full_check=True)
    inner = [n.op_type for g in (lowered.graph.node[-2].attribute[0].g, lowered.functions[0]) for n in g.node]
    assert "Trilu" not in inner and "Constant" in inner
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7
    for condition in (True, False):
        feeds = {"x": values, "c": np.array(condition)}
        for got, want in zip(run_onnxruntime(lowered, feeds), run_onnxruntime(model, feeds), strict=True):
            np.testing.assert_array_equal(got, want)
