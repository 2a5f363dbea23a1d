"""TensorScatter (version 24, no function body) lowered to ScatterElements with the write
positions computed from write_indices and a Range along the sequence axis."""

from __future__ import annotations

import numpy as np

from lowering.registry import Builder, NotLowered, Value, rule

# ScatterElements and Range, which the rule writes, exist from opset 11.
FIRST_OPSET = 11


def tensorscatter_reference(
    past_cache: np.ndarray, update: np.ndarray, write_indices: np.ndarray | None = None, *, mode: str = "linear",
    axis: int = -2,
) -> np.ndarray:  # fmt: skip
    """The schema's pseudocode: each prefix's sequence of ``update`` written into a copy of
    ``past_cache`` from ``write_indices[batch]`` on (modulo the cache's length when circular)."""
    mode = mode.decode() if isinstance(mode, bytes) else mode
    axis = axis % past_cache.ndim
    present = past_cache.copy()
    length = past_cache.shape[axis]
    starts = np.zeros(past_cache.shape[0], np.int64) if write_indices is None else np.asarray(write_indices)
    for prefix in np.ndindex(past_cache.shape[:axis]):
        for position in range(update.shape[axis]):
            index = int(starts[prefix[0]]) + position
            if mode == "circular":
                index %= length
            present[(*prefix, index)] = update[(*prefix, position)]
    return present


@rule(
    "TensorScatter",
    versions=(24,),
    reference=tensorscatter_reference,
    emits=("Shape", "Gather", "Range", "Reshape", "Add", "Mod", "Expand", "ScatterElements", "Constant"),
)
def tensorscatter_as_scatter_elements(
    b: Builder, past_cache: Value, update: Value, write_indices: Value | None = None, *, mode: str = "linear",
    axis: int = -2,
) -> Value:  # fmt: skip
    """TensorScatter(c, u, w, axis=a) = ScatterElements(c, Expand(w[:, None, ...] + s, Shape(u)), u, axis=a).

    ``s`` = ``Reshape(Range(0, S, 1), [S, 1, ..., 1])``, S = ``u``'s length along ``a`` at run
    time, and ``w`` reshaped to ``[B, 1, ..., 1]`` (zeros where absent): each element of ``u``
    goes to its batch's write index plus its own position in ``u``'s sequence, taken modulo
    the cache's length L along ``a`` when ``mode`` is circular (``Mod(w + s, L)``, the divisor's
    sign, as the schema's Python ``%``); every other index is the element's own, which
    ScatterElements keeps. Elements are only moved, so every value (NaN payloads, -0) is
    written as it is. Needs the cache's rank known and ``a`` not the batch axis; the schema
    bounds S by L, so no two elements meet (linear positions past the end are the op's error,
    and ScatterElements' too). Not lowered below opset 11 (no Range, no ScatterElements).
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"ScatterElements and Range, which the rule writes, do not exist at opset {b.opset}")
    shape = b.shape_of(past_cache)
    if shape is None:
        raise NotLowered("the rank of past_cache is unknown")
    rank = len(shape)
    if not -rank <= axis < rank or axis % rank == 0:
        raise NotLowered(f"axis {axis} is not a sequence axis of a cache of rank {rank}")
    axis %= rank
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode not in ("linear", "circular"):
        raise NotLowered(f"mode '{mode}' is not one TensorScatter-24 states")
    update_shape = b.Shape(update)
    zero = b.constant(0, like=update_shape, hint="zero")
    one = b.constant(1, like=update_shape, hint="one")
    length = b.Gather(update_shape, b.constant(axis, like=update_shape, hint="axis"))
    positions = b.Reshape(b.Range(zero, length, one), b.ints([-1] + [1] * (rank - axis - 1), "per_position"))
    if write_indices is not None:
        positions = b.Add(b.Reshape(write_indices, b.ints([-1] + [1] * (rank - 1), "per_batch")), positions)
    if mode == "circular":
        cache_length = b.Gather(b.Shape(past_cache), b.constant(axis, like=update_shape, hint="axis"))
        positions = b.Mod(positions, cache_length)
    return b.ScatterElements(past_cache, b.Expand(positions, update_shape), update, axis=axis)
