"""Ops expanded into their own ONNX function body: LayerNormalization with measured tolerances,
then every other op onnx gives a body, registered from ``onnx.defs``."""

from __future__ import annotations

import collections
import re

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.conversion.adapters import attribute_of
from lowering.errors import NotLowered
from lowering.function_bodies import Tolerance, body_op_types, function_expansion, ops_with_bodies
from lowering.graphs import nested_graphs

# Measured against onnxruntime's fused kernel and a float64 numpy computation (tests/
# test_function_expansion.py), on the ONNX backend cases and on rows whose mean is at most 3
# standard deviations from 0 (and, the variance taken in two passes, far off-centre rows too:
# variance_in_two_passes). |got − want| <= atol + rtol·|want|, with atol = rtol:
#   float32: 2^-18 (about 32 float32 epsilons); worst seen 2.5e-6 with ONNX's one-pass
#     variance on mean = 3·std rows, 9.5e-7 on the backend cases.
#   double: as float32 — stash_type 1 asks for the first stage in float32 (onnxruntime's kernel
#     computes it in double; the body follows the spec).
#   float16: 2^-10, one float16 epsilon; worst seen 4.5e-4 (about one output rounding).
#   bfloat16: 2^-7, one bfloat16 epsilon; worst seen 5.9e-3 (onnx.reference, which rounds
#     the body's Mul and Add each to bfloat16; onnxruntime has no bfloat16 Mul).
LAYER_NORMALIZATION_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=2**-18, atol=2**-18),
    TensorProto.DOUBLE: Tolerance(rtol=2**-18, atol=2**-18),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=2**-10),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=2**-7),
}


def variance_in_two_passes(body: onnx.FunctionProto) -> onnx.FunctionProto:
    """Var = Mean((X − Mean(X))²) where ONNX's body computes Var = Mean(X²) − Mean(X)².

    The same quantity, without the cancellation: Mean(X²) − Mean(X)² loses about
    eps · (1 + Mean²/Var) of it, and below zero (a row of 60000s in float16, computed in float32)
    Sqrt(Var + epsilon) is NaN where the op gives B. In the body's nodes:
    ``Square = Mul(XU, XU)``, ``MeanOfSquare = ReduceMean(Square)``, ``SquareOfMean =
    Mul(Mean, Mean)``, ``Var = Sub(MeanOfSquare, SquareOfMean)`` and ``Deviation = Sub(XU, Mean)``
    become ``Deviation``, ``Square = Mul(Deviation, Deviation)``, ``Var = ReduceMean(Square)``
    (the same axes). A body of another form is left as it is."""
    producers = {output: node for node in body.node for output in node.output}

    def made_by(name: str, op_type: str) -> onnx.NodeProto | None:
        node = producers.get(name)
        return node if node is not None and node.op_type == op_type and node.domain in ("", "ai.onnx") else None

    for variance in body.node:
        if variance.op_type != "Sub" or len(variance.input) != 2:
            continue
        mean_of_square = made_by(variance.input[0], "ReduceMean")
        square_of_mean = made_by(variance.input[1], "Mul")
        square = made_by(mean_of_square.input[0], "Mul") if mean_of_square is not None else None
        if square is None or square_of_mean is None or len(set(square.input)) != 1:
            continue
        (x,) = set(square.input)
        (mean,) = set(square_of_mean.input) if len(set(square_of_mean.input)) == 1 else (None,)
        first_mean = made_by(mean, "ReduceMean") if mean is not None else None
        if first_mean is None or first_mean.input[0] != x or first_mean.input[1:] != mean_of_square.input[1:]:
            continue
        if list(first_mean.attribute) != list(mean_of_square.attribute):
            continue
        deviation = next((n for n in body.node if n.op_type == "Sub" and list(n.input) == [x, mean]), None)
        if deviation is None:
            continue
        return _two_pass_body(body, deviation, square, mean_of_square, square_of_mean, variance)
    return body


