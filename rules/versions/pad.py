"""Pad going down across version 19 (mode wrap), 18 (pads for chosen axes) and 11 (pads and value as
inputs), and up across 11."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.builder import Builder, Value
from lowering.conversion.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    attribute_of,
    constant_array,
    constant_ints,
    known_change,
    moved,
    require_types_taken,
    text_attribute,
)
from lowering.errors import NotLowered
from lowering.scopes import element_type_of

from ..gathering import gather_along

PAD_11 = "version 11 takes pads and the constant value as inputs; earlier versions as attributes"
PAD_18 = "version 18 adds an axes input: pads then holds a begin and an end for those axes only"
known_change(("Pad",), 11, PAD_11, down_only=True)
PAD_19 = "version 19 adds the mode wrap"
known_change(("Pad",), 19, PAD_19, down_only=True, affects=attribute_in("mode", frozenset({"wrap"})))
known_change(("Pad",), 18, PAD_18, down_only=True, affects=lambda node: len(node.input) > 3 and bool(node.input[3]))


def _input(node: onnx.NodeProto, index: int) -> str:
    return node.input[index] if len(node.input) > index else ""


def _mode(node: onnx.NodeProto, context: AdapterContext) -> str:
    return text_attribute(node, "mode", context.source_opset)


def _wrapping(node: onnx.NodeProto, context: AdapterContext) -> bool:
    return _mode(node, context) == "wrap"


# What the wrap formulas need: Gather with int64 indices (a Constant holds int64 from opset 9);
# where a pad or a size is known only at run time, Range, Mod and Where on int64 as well.
WRAP_CONSTANT_FROM = schemas.first_opset_writing(("Gather",), int64_constants=True)
WRAP_AT_RUN_TIME_FROM = schemas.first_opset_writing(
    ("Gather", "Range", "Mod", "Where", "Less", "Slice", "Shape", "Neg", "Add", "Reshape"), int64_constants=True
)


def _wrap_indices(size: int, before: int, after: int) -> list[int] | None:
    """The positions along an axis of ``size`` that Pad's wrap reads for pads ``before`` and
    ``after``: the negative pads crop first, then the rest wraps around what is left (as
    onnxruntime's Pad-19 does). None where nothing is left to wrap around though a pad is positive;
    none at all where nothing is left and no pad is positive (Pad-19 fails there, the Gather of
    no position gives an empty result)."""
    start, left = max(-before, 0), size - max(-before, 0) - max(-after, 0)
    added_before, added_after = max(before, 0), max(after, 0)
    if left <= 0:
        return None if added_before or added_after else []
    return [start + (j - added_before) % left for j in range(left + added_before + added_after)]


def wrap_as_gathers(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """Pad-19(x, p, mode=wrap) = Gather(x, i, axis) per padded axis, i = start + (j - b) mod n' (crop, then wrap).

    Along each padded axis of size ``n`` with pads ``b`` (before) and ``a`` (after): negative
    pads first crop (``start = max(-b, 0)``, ``n' = n - max(-b, 0) - max(-a, 0)`` left), then the
    ``n' + max(b, 0) + max(a, 0)`` outputs read ``x[start + (j - max(b, 0)) mod n']``: the input
    seen as a torus, pads larger than the dimension wrapping round again, as the spec's example
    and ``numpy.pad(mode="wrap")`` do. (The spec does not say how a negative pad on one side meets
    a positive one on the other; onnxruntime crops first, measured, and so does this.) Gather
    only moves values, so the output is the original's bit for bit. With the pads constant and
    ``n`` known the indices are a constant (from opset 9); else they are computed at run time,
    ``max(-b, 0) + Mod(Range(-max(b, 0), n' + max(a, 0)), n')`` (from opset 11: Range). Where
    nothing is left to wrap around (``n' <= 0``) Pad-19 fails in onnxruntime: with a positive pad
    the constant indices are refused and the computed ones lie past the axis, so Gather fails
    alike; with none the Gathers give an empty result where Pad-19 fails (never other values).
    Strings along another axis than the last are gathered by GatherElements (onnxruntime's
    Gather of strings there keeps each slice's first: :func:`gathering.gather_along`), so not
    below opset 11. Needed and missing: the input's rank, constant axes: refused."""
    version = schemas.version_in_force("Pad", context.source_opset)
    cannot = f"Pad-{version} with mode wrap cannot go to opset {context.target_opset}"
    x = node.input[0]
    shape = context.shape_of(x)
    if shape is None:
        raise NotLowered(f"{cannot} without the rank of its input '{x}' (to know which axes its pads cover)")
    rank = len(shape)
    if _input(node, 3):
        axes = constant_ints(node, context, 3)
        if axes is None:
            raise NotLowered(f"{cannot}: its axes '{node.input[3]}' are computed at run time")
        axes = [a + rank if a < 0 else a for a in axes]
    else:
        axes = list(range(rank))
    pads = constant_ints(node, context)
    if pads is not None and len(pads) != 2 * len(axes):
        raise NotLowered(f"{cannot}: its {len(pads)} pads are not a begin and an end for each of {len(axes)} axes")
    if context.target_opset < WRAP_CONSTANT_FROM:
        raise NotLowered(f"{cannot}, whose Constant holds no int64 indices (from opset {WRAP_CONSTANT_FROM})")
    wrapped = []  # each axis padded or cropped: (k, axis, the positions read along it, None where computed at run time)
    for k, axis in enumerate(axes):
        size = shape[axis]
        if pads is not None and isinstance(size, int):
            before, after = pads[k], pads[len(axes) + k]
            indices = _wrap_indices(size, before, after)
            if indices is None:
                raise NotLowered(
                    f"{cannot}: along axis {axis} (size {size}) its pads {before} and {after} leave nothing to wrap "
                    "around, an error whenever it runs"
                )
            if indices != list(range(size)):
                wrapped.append((k, axis, indices))
            continue
        if context.target_opset < WRAP_AT_RUN_TIME_FROM:
            what = "its pads are computed at run time" if pads is None else f"the size of its axis {axis} is unknown"
            raise NotLowered(
                f"{cannot}: {what}, so the positions it reads need Range (from opset {WRAP_AT_RUN_TIME_FROM})"
            )
        wrapped.append((k, axis, None))  # positions computed at run time
    b = context.builder(node)
    if not wrapped:  # no axis padded nor cropped
        b.Identity(x, outputs=[node.output[0]])
        return b.nodes
    current, kind = x, element_type_of(context.inferred_type_of(x))
    for n, (k, axis, indices) in enumerate(wrapped):
        outputs = [node.output[0]] if n == len(wrapped) - 1 else None  # the last Gather writes the node's output
        if indices is not None:
            wrap = b.ints(indices, f"wrap{axis}")
            current = gather_along(b, current, wrap, axis, rank, element_type=kind, outputs=outputs)
        else:
            size = shape[axis] if isinstance(shape[axis], int) else None  # Gathers along other axes keep it
            pair = _pad_pair(b, node, pads, k, len(axes))
            current = _wrapped_at_run_time(b, current, (axis, rank, kind), size, pair, outputs)
    return b.nodes


def _pad_pair(b: Builder, node: onnx.NodeProto, pads: list[int] | None, k: int, count: int) -> tuple[Value, Value]:
    """The pads before and after the ``k``-th padded axis, each a 1-D int64 of one value."""
    if pads is not None:
        return b.ints([pads[k]], f"before{k}"), b.ints([pads[count + k]], f"after{k}")
    pair = []
    for position, part in ((k, "before"), (count + k, "after")):
        bounds = [b.ints([position], f"{part}{k}_from"), b.ints([position + 1], f"{part}{k}_to")]
        pair.append(b.Slice(node.input[1], *bounds))
    return pair[0], pair[1]


def _wrapped_at_run_time(
    b: Builder,
    x: Value | str,
    along: tuple[int, int, int | None],
    size: int | None,
    pair: tuple[Value, Value],
    outputs: list[str] | None,
) -> Value:
    """Gather(x, f + Mod(Range(-max(b, 0), n' + max(a, 0)), max(n', 1))), s = max(-b, 0),
    e = max(n + min(a, 0), 0), n' = max(e - s, 0), f = s where n' > 0, else n.

    The positions are those of the cropped axis [s, e) of length n', read from x itself (no
    Slice of computed bounds, which some runtimes fail). Where nothing is left to wrap around
    (n' = 0) and a pad is positive, every position is n, past the axis, so that Gather fails
    where the original fails. The size ``n`` of the axis is a constant where it is known, else
    read from x's shape. ``along``: the axis, x's rank and its element type (strings along another
    axis than the last are gathered by GatherElements: :func:`gathering.gather_along`)."""
    (axis, rank, kind), (before, after) = along, pair
    zero, one = b.ints([0], "zero"), b.ints([1], "one")
    n = b.ints([size], f"size{axis}") if size is not None else b.Gather(b.Shape(x), b.ints([axis], "axis"), axis=0)
    start = b.Where(b.Less(before, zero), b.Neg(before), zero)
    end_within = b.Add(n, b.Where(b.Less(after, zero), after, zero))
    end = b.Where(b.Less(end_within, zero), zero, end_within)
    length = b.Sub(end, start)
    left = b.Where(b.Less(length, zero), zero, length)
    added_before = b.Where(b.Less(zero, before), before, zero)
    added_after = b.Where(b.Less(zero, after), after, zero)
    scalar = b.ints([], "scalar_shape")
    first = b.Reshape(b.Neg(added_before), scalar)
    limit = b.Reshape(b.Add(left, added_after), scalar)
    step = b.Reshape(one, scalar)
    something_left = b.Less(zero, left)
    divisor = b.Where(something_left, left, one)
    offset = b.Where(something_left, start, n)
    positions = b.Add(b.Mod(b.Range(first, limit, step), divisor), offset)
    return gather_along(b, x, positions, axis, rank, element_type=kind, outputs=outputs)


def _axes_and_rank(node: onnx.NodeProto, context: AdapterContext) -> tuple[list[int], int]:
    """The Pad-18 node's axes (constant, made non-negative) and its input's rank; refused where
    either is not known statically."""
    version = schemas.version_in_force("Pad", context.source_opset)
    axes = constant_ints(node, context, 3)
    rank = context.rank_of(node.input[0])
    if axes is None or rank is None:
        raise NotLowered(
            f"Pad-{version} with axes '{node.input[3]}' cannot go to opset {context.target_opset}, "
            "where pads cover every axis, without the axes as a constant and the rank of its input "
            f"'{node.input[0]}' (known: axes {'yes' if axes is not None else 'no'}, rank {rank})"
        )
    return [a + rank if a < 0 else a for a in axes], rank


def _spread_at_run_time(node: onnx.NodeProto, context: AdapterContext, rank: int) -> list[onnx.NodeProto]:
    """Pad-18(x, p, v, a), a given at run time = Pad-11/13(x, ScatterElements(0[2r], Concat(a', a' + r), p), v),
    a' = Gather([0, …, r-1], a).

    The Gather counts negative axes from the end and fails on one out of range, as the op does;
    each pad goes to its axis' begin and end in a zero vector over every axis. Integers only
    move: the same pads, so the same padding. Repeated axes, which the op refuses, write one of
    their pads here."""
    b = context.builder(node)
    within = b.Gather(b.ints(list(range(rank)), "every_axis"), node.input[3], axis=0)
    ends = b.Add(within, b.ints([rank], "rank"))
    positions = b.Concat(within, ends, axis=0)
    full = b.ScatterElements(b.ints([0] * (2 * rank), "no_pads"), positions, node.input[1], axis=0)
    b.moved(node, inputs=[node.input[0], full.name, *node.input[2:3]])
    return b.nodes


def _spread(pads: list[int], axes: list[int], rank: int) -> list[int]:
    """Pads for ``axes`` (begins, then ends) spread over every axis, 0 on the others."""
    full = [0] * (2 * rank)
    for k, axis in enumerate(axes):
        full[axis], full[rank + axis] = pads[k], pads[len(axes) + k]
    return full


# Cases: the explicit Pad-2 cases (float, double and float16 data; values 1.5, -0.0, 0.1 and none;
# modes constant, reflect, edge) going to 11 and up
@adapter(("Pad",), 11, "up", "pads and value inputs", versions=(2, 25), cases=12)
def pads_attributes_to_inputs(node: onnx.NodeProto, context: AdapterContext):
    """Pad-2(x, pads=p, value=v) = Pad-11(x, Constant(p), Constant(v)), v in x's type.

    ``v`` (a float attribute) is written in x's type as Pad-2's kernel takes it (float16 rounded
    to nearest, even; float32 and double exactly), in mode constant only, and not where it is
    the default 0 (+0.0, which an absent value input means too)."""
    b = context.builder(node)
    pads = b.ints(attribute_of(node, "pads") or [], "pads")
    inputs = [node.input[0], pads.name]
    value = attribute_of(node, "value")
    if value is not None and _mode(node, context) == "constant" and (value != 0.0 or np.signbit(value)):
        element_type = element_type_of(context.type_of(node.input[0]))
        if element_type is None:
            raise NotLowered(f"the element type of '{node.input[0]}', which Pad-11's value input takes, is unknown")
        inputs.append(b.scalar(np.float32(value), element_type, "value").name)
    b.moved(node, inputs=inputs, dropped=("pads", "value"))
    return b.nodes


# Cases: backend and explicit cases, wrap as Gathers among them
@adapter(("Pad",), 18, "down", "pads over every axis", versions=(11, 25), cases=32)
def pads_for_axes_spread(node: onnx.NodeProto, context: AdapterContext):
    """Pad-18(x, p, v, axes=a) = Pad-11/13(x, p spread over every axis with 0 elsewhere, v).

    ``Pad-18(x, p, v, a)`` with ``a`` constant and the rank ``r`` of ``x`` known =
    ``Pad-13(x, q, v)``, ``q[a[k]] = p[k]``, ``q[r + a[k]] = p[len(a) + k]``, 0 elsewhere; a
    constant ``p`` is spread here, one computed at run time by ``Gather(Concat([0], p), i)``
    (``i`` pointing at 0 for the axes not padded). Axes computed at run time are spread there
    (:func:`_spread_at_run_time`). Without ``a``, as it is. Mode ``wrap`` (19), which Pad-11/13
    lacks, goes as :func:`wrap_as_gathers`."""
    if _wrapping(node, context):
        return wrap_as_gathers(node, context)
    if not _input(node, 3):
        return [moved(node)]
    if constant_ints(node, context, 3) is None and context.rank_of(node.input[0]) is not None:
        return _spread_at_run_time(node, context, context.rank_of(node.input[0]))
    axes, rank = _axes_and_rank(node, context)
    b = context.builder(node)
    pads = constant_ints(node, context)
    if pads is not None:
        full = b.ints(_spread(pads, axes, rank), "pads")
    else:
        # each full position reads its pad from Concat([0], p): position 0 is the 0, k + 1 is p[k]
        zero = b.ints([0], "zero")
        where = b.ints(_spread(list(range(1, 2 * len(axes) + 1)), axes, rank), "pads_index")
        full = b.Gather(b.Concat(zero, node.input[1], axis=0), where, axis=0)
    b.moved(node, inputs=[node.input[0], full.name, *node.input[2:3]])
    return b.nodes


# Cases: the explicit cases (the backend's feed the value or pad integers); wrap below 9 (no int64
# Constant) and of a dimension known only at run time below 11 (no Range) refused
@adapter(("Pad",), 11, "down", "attributes", versions=(2, 25), cases=16)
def pads_input_to_attributes(node: onnx.NodeProto, context: AdapterContext):
    """Pad-11+(x, Constant(p), Constant(v)) = Pad-2(x, pads=p, value=v); Pad-18's axes spread p first.

    ``Pad-11(x, p, v, mode=m)`` with ``p`` and ``v`` constant = ``Pad-2(x, pads=p, value=v, mode=m)``
    (no ``v``: 0, the default of both; ``v`` is read only in mode ``constant``). ``value`` is a
    float attribute: a ``v`` that float32 does not hold exactly is refused, as are ``p`` or ``v``
    computed at run time. Pad-18's ``axes`` spread ``p`` over every axis first (constant axes,
    known rank). Mode ``wrap`` (19) goes as :func:`wrap_as_gathers`; a type Pad-2 does not take
    (integers) is refused."""
    if _wrapping(node, context):
        return wrap_as_gathers(node, context)
    version = schemas.version_in_force("Pad", context.source_opset)
    require_types_taken(node, context)
    pads = constant_ints(node, context)
    if pads is None:
        raise NotLowered(
            f"Pad-{version} takes its pads from '{node.input[1]}', which is computed at run "
            f"time, so it cannot go to opset {context.target_opset} where pads is an attribute"
        )
    if _input(node, 3):
        axes, rank = _axes_and_rank(node, context)
        pads = _spread(pads, axes, rank)
    attributes = {"pads": pads}
    if _input(node, 2) and _mode(node, context) == "constant":
        value = constant_array(context, node.input[2])
        if value is None or value.size != 1 or value.dtype.kind not in "fiub":
            raise NotLowered(
                f"Pad-{version} takes its constant value from '{node.input[2]}', which is not "
                f"a constant of one number, so it cannot go to opset {context.target_opset} where it is an attribute"
            )
        narrow = value.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):
            back = narrow.astype(value.dtype)
        # bit for bit: a NaN's payload too (a double's low bits do not fit in a float32)
        if back.tobytes() != value.astype(value.dtype).tobytes():
            raise NotLowered(
                f"Pad-{version}'s constant value {value.reshape(-1)[0]} is not a float32 bit for "
                f"bit, so it cannot go to opset {context.target_opset} where the value is a float attribute"
            )
        if float(narrow[0]) != 0.0 or np.signbit(narrow[0]):
            attributes["value"] = float(narrow[0])
    result = moved(node, **attributes)
    del result.input[1:]
    return [result]


# Cases: backend and explicit cases, wrap as Gathers among them
@adapter(("Pad",), 19, "down", "wrap as gathers", versions=(18, 25), cases=16)
def pad_without_wrap_kept(node: onnx.NodeProto, context: AdapterContext):
    """Pad-19+(x, p, v, a, mode=m), m not wrap = Pad-18(x, p, v, a, mode=m); mode wrap = Gather(x, i, axis) per axis.

    Version 19 only adds the mode ``wrap``, which version 18 cannot say (onnx's converter keeps
    it, giving a model invalid at 18 that onnxruntime still runs as wrap): it goes as
    :func:`wrap_as_gathers`, the positions it reads gathered along each padded axis. Any other
    node means the same at 18."""
    if _wrapping(node, context):
        return wrap_as_gathers(node, context)
    return [moved(node)]
