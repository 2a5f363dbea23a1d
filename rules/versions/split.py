"""Split across version 18 (equal parts counted by num_outputs) and version 13 (sizes as an input)."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, adapter, attribute_of, constant_ints, known_change, moved
from lowering.errors import NotLowered


def _no_split_input(node: onnx.NodeProto) -> bool:
    """A Split given no ``split`` input: it cuts into as many equal parts as it has outputs."""
    return len(node.input) < 2 or not node.input[1]


known_change(
    ("Split",),
    18,
    "from version 18 a Split with no split input must give num_outputs (and may then cut unevenly)",
    affects=_no_split_input,
)


# Cases: backend and explicit cases
@adapter(("Split",), 18, "up", "num_outputs", versions=(13, 18), cases=30)
def equal_parts_counted(node: onnx.NodeProto, context: AdapterContext):
    """Split-13(x) with n outputs and no split input = Split-18(x, num_outputs=n); with one, Split-18 as it is.

    ``Split-13(x)`` with ``n`` outputs and no ``split`` input = ``Split-18(x, num_outputs=n)``:
    both cut ``x`` into ``n`` equal parts along ``axis`` (a length ``n`` does not divide is an error
    at 13, so the uneven cut 18 allows is never reached)."""
    if not _no_split_input(node):  # sizes given: Split-18 reads them alike, and refuses num_outputs with them
        return [moved(node)]
    return [moved(node, num_outputs=len(node.output))]


SPLIT_13 = "version 13 takes split as an input; earlier versions as an attribute"
known_change(("Split",), 13, SPLIT_13, down_only=True, affects=lambda node: not _no_split_input(node))


def _axis(node: onnx.NodeProto) -> int:
    value = attribute_of(node, "axis")
    return 0 if value is None else value


def _counted_sizes(node: onnx.NodeProto, context: AdapterContext) -> list[int] | None:
    """The part sizes of a Split-18 given ``num_outputs=n`` along a dimension of known size ``d``:
    ``ceil(d/n)`` each, the last ``d - (n-1)*ceil(d/n)``; None where ``d`` is unknown. A last size
    below 0 (``d=5, n=4``) makes the node an error at 18 (onnxruntime refuses to run it)."""
    count = attribute_of(node, "num_outputs")
    shape = context.shape_of(node.input[0])
    axis = _axis(node)
    if shape is None or not -len(shape) <= axis < len(shape) or not isinstance(shape[axis], int):
        return None
    size, part = shape[axis], -(-shape[axis] // count)
    return [part] * (count - 1) + [size - part * (count - 1)]


def _refuse_negative_last_part(sizes: list[int], context: AdapterContext) -> None:
    """A Split-18 whose last part would be negative is an error whenever it runs; an attribute
    cannot say that (a model holding it is invalid even where the node never runs): refused."""
    if sizes[-1] < 0:
        count, part = len(sizes), sizes[0]
        raise NotLowered(
            f"Split-18 cuts a dimension of {sum(sizes)} into {count} parts of {part}, which "
            f"leaves a negative last part, so it cannot go to opset {context.target_opset} where sizes are an attribute"
        )


# Cases: backend and explicit cases
@adapter(("Split",), 18, "down", "split sizes", versions=(13, 18), cases=40)
def counted_parts_to_sizes(node: onnx.NodeProto, context: AdapterContext):
    """Split-18(x, num_outputs=n) = Split-13(x, [c, ..., c, d-(n-1)c]), c = ceil(d/n), d = x's size along axis.

    ``Split-18(x, num_outputs=n)`` = ``Split-13(x)`` where ``n`` divides ``d`` (equal parts), else
    ``Split-13(x, split=[c, ..., c, d-(n-1)c])``: the last part smaller, as version 18 cuts. Where
    ``d`` is not known statically the sizes are computed from ``Shape(x)``:
    ``c = (d + n - 1) / n``, ``Concat(c, ..., c, d - (n-1)c)``; so too where the last part would be
    negative (``d=5, n=4``): Split-18 fails when it runs, and Split-13 fails alike on a negative size
    (a constant one would make the model invalid even where the node never runs, as in an If
    branch not taken). Given ``split``, as it is."""
    if not _no_split_input(node):
        return [moved(node, dropped=("num_outputs",))]
    count = attribute_of(node, "num_outputs") or len(node.output)
    sizes = _counted_sizes(node, context)
    if sizes is not None and sizes[-1] >= 0:
        if len(set(sizes)) == 1:
            return [moved(node, dropped=("num_outputs",))]
        b = context.builder(node)
        b.moved(node, inputs=[node.input[0], b.ints(sizes, "split").name], dropped=("num_outputs",))
        return b.nodes
    # c = (d + n - 1) / n, sizes Concat(c, ..., c, d - (n-1)c), d = Shape(x)[axis]
    b = context.builder(node)
    size = b.Gather(b.Shape(node.input[0]), b.ints([_axis(node)], "axis"), axis=0)
    part = b.Div(b.Add(size, b.ints([count - 1], "count_less_one")), b.ints([count], "count"))
    last = b.Sub(size, b.Mul(part, b.ints([count - 1], "others")))
    sizes = b.Concat(*([part] * (count - 1)), last, axis=0)
    b.moved(node, inputs=[node.input[0], sizes.name], dropped=("num_outputs",))
    return b.nodes


# Cases: backend cases, and the explicit ones (a dimension not known statically, as Slices) to 12; at 7 refused
@adapter(("Split",), 13, "down", "split attribute", versions=(2, 18), cases=36)
def sizes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """Split-13/18(x, s) = Split-2/11(x, split=s), s constant; Split-18(x, num_outputs=n) = its sizes, or n Slices.

    ``Split-13(x, s)`` with ``s`` constant = ``Split-11(x, split=s)``; without ``s``, ``Split-11(x)``
    (equal parts). ``Split-18(x, num_outputs=n)`` cuts a dimension of known size ``d`` into parts
    of ``ceil(d/n)``, the last smaller: ``Split-11(x)`` where ``n`` divides ``d``, else
    ``Split-11(x, split=[c, ..., c, d-(n-1)c])``. Where ``d`` is not known statically, or the last
    part would be negative, each output is a Slice (from opset 10, see :func:`_counted_slices`).
    Sizes computed at run time: each output a Slice between their running sums (from opset 11,
    see :func:`_sized_slices`). Below 11 a negative axis gets the rank added. Sizes computed at
    run time below 11, and ``d`` unknown below opset 10 (no Slice with bounds as inputs): refused."""
    version = schemas.version_in_force("Split", context.source_opset)
    axis = _axis(node)
    if axis < 0 and context.target_opset < 11:
        rank = context.rank_of(node.input[0])
        if rank is None:
            raise NotLowered(
                f"Split-{version} with axis {axis} cannot go to opset {context.target_opset}, "
                f"which takes no negative axis, without the rank of its input '{node.input[0]}'"
            )
        axis += rank
    if _no_split_input(node):
        sizes = [] if attribute_of(node, "num_outputs") is None else _counted_sizes(node, context)
        if sizes is None or (sizes and sizes[-1] < 0):
            if context.target_opset < SLICE_BOUNDS_AS_INPUTS:
                if sizes is not None:
                    _refuse_negative_last_part(sizes, context)
                raise NotLowered(
                    f"Split-18 with num_outputs along axis {_axis(node)} of '{node.input[0]}', "
                    f"whose size is not known statically, cannot go to opset {context.target_opset} where sizes are "
                    f"an attribute (and Slice takes its bounds as inputs only from opset {SLICE_BOUNDS_AS_INPUTS})"
                )
            return _counted_slices(node, context, axis, sizes)
    else:
        sizes = constant_ints(node, context)
        if sizes is None:
            if context.target_opset >= SIZED_SLICES_FIRST_OPSET:
                return _sized_slices(node, context, axis)
            raise NotLowered(
                f"Split-{version} takes its sizes from '{node.input[1]}', which is computed at "
                f"run time, so it cannot go to opset {context.target_opset} where split is an attribute (and "
                f"their running sums need CumSum, from opset {SIZED_SLICES_FIRST_OPSET})"
            )
    result = moved(node, dropped=("num_outputs",))
    del result.input[1:]
    if axis != _axis(node):
        result = moved(result, axis=axis)
    if sizes and len(set(sizes)) > 1:
        result = moved(result, split=sizes)
    return [result]


# The first opset whose Slice takes starts, ends and axes as inputs (Slice-10), read from onnx.defs.
SLICE_BOUNDS_AS_INPUTS = min(
    version
    for version in schemas.op_versions("Slice")
    if any(formal.name == "starts" for formal in schemas.schema_in_force("Slice", version).inputs)
)


# What the Slices of sizes given at run time write, and the first opset where all of it exists.
SIZED_SLICES_FIRST_OPSET = schemas.first_opset_writing(("CumSum", "Sub", "Gather", "Slice"), int64_constants=True)


def _sized_slices(node: onnx.NodeProto, context: AdapterContext, axis: int) -> list[onnx.NodeProto]:
    """Split-13/18(x, s) output i = Slice-10(x, [e_i - s_i], [e_i], [axis]), e = CumSum(s), s given at run time.

    Each part starts where the sizes before it end and is ``s_i`` long: the parts of Split,
    moved element for element (bit for bit). Sizes the op refuses (not summing to the axis'
    length, negative) fail there but are clamped by the Slices here."""
    b = context.builder(node)
    axes = b.ints([axis], "axes")
    sizes = b.Cast(node.input[1], to=onnx.TensorProto.INT64)
    ends = b.CumSum(sizes, b.scalar(0, onnx.TensorProto.INT64, "along"))
    starts = b.Sub(ends, sizes)
    for i, output in enumerate(node.output):
        if output:
            at = b.ints([i], f"part{i}")
            b.Slice(node.input[0], b.Gather(starts, at, axis=0), b.Gather(ends, at, axis=0), axes, outputs=[output])
    return b.nodes


def _counted_slices(
    node: onnx.NodeProto, context: AdapterContext, axis: int, sizes: list[int] | None
) -> list[onnx.NodeProto]:
    """Split-18(x, num_outputs=n) output i = Slice-10(x, [i·c], [(i+1)·c], [axis]), c = ceil(d/n) = (d + n - 1) / n.

    ``d`` is ``x``'s size along ``axis``: from ``sizes`` where known statically (constant
    bounds), else ``Gather(Shape(x), axis)`` at run time (``c`` by integer Add and Div, each
    bound ``Mul(c, i)``). Slice only moves elements, so every part is bit for bit the original's.
    Where Split-18 succeeds (the last part ``d - (n-1)c >= 0``) the parts are its parts: the
    first ``n - 1`` lie wholly inside ``x``, and the last, ending at ``n·c >= d``, is clamped to
    ``d``. Where it fails (``d=5, n=4``: a last part of ``-1``; onnxruntime refuses to run it),
    the Slices clamp instead and give ``[2, 2, 1, 0]``, as onnx.reference's Split does: a model
    holding such a node (in an If branch not taken, as AffineGrid's body does) still loads and
    runs, where an attribute could not hold a negative size."""
    b = context.builder(node)
    count = len(node.output)
    axes = b.ints([axis], "axes")
    if sizes is not None:
        part = sizes[0]
        bounds = [b.ints([i * part], f"bound{i}") for i in range(count + 1)]
    else:
        size = b.Gather(b.Shape(node.input[0]), axes, axis=0)
        part = b.Div(b.Add(size, b.ints([count - 1], "count_less_one")), b.ints([count], "count"))
        bounds = [b.Mul(part, b.ints([i], f"index{i}")) for i in range(count + 1)]
    for i, output in enumerate(node.output):
        if output:
            b.Slice(node.input[0], bounds[i], bounds[i + 1], axes, outputs=[output])
    return b.nodes