def _two_pass_body(body, deviation, square, mean_of_square, square_of_mean, variance) -> onnx.FunctionProto:
    """``body`` with its variance computed from ``deviation`` (see :func:`variance_in_two_passes`)."""
    repaired = onnx.FunctionProto()
    repaired.CopyFrom(body)
    del repaired.node[:]
    for node in body.node:
        if node is deviation or node is square_of_mean or node is variance:
            continue
        if node is square:
            repaired.node.append(deviation)
            node = helper.make_node("Mul", [deviation.output[0]] * 2, list(node.output), name=node.name)
        elif node is mean_of_square:
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.output[:] = [variance.output[0]]
            node = copy
        repaired.node.append(node)
    return repaired


def last_axis_unflattened(body: onnx.FunctionProto, input_types: list[onnx.TypeProto | None]) -> onnx.FunctionProto:
    """Over the last axis, X itself where ONNX's body normalizes X2D = Flatten(X, axis):
    Mean(X) = ReduceMean(X, axes=[axis]), and so on (``axis`` as the node states it, -1 or r-1:
    a negative axis exists only from ReduceMean-11, as from Flatten-11); Scale and B as they are where ONNX's body
    takes Flatten(Scale, 0) and Flatten(B, 0), when each has at most one dimension; then the
    result has X's shape, and ``Y = Reshape(Biased, Shape(X))`` is ``Y = Biased``.

    With ``axis`` the last axis (-1, or r-1 where X's rank r is known), the rows Flatten makes
    are X's lines along that axis: ReduceMean over it keeps X's other dimensions and takes the
    same elements, so every value is the body's, in X's shape instead of 2-D. A Scale of shape
    [N] (or [1], or a scalar) broadcasts along the last axis as Flatten's [1, N] does along the
    rows; Scale of another shape keeps Flatten, and the Reshape (X of rank 1 gives [1, N]).
    ``input_types``: the node's inputs' types, with Scale's and B's shapes where the model
    states them or an initializer or Constant holds them (``shaped_inputs``), and X's where
    the model states it. A body of another form is left as it is."""
    producers = {output: node for node in body.node for output in node.output}
    x = body.input[0]
    rows = _flatten_of(body, x)
    axis = _int_attribute(rows, "axis", 1) if rows is not None else None
    if axis is None or not _is_last_axis(axis, input_types[0] if input_types else None):
        return body
    stating_axes = _row_axes(body, producers)
    if stating_axes is None:
        return body
    dropped, renamed = {id(rows)}, {rows.output[0]: x}
    reshape = next((n for n in body.node if n.op_type == "Reshape" and list(n.output) == [body.output[0]]), None)
    shape_of_x = producers.get(reshape.input[1]) if reshape is not None else None
    flattened = [(k, _flatten_of(body, body.input[k])) for k in (1, 2) if k < len(body.input)]  # Scale, B
    if (
        shape_of_x is not None
        and shape_of_x.op_type == "Shape"
        and list(shape_of_x.input) == [x]
        and all(flatten is None or _of_rank_at_most_one(flatten, k, input_types) for k, flatten in flattened)
    ):
        dropped.add(id(reshape))
        renamed[reshape.input[0]] = body.output[0]
        for position, flatten in flattened:
            if flatten is not None:
                dropped.add(id(flatten))
                renamed[flatten.output[0]] = body.input[position]
    row_axes = {id(node) for node in stating_axes}
    repaired = onnx.FunctionProto()
    repaired.CopyFrom(body)
    del repaired.node[:]
    for node in body.node:
        if id(node) in dropped:
            continue
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.input[:] = [renamed.get(name, name) for name in node.input]
        copy.output[:] = [renamed.get(name, name) for name in node.output]
        if id(node) in row_axes:
            (attribute,) = [a for a in copy.attribute if a.name in ("axes", "value")]
            if attribute.name == "axes":  # (the node's own axis: a negative one exists from ReduceMean-11)
                attribute.ints[:] = [axis]
            else:
                attribute.t.CopyFrom(helper.make_tensor(attribute.t.name, TensorProto.INT64, [1], [axis]))
        repaired.node.append(copy)
    return repaired


