"""MaxPool (versions 1, 8, 10, 11, 12, 22, no function body) lowered to a running maximum over
the kernel's offsets, each a gather of X's elements at every window's position."""

from __future__ import annotations

import itertools
import math

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.conversion.adapters import as_text
from lowering.registry import Builder, NotLowered, Value, rule

from .counting import counted
from .ordering import comparable
from .versions.pool import pooled_windows, valid_ceil_counted_apart

EMITS = (
    "Gather", "Less", "And", "Or", "Where", "Reshape", "Cast", "Shape", "Mul", "Add", "Squeeze", "Unsqueeze",
    "Range", "Constant",
)  # fmt: skip
# Where takes any type from 9 (Less every number), and Constant int64 from 9.
FIRST_OPSET = schemas.first_opset_writing(("Where", "Less", "Gather", "Reshape"), int64_constants=True)
# Range (counting the planes where batch or channels come at run time) exists from this opset on.
RANGE_OPSET = schemas.first_opset("Range")
# The most kernel offsets the rule unrolls (a few nodes each).
MOST_OFFSETS = 256


@rule("MaxPool", versions=(1, 8, 10, 11, 12, 22), emits=EMITS)
def maxpool_by_running_maximum(
    b: Builder,
    x: Value,
    *,
    kernel_shape: list[int] | None = None,
    strides: list[int] | None = None,
    pads: list[int] | None = None,
    dilations: list[int] | None = None,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    storage_order: int = 0,
) -> tuple[Value, Value]:
    """MaxPool(X) = (Y, Indices): per window, the running maximum of its elements in the kernel's
    order (row-major over the offsets), padding skipped: ``held`` its first element, then each
    next element x taken where held < x (a NaN held stays, a NaN x is never taken: strictly
    greater, as onnxruntime's kernel compares). ``Indices`` the flat position of the element held
    in X (row-major, or column-major over the spatial axes where ``storage_order`` = 1);
    ``Y = Gather(X, Indices)``, X's own bits. Windows counted by the node's version's formulas
    (``pooled_windows``), each position's validity a constant.
    Bit for bit with onnxruntime's kernel where it pools element by element (dilations, the
    Indices output, storage_order: measured over NaN, ±inf, pads, ceil_mode, 1-D to 3-D). Its
    vectorized kernel for a plain MaxPool answers NaN by where it stands ([NaN, 1, 2, 0] → 2,
    [1, 2, 0, NaN] → NaN) and a window of -inf as -3.4e38 (float's lowest), which no rewrite
    follows: the rule answers there as its element-by-element kernel, as above; on every other
    value alike. Not lowered: X's rank or spatial sizes unknown, no window or one wholly in the
    padding, auto_pad SAME padding less than nothing or with dilations (onnxruntime pads as if
    the kernel were not dilated), VALID with ceil_mode where a stride does not divide the span
    (the schema and onnxruntime count apart), a pad as long as the kernel (onnxruntime refuses
    it), more than 256 kernel offsets, types the target compares in no exact way, opsets below 9.
    """
    if b.opset < FIRST_OPSET:
        raise NotLowered(f"the rule writes ops as they are from opset {FIRST_OPSET}, not {b.opset}")
    shape = b.shape_of(x)
    if shape is None or len(shape) < 3 or None in shape[2:]:
        raise NotLowered("X's rank or spatial sizes are unknown, so its windows are unknown")
    if kernel_shape is None:
        raise NotLowered("no kernel_shape")
    sizes = [int(s) for s in shape[2:]]
    axes = len(sizes)
    if len(kernel_shape) != axes:
        raise NotLowered(f"kernel_shape {kernel_shape} does not fit X's {axes} spatial axes")
    strides = list(strides or [1] * axes)
    dilations = list(dilations or [1] * axes)
    pads = list(pads or [0] * (2 * axes))
    offsets = list(itertools.product(*(range(k) for k in kernel_shape)))
    if len(offsets) > MOST_OFFSETS:
        raise NotLowered(f"its kernel has {len(offsets)} offsets, more than the {MOST_OFFSETS} the rule unrolls")
    version = b.source_version("MaxPool") or schemas.version_in_force("MaxPool", b.opset)
    windows = _windows(version, sizes, kernel_shape, strides, dilations, pads, as_text(auto_pad), bool(ceil_mode))
    keys = comparable(b, x, ("Less",))
    spatial = math.prod(sizes)
    held = index = column_index = None
    taken = np.zeros([count for count, _ in windows], bool)
    for offset in offsets:
        places = [  # along each axis, each window's position at this offset
            np.arange(count) * strides[a] - before + offset[a] * dilations[a]
            for a, (count, before) in enumerate(windows)
        ]
        valid = np.ones(taken.shape, bool)
        for a, place in enumerate(places):
            valid &= _along(place >= 0, a, axes) & _along(place < sizes[a], a, axes)
        if not valid.any():
            continue
        clipped = [np.clip(place, 0, size - 1) for place, size in zip(places, sizes, strict=True)]
        elements = keys
        for a, place in enumerate(clipped):
            elements = b.Gather(elements, b.ints(place.tolist(), f"places{a}"), axis=2 + a)
        grid = np.meshgrid(*clipped, indexing="ij")
        here = b.tensor(np.ravel_multi_index(grid, sizes).astype(np.int64), "positions")
        column_here = None
        if storage_order:  # column-major over the spatial axes
            column_here = b.tensor(np.ravel_multi_index(grid[::-1], sizes[::-1]).astype(np.int64), "columns")
        first, compared = valid & ~taken, valid & taken
        if held is None:
            held, index, column_index = elements, here, column_here
        else:
            take = _taken(b, first, compared, held, elements)
            held = b.Where(take, elements, held)
            index = b.Where(take, here, index)
            column_index = b.Where(take, column_here, column_index) if storage_order else None
        taken |= valid
    flat_x = b.Reshape(x, b.ints([-1], "every_element"))
    base = _plane_starts(b, x, shape, spatial, axes)
    positions = b.Add(base, index)
    y = b.Gather(flat_x, positions)
    return y, b.Add(base, column_index) if storage_order else positions


