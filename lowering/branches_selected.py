"""An If computed without control flow: both branches' nodes inlined, each output selected by
``Where(cond, then, else)`` (for runtimes that run no If: onnx2torch).

Exact where both branches compute without failing whichever is taken: only nodes of
:data:`TOTAL_OPS` (no index, divisor or shape a value decides), every value of a fully known
shape, the two branches' outputs of one shape (so that Where broadcasts neither), no graph
held in them; a float output selected from a constant free of -0 in one branch (onnxruntime's
Where gives +0 for a -0 it takes from its second input)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from . import floats, schemas
from .folding import static_shape
from .graphs import constant_tensor, held_graphs
from .naming import NameAllocator
from .shape_folding import types_written

Types = Mapping[str, onnx.TypeProto]

# Ops that give an answer for every value of inputs of the shapes inference states (no index,
# divisor, count or shape read from a value), and have no effect but their outputs: computing
# the branch not taken costs time, never a failure.
TOTAL_OPS = frozenset(
    "Abs Acos Acosh Add And Asin Asinh Atan Atanh Cast CastLike Ceil Celu Clip Concat Constant Cos Cosh Div Elu "
    "Equal Erf Exp Flatten Floor Greater GreaterOrEqual HardSigmoid HardSwish Identity IsInf IsNaN LeakyRelu Less "
    "LessOrEqual Log LogSoftmax MatMul Max Mean Min Mish Mod Mul Neg Not Or Pow Reciprocal Relu Round Selu Shape "
    "Sigmoid Sign Sin Sinh Size Softmax Softplus Softsign Sqrt Sub Sum Tan Tanh ThresholdedRelu Transpose Where "
    "Xor".split()
)
# Of those, some only so (:func:`_total_here`): Div of floats (an integer divided by 0 fails), Mod
# of floats with fmod=1 (0 is refused on floats before version 28), Cast and CastLike of no string
# (parsed), Clip of bounds holding one value (onnxruntime fails others).
FIRST_OPSET = schemas.first_opset_writing(("Where", "Reshape"), int64_constants=True)


def both_branches_selected(
    node: onnx.NodeProto, names: NameAllocator, opset: int, types: Types
) -> list[onnx.NodeProto] | None:
    """If(cond) then T else E = Where(c, t_k, e_k) for each output k, t_k and e_k computed by
    T's and E's nodes inlined (their values renamed fresh), c the condition reshaped to a scalar;
    of floats, Where(Equal(c, false), e_k, t_k) where only e_k is a constant free of -0, and
    declined where neither is (onnxruntime's Where loses the sign of a -0 it takes from its
    second input); None where that is not exact (:data:`TOTAL_OPS`, shapes) or not writable at
    ``opset`` (``types``: the model's values' types, by name)."""
    if node.op_type != "If" or node.domain not in schemas.DEFAULT_DOMAINS or opset < FIRST_OPSET:
        return None
    branches = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
    if set(branches) != {"then_branch", "else_branch"}:
        return None
    label = node.name or "If"
    inlined = [_inlined(branches[key], names, f"{label}_{key.split('_')[0]}") for key in ("then_branch", "else_branch")]
    if any(branch is None for branch in inlined):
        return None
    (then_nodes, then_outputs), (else_nodes, else_outputs) = inlined
    if not (len(then_outputs) == len(else_outputs) == len(node.output)):
        return None
    inlined_nodes = then_nodes + else_nodes
    known = {**types, **(types_written(inlined_nodes, types, opset) if inlined_nodes else {})}
    for made in inlined_nodes:
        # (every value read and written of a known shape: inference takes a symbolic length as any,
        # so Add(x[k], c[3]) would be [3] and fail where k is 2, in the branch not taken)
        if not all(static_shape(known.get(name)) is not None for name in [*made.input, *made.output] if name):
            return None
        if not _total_here(made, known):
            return None
    shape_name = names.fresh(f"{label}_scalar_shape")
    condition = names.fresh(f"{node.input[0]}_scalar")
    selected = [
        onnx.helper.make_node(
            "Constant", [], [shape_name], name=names.fresh(f"{label}_Constant"),
            value=numpy_helper.from_array(np.zeros(0, np.int64), shape_name),
        ),
        onnx.helper.make_node(
            "Reshape", [node.input[0], shape_name], [condition], name=names.fresh(f"{label}_Reshape")
        ),
    ]  # fmt: skip
    otherwise = None  # (Equal(c, false), made where a float output's else branch goes second)
    for then_value, else_value, output in zip(then_outputs, else_outputs, node.output, strict=True):
        then_type, else_type = known.get(then_value), known.get(else_value)
        then_shape = static_shape(then_type)
        if then_shape is None or then_shape != static_shape(else_type):
            return None
        element_type = then_type.tensor_type.elem_type
        if element_type != else_type.tensor_type.elem_type or not schemas.accepts("Where", opset, element_type, 1):
            return None
        if not output:
            continue
        where = names.fresh(f"{label}_Where")
        if not floats.is_float(element_type) or _no_negative_zero(then_value, inlined_nodes):
            selected.append(onnx.helper.make_node("Where", [condition, then_value, else_value], [output], name=where))
        elif _no_negative_zero(else_value, inlined_nodes):
            if otherwise is None:
                otherwise, false = names.fresh(f"{condition}_false"), names.fresh(f"{label}_false")
                selected += [
                    onnx.helper.make_node("Constant", [], [false], name=names.fresh(f"{label}_Constant"),
                                          value=numpy_helper.from_array(np.array(False), false)),
                    onnx.helper.make_node("Equal", [condition, false], [otherwise], name=names.fresh(f"{label}_Equal")),
                ]  # fmt: skip
            selected.append(onnx.helper.make_node("Where", [otherwise, else_value, then_value], [output], name=where))
        else:
            return None
    return inlined_nodes + selected


def _no_negative_zero(name: str, nodes: list[onnx.NodeProto]) -> bool:
    """Whether ``name`` is written by a Constant of ``nodes`` holding no -0 (onnxruntime's Where
    gives +0 for a -0 it takes from its second input, its third's as it is: the value that may be
    -0 goes third)."""
    for node in nodes:
        if node.op_type == "Constant" and list(node.output) == [name]:
            tensor = constant_tensor(node)
            if tensor is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
                return False
            values = numpy_helper.to_array(tensor)
            return not bool((np.signbit(values) & (values == 0)).any())
    return False


def _inlined(graph: onnx.GraphProto, names: NameAllocator, label: str) -> tuple[list, list[str]] | None:
    """The branch's nodes with every value it writes (and its initializers, as Constants)
    renamed fresh, and the names its outputs have then; None where a node is not of
    :data:`TOTAL_OPS`, of another domain, or holds a graph."""
    if graph.sparse_initializer or graph.input:
        return None
    renamed: dict[str, str] = {}
    nodes = []
    for tensor in graph.initializer:
        renamed[tensor.name] = names.fresh(f"{label}_{tensor.name}")
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        copy.name = renamed[tensor.name]
        nodes.append(
            onnx.helper.make_node("Constant", [], [copy.name], name=names.fresh(f"{label}_Constant"), value=copy)
        )
    for original in graph.node:
        if (
            original.domain not in schemas.DEFAULT_DOMAINS
            or original.op_type not in TOTAL_OPS
            or any(held_graphs(original))
        ):
            return None
        made = onnx.NodeProto()
        made.CopyFrom(original)
        made.name = names.fresh(f"{label}_{original.name or original.op_type}")
        made.input[:] = [renamed.get(name, name) for name in original.input]
        for k, name in enumerate(original.output):
            if name:
                renamed[name] = names.fresh(f"{label}_{name}")
                made.output[k] = renamed[name]
        nodes.append(made)
    return nodes, [renamed.get(info.name, info.name) for info in graph.output]


def _total_here(node: onnx.NodeProto, types: Types) -> bool:
    """Whether the node of :data:`TOTAL_OPS` gives an answer for every value it may be given."""
    first = types[node.input[0]].tensor_type.elem_type if node.input and node.input[0] else None
    if node.op_type == "Div":
        return floats.is_float(first)
    if node.op_type == "Mod":
        return floats.is_float(first) and any(a.name == "fmod" and a.i == 1 for a in node.attribute)
    if node.op_type in ("Cast", "CastLike"):
        return first != onnx.TensorProto.STRING
    if node.op_type == "Clip":
        return all(int(np.prod(static_shape(types[name]))) == 1 for name in node.input[1:] if name)
    return True