def _flatten_of(body: onnx.FunctionProto, name: str) -> onnx.NodeProto | None:
    """The body's Flatten of ``name``, or None."""
    return next((n for n in body.node if n.op_type == "Flatten" and list(n.input) == [name]), None)


def _of_rank_at_most_one(flatten: onnx.NodeProto, position: int, input_types: list) -> bool:
    """Whether ``flatten`` is Flatten(v, 0) of an input ``v`` whose type states at most one dimension."""
    rank = _rank(input_types[position] if position < len(input_types) else None)
    return rank is not None and rank <= 1 and _int_attribute(flatten, "axis", 1) == 0


def _row_axes(body: onnx.FunctionProto, producers: dict[str, onnx.NodeProto]) -> list[onnx.NodeProto] | None:
    """The nodes stating the body's reduction axis, 1 of the 2-D rows: each ReduceMean's axes
    attribute, or the Constant [1] its axes input comes from where only ReduceMeans read it;
    None where a ReduceMean reduces otherwise."""
    stating = []
    for node in body.node:
        if node.op_type != "ReduceMean":
            continue
        axes = [a for a in node.attribute if a.name == "axes"]
        if axes and len(node.input) == 1 and list(axes[0].ints) == [1]:
            stating.append(node)
            continue
        constant = producers.get(node.input[1]) if len(node.input) == 2 and not axes else None
        if constant is None or constant.op_type != "Constant" or [a.name for a in constant.attribute] != ["value"]:
            return None
        if onnx.numpy_helper.to_array(constant.attribute[0].t).tolist() != [1]:
            return None
        readers = [n for n in body.node if constant.output[0] in n.input]
        if any(reader.op_type != "ReduceMean" for reader in readers):
            return None
        if all(constant is not found for found in stating):
            stating.append(constant)
    return stating


def _int_attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    return next((attribute.i for attribute in node.attribute if attribute.name == name), default)


def _rank(type_proto: onnx.TypeProto | None) -> int | None:
    """The rank a type states, or None."""
    if type_proto is None or not type_proto.HasField("tensor_type") or not type_proto.tensor_type.HasField("shape"):
        return None
    return len(type_proto.tensor_type.shape.dim)


def _is_last_axis(axis: int, type_proto: onnx.TypeProto | None) -> bool:
    rank = _rank(type_proto)
    return axis == -1 or (rank is not None and axis == rank - 1)


def layer_normalization_repairs(body: onnx.FunctionProto, input_types: list) -> onnx.FunctionProto:
    """ONNX's LayerNormalization body with its variance in two passes, then unflattened over
    the last axis (:func:`variance_in_two_passes`, :func:`last_axis_unflattened`), after the
    repairs of every body (:func:`every_body_repaired`)."""
    body = every_body_repaired(body, input_types)
    return last_axis_unflattened(variance_in_two_passes(body), input_types)


@function_expansion(
    "LayerNormalization",
    versions=(17,),
    tolerance=LAYER_NORMALIZATION_TOLERANCE,
    repair=layer_normalization_repairs,
    shaped_inputs=(1, 2),
)
def layer_normalization_body(node: onnx.NodeProto) -> None:
    """LayerNormalization(X, Scale, B) = (X − Mean(X)) / Sqrt(Var(X) + epsilon) · Scale + B over
    the axes from `axis` on, computed in float32 (stash_type 1), with Var(X) = Mean((X − Mean(X))²)
    (ONNX's own function body, its variance taken in two passes: ONNX's Mean(X²) − Mean(X)²
    cancels, and gives NaN for a constant float16 row of 60000 where the op gives B; over the
    last axis, X is reduced as it is, not flattened to 2-D); Mean and InvStdDev, where the
    node names them, likewise.

    Holds while (X − Mean)² and the row sums stay finite in float32 (|X − Mean| below about
    1.8e19): beyond, the body answers NaN or B where a kernel summing in double does not.
    Only stash_type 1: the other stash types' accuracy is not measured.
    """
    for attribute in node.attribute:
        if attribute.name == "stash_type" and attribute.i != TensorProto.FLOAT:
            name = (
                TensorProto.DataType.Name(attribute.i).lower()
                if attribute.i in TensorProto.DataType.values()
                else attribute.i
            )
            raise NotLowered(
                f"stash_type {attribute.i} ({name}): the body's Mean(X²) − Mean(X)² is only accurate in float32"
            )


