"""Graph outputs a runtime of static shapes finds constant (lowering/constant_outputs.py): those that follow from
no input's values given the inputs' shapes, and those of no elements; a fed value, a random
draw, a Dropout in training, a graph reading a fed value or a local function drawing vary."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from support import make_model

from lowering.constant_outputs import constant_outputs
from lowering.shape_folding import inferred_types

X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
FOLLOWS = "follows from no input's values (given the inputs' shapes)"


def found(nodes, outputs, opset=17, inputs=(X,), **kwargs) -> dict[str, str]:
    model = make_model(nodes, list(inputs), outputs, opset=opset, **kwargs)
    return {name: constant.why for name, constant in constant_outputs(model, inferred_types(model)).items()}


def out(name: str, elem_type=TensorProto.FLOAT, shape=None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, shape)


def test_shapes_sizes_and_what_follows_from_them_are_found_constant_values_are_not():
    """Shape, Size, EyeLike and CastLike's target read no value: what follows from them alone is
    constant; Neg of the input, an Add of a shape and a value, and the input itself are not."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Mul", ["s", "s"], ["s2"]),
        helper.make_node("Neg", ["x"], ["y"]),
        helper.make_node("EyeLike", ["y"], ["eye"]),
        helper.make_node("CastLike", ["s2", "y"], ["like"]),
        helper.make_node("Cast", ["s"], ["sf"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["y"], ["total"], keepdims=0),
        helper.make_node("Add", ["sf", "total"], ["mixed"]),
    ]
    outputs = [out("s", TensorProto.INT64), out("n", TensorProto.INT64), out("s2", TensorProto.INT64),
               out("y", shape=[2, 3]), out("eye"), out("like"), out("mixed"), out("x")]  # fmt: skip
    assert found(nodes, outputs) == {name: FOLLOWS for name in ("s", "n", "s2", "eye", "like")}


def test_constants_and_initializers_are_found_constant_an_input_an_initializer_overrides_is_not():
    weight = numpy_helper.from_array(np.ones(3, np.float32), "w")
    nodes = [helper.make_node("Constant", [], ["c"], value_float=2.0), helper.make_node("Neg", ["w"], ["nw"])]
    outputs = [out("c", shape=[]), out("nw", shape=[3]), out("w", shape=[3])]
    assert found(nodes, outputs, initializer=[weight]) == {name: FOLLOWS for name in ("c", "nw", "w")}
    overridable = helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])
    assert found(nodes, outputs, inputs=(X, overridable), initializer=[weight]) == {"c": FOLLOWS}


def test_dropouts_mask_outside_training_is_found_constant_in_training_or_drawn_it_varies():
    """Dropout-13's mask is all true where its training_mode is not given or a constant false
    (its output still the data); given a fed or true one it draws; Dropout-10 never draws, -6
    draws unless is_test."""
    mask = out("mask", TensorProto.BOOL)
    plain = [helper.make_node("Dropout", ["x"], ["y", "mask"])]
    assert found(plain, [out("y"), mask]) == {"mask": FOLLOWS}
    training = helper.make_tensor_value_info("training", TensorProto.BOOL, [])
    fed = [helper.make_node("Dropout", ["x", "", "training"], ["y", "mask"])]
    assert found(fed, [out("y"), mask], inputs=(X, training)) == {}
    for value, expected in ((False, {"mask": FOLLOWS}), (True, {})):
        flag = helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(value)))
        given = [flag, helper.make_node("Dropout", ["x", "", "t"], ["y", "mask"])]
        assert found(given, [out("y"), mask]) == expected
    assert found(plain, [out("y"), mask], opset=10) == {"mask": FOLLOWS}
    assert found(plain, [out("y"), mask], opset=12) == {"mask": FOLLOWS}
    weight = numpy_helper.from_array(np.array(False), "t")
    given = [helper.make_node("Dropout", ["x", "", "t"], ["y", "mask"])]
    assert found(given, [out("y"), mask], initializer=[weight]) == {"mask": FOLLOWS}
    overridable = helper.make_tensor_value_info("t", TensorProto.BOOL, [])
    assert found(given, [out("y"), mask], inputs=(X, overridable), initializer=[weight]) == {}
    # (Dropout-6 draws unless is_test, where its mask is not filled: either way not said constant)
    assert found(plain, [out("y"), out("mask")], opset=6) == {}
    tested = [helper.make_node("Dropout", ["x"], ["y", "mask"], is_test=1)]
    assert found(tested, [out("y"), out("mask")], opset=6) == {}


