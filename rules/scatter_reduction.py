"""ScatterND and ScatterElements with a reduction (add and mul from version 16, max and min from
18) lowered to one update at a time on the data's rows: each update combined with the row at its
index, read by Gather, and written back by ScatterND without reduction (or chosen, where ScatterND
is lowered too), in index order, as the spec's loop and onnxruntime's kernels combine them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from onnx import TensorProto, helper

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .gathering import row_numbers

REDUCTIONS = ("add", "mul", "max", "min")
EMITS = (
    "Shape", "Slice", "Reshape", "Concat", "Less", "Add", "Mul", "Gather", "ScatterND", "Cast", "Range", "Expand",
    "Loop", "Identity", "Constant", "Equal", "GatherElements", "Unsqueeze", "Flatten", "ReduceMin", "Where",
    "Squeeze",
)  # fmt: skip
# ScatterND, GatherElements and Range exist from opset 11 (Slice takes its bounds as inputs from 10).
FIRST_OPSET = 11
# Updates whose count is known are written by a chain of that many steps up to this count (for
# runtimes without Loop, and for folding); past it, by a Loop of one step an iteration.
UNROLLED_AT_MOST = 64


def combined(b: Builder, reduction: str, current: Value, update: Value) -> Value:
    """current ∘ update: Add, Mul (a float narrower than float32 in float32, where the target
    runs them only so); max = update unless update < current, min = update unless current < update.

    max and min as onnxruntime's kernels compute them (measured on every pair of float edge
    values, NaN payloads and ±0 among them, and on integers): the update is taken unless it is
    strictly below (max) or above (min) what is there, so a NaN update is written, a NaN there is
    replaced, and of +0 and -0 the update stays. The spec leaves NaN and signed zeros open; this
    is onnxruntime's answer, which a Max or Min node does not give. The choice is
    :func:`chosen`'s, bit for bit."""
    if reduction in ("add", "mul"):
        op_type = {"add": "Add", "mul": "Mul"}[reduction]
        if b.runs(op_type, current):
            return b.op(op_type, current, update)
        # a narrower float's sum or product is exact in float32, or too far apart for the smaller
        # to move the larger: rounded once to the type, as the kernel's
        wide = [b.Cast(v, to=TensorProto.FLOAT) for v in (current, update)]
        return b.Cast(b.op(op_type, *wide), to=current.element_type)
    compared_current, compared_update = current, update
    wider = _compared_as(b, current.element_type)
    if wider != current.element_type:
        compared_current, compared_update = (b.Cast(v, to=wider) for v in (current, update))
    if reduction == "max":
        kept = b.Less(compared_update, compared_current)
    else:
        kept = b.Less(compared_current, compared_update)
    return chosen(b, kept, current, update, b.Shape(current))


def _narrower_float(element_type: int) -> bool:
    """A float type narrower than float32, each of whose values float32 holds exactly."""
    return floats.is_float(element_type) and floats.numpy_dtype(element_type).itemsize < 4


def _compared_as(b: Builder, element_type: int) -> int | None:
    """The type Less compares ``element_type`` in: its own where the target runs Less on it,
    else float32 for a float (a 16-bit float is exactly a float32), int64 for a signed or a
    narrower unsigned integer (exactly), None where none holds it."""
    if b.runs("Less", Value("", element_type)):
        return element_type
    if element_type == TensorProto.FLOAT or _narrower_float(element_type):
        return TensorProto.FLOAT
    if floats.is_integer(element_type) and element_type != TensorProto.UINT64:
        return TensorProto.INT64
    return None


def chosen(b: Builder, condition: Value, when_true: Value, when_false: Value, shape: Value) -> Value:
    """Where(condition, when_true, when_false) bit for bit, each of shape ``shape`` once expanded:
    GatherElements([when_false, when_true] stacked, Cast(condition, int64)) along the stacking
    axis (squeezed off), which moves values without reading them. onnxruntime's Where does not: it returns +0
    for a -0 it takes from its second input, and float16 goes through float32 (NaN payloads
    quieted)."""
    int64 = TensorProto.INT64
    sides = [b.over_axes("Unsqueeze", b.Expand(side, shape), [0]) for side in (when_false, when_true)]
    index = b.over_axes("Unsqueeze", b.Expand(b.Cast(condition, to=int64), shape), [0])
    return b.over_axes("Squeeze", b.GatherElements(b.Concat(*sides, axis=0), index, axis=0), [0])


@dataclass(frozen=True)
class Scatter:
    """A scatter's updates as rows of data's flat view ``Flatten(data, k)`` ([S, T]: S slots
    of the k indexed axes, T values each): ``offsets`` [n], each update's slot (int64), and
    ``row_updates`` [n, T], in index order."""

    offsets: Value
    row_updates: Value