# The ONNX backend's own comparison (onnx.backend.test.runner: rtol 1e-3, atol 1e-7), stated
# for every op below and met on every backend node case of each (tests/rules/test_function_bodies.py).
BACKEND_TOLERANCE = Tolerance(rtol=1e-3, atol=1e-7)
# bfloat16 has 8 significant bits: the backend's rtol is below its epsilon (2^-7), and the body
# rounds each of its ops to bfloat16 where a fused kernel rounds once. One epsilon, as for
# LayerNormalization (worst seen: Celu's bfloat16 case, one rounding).
BFLOAT16_TOLERANCE = Tolerance(rtol=2**-7, atol=2**-7)


def _formula(op_type: str, version: int) -> str:
    """``Op(inputs) = its ONNX function body: A, B, ...`` from the newest body of ``version``."""
    schema = schemas.schema_in_force(op_type, version)
    inputs = ", ".join(formal.name for formal in schema.inputs)
    op_types = body_op_types(op_type, version)
    if op_types is None:
        return f"{op_type}({inputs}) = its ONNX function body, built for each node from its attributes and input types."
    formula = f"{op_type}({inputs}) = its ONNX function body: {', '.join(op_types)}."
    if "noop_with_empty_axes" in schema.attributes:
        formula += " Not where noop_with_empty_axes=1 (no agreed meaning with empty axes)."
    # a body that draws random numbers: the lowered op has the op's distribution, not its draws
    # (no two kernels share a generator; the backend cases' expected values come from numpy's)
    random = sorted(schemas.RANDOM_OPS.intersection(op_types))
    if random:
        formula += (
            f" Random: the body draws with {', '.join(random)}, so the lowered op has the op's "
            "distribution, not its draws; checked on output shape, type and value set only."
        )
    return formula


def _accepted_types(op_type: str, versions: tuple[int, ...]) -> set[int]:
    return set().union(*(schemas.input_element_types(op_type, version) for version in versions))


NOOP_WITH_EMPTY_AXES = (
    "noop_with_empty_axes=1: with empty axes the spec says the input itself, while the body (as "
    "onnx.reference and onnxruntime) applies its element-wise step; no agreed meaning (the axes' "
    "values are not looked at here)"
)


# Bodies whose result a runtime refuses, whatever the node: refused with the reason.
BODY_DEFECTS: dict[str, str] = {}


def range_inputs_as_scalars(body: onnx.FunctionProto, input_types: list) -> onnx.FunctionProto:
    """Range(start, limit, delta) with each bound first reshaped to a scalar: Reshape(v, []).

    ONNX's AffineGrid body feeds Range 1-element tensors where Range's spec takes scalars (and
    onnxruntime refuses them: 'Input to 'Range' op should be scalars'). A Reshape to shape [] of
    a 1-element tensor is that element, unchanged, so the body computes what it did."""
    return _inputs_as_scalars(body, "Range", (0, 1, 2))


def pad_values_as_scalars(body: onnx.FunctionProto, input_types: list) -> onnx.FunctionProto:
    """Pad(x, pads, value, ...) with its value first reshaped to a scalar: Reshape(value, []).

    ONNX's Attention body pads its mask with a 1-element tensor [-inf] where Pad's spec takes a
    scalar (onnxruntime takes it; tract refuses it: 'inputs[2].rank == 0'). A Reshape to shape []
    of a 1-element tensor is that element, unchanged, so the body computes what it did."""
    return _inputs_as_scalars(body, "Pad", (2,))