def _windows(version, sizes, kernel, strides, dilations, pads, auto_pad, ceil_mode) -> list[tuple[int, int]]:
    """(windows, padding before) along each spatial axis; refused where a window holds no element
    of X or the padding is less than nothing."""
    axes = len(sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and any(d != 1 for d in dilations):
        raise NotLowered(f"auto_pad {auto_pad} with dilations {dilations}: onnxruntime pads as if the kernel were "
                         "not dilated, against the spec's output size")  # fmt: skip
    if auto_pad == "NOTSET" and any(pad >= kernel[a % axes] for a, pad in enumerate(pads)):
        raise NotLowered(f"pads {pads} hold one of its kernel's length {kernel} or more, which onnxruntime refuses")
    found = []
    for a, size in enumerate(sizes):
        if auto_pad == "VALID" and ceil_mode and valid_ceil_counted_apart(size, kernel[a], strides[a], dilations[a]):
            raise NotLowered(
                f"auto_pad VALID with ceil_mode=1 along spatial axis {a} (size {size}, stride {strides[a]}): the "
                "schema and onnxruntime count its windows otherwise where the stride does not divide the span"
            )
        given = (pads[a], pads[axes + a])
        count, before, after = pooled_windows(
            "MaxPool", version, size, kernel[a], strides[a], dilations[a], given, auto_pad, ceil_mode
        )
        if count < 1 or before < 0 or after < 0:
            raise NotLowered(f"along spatial axis {a} (size {size}) it pads less than nothing or has no window")
        places = (np.arange(count) * strides[a] - before)[:, None] + np.arange(kernel[a]) * dilations[a]
        if not ((places >= 0) & (places < size)).any(axis=1).all():
            raise NotLowered(f"a window along spatial axis {a} (size {size}) lies wholly in the padding")
        found.append((count, before))
    return found


def _along(flags: np.ndarray, axis: int, axes: int) -> np.ndarray:
    return flags.reshape([-1 if k == axis else 1 for k in range(axes)])


def _taken(b: Builder, first: np.ndarray, compared: np.ndarray, held: Value, elements: Value) -> Value:
    """Where this offset's element is held: where it is a window's first element (``first``, a
    constant), or where it is compared (``compared``) and held < x."""
    greater = b.Less(held, elements)
    if not compared.all():
        greater = b.And(b.tensor(compared, "compared"), greater)
    if first.any():
        greater = b.Or(b.tensor(first, "first"), greater)
    return greater


def _plane_starts(b: Builder, x: Value, shape: list, spatial: int, axes: int) -> Value:
    """(n·C + c)·spatial, shaped [N, C, 1, ...]: where each (n, c) plane of X starts in its
    elements; a constant where N and C are known, else ``n·(C·spatial)`` for n in Range(N) plus
    ``c·spatial`` for c in Range(C), broadcast (no Reshape, which reads a 0 as "keep")."""
    if shape[0] is not None and shape[1] is not None:
        starts = np.arange(shape[0] * shape[1], dtype=np.int64).reshape([shape[0], shape[1]] + [1] * axes) * spatial
        return b.tensor(starts, "plane_starts")
    if b.opset < RANGE_OPSET:
        raise NotLowered(f"X's batch or channels are unknown, and Range, which counts its planes, is not at {b.opset}")
    int64 = TensorProto.INT64
    zero, one, plane = b.scalar(0, int64, "zero"), b.scalar(1, int64, "one"), b.scalar(spatial, int64, "plane")
    x_shape = b.Shape(x)
    batch = b.over_axes("Squeeze", b.Gather(x_shape, b.ints([0], "batch")), [0])
    channels = b.over_axes("Squeeze", b.Gather(x_shape, b.ints([1], "channels")), [0])
    samples = b.Mul(counted(b, zero, batch, one), b.Mul(channels, plane))  # [N]
    planes = b.Mul(counted(b, zero, channels, one), plane)  # [C]
    return b.Add(b.over_axes("Unsqueeze", samples, list(range(1, axes + 2))),
                 b.over_axes("Unsqueeze", planes, [0, *range(2, axes + 2)]))  # fmt: skip
