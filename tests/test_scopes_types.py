"""A value's element type followed from the op schemas alone (``lowering.scopes``, no onnx
inference) is the type the ONNX backend node cases declare for it, on every case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from support import slow_but_a_sample  # noqa: E402
from version_cases import node_cases

import lowering.scopes
from lowering.naming import NameAllocator
from lowering.scopes import Scope

EXPORTS = Path(__file__).resolve().parents[1] / "golden" / "exports"


def followed_and_declared(model: onnx.ModelProto, other_domains: bool = True) -> list[tuple[str, int | None, int]]:
    """(output, the element type followed without the output's declared type (None: not
    followed), the declared one) for each tensor output of the case's graph. ``other_domains``
    False: the scope is told no node is outside the default domain, as the driver tells it
    where the model imports no other domain (then only for such a case)."""
    graph = onnx.GraphProto()
    graph.CopyFrom(model.graph)
    for info in graph.output:
        info.ClearField("type")
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 1)
    scope = Scope(graph, opset=opset, location="case", names=NameAllocator(), twin=lambda: None)
    scope.other_domains = other_domains or any(node.domain not in ("", "ai.onnx") for node in graph.node)
    found = []
    for info in model.graph.output:
        if info.type.WhichOneof("value") != "tensor_type" or not info.type.tensor_type.elem_type:
            continue
        followed = scope.type_of(info.name)
        element = followed.tensor_type.elem_type if followed is not None else None
        found.append((info.name, element, info.type.tensor_type.elem_type))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("whole", "other_domains"),
    [(False, True), (True, True), (True, False)],
    ids=["value by value", "whole graph at once", "whole graph at once, default domain said"],
)
def test_types_followed_from_the_schemas_are_the_types_the_cases_declare(whole, other_domains, monkeypatch):
    if whole:
        monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", 0)
    followed, wrong = 0, []
    for case in node_cases():
        for name, element, declared in followed_and_declared(case.model, other_domains):
            if element is None:
                continue
            followed += 1
            if element != declared:
                wrong.append(f"{case.name}: {name} followed as {element}, declared {declared}")
    assert not wrong, "\n".join(wrong[:20])
    assert followed > 2000  # most outputs are followed without inference, later outputs of
    # multi-output ops (LSTM, TopK, Split, Dropout, ...) too


def answers(graph: onnx.GraphProto, asked: list[str], opset: int = 18) -> dict[str, int | None]:
    """The element types a scope of ``graph`` (no inference twin) gives, asked in this order
    (None: no type; 0: left to inference)."""
    scope = Scope(graph, opset=opset, location="g", names=NameAllocator(), twin=lambda: None)
    scope.other_domains = any(node.domain not in ("", "ai.onnx") for node in graph.node)  # (as the driver says)
    types = {}
    for name in asked:
        found = scope.type_of(name)
        types[name] = found.tensor_type.elem_type if found is not None else None
    return types


@slow_but_a_sample()
@pytest.mark.parametrize("path", sorted(EXPORTS.glob("*.onnx")), ids=lambda p: p.stem)
def test_the_whole_graph_at_once_types_every_value_as_value_by_value(path, monkeypatch):
    """On a real export without value_info: every value of the graph typed in one pass gets the
    type it gets followed back alone, and that is the type onnx inference gives it."""
    export = onnx.load(path)
    inferred = onnx.shape_inference.infer_shapes(export).graph.value_info
    declared = {info.name: info.type.tensor_type.elem_type for info in inferred}
    graph = onnx.GraphProto()
    graph.CopyFrom(export.graph)
    graph.ClearField("value_info")
    for info in graph.output:
        info.ClearField("type")
    opset = next(entry.version for entry in export.opset_import if entry.domain in ("", "ai.onnx"))
    outputs = [name for node in graph.node for name in node.output]
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", 10**9)
    one_by_one = answers(graph, outputs, opset)
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", 0)
    at_once = answers(graph, outputs, opset)
    assert at_once == one_by_one
    typed = [name for name in at_once if at_once[name] and name in declared]
    assert len(typed) > len(at_once) // 2  # most values of an export follow from the schemas
    assert all(at_once[name] == declared[name] for name in typed)


F16 = onnx.TensorProto.FLOAT16


@pytest.mark.parametrize("before_whole", [0, 10**9], ids=["whole graph at once", "value by value"])
def test_a_value_declared_without_an_element_type_is_followed_through(before_whole, monkeypatch):
    """r's value_info gives a shape and no element type: n = Neg(r) is typed from Relu's input."""
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", before_whole)
    x = onnx.helper.make_tensor_value_info("x", F16, [2])
    nodes = [onnx.helper.make_node("Relu", ["x"], ["r"]), onnx.helper.make_node("Neg", ["r"], ["n"])]
    graph = onnx.helper.make_graph(
        nodes, "g", [x], [], value_info=[onnx.helper.make_tensor_value_info("r", onnx.TensorProto.UNDEFINED, [2])]
    )
    assert answers(graph, ["n"]) == {"n": F16}
    assert answers(graph, ["r", "n"]) == {"r": 0, "n": F16}  # (r's own type is the declared one)


@pytest.mark.parametrize("before_whole", [0, 10**9], ids=["whole graph at once", "value by value"])
def test_a_type_does_not_depend_on_what_was_asked_before(before_whole, monkeypatch):
    """out = Add(c, r): c comes from another domain (no type), r from Relu (float16). Asked
    alone or after its inputs, out is float16: the first input typed like it whose type is
    known, in input order, once the inputs made in the graph are followed."""
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", before_whole)
    nodes = [
        onnx.helper.make_node("Custom", ["x"], ["c"], domain="com.example"),
        onnx.helper.make_node("Relu", ["x"], ["r"]),
        onnx.helper.make_node("Add", ["c", "r"], ["out"]),
    ]
    graph = onnx.helper.make_graph(nodes, "g", [onnx.helper.make_tensor_value_info("x", F16, [2])], [])
    assert answers(graph, ["out"]) == {"out": F16}
    assert answers(graph, ["c", "r", "out"]) == {"c": None, "r": F16, "out": F16}


def read_as_a_conversion_reads(graph: onnx.GraphProto, opset: int, most_types_asked: bool) -> tuple[dict, Scope]:
    """Each node's inputs' element types, asked in node order with the reader's index (as the
    kind memo asks), from a scope that does or does not expect most types to be asked."""
    scope = Scope(graph, opset=opset, location="g", names=NameAllocator(), twin=lambda: None)
    scope.most_types_asked = most_types_asked
    types = {}
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name:
                found = scope.type_of(name, index)
                types[name] = found.tensor_type.elem_type if found is not None else None
    return types, scope


def test_a_far_producer_starts_the_whole_pass_where_most_types_will_be_asked():
    """n is made 101 nodes before Add, its only reader, reads it: past the nodes looked at before
    a reader (lowering.scopes.NEARBY_NODES). Where most types will be asked (a conversion's
    walk), the whole graph is typed in one pass there and no producer index is made; each value
    gets the type it gets otherwise."""
    assert lowering.scopes.NEARBY_NODES < 100
    nodes = [onnx.helper.make_node("Neg", ["x"], ["n"]), onnx.helper.make_node("Relu", ["x"], ["r0"])]
    nodes += [onnx.helper.make_node("Relu", [f"r{k}"], [f"r{k + 1}"]) for k in range(100)]
    nodes += [onnx.helper.make_node("Add", ["n", "r100"], ["out"])]
    x = onnx.helper.make_tensor_value_info("x", F16, [2])
    graph = onnx.helper.make_graph(nodes, "g", [x], [])
    usual, usual_scope = read_as_a_conversion_reads(graph, 18, most_types_asked=False)
    converting, converting_scope = read_as_a_conversion_reads(graph, 18, most_types_asked=True)
    assert converting == usual and set(usual.values()) == {F16}
    assert usual_scope._producer_map is not None  # (n found through the index of every output)
    assert converting_scope._producer_map is None


@slow_but_a_sample()
@pytest.mark.parametrize("path", sorted(EXPORTS.glob("*.onnx")), ids=lambda p: p.stem)
def test_a_conversions_type_reads_give_every_value_the_same_type(path):
    """On a real export without value_info, read as a conversion reads (most types asked) and
    as a lowering of a few ops does: the same type for every value."""
    export = onnx.load(path)
    graph = onnx.GraphProto()
    graph.CopyFrom(export.graph)
    graph.ClearField("value_info")
    opset = next(entry.version for entry in export.opset_import if entry.domain in ("", "ai.onnx"))
    usual, _ = read_as_a_conversion_reads(graph, opset, most_types_asked=False)
    converting, _ = read_as_a_conversion_reads(graph, opset, most_types_asked=True)
    assert converting == usual
    assert sum(1 for element in usual.values() if element) > len(usual) // 2


def test_a_held_shape_is_an_initializers_or_constants_own_never_a_fed_inputs():
    """``held_type_of``: the shape an initializer or a Constant holds, also through
    Identity nodes (TorchScript reads shared weights through one) and from an enclosing
    graph; none for a graph input, even one an initializer of its name gives a default (a
    feed may replace it with another shape); a stated shape as stated."""
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.ones(6, np.float32), "weights")
    default = numpy_helper.from_array(np.ones(6, np.float32), "fed")
    nodes = [
        helper.make_node("Identity", ["weights"], ["read"]),
        helper.make_node("Identity", ["read"], ["read_again"]),
        helper.make_node("Constant", [], ["listed"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Identity", ["fed"], ["fed_read"]),
        helper.make_node("Relu", ["read"], ["computed"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("fed", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("computed", TensorProto.FLOAT, None)],
        [weights, default],
        value_info=[helper.make_tensor_value_info("read_again", TensorProto.FLOAT, ["n", 2])],
    )
    scope = Scope(graph, opset=17, location="g", names=NameAllocator(), twin=lambda: None)

    def dims(name: str) -> list | None:
        found = scope.held_type_of(name)
        if not found.tensor_type.HasField("shape"):
            return None
        return [d.dim_value or d.dim_param for d in found.tensor_type.shape.dim]

    assert dims("weights") == dims("read") == [6]
    assert dims("read_again") == ["n", 2]  # as stated
    assert dims("listed") == [3]
    assert dims("fed") is None and dims("fed_read") is None
    assert dims("computed") is None
    branch = helper.make_graph([helper.make_node("Identity", ["read"], ["inner"])], "b", [], [])
    inner = scope.subgraph(branch, 0, "then_branch", None, "g > then")
    for name in ("inner", "read"):  # (through the branch's Identity and the main graph's)
        assert [d.dim_value for d in inner.held_type_of(name).tensor_type.shape.dim] == [6]


def universe(nodes, value_info=(), initializers=(), opset: int = 18) -> frozenset[int] | None:
    output = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    graph = onnx.helper.make_graph(nodes, "g", [], [output], initializers, value_info=value_info)
    scope = Scope(graph, opset=opset, location="g", names=NameAllocator(), twin=lambda: None)
    scope.other_domains = False
    return scope.element_types_of_all_values()


def test_a_constants_type_among_the_graphs_types_is_the_one_its_name_is_given():
    """The whole pass takes a Constant's element type from its value, where nothing else types
    its output (read at once, without its TypeProto): a value_info naming it, or an initializer
    of its name, comes first, as :meth:`DeclaredTypes.get` has it; a value of undefined type
    leaves the graph's types unknown."""
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    F64, I8 = onnx.TensorProto.DOUBLE, onnx.TensorProto.INT8
    value = numpy_helper.from_array(np.int8([1]))
    nodes = [helper.make_node("Constant", [], ["c"], value=value), helper.make_node("Cast", ["c"], ["y"], to=1)]
    assert universe(nodes) == {I8, onnx.TensorProto.FLOAT}
    stated = [helper.make_tensor_value_info("c", F64, None)]
    assert universe(nodes, value_info=stated) == {F64, onnx.TensorProto.FLOAT}
    assert universe(nodes, value_info=[helper.make_tensor_sequence_value_info("c", I8, None)]) is None
    held = numpy_helper.from_array(np.int16([1]), "c")
    assert universe(nodes, initializers=[held]) == {onnx.TensorProto.INT16, onnx.TensorProto.FLOAT}
    for attribute, element_type in (({"value_int": 1}, onnx.TensorProto.INT64), ({"value_floats": [1.0]}, 1)):
        nodes[0] = helper.make_node("Constant", [], ["c"], **attribute)
        assert universe(nodes) == {element_type, onnx.TensorProto.FLOAT}
    undefined = onnx.TensorProto()
    undefined.dims.append(1)
    nodes[0] = helper.make_node("Constant", [], ["c"], value=undefined)
    assert universe(nodes) is None
