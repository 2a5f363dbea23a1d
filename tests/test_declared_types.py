"""The types a graph states (``lowering.declared_types.declared_types``, read from a value_info when first
asked for) are what reading every value_info gives: a later group (inputs, outputs, value_info)
with a type wins, within a group the later value_info with a type, then initializers and Constant
nodes where no value_info types the value."""

from __future__ import annotations

import random

import onnx
from onnx import TensorProto, helper

from lowering.declared_types import declared_types


def stated_by_reading_everything(graph: onnx.GraphProto) -> dict[str, onnx.TypeProto]:
    """The definition: every value_info read in order, a later one with a type overriding."""
    types: dict[str, onnx.TypeProto] = {}
    for group in (graph.input, graph.output, graph.value_info):
        for info in group:
            if info.HasField("type"):
                types[info.name] = info.type
    for tensor in graph.initializer:
        types.setdefault(tensor.name, helper.make_tensor_type_proto(tensor.data_type, None))
    for sparse in graph.sparse_initializer:
        types.setdefault(sparse.values.name, helper.make_tensor_type_proto(sparse.values.data_type, None))
    for node in graph.node:
        if node.op_type == "Constant":
            types.setdefault(node.output[0], helper.make_tensor_type_proto(node.attribute[0].t.data_type, None))
    return types


def random_graph(seed: int) -> onnx.GraphProto:
    """Value_infos naming a few values many times over, some without a type, in every group."""
    rng = random.Random(seed)
    names = [f"v{k}" for k in range(6)]
    element_types = [TensorProto.FLOAT, TensorProto.INT64, TensorProto.BFLOAT16, TensorProto.UINT8]

    def infos(count: int) -> list[onnx.ValueInfoProto]:
        made = []
        for _ in range(count):
            name = rng.choice(names)
            if rng.random() < 0.3:
                made.append(onnx.ValueInfoProto(name=name))  # no type
            else:
                made.append(helper.make_tensor_value_info(name, rng.choice(element_types), [rng.randint(1, 4)]))
        return made

    graph = helper.make_graph(
        [], "g", infos(rng.randint(0, 5)), infos(rng.randint(0, 5)), value_info=infos(rng.randint(0, 8))
    )
    if rng.random() < 0.5:
        graph.initializer.append(helper.make_tensor(rng.choice(names), TensorProto.INT32, [1], [1]))
    if rng.random() < 0.3:
        values = helper.make_tensor(rng.choice(names), TensorProto.INT16, [1], [1])
        indices = helper.make_tensor("indices", TensorProto.INT64, [1], [0])
        graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [2]))
    if rng.random() < 0.5:
        value = helper.make_tensor("c", TensorProto.DOUBLE, [1], [1.0])
        graph.node.append(helper.make_node("Constant", [], [rng.choice(names)], value=value))
    return graph


def test_declared_types_are_what_reading_every_value_info_gives():
    for seed in range(400):
        graph = random_graph(seed)
        expected = stated_by_reading_everything(graph)
        declared = declared_types(graph)
        for name in [f"v{k}" for k in range(6)] + ["unknown"]:
            assert declared.get(name) == expected.get(name), (seed, name)


def test_a_value_info_without_a_type_leaves_an_earlier_typed_one_in_its_group():
    graph = helper.make_graph(
        [],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
        [],
        value_info=[
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            onnx.ValueInfoProto(name="x"),
            onnx.ValueInfoProto(name="y"),
        ],
    )
    declared = declared_types(graph)
    assert declared.get("x").tensor_type.elem_type == TensorProto.FLOAT
    assert declared.get("y") is None
    declared.setdefault("x", helper.make_tensor_type_proto(TensorProto.INT64, None))
    declared.setdefault("y", helper.make_tensor_type_proto(TensorProto.INT64, None))
    assert declared.get("x").tensor_type.elem_type == TensorProto.FLOAT
    assert declared.get("y").tensor_type.elem_type == TensorProto.INT64


