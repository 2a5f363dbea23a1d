"""Compress (versions 9, 11 and 28, no function body) lowered to a Gather of the positions NonZero
finds in the condition."""

from __future__ import annotations

import numpy as np

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .gathering import gather_along

# Slice takes its ends as an input (not an attribute) from this opset.
FIRST_OPSET = next(
    opset
    for opset in range(schemas.first_opset("Slice"), schemas.newest_opset() + 1)
    if "ends" not in schemas.schema_in_force("Slice", opset).attributes
)
# Gather takes negative indices from opset 11 (its documentation says so; its schema does not).
NEGATIVE_INDICES_OPSET = 11


def compress_reference(x: np.ndarray, condition: np.ndarray, *, axis: int | None = None) -> np.ndarray:
    """numpy's compress, the condition cut to the length it selects from (onnxruntime's kernel
    ignores a longer condition's tail, which the spec leaves unsaid)."""
    selected = x.reshape(-1) if axis is None else x
    length = selected.shape[0 if axis is None else axis]
    return np.compress(np.asarray(condition).reshape(-1)[:length], selected, axis=0 if axis is None else axis)


@rule(
    "Compress",
    versions=(9, 11, 28),
    reference=compress_reference,
    emits=("Shape", "Gather", "Slice", "NonZero", "Reshape", "GatherElements", "Expand", "Concat", "Constant"),
)
def compress_by_gather(b: Builder, x: Value, condition: Value, *, axis: int | None = None) -> Value:
    """Compress(x, c, axis) = Gather(x, Reshape(NonZero(c[:n]), [-1]), axis), n = x's length
    along the axis; without an axis, x is first flattened (Reshape(x, [-1])).

    NonZero gives the positions where c is true, in order; Gather takes those slices, moving
    every value as it is (NaN payloads, -0, strings). A condition shorter than the axis selects
    among its first positions only, as the op says; a longer one is cut to the axis's length
    (Slice), as onnxruntime's kernel ignores its tail; the cut is left out where both lengths are
    known and the condition is not longer. A condition of another rank than 1 is read flattened,
    as onnxruntime's kernel reads it. A negative axis counts from the back (the rank known,
    or from opset 11, where Gather takes a negative index). Strings along another axis than the
    last are gathered by GatherElements (:func:`gathering.gather_along`: onnxruntime's Gather of
    strings there keeps each slice's first), so not below opset 11 and only of a known rank. Not
    lowered below opset 10 (Slice takes no ends as an input).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"Slice takes no ends as an input at opset {b.opset}")
    if axis is None:
        x, axis, shape = b.Reshape(x, b.ints([-1], "flat")), 0, [None]
    else:
        shape = b.shape_of(x)
    if axis < 0 and shape is not None:
        axis += len(shape)
    if axis < 0 and b.opset < NEGATIVE_INDICES_OPSET:
        raise NotLowered(f"axis {axis} counts from the back of an input of unknown rank, at opset {b.opset}")
    length = shape[axis] if shape is not None and 0 <= axis < len(shape) else None
    given = b.shape_of(condition)
    if given is None or len(given) != 1:  # (onnxruntime's kernel reads any condition flattened)
        condition, given = b.Reshape(condition, b.ints([-1], "flat_condition")), None
    if length is None or given is None or given[0] is None or given[0] > length:
        condition = b.Slice(condition, b.ints([0], "start"), b.Gather(b.Shape(x), b.ints([axis], "axis")))
    positions = b.Reshape(b.NonZero(condition), b.ints([-1], "positions"))
    return gather_along(b, x, positions, axis, None if shape is None else len(shape))
