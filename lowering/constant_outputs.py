"""The graph outputs a runtime of static shapes computes ahead of any feed: those whose values
follow from no graph input's values, given the inputs' shapes (which such a runtime knows when
it builds the model), and those of no elements. rknn's builder folds them away: it refuses a model
of such outputs alone and drops one beside others (``lowering.runtime_profiles.CONSTANT_OUTPUT``).

A value *varies* where it follows from a fed value: the main graph's inputs (one an
initializer gives too: a feed overrides it), a random draw, a Dropout in training; and what a
node computes from a varying value read for its values. Read for its shape or type alone: the
input of Shape, Size and EyeLike, CastLike's target, and Dropout's data for its mask outside
training (all true). A node holding graphs varies where it reads a varying value, its graphs
included, or holds a random draw; a call of a local function, where it is given a varying value
or its body holds a random draw or a Dropout.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from . import schemas
from .graphs import constant_tensor, nested_graphs
from .schemas import RANDOM_OPS

# (op, the input positions it reads for their shape or type alone, not their values)
READ_FOR_SHAPE = {"Shape": (0,), "Size": (0,), "EyeLike": (0,), "CastLike": (1,)}
DROPOUT_TRAINING_INPUT = 2  # (Dropout-12 on: training_mode, false where not given)
DROPOUT_MASK = 1  # (Dropout's second output)
DROPOUT_INFERENCE_ONLY = 7  # (Dropout-7 and -10 have no training; -1 and -6 draw unless is_test)


def constant_outputs(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> dict[str, str]:
    """Per output of ``model``'s main graph that a runtime of static shapes computes ahead (see the
    module's docstring), why, in a few words; ``types``: every value's (``inferred_types``)."""
    graph = model.graph
    varying = {info.name for info in graph.input}
    values = _constant_values(graph)
    drawing = _functions_drawing(model)
    dropout = schemas.version_in_force("Dropout", schemas.default_opset(model.opset_import) or 1)
    for node in graph.node:
        outputs = _varying_outputs(node, varying, values, drawing, dropout)
        varying.update(name for name in outputs if name)
    found = {}
    for info in graph.output:
        if _holds_no_elements(types.get(info.name) or info.type):
            found[info.name] = "holds no elements"
        elif info.name not in varying:
            found[info.name] = "follows from no input's values (given the inputs' shapes)"
    return found


def _varying_outputs(
    node: onnx.NodeProto, varying: set[str], values, drawing: set[tuple[str, str]], dropout: int | None
) -> list[str]:
    """The outputs of ``node`` that vary, given the ``varying`` values it may read (``dropout``:
    the version of Dropout in force)."""
    if (node.domain, node.op_type) in drawing:
        return list(node.output)
    if node.domain not in schemas.DEFAULT_DOMAINS:  # (a local function's call, or an op not known here)
        return list(node.output) if any(name in varying for name in node.input) else []
    if node.op_type in RANDOM_OPS or (node.op_type == "Dropout" and _in_training(node, dropout, values)):
        return list(node.output)
    if any(inner.op_type in RANDOM_OPS for graph in nested_graphs([node]) for inner in graph.node):
        return list(node.output)
    read = [name for position, name in enumerate(node.input) if position not in READ_FOR_SHAPE.get(node.op_type, ())]
    read += [name for graph in nested_graphs([node]) for inner in graph.node for name in inner.input]
    if not any(name in varying for name in read):
        return []
    if node.op_type == "Dropout":  # (outside training its mask is all true: the data's shape alone)
        return [name for position, name in enumerate(node.output) if position != DROPOUT_MASK]
    return list(node.output)


def _in_training(node: onnx.NodeProto, version: int | None, values: Mapping[str, np.ndarray]) -> bool:
    """Whether a Dropout of ``version`` may draw: before version 7 where ``is_test`` is 0 (its
    default); from 12 where its training_mode is given and not a constant false (7 and 10 never
    draw)."""
    if version is None or version < DROPOUT_INFERENCE_ONLY:
        return not any(a.name == "is_test" and a.i for a in node.attribute)
    if len(node.input) <= DROPOUT_TRAINING_INPUT or not node.input[DROPOUT_TRAINING_INPUT]:
        return False
    value = values.get(node.input[DROPOUT_TRAINING_INPUT])
    return value is None or bool(np.asarray(value).any())


def _constant_values(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """The values the main graph's initializers (no input overrides) and Constant nodes hold."""
    fed = {info.name for info in graph.input}
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name not in fed and t.dims == []}
    for node in graph.node:
        tensor = constant_tensor(node) if node.op_type == "Constant" else None
        if tensor is not None and not tensor.dims:
            values[node.output[0]] = numpy_helper.to_array(tensor)
    return values


def _functions_drawing(model: onnx.ModelProto) -> set[tuple[str, str]]:
    """The local functions whose body (or a function it calls, or a graph it holds) holds a
    random op or a Dropout, as (domain, name)."""
    drawing: set[tuple[str, str]] = set()
    changed = True
    while changed:  # (a function calling one found drawing draws too)
        changed = False
        for function in model.functions:
            key = (function.domain, function.name)
            nodes = [*function.node, *(n for g in nested_graphs(function.node) for n in g.node)]
            if key not in drawing and any(
                n.op_type in RANDOM_OPS or n.op_type == "Dropout" or (n.domain, n.op_type) in drawing for n in nodes
            ):
                drawing.add(key)
                changed = True
    return drawing


def _holds_no_elements(type_proto: onnx.TypeProto) -> bool:
    tensor = type_proto.tensor_type
    return (
        type_proto.HasField("tensor_type")
        and tensor.HasField("shape")
        and any(d.HasField("dim_value") and d.dim_value == 0 for d in tensor.shape.dim)
    )
