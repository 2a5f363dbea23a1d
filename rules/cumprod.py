"""CumProd (version 26, no function body) lowered to running products of its slices along the axis."""

from __future__ import annotations

import numpy as np

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

# The longest axis the rule unrolls: one Slice and one Mul per element.
LONGEST_AXIS = 64

EMITS = ("Slice", "Mul", "Concat", "Expand", "Shape", "Cast", "Unsqueeze", "Gather", "Reshape", "Constant")
# The rule writes ops as they are from this opset on: each of them exists (Expand from 8) and
# Constant holds its int64 indices and shapes (from 9), onnx.defs says.
FIRST_OPSET = schemas.first_opset_writing(EMITS, int64_constants=True)


def cumprod_reference(x: np.ndarray, axis: np.ndarray | int, *, exclusive: int = 0, reverse: int = 0) -> np.ndarray:
    """numpy's cumprod along axis, in x's own type (each product rounded to it), float16 in
    float32 rounded once at the end (as onnxruntime runs it; onnx.reference rounds each
    product); the first product of the axis is x's element itself; exclusive: of
    [1, x_0, ..., x_{n-2}]; reverse: from the axis' end."""
    if x.dtype == np.float16:
        with np.errstate(all="ignore"):
            return cumprod_reference(x.astype(np.float32), axis, exclusive=exclusive, reverse=reverse).astype(x.dtype)
    axis = int(np.asarray(axis).reshape(-1)[0]) % x.ndim
    values = np.flip(x, axis) if reverse else x
    if exclusive:
        ones = np.ones_like(np.take(values, [0], axis))
        values = np.concatenate([ones, np.take(values, range(values.shape[axis] - 1), axis)], axis)
    with np.errstate(all="ignore"):
        products = np.cumprod(values, axis=axis, dtype=x.dtype)
    return np.flip(products, axis) if reverse else products