def _inputs_as_scalars(body: onnx.FunctionProto, op_type: str, indices: tuple[int, ...]) -> onnx.FunctionProto:
    """``body`` with the inputs at ``indices`` of each default-domain ``op_type`` node reshaped to
    shape [] first (each a 1-element tensor by the body's construction); ``body`` itself where
    no such node reads one."""

    def reads_one(node: onnx.NodeProto) -> bool:
        return (
            node.op_type == op_type
            and node.domain in ("", "ai.onnx")
            and any(k < len(node.input) and node.input[k] for k in indices)
        )

    if not any(reads_one(node) for node in body.node):
        return body
    repaired = onnx.FunctionProto()
    repaired.CopyFrom(body)
    del repaired.node[:]
    taken = {name for node in body.node for name in [*node.input, *node.output]} | set(body.input)
    scalar_shape = _unique(f"{op_type.lower()}_scalar_shape", taken)
    repaired.node.append(
        helper.make_node(
            "Constant", [], [scalar_shape], value=helper.make_tensor(scalar_shape, TensorProto.INT64, [0], [])
        )
    )
    for node in body.node:
        if reads_one(node):
            fixed = onnx.NodeProto()
            fixed.CopyFrom(node)
            for k in indices:
                if k < len(node.input) and node.input[k]:
                    scalar = _unique(f"{node.input[k]}_scalar", taken)
                    repaired.node.append(helper.make_node("Reshape", [node.input[k], scalar_shape], [scalar]))
                    fixed.input[k] = scalar
            repaired.node.append(fixed)
        else:
            repaired.node.append(node)
    return repaired


def all_negative_infinity_as_a_count(body: onnx.FunctionProto, input_types: list) -> onnx.FunctionProto:
    """Equal(ReduceMax(x, axes), c), c one element -inf, written
    Greater(ReduceMin(m, axes), 0.5), m = [x = -inf] as float: every element along the axes is -inf.

    ONNX's Attention body finds a fully masked row so, from its additive mask; tract 0.21/0.23,
    OpenVINO 2024.6 and TVM 0.27 reduce a row of -inf to float's lowest finite value, miss the
    row and give its softmax's NaN where the op gives 0. The minimum of 0s and 1s is 1 exactly
    where every element is -inf; a NaN is not -inf either way (as numpy's max, the spec's
    reference, has it), and an empty row is fully masked either way (+inf, or the largest finite
    value, > 0.5). m is Cast(Equal(x, c), float); where x is built from constants of 0s and -infs
    alone (the bias a bool mask, a causal or a padding mask makes), m is built alike from those
    constants' own m (:func:`_minus_infinity_indicator`), no -inf compared at run time (rknn
    computes the mask's -inf as -10000 and compares it with a -inf unequal). Only where c is of
    rank 0, or of rank 1 with keepdims (the Attention body's): then Equal(x, c) has x's shape (or
    [1] for a scalar x), and 0.5 of c's rank gives the result the shape the original's broadcast
    gave. Only where the ReduceMax feeds that Equal alone (no graph in the body reads it)."""
    producers = {output: node for node in body.node for output in node.output}
    everywhere = [*body.node, *(node for graph in nested_graphs(body.node) for node in graph.node)]
    readers = collections.Counter(name for node in everywhere for name in node.input)
    readers.update(body.output)

    def masked_test(node: onnx.NodeProto) -> tuple[onnx.NodeProto, str, int] | None:
        if node.op_type != "Equal" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
            return None
        for reduced, limit in (node.input, node.input[::-1]):
            reduce = producers.get(reduced)
            if reduce is None or reduce.op_type != "ReduceMax" or reduce.domain not in ("", "ai.onnx"):
                continue
            rank = _negative_infinity_rank(limit, reduce.input[0], producers)
            keepdims = next((a.i for a in reduce.attribute if a.name == "keepdims"), 1)
            if readers[reduced] == 1 and (rank == 0 or (rank == 1 and keepdims == 1)):
                return reduce, limit, rank
        return None

    tests = {k: found for k, node in enumerate(body.node) if (found := masked_test(node)) is not None}
    if not tests:
        return body
    reductions = {reduce.output[0] for reduce, _, _ in tests.values()}
    taken = {name for node in everywhere for name in [*node.input, *node.output]} | set(body.input)
    repaired = onnx.FunctionProto()
    repaired.CopyFrom(body)
    del repaired.node[:]
    halves: dict[int, str] = {}  # (0.5 of c's rank, by rank: the result broadcast as Equal(x, c) was)
    indicators: Indicators = {}
    for k, node in enumerate(body.node):
        if node.op_type == "ReduceMax" and node.output and node.output[0] in reductions:
            continue
        if k not in tests:
            repaired.node.append(node)
            continue
        reduce, negative_infinity, rank = tests[k]
        count = _minus_infinity_indicator(reduce.input[0], producers, taken, indicators, repaired.node)
        fewest = _unique(f"{node.output[0]}_fewest", taken)
        if count is None:
            each, count = (_unique(f"{node.output[0]}_{part}", taken) for part in ("each", "count"))
            repaired.node.append(helper.make_node("Equal", [reduce.input[0], negative_infinity], [each]))
            repaired.node.append(helper.make_node("Cast", [each], [count], to=TensorProto.FLOAT))
        minimum = onnx.NodeProto()
        minimum.CopyFrom(reduce)
        minimum.op_type = "ReduceMin"
        minimum.input[0] = count
        minimum.output[0] = fewest
        repaired.node.append(minimum)
        if rank not in halves:
            halves[rank] = half = _unique("half", taken)
            value = helper.make_tensor(half, TensorProto.FLOAT, [1] * rank, [0.5])
            repaired.node.append(helper.make_node("Constant", [], [half], value=value))
        repaired.node.append(helper.make_node("Greater", [fewest, halves[rank]], [node.output[0]], name=node.name))
    return repaired


