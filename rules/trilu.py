"""Trilu (version 14, no function body) lowered to a mask of row and column indices and Where."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule


def trilu_reference(x: np.ndarray, k: np.ndarray | int | None = None, *, upper: int = 1) -> np.ndarray:
    """numpy's triu (upper) or tril on the last two axes, diagonal k (0 when absent); the kept
    elements are x's own (NaN payloads, -0), the others a zero of x's type."""
    diagonal = 0 if k is None else int(np.asarray(k).reshape(-1)[0])
    rows, columns = x.shape[-2:]
    offset = np.arange(columns)[None, :] - np.arange(rows)[:, None]  # j - i
    keep = offset >= diagonal if upper else offset <= diagonal
    return np.where(keep, x, np.zeros((), x.dtype))


@rule("Trilu", versions=(14,), reference=trilu_reference)
def trilu_by_index_mask(b: Builder, x: Value, k: Value | None = None, *, upper: int = 1) -> Value:
    """Trilu(x, k, upper) = Where(Less(j - i, k), 0, x) (upper), Where(Greater(j - i, k), 0, x) (lower).

    i = Range(0, N, 1) unsqueezed to [N, 1] and j = Range(0, M, 1), N and M the last two
    dimensions of Shape(x) at run time (Gather of the shape at -2 and -1), so ``j - i`` is the
    [N, M] matrix of diagonal offsets, broadcast over the batch axes; k is 0 where not given.
    Upper keeps the elements on and above diagonal k (j - i >= k), lower those on and below it
    (j - i <= k). The mask says which elements to drop, so no Not is needed, and x is Where's
    third input: onnxruntime's CPU Where keeps x's bits there (-0, NaN payloads), while with x
    second it returns +0 for -0 (measured with a scalar zero third and with Expand(0, Shape(x))).
    j - i cannot overflow (it lies within ±max(N, M)); k is compared as given. Needs Range
    (opset 11) and a Where for x's type (bfloat16 from 16) that the target runs (onnxruntime's
    CPU Where: float, double, int8, int32, int64, uint8, uint32); bool is And(x, Not(drop));
    elsewhere not lowered, nor on strings (no zero stated).
    """
    if b.opset < 11:
        raise NotLowered(f"Range, which builds the row and column indices, does not exist at opset {b.opset}")
    if x.element_type == onnx.TensorProto.STRING:
        raise NotLowered("Trilu states no zero for strings")
    is_bool = x.element_type == onnx.TensorProto.BOOL
    if not is_bool and not b.runs("Where", x, input_index=1):
        raise NotLowered(f"Where does not run on {schemas.type_name(x.element_type)} at opset {b.opset}")
    shape = b.Shape(x)
    zero, one = b.constant(0, like=shape, hint="zero"), b.constant(1, like=shape, hint="one")
    rows = b.Range(zero, b.Gather(shape, b.constant(-2, like=shape, hint="minus_two")), one)
    columns = b.Range(zero, b.Gather(shape, b.constant(-1, like=shape, hint="minus_one")), one)
    if b.opset < 13:
        rows = b.Unsqueeze(rows, axes=[1])
    else:  # axes as an input: [1] made as Range(1, 2, 1), as the pool holds scalars only
        rows = b.Unsqueeze(rows, b.Range(one, b.constant(2, like=shape, hint="two"), one))
    offset = b.Sub(columns, rows)
    diagonal = zero if k is None else k
    drop = b.Less(offset, diagonal) if upper else b.Greater(offset, diagonal)
    if is_bool:
        return b.And(x, b.Not(drop))
    return b.Where(drop, b.constant(0, like=x, hint="zero"), x)
