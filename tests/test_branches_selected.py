"""An If computed without control flow (lowering/branches_selected.py): both branches inlined and
each output selected by Where, bit for bit the If's answer whichever branch is taken; declined
where a branch could fail when not taken or its outputs' shapes are not one known shape; chosen
by --target for a runtime that runs no If (onnx2torch) and not for one that does."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import make_model
from version_cases import node_cases

import lowering
from lowering.branches_selected import both_branches_selected
from lowering.naming import NameAllocator
from lowering.verification.runtime import run_onnxruntime

SPECIALS = np.array([[np.nan, -np.inf, np.inf], [-0.0, 1e-45, 3.4e38]], np.float32)


def branch(name: str, nodes: list, outputs: list, initializer=()) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], outputs, initializer=list(initializer))


def if_model(
    then_graph, else_graph, *, x_shape=(2, 3), cond_shape=(), outputs=None, opset=18, x_type=TensorProto.FLOAT
):
    """y = If(cond) then then_graph else else_graph, x [2, 3] (float) read by the branches."""
    outputs = outputs or [helper.make_tensor_value_info("y", x_type, [2, 3])]
    node = helper.make_node(
        "If", ["cond"], [o.name for o in outputs], name="choice", then_branch=then_graph, else_branch=else_graph
    )
    inputs = [helper.make_tensor_value_info("cond", TensorProto.BOOL, list(cond_shape)),
              helper.make_tensor_value_info("x", x_type, list(x_shape))]  # fmt: skip
    return make_model([node], inputs, outputs, opset=opset)


def selected(model: onnx.ModelProto) -> list[onnx.NodeProto] | None:
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in [*inferred.graph.input, *inferred.graph.value_info]}
    opset = model.opset_import[0].version
    return both_branches_selected(model.graph.node[0], NameAllocator(model=model), opset, types)


def flattened(model: onnx.ModelProto) -> onnx.ModelProto:
    nodes = selected(model)
    assert nodes is not None
    result = onnx.ModelProto()
    result.CopyFrom(model)
    del result.graph.node[:]
    result.graph.node.extend(nodes)
    onnx.checker.check_model(result, full_check=True)
    return result


def assert_same_bits_both_ways(model, flat, x=SPECIALS, cond_shape=()):
    for taken in (True, False):
        feeds = {"cond": np.full(cond_shape, taken), "x": x}
        want, got = run_onnxruntime(model, feeds), run_onnxruntime(flat, feeds)
        for w, g in zip(want, got, strict=True):
            assert w.dtype == g.dtype and w.shape == g.shape, taken
            assert w.tobytes() == g.tobytes(), taken


def arithmetic_branches(else_constant: bool = True, x_type: int = TensorProto.FLOAT):
    """then: Add(x, 1.5) (its 1.5 an initializer) and Neg of it, which gives -0 of x = -1.5; else:
    a constant (free of -0), or x·x computed (both write a value t); of ``x_type``."""
    dtype = helper.tensor_dtype_to_np_dtype(x_type)
    y = [helper.make_tensor_value_info("t", x_type, [2, 3])]
    one = numpy_helper.from_array(np.array(1.5, dtype), "one")
    added = [helper.make_node("Add", ["x", "one"], ["a"]), helper.make_node("Neg", ["a"], ["t"])]
    then_graph = branch("then", added, y, [one])
    if else_constant:
        values = numpy_helper.from_array(np.array([[0.0, 2.0, np.nan], [np.inf, -1.0, 5.0]], dtype), "v")
        return then_graph, branch("else", [helper.make_node("Constant", [], ["t"], value=values)], y)
    return then_graph, branch("else", [helper.make_node("Mul", ["x", "x"], ["t"])], y)


@pytest.mark.parametrize("x_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE])
def test_a_computed_branch_and_a_constant_one_give_the_ifs_bits_whichever_is_taken(x_type):
    """Each branch's values renamed fresh (both write t), an initializer made a Constant; the
    computed float output goes third to Where (Where(Equal(c, false), constant, computed)), so its
    -0 keeps its sign in onnxruntime too: NaN, ±inf, -0, subnormal, largest selected bit for bit."""
    model = if_model(*arithmetic_branches(x_type=x_type), x_type=x_type)
    flat = flattened(model)
    assert [n.op_type for n in flat.graph.node].count("Where") == 1 and "If" not in str(flat.graph.node)
    assert "Equal" in [n.op_type for n in flat.graph.node]
    dtype = helper.tensor_dtype_to_np_dtype(x_type)
    info = np.finfo(dtype)
    x = np.array([[np.nan, -np.inf, np.inf], [-0.0, info.smallest_subnormal, info.max]], dtype)
    x[0, 0] = -1.5  # (then gives -(-1.5 + 1.5) = -0)
    assert_same_bits_both_ways(model, flat, x=x)


def test_two_computed_float_branches_are_declined_integer_ones_selected():
    """onnxruntime's Where gives +0 for a -0 from its second input: of two computed float
    branches neither may go there; integers have no -0."""
    assert selected(if_model(*arithmetic_branches(else_constant=False))) is None
    y = [helper.make_tensor_value_info("t", TensorProto.INT64, [2])]
    then_graph = branch("then", [helper.make_node("Shape", ["x"], ["t"])], y)
    else_graph = branch("else", [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Neg", ["s"], ["t"])], y)
    model = if_model(then_graph, else_graph, outputs=[helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    assert_same_bits_both_ways(model, flattened(model))


@pytest.mark.parametrize("cond_shape", [(), (1,), (1, 1)], ids=str)
def test_a_condition_of_one_element_of_any_rank_selects_without_broadcasting(cond_shape):
    """Branches giving a 0-d value: the condition reshaped to a scalar, so [1] does not make it [1]."""
    y = [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])]
    then_graph = branch("then", [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0)], y)
    else_graph = branch("else", [helper.make_node("ReduceMax", ["x"], ["s"], keepdims=0)], y)
    assert selected(if_model(then_graph, else_graph, cond_shape=cond_shape)) is None  # (ReduceSum is not total)
    then_graph = branch("then", [helper.make_node("Constant", [], ["s"], value_float=2.0)], y)
    else_graph = branch("else", [helper.make_node("Constant", [], ["s"], value_float=-0.0)], y)
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])]
    model = if_model(then_graph, else_graph, cond_shape=cond_shape, outputs=outputs)
    assert_same_bits_both_ways(model, flattened(model), cond_shape=cond_shape)


def test_a_branch_passing_an_outer_value_on_is_selected_as_it_is():
    """(onnxruntime takes a branch output naming an outer value only through an Identity.)"""
    y = [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])]
    then_graph = branch("then", [helper.make_node("Identity", ["x"], ["t"])], y)
    zeros = numpy_helper.from_array(np.zeros([2, 3], np.float32), "z")
    model = if_model(then_graph, branch("else", [helper.make_node("Constant", [], ["t"], value=zeros)], y))
    assert_same_bits_both_ways(model, flattened(model))


def _declined_branches():
    out = [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)]
    zeros = numpy_helper.from_array(np.zeros([2, 3], np.float32), "z")  # (free of -0: only the reason named declines)
    relu = branch("else", [helper.make_node("Constant", [], ["t"], value=zeros)], out)
    index = numpy_helper.from_array(np.array([5], np.int64), "i")
    gather = branch("then", [helper.make_node("Gather", ["x", "i"], ["t"], axis=1)], out, [index])
    integer_out = [helper.make_tensor_value_info("t", TensorProto.INT64, None)]
    divisor = numpy_helper.from_array(np.array(0, np.int64), "zero")
    integer_division = branch(
        "then", [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Div", ["s", "zero"], ["t"])],
        integer_out, [divisor],
    )  # fmt: skip
    integer_shape = branch("else", [helper.make_node("Shape", ["x"], ["t"])], integer_out)
    wider = branch("then", [helper.make_node("Concat", ["x", "x"], ["t"], axis=0)], out)
    three = numpy_helper.from_array(np.ones([2, 3], np.float32), "c")
    added = branch("then", [helper.make_node("Add", ["x", "c"], ["t"])], out, [three])
    remainder = branch("then", [helper.make_node("Mod", ["x", "x"], ["t"], fmod=0)], out)
    bounds = numpy_helper.from_array(np.array([0.0, 1.0], np.float32), "b")
    clipped = branch("then", [helper.make_node("Clip", ["x", "b"], ["t"])], out, [bounds])
    return {
        "an index a value decides": (gather, relu, (2, 3)),
        "an integer divided": (integer_division, integer_shape, (2, 3)),
        "outputs of two shapes": (wider, relu, (2, 3)),
        "a shape not known": (branch("then", [helper.make_node("Relu", ["x"], ["t"])], out), relu, ("n", 3)),
        # (inference makes Add(x[k, 3], c[2, 3]) [2, 3]: it fails where k is not 2, though not taken)
        "an outer value of a length not known": (added, relu, ("k", 3)),
        "a float Mod with fmod=0": (remainder, relu, (2, 3)),
        "Clip bounds of two values": (clipped, relu, (2, 3)),
    }


@pytest.mark.parametrize("why", list(_declined_branches()))
def test_declined_where_a_branch_not_taken_could_fail_or_the_shapes_differ(why):
    then_graph, else_graph, x_shape = _declined_branches()[why]
    element_type = then_graph.output[0].type.tensor_type.elem_type
    outputs = [helper.make_tensor_value_info("y", element_type, None)]
    assert selected(if_model(then_graph, else_graph, x_shape=x_shape, outputs=outputs)) is None


def test_a_branch_holding_a_graph_is_declined():
    inner_then, inner_else = arithmetic_branches()
    t = [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])]
    nested = branch(
        "then", [helper.make_node("If", ["cond"], ["t"], then_branch=inner_then, else_branch=inner_else)], t
    )
    assert selected(if_model(nested, inner_else)) is None


def test_onnx2torch_is_given_the_backend_if_selected_and_onnxruntime_keeps_it():
    """onnx2torch converts no If: --target computes both branches (constants) and selects one; the
    result verifies for either condition. onnxruntime runs the If: kept."""
    [case] = [c for c in node_cases() if c.name == "test_if"]
    result = lowering.lower_model(case.model, target="onnx2torch")
    assert [n.op_type for n in result.model.graph.node][-1] == "Where" and result.report.forms
    for taken in (True, False):
        assert lowering.verify(case.model, result.model, inputs=[{"cond": np.array(taken)}]).match
    kept = lowering.lower_model(case.model, target="onnxruntime")
    assert [n.op_type for n in kept.model.graph.node] == ["If"]


def test_an_if_in_a_graph_a_node_holds_is_not_selected():
    """The types of a nested graph's values are merged by name across sibling graphs, which may
    reuse one: an If inside another If's branch is left as it is (its outer value v is [1, 3]
    there and [2, 3] in the sibling branch, as its other output: taken for [2, 3], a Where would
    broadcast v to [2, 3]), and the model refused for onnx2torch, not made wrong."""
    from lowering.runtime_profiles import load_profile
    from lowering.target_forms import replace_ops
    from lowering.target_lowering import form_judge

    ones = numpy_helper.from_array(np.ones([2, 3], np.float32), "w")
    wide = branch("then", [helper.make_node("Constant", [], ["v"], value=ones)],
                  [helper.make_tensor_value_info("v", TensorProto.FLOAT, [2, 3])])  # fmt: skip
    y = [helper.make_tensor_value_info("t", TensorProto.FLOAT, [None, 3])]
    fives = numpy_helper.from_array(np.full([1, 3], 5.0, np.float32), "f")
    sevens = numpy_helper.from_array(np.full([2, 3], 7.0, np.float32), "s")  # (as wide as the other v)
    inner = helper.make_node(
        "If", ["cond"], ["u"], name="inner",
        then_branch=branch("inner_then", [helper.make_node("Identity", ["v"], ["t"])], y),
        else_branch=branch("inner_else", [helper.make_node("Constant", [], ["t"], value=sevens)], y),
    )  # fmt: skip
    narrow = branch("else", [helper.make_node("Constant", [], ["v"], value=fives), inner,
                             helper.make_node("Identity", ["u"], ["out"])],
                    [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, 3])])  # fmt: skip
    model = if_model(wide, narrow, outputs=[helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])])
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert not replace_ops(made, 18, form_judge(model, load_profile("onnx2torch"), 18))
    assert made == model
    with pytest.raises(lowering.LoweringError, match="If"):
        lowering.lower_model(model, target="onnx2torch")
