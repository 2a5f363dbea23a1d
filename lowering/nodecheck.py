"""onnx's full checker on what one node became at the target opset, instead of on the whole model.

The nodes a node became (or the node itself, re-versioned) are checked in a model of their own
at the target opset: every value they read from outside is a graph input of its element type
and unknown shape, so onnx's checker and its strict type inference judge them with what the
version step read (the element types) and nothing else. A conversion is as valid as its input
where every node it touched passes: the nodes it left keep their schema (their version is the
same at both opsets) and read values of the same types.

Where the pass made the nodes from shapes (an axis or a size folded from a static shape), the
check gives the values their known shapes and the node's outputs their stated types, so what the
target's inference can now work out is held against what the model states.

Where such a check fails (an inference that needs ranks or shapes), or cannot be made (the
nodes hold subgraphs, a value's type is not known, Reshape at the target cannot stand in for a
tensor of unknown rank), :func:`check_at_target` says False and the driver has onnx's full
checker judge the whole result instead: a refusal always comes from the whole model's check.
"""

from __future__ import annotations

import onnx

from . import schemas
from .graphs import holds_graphs

_STAND_IN = "\x00stand-in of "
_SHAPE = "\x00unknown shape"


def check_at_target(
    scope, node: onnx.NodeProto, result: list | None, ir_version: int, opset_imports, shapes: bool = False
) -> bool:
    """Whether onnx's full checker takes ``result`` (what ``node`` became, as NodeProtos: None
    or ``[node]`` where it stays) at ``scope.opset`` in a model of its own; False also where this check cannot
    stand for the whole model's (see the module docstring). ``shapes``: the result was made
    from shapes (an axis or size folded from a static shape), so the check gives the values
    their shapes where known and the node's outputs the types the model states for them: what
    the target's inference can now work out is held against them."""
    nodes = [node] if not result else result
    if any(n.attribute and holds_graphs(n) for n in nodes):
        return False
    judged_type_of = scope.inferred_type_of if shapes else scope.judged_type_of
    opset = scope.opset
    produced: set[str] = set()
    outside: list[str] = []
    for n in nodes:
        for name in n.input:
            if name and name not in produced and name not in outside:
                outside.append(name)
        produced.update(name for name in n.output if name)
    graph_inputs: list[onnx.ValueInfoProto] = []
    stand_ins: list[onnx.NodeProto] = []  # (the pool's constants the result reads among them)
    for name in outside:
        value_type = judged_type_of(name)
        if value_type is None:
            # (a value of the graph's pool of shared constants, made by rules and put in the graph
            # when the pass ends: never one of the node's own inputs)
            shared = None if name in node.input else scope.constants.node_making(name)
            if shared is None:
                return False
            stand_ins.append(shared)
            continue
        if shapes and value_type.HasField("tensor_type") and value_type.tensor_type.HasField("shape"):
            graph_inputs.append(onnx.helper.make_value_info(name, value_type))
        elif value_type.HasField("tensor_type"):
            element_type = value_type.tensor_type.elem_type
            if not _reshape_takes(element_type, opset):
                return False
            scalar = _STAND_IN + name
            graph_inputs.append(onnx.helper.make_tensor_value_info(scalar, element_type, []))
            stand_ins.append(onnx.helper.make_node("Reshape", [scalar, _SHAPE], [name]))
        else:
            graph_inputs.append(onnx.helper.make_value_info(name, _shapeless(value_type)))
    if stand_ins:
        graph_inputs.append(onnx.helper.make_tensor_value_info(_SHAPE, onnx.TensorProto.INT64, ["rank"]))
    stated = []
    if shapes:
        for name in node.output:
            value_type = scope.inferred_type_of(name) if name else None
            if value_type is not None:
                stated.append(onnx.helper.make_value_info(name, value_type))
    graph = onnx.helper.make_graph([*stand_ins, *nodes], "checked", graph_inputs, [], value_info=stated)
    model = onnx.helper.make_model(graph, opset_imports=opset_imports, ir_version=ir_version)
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:  # (any failure of the checker or its inference: the whole model decides)
        return False  # e.g. an inference that needs the shapes this check leaves out
    return True


def checker_message(error: Exception) -> str:
    """The checker's message on one line: its first paragraph, then the node its Context names."""
    text = str(error).strip()
    if not text:
        return "invalid model"
    message, _, rest = text.partition("==> Context:")
    first_paragraph = message.strip().split("\n\n")[0]
    line = " ".join(part.strip() for part in first_paragraph.splitlines() if part.strip())
    context = " ".join(rest.split())
    return f"{line} ({context})" if context else line


def _reshape_takes(element_type: int, opset: int) -> bool:
    """Whether Reshape at ``opset`` takes a shape input and tensors of ``element_type``."""
    schema = schemas.schema_in_force("Reshape", opset)
    if schema is None or len(schema.inputs) < 2:  # (Reshape-1 takes the shape as an attribute)
        return False
    type_string = schemas.type_string(onnx.helper.make_tensor_type_proto(element_type, None))
    return type_string in schemas.input_type_strings("Reshape", opset, 0)


def _shapeless(value_type: onnx.TypeProto) -> onnx.TypeProto:
    """``value_type`` without any shape, at any depth (what the version step judged)."""
    copy = onnx.TypeProto()
    copy.CopyFrom(value_type)
    stack = [copy]
    while stack:
        current = stack.pop()
        kind = current.WhichOneof("value")
        if kind in ("tensor_type", "sparse_tensor_type"):
            getattr(current, kind).ClearField("shape")
        elif kind == "sequence_type":
            stack.append(current.sequence_type.elem_type)
        elif kind == "optional_type":
            stack.append(current.optional_type.elem_type)
        elif kind == "map_type":
            stack.append(current.map_type.value_type)
    return copy
