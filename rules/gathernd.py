"""GatherND (versions 11, 12, 13; no function body) lowered to one Gather on the data flattened
over the indexed axes, each index tuple folded into one row number."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .gathering import row_numbers
from .versions.gathernd import batch_coordinates

INT64_MAX = np.iinfo(np.int64).max
EMITS = (
    "Add", "Concat", "Expand", "Flatten", "Gather", "Mul", "Range", "Reshape", "Shape", "Slice", "Unsqueeze",
    "Constant",
)  # fmt: skip


def gathernd_reference(data: np.ndarray, indices: np.ndarray, *, batch_dims: int = 0) -> np.ndarray:
    """out[a, t] = data[a, indices[a, t]], a the batch_dims leading positions data and indices
    share, t the other index positions; an index in [-d, d) counts from the end where negative,
    outside it is an error (IndexError)."""
    batch_shape = indices.shape[:batch_dims]
    if data.shape[:batch_dims] != batch_shape:
        raise IndexError(f"the batch dimensions differ: {data.shape[:batch_dims]} and {batch_shape}")
    depth = indices.shape[-1]
    result = np.empty(indices.shape[:-1] + data.shape[batch_dims + depth :], data.dtype)
    for place in np.ndindex(*indices.shape[:-1]):
        batch, index = place[:batch_dims], tuple(int(i) for i in indices[place])
        sizes = data.shape[batch_dims : batch_dims + depth]
        if any(not -size <= i < size for i, size in zip(index, sizes, strict=True)):
            raise IndexError(f"index {index} lies outside dimensions {sizes}")
        result[place] = data[batch + index]
    return result


@rule("GatherND", versions=schemas.op_versions("GatherND"), emits=EMITS, reference=gathernd_reference)
def gathernd_by_row_numbers(b: Builder, data: Value, indices: Value, *, batch_dims: int = 0) -> Value:
    """GatherND(x, i, batch_dims=0) = Reshape(Gather(Flatten(x, k), r, axis=0), Concat(Shape(i)[:-1], Shape(x)[k:])).

    k = Shape(i)[-1], the number of axes an index tuple names; Flatten(x, k) is x as rows
    [d₀···d_{k-1}, rest], and the row of tuple (i₀, ..., i_{k-1}) is
    r = (···(n₀·d₁ + n₁)·d₂ + ···)·d_{k-1} + n_{k-1}, n_j = Gather(Range(0, d_j, 1), i_j): i_j itself,
    or i_j + d_j where negative, and an error where outside [-d_j, d_j), as GatherND fails. With
    batch_dims = b, each tuple first gets its batch position in front (as GatherND-12 goes to
    11), so k = b + Shape(i)[-1]. Integers only, so exact on every type. The last Reshape's shape
    is a constant where every dimension is known and none is 0; else computed, and holds no 0 a
    copy would misread (allowzero=1 from opset 14; below, where data's dimensions past the first
    after k are known not 0, or there are none). Needs k (the last dimension of i)
    known and not 0, and with batch_dims, the batch dimensions known equal in x and i (the op
    fails where they differ, the batch coordinates would not); strings only where each tuple
    names one string (k = rank of x): onnxruntime's Gather keeps only the first string of each
    row it takes."""
    indices_shape = b.shape_of(indices)
    if indices_shape is None or indices_shape[-1] is None:
        raise NotLowered("the last dimension of its indices (how many axes an index names) is unknown")
    data_shape = b.shape_of(data)
    if batch_dims:
        batch = [data_shape[:batch_dims] if data_shape is not None else None, indices_shape[:batch_dims]]
        if batch[0] is None or None in batch[0] or None in batch[1] or batch[0] != batch[1]:
            raise NotLowered(
                f"its batch dimensions are not known equal in data and indices ({batch[0]} and {batch[1]}), "
                "where the op fails if they differ"
            )
        indices = batch_coordinates(b, indices, batch_dims, len(indices_shape))
    depth = batch_dims + indices_shape[-1]
    if depth == 0:
        raise NotLowered("its index tuples are empty (the last dimension of its indices is 0)")
    if data.element_type == onnx.TensorProto.STRING and (data_shape is None or len(data_shape) != depth):
        raise NotLowered(
            "onnxruntime's Gather on strings keeps only the first string of each row it takes (measured), and "
            "its index tuples name rows, not single strings"
        )
    allowzero = b.opset >= 14
    if not allowzero and (data_shape is None or None in data_shape[depth + 1 :] or 0 in data_shape[depth + 1 :]):
        raise NotLowered(
            f"its data's dimensions past axis {depth} are not known to hold no 0, which a Reshape at opset "
            f"{b.opset} (no allowzero) would misread"
        )
    dims = b.Shape(data)

    def coordinate(j: int) -> Value:
        return b.Gather(indices, b.scalar(j, onnx.TensorProto.INT64, f"axis_{j}"), axis=-1)

    rows = b.Gather(b.Flatten(data, axis=depth), row_numbers(b, dims, depth, coordinate), axis=0)
    known = None if data_shape is None else [*indices_shape[:-1], *data_shape[depth:]]
    if known is not None and None not in known and 0 not in known:  # (no 0: allowzero says nothing)
        return b.Reshape(rows, b.ints(known, "shape"))
    tuples_shape = b.Slice(b.Shape(indices), b.ints([0], "start"), b.ints([-1], "end"))
    rest = b.Slice(dims, b.ints([depth], "rest_start"), b.ints([INT64_MAX], "rest_end"))
    shape = b.Concat(tuples_shape, rest, axis=0)
    return b.Reshape(rows, shape, allowzero=1) if allowzero else b.Reshape(rows, shape)