# Ops that copy, move or pick elements: the -inf indicator of their output is the op itself on
# the indicators of these inputs (by position; None: every input), its other inputs as they are.
ELEMENTS_MOVED_FROM = {
    "Reshape": (0,), "Unsqueeze": (0,), "Squeeze": (0,), "Expand": (0,), "Flatten": (0,),
    "Transpose": (0,), "Slice": (0,), "Tile": (0,), "Pad": (0, 2), "Where": (1, 2), "Concat": None,
}  # fmt: skip

Nodes = list[onnx.NodeProto]  # (or a FunctionProto's repeated node field)
Indicators = dict[str, str | None]  # (a value's name -> its indicator's, None where it has none)


def _minus_infinity_indicator(
    name: str, producers: dict[str, onnx.NodeProto], taken: set[str], made: Indicators, nodes: Nodes
) -> str | None:
    """m(v) = [v = -inf] as float32, of v's shape, for a value v built from constants holding 0s
    and -infs alone; its nodes appended to ``nodes`` (once per value: ``made``). None where v is
    built otherwise, nothing appended.

    m(C) = the constant [C = -inf] (a ConstantOfShape's of its value likewise); m(Add(p, q)) =
    Max(m(p), m(q)) (p, q each 0 or -inf: their sum is -inf where either is); m(Identity(p)) =
    m(p), and m(Cast(p)) = m(p) for a cast to float16, float, double or bfloat16 (which keep
    -inf; float8 saturates it); m(CastLike(p, q)) = m(p) for q so built (of those types); and an
    op that copies, moves or picks elements (:data:`ELEMENTS_MOVED_FROM`: Where(c, p, q), Pad(p,
    pads, value), Reshape, ...) applied to the indicators of its element inputs gives its
    output's (Pad's value left out is 0, of m 0). No value so built is NaN or +inf, so the
    indicator is exact for every input."""
    if name in made:
        return made[name]
    mark, first_new = len(nodes), len(made)
    made[name] = None  # (while it is being built)
    found = _indicator_written(name, producers, taken, made, nodes)
    if found is None:  # (what its inputs' indicators wrote is taken back; values without one stay known)
        del nodes[mark:]
        for written in [key for key in list(made)[first_new:] if made[key] is not None]:
            del made[written]
    made[name] = found
    return found


