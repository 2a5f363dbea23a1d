"""Steps that add a type to an op that only moves data, going down: the node is rewritten into
ops that take the type and move its values by index (Gather, GatherElements), bit for bit.

Where-16, Compress-28, OneHot-28 and ReverseSequence-28 added bfloat16; the older versions
lack it, yet Gather, GatherElements, Concat and Reshape take it from opset 13 (and onnxruntime
runs them on it: they copy bytes). Each rewrite computes the indices of the values the op
picks with the older op itself on int64 positions, then gathers the values: no value passes
through arithmetic, so every NaN payload, sign and subnormal comes out as it went in (a Cast
through float would not keep them: tests/rules/versions/test_adapters_types.py). Equal-19 added strings,
which Equal-13 lacks: two strings are equal where Unique-11 gives them one index.
A node of types the older version takes is left to be re-versioned as any (None).
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from lowering import schemas
from lowering.builder import Builder, Value
from lowering.conversion import version_steps
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of
from lowering.errors import NotLowered
from lowering.scopes import element_type_of

INT64_MAX = 2**63 - 1  # a Slice end past every length: Slice clamps it


def _versions(node: onnx.NodeProto, context: AdapterContext) -> tuple[int, int]:
    return (
        schemas.version_in_force(node.op_type, context.source_opset),
        schemas.version_in_force(node.op_type, context.target_opset),
    )


def _untaken(node: onnx.NodeProto, context: AdapterContext):
    """The first input whose type the target's version of the op does not take, None where every
    known type is taken (:func:`lowering.conversion.version_steps.untaken_type`)."""
    source_version, target_version = _versions(node, context)
    input_types = [context.judged_type_of(name) if name else None for name in node.input]
    return version_steps.untaken_type(node, source_version, target_version, input_types)


def _refuse(node: onnx.NodeProto, context: AdapterContext, untaken, why: str) -> NotLowered:
    source_version, _ = _versions(node, context)
    message = version_steps.untaken_type_refusal(node, source_version, context.target_opset, untaken)
    return NotLowered(f"{message}{why}")


def _moved_type(node: onnx.NodeProto, context: AdapterContext, index: int, movers: tuple[str, ...]):
    """The element type of input ``index`` where the target's version of the op lacks a type of
    the node's and every op in ``movers`` takes that element type at the target (None where the
    older op takes the node's types); else NotLowered."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    element_type = element_type_of(context.inferred_type_of(node.input[index]))
    lacking = [
        op for op in movers if element_type is None or not schemas.accepts(op, context.target_opset, element_type)
    ]
    if lacking:
        raise _refuse(
            node,
            context,
            untaken,
            f"; nor moved by index, as opset {context.target_opset} lacks {', '.join(lacking)} on it",
        )
    return element_type


def _scalar_of_shape(b: Builder, flat: Value) -> Value:
    """The length of the 1-D tensor ``flat`` as an int64 scalar (Shape, then Reshape to [])."""
    return b.Reshape(b.Shape(flat), b.ints([], "scalar"))


def _positions(b: Builder, value: Value | str, start: Value | None = None) -> Value:
    """The row-major position of each element of ``value`` (plus ``start``), as int64 shaped as
    ``value``: Range reshaped to Max(Shape(value), 1), then broadcast against zeros of
    Shape(value) (the Max as Where(Shape < 1, 1, Shape): Max-8 takes no int64). The Max keeps
    Reshape off its 0 (copy a dimension) where ``value`` is empty: then the zeros make the
    positions empty too, of ``value``'s shape."""
    shape = b.Shape(value)
    one = b.ints([1], "one")
    at_least_one = b.Where(b.Less(shape, one), one, shape)
    count = b.ReduceProd(at_least_one, keepdims=0)
    first = start or b.scalar(0, TensorProto.INT64, "zero")
    end = b.Add(first, count) if start else count
    grid = b.Reshape(b.Range(first, end, b.scalar(1, TensorProto.INT64, "step")), at_least_one)
    zeros = b.ConstantOfShape(shape, value=helper.make_tensor("zero", TensorProto.INT64, [1], [0]))
    return b.Add(grid, zeros)


WHERE_MOVERS = ("Reshape", "Concat", "Gather")