def test_a_shape_that_follows_from_fed_values_varies():
    """Shape of a NonZero's output, Size of a Slice to a fed end and the mask of a Dropout of such
    a value vary with the values fed; Shape of a Slice to a constant end, or of an input of named
    lengths, does not."""
    end = helper.make_tensor_value_info("end", TensorProto.INT64, [1])
    batch = helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", 3])
    starts, ends, axes = (
        numpy_helper.from_array(np.array([v], np.int64), n) for v, n in ((0, "s"), (2, "e"), (1, "a"))
    )
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"]),
        helper.make_node("Shape", ["nz"], ["nz_shape"]),
        helper.make_node("Slice", ["x", "s", "end", "a"], ["fed_slice"]),
        helper.make_node("Size", ["fed_slice"], ["fed_size"]),
        helper.make_node("Dropout", ["fed_slice"], ["dropped", "fed_mask"]),
        helper.make_node("Slice", ["x", "s", "e", "a"], ["kept_slice"]),
        helper.make_node("Shape", ["kept_slice"], ["kept_shape"]),
        helper.make_node("Relu", ["b"], ["relu_b"]),
        helper.make_node("Shape", ["relu_b"], ["batch_shape"]),
    ]
    nodes += [
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("CastLike", ["two", "nz"], ["two_like"]),  # (its target read for its type alone)
    ]
    int64 = TensorProto.INT64
    outputs = [out("nz_shape", int64), out("fed_size", int64), out("fed_mask", TensorProto.BOOL),
               out("kept_shape", int64), out("batch_shape", int64), out("two_like", int64)]  # fmt: skip
    result = found(nodes, outputs, inputs=(X, end, batch), initializer=[starts, ends, axes])
    assert result == {"kept_shape": FOLLOWS, "batch_shape": FOLLOWS, "two_like": FOLLOWS}