def _indicator_written(
    name: str, producers: dict[str, onnx.NodeProto], taken: set[str], made: Indicators, nodes: Nodes
) -> str | None:
    """:func:`_minus_infinity_indicator`'s step: ``name``'s indicator from its producer's inputs'."""
    node = producers.get(name)
    if node is None or node.domain not in ("", "ai.onnx"):
        return None

    def of(value: str) -> str | None:
        return _minus_infinity_indicator(value, producers, taken, made, nodes) if value else ""

    if node.op_type in ("Constant", "ConstantOfShape"):
        return _constant_indicator(node, name, taken, nodes)
    if node.op_type == "Add" and len(node.input) == 2:
        left, right = of(node.input[0]), of(node.input[1])
        if not (left and right):
            return None
        found = _unique(f"{name}_is_minus_inf", taken)
        nodes.append(helper.make_node("Max", [left, right], [found]))
        return found
    if node.op_type == "Identity":
        return of(node.input[0])
    if node.op_type == "Cast":
        return of(node.input[0]) if _keeps_minus_infinity(attribute_of(node, "to")) else None
    if node.op_type == "CastLike" and len(node.input) == 2 and node.input[1]:
        # (q so built is of a type keeping -inf; whether it is, asked without writing its nodes)
        like = _minus_infinity_indicator(node.input[1], producers, set(taken), dict(made), [])
        return of(node.input[0]) if like else None
    if node.op_type in ELEMENTS_MOVED_FROM and not any(a.name == "value" for a in node.attribute):
        return _moved_indicator(node, name, of, taken, nodes)  # (Pad-2's value is an attribute: not so moved)
    return None


def _constant_indicator(node: onnx.NodeProto, name: str, taken: set[str], nodes: Nodes) -> str | None:
    """[C = -inf] as float32 for a Constant C (its ``value``) of 0s and -infs alone, or the
    ConstantOfShape of its value's (default 0); None for any other."""
    values = [a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR]
    if node.op_type == "Constant" and not values:
        return None  # (value_float, value_floats, ...: not looked at)
    array = onnx.numpy_helper.to_array(values[0]) if values else np.zeros(1, np.float32)
    if not _zeros_and_minus_infinities(array):
        return None
    found = _unique(f"{name}_is_minus_inf", taken)
    flags = onnx.numpy_helper.from_array(np.isneginf(array.astype(np.float64)).astype(np.float32), found)
    nodes.append(helper.make_node(node.op_type, list(node.input), [found], value=flags))
    return found


def _moved_indicator(node: onnx.NodeProto, name: str, of, taken: set[str], nodes: Nodes) -> str | None:
    """The node (of :data:`ELEMENTS_MOVED_FROM`) on its element inputs' indicators (``of``: ""
    for an input left out), its other inputs as they are; None where one has no indicator."""
    moved = ELEMENTS_MOVED_FROM[node.op_type]
    positions = list(range(len(node.input))) if moved is None else [k for k in moved if k < len(node.input)]
    given = {}
    for k in positions:
        given[k] = of(node.input[k])
        if given[k] is None:
            return None
    if not positions or not given[positions[0]]:
        return None
    found = _unique(f"{name}_is_minus_inf", taken)
    copied = onnx.NodeProto()
    copied.CopyFrom(node)
    copied.name = ""
    for k, indicator in given.items():
        copied.input[k] = indicator
    copied.output[:] = [found]
    nodes.append(copied)
    return found


def _keeps_minus_infinity(to: int | None) -> bool:
    """Whether a Cast to ``to`` gives -inf for -inf whatever its attributes: float16, float,
    double, bfloat16 (a float8 type saturates it by default, or holds no infinity)."""
    return (
        to is not None and floats.is_float(to) and floats.has_infinity(to)
        and floats.numpy_dtype(to).itemsize >= 2
    )  # fmt: skip


