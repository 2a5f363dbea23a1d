"""MaxUnpool (versions 9, 11, 22, no function body) lowered to a scatter of the pooled values into
a flat tensor of zeros, reshaped to the output's shape."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from lowering import floats, schemas
from lowering.registry import Builder, NotLowered, Value, rule

from .failing import zero_unless
from .unsqueeze import reshaped

# Scatter, ScatterElements' former name, stands in below this.
SCATTER_ELEMENTS_OPSET = schemas.first_opset("ScatterElements")

MOST_SPATIAL_AXES = 3  # onnxruntime's kernel unpools 1 to 3 spatial axes ("Unsupported pooling size", measured)


def unpooled_shape(x_shape, kernel_shape, pads, strides) -> list:
    """The output's shape without output_shape: N, C, then ``(d - 1)·s + k - p_begin - p_end`` per axis."""
    spatial = len(kernel_shape)
    return list(x_shape[:2]) + [
        (x_shape[2 + i] - 1) * strides[i] + kernel_shape[i] - pads[i] - pads[i + spatial] for i in range(spatial)
    ]


def given_output_shape(given: np.ndarray | None, known, kernel_shape, pads, strides) -> list[int]:
    """A constant output_shape where onnxruntime's kernel takes it: X's rank, N and C, and no
    spatial length below the unpooled one (the shape without it)."""
    if given is None:
        raise NotLowered("output_shape is given at run time: onnxruntime checks it against X's shape as it runs")
    given = given.reshape(-1).tolist()
    if known is None or None in known:
        raise NotLowered("output_shape is given and X's shape is not known: onnxruntime checks one against the other")
    if len(given) != len(known):
        raise NotLowered(f"output_shape {given} is not of X's rank {len(known)}: onnxruntime fails")
    smallest = unpooled_shape(known, kernel_shape, pads, strides)
    if given[:2] != smallest[:2] or any(g < s for g, s in zip(given[2:], smallest[2:], strict=True)):
        raise NotLowered(
            f"output_shape {given} is not X's N and C with lengths at least the unpooled {smallest}: onnxruntime fails"
        )
    return given


def maxunpool_reference(
    x: np.ndarray, indices: np.ndarray, output_shape: np.ndarray | None = None, *, kernel_shape, pads=None, strides=None
) -> np.ndarray:
    """The spec in numpy: zeros of the output's shape, and each of x's values written at its
    index into the output taken as flat (in order: where two meet, the later one stays; an
    output_shape read as onnxruntime reads it)."""
    spatial = len(kernel_shape)
    pads, strides = list(pads or [0] * 2 * spatial), list(strides or [1] * spatial)
    shape = unpooled_shape(x.shape, kernel_shape, pads, strides) if output_shape is None else list(output_shape)
    y = np.zeros(math.prod(shape), x.dtype)
    for index, value in zip(indices.reshape(-1), x.reshape(-1), strict=True):
        y[index] = value
    return y.reshape(shape)


