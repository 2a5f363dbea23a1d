"""ReverseSequence (versions 10, 28, no function body) lowered to GatherElements along the time
axis, each batch's source positions computed from its sequence length."""

from __future__ import annotations

import numpy as np

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

# GatherElements moves the elements, Range counts the positions.
FIRST_OPSET = schemas.first_opset_writing(("GatherElements", "Range"))


def reverse_sequence_reference(
    x: np.ndarray, sequence_lens: np.ndarray, *, batch_axis: int = 1, time_axis: int = 0
) -> np.ndarray:
    """The spec in numpy: in each batch b, the first ``sequence_lens[b]`` elements along the time
    axis reversed, the others copied."""
    y = x.copy()
    for batch, length in enumerate(np.asarray(sequence_lens).reshape(-1)):
        where: list = [slice(None)] * x.ndim
        where[batch_axis], where[time_axis] = batch, slice(0, int(length))
        y[tuple(where)] = np.flip(x[tuple(where)], axis=0)  # (the time axis is first once the batch is taken)
    return y


@rule(
    "ReverseSequence",
    versions=(10, 28),
    reference=reverse_sequence_reference,
    emits=(
        "Shape",
        "Gather",
        "Range",
        "Concat",
        "Reshape",
        "Less",
        "Sub",
        "Where",
        "Unsqueeze",
        "Expand",
        "GatherElements",
        "Constant",
    ),
)
def reverse_sequence_by_gather_elements(
    b: Builder, x: Value, sequence_lens: Value, *, batch_axis: int = 1, time_axis: int = 0
) -> Value:
    """ReverseSequence(x, lens) = GatherElements(x, Expand(s, Shape(x)), axis=time_axis).

    ``s[t, b] = Where(t < lens[b], lens[b] - 1 - t, t)`` (``s[b, t]`` where the batch axis is
    first): within its sequence the position t reads ``lens[b] - 1 - t``, past it its own; t is
    ``Range(0, T, 1)`` (a constant where T is known) along the time axis, lens along the batch
    axis, and ``s`` is unsqueezed over x's other axes before it is expanded to x's shape.
    Elements are only moved, so every value (NaN payloads, -0, strings) is given as it is; a
    length past T fails as the op fails (an index out of range), and so do lengths of another
    count than the batch's (lens is reshaped to the batch's length); a negative length, which
    onnxruntime's kernel refuses, leaves its sequence as it is. Needs x's rank known and the
    time and batch axes 0 and 1 (the schema's only values). Not lowered below opset 11 (no
    GatherElements, no Range).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"GatherElements, which moves the elements, does not exist at opset {b.opset}")
    if {batch_axis, time_axis} != {0, 1}:
        raise NotLowered(f"batch_axis {batch_axis} and time_axis {time_axis} are not 0 and 1, which the op takes")
    shape = b.shape_of(x)
    if shape is None or len(shape) < 2:
        raise NotLowered("the input's rank is unknown" if shape is None else "the input has fewer than 2 axes")
    rank, length = len(shape), shape[time_axis]
    if length is not None:
        positions = b.tensor(np.arange(length, dtype=np.int64), "time_positions")
    else:
        x_shape = b.Shape(x)
        zero, one = b.constant(0, like=x_shape, hint="zero"), b.constant(1, like=x_shape, hint="one")
        positions = b.Range(zero, b.Gather(x_shape, b.constant(time_axis, like=x_shape, hint="time_axis")), one)
    along_time = [-1, 1] if time_axis == 0 else [1, -1]
    t = b.Reshape(positions, b.ints(along_time, "along_time"))
    batch = shape[batch_axis]
    if batch is not None:
        along_batch = b.ints([1, batch] if batch_axis == 1 else [batch, 1], "along_batch")
    else:  # (the batch's length itself, so that lengths of another count fail, as the op fails)
        one = b.ints([1], "one")
        batch_length = b.Gather(b.Shape(x), b.ints([batch_axis], "batch_axis"))
        along_batch = b.Concat(*([one, batch_length] if batch_axis == 1 else [batch_length, one]), axis=0)
    lens = b.Reshape(sequence_lens, along_batch)
    one = b.constant(1, like=lens, hint="one")
    source = b.Where(b.Less(t, lens), b.Sub(b.Sub(lens, one), t), t)
    if rank > 2:
        source = b.over_axes("Unsqueeze", source, list(range(2, rank)))
    return b.GatherElements(x, b.Expand(source, b.Shape(x)), axis=time_axis)