def test_an_outputs_sources_are_the_ops_it_follows_from_its_graphs_reads_too():
    """A Shape's output follows from Shape; Dropout's mask from Dropout; an initializer from
    Constant; an If of a constant condition whose branches read an outer Size, from If's
    condition's Constant and the Size."""
    flag = numpy_helper.from_array(np.array(True), "flag")
    then = helper.make_graph([helper.make_node("Identity", ["n"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", TensorProto.INT64, [])])  # fmt: skip
    other = helper.make_graph([helper.make_node("Identity", ["n"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.INT64, [])])  # fmt: skip
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Dropout", ["x"], ["y", "mask"]),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("If", ["flag"], ["chosen"], then_branch=then, else_branch=other),
    ]
    outputs = [out("s", TensorProto.INT64), out("y", shape=[2, 3]), out("mask", TensorProto.BOOL),
               out("chosen", TensorProto.INT64, []), out("flag", TensorProto.BOOL, [])]  # fmt: skip
    model = make_model(nodes, [X], outputs, opset=17, initializer=[flag])
    sources = {name: c.sources for name, c in constant_outputs(model, inferred_types(model)).items()}
    assert sources == {"s": {"Shape"}, "mask": {"Dropout"}, "chosen": {"Constant", "Size"}, "flag": {"Constant"}}


def test_a_random_draw_varies_whatever_its_inputs():
    nodes = [
        helper.make_node("RandomNormal", [], ["r"], shape=[2]),
        helper.make_node("RandomUniformLike", ["x"], ["u"]),
        helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0]),
        helper.make_node("Add", ["r", "c"], ["rc"]),
    ]
    assert found(nodes, [out("r"), out("u"), out("rc"), out("c")]) == {"c": FOLLOWS}


def test_a_graph_holding_node_varies_where_its_graphs_read_a_fed_value_or_draw():
    """An If whose condition is a constant but whose branch reads the fed input varies; one
    whose branches read constants alone is constant; one whose branch draws varies."""
    one = helper.make_node("Constant", [], ["one"], value_floats=[1.0])
    flag = helper.make_node("Constant", [], ["flag"], value=numpy_helper.from_array(np.array([True])))

    def branch(name: str, node: onnx.NodeProto) -> onnx.GraphProto:
        return helper.make_graph([node], name, [], [out(node.output[0])])

    reads_x = branch("then", helper.make_node("ReduceSum", ["x"], ["t"], keepdims=0))
    reads_one = branch("else", helper.make_node("Identity", ["one"], ["e"]))
    draws = branch("draw", helper.make_node("RandomUniform", [], ["d"], shape=[1]))
    drops = branch("drop", helper.make_node("Dropout", ["one", "", "flag"], ["dropped"]))
    fed_branch = helper.make_node("If", ["flag"], ["a"], then_branch=reads_x, else_branch=reads_one)
    constant_branches = helper.make_node("If", ["flag"], ["b"], then_branch=reads_one, else_branch=reads_one)
    drawn_branch = helper.make_node("If", ["flag"], ["c"], then_branch=draws, else_branch=reads_one)
    dropping_branch = helper.make_node("If", ["flag"], ["d"], then_branch=drops, else_branch=reads_one)
    inner = helper.make_node("If", ["flag"], ["inner"], then_branch=draws, else_branch=reads_one)
    nested = helper.make_graph([inner], "outer", [], [out("inner")])
    nested_draw = helper.make_node("If", ["flag"], ["f"], then_branch=nested, else_branch=reads_one)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Add", ["carried", "one"], ["next"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), out("cond", TensorProto.BOOL, []),
                 out("carried", shape=[1])], [out("cond_out", TensorProto.BOOL, []), out("next", shape=[1])],
    )  # fmt: skip
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    loop = helper.make_node("Loop", ["trips", "", "one"], ["g"], body=body)
    nodes = [one, flag, fed_branch, constant_branches, drawn_branch, dropping_branch, nested_draw, loop]
    outputs = [out("a"), out("b"), out("c"), out("d"), out("f"), out("g")]
    assert found(nodes, outputs, initializer=[trips]) == {"b": FOLLOWS, "g": FOLLOWS}


def test_a_held_graph_reads_a_shape_as_the_main_graph_does():
    """A branch's or a Loop body's Shape of the fed x reads no value: an If of a constant
    condition whose branches give x's shape is constant, as is a Loop adding it; a branch giving
    a Slice of that shape to nothing makes an output of no elements that reads no fed value."""
    flag = helper.make_node("Constant", [], ["flag"], value=numpy_helper.from_array(np.array(True)))
    one = numpy_helper.from_array(np.array([1], np.int64), "one")

    def branch(name: str, *nodes: onnx.NodeProto, shape=None) -> onnx.GraphProto:
        return helper.make_graph(list(nodes), name, [], [out(nodes[-1].output[0], TensorProto.INT64, shape)])

    shape_of_x = branch("then", helper.make_node("Shape", ["x"], ["t"]))
    neg_shape = branch("else", helper.make_node("Shape", ["x"], ["e0"]), helper.make_node("Neg", ["e0"], ["e"]))
    slice_nothing = helper.make_node("Slice", ["s0", "one", "one"], ["s"])
    empty = branch("empty", helper.make_node("Shape", ["x"], ["s0"]), slice_nothing, shape=[0])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Shape", ["x"], ["sx"]),
         helper.make_node("Add", ["carried", "sx"], ["next"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), out("cond", TensorProto.BOOL, []),
                 out("carried", TensorProto.INT64, [2])],
        [out("cond_out", TensorProto.BOOL, []), out("next", TensorProto.INT64, [2])],
    )  # fmt: skip
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    start = numpy_helper.from_array(np.zeros(2, np.int64), "start")
    nodes = [
        flag,
        helper.make_node("If", ["flag"], ["shape"], then_branch=shape_of_x, else_branch=neg_shape),
        helper.make_node("If", ["flag"], ["nothing"], then_branch=empty, else_branch=empty),
        helper.make_node("Loop", ["trips", "", "start"], ["summed"], body=body),
    ]
    outputs = [
        out("shape", TensorProto.INT64),
        out("nothing", TensorProto.INT64, [0]),
        out("summed", TensorProto.INT64),
    ]
    model = make_model(nodes, [X], outputs, opset=17, initializer=[one, trips, start])
    constants = constant_outputs(model, inferred_types(model))
    assert {name: c.why for name, c in constants.items()} == {"shape": FOLLOWS, "summed": FOLLOWS,
                                                              "nothing": "holds no elements"}  # fmt: skip
    assert not constants["nothing"].reads_feeds
    # (what they follow from: the condition's Constant and the branches' Shape, as a runtime folds them)
    assert constants["shape"].sources == {"Constant", "Shape"}