def _dimension(b: Builder, shape: Value, axis: int) -> Value:
    return b.Gather(shape, b.scalar(axis, TensorProto.INT64, f"axis_{axis}"), axis=0)


def rows_of(b: Builder, x: Value, axis: int, rank: int | None) -> Value:
    """Flatten(x, axis): [∏ dims before axis, ∏ dims from it]; Reshape(x, [-1, 1]) where axis is
    x's rank (onnx2torch's Flatten takes no axis past the last: measured), which no dimension of
    0 can mislead (the 1 is not 0)."""
    return b.Reshape(x, b.ints([-1, 1], "one_column")) if axis == rank else b.Flatten(x, axis=axis)


def scatter_rows(
    b: Builder,
    op_type: str,
    data: Value,
    indices: Value,
    updates: Value,
    depth: int,
    axis: int,
    indices_rank: int,
    data_rank: int | None,
) -> Scatter:
    """The :class:`Scatter` of ScatterND (``depth`` k = the indices' last dimension) or
    ScatterElements (k = the rank; an update's index its own position but along ``axis``,
    where ``indices`` gives it). A slot is the tuple's :func:`row_numbers` (each coordinate
    checked against its axis' length, failing outside it); the updates are
    :func:`rows_of` (u, r - 1) (ScatterND, r the indices' rank) or (u, rank), which take no
    dimension of 0 for a copy."""
    int64 = TensorProto.INT64
    data_shape = b.Shape(data)
    if op_type == "ScatterND":
        tuples = b.Reshape(indices, b.ints([-1, depth], "tuples_shape"))  # [n, k]
        coordinates = [b.Gather(tuples, b.scalar(j, int64, f"axis_{j}"), axis=1) for j in range(depth)]
        updates_rank = None if data_rank is None else indices_rank - 1 + data_rank - depth
        row_updates = rows_of(b, updates, indices_rank - 1, updates_rank)
    else:
        update_shape = b.Shape(updates)
        coordinates = []
        for d in range(depth):
            if d == axis:
                coordinates.append(b.Reshape(b.Cast(indices, to=int64), b.ints([-1], "flat")))
                continue
            line_shape = [-1 if k == d else 1 for k in range(depth)]
            start, step = b.scalar(0, int64, "zero"), b.scalar(1, int64, "one")
            line = b.Reshape(b.Range(start, _dimension(b, update_shape, d), step), b.ints(line_shape, f"line_{d}"))
            coordinates.append(b.Reshape(b.Expand(line, update_shape), b.ints([-1], "flat")))
        row_updates = rows_of(b, updates, depth, depth)
    return Scatter(row_numbers(b, data_shape, depth, coordinates.__getitem__), row_updates)


def _updates_shape_said(
    op_type: str, depth: int, data_shape: list | None, indices_shape: list | None, updates_shape: list | None
) -> tuple[list | None, bool]:
    """The shape the op takes the updates in (ScatterND: indices' but the last, then data's past
    k; ScatterElements: indices'), as far as known, and whether the updates' is known to be it.
    NotLowered where it is known not to be (the op fails)."""
    if op_type == "ScatterND":
        wanted = None if indices_shape is None or data_shape is None else [*indices_shape[:-1], *data_shape[depth:]]
    else:
        wanted = indices_shape
    if wanted is None or updates_shape is None:
        return wanted, False
    if len(wanted) != len(updates_shape) or any(
        isinstance(w, int) and isinstance(u, int) and w != u for w, u in zip(wanted, updates_shape, strict=True)
    ):
        raise NotLowered(f"its updates are of shape {updates_shape} where the op takes {wanted}, which it fails")
    return wanted, all(isinstance(w, int) and w == u for w, u in zip(wanted, updates_shape, strict=True))


def _failing_unless_updates_fit(
    b: Builder, op_type: str, depth: int, data: Value, indices: Value, updates: Value
) -> Value:
    """[0] (int64), computed only where the updates' shape is the one the op takes (see
    :func:`_updates_shape_said`; the ranks known equal, and not 0): elsewhere an Expand to a
    dimension of -1, which fails, as the op does."""
    int64 = TensorProto.INT64
    end = b.ints([2**63 - 1], "end")
    if op_type == "ScatterND":
        wanted = b.Concat(
            b.Slice(b.Shape(indices), b.ints([0], "first"), b.ints([-1], "last")),
            b.Slice(b.Shape(data), b.ints([depth], "past_indexed"), end),
            axis=0,
        )
    else:
        wanted = b.Shape(indices)
    fits = b.over_axes("ReduceMin", b.Cast(b.Equal(b.Shape(updates), wanted), to=int64), [0], keepdims=1)
    length = b.Where(b.Equal(fits, b.ints([1], "fit")), b.ints([1], "fitting"), b.ints([-1], "failing"))
    return b.Expand(b.ints([0], "nothing"), length)