def test_a_function_declares_the_types_of_its_value_infos():
    function = helper.make_function(
        "local", "F", ["x"], ["y"], [helper.make_node("Identity", ["x"], ["y"])], [helper.make_opsetid("", 18)]
    )
    function.value_info.extend(
        [
            helper.make_tensor_value_info("y", TensorProto.INT8, [1]),
            onnx.ValueInfoProto(name="y"),
            helper.make_tensor_value_info("x", TensorProto.INT8, [1]),
        ]
    )
    declared = declared_types(function)
    assert declared.get("y").tensor_type.elem_type == TensorProto.INT8
    assert declared.get("x").tensor_type.elem_type == TensorProto.INT8
    assert declared.get("z") is None


def _random_type(rng: random.Random, depth: int = 0) -> onnx.TypeProto:
    """A tensor, sparse tensor, sequence, optional or map type, with or without a shape."""
    element = rng.choice([TensorProto.FLOAT, TensorProto.INT64, TensorProto.BFLOAT16, TensorProto.FLOAT8E4M3FN])
    shape = rng.choice([None, [], [2, "N"], [rng.randint(0, 9)] * rng.randint(1, 3)])
    kind = rng.choice(["tensor", "sparse", "seq", "optional", "map"] if depth < 2 else ["tensor"])
    if kind == "tensor":
        return helper.make_tensor_type_proto(element, shape)
    if kind == "sparse":
        return helper.make_sparse_tensor_type_proto(element, shape)
    if kind == "seq":
        return helper.make_sequence_type_proto(_random_type(rng, depth + 1))
    if kind == "optional":
        return helper.make_optional_type_proto(_random_type(rng, depth + 1))
    return helper.make_map_type_proto(TensorProto.INT64, _random_type(rng, depth + 1))


def test_type_strings_found_by_a_types_bytes_are_its_schema_spelling():
    """``declared_types.type_string`` (remembered by a type's bytes, up to a bound, and at once for the
    shared tensor types) spells every type as ``schemas.type_string`` does, past the bound too."""
    from lowering import declared_types as declared
    from lowering import schemas

    rng = random.Random(13)
    types = [_random_type(rng) for _ in range(3000)]
    types += [helper.make_tensor_type_proto(TensorProto.INT8, [size]) for size in range(5000)]  # past the bound
    weights = [helper.make_tensor(f"w{k}", element, [0], []) for k, element in enumerate([1, 21, 16])]
    shared = declared_types(helper.make_graph([], "g", [], [], weights))  # initializers' types are shared
    types += [shared.get(tensor.name) for tensor in weights]
    for type_proto in types + types[::-1]:
        assert declared.type_string(type_proto) == schemas.type_string(type_proto)


def test_the_element_types_stated_read_at_once_are_those_get_gives():
    """What the whole graph's typing reads in one pass over the value_infos: each name a
    value_info types, with the element type of what :meth:`get` gives it, 0 for a sequence,
    an optional or a tensor of undefined element type (the graph's types are then open)."""
    from lowering.declared_types import element_type_of

    rng = random.Random(7)
    for seed in range(400):
        graph = random_graph(seed)
        for group in (graph.input, graph.output, graph.value_info):
            for info in list(group):
                roll = rng.random()
                if roll < 0.1:
                    info.type.CopyFrom(helper.make_sequence_type_proto(helper.make_tensor_type_proto(1, None)))
                elif roll < 0.15:
                    info.type.tensor_type.elem_type = TensorProto.UNDEFINED
        declared = declared_types(graph)
        expected = {
            info.name: element_type_of(declared.get(info.name)) or 0
            for group in (graph.input, graph.output, graph.value_info)
            for info in group
            if declared.get(info.name) is not None and any(i.name == info.name and i.HasField("type") for i in group)
        }
        assert declared_types(graph).stated_element_types() == expected, seed
