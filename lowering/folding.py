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


def fold_integer_values(
    nodes: list[onnx.NodeProto],
    constants: dict[str, onnx.TensorProto],
    types: dict[str, onnx.TypeProto],
    opset: int,
    fresh: Callable[[str], str],
) -> list[onnx.NodeProto] | None:
    """``nodes`` with each node whose inputs are all known constants (Shape and Size: an input of
    fully static shape, read from its dimensions) and whose outputs are small integer or bool tensors replaced by
    Constant nodes writing the same names; ``constants`` gains their values. Integer arithmetic,
    evaluated by ``onnx.reference``, is exact. None where nothing folds."""
    folded_any = False
    result: list[onnx.NodeProto] = []
    for node in nodes:
        direct = _shape_or_size(node, types)
        if direct is not None:
            name = node.output[0]
            constants[name] = numpy_helper.from_array(direct, name="")
            result.append(helper.make_node("Constant", [], [name], name=fresh(f"{name}_folded"), value=constants[name]))
            folded_any = True
            continue
        feeds = _known_inputs(node, constants, types)
        if feeds is None or node.op_type == "Constant" or holds_graphs(node) or not node.output:
            result.append(node)
            continue
        arrays = evaluated_small(node, feeds, opset)
        if arrays is None or not all(a.dtype.kind in "iub" for a in arrays):
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


# Ops whose output is an input's values, broadcast together (each output element is one of
# the inputs' broadcast elements, so the output is as large as the broadcast shape).
_BROADCASTING = frozenset(
    "Add Sub Mul Div Mod Neg Abs Sign Equal Less LessOrEqual Greater GreaterOrEqual And Or Xor Not Where Cast "
    "CastLike Max Min Clip Identity BitShift Floor Ceil Round".split()
)
# Ops whose output holds at most as many elements as their inputs together.
_NOT_GROWING = frozenset(
    "Concat Slice Squeeze Unsqueeze Reshape Flatten Transpose CumSum ArgMax ArgMin Unique NonZero "
    "ReduceSum ReduceProd ReduceMax ReduceMin ReduceMean Shape Size Split Trilu".split()
)


def output_size_bound(node: onnx.NodeProto, feeds: dict[str, np.ndarray]) -> int | None:
    """How many elements ``node``'s largest output holds at most, from its inputs' values
    alone, before anything is evaluated; None for an op not known here (not folded: a node such
    as Range or Expand can make a huge tensor from a few small numbers)."""
    values = [feeds.get(name) for name in node.input if name]
    if any(v is None for v in values):
        return None
    try:
        if node.op_type in _BROADCASTING:
            return int(np.prod(np.broadcast_shapes(*[v.shape for v in values]), dtype=np.int64))
        if node.op_type in _NOT_GROWING:
            return int(sum(v.size for v in values))
        if node.op_type == "Range":
            start, limit, delta = (v.item() for v in values)
            return 0 if delta == 0 else max(int(np.ceil((limit - start) / delta)), 0)
        if node.op_type == "ConstantOfShape":
            return int(np.prod(values[0], dtype=np.float64))
        if node.op_type == "Expand":
            return int(
                np.prod(np.broadcast_shapes(values[0].shape, tuple(int(d) for d in values[1])), dtype=np.float64)
            )
        if node.op_type == "Tile":
            return int(values[0].size * np.prod(values[1], dtype=np.float64))
        if node.op_type == "Gather" and values[0].ndim:
            data, indices = values
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0) % data.ndim
            return int(indices.size * data.size // max(data.shape[axis], 1))
    except (ValueError, TypeError, OverflowError):
        return None  # inputs the op refuses (shapes that do not broadcast): not folded
    return None


def evaluated_small(node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray] | None:
    """The node's outputs from ``feeds`` by onnx.reference, where every output is known before
    it runs to stay within MAX_FOLDED_ELEMENTS; None where it may not, onnx.reference cannot run
    the node, or the node fails as it would in the model."""
    bound = output_size_bound(node, feeds)
    if bound is None or bound > MAX_FOLDED_ELEMENTS:  # evaluated only where it stays small
        return None
    from onnx.reference import ReferenceEvaluator

    try:
        outputs = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
    except Exception:  # an op onnx.reference cannot run here, or one that fails as the model would
        return None
    arrays = [np.asarray(value) for value in outputs]
    return arrays if all(a.size <= MAX_FOLDED_ELEMENTS for a in arrays) else None


def shape_slice(node: onnx.NodeProto, dims: list) -> list:
    """dims[start:end] as Shape-15's start and end attributes say (clamped to the rank)."""
    rank = len(dims)
    bounds = {attribute.name: attribute.i for attribute in node.attribute}
    start, end = bounds.get("start", 0), bounds.get("end", rank)
    start, end = (min(max(b + rank if b < 0 else b, 0), rank) for b in (start, end))
    return list(dims[start:end])


def _shape_or_size(node: onnx.NodeProto, types) -> np.ndarray | None:
    """Shape (with start/end, clamped as Shape-15 says) or Size of an input of static shape."""
    if node.op_type not in ("Shape", "Size") or not node.input or len(node.output) != 1:
        return None
    dims = static_shape(types.get(node.input[0]))
    if dims is None:
        return None
    if node.op_type == "Size":
        return np.array(int(np.prod(dims, dtype=np.int64)), dtype=np.int64)
    return np.array(shape_slice(node, dims), dtype=np.int64)


def _known_inputs(node: onnx.NodeProto, constants, types) -> dict[str, np.ndarray] | None:
    """The node's inputs as arrays where all are known, else None."""
    feeds: dict[str, np.ndarray] = {}
    for name in node.input:
        if not name:
            continue
        if name in constants:
            feeds[name] = numpy_helper.to_array(constants[name])
            continue
        return None
    return feeds if node.input else None


def static_shape(type_proto: onnx.TypeProto | None) -> list[int] | None:
    """The sizes of a tensor type that states every size as a number, else None."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
    return None if any(d is None for d in dims) else dims


def integer_value_of(
    node: onnx.NodeProto,
    output_index: int,
    value_of: Callable[[str], onnx.TensorProto | None],
    type_of: Callable[[str], onnx.TypeProto | None],
    opset: int,
) -> onnx.TensorProto | None:
    """Output ``output_index`` of ``node`` where it is a small integer or bool tensor computed
    from constants and static shapes alone (``value_of`` answers each input: a constant, or
    None), evaluated as :func:`fold_integer_values` evaluates; None where it is not."""
    if node.domain not in ("", "ai.onnx") or holds_graphs(node) or node.op_type == "Constant" or not node.input:
        return None
    direct = _shape_or_size(node, {name: type_of(name) for name in node.input[:1]})
    if direct is not None:
        return numpy_helper.from_array(direct, name="")
    if node.op_type in ("Shape", "Size"):
        return None
    constants = {}
    for name in node.input:
        if not name:
            continue
        tensor = value_of(name)
        if tensor is None or tensor.data_type not in INTEGER_TYPES:
            return None
        constants[name] = tensor
    feeds = _known_inputs(node, constants, {})
    if feeds is None or any(a.size > MAX_FOLDED_ELEMENTS for a in feeds.values()):
        return None
    arrays = evaluated_small(node, feeds, opset)
    if arrays is None:
        return None
    array = arrays[output_index]
    if array.dtype.kind not in "iub":
        return None
    return numpy_helper.from_array(array, name="")


INTEGER_TYPES = frozenset(
    {
        onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32, onnx.TensorProto.INT64,
        onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32, onnx.TensorProto.UINT64,
        onnx.TensorProto.BOOL,
    }
)  # fmt: skip