def _written(b: Builder, view: Value, offset: Value, value: Value, slots: Value | None) -> Value:
    """``view`` [S, T] with ``value`` [1, T] in row ``offset`` [1]: ScatterND(view, [[offset]],
    value), or where ``slots`` (Range(0, S) as [S, 1]) is given (ScatterND is itself lowered),
    :func:`chosen` (slots == offset, value, view)."""
    if slots is None:
        return b.ScatterND(view, b.Reshape(offset, b.ints([1, 1], "one_tuple")), value)
    return chosen(b, b.Equal(slots, offset), value, view, b.Shape(view))


def one_update_at_a_time(
    b: Builder,
    view: Value,
    scatter: Scatter,
    reduction: str,
    count: int | None = None,
    slots: Value | None = None,
) -> Value:
    """v = view; for j in 0 … n - 1: v[o_j] = combined(v[o_j], u_j), o_j = offsets[j], u_j = row_updates[j].

    Each step reads row o_j by Gather and writes it by :func:`_written`: a chain of n steps
    where ``count`` (n) is known and at most UNROLLED_AT_MOST, else a Loop of one step an
    iteration. The same operations on the same values in the same order as the op's loop: bit
    for bit (and n steps: slow for many updates)."""

    def step(builder: Builder, so_far: Value, position: Value) -> Value:
        offset = builder.Gather(scatter.offsets, position, axis=0)  # [1]
        update = builder.Gather(scatter.row_updates, position, axis=0)  # [1, T]
        new = combined(builder, reduction, builder.Gather(so_far, offset, axis=0), update)
        return _written(builder, so_far, offset, new, slots)

    if count is not None and count <= UNROLLED_AT_MOST:
        for j in range(count):
            view = step(b, view, b.ints([j], f"update_{j}"))
        return view
    int64 = TensorProto.INT64
    trips = _dimension(b, b.Shape(scatter.offsets), 0)
    body = b.nested("step")
    i = body.fresh_value("i", int64)
    keep = body.fresh_value("cond", TensorProto.BOOL)
    before = body.fresh_value("so_far", view.element_type)
    after = step(body, before, body.Reshape(i, body.ints([1], "one")))
    kept = body.Identity(keep)
    graph = helper.make_graph(
        body.nodes,
        b.fresh("one_update"),
        [
            helper.make_tensor_value_info(i.name, int64, []),
            helper.make_tensor_value_info(keep.name, TensorProto.BOOL, []),
            helper.make_tensor_value_info(before.name, view.element_type, None),
        ],
        [
            helper.make_tensor_value_info(kept.name, TensorProto.BOOL, []),
            helper.make_tensor_value_info(after.name, view.element_type, None),
        ],
    )
    named = [b.fresh("scattered")]
    b.op("Loop", trips, "", view, outputs=named, body=graph)
    return Value(named[0], view.element_type)


