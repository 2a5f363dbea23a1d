"""A conversion's walk leaves out the nodes of an op every node of which stays as it is at the
target (``Shortcuts.kept_ops``, :mod:`lowering.fast.unchanged_ops`): the model written and the report
are those of the walk that looks at each node, and of the plain path, byte for byte and label
for label; an op whose nodes may hold a type the target's version does not take, a node
holding a graph, and a graph with a value of unknown type are walked."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import slow_but_a_sample  # noqa: E402

import lowering
import lowering.fast
import lowering.scopes
from lowering.fast import Shortcuts
from lowering.verification.runtime import run_onnxruntime

F32 = TensorProto.FLOAT
LINKS = 700  # two nodes a link: past the values typed one by one, the walk types the whole graph


def chain(links: int = LINKS, *, extra=(), inputs=(), outputs=()) -> onnx.ModelProto:
    """y = x, then ``links`` times y = Transpose(Add(y, 1)): Add-14 and Transpose-13 go to 11
    as they are on float."""
    one = onnx.numpy_helper.from_array(np.ones((1,), np.float32), "one")
    nodes, previous = [], "x"
    for k in range(links):
        nodes.append(helper.make_node("Add", [previous, "one"], [f"a{k}"], name=f"add{k}"))
        nodes.append(helper.make_node("Transpose", [f"a{k}"], [f"t{k}"], name=f"transpose{k}", perm=[1, 0]))
        previous = f"t{k}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="last"))
    nodes += extra
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", F32, [2, 2]), *inputs],
        [helper.make_tensor_value_info("y", F32, [2, 2]), *outputs], [one],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.fixture
def left_out(monkeypatch) -> list[tuple[int, dict[str, int]]]:
    """Each main-graph walk's (nodes walked, nodes left out by label), as kept_by_op gave them."""
    found = []
    kept_by_op = lowering.fast.kept_by_op

    def recording(scope, visited, requested):
        decided = kept_by_op(scope, visited, requested)
        found.append((len(decided.walked), decided.counted))
        return decided

    monkeypatch.setattr(lowering.fast, "kept_by_op", recording)
    return found