def test_a_name_two_graphs_give_values_of_has_no_shape_known():
    """Sibling branches may each name a value u: one a NonZero's of x, whose Shape varies, one a
    float [2, 3]; onnx's inference keeps one type for the name, so neither's shape is taken as
    known, and the If's output varies."""
    flag = helper.make_node("Constant", [], ["flag"], value=numpy_helper.from_array(np.array(True)))
    nonzero = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["u"]), helper.make_node("Shape", ["u"], ["t"])], "then", [],
        [out("t", TensorProto.INT64, [2])],
    )  # fmt: skip
    full = helper.make_graph(
        [helper.make_node("Constant", [], ["u"], value=numpy_helper.from_array(np.ones((2, 3), np.float32))),
         helper.make_node("Shape", ["u"], ["e"])], "else", [], [out("e", TensorProto.INT64, [2])],
    )  # fmt: skip
    nodes = [flag, helper.make_node("If", ["flag"], ["a"], then_branch=nonzero, else_branch=full)]
    assert found(nodes, [out("a", TensorProto.INT64, [2])]) == {}


def test_a_graphs_own_input_is_not_the_outer_value_of_its_name():
    """A Loop body's input named x (the fed input's name) is the body's carried value, given a
    constant: the Loop's output is constant."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Identity", ["x"], ["next"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), out("cond", TensorProto.BOOL, []),
                 out("x", shape=[1])], [out("cond_out", TensorProto.BOOL, []), out("next", shape=[1])],
    )  # fmt: skip
    trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
    start = numpy_helper.from_array(np.ones(1, np.float32), "start")
    nodes = [helper.make_node("Loop", ["trips", "", "start"], ["r"], body=body)]
    assert found(nodes, [out("r", shape=[1])], initializer=[trips, start]) == {"r": FOLLOWS}
    # (what the body computes from its own inputs follows from what the Loop is given: its constants)
    body.node[1].CopyFrom(helper.make_node("Add", ["x", "x"], ["next"]))
    model = make_model(nodes, [X], [out("r", shape=[1])], opset=17, initializer=[trips, start])
    assert constant_outputs(model, inferred_types(model))["r"].sources == {"Constant"}


def test_a_local_functions_outputs_vary_where_its_body_reads_a_fed_parameters_value():
    """A call given x whose body gives the Shape of its parameter is constant in that output and
    varies in the one giving its Neg, and follows from the body's Shape, as does a call of it
    within another body; a Shape of a value the body computes is read as a value (the body's own
    shapes are not known), and a body calling itself varies."""
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    both = helper.make_function(
        "local", "Both", ["v"], ["shape", "negated"],
        [helper.make_node("Shape", ["v"], ["shape"]), helper.make_node("Neg", ["v"], ["negated"])], opsets,
    )  # fmt: skip
    shape_of_neg = [helper.make_node("Neg", ["v"], ["n"]), helper.make_node("Shape", ["n"], ["w"])]
    inner = helper.make_function("local", "Inner", ["v"], ["w"], shape_of_neg, opsets)
    outer = helper.make_function(  # (a call within a body: the parameter's shape known through it)
        "local", "Outer", ["v"], ["w"], [helper.make_node("Both", ["v"], ["w", ""], domain="local")], opsets
    )
    itself = helper.make_function(  # (not valid ONNX; taken as varying)
        "local", "Itself", ["v"], ["w"], [helper.make_node("Itself", ["v"], ["w"], domain="local")], opsets
    )
    nodes = [
        helper.make_node("Both", ["x"], ["s", "y"], domain="local"),
        helper.make_node("Inner", ["x"], ["w"], domain="local"),
        helper.make_node("Outer", ["x"], ["o"], domain="local"),
        helper.make_node("Itself", ["x"], ["i"], domain="local"),
    ]
    outputs = [out("s", TensorProto.INT64), out("y"), out("w", TensorProto.INT64), out("o", TensorProto.INT64),
               out("i", TensorProto.INT64)]  # fmt: skip
    model = make_model(nodes, [X], outputs, opset=17, functions=[both, inner, outer, itself])
    constants = constant_outputs(model, inferred_types(model))
    assert {name: c.why for name, c in constants.items()} == {"s": FOLLOWS, "o": FOLLOWS}
    assert constants["s"].sources == constants["o"].sources == {"Shape"}  # (the body's ops, not the call's)


def test_a_local_function_varies_where_given_a_fed_value_or_where_its_body_may_draw():
    """A call of a function whose body draws (or calls one that does, or holds a Dropout of any
    mode, whose training_mode each call may give otherwise) varies; a call given constants alone,
    of a function that draws nothing, does not."""
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    identity = helper.make_function("local", "Same", ["v"], ["w"], [helper.make_node("Identity", ["v"], ["w"])],
                                    opsets)  # fmt: skip
    draw = helper.make_function("local", "Draw", ["v"], ["w"], [helper.make_node("RandomUniformLike", ["v"], ["w"])],
                                opsets)  # fmt: skip
    calls = helper.make_function("local", "Calls", ["v"], ["w"],
                                 [helper.make_node("Draw", ["v"], ["w"], domain="local")], opsets)  # fmt: skip
    drop = helper.make_function("local", "Drop", ["v", "t"], ["w"],
                                [helper.make_node("Dropout", ["v", "", "t"], ["w"])], opsets)  # fmt: skip
    nodes = [
        helper.make_node("Constant", [], ["c"], value_floats=[1.0]),
        helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.array(False))),
        helper.make_node("Same", ["c"], ["same_c"], domain="local"),
        helper.make_node("Same", ["x"], ["same_x"], domain="local"),
        helper.make_node("Calls", ["c"], ["drawn"], domain="local"),
        helper.make_node("Drop", ["c", "t"], ["dropped"], domain="local"),
    ]
    # (a local function called Dropout is no Dropout: its body draws)
    named_dropout = helper.make_function("local", "Dropout", ["v"], ["w"],
                                         [helper.make_node("RandomUniformLike", ["v"], ["w"])], opsets)  # fmt: skip
    nodes.append(helper.make_node("Dropout", ["c"], ["named"], domain="local"))
    outputs = [out("same_c"), out("same_x"), out("drawn"), out("dropped"), out("named")]
    model = make_model(nodes, [X], outputs, opset=17, functions=[identity, draw, calls, drop, named_dropout])
    assert {name: c.why for name, c in constant_outputs(model, inferred_types(model)).items()} == {"same_c": FOLLOWS}


def test_an_output_of_no_elements_is_found_constant_whatever_it_reads():
    """A Slice of the fed input that keeps nothing (its static shape, as inference gives it,
    holds a 0) has no values to compute."""
    starts, ends, axes = (
        numpy_helper.from_array(np.array([v], np.int64), n) for v, n in ((1, "s"), (1, "e"), (1, "a"))
    )
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a"], ["empty"]), helper.make_node("Neg", ["x"], ["y"])]
    result = found(nodes, [out("empty"), out("y")], initializer=[starts, ends, axes])
    assert result == {"empty": "holds no elements"}