def scattered(
    b: Builder,
    op_type: str,
    data: Value,
    indices: Value,
    updates: Value,
    reduction: str,
    axis: int,
    shapes: tuple[list | None, list | None, list | None],
) -> Value:
    """The op with a reduction, one update at a time on data's flat view (:func:`one_update_at_a_time`),
    taken back to data's shape. ``shapes``: data's, the indices' and the updates' as far as
    known. Updates of another shape than the op takes fail, as the op does
    (:func:`_failing_unless_updates_fit` on the shape taken back, where not known before run
    time). NotLowered where a rank or the index depth is not known, below opset 14 (whose
    Reshape takes a 0 for a copy) where data's shape is not known to hold no 0, or where the
    target runs an op the rule writes on data's type."""
    data_shape, indices_shape, updates_shape = shapes
    if data_shape is None or indices_shape is None or updates_shape is None:
        raise NotLowered("the rank of its data, indices or updates is unknown")
    data_rank = len(data_shape)
    if op_type == "ScatterND":
        depth = indices_shape[-1] if indices_shape else None
        if not isinstance(depth, int) or depth == 0:
            raise NotLowered("the last dimension of its indices (how many axes an index names) is unknown or 0")
        known = indices_shape[:-1]
    else:
        depth, known = data_rank, indices_shape
        axis = axis + depth if axis < 0 else axis
    static = all(isinstance(d, int) and d > 0 for d in data_shape)
    if b.opset < 14 and not static:
        raise NotLowered(
            f"its data's shape is not known to hold no 0, which a Reshape at opset {b.opset} (no allowzero) "
            "would misread"
        )
    chooses = "ScatterND" in b.target.lowered_ops  # (its steps then write by choosing rows, not by ScatterND)
    written = ["Flatten", "Gather", "Reshape", *([] if chooses else ["ScatterND"])]
    if chooses or reduction in ("max", "min"):
        written += ["Expand", "Concat", "Unsqueeze", "GatherElements"]
    lacking = [op for op in written if not b.runs(op, data)]
    if lacking:
        type_name = schemas.type_name(data.element_type)
        raise NotLowered(f"{', '.join(lacking)} does not run on {type_name} at opset {b.opset}")
    wanted, fits = _updates_shape_said(op_type, depth, data_shape, indices_shape, updates_shape)
    count = math.prod(known) if all(isinstance(d, int) for d in known) else None
    scatter = scatter_rows(b, op_type, data, indices, updates, depth, axis, len(indices_shape), data_rank)
    view = rows_of(b, data, depth, data_rank)
    slots = None
    if chooses:
        start, step = b.scalar(0, TensorProto.INT64, "zero"), b.scalar(1, TensorProto.INT64, "one")
        slots = b.Reshape(b.Range(start, _dimension(b, b.Shape(view), 0), step), b.ints([-1, 1], "slots_shape"))
    result = one_update_at_a_time(b, view, scatter, reduction, count, slots)
    shape = b.ints(data_shape, "data_shape") if static else b.Shape(data)
    if not fits and wanted:  # (a shape of rank 0 is known to fit one of rank 0)
        shape = b.Add(shape, _failing_unless_updates_fit(b, op_type, depth, data, indices, updates))
    return b.Reshape(result, shape) if static else b.Reshape(result, shape, allowzero=1)


def _lowered(b: Builder, op_type: str, data: Value, indices: Value, updates: Value, reduction: str, axis: int) -> Value:
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    if reduction == "none":
        raise NotLowered("no reduction: every update is written as it is, which the op itself does at every version")
    if reduction not in REDUCTIONS:
        raise NotLowered(f"reduction {reduction} is none of {', '.join(REDUCTIONS)}")
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"ScatterND and Range, which the rule writes, do not exist at opset {b.opset}")
    if reduction in ("add", "mul"):
        combine = {"add": "Add", "mul": "Mul"}[reduction]
        if not b.runs(combine, data) and not _narrower_float(data.element_type):
            raise NotLowered(f"{combine} does not run on {schemas.type_name(data.element_type)} at opset {b.opset}")
    elif _compared_as(b, data.element_type) is None:
        raise NotLowered(f"Less does not run on {schemas.type_name(data.element_type)} at opset {b.opset}")
    shapes = (b.shape_of(data), b.shape_of(indices), b.shape_of(updates))
    return scattered(b, op_type, data, indices, updates, reduction, axis, shapes)


@rule("ScatterND", versions=(16, 18), emits=EMITS)
def scatter_nd_one_update_at_a_time(
    b: Builder, data: Value, indices: Value, updates: Value, *, reduction: str = "none"
) -> Value:
    """ScatterND(d, i, u, reduction=r) = v after v[o_j] = v[o_j] ∘ u_j for each update j in order, v = Flatten(d, k).

    k = the last dimension of i; o_j the row of v that the j-th index tuple names (negative
    entries counted from the end, an error outside the axis, as the op fails); u_j its slice of
    the updates; ∘ is Add, Mul, or onnxruntime's max and min (:func:`combined`); the result
    reshaped to d's shape. Bit for bit: the same operations in the same order as the op's
    kernel. Not lowered: no reduction, and what :func:`scattered` refuses (a rank or k unknown,
    data not known to hold no 0 below opset 14, an op of the rule the target does not run on
    the type), opsets below 11, a type the combining op does not take."""
    return _lowered(b, "ScatterND", data, indices, updates, reduction, 0)


@rule("ScatterElements", versions=(16, 18), emits=EMITS)
def scatter_elements_one_update_at_a_time(
    b: Builder, data: Value, indices: Value, updates: Value, *, axis: int = 0, reduction: str = "none"
) -> Value:
    """ScatterElements(d, i, u, axis=a, reduction=r) = ScatterND's rule over each update's full index, one at a time.

    The full index of update u[p] is p with its a-th entry i[p] (negative counted from the end);
    v = Flatten(d, rank), one value a row; each is combined with what is at its index in index
    order, as in ScatterND's rule. Bit for bit. Not lowered: as ScatterND's rule."""
    return _lowered(b, "ScatterElements", data, indices, updates, reduction, axis)
