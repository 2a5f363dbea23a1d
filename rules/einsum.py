"""Einsum (versions 12, 28, no function body) lowered to Transpose, Reshape, MatMul and ReduceSum."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = ("Transpose", "Reshape", "MatMul", "ReduceSum", "Unsqueeze", "Squeeze", "Cast", "Constant", "Gather")
# The rule writes ops as they are from this opset on: each of them exists and Constant holds
# its int64 shapes and axes (from 9), onnx.defs says (the types MatMul and ReduceSum take are
# asked per node).
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)

# How far the lowered Einsum may stray from the op, per float type: onnx's backend tolerance,
# and 2^-7 for bfloat16 (its 8 bits). Measured: bit for bit against onnxruntime's kernel, which
# lays the operands out and sums as the rule does, on float, double, bfloat16 (float32
# arithmetic, each partial sum rounded to bfloat16, as its kernel keeps them) and float16 (which
# its CPU kernel lacks: onnxruntime computes the op in float32 between Casts, as the rule does).
# onnx.reference adds float16 in float16: the rule is within 2^-8.2 of it on standard normal
# inputs summing up to 300 terms. Integers: bit for bit (onnxruntime's own MatMul and ReduceSum;
# its integer sums do not wrap around).
EINSUM_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=1e-3, atol=1e-7),
    TensorProto.DOUBLE: Tolerance(rtol=1e-3, atol=1e-7),
    TensorProto.FLOAT16: Tolerance(rtol=1e-3, atol=1e-7),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=2**-7),
}


def einsum_reference(*operands: np.ndarray, equation: str) -> np.ndarray:
    """numpy's einsum in float64 (integers in int64), cast to the operands' type."""
    dtype = operands[0].dtype
    wide = np.int64 if np.issubdtype(dtype, np.integer) else np.float64
    with np.errstate(all="ignore"):
        return np.einsum(equation.replace(" ", ""), *[o.astype(wide) for o in operands]).astype(dtype)


@dataclass(frozen=True)
class Equation:
    """An einsum equation with its ellipses spelled out: the labels of every operand's axes
    and of the output's (an ellipsis' axes are ``...0``, ``...1``, … from its first)."""

    operands: tuple[tuple[str, ...], ...]
    output: tuple[str, ...]


def parse_equation(equation: str, ranks: list[int | None]) -> Equation | str:
    """The equation's labels (an index repeated within a term, a diagonal, named as often as the
    term names it), or why the rule does not take it (a sentence)."""
    text = equation.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        return f"the equation '{equation}' names {len(terms)} operands, the node has {len(ranks)}"
    ellipsis_rank = None
    operands = []
    for index, (term, rank) in enumerate(zip(terms, ranks, strict=True)):
        letters = term.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in letters):
            return f"the equation '{equation}' has a term '{term}' that is not letters and one ellipsis"
        if "..." in term:
            if rank is None:
                return f"the rank of input {index} is unknown, so its ellipsis' axes cannot be counted"
            count = rank - len(letters)
            if count < 0 or (ellipsis_rank is not None and count != ellipsis_rank):
                return f"the ellipses of the equation '{equation}' stand for different numbers of axes"
            ellipsis_rank = count
            before, _, after = term.partition("...")
            labels = (*before, *(f"...{k}" for k in range(count)), *after)
        else:
            if rank is not None and rank != len(term):
                return f"input {index} has rank {rank}, but its term '{term}' names {len(term)} axes"
            labels = tuple(term)
        operands.append(labels)
    ellipsis = tuple(f"...{k}" for k in range(ellipsis_rank or 0))
    if arrow:
        letters = rhs.replace("...", "", 1)
        if not all(c.isascii() and c.isalpha() for c in letters):
            return f"the output term '{rhs}' of the equation '{equation}' is not letters and one ellipsis"
        if "..." in rhs:
            before, _, after = rhs.partition("...")
            output = (*before, *ellipsis, *after)
        elif ellipsis:
            return (
                f"the output of the equation '{equation}' drops the axes of the ellipsis, which the rule does not sum"
            )
        else:
            output = tuple(rhs)
        if len(set(output)) != len(output):
            return f"the output term '{rhs}' repeats an index"
        unknown = [c for c in output if not any(c in labels for labels in operands)]
        if unknown:
            return f"the output names the index {', '.join(unknown)}, which no input has"
    else:  # implicit: the ellipsis first, then the letters seen once, in ASCII order
        letters = [c for labels in operands for c in labels if not c.startswith("...")]
        output = (*ellipsis, *sorted(c for c in set(letters) if letters.count(c) == 1))
    return Equation(tuple(operands), output)


@rule(
    "Einsum",
    versions=(12, 28),
    emits=EMITS,
    rounding_invariant=False,
    reference=einsum_reference,
    tolerance=EINSUM_TOLERANCE,
)
def einsum_by_matmul(b: Builder, *operands: Value, equation: str = "") -> Value:
    """Einsum(A, B) = Transpose(Reshape(MatMul(Reshape(Transpose(A)), Reshape(Transpose(B))))).

    Two operands: A is laid out as [batch..., M, K] and B as [batch..., K, N] (Transpose, then
    Reshape where a group holds several axes, Unsqueeze where it holds none): batch the indices
    both inputs and the output have, K those both have and the output lacks (summed by the
    MatMul), M and N those only A or only B has; MatMul broadcasts the batch axes (an
    ellipsis'); the product is reshaped to [batch..., M..., N...] and transposed to the output's
    order. An index only one operand has and the output lacks is summed first (ReduceSum).
    Einsum(A) = Transpose(ReduceSum(A)): the indices the output lacks summed. The sums are laid out
    and taken as onnxruntime's kernel takes them (its MatMul on the same layout; A's own indices
    summed together, B's one at a time, with the axes of length 1 its kernel adds), so the
    answer is onnxruntime's bit for bit on every form tried (float, double, int32, int64,
    bfloat16, float16); the stated tolerance is onnx's backend one. float16 and bfloat16 are
    computed in float32, each partial sum rounded to the type as the op keeps it (onnxruntime's
    bfloat16 kernel), except where the runtime itself computes the op in float32 between Casts
    (onnxruntime on float16). An index repeated within one term (a diagonal) is first gathered
    to one axis (:func:`_diagonal`, exact). Not lowered: more than
    two operands, a diagonal of lengths not known statically, an output that drops an
    ellipsis' axes, a summed index whose lengths differ (broadcast), a merged group of axes
    whose lengths Reshape cannot be told, types MatMul or ReduceSum do not run on, opsets
    below 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    if not operands or not equation:
        raise NotLowered("Einsum needs its equation and an operand")
    if isinstance(equation, bytes):
        equation = equation.decode()
    if len(operands) > 2:
        raise NotLowered(f"Einsum of {len(operands)} operands: this rule takes one or two")
    shapes = [b.shape_of(operand) for operand in operands]
    parsed = parse_equation(equation, [None if shape is None else len(shape) for shape in shapes])
    if isinstance(parsed, str):
        raise NotLowered(parsed)
    diagonals = [_diagonal(b, *found) for found in zip(operands, parsed.operands, shapes, strict=True)]
    operands, labels, shapes = zip(*diagonals, strict=True)
    parsed = Equation(tuple(labels), parsed.output)
    if len(operands) == 1:
        return _one_operand(b, operands[0], parsed.operands[0], parsed.output)
    return _two_operands(b, operands, list(shapes), parsed)


