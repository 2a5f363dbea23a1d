"""OneHot (versions 9, 11, 28, no function body) lowered to an Equal of the indices with the classes
0..depth-1, which picks off_value or on_value by Gather."""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted

# Range counts the classes where depth is given at run time.
RANGE_OPSET = schemas.first_opset("Range")
# Unsqueeze takes a negative axis from opset 11.
NEGATIVE_AXES_OPSET = 11


def onehot_reference(indices: np.ndarray, depth: np.ndarray, values: np.ndarray, *, axis: int = -1) -> np.ndarray:
    """The spec in numpy: each index cast to int64 as onnxruntime does (a float truncated), a
    negative one counted from the end (``i + depth``), and at its class ``values[1]``, elsewhere
    ``values[0]``; an index outside [-depth, depth-1] (a float one compared before it is
    truncated) gives ``values[0]`` all along its axis."""
    signed = indices.dtype.kind != "u"
    index = indices.astype(np.int64)
    count = int(np.asarray(depth).reshape(-1)[0])
    if signed:
        index = np.where(index < 0, index + count, index)
    if indices.dtype.kind == "f":  # (outside [-depth, depth-1] before truncation: -3.5 of depth 3)
        wide = indices.astype(np.float64)
        index = np.where((wide < -count) | (wide > count - 1), count, index)
    hot = index[..., None] == np.arange(count)
    return np.moveaxis(values[hot.astype(np.int64)], -1, axis % (indices.ndim + 1))


@rule(
    "OneHot",
    versions=(9, 11, 28),
    reference=onehot_reference,
    emits=(
        "Cast",
        "Less",
        "Greater",
        "Or",
        "Neg",
        "Sub",
        "Add",
        "Where",
        "Reshape",
        "Range",
        "Unsqueeze",
        "Equal",
        "Gather",
        "Constant",
    ),
)
def onehot_by_equal_classes(b: Builder, indices: Value, depth: Value, values: Value, *, axis: int = -1) -> Value:
    """OneHot(i, d, values, axis=a) = Gather(values, Cast(Equal(Unsqueeze(j, a), c), int64)).

    ``j = Cast(i, int64)`` (a float index truncated, as onnxruntime's kernel casts it), a
    negative one counted from the end, ``Where(Less(j, 0), j + d, j)`` (not for unsigned types,
    whose values past int64's range stay negative and so match no class), and a float index
    outside [-d, d-1] before truncation (-3.5 of depth 3; onnxruntime's kernel truncates it into
    range) made d, which matches no class: the spec's words. A fractional index within range
    takes the class it truncates to, as onnxruntime's kernel (onnx.reference matches no class
    there; the spec does not say). ``c`` is the classes
    0..d-1 (a constant where d is one, else ``Range(0, d, 1)``) shaped ``[d, 1, ..., 1]`` with
    one 1 per output axis after ``a``. Equal is true at the index's class only, so an index
    outside [-d, d-1] matches none; Gather picks ``values[1]`` (on) there and ``values[0]`` (off)
    elsewhere, each moved as it is (NaN payloads, -0, strings). Needs the indices' rank where
    ``a`` is not negative or the opset is below 11 (Unsqueeze's negative axes); a depth given at
    run time needs Range (opset 11); a constant depth below 1 (the op's error), or scalar
    indices, are not lowered.
    """
    depth_value = b.constant_value(depth)
    if depth_value is not None and depth_value.size != 1:
        raise NotLowered(f"depth holds {depth_value.size} values, not one")
    if depth_value is None and b.opset < RANGE_OPSET:
        raise NotLowered(
            f"depth is given at run time, and Range, which counts its classes, does not exist at opset {b.opset}"
        )
    shape = b.shape_of(indices)
    if shape == []:
        raise NotLowered("the indices are a scalar, which OneHot refuses (its shape inference: rank >= 1)")
    after = -axis - 1  # output axes after the one-hot axis
    if axis >= 0 or b.opset < NEGATIVE_AXES_OPSET:
        if shape is None:
            raise NotLowered(f"the rank of the indices is unknown, which places axis {axis} at opset {b.opset}")
        if not -len(shape) - 1 <= axis <= len(shape):
            raise NotLowered(f"axis {axis} is outside the {len(shape) + 1} axes of the output")
        axis %= len(shape) + 1
        after = len(shape) - axis
    index = indices if indices.element_type == onnx.TensorProto.INT64 else b.Cast(indices, to=onnx.TensorProto.INT64)
    if depth_value is not None:
        count = int(depth_value.reshape(-1)[0])
        if count < 1:
            raise NotLowered(f"depth {count} is below 1, which the op refuses")
        classes = b.tensor(np.arange(count, dtype=np.int64).reshape([count] + [1] * after), "classes")
        count_value = b.scalar(count, onnx.TensorProto.INT64, "depth")
    else:
        count_value = (
            depth if depth.element_type == onnx.TensorProto.INT64 else b.Cast(depth, to=onnx.TensorProto.INT64)
        )
        count_value = b.Reshape(count_value, b.ints([], "scalar"))
        zero = b.constant(0, like=count_value, hint="zero")
        classes = counted(b, zero, count_value, b.constant(1, like=count_value, hint="one"))
        if after:
            classes = b.Reshape(classes, b.ints([-1] + [1] * after, "class_shape"))
    if floats.numpy_dtype(indices.element_type).kind != "u":
        negative = b.Less(index, b.constant(0, like=count_value, hint="zero"))
        index = b.Where(negative, b.Add(index, count_value), index)
    if floats.is_float(indices.element_type):
        index = b.Where(outside_the_classes(b, indices, count_value, depth_value), count_value, index)
    hot = b.Equal(b.over_axes("Unsqueeze", index, [axis]), classes)
    return b.Gather(values, b.Cast(hot, to=onnx.TensorProto.INT64), axis=0)


def outside_the_classes(b: Builder, indices: Value, count: Value, depth: np.ndarray | None) -> Value:
    """Whether each float index lies outside [-d, d-1] before it is truncated (-3.5 of depth 3:
    truncated it would be -3, the class 0): ``Or(i < -d, i > d - 1)``, compared in double, which
    holds every float16, float and double and every depth below 2^53 exactly."""
    double = onnx.TensorProto.DOUBLE
    wide = indices if indices.element_type == double else b.Cast(indices, to=double)
    if depth is not None:
        count_value = int(depth.reshape(-1)[0])
        lowest, highest = b.scalar(-count_value, double, "lowest"), b.scalar(count_value - 1, double, "highest")
    else:
        bound = b.Cast(count, to=double)
        lowest, highest = b.Neg(bound), b.Sub(bound, b.scalar(1, double, "one"))
    return b.Or(b.Less(wide, lowest), b.Greater(wide, highest))
