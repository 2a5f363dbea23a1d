"""ReduceMax and ReduceMin (versions 1 to 20) over x known to hold no element lowered to the
reduction's identity expanded to the output's shape: ``-inf``, the type's lowest or False (Max),
``+inf``, its highest or True (Min), as the spec answers an empty set (onnxruntime too, but for
bools, which it fails)."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

FIRST_OPSET = schemas.first_opset_writing(("Expand", "Gather"), int64_constants=True)
EMITS = ("Expand", "Shape", "Gather", "Mul", "Add", "Where", "Equal", "Cast", "ReduceSum", "Greater", "Or", "Not",
         "Size", "Compress", "Reshape", "Constant")  # fmt: skip


def identity_of(op_type: str, element_type: int):
    """The value of ``op_type`` over an empty set: -inf / +inf for floats, the type's lowest /
    highest for integers, False / True for bools."""
    dtype = np.dtype(floats.numpy_dtype(element_type))
    if element_type == onnx.TensorProto.BOOL:
        return np.bool_(op_type == "ReduceMin")
    if floats.is_float(element_type):
        return dtype.type(-np.inf if op_type == "ReduceMax" else np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.min if op_type == "ReduceMax" else info.max)


def _reference(op_type: str):
    def reference(x: np.ndarray, axes_input=None, *, axes=None, keepdims: int = 1, noop_with_empty_axes: int = 0):
        """numpy's max / min with the identity as its initial value (an empty set gives it)."""
        chosen = axes if axes_input is None else np.asarray(axes_input).reshape(-1).tolist()
        if not chosen and noop_with_empty_axes:
            return x
        reduce = np.max if op_type == "ReduceMax" else np.min
        initial = identity_of(op_type, onnx.helper.np_dtype_to_tensor_dtype(x.dtype))
        return reduce(x, axis=tuple(chosen) if chosen else None, keepdims=bool(keepdims), initial=initial)

    return reference


def _of_nothing(
    op_type: str, b: Builder, x: Value, axes_input: Value | None, axes, keepdims: int, noop_with_empty_axes: int
) -> Value:
    """Expand(identity, s): s is x's shape with the reduced axes 1 (keepdims) or left out; the
    reduced axes named by the attribute, a constant input, or an input fed at run time (each
    axis k reduced where ``ReduceSum(Cast(Equal(a', k))) > 0``, a' = Gather([0, …, r-1], a),
    negative axes counted from the end, one out of range failing as the op fails; no axes: every
    axis, or none with noop_with_empty_axes=1)."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes Expand and int64 constants, which exist from opset {FIRST_OPSET}")
    known = b.shape_of(x)
    if known is None or 0 not in known:
        raise NotLowered(f"x (of shape {known}) is not known to hold no element: {op_type} stays, a primitive")
    rank = len(known)
    fill = b.scalar(identity_of(op_type, x.element_type), x.element_type, "identity")
    given = b.constant_value(axes_input) if axes_input is not None else None
    if axes_input is not None and given is None:
        return b.Expand(fill, _shape_chosen_at_run_time(b, x, axes_input, rank, keepdims, noop_with_empty_axes))
    named = [int(a) for a in (given.reshape(-1) if given is not None else axes or [])]
    if any(not -rank <= a < rank for a in named):
        raise NotLowered(f"the axes {named} are not all axes of x's rank {rank}: the op fails")
    if not named and noop_with_empty_axes:
        return b.Identity(x)
    reduced = {a % rank for a in named} if named else set(range(rank))
    kept = [k for k in range(rank) if k not in reduced]
    if None not in known:
        shape = [1 if k in reduced else d for k, d in enumerate(known)] if keepdims else [known[k] for k in kept]
        return b.Expand(fill, b.ints(shape, "shape"))
    dims = b.Shape(x)
    if keepdims:
        kept_mask = b.ints([0 if k in reduced else 1 for k in range(rank)], "kept")
        shape = b.Add(b.Mul(dims, kept_mask), b.ints([1 if k in reduced else 0 for k in range(rank)], "reduced"))
    else:
        shape = b.Gather(dims, b.ints(kept, "kept_axes"), axis=0)
    return b.Expand(fill, shape)


def _shape_chosen_at_run_time(b: Builder, x: Value, axes: Value, rank: int, keepdims: int, noop: int) -> Value:
    """x's shape with the axes ``axes`` names at run time 1 (keepdims) or left out (Compress)."""
    every = b.ints(range(rank), "every_axis")
    named = b.Gather(every, b.Reshape(axes, b.ints([-1, 1], "column")), axis=0)  # [m, 1], from 0 to r-1
    hits = b.Cast(b.Equal(named, every), to=onnx.TensorProto.INT64)  # [m, r]
    chosen = b.Greater(b.over_axes("ReduceSum", hits, [0], keepdims=0), b.ints([0], "none"))
    if not noop:  # (no axes: every axis)
        chosen = b.Or(chosen, b.Equal(b.Size(axes), b.scalar(0, onnx.TensorProto.INT64, "zero")))
    dims = b.Shape(x)
    if keepdims:
        return b.Where(chosen, b.ints([1] * rank, "ones"), dims)
    return b.Compress(dims, b.Not(chosen), axis=0)


@rule("ReduceMax", versions=(1, 11, 12, 13, 18, 20), reference=_reference("ReduceMax"), emits=EMITS,
      empty_input_only=True)  # fmt: skip
def max_of_nothing(
    b: Builder, x: Value, axes_input: Value | None = None, *, axes: list[int] | None = None, keepdims: int = 1,
    noop_with_empty_axes: int = 0,
) -> Value:  # fmt: skip
    """ReduceMax(x, a) over x of no element = Expand(-inf or the type's lowest, s(a)).

    The reduced set of each output element is empty where a reduced axis is 0 long, and the
    output holds no element where a kept one is: either way every element is the identity
    (``_of_nothing``). Only x known to hold no element is lowered (ReduceMax is otherwise a
    primitive): the form OpenVINO, tract, TVM and onnx2torch get wrong, and onnxruntime fails on
    bools (its original is judged by onnx.reference there)."""
    return _of_nothing("ReduceMax", b, x, axes_input, axes, keepdims, noop_with_empty_axes)


@rule("ReduceMin", versions=(1, 11, 12, 13, 18, 20), reference=_reference("ReduceMin"), emits=EMITS,
      empty_input_only=True)  # fmt: skip
def min_of_nothing(
    b: Builder, x: Value, axes_input: Value | None = None, *, axes: list[int] | None = None, keepdims: int = 1,
    noop_with_empty_axes: int = 0,
) -> Value:  # fmt: skip
    """ReduceMin(x, a) over x of no element = Expand(+inf or the type's highest, s(a)), as
    :func:`max_of_nothing`."""
    return _of_nothing("ReduceMin", b, x, axes_input, axes, keepdims, noop_with_empty_axes)
