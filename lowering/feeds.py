"""Inputs that find wrong lowerings: built from a model's input types and shapes, every float
input carries NaN of both signs, ±inf, ±0, subnormals and the extreme normals, mixed with
random values; optionals come both empty and present, bool scalars both ways."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import onnx

from . import floats, schemas
from .errors import LoweringError
from .samples import edge_values, every_bit_pattern

DEFAULT_DIMENSION = 8
DEFAULT_RUNS = 8
Feed = dict[str, object]


@dataclass
class FeedPlan:
    """How to build inputs: the seed, at least how many runs, and fixed shapes by input name."""

    seed: int = 0
    runs: int = DEFAULT_RUNS
    shapes: dict[str, list[int]] = field(default_factory=dict)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The inputs a caller must feed (an initializer with the same name is a default: skipped)."""
    initializers = {t.name for t in model.graph.initializer}
    return [info for info in model.graph.input if info.name not in initializers]


def _tensor_shape(info: onnx.ValueInfoProto, type_proto: onnx.TypeProto, plan: FeedPlan, bound: dict) -> list[int]:
    if info.name in plan.shapes and type_proto is info.type:
        return list(plan.shapes[info.name])
    tensor_type = type_proto.tensor_type
    if not tensor_type.HasField("shape"):
        return [DEFAULT_DIMENSION]
    shape = []
    for dim in tensor_type.shape.dim:
        if dim.HasField("dim_value"):
            shape.append(dim.dim_value)
        elif dim.dim_param:
            shape.append(bound.setdefault(dim.dim_param, DEFAULT_DIMENSION))
        else:
            shape.append(DEFAULT_DIMENSION)
    return shape


class _FloatStream:
    """Edge values first, then random bit patterns: run k takes the next block."""

    def __init__(self, element_type: int, rng: np.random.Generator) -> None:
        self.dtype = floats.numpy_dtype(element_type)
        self.edges = edge_values(element_type) if self.dtype.itemsize > 2 else _narrow_edges(element_type)
        self.rng = rng
        self.position = 0

    def take(self, count: int) -> np.ndarray:
        values = []
        while count > 0 and self.position < self.edges.size:
            chunk = self.edges[self.position : self.position + count]
            values.append(chunk)
            self.position += chunk.size
            count -= chunk.size
        if count > 0:
            values.append(self._random(count))
        return np.concatenate(values) if values else np.zeros(0, self.dtype)

    def _random(self, count: int) -> np.ndarray:
        """Half ordinary numbers, half random bit patterns (NaNs, subnormals, both signs)."""
        ordinary = (self.rng.standard_normal(count) * 10.0 ** self.rng.integers(-3, 4, count)).astype(np.float64)
        with np.errstate(all="ignore"):
            ordinary = ordinary.astype(self.dtype)
        raw = self.rng.integers(0, 256, size=count * self.dtype.itemsize, dtype=np.uint8).view(self.dtype)
        return np.where(self.rng.random(count) < 0.5, ordinary, raw).astype(self.dtype)


def _narrow_edges(element_type: int) -> np.ndarray:
    """For 8- and 16-bit floats: every NaN and infinity pattern is too many to carry each run,
    so the edges are the distinct classes (NaN both signs, ±inf, ±0, subnormals, extremes)."""
    dtype = floats.numpy_dtype(element_type)
    every = every_bit_pattern(element_type)
    with np.errstate(all="ignore"):
        wide = every.astype(np.float64)
    finite = np.isfinite(wide)
    magnitude = np.abs(np.where(finite, wide, 0.0))
    tiny = float(ml_dtypes.finfo(dtype).smallest_normal)
    picks = []
    for sign in (False, True):
        side = np.signbit(wide) == sign
        for mask in (np.isnan(wide), np.isinf(wide), finite & (wide == 0)):
            picks += list(np.flatnonzero(side & mask)[:2])
        subnormal = np.flatnonzero(side & finite & (magnitude > 0) & (magnitude < tiny))
        if subnormal.size:
            picks += [subnormal[0], subnormal[-1]]
        normal = np.flatnonzero(side & finite & (magnitude >= tiny))
        if normal.size:
            picks += [normal[0], normal[np.argmax(magnitude[normal])]]
    return every[np.array(sorted(set(picks)), dtype=np.int64)]


def _integers(element_type: int, shape: list[int], rng: np.random.Generator) -> np.ndarray:
    """Small non-negative integers: valid as indices, counts and shapes in most models."""
    dtype = floats.numpy_dtype(element_type)
    return rng.integers(0, 4, size=shape).astype(dtype)


def build_feeds(model: onnx.ModelProto, plan: FeedPlan) -> list[Feed]:
    """Feeds for ``plan.runs`` runs at least, more until every float input has carried every edge value."""
    rng = np.random.default_rng(plan.seed)
    bound: dict[str, int] = {}
    inputs = graph_inputs(model)
    unknown = set(plan.shapes) - {info.name for info in inputs}
    if unknown:
        raise LoweringError(f"--shape names no input of the model: {', '.join(sorted(unknown))}")
    streams: dict[tuple[str, int], _FloatStream] = {}
    sizes: dict[str, int] = {}

    def element_value(info, type_proto, run: int, path: str):
        kind = type_proto.WhichOneof("value")
        if kind == "optional_type":
            if run % 2 == 1:
                return None
            return element_value(info, type_proto.optional_type.elem_type, run, path)
        if kind == "sequence_type":
            length = run % 3
            return [element_value(info, type_proto.sequence_type.elem_type, run, f"{path}/{k}") for k in range(length)]
        if kind != "tensor_type":
            raise LoweringError(
                f"input '{info.name}' has type {schemas.type_string(type_proto)}: no inputs can be made for it"
            )
        element_type = type_proto.tensor_type.elem_type
        shape = _tensor_shape(info, type_proto, plan, bound)
        count = math.prod(shape)
        if floats.is_float(element_type):
            stream = streams.setdefault((path, element_type), _FloatStream(element_type, rng))
            sizes[path] = max(count, 1)
            return stream.take(count).reshape(shape)
        if element_type == onnx.TensorProto.BOOL:
            if not shape:
                return np.array(run % 2 == 0)
            return rng.random(shape) < 0.5
        if element_type == onnx.TensorProto.STRING:
            return np.array([f"s{v}" for v in rng.integers(0, 100, count)], dtype=object).reshape(shape)
        try:
            return _integers(element_type, shape, rng)
        except (KeyError, TypeError, ValueError):
            raise LoweringError(
                f"input '{info.name}' has element type {schemas.type_name(element_type)}: no inputs can be made for it"
            ) from None

    feeds: list[Feed] = []
    run = 0
    while run < max(plan.runs, 1) or any(s.position < s.edges.size for s in streams.values()):
        feeds.append({info.name: element_value(info, info.type, run, info.name) for info in inputs})
        run += 1
        if not inputs or run > 10_000:
            break
    return feeds
