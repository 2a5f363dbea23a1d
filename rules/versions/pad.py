"""Pad going down across version 19 (mode wrap), 18 (pads for chosen axes) and 11 (pads and value as inputs)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from lowering import schemas
from lowering.adapters import (
    AdapterContext,
    adapter,
    attribute_in,
    constant_array,
    constant_ints,
    int64_constant,
    known_change,
    moved,
    require_types_taken,
    text_attribute,
)
from lowering.errors import LoweringError

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


def _refuse_wrap(node: onnx.NodeProto, context: AdapterContext) -> None:
    if _mode(node, context) == "wrap":
        version = schemas.version_in_force("Pad", context.source_opset)
        raise LoweringError(
            f"{context.location}: Pad-{version} with mode wrap cannot go to opset {context.target_opset}, "
            "whose Pad has no wrap mode (added at version 19)"
        )


def _axes_and_rank(node: onnx.NodeProto, context: AdapterContext) -> tuple[list[int], int]:
    """The Pad-18 node's axes (constant, made non-negative) and its input's rank; refused where
    either is not known statically."""
    version = schemas.version_in_force("Pad", context.source_opset)
    axes = constant_ints(node, context, 3)
    rank = context.rank_of(node.input[0])
    if axes is None or rank is None:
        raise LoweringError(
            f"{context.location}: Pad-{version} with axes '{node.input[3]}' cannot go to opset {context.target_opset}, "
            "where pads cover every axis, without the axes as a constant and the rank of its input "
            f"'{node.input[0]}' (known: axes {'yes' if axes is not None else 'no'}, rank {rank})"
        )
    return [a + rank if a < 0 else a for a in axes], rank


def _spread(pads: list[int], axes: list[int], rank: int) -> list[int]:
    """Pads for ``axes`` (begins, then ends) spread over every axis, 0 on the others."""
    full = [0] * (2 * rank)
    for k, axis in enumerate(axes):
        full[axis], full[rank + axis] = pads[k], pads[len(axes) + k]
    return full


@adapter(("Pad",), 18, "down", "pads over every axis", versions=(11, 25))
def pads_for_axes_spread(node: onnx.NodeProto, context: AdapterContext):
    """Pad-18(x, p, v, axes=a) = Pad-11/13(x, p spread over every axis with 0 elsewhere, v).

    ``Pad-18(x, p, v, a)`` with ``a`` constant and the rank ``r`` of ``x`` known =
    ``Pad-13(x, q, v)``, ``q[a[k]] = p[k]``, ``q[r + a[k]] = p[len(a) + k]``, 0 elsewhere; a
    constant ``p`` is spread here, one computed at run time by ``Gather(Concat([0], p), i)``
    (``i`` pointing at 0 for the axes not padded). Without ``a``, as it is. Mode ``wrap`` (19)
    has no counterpart below 19: refused."""
    _refuse_wrap(node, context)
    if not _input(node, 3):
        return [moved(node)]
    axes, rank = _axes_and_rank(node, context)
    result = moved(node)
    del result.input[3:]
    hint = node.name or node.output[0]
    pads = constant_ints(node, context)
    if pads is not None:
        constant, name = int64_constant(context, f"{hint}_pads", _spread(pads, axes, rank))
        result.input[1] = name
        return [constant, result]
    # each full position reads its pad from Concat([0], p): position 0 is the 0, k + 1 is p[k]
    where = _spread(list(range(1, 2 * len(axes) + 1)), axes, rank)
    zero, zero_name = int64_constant(context, f"{hint}_zero", [0])
    index, index_name = int64_constant(context, f"{hint}_pads_index", where)
    with_zero, full = context.fresh(f"{hint}_pads_with_zero"), context.fresh(f"{hint}_pads")
    concat = helper.make_node(
        "Concat", [zero_name, node.input[1]], [with_zero], name=context.fresh(f"{hint}_Concat"), axis=0
    )
    gather = helper.make_node("Gather", [with_zero, index_name], [full], name=context.fresh(f"{hint}_Gather"), axis=0)
    result.input[1] = full
    return [zero, index, concat, gather, result]


@adapter(("Pad",), 11, "down", "attributes", versions=(2, 25))
def pads_input_to_attributes(node: onnx.NodeProto, context: AdapterContext):
    """Pad-11+(x, Constant(p), Constant(v)) = Pad-2(x, pads=p, value=v); Pad-18's axes spread p first.

    ``Pad-11(x, p, v, mode=m)`` with ``p`` and ``v`` constant = ``Pad-2(x, pads=p, value=v, mode=m)``
    (no ``v``: 0, the default of both; ``v`` is read only in mode ``constant``). ``value`` is a
    float attribute: a ``v`` that float32 does not hold exactly is refused, as are ``p`` or ``v``
    computed at run time. Pad-18's ``axes`` spread ``p`` over every axis first (constant axes,
    known rank). Mode ``wrap`` (19) has no counterpart, and a type Pad-2 does not take (integers): refused."""
    _refuse_wrap(node, context)
    version = schemas.version_in_force("Pad", context.source_opset)
    require_types_taken(node, context)
    pads = constant_ints(node, context)
    if pads is None:
        raise LoweringError(
            f"{context.location}: Pad-{version} takes its pads from '{node.input[1]}', which is computed at run "
            f"time, so it cannot go to opset {context.target_opset} where pads is an attribute"
        )
    if _input(node, 3):
        axes, rank = _axes_and_rank(node, context)
        pads = _spread(pads, axes, rank)
    attributes = {"pads": pads}
    if _input(node, 2) and _mode(node, context) == "constant":
        value = constant_array(context, node.input[2])
        if value is None or value.size != 1 or value.dtype.kind not in "fiub":
            raise LoweringError(
                f"{context.location}: Pad-{version} takes its constant value from '{node.input[2]}', which is not "
                f"a constant of one number, so it cannot go to opset {context.target_opset} where it is an attribute"
            )
        wide = value.astype(np.float64)
        narrow = value.astype(np.float32)
        if not (narrow.astype(np.float64) == wide).all() and not np.isnan(wide).all():
            raise LoweringError(
                f"{context.location}: Pad-{version}'s constant value {value[0]} is not a float32, so it cannot go to "
                f"opset {context.target_opset} where the value is a float attribute"
            )
        if float(narrow[0]) != 0.0 or np.signbit(narrow[0]):
            attributes["value"] = float(narrow[0])
    result = moved(node, **attributes)
    del result.input[1:]
    return [result]


@adapter(("Pad",), 19, "down", "wrap refused", versions=(18, 25))
def pad_without_wrap_kept(node: onnx.NodeProto, context: AdapterContext):
    """Pad-19+(x, p, v, a, mode=m), m not wrap = Pad-18(x, p, v, a, mode=m); mode wrap is refused.

    Version 19 only adds the mode ``wrap``, which version 18 cannot say (onnx's converter keeps
    it, giving a model invalid at 18 that onnxruntime still runs as wrap): refused. Any other
    node means the same at 18."""
    _refuse_wrap(node, context)
    return [moved(node)]