def converted_every_way(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """``model`` at ``target`` with kept_ops on, off, and on the plain path: the same bytes and
    the same report, its labels in the same order."""
    results = [
        lowering.lower_model(model, target_opset=target, ops=[], fast=fast)
        for fast in (Shortcuts(), Shortcuts(kept_ops=False), False)
    ]
    written = {result.model.SerializeToString() for result in results}
    assert len(written) == 1
    reports = [list(result.report.adapted.items()) for result in results]
    assert reports[0] == reports[1] == reports[2]
    onnx.checker.check_model(results[0].model, full_check=True)
    return results[0].model


@pytest.mark.slow
def test_nodes_of_ops_kept_whole_are_counted_not_walked(left_out):
    model = chain()
    converted = converted_every_way(model, 11)
    (walked, counted), *_ = left_out
    assert counted == {"Add-14→7": LINKS - 1, "Transpose-13→1": LINKS - 1}
    assert walked == 3  # the first Add, the first Transpose, and Identity-16's first (and only) node
    result = lowering.lower_model(model, target_opset=11, ops=[])
    assert result.report.adapted["Add-14→7"] == LINKS and result.report.adapted["Transpose-13→1"] == LINKS
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(run_onnxruntime(converted, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


@pytest.mark.slow
def test_an_op_one_of_whose_nodes_holds_a_type_the_target_does_not_take_is_walked(left_out):
    """One Add on int8 (Add-7 takes no int8: its adapter computes in int32): every Add walked."""
    extra = [helper.make_node("Add", ["i", "i"], ["doubled"], name="int8_add")]
    int8 = [helper.make_tensor_value_info(name, TensorProto.INT8, [3]) for name in ("i", "doubled")]
    model = chain(extra=extra, inputs=int8[:1], outputs=int8[1:])
    converted = converted_every_way(model, 11)
    (walked, counted), *_ = left_out
    assert counted == {"Transpose-13→1": LINKS - 1}
    assert walked == LINKS + 3
    assert "Cast" in {node.op_type for node in converted.graph.node}  # (the int8 Add carried in int32)
    i = np.array([100, -7, 64], np.int8)
    got = run_onnxruntime(converted, {"x": np.ones((2, 2), np.float32), "i": i})[1]
    np.testing.assert_array_equal(got, (i.astype(np.int32) * 2).astype(np.int8))  # wraps as int8 does


@pytest.mark.slow
@pytest.mark.parametrize("held", ["graph", "int"])
def test_a_node_holding_an_attribute_its_op_lacks_is_walked(held, left_out):
    """An Add holding an attribute onnx's checker leaves to its users (``__``-named: a graph, an
    int), which Add-7 does not have: the walk looks at it and refuses it (onnx's converter has no
    Add adapter), as where each node is looked at."""
    inner = helper.make_graph(
        [helper.make_node("Relu", ["v"], ["m"])], "inner",
        [helper.make_tensor_value_info("v", F32, [2, 2])], [helper.make_tensor_value_info("m", F32, [2, 2])],
    )  # fmt: skip
    model = chain()
    holder = model.graph.node[LINKS]
    assert holder.op_type == "Add"
    holder.attribute.append(helper.make_attribute("__held", inner if held == "graph" else -3))
    refusals = set()
    for fast in (Shortcuts(), Shortcuts(kept_ops=False), False):
        with pytest.raises(lowering.LoweringError) as refused:
            lowering.lower(model, target_opset=11, ops=[], fast=fast)
        refusals.add(str(refused.value))
    (refusal,) = refusals
    assert f"node '{holder.name}' (Add)" in refusal
    (walked, counted), *_ = left_out
    assert counted["Add-14→7"] == LINKS - 2


@pytest.mark.slow
def test_a_node_with_an_attribute_its_op_lacks_converts_as_the_walk_converts_it():
    """A Relu-14 holding an int under a ``__`` name goes to 13 through onnx's converter (Relu-6
    lacks the attribute, so it is not judged to mean the same), its other nodes as they are; a
    differential fuzz case where the op's nodes after the first were counted whatever they held."""
    relus = [helper.make_node("Relu", ["x"], [f"r{k}"], name=f"relu{k}") for k in range(1200)]
    relus[600].attribute.append(helper.make_attribute("__i0", -3))
    graph = helper.make_graph(
        relus, "relus", [helper.make_tensor_value_info("x", F32, [2, 2])],
        [helper.make_tensor_value_info(f"r{k}", F32, [2, 2]) for k in range(1200)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    converted = converted_every_way(model, 13)
    ops = [node.op_type for node in converted.graph.node]
    assert ops.count("Relu") == 1199 and "Max" in ops


@pytest.mark.slow
def test_a_value_of_unknown_type_leaves_every_node_walked(left_out):
    """A node of another domain makes a value the schemas cannot type: no op is decided whole."""
    extra = [
        helper.make_node("Opaque", ["x"], ["z"], name="opaque", domain="custom.domain"),
        helper.make_node("Sin", ["z"], ["w"], name="after_opaque"),  # (Sin-7: the same at 11)
    ]
    model = chain(extra=extra, outputs=[helper.make_tensor_value_info("w", F32, [2, 2])])
    model.opset_import.append(helper.make_opsetid("custom.domain", 1))
    converted_every_way(model, 11)
    (walked, counted), *_ = left_out
    assert counted == {} and walked == 2 * LINKS + 2  # (and Identity-16, Opaque)


def alike_on_every_path(model: onnx.ModelProto, target: int) -> str:
    """``model`` converted to ``target`` with kept_ops on, off and on the plain path: the same
    bytes and report, or the same refusal; the refusal, or "converted"."""
    outcomes = set()
    for fast in (Shortcuts(), Shortcuts(kept_ops=False), False):
        try:
            result = lowering.lower_model(model, target_opset=target, ops=[], fast=fast)
            outcomes.add((result.model.SerializeToString(), tuple(result.report.adapted.items())))
        except lowering.LoweringError as refused:
            outcomes.add(str(refused))
    (outcome,) = outcomes
    return outcome if isinstance(outcome, str) else "converted"


@pytest.fixture
def whole_pass_soon(monkeypatch) -> None:
    """A walk of a few nodes asks for most types, so the op lane runs on models this small."""
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", 4)


def test_an_op_whose_older_version_ties_two_inputs_to_one_type_is_walked(whole_pass_soon, left_out):
    """Pow-12 takes a float base with a double exponent; Pow-7 ties both to one type: each of
    the 8 float Pows keeps, the mixed one goes through its adapter (in double), on every path."""
    nodes = [helper.make_node("Pow", [f"r{k - 1}" if k else "x", "y"], [f"r{k}"]) for k in range(8)]
    nodes.append(helper.make_node("Pow", ["r7", "d"], ["p"]))
    inputs = [helper.make_tensor_value_info(n, t, [2]) for n, t in (("x", F32), ("y", F32), ("d", TensorProto.DOUBLE))]
    graph = helper.make_graph(nodes, "pows", inputs, [helper.make_tensor_value_info("p", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    assert alike_on_every_path(model, 11) == "converted"
    assert all(counted == {} for _, counted in left_out)
    result = lowering.lower_model(model, target_opset=11, ops=[])
    assert list(result.report.adapted.items()) == [("Pow-12→7", 8), ("Pow-12→7 via in double", 1)]
    onnx.checker.check_model(result.model, full_check=True)


def test_batch_normalization_whose_older_version_ties_scale_to_x_is_walked(whole_pass_soon, left_out):
    """BatchNormalization-15 takes float16 X with float scale; version 14 ties them: refused on
    every path, not counted as kept."""
    weights = [onnx.numpy_helper.from_array(np.ones(2, np.float32), n) for n in ("s", "b", "mu", "var")]
    stats = ["s", "b", "mu", "var"]
    nodes = [helper.make_node("BatchNormalization", [f"r{k - 1}" if k else "x", *stats], [f"r{k}"]) for k in range(8)]
    nodes.append(helper.make_node("BatchNormalization", ["hx", *stats], ["hy"]))
    half = TensorProto.FLOAT16
    graph = helper.make_graph(
        nodes, "norms",
        [helper.make_tensor_value_info("x", F32, [1, 2]), helper.make_tensor_value_info("hx", half, [1, 2])],
        [helper.make_tensor_value_info("r7", F32, [1, 2]), helper.make_tensor_value_info("hy", half, [1, 2])],
        initializer=weights,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])
    assert "cannot be expressed at opset 14" in alike_on_every_path(model, 14)


def test_a_sparse_initializers_type_is_among_the_graphs_types(whole_pass_soon):
    """Equal-11 on a float sparse initializer cannot go to 10 (Equal-7 takes no float): refused
    on every path, as the value's type is in the graph's types the op lane reads."""
    nodes = []
    for k in range(8):
        nodes.append(helper.make_node("Equal", [f"r{k - 1}" if k else "x", "x"], [f"e{k}"]))
        nodes.append(helper.make_node("Cast", [f"e{k}"], [f"r{k}"], to=TensorProto.INT64))
    nodes.append(helper.make_node("Equal", ["sv", "sv"], ["eq"]))
    int64 = TensorProto.INT64
    graph = helper.make_graph(
        nodes, "equals", [helper.make_tensor_value_info("x", int64, [3])],
        [helper.make_tensor_value_info("r7", int64, [3]), helper.make_tensor_value_info("eq", TensorProto.BOOL, [3])],
    )  # fmt: skip
    values = onnx.numpy_helper.from_array(np.array([1.5], np.float32), "sv")
    graph.sparse_initializer.append(
        helper.make_sparse_tensor(values, onnx.numpy_helper.from_array(np.array([0], np.int64), "si"), [3])
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    assert "which Equal-7 does not take" in alike_on_every_path(model, 10)


def test_constants_are_counted_by_node_and_those_a_known_change_affects_are_walked(whole_pass_soon, left_out):
    """Constant-13 to 11 (step 12 added value_float and others, whose adapter writes them as a
    tensor): a Constant holding a tensor is kept as it is, counted without a walk; one holding
    value_float goes through the adapter, as on the plain path; and below 11 one holding a
    sparse_value, which Constant-9 lacks, is walked and refused alike."""
    values = [onnx.numpy_helper.from_array(np.float32([k])) for k in range(8)]
    tensors = [helper.make_node("Constant", [], [f"c{k}"], value=value) for k, value in enumerate(values)]
    nodes = [*tensors, helper.make_node("Constant", [], ["f"], value_float=2.5)]
    nodes += [helper.make_node("Sum", [f"c{k}" for k in range(8)] + ["f"], ["y"])]
    graph = helper.make_graph(nodes, "constants", [], [helper.make_tensor_value_info("y", F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert alike_on_every_path(model, 11) == "converted"
    (walked, counted), *_ = left_out
    assert counted == {"Constant-13→11": 7}
    result = lowering.lower_model(model, target_opset=11, ops=[])
    adapted = list(result.report.adapted.items())
    assert adapted[:2] == [("Constant-13→11", 8), ("Constant-13→11 via value as a tensor", 1)]
    assert run_onnxruntime(result.model, {})[0].tolist() == [30.5]

    sparse = onnx.numpy_helper.from_array(np.float32([1.0]), "v")
    held = helper.make_sparse_tensor(sparse, onnx.numpy_helper.from_array(np.int64([0]), "i"), [1])
    nodes[-2] = helper.make_node("Constant", [], ["f"], sparse_value=held)
    graph = helper.make_graph(nodes, "constants", [], [helper.make_tensor_value_info("y", F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert "Sparse tensors not supported" in alike_on_every_path(model, 9)


def test_a_change_affecting_only_attributes_the_target_lacks_is_not_asked_of_each_node(
    whole_pass_soon, left_out, monkeypatch
):
    """Constant's step 12 affects only nodes holding value_float and the others (declared as
    HeldAttributes), none of which Constant-11 takes: a Constant whose attributes Constant-11
    takes cannot be affected, and its lane asks nothing of it node by node; the node holding
    value_float is still walked (it holds an attribute the target lacks)."""
    from lowering.conversion.adapters import HeldAttributes

    asked: list[str] = []  # the Constants asked whether they hold an attribute step 12 added
    holds = HeldAttributes.__call__

    def recording(self, node):
        if node.op_type == "Constant":
            asked.append(node.output[0])
        return holds(self, node)

    monkeypatch.setattr(HeldAttributes, "__call__", recording)
    values = [onnx.numpy_helper.from_array(np.float32([k])) for k in range(8)]
    nodes = [helper.make_node("Constant", [], [f"c{k}"], value=value) for k, value in enumerate(values)]
    nodes += [helper.make_node("Constant", [], ["f"], value_float=2.5)]
    nodes += [helper.make_node("Sum", [f"c{k}" for k in range(8)] + ["f"], ["y"])]
    graph = helper.make_graph(nodes, "constants", [], [helper.make_tensor_value_info("y", F32, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    lowering.lower(model, target_opset=11, ops=[])
    assert left_out[0][1] == {"Constant-13→11": 7}
    assert set(asked) <= {"c0"}  # at most the label's first, walked (its judgement may be remembered)
    converted_every_way(model, 11)


@slow_but_a_sample()
@pytest.mark.parametrize(
    "op_type, version, held",
    [
        ("ArgMax", 12, "select_last_index"),
        ("Cast", 19, "saturate"),
        ("Cast", 24, "round_mode"),
        ("Constant", 12, "value_float"),
        ("GatherND", 12, "batch_dims"),
        ("LSTM", 14, "layout"),
        ("Reshape", 14, "allowzero"),
        ("Shape", 15, "start"),
        ("Shape", 15, "end"),
    ],
)
def test_changes_declared_by_the_attributes_they_affect_affect_nodes_holding_them(op_type, version, held):
    """Each change declared as HeldAttributes affects a node holding that attribute, at any
    value, and not the node without it."""
    from lowering.conversion.adapters import HeldAttributes, known_changes

    change = known_changes()[(op_type, version)]
    assert isinstance(change.affects, HeldAttributes) and held in change.affects.names
    for value in (0, 1, 2.5, "x"):
        assert change.affects(helper.make_node(op_type, ["a"], ["b"], **{held: value}, other=1))
    assert not change.affects(helper.make_node(op_type, ["a"], ["b"], other=1))


def reshapes(stated: list[list[onnx.AttributeProto]], links: int = LINKS) -> onnx.ModelProto:
    """``links`` Reshape-14 of x to [4] and back to [2, 2] in turn, the k-th stating the
    attributes ``stated[k % len(stated)]`` (TorchScript states allowzero=0 on each)."""
    shapes = [onnx.numpy_helper.from_array(np.array(s, np.int64), n) for s, n in (([4], "flat"), ([2, 2], "square"))]
    nodes, previous = [], "x"
    for k in range(2 * links):
        node = helper.make_node("Reshape", [previous, "flat" if k % 2 == 0 else "square"], [f"r{k}"], name=f"r{k}")
        node.attribute.extend(stated[k % len(stated)])
        nodes.append(node)
        previous = f"r{k}"
    nodes.append(helper.make_node("Identity", [previous], ["y"], name="last"))
    graph = helper.make_graph(
        nodes, "reshapes", [helper.make_tensor_value_info("x", F32, [2, 2])],
        [helper.make_tensor_value_info("y", F32, [2, 2])], shapes,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.slow
def test_nodes_stating_an_attribute_the_target_lacks_at_its_default_are_written_without_it(left_out):
    """Reshape-14 with allowzero=0 means Reshape-5/13 of the same inputs: the adapter moves it
    without the attribute, and the lane writes each after the first so, under the adapter's
    label; a Reshape stating nothing is kept as it is; allowzero=1 is walked (the adapter reads
    its shape)."""
    zero, one = helper.make_attribute("allowzero", 0), helper.make_attribute("allowzero", 1)
    model = reshapes([[zero], [], [zero], [one]])
    converted = converted_every_way(model, 11)
    (walked, counted), *_ = left_out
    dropped, kept = "Reshape-14→5 via allowzero dropped", "Reshape-14→5"
    assert counted == {dropped: LINKS - 1, kept: LINKS // 2 - 1}
    assert walked == LINKS // 2 + 3  # every allowzero=1, the first of each label, Identity's one
    assert not any(attribute.name == "allowzero" for node in converted.graph.node for attribute in node.attribute)
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    np.testing.assert_array_equal(run_onnxruntime(converted, {"x": x})[0], x)


@pytest.mark.slow
def test_an_attribute_stated_otherwise_than_as_its_default_is_walked(left_out):
    """allowzero=0 written with a doc_string on the attribute (other bytes than the schema's
    default), or beside a ``__`` attribute: walked, as each node is judged alone (the adapter
    moves both without allowzero, the second keeping its ``__`` attribute)."""
    zero = helper.make_attribute("allowzero", 0)
    noted = helper.make_attribute("allowzero", 0)
    noted.doc_string = "stated"
    extra = helper.make_attribute("__extra", 3)
    converted = converted_every_way(reshapes([[zero], [noted], [zero, extra], [zero]]), 11)
    (walked, counted), *_ = left_out
    assert counted == {"Reshape-14→5 via allowzero dropped": LINKS - 1}
    assert walked == LINKS + 2
    extras = [a for node in converted.graph.node for a in node.attribute if a.name == "__extra"]
    assert len(extras) == LINKS // 2


def test_held_attributes_are_read_from_the_steps_schemas():
    """HeldAttributes.added_at reads from onnx.defs what a step added (Shape-15: start and end),
    and refuses a version that is no step of the op, or a step that added no attribute."""
    from lowering.conversion.adapters import HeldAttributes

    assert HeldAttributes.added_at(15, "Shape").names == {"start", "end"}
    assert HeldAttributes.added_at(14, "GRU", "LSTM", "RNN").names == {"layout"}
    with pytest.raises(ValueError, match="no version 12"):
        HeldAttributes.added_at(12, "Reshape")
    with pytest.raises(ValueError, match="adds no attribute"):
        HeldAttributes.added_at(13, "Reshape")