# Cases: the explicit cases to 15: the backend's bfloat16 Where sit in function bodies
@adapter(("Where",), 16, "down", "gathered by index", versions=(9, 16), types_only=True, cases=3)
def where_as_gathered_index(node: onnx.NodeProto, context: AdapterContext):
    """Where-16(c, a, b) = Gather(Concat(a₁, b₁), Where-9(c, pₐ, n + p_b)), a₁ = Reshape(a, [-1]), n = a's size.

    On a type Where-9 lacks (bfloat16). b₁ = Reshape(b, [-1]); pₐ and p_b are the row-major
    positions of a's and b's elements, int64 shaped as a and b (:func:`_positions`): Where-9
    on int64 broadcasts c, pₐ and p_b as Where-16 broadcasts c, a and b (failing where they do
    not broadcast, as it does), and picks the position of the value Where-16 picks, which
    Gather then copies (bfloat16: Gather, Concat and Reshape take it from opset 13;
    onnxruntime has no bfloat16 Expand, so a and b are not broadcast themselves)."""
    if _moved_type(node, context, 1, WHERE_MOVERS) is None:
        return None
    condition, a, b_ = node.input
    b = context.builder(node)
    flat = b.ints([-1], "flat")
    a_flat, b_flat = b.Reshape(a, flat), b.Reshape(b_, flat)
    a_positions = _positions(b, a)
    b_positions = _positions(b, b_, start=_scalar_of_shape(b, a_flat))
    picked = b.Where(condition, a_positions, b_positions)
    both = b.Concat(a_flat, b_flat, axis=0)
    b.Gather(both, picked, axis=0, outputs=node.output)
    return b.nodes


# Cases: test_compress_bfloat16 to 27
@adapter(("Compress",), 28, "down", "gathered by index", versions=(11, 28), types_only=True, cases=1)
def compress_as_gather(node: onnx.NodeProto, context: AdapterContext):
    """Compress-28(x, c, axis) = Gather(x, Reshape(NonZero(Slice(c, [0], [d])), [-1]), axis), d = x's length there.

    On a type Compress-11 lacks (bfloat16). Without axis, x is flattened first (Reshape to
    [-1]) and d is its size. The Slice keeps the entries of c that have a slice of x (the
    spec: a shorter c selects among the first slices; onnxruntime ignores the entries of a
    longer one, as here, where onnx.reference fails on a true one); NonZero lists the true
    ones in order, and Gather copies those slices (bfloat16: Gather and Reshape take it from
    opset 13)."""
    if _moved_type(node, context, 0, ("Gather", "Reshape")) is None:
        return None
    x, condition = node.input[:2]
    axis = attribute_of(node, "axis")
    b = context.builder(node)
    if axis is None:
        x, axis = b.Reshape(x, b.ints([-1], "flat")), 0
    length = b.Gather(b.Shape(x), b.ints([axis], "axis"), axis=0)
    kept = b.Slice(condition, b.ints([0], "start"), length, b.ints([0], "slice_axis"))
    chosen = b.Reshape(b.NonZero(kept), b.ints([-1], "list"))
    b.Gather(x, chosen, axis=axis, outputs=node.output)
    return b.nodes


# Cases: the explicit int64-depth case to 27 (see ORACLE_GAPS in tests/rules/versions/test_adapter_registry.py)
@adapter(("OneHot",), 28, "down", "values gathered", versions=(11, 28), types_only=True, cases=1)
def one_hot_values_gathered(node: onnx.NodeProto, context: AdapterContext):
    """OneHot-28(i, d, values) = Gather(values, OneHot-11(i, d, [0, 1])), on values of a type OneHot-11 lacks.

    The inner OneHot (same axis) marks each place off (0) or on (1), which Gather turns into
    values[0] or values[1], their bits copied (bfloat16: Gather takes it from opset 13). Its
    [0, 1] is numbered along values' own shape, so a values of another shape fails there as in
    the original; it is int64 where d is int64, else float cast to int64 (the pairs of types
    onnxruntime's OneHot kernels take)."""
    if _moved_type(node, context, 2, ("Gather",)) is None:
        return None
    indices, depth, values = node.input
    carrier = (
        TensorProto.INT64
        if element_type_of(context.inferred_type_of(depth)) == TensorProto.INT64
        else TensorProto.FLOAT
    )
    b = context.builder(node)
    ones = b.ConstantOfShape(b.Shape(values), value=helper.make_tensor("one", carrier, [1], [1]))
    off_on = b.CumSum(ones, b.scalar(0, TensorProto.INT64, "axis"), exclusive=1)
    hot = b.OneHot(indices, depth, off_on, **_attributes(node))
    if carrier != TensorProto.INT64:
        hot = b.Cast(hot, to=TensorProto.INT64)
    b.Gather(values, hot, axis=0, outputs=node.output)
    return b.nodes


