"""Unsqueeze (versions 11 to 25) and Tile (6, 13), no function bodies, lowered to Reshape and
Expand of shapes computed from Shape(x): copies of x's elements, with the axes or repeats fed at
run time too (OpenVINO refuses Unsqueeze of fed axes, "dynamic rank", and gets Tile of fed
repeats wrong)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .failing import zero_unless

# Reshape takes a 0 as a length (allowzero=1) from this opset on; below, a 0 copies x's length there.
ALLOWZERO_OPSET = schemas.first_opset_with_attribute("Reshape", "allowzero")
FIRST_OPSET = schemas.first_opset_writing(("Reshape", "Gather", "Concat", "Shape"), int64_constants=True)
RUN_TIME_EMITS = ("Where", "Less", "Add", "Equal", "Range", "Cast", "ReduceSum", "ReduceMax", "Greater",
                  "Sub", "Not", "CumSum", "Or", "Size")  # fmt: skip


def reshaped(b: Builder, x: Value, shape: Value, may_hold_zero: bool) -> Value:
    """Reshape(x, shape), a 0 in ``shape`` a length (allowzero=1 from opset 14; below, refused
    where ``shape`` may hold a 0: Reshape would copy x's length at that position instead)."""
    if b.opset >= ALLOWZERO_OPSET:
        return b.Reshape(x, shape, allowzero=1)
    if may_hold_zero:
        raise NotLowered(f"below opset {ALLOWZERO_OPSET} Reshape reads a 0 as a length kept, and a length may be 0")
    return b.Reshape(x, shape)


def _known_rank(b: Builder, x: Value, op_type: str) -> list[int | None]:
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes Reshape and int64 constants, which exist from opset {FIRST_OPSET}")
    dims = b.shape_of(x)
    if dims is None:
        raise NotLowered(f"x's rank is unknown: the shape {op_type} gives cannot be written")
    return dims


def unsqueeze_reference(x: np.ndarray, axes_input=None, *, axes=None) -> np.ndarray:
    """numpy's expand_dims over the axes (counted in the output's rank)."""
    chosen = axes if axes_input is None else np.asarray(axes_input).reshape(-1).tolist()
    return np.expand_dims(x, tuple(int(a) for a in chosen))


@rule("Unsqueeze", versions=(11, 13, 21, 23, 24, 25), reference=unsqueeze_reference,
      emits=("Reshape", "Shape", "Concat", "Gather", "Constant", *RUN_TIME_EMITS))  # fmt: skip
def unsqueeze_by_reshape(b: Builder, x: Value, axes_input: Value | None = None, *, axes=None) -> Value:
    """Unsqueeze(x, a) = Reshape(x, Gather(Concat(Shape(x), [1]), i)), i[p] = r at the axes a
    names (counted in the output's rank R = r + len(a)), else p - (new axes before p).

    With ``a`` constant, i is a constant (and the shape too where x's is known). With ``a`` fed at
    run time (its length known), the new axes are ``new[p] = Σ_k (a'_k = p) > 0``, a' = a + R
    where negative, and ``i = Where(new, r, CumSum(¬new) - 1)``; an axis out of range or named
    twice fails as the op fails (``zero_unless``: the hits must count len(a), none above 1).
    Reshape copies x's elements: bit for bit."""
    dims = _known_rank(b, x, "Unsqueeze")
    if not b.runs("Reshape", x):
        raise NotLowered(f"the target runs no Reshape on {schemas.type_name(x.element_type)}")
    rank = len(dims)
    given = axes if axes_input is None else b.constant_value(axes_input)
    if given is not None:
        if np.asarray(given).ndim > 1:
            raise NotLowered(f"the axes are of rank {np.asarray(given).ndim}: the op takes a scalar or a 1-D tensor")
        named = [int(a) for a in np.asarray(given).reshape(-1)]
        out_rank = rank + len(named)
        chosen = {a + out_rank if a < 0 else a for a in named}
        if len(chosen) != len(named) or any(not 0 <= a < out_rank for a in chosen):
            raise NotLowered(
                f"the axes {named} are not each an axis of the output's rank {out_rank} once: the op fails"
            )
        if None not in dims:
            kept = iter(dims)
            shape = b.ints([1 if p in chosen else next(kept) for p in range(out_rank)], "shape")
            return reshaped(b, x, shape, 0 in dims)
        old = iter(range(rank))
        index = [rank if p in chosen else next(old) for p in range(out_rank)]
        ones = b.ints([1], "one")
        shape = b.Gather(b.Concat(b.Shape(x), ones, axis=0), b.ints(index, "positions"))
        return reshaped(b, x, shape, True)
    count = b.shape_of(axes_input)
    if count is None or len(count) != 1 or count[0] is None:
        raise NotLowered(f"the axes are fed at run time, of shape {count}: the output's rank is not known")
    return reshaped(b, x, _shape_of_fed_axes(b, x, axes_input, rank, rank + count[0]), None in dims or 0 in dims)


def _shape_of_fed_axes(b: Builder, x: Value, axes: Value, rank: int, out_rank: int) -> Value:
    """x's shape with a 1 at each axis ``axes`` names at run time (the rule's formula)."""
    int64 = TensorProto.INT64
    zero, one = b.scalar(0, int64, "zero"), b.scalar(1, int64, "one")
    counted = b.Where(b.Less(axes, zero), b.Add(axes, b.scalar(out_rank, int64, "out_rank")), axes)
    positions = b.Range(zero, b.scalar(out_rank, int64, "out_rank"), one)  # [R]
    hits = b.Cast(b.Equal(b.Reshape(counted, b.ints([-1, 1], "column")), positions), to=int64)  # [k, R]
    per_axis = b.over_axes("ReduceSum", hits, [0], keepdims=0)  # [R]
    twice = b.Greater(b.over_axes("ReduceMax", per_axis, [0], keepdims=0), one)
    missed = b.Not(b.Equal(b.over_axes("ReduceSum", per_axis, [0], keepdims=0), b.Size(axes)))
    new = b.Greater(per_axis, zero)
    before = b.Sub(b.CumSum(b.Cast(b.Not(new), to=int64), zero), one)
    index = b.Add(b.Where(new, b.scalar(rank, int64, "rank"), before), zero_unless(b, b.Or(twice, missed)))
    return b.Gather(b.Concat(b.Shape(x), b.ints([1], "one"), axis=0), index)


def tile_reference(x: np.ndarray, repeats) -> np.ndarray:
    """numpy's tile."""
    return np.tile(x, np.asarray(repeats).reshape(-1).tolist())


@rule("Tile", versions=(6, 13), reference=tile_reference,
      emits=("Reshape", "Expand", "Slice", "Shape", "Concat", "Unsqueeze", "Mul", "Constant"))  # fmt: skip
def tile_by_expand(b: Builder, x: Value, repeats: Value) -> Value:
    """Tile(x, r) = Reshape(Expand(Reshape(x, [1, d_0, 1, d_1, …]), [r_0, d_0, r_1, d_1, …]), r·d).

    Each copy of x along axis k is the new axis 2k before it, spread by Expand, then merged:
    output element (i_0, …) is x's element (i_0 mod d_0, …). Copies only: bit for bit, but for
    float16 signalling NaNs, which onnxruntime's Tile quiets (measured): kept, NaN for NaN. r fed at
    run time too; one not of x's rank, or negative, fails as the op fails (Concat, Expand). Where a
    repeat or length may be 0, a Slice to [r_0, d_0, …] follows Expand: onnxruntime's graph
    optimizer drops an Expand of a length 1 to 0 between Reshapes (measured)."""
    dims = _known_rank(b, x, "Tile")
    rank = len(dims)
    if rank == 0:
        raise NotLowered("x is a scalar: Tile takes x of rank 1 and more")
    missing = [op for op in ("Expand", "Reshape", "Slice") if not b.runs(op, x)]
    if missing:
        raise NotLowered(f"the target runs no {', '.join(missing)} on {schemas.type_name(x.element_type)}")
    given = b.constant_value(repeats)
    count = b.shape_of(repeats) if given is None else list(given.shape)
    if count is not None and (len(count) != 1 or count[0] not in (rank, None)):
        raise NotLowered(f"repeats of shape {count} for x of rank {rank}: the op fails")
    if given is not None and (given < 0).any():
        raise NotLowered(f"repeats {given.tolist()} below 0: the op fails")
    may_hold_zero = None in dims or 0 in dims or given is None or 0 in given.reshape(-1).tolist()
    lengths = b.Shape(x)
    flat = b.ints([-1], "flat")

    def interleaved(first: Value) -> Value:
        """[f_0, d_0, f_1, d_1, …]: ``first`` and x's lengths, axis by axis."""
        pairs = b.Concat(b.over_axes("Unsqueeze", first, [1]), b.over_axes("Unsqueeze", lengths, [1]), axis=1)
        return b.Reshape(pairs, flat)

    spread = reshaped(b, x, interleaved(b.ints([1] * rank, "ones")), may_hold_zero)
    copies = interleaved(repeats)
    expanded = b.Expand(spread, copies)
    if may_hold_zero:  # (onnxruntime's optimizer drops an Expand of a length 1 to 0, measured: cut to it)
        expanded = b.Slice(expanded, b.ints([0] * 2 * rank, "starts"), copies, b.ints(range(2 * rank), "axes"))
    return reshaped(b, expanded, b.Mul(repeats, lengths), may_hold_zero)
