"""Integer values an inlined function body computes from constants and static shapes, folded
into Constant nodes: the axes, sizes and shapes a body derives from its input's rank (the
axes of RMSNormalization's ReduceMean, of Attention's ReduceMax), which an adapter can then
move into an attribute at an older opset."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .graphs import holds_graphs

MAX_FOLDED_ELEMENTS = 4096  # a folded value is a small integer tensor: axes, a shape, sizes
MAX_SHAPE_ELEMENTS = 1 << 20  # Shape and Size of a static shape are evaluated on zeros of it


def fold_integer_values(
    nodes: list[onnx.NodeProto],
    constants: dict[str, onnx.TensorProto],
    types: dict[str, onnx.TypeProto],
    opset: int,
    fresh: Callable[[str], str],
) -> list[onnx.NodeProto] | None:
    """``nodes`` with each node whose inputs are all known (constants, or for Shape and Size an
    input of fully static shape) and whose outputs are small integer or bool tensors replaced by
    Constant nodes writing the same names; ``constants`` gains their values. Integer arithmetic,
    evaluated by ``onnx.reference``, is exact. None where nothing folds."""
    from onnx.reference import ReferenceEvaluator

    folded_any = False
    result: list[onnx.NodeProto] = []
    for node in nodes:
        feeds = _known_inputs(node, constants, types)
        if feeds is None or node.op_type == "Constant" or holds_graphs(node) or not node.output:
            result.append(node)
            continue
        try:
            outputs = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
        except Exception:  # an op onnx.reference cannot run here: left as it is
            result.append(node)
            continue
        arrays = [np.asarray(value) for value in outputs]
        if not all(a.dtype.kind in "iub" and a.size <= MAX_FOLDED_ELEMENTS for a in arrays):
            result.append(node)
            continue
        for name, array in zip(node.output, arrays, strict=True):
            if not name:
                continue
            tensor = numpy_helper.from_array(array, name="")
            constants[name] = tensor
            result.append(helper.make_node("Constant", [], [name], name=fresh(f"{name}_folded"), value=tensor))
        folded_any = True
    return result if folded_any else None


def _known_inputs(node: onnx.NodeProto, constants, types) -> dict[str, np.ndarray] | None:
    """The node's inputs as arrays where all are known, else None."""
    feeds: dict[str, np.ndarray] = {}
    for name in node.input:
        if not name:
            continue
        if name in constants:
            feeds[name] = numpy_helper.to_array(constants[name])
            continue
        if node.op_type not in ("Shape", "Size") or name != node.input[0]:
            return None
        shape = _static_shape(types.get(name))
        if shape is None or int(np.prod(shape)) > MAX_SHAPE_ELEMENTS:
            return None
        element_type = types[name].tensor_type.elem_type
        try:
            dtype = helper.tensor_dtype_to_np_dtype(element_type)
        except Exception:
            return None
        feeds[name] = np.zeros(shape, dtype=dtype)
    return feeds if node.input else None


def _static_shape(type_proto: onnx.TypeProto | None) -> list[int] | None:
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
    return None if any(d is None for d in dims) else dims