@rule(
    "CumProd",
    versions=(26,),
    emits=EMITS,
    rounding_invariant=False,
    reference=cumprod_reference,
)
def cumprod_by_running_products(
    b: Builder, x: Value, axis: Value | None = None, *, exclusive: int = 0, reverse: int = 0
) -> Value:
    """CumProd(x, axis) = Concat(y_0, ..., y_{n-1}), y_0 = x_0, y_k = Mul(y_{k-1}, x_k), x_k = Slice(x, k, k + 1).

    The same products, in the same order, as onnxruntime's CumProd kernel (float, double,
    int32, int64, uint32, uint64): bit for bit, -0, infinities and integer wraparound included,
    except which payload survives where two NaNs meet, which onnxruntime's own Mul and CumProd
    leave to the vector length. Exclusive multiplies [1, x_0, ..., x_{n-2}] (the ones an Expand
    of 1 to a slice's shape), reverse runs from the axis' end. float16 and bfloat16 multiply in
    float32: float16 rounded once at the end, as onnxruntime runs CumProd on it (its float32
    kernel between Casts); bfloat16, which it cannot run, each product rounded (Cast there and
    back, which onnxruntime keeps), as onnx.reference and numpy do. The axis' length must be
    known and at most 64 (the products are unrolled). An axis that is no constant is served by
    every axis' products, stacked, and a Gather of the one the axis names (negative axes and
    the out-of-range error as the op's). Not lowered where x's rank or such a length is
    unknown, or below opset 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    if axis is None:
        raise NotLowered("CumProd has no axis input")
    shape = b.shape_of(x)
    if shape is None:
        raise NotLowered("the rank of x is unknown")
    rank = len(shape)
    if rank == 0:
        raise NotLowered("x is a scalar, which has no axis to multiply along")
    given_axis = b.constant_value(axis)
    if given_axis is not None:
        if given_axis.size != 1:
            raise NotLowered(f"the axis input holds {given_axis.size} values, not one")
        axis_value = int(given_axis.reshape(-1)[0])
        if not -rank <= axis_value < rank:
            raise NotLowered(f"axis {axis_value} is out of range for x of rank {rank}")
        candidates = [axis_value % rank]
    else:
        candidates = list(range(rank))
    for candidate in candidates:
        length = shape[candidate]
        if length is None:
            which = "the axis" if given_axis is not None else f"axis {candidate} (the axis is no constant)"
            raise NotLowered(f"the length of {which} of x is unknown")
        if length > LONGEST_AXIS:
            which = "the axis" if given_axis is not None else f"axis {candidate} (the axis is no constant)"
            raise NotLowered(
                f"{which} has {length} elements, more than the {LONGEST_AXIS} this rule unrolls into products"
            )
    computed = b.computable(x, emit=False)
    if not b.runs("Mul", computed):
        raise NotLowered(f"Mul does not run on {schemas.type_name(computed.element_type)} at opset {b.opset}")
    wide = b.computable(x)
    # A runtime that runs CumProd on x's type by its float32 kernel between Casts (onnxruntime
    # on float16) rounds once, at the end; else each product is rounded to x's type.
    widened = wide is not x and b.target.runs_widened("CumProd", schemas.op_versions("CumProd")[-1], x.element_type)
    narrow = x if not widened else wide
    products = [
        _running_products(b, narrow, wide, candidate, shape[candidate], exclusive=exclusive, reverse=reverse)
        for candidate in candidates
    ]
    if widened:
        products = [b.Cast(p, to=x.element_type) for p in products]
    if given_axis is not None:
        return products[0]
    # Gather takes the axis as the op does: negative from the end, out of range an error.
    stacked = b.Concat(*[b.over_axes("Unsqueeze", p, [0]) for p in products], axis=0)
    return b.Gather(stacked, _as_scalar(b, axis), axis=0)


def _running_products(b: Builder, x: Value, wide: Value, axis: int, length: int, *, exclusive: int, reverse: int):
    """The running products of x's slices along ``axis``, in x's type: multiplied in ``wide``
    (x itself, or x cast exactly to float32), each product rounded to x's type."""
    if length == 0:
        return x
    rounding = wide.element_type != x.element_type
    order = list(range(length))[::-1] if reverse else list(range(length))
    slice_of = _Slicer(b, axis)
    slices = {k: slice_of(wide, k) for k in (order[:-1] if exclusive else order)}
    outputs: dict[int, Value] = {}
    if exclusive:
        ones = b.Expand(
            b.constant(1, like=wide, hint="one"), b.Shape(slices[order[0]] if length > 1 else slice_of(wide, 0))
        )
        running = ones
        outputs[order[0]] = b.Cast(ones, to=x.element_type) if rounding else ones
        factors = [(k, slices[previous]) for previous, k in zip(order, order[1:], strict=False)]
    else:
        first = order[0]
        running = slices[first]
        outputs[first] = slice_of(x, first) if rounding else running
        factors = [(k, slices[k]) for k in order[1:]]
    for k, factor in factors:
        product = b.Mul(running, factor)
        if rounding:
            outputs[k] = b.Cast(product, to=x.element_type)
            running = b.Cast(outputs[k], to=wide.element_type)
        else:
            outputs[k] = running = product
    if length == 1:
        return outputs[0]
    return b.Concat(*[outputs[k] for k in range(length)], axis=axis)


class _Slicer:
    """A value's k-th slice along one axis, the axis kept (of length 1); the index constants
    made once."""

    def __init__(self, b: Builder, axis: int) -> None:
        self.b, self.axis = b, axis
        self.indices: dict[int, Value] = {}
        self.axes: Value | None = None

    def __call__(self, x: Value, k: int) -> Value:
        b = self.b
        if b.opset < 10:
            return b.Slice(x, starts=[k], ends=[k + 1], axes=[self.axis])
        if self.axes is None:
            self.axes = b.ints([self.axis], "axis")
        return b.Slice(x, self._index(k), self._index(k + 1), self.axes)

    def _index(self, k: int) -> Value:
        if k not in self.indices:
            self.indices[k] = self.b.ints([k], f"index{k}")
        return self.indices[k]


def _as_scalar(b: Builder, axis: Value) -> Value:
    """The axis input as a 0-D tensor (a 1-element 1-D one reshaped), for Gather to drop the
    stacking axis."""
    type_proto = axis.type
    if (
        type_proto is not None
        and type_proto.tensor_type.HasField("shape")
        and len(type_proto.tensor_type.shape.dim) == 0
    ):
        return axis
    return b.Reshape(axis, b.ints([], "scalar_shape"))