def _zeros_and_minus_infinities(array: np.ndarray) -> bool:
    """Whether ``array`` is of a float type and holds 0s and -infs alone."""
    return array.dtype.kind == "f" and bool(np.isin(array.astype(np.float64), [0.0, -np.inf]).all())


def _negative_infinity_rank(name: str, like: str, producers: dict[str, onnx.NodeProto]) -> int | None:
    """The rank of ``name`` where it is -inf: a Constant of one element -inf, or a Cast of it to a
    float type keeping -inf (:func:`_keeps_minus_infinity`), or a CastLike of it like ``like``
    (the compared value: Equal takes no float8 type, and -inf cast to an integer type is
    undefined); None where it is not."""
    node = producers.get(name)
    if node is None or node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type == "CastLike":
        if len(node.input) != 2 or node.input[1] != like:
            return None
        return _negative_infinity_rank(node.input[0], like, producers)
    if node.op_type == "Cast":
        holds_it = _keeps_minus_infinity(attribute_of(node, "to"))
        return _negative_infinity_rank(node.input[0], like, producers) if holds_it else None
    if node.op_type != "Constant":
        return None
    values = [a.t for a in node.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR]
    if not values:
        return None
    array = onnx.numpy_helper.to_array(values[0])
    if array.size == 1 and array.dtype.kind == "f" and bool(np.isneginf(array.astype(np.float64)).all()):
        return array.ndim
    return None


def _unique(name: str, taken: set[str]) -> str:
    candidate, counter = name, 0
    while candidate in taken:
        counter += 1
        candidate = f"{name}_{counter}"
    taken.add(candidate)
    return candidate


BODY_REPAIRS = {"AffineGrid": range_inputs_as_scalars}
EVERY_BODY_REPAIRS = (
    pad_values_as_scalars,
    all_negative_infinity_as_a_count,
)  # (whatever the op: a context-dependent body is known only when built)


def every_body_repaired(body: onnx.FunctionProto, input_types: list) -> onnx.FunctionProto:
    """``body`` after each of :data:`EVERY_BODY_REPAIRS`."""
    for repair in EVERY_BODY_REPAIRS:
        body = repair(body, input_types)
    return body


def _repairs_of(op_type: str):
    """The repairs of ``op_type``'s body: :data:`EVERY_BODY_REPAIRS`, then its own."""
    own = BODY_REPAIRS.get(op_type)
    if own is None:
        return every_body_repaired
    return lambda body, input_types: own(every_body_repaired(body, input_types), input_types)


def _body_precondition(op_type: str, formula: str):
    schema = schemas.schema_in_force(op_type, schemas.newest_opset())
    reads_noop = schema is not None and "noop_with_empty_axes" in schema.attributes

    def body_applies(node: onnx.NodeProto) -> None:
        # Otherwise the body's own refusals (no body at the opset, none built) say why.
        if op_type in BODY_DEFECTS:
            raise NotLowered(BODY_DEFECTS[op_type])
        if reads_noop and any(a.name == "noop_with_empty_axes" and a.i for a in node.attribute):
            raise NotLowered(NOOP_WITH_EMPTY_AXES)  # as rules/versions/reduce.py refuses to move such a node

    body_applies.__name__ = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op_type).lower() + "_body"
    body_applies.__qualname__ = body_applies.__name__
    body_applies.__doc__ = formula
    return body_applies


def _register_every_body() -> None:
    """Every default-domain op onnx gives a function body, at each version that has one."""
    for op_type, versions in ops_with_bodies("").items():
        if op_type == "LayerNormalization":
            continue  # registered above, with measured tolerances
        tolerance = dict.fromkeys(sorted(_accepted_types(op_type, versions)), BACKEND_TOLERANCE)
        if TensorProto.BFLOAT16 in tolerance:
            tolerance[TensorProto.BFLOAT16] = BFLOAT16_TOLERANCE
        formula = _formula(op_type, versions[-1])
        function_expansion(op_type, versions=versions, tolerance=tolerance, repair=_repairs_of(op_type))(
            _body_precondition(op_type, formula)
        )


_register_every_body()