# The most positions a diagonal's index tensor may hold (one Gather of the flattened operand).
MOST_DIAGONAL_POSITIONS = 1 << 20


def _diagonal(b: Builder, x: Value, labels: tuple[str, ...], shape: list[int | None] | None):
    """x's diagonal y[a, b, …] = x[… the positions its term names …], each index once in the order the
    term first names it: Gather(Reshape(x, [-1]), p), p the flat positions; or, where a length other
    than a repeated index' is unknown, Gather(Reshape(Transpose(x), [..., n^k]), i·(1 + n + … + n^(k-1))).

    An index the term repeats k times (length n) is made one axis. Where every length is known the
    positions are one constant (row-major strides of x summed over the term's indices), laid out
    in the order the term first names its indices: the layout onnxruntime's kernel keeps, so the
    sums that follow run in its order. Else per repeated index the repeated axes go last
    (Transpose), are read as one axis of n^k (Reshape, the other axes copied by 0), the positions
    where every index is i gathered, and a Transpose restores the order the term first names them.
    Either way values are moved, not computed: each is the original's bit for bit (NaN payloads,
    -0 and all). Returns x, its labels and its shape; NotLowered where a repeated index' lengths
    are not known statically or differ."""
    if len(set(labels)) == len(labels):
        return x, labels, shape
    shape = list(shape) if shape is not None else [None] * len(labels)
    first_named = tuple(dict.fromkeys(labels))
    for label in first_named:
        lengths = {shape[k] for k, c in enumerate(labels) if c == label}
        if labels.count(label) > 1 and (len(lengths) != 1 or None in lengths):
            told = "differ" if len(lengths) > 1 and None not in lengths else "are not known statically"
            raise NotLowered(f"the lengths of the axes of the repeated index {label} (a diagonal) {told}")
    size = {label: shape[labels.index(label)] for label in first_named}
    out_shape = [size[label] for label in first_named]
    if None not in shape and math.prod(out_shape) <= MOST_DIAGONAL_POSITIONS:
        strides = [math.prod(shape[k + 1 :]) for k in range(len(shape))]
        grids = dict(zip(first_named, np.indices(out_shape, dtype=np.int64), strict=True))
        positions = sum(
            (grids[c] * stride for c, stride in zip(labels, strides, strict=True)), np.zeros(out_shape, np.int64)
        )
        flat = b.Reshape(x, b.ints([-1], "flat"))
        return b.Gather(flat, b.tensor(positions.astype(np.int64), "diagonal"), axis=0), first_named, out_shape
    for label in [c for c in first_named if labels.count(c) > 1]:
        where = [k for k, c in enumerate(labels) if c == label]
        n = size[label]
        others = [k for k in range(len(labels)) if k not in where]
        if others + where != list(range(len(labels))):
            x = b.Transpose(x, perm=others + where)
        x = b.Reshape(x, b.ints([0] * len(others) + [n ** len(where)], "diagonal_shape"))
        step = sum(n**j for j in range(len(where)))
        x = b.Gather(x, b.ints([i * step for i in range(n)], f"diagonal_{label}"), axis=len(others))
        labels = (*(labels[k] for k in others), label)
        shape = [shape[k] for k in others] + [n]
    if labels != first_named:
        x = b.Transpose(x, perm=[labels.index(label) for label in first_named])
        shape = [shape[labels.index(label)] for label in first_named]
    return x, first_named, shape


