"""Pad (versions 2 to 25, no function body) lowered to copies along each padded axis: a constant
value by Concat with Expand blocks of it, edge, reflect and wrap by a Gather of constant positions."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.conversion.adapters import as_text
from lowering.registry import Builder, NotLowered, Value, rule

MODES = ("constant", "edge", "reflect", "wrap")
# The ops the copies are written with: in edge, reflect and wrap modes (False), in constant mode (True).
COPYING_OPS = {False: ("Gather", "Slice"), True: ("Expand", "Concat", "Slice")}
FIRST_OPSET = schemas.first_opset_writing(("Expand", "Concat", "Gather", "Slice"), int64_constants=True)


def source_positions(mode: str, length: int, before: int, after: int) -> np.ndarray:
    """The position along an axis of ``length`` that each of ``before + length + after`` output
    positions copies, ``i = j - before``: edge clips i to [0, n - 1], reflect mirrors it at 0 and
    n - 1 (``-i``, ``2(n - 1) - i``), wrap takes it mod n."""
    i = np.arange(-before, length + after)
    if mode == "edge":
        return np.clip(i, 0, length - 1)
    if mode == "reflect":
        return np.where(i < 0, -i, np.where(i > length - 1, 2 * (length - 1) - i, i))
    return np.mod(i, length)


def pad_reference(x: np.ndarray, pads, value=None, axes=None, *, mode: str = "constant") -> np.ndarray:
    """The op in numpy as onnxruntime computes it: in constant mode output position j along an
    axis holds x's element ``j - before`` where it exists, else ``value`` (its own bits; 0 where
    absent); in the other modes x is cropped by the negative pads first, then padded by the
    positive ones (:func:`source_positions`)."""
    pads = np.asarray(pads).reshape(-1).tolist()
    axes = list(range(x.ndim)) if axes is None else [int(a) % x.ndim for a in np.asarray(axes).reshape(-1)]
    fill = np.zeros((), x.dtype) if value is None else np.asarray(value, x.dtype).reshape(())
    y = x
    for position, axis in enumerate(axes):
        before, after = pads[position], pads[position + len(axes)]
        if mode == "constant":
            source = np.arange(-before, y.shape[axis] + after)
            inside = (source >= 0) & (source < y.shape[axis])
            taken = np.take(y, np.where(inside, source, 0), axis=axis) if y.shape[axis] else None
            shape = [1] * y.ndim
            shape[axis] = len(source)
            out_shape = [*y.shape[:axis], len(source), *y.shape[axis + 1 :]]
            y = np.where(inside.reshape(shape), taken, fill) if taken is not None else np.full(out_shape, fill)
            continue
        y = np.take(y, np.arange(max(-before, 0), y.shape[axis] - max(-after, 0)), axis=axis)
        y = np.take(y, source_positions(mode, y.shape[axis], max(before, 0), max(after, 0)), axis=axis)
    return y


@rule(
    "Pad",
    versions=(2, 11, 13, 18, 19, 21, 23, 24, 25),
    reference=pad_reference,
    emits=("Slice", "Concat", "Expand", "Gather", "Shape", "Mul", "Add", "Reshape", "Constant"),
    constant_inputs=(1, 3),  # (pads, axes)
)
def pad_by_copies(
    b: Builder, x: Value, pads_input: Value | None = None, value_input: Value | None = None,
    axes: Value | None = None, *, mode: str = "constant", pads: list[int] | None = None, value: float | None = None,
) -> Value:  # fmt: skip
    """Pad(x, p, v) = per padded axis k of x cropped by the negative pads (Slice):
    Concat(Expand(v, s_k(b_k)), x, Expand(v, s_k(e_k)), axis=k) in constant mode, s_k(m) x's shape
    with axis k m long (v 0 of x's type where absent); Gather(x, positions_k, axis=k) in edge,
    reflect and wrap modes, positions ``j - b_k`` clipped to [0, n - 1], mirrored at 0 and n - 1,
    or taken mod n (:func:`source_positions`).

    Every output element is a copy of an element of x or of v: bit for bit, whatever v holds,
    even where it is fed at run time (the form tract and TVM refuse). Negative pads crop first, as
    onnxruntime does (measured: reflect, edge and wrap then pad the cropped axis). Needs the pads
    and axes constant; the lengths of the cropped axes and, in the modes copying x, of the padded
    ones known, and where onnxruntime fails the node the rule refuses it (measured: reflect by more
    than n - 1; edge, reflect or wrap padding an axis of length 0 or cropping one to nothing; wrap
    on x of no elements; strings in the modes copying by Gather, whose onnxruntime kernel copies one
    string of each block, measured; x of rank 0 or unknown; v not of one element; a type the target
    runs the copying ops on not: bfloat16, which onnxruntime expands not). A shape s_k(m) is a
    constant where x's shape is known, else ``Shape(x)·(1 - e_k) + m·e_k``. onnxruntime pads
    float16 in float32 between Casts that rewrite NaN payloads, by position (measured): the copies
    keep them, NaN for NaN.
    """
    mode = as_text(mode)
    if mode not in MODES:
        raise NotLowered(f"mode {mode!r} is none of {', '.join(MODES)}")
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes Expand and int64 constants, which exist from opset {FIRST_OPSET}")
    given, chosen, dims = _pads_per_axis(b, x, pads_input, pads, axes)
    if x.element_type == onnx.TensorProto.STRING and mode != "constant":
        raise NotLowered(f"mode {mode} on strings: onnxruntime's Gather copies one string of each block (measured)")
    if mode == "wrap" and (None in dims or 0 in dims):
        raise NotLowered(f"wrap on x of shape {dims}: onnxruntime fails where x holds no element")
    missing = [op for op in (COPYING_OPS[mode == "constant"]) if not b.runs(op, x)]
    if missing:
        raise NotLowered(f"the target runs no {', '.join(missing)} on {schemas.type_name(x.element_type)}")
    if value is not None:  # (Pad-2's float attribute)
        fill = b.scalar(value, x.element_type, "value") if mode == "constant" else None
    else:
        fill = _fill(b, x, value_input, mode)
    y = x
    for position, axis in enumerate(chosen):
        before, after = given[position], given[position + len(chosen)]
        if mode == "constant":
            y = _constant_padded(b, y, dims, axis, before, after, fill)
            continue
        if before < 0 or after < 0:
            y = _cropped(b, y, dims, axis, max(-before, 0), max(-after, 0))
            if dims[axis] == 0:
                raise NotLowered(
                    f"mode {mode} with axis {axis} cropped to nothing (onnxruntime fails where x holds any)"
                )
        before, after = max(before, 0), max(after, 0)
        if not before and not after:
            continue
        length = dims[axis]
        if length is None or length == 0:
            raise NotLowered(f"mode {mode} on axis {axis} of length {length}: the copies need it known, above 0")
        if mode == "reflect" and max(before, after) > length - 1:
            raise NotLowered(
                f"reflect pads axis {axis} of length {length} by more than {length - 1}: onnxruntime fails"
            )
        y = b.Gather(y, b.ints(source_positions(mode, length, before, after), "positions"), axis=axis)
        dims[axis] = length + before + after
    return y


def _pads_per_axis(
    b: Builder, x: Value, pads_input: Value | None, pads: list[int] | None, axes: Value | None
) -> tuple[list[int], list[int], list[int | None]]:
    """The pads (constant, 1-D), the axes they pad (all, or the constant 1-D ``axes`` of x's
    rank, each once) and x's dimensions as far as known: x's rank must be known, as onnxruntime
    checks the pads against it (and fails on rank 0)."""
    given = b.constant_value(pads_input) if pads_input is not None else np.array(pads or [])  # (Pad-2: attributes)
    if given is None:
        raise NotLowered("the pads are given at run time")
    known = b.shape_of(x)
    if known is None:
        raise NotLowered("x's rank is unknown: onnxruntime checks the pads against it as it runs")
    rank = len(known)
    if rank == 0 or given.ndim != 1:
        raise NotLowered(f"x of rank {rank} or pads of rank {given.ndim}: onnxruntime fails (measured)")
    if axes is None:
        chosen = list(range(rank))
    else:
        axis_values = b.constant_value(axes)
        if axis_values is None or axis_values.ndim != 1:
            raise NotLowered("the axes are given at run time or not 1-D")
        named = [int(a) for a in axis_values]
        if any(not -rank <= a < rank for a in named) or len({a % rank for a in named}) != len(named):
            raise NotLowered(f"the axes {named} are not each an axis of x's rank {rank} once")
        chosen = [a % rank for a in named]
    if len(given) != 2 * len(chosen):
        raise NotLowered(f"{len(given)} pads do not fit the axes {chosen}")
    return [int(p) for p in given], chosen, list(known)


def _fill(b: Builder, x: Value, value: Value | None, mode: str) -> Value | None:
    """The value padding copies in constant mode: v as a scalar (Reshape(v, []), which fails
    where v holds other than one element, as onnxruntime fails), 0 of x's type where absent. In
    the other modes onnxruntime checks a v given all the same: its one element must be known."""
    if mode != "constant":
        shape = b.shape_of(value) if value is not None else []
        if shape is None or None in shape or int(np.prod(shape)) != 1:
            raise NotLowered(f"a constant_value of shape {shape} in mode {mode}: onnxruntime fails unless it holds one")
        return None
    if value is None:
        if x.element_type == onnx.TensorProto.STRING:
            raise NotLowered("no constant_value given for strings (Pad states no zero string)")
        return b.constant(0, like=x, hint="zero")
    return value if b.shape_of(value) == [] else b.Reshape(value, b.ints([], "scalar"))


def _constant_padded(b: Builder, y: Value, dims: list, axis: int, before: int, after: int, fill: Value) -> Value:
    """Output position j along ``axis`` copies y's element ``j - before`` where it exists, else
    ``fill``: y's kept part (cropped by the negative pads) between blocks of ``fill``, or a block
    alone where the negative pads crop past each other (onnxruntime's answer, measured: a length
    ``n + before + after`` that is not below 0)."""
    length = dims[axis]
    if before < 0 or after < 0:
        if length is None:
            raise NotLowered(f"negative pads crop axis {axis} of unknown length")
        total = length + before + after
        if total < 0:
            raise NotLowered(f"pads {before}, {after} leave axis {axis} of length {length} below 0: onnxruntime fails")
        start, stop = max(-before, 0), length - max(-after, 0)
        if stop <= start:
            dims[axis] = total
            return b.Expand(fill, _shape_with(b, y, dims, axis, total))
        y = _sliced(b, y, axis, start, stop)
        dims[axis] = stop - start
    before, after = max(before, 0), max(after, 0)
    blocks = [b.Expand(fill, _shape_with(b, y, dims, axis, n)) if n else None for n in (before, after)]
    if dims[axis] is not None:
        dims[axis] += before + after
    return b.Concat(*[v for v in (blocks[0], y, blocks[1]) if v is not None], axis=axis) if before or after else y


def _cropped(b: Builder, y: Value, dims: list, axis: int, start: int, end_cut: int) -> Value:
    """``y`` without ``start`` elements at the start of ``axis`` and ``end_cut`` at its end."""
    length = dims[axis]
    if length is None or start + end_cut > length:
        raise NotLowered(f"negative pads crop axis {axis} of length {length} by {start + end_cut}")
    dims[axis] = length - start - end_cut
    return _sliced(b, y, axis, start, length - end_cut)


def _sliced(b: Builder, y: Value, axis: int, start: int, stop: int) -> Value:
    """``y[start:stop]`` along ``axis`` (attributes where the Slice in force takes them so)."""
    schema = schemas.schema_in_force("Slice", b.opset)
    if schema is not None and "starts" in schema.attributes:
        return b.Slice(y, starts=[start], ends=[stop], axes=[axis])
    return b.Slice(y, b.ints([start], "starts"), b.ints([stop], "ends"), b.ints([axis], "axes"))


def _shape_with(b: Builder, y: Value, dims: list, axis: int, length: int) -> Value:
    """y's shape with ``axis`` ``length`` long: a constant where known, else from Shape(y)."""
    if None not in dims:
        return b.ints([length if k == axis else d for k, d in enumerate(dims)], "block_shape")
    others = b.ints([0 if k == axis else 1 for k in range(len(dims))], "other_axes")
    along = b.ints([length if k == axis else 0 for k in range(len(dims))], "block_length")
    return b.Add(b.Mul(b.Shape(y), others), along)