@rule(
    "MaxUnpool",
    versions=(9, 11, 22),
    reference=maxunpool_reference,
    emits=("Shape", "Gather", "Sub", "Mul", "Add", "Concat", "ReduceProd", "ConstantOfShape", "Reshape",
           "ScatterElements", "Scatter", "Constant", "ReduceMin", "ReduceSum", "Less", "Abs", "Size", "Or",
           "Greater", "Cast"),
    constant_inputs=(2,),  # (output_shape)
)  # fmt: skip
def maxunpool_by_scatter(
    b: Builder, x: Value, indices: Value, output_shape: Value | None = None, *, kernel_shape=None, pads=None,
    strides=None,
) -> Value:  # fmt: skip
    """MaxUnpool(X, I) = Reshape(ScatterElements(zeros[∏ shape], Reshape(I, [-1]), Reshape(X, [-1]), 0), shape).

    ``shape`` is N, C and ``(d - 1)·s + k - p_begin - p_end`` per spatial axis of X (a constant
    where X's dimensions are known, else from Shape(X)), or a constant output_shape read as
    onnxruntime's kernel reads it: the indices placed in it taken as flat. onnx's own backend case
    (test_maxunpool_export_with_output_shape) and onnx.reference read it otherwise (the indices
    placed in the shape without it, padded out; the spec does not say which), so the lowered model
    means what onnxruntime computes for the original. output_shape is taken where its rank, N and C
    are X's and no spatial length is below the one without it (onnxruntime fails otherwise,
    measured), X's shape known; one given at run time is left. Each value of X is written at its linear index into the
    output taken as flat, as MaxPool gives them; the others are +0 of X's type. Values are only
    moved (NaN payloads, -0); where two indices meet (overlapping windows) the later write stays,
    as in onnxruntime's kernel and its ScatterElements. An index past the output, below 0 or I not
    of X's shape fails as the op fails (checked as it runs, :func:`_indices_refused`); what
    onnxruntime refuses to load or run is refused (more than 3 spatial axes, pads not below the
    kernel, no positive unpooled length; measured). Reshape takes a 0 as a length from opset 14
    (allowzero); below, X known to hold a 0 is refused. Scatter, ScatterElements' name before
    opset 11, at opsets 9 and 10. onnxruntime's float16 kernel quiets signalling NaNs (0x7C49 →
    0x7E00, measured): the copies keep them, NaN for NaN.
    """
    if not kernel_shape:
        raise NotLowered("kernel_shape, which the op requires, is not given")
    if not x.element_type:
        raise NotLowered("the element type of X, whose zero fills the output, is unknown")
    spatial = len(kernel_shape)
    pads, strides = list(pads or [0] * 2 * spatial), list(strides or [1] * spatial)
    if len(pads) != 2 * spatial or len(strides) != spatial:
        raise NotLowered(f"pads {pads} or strides {strides} do not fit a kernel of {spatial} axes")
    if spatial > MOST_SPATIAL_AXES or any(pad >= kernel_shape[a % spatial] for a, pad in enumerate(pads)):
        raise NotLowered(
            f"{spatial} spatial axes or pads {pads} not below the kernel {kernel_shape}: onnxruntime fails"
        )
    known = b.shape_of(x)
    if known is not None and None not in known and len(known) == spatial + 2:
        if min(unpooled_shape(known, kernel_shape, pads, strides)[2:], default=1) <= 0:
            raise NotLowered(f"X of shape {known} unpools to no positive length: onnxruntime fails")
    if output_shape is not None:
        shape = b.ints(given_output_shape(b.constant_value(output_shape), known, kernel_shape, pads, strides),
                       "output_shape")  # fmt: skip
    elif known is not None and len(known) == spatial + 2 and None not in known:
        shape = b.ints(unpooled_shape(known, kernel_shape, pads, strides), "output_shape")
    else:
        x_shape = b.Shape(x)
        sizes = b.Gather(x_shape, b.ints(range(2, spatial + 2), "spatial_axes"))
        extents = [kernel_shape[i] - strides[i] - pads[i] - pads[i + spatial] for i in range(spatial)]
        unpooled = b.Add(b.Mul(sizes, b.ints(strides, "strides")), b.ints(extents, "extents"))
        shape = b.Concat(b.Gather(x_shape, b.ints([0, 1], "batch_and_channel_axes")), unpooled, axis=0)
    count = b.over_axes("ReduceProd", shape, [0], keepdims=1)
    zero = floats.tensor(np.zeros([1], floats.numpy_dtype(x.element_type)), "zero")
    zeros = b.ConstantOfShape(count, value=zero)
    flat = b.ints([-1], "flat")
    places = b.Add(b.Reshape(indices, flat), zero_unless(b, _indices_refused(b, x, indices, known, flat)))
    scatter = "ScatterElements" if b.opset >= SCATTER_ELEMENTS_OPSET else "Scatter"
    written = b.op(scatter, zeros, places, b.Reshape(x, flat), axis=0)
    return reshaped(b, written, shape, known is not None and 0 in known)  # (a length 0 at run time: stated)


def _indices_refused(b: Builder, x: Value, indices: Value, known, flat: Value) -> Value:
    """Whether onnxruntime's kernel refuses I (a bool): an index below 0 (ScatterElements would
    count it from the end), or I not of X's shape (compared as they run, unless both are known)."""
    least = b.over_axes("ReduceMin", b.Reshape(indices, flat), [0], keepdims=0)
    negative = b.Less(least, b.scalar(0, TensorProto.INT64, "zero"))
    known_indices = b.shape_of(indices)
    if known is not None and known_indices is not None and None not in known and None not in known_indices:
        if known != known_indices:
            raise NotLowered(f"I of shape {known_indices} is not X's {known}: onnxruntime fails")
        return negative
    x_shape, indices_shape = b.Shape(x), b.Shape(indices)
    lengths_apart = b.ReduceSum(b.Abs(b.Sub(x_shape, indices_shape)), keepdims=0)
    ranks_apart = b.Abs(b.Sub(b.Size(x_shape), b.Size(indices_shape)))
    zero = b.scalar(0, TensorProto.INT64, "zero")
    return b.Or(negative, b.Greater(b.Add(lengths_apart, ranks_apart), zero))