def _one_operand(b: Builder, x: Value, labels: tuple[str, ...], output: tuple[str, ...]) -> Value:
    """ReduceSum over the indices the output lacks, then Transpose to the output's order."""
    if any(label not in output for label in labels):
        x, narrow = _arithmetic_type(b, x, "ReduceSum")
        x, labels = _sum_own(b, x, labels, _first_seen([labels]), keep=set(output))
        x = narrow(x)
    return _transposed(b, x, labels, output)


def _first_seen(terms) -> list[str]:
    """Every index in the order onnxruntime's kernel lays its operands out: an ellipsis' axes
    first, then the letters in the order the terms first name them."""
    seen = sorted({label for labels in terms for label in labels if label.startswith("...")}, key=lambda e: int(e[3:]))
    for labels in terms:
        seen += [label for label in labels if label not in seen]
    return seen


def _two_operands(b: Builder, operands, shapes, parsed: Equation) -> Value:
    a, c = operands
    element_type = a.element_type
    a, narrow = _arithmetic_type(b, a, "MatMul")
    c = b.computable(c)

    # The op keeps each partial sum in its type (onnxruntime's bfloat16 kernel does), unless the
    # runtime computes it in float32 between Casts (onnxruntime on float16).
    newest = schemas.op_versions("Einsum")[-1]
    keeps_partial_sums = not b.target.runs_widened("Einsum", newest, element_type)

    def rounded(value: Value) -> Value:
        if value.element_type == element_type or not keeps_partial_sums:
            return value
        return b.Cast(narrow(value), to=value.element_type)

    (a_labels, c_labels), output = parsed.operands, parsed.output
    a_shape = shapes[0] or [None] * len(a_labels)
    c_shape = shapes[1] or [None] * len(c_labels)
    a_size, c_size = dict(zip(a_labels, a_shape, strict=True)), dict(zip(c_labels, c_shape, strict=True))
    for label in sorted(set(a_labels) & set(c_labels) - set(output)):
        if None not in (a_size[label], c_size[label]) and a_size[label] != c_size[label]:
            raise NotLowered(f"the summed index {label} has lengths {a_size[label]} and {c_size[label]} (broadcast)")
    seen = _first_seen([a_labels, c_labels])
    if any(label not in c_labels and label not in output for label in a_labels):
        if not b.runs("ReduceSum", a):
            raise NotLowered(f"ReduceSum does not run on {schemas.type_name(a.element_type)} at opset {b.opset}")
        a, a_labels = _sum_own(b, a, a_labels, seen, keep=set(c_labels) | set(output), rounded=rounded)
    if any(label not in a_labels and label not in output for label in c_labels):
        if not b.runs("ReduceSum", c):
            raise NotLowered(f"ReduceSum does not run on {schemas.type_name(c.element_type)} at opset {b.opset}")
        c, c_labels = _sum_own(b, c, c_labels, seen, keep=set(a_labels) | set(output), one_at_a_time=True,
                               rounded=rounded)  # fmt: skip
    a_shape, c_shape = [a_size[label] for label in a_labels], [c_size[label] for label in c_labels]
    batch = [label for label in a_labels if label in c_labels and label in output]
    contracted = [label for label in a_labels if label in c_labels and label not in output]
    rows = [label for label in a_labels if label not in c_labels]
    columns = [label for label in c_labels if label not in a_labels]
    size: dict[str, int | None] = {}
    for label, length in [*zip(a_labels, a_shape, strict=True), *zip(c_labels, c_shape, strict=True)]:
        size[label] = length if size.get(label) is None else size[label]
    left = _grouped(b, a, a_labels, batch, [rows, contracted], size)
    right = _grouped(b, c, c_labels, batch, [contracted, columns], size)
    product = b.MatMul(left, right)
    product = _ungrouped(b, product, len(batch), [rows, columns], size)
    return _transposed(b, narrow(product), (*batch, *rows, *columns), output)