def _attributes(node: onnx.NodeProto) -> dict:
    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}


# Cases: test_reversesequence_bfloat16 to 27
@adapter(("ReverseSequence",), 28, "down", "positions reversed", versions=(10, 28), types_only=True, cases=1)
def reverse_sequence_of_positions(node: onnx.NodeProto, context: AdapterContext):
    """ReverseSequence-28(x, lens) = GatherElements(x, ReverseSequence-10(t, lens), time_axis), t = time positions.

    On a type ReverseSequence-10 lacks (bfloat16). t is CumSum(ones shaped as x, time_axis,
    exclusive=1): int64, x's shape, each element's index along the time axis.
    ReverseSequence-10 (same axes) reverses those positions as it would the values, and
    GatherElements copies the value from each (bfloat16: GatherElements takes it from opset
    13); lens out of range fail in both."""
    if _moved_type(node, context, 0, ("GatherElements",)) is None:
        return None
    x, lens = node.input
    time_axis = attribute_of(node, "time_axis")
    time_axis = 0 if time_axis is None else time_axis
    b = context.builder(node)
    ones = b.ConstantOfShape(b.Shape(x), value=helper.make_tensor("one", TensorProto.INT64, [1], [1]))
    positions = b.CumSum(ones, b.scalar(time_axis, TensorProto.INT64, "time_axis"), exclusive=1)
    reversed_positions = b.ReverseSequence(positions, lens, **_attributes(node))
    b.GatherElements(x, reversed_positions, axis=time_axis, outputs=node.output)
    return b.nodes


EQUAL_MOVERS = ("Expand", "Reshape", "Concat", "Unique")


# Cases: test_equal_string and _broadcast to 18 and 11
@adapter(("Equal",), 19, "down", "strings numbered by Unique", versions=(11, 19), types_only=True, cases=4)
def equal_strings_by_unique(node: onnx.NodeProto, context: AdapterContext):
    """Equal-19(x, y) on strings = Equal(u[:n], u[n:]) in X's shape, u = Unique-11(Concat(X₁, Y₁)).inverse_indices.

    X = Expand(x, Shape(y)) and Y = Expand(y, Shape(X)) are x and y broadcast to their common
    shape (Expand-8 broadcasts both ways), X₁ and Y₁ flattened, n their length. Unique gives
    equal strings one index and unequal ones others, so X₁[k] == Y₁[k] exactly where
    u[k] == u[n + k]; the comparisons are put back in X's shape by Gather at its row-major
    positions (:func:`_positions`, empty where X is)."""
    untaken = _untaken(node, context)
    if untaken is None:
        return None
    if untaken[2] != "tensor(string)":
        raise _refuse(node, context, untaken, "")
    _moved_type(node, context, 0, EQUAL_MOVERS)
    x, y = node.input
    b = context.builder(node)
    x_wide = b.Expand(x, b.Shape(y))
    y_wide = b.Expand(y, b.Shape(x_wide))
    flat = b.ints([-1], "flat")
    x_flat, y_flat = b.Reshape(x_wide, flat), b.Reshape(y_wide, flat)
    both = b.Concat(x_flat, y_flat, axis=0)
    numbered = b.fresh("numbered")
    b.Unique(both, outputs=[b.fresh("unique"), "", numbered])
    count = b.Shape(x_flat)
    start, end = b.ints([0], "start"), b.ints([INT64_MAX], "end")
    x_numbers = b.Slice(numbered, start, count)
    y_numbers = b.Slice(numbered, count, end)
    same = b.Equal(x_numbers, y_numbers)
    b.Gather(same, _positions(b, x_wide), axis=0, outputs=node.output)
    return b.nodes
