"""Range (versions 11, 27) without a loop: its elements are a running sum, which CumSum gives."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

EMITS = (
    "Cast", "Sub", "Div", "Ceil", "Greater", "Where", "Abs", "Less", "And", "Or", "Equal", "Neg", "Mul", "Add",
    "Reshape", "Expand", "Concat", "Slice", "CumSum", "Constant",
    "Shape", "Gather", "Loop", "Identity",  # (16-bit floats: a Loop of n steps)
)  # fmt: skip
# The largest count taken (2^62): past it onnxruntime's kernel cannot allocate the range anyway.
LARGEST_COUNT = 2.0**62
# Range itself exists from opset 11, as CumSum does; Slice takes its bounds as inputs from 10.
FIRST_OPSET = max(schemas.first_opset_writing(EMITS, int64_constants=True), 11)


def range_count(start, limit, delta) -> int:
    """How many elements onnxruntime's kernel gives: ceil((limit - start) / delta), exactly for
    integers, in double (each bound taken to double first) for floats, 0 where not positive;
    ValueError where it fails: delta 0, a count that is not finite or past 2^62."""
    start, limit, delta = (np.asarray(value).reshape(()) for value in (start, limit, delta))
    if delta == 0:
        raise ValueError("Range: delta is 0")
    if start.dtype.kind == "i":
        count = -((int(start) - int(limit)) // int(delta))
    else:
        with np.errstate(all="ignore"):
            count = np.ceil((np.float64(limit) - np.float64(start)) / np.float64(delta))
    if not (np.isfinite(float(count)) and count < LARGEST_COUNT):
        raise ValueError(f"Range: the computed number of elements, {count}, is not a count it takes")
    return max(int(count), 0)


def range_reference(start, limit, delta) -> np.ndarray:
    """Range as onnxruntime's kernel computes it: :func:`range_count` elements, each the
    previous plus delta in the type."""
    start, delta = np.asarray(start).reshape(()), np.asarray(delta).reshape(())
    values = np.empty(range_count(start, limit, delta), start.dtype)
    value = start
    with np.errstate(all="ignore"):
        for index in range(len(values)):
            values[index] = value
            value = (value + delta).astype(start.dtype)
    return values


@rule("Range", versions=(11, 27), emits=EMITS, rounding_invariant=False)
def range_by_running_sum(b: Builder, start: Value, limit: Value, delta: Value) -> Value:
    """Range(s, l, d) = CumSum(Slice(Concat([s], Expand(d, [n])), 0, n)), n = max(Ceil((l - s) / d), 0).

    The op's function body (a Loop) and onnxruntime's kernel make each element the previous
    plus delta, in the type: CumSum of [start, delta, ..., delta] adds in that very order, so
    float elements round alike, bit for bit. The count is onnxruntime's: for floats each bound
    cast to double before the Sub and the Div (measured: the function body's float32 division
    counts otherwise); for integers exact, the span and the step taken as uint64 magnitudes
    (l - s may pass int64), n = q + (r > 0) of their division. Where the op fails (delta 0, a
    count that is not finite or past 2^62) the lowered graph fails too (Expand to a dimension
    of -1); a negative count gives an empty range. int16 runs its sums in int32, where every
    partial sum is an element and fits. Not lowered where CumSum does not run on the type
    (float16 and bfloat16 in onnxruntime: widening would round each sum otherwise), nor below
    opset 11."""
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"CumSum does not exist at opset {b.opset}")
    element_type = start.element_type
    wide = onnx.TensorProto.INT32 if element_type == onnx.TensorProto.INT16 else element_type
    if not b.runs("CumSum", Value(start.name, wide)):
        if floats.is_float(element_type) and floats.numpy_dtype(element_type).itemsize < 4:
            return _range_by_loop(b, start, limit, delta)
        raise NotLowered(f"CumSum does not run on {schemas.type_name(element_type)} at opset {b.opset}")
    count = (
        _integer_count(b, start, limit, delta)
        if floats.is_integer(element_type)
        else _float_count(b, start, limit, delta)
    )
    count = b.Reshape(count, b.ints([1], "one_dimension"))
    if wide != element_type:
        start, delta = (b.Cast(value, to=wide) for value in (start, delta))
    steps = b.Concat(b.Reshape(start, b.ints([1], "one_element")), b.Expand(delta, count), axis=0)
    elements = b.CumSum(b.Slice(steps, b.ints([0], "first"), count), b.scalar(0, onnx.TensorProto.INT64, "axis"))
    return elements if wide == element_type else b.Cast(elements, to=element_type)


def _float_count(b: Builder, start: Value, limit: Value, delta: Value) -> Value:
    """n = Ceil((l - s) / d) in double, 0 where negative, -1 where not finite or past 2^62 (int64)."""
    low, high, step = (b.Cast(value, to=onnx.TensorProto.DOUBLE) for value in (start, limit, delta))
    count = b.Ceil(b.Div(b.Sub(high, low), step))
    zero = b.constant(0, like=count, hint="zero")
    finite = b.Less(b.Abs(count), b.constant(np.inf, like=count, hint="inf"))
    taken = b.And(finite, b.Less(count, b.constant(LARGEST_COUNT, like=count, hint="largest_count")))
    counted = b.Where(taken, b.Where(b.Greater(count, zero), count, zero), b.constant(-1, like=count, hint="minus_one"))
    return b.Cast(counted, to=onnx.TensorProto.INT64)


def _integer_count(b: Builder, start: Value, limit: Value, delta: Value) -> Value:
    """n = ceil((l - s) / d) exactly: from lo to hi (s to l where d > 0, l to s where d < 0),
    q = span / |d| and r = span - q·|d| in uint64 (onnxruntime runs no uint64 Where: choices are
    made in int64), n = q + (r > 0) where hi > lo, else 0; -1 where d is 0 or n past 2^62. For
    int16 and int32 the span and |d| fit int64, where they are divided (runtimes without uint64
    arithmetic run it: onnx2torch)."""
    int64 = onnx.TensorProto.INT64
    wide = start.element_type == int64  # (else the span and |d| fit int64)

    def carried(value: Value) -> Value:  # (in uint64 where the span may pass int64)
        return b.Cast(value, to=onnx.TensorProto.UINT64) if wide else value

    start, limit, delta = (
        b.Cast(value, to=int64) if value.element_type != int64 else value for value in (start, limit, delta)
    )
    zero = b.constant(0, like=delta, hint="zero")
    one = b.constant(1, like=delta, hint="one")
    upward = b.Greater(delta, zero)
    low, high = b.Where(upward, start, limit), b.Where(upward, limit, start)
    still = b.Equal(delta, zero)
    magnitude = carried(b.Where(still, one, b.Where(upward, delta, b.Neg(delta))))  # |INT64_MIN| = 2^63
    span = b.Sub(carried(high), carried(low))
    quotient = b.Div(span, magnitude)
    remainder = b.Sub(span, b.Mul(quotient, magnitude))
    zero_u = b.constant(0, like=span, hint="zero")
    count_u = b.Add(quotient, b.Cast(b.Greater(remainder, zero_u), to=span.element_type))
    ahead = b.Greater(high, low)
    too_many = b.And(ahead, b.Greater(count_u, b.constant(int(LARGEST_COUNT), like=span, hint="largest_count")))
    refused = b.Or(still, too_many)
    counted = b.Cast(count_u, to=int64) if wide else count_u
    count = b.Where(refused, b.constant(-1, like=delta, hint="minus_one"), counted)
    return b.Where(b.Or(refused, ahead), count, zero)


def _range_by_loop(b: Builder, start: Value, limit: Value, delta: Value) -> Value:
    """float16 and bfloat16, which CumSum does not take here: a Loop of n steps, each yielding
    the element and adding delta in float32, rounded back to the type (the sum of two values of
    a 16-bit float type rounds alike in float32 and then the type as in one rounding: float32 holds
    it exactly unless the two are so far apart that the smaller cannot move the larger)."""
    element_type, wide = start.element_type, onnx.TensorProto.FLOAT
    count = _float_count(b, start, limit, delta)
    # a count of -1 (where the op fails) fails here too: Expand to a dimension of -1
    trips = b.Gather(
        b.Shape(b.Expand(b.constant(0, like=count, hint="zero"), b.Reshape(count, b.ints([1], "one_dimension")))),
        b.scalar(0, onnx.TensorProto.INT64, "index_0"),
        axis=0,
    )
    step = b.Cast(delta, to=wide)
    body = b.nested("loop")
    iteration = body.fresh_value("iteration", onnx.TensorProto.INT64)
    condition = body.fresh_value("condition", onnx.TensorProto.BOOL)
    element = body.fresh_value("element", element_type)
    following = body.Cast(body.Add(body.Cast(element, to=wide), step), to=element_type)
    keep = body.Identity(condition)
    yielded = body.Identity(element)
    graph = onnx.helper.make_graph(
        body.nodes,
        b.fresh("loop_body"),
        [onnx.helper.make_tensor_value_info(iteration.name, iteration.element_type, []),
         onnx.helper.make_tensor_value_info(condition.name, condition.element_type, []),
         onnx.helper.make_tensor_value_info(element.name, element_type, [])],
        [onnx.helper.make_tensor_value_info(v.name, v.element_type, []) for v in (keep, following, yielded)],
    )  # fmt: skip
    outputs = [b.fresh("loop_last"), b.fresh("loop_elements")]
    b.op("Loop", trips, "", start, outputs=outputs, body=graph)
    # (onnx.reference's Loop stacks 0-D elements as [n, 1], by np.vstack; the spec says [n])
    return b.Reshape(Value(outputs[1], element_type), b.ints([-1], "flat"))