def _arithmetic_type(b: Builder, x: Value, op_type: str):
    """x in the type ``op_type`` computes in (float16 and bfloat16 cast to float32), and how to
    bring a result back to x's type; NotLowered where the op does not run on it."""
    wide = b.computable(x, emit=False)
    if not b.runs(op_type, wide):
        raise NotLowered(f"{op_type} does not run on {schemas.type_name(wide.element_type)} at opset {b.opset}")
    if wide.element_type == x.element_type:
        return x, lambda value: value
    return b.computable(x), lambda value: b.Cast(value, to=x.element_type)


def _sum_own(b: Builder, x: Value, labels, seen: list[str], keep: set[str], *, one_at_a_time=False, rounded=None):
    """ReduceSum over the indices of x that ``keep`` lacks, laid out as onnxruntime's kernel
    lays it out, since its sum's loop follows the layout: x's axes in the order the indices
    were ``seen``, an axis of length 1 for each index x lacks, all summed together (the first
    operand) or one axis at a time (the second), the axes kept, each sum ``rounded`` where
    given. Returns x with the summed and added axes gone, and its indices."""
    ordered = [label for label in seen if label in labels]
    x = _transposed(b, x, labels, ordered)
    lacking = [k for k, label in enumerate(seen) if label not in labels]
    if lacking:
        x = b.over_axes("Unsqueeze", x, lacking)
    summed = [k for k, label in enumerate(seen) if label in labels and label not in keep]
    for group in [[k] for k in summed] if one_at_a_time else [summed]:
        x = b.over_axes("ReduceSum", x, group, keepdims=1)
        x = rounded(x) if rounded is not None else x
    x = b.over_axes("Squeeze", x, sorted(lacking + summed))
    return x, tuple(label for label in ordered if label in keep)


def _grouped(b: Builder, x: Value, labels, batch, groups, size) -> Value:
    """x transposed to [batch..., groups[0]..., groups[1]...] and each group made one axis."""
    order = [*batch, *groups[0], *groups[1]]
    x = _transposed(b, x, labels, order)
    if all(len(group) == 1 for group in groups):
        return x
    if all(len(group) <= 1 for group in groups):
        empty = [len(batch) + g for g, group in enumerate(groups) if not group]
        return b.over_axes("Unsqueeze", x, empty)
    target = _target_shape(len(batch), [[size[label] for label in group] for group in groups], merged=True)
    if isinstance(target, str):
        raise NotLowered(target)
    return b.Reshape(x, b.ints(target, "shape"))


def _ungrouped(b: Builder, x: Value, batch_count: int, groups, size) -> Value:
    """The MatMul's [batch..., M, N] as [batch..., rows..., columns...]."""
    if all(len(group) == 1 for group in groups):
        return x
    if all(len(group) <= 1 for group in groups):
        empty = [batch_count + g for g, group in enumerate(groups) if not group]
        return b.over_axes("Squeeze", x, empty)
    target = _target_shape(batch_count, [[size[label] for label in group] for group in groups], merged=False)
    if isinstance(target, str):
        raise NotLowered(target)
    return b.Reshape(x, b.ints(target, "shape"))


def _target_shape(batch_count: int, groups: list[list[int | None]], *, merged: bool) -> list[int] | str:
    """Reshape's shape input from [batch..., first..., second...] (merged: to one axis per
    group) or back (from one axis per group): 0 (copy) for a batch axis and for an axis that
    keeps its place, the known lengths, -1 for the one unknown left; or why it cannot be said."""
    target = [0] * batch_count
    position = batch_count  # where the group starts in Reshape's input
    for lengths in groups:
        out_lengths = [math.prod(lengths) if None not in lengths else None] if merged else lengths
        for length in out_lengths:
            here = len(target)
            if length is not None and length != 0:
                target.append(length)
            elif length is None and len(lengths) == 1 and here == position:
                target.append(0)  # the axis keeps its index: copied
            elif length is None and -1 not in target:
                target.append(-1)
            else:
                return "Einsum would merge axes of unknown or zero length into one, which needs them known"
        position += 1 if not merged else len(lengths)
    return target


def _transposed(b: Builder, x: Value, labels, order) -> Value:
    """x with its axes (named by ``labels``) in ``order``."""
    labels, order = list(labels), list(order)
    if labels == order:
        return x
    return b.Transpose(x, perm=[labels.index(label) for label in order])
