"""Inputs that find wrong lowerings: built from a model's input types and shapes, every float
input carries NaN of both signs, ±inf, ±0, subnormals and the extreme normals, mixed with
random values; optionals come both empty and present, bool scalars both ways."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import onnx

from .. import floats, schemas
from ..errors import LoweringError
from ..samples import edge_values, every_bit_pattern

DEFAULT_DIMENSION = 8
DEFAULT_RUNS = 8
MAX_RUNS = 10_000
# What verify generates is held in memory for every run (a mismatch saves them all): at most
# this many values per input and run, and this many bytes over every input and run.
MAX_INPUT_VALUES = 1 << 24
MAX_INPUT_BYTES = 512 << 20
Feed = dict[str, object]


@dataclass
class FeedPlan:
    """How to build inputs: the seed, at least how many runs, and fixed shapes by input name."""

    seed: int = 0
    runs: int = DEFAULT_RUNS
    shapes: dict[str, list[int]] = field(default_factory=dict)
    value_ranges: dict[str, tuple[int, int]] = field(default_factory=dict)  # integers from LO to HI, by input
    # Float inputs a retyping rounds, by input: fed ordinary numbers the narrow type holds exactly.
    narrowed: dict[str, int] = field(default_factory=dict)


def graph_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """The inputs a caller must feed (an initializer with the same name is a default: skipped)."""
    initializers = {t.name for t in model.graph.initializer}
    return [info for info in model.graph.input if info.name not in initializers]


def _tensor_shape(info: onnx.ValueInfoProto, type_proto: onnx.TypeProto, plan: FeedPlan, bound: dict) -> list[int]:
    if info.name in plan.shapes:
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


def _innermost_tensor(type_proto: onnx.TypeProto) -> onnx.TypeProto | None:
    """The tensor type an input holds, through optionals and sequences; None for maps and the like."""
    while True:
        kind = type_proto.WhichOneof("value")
        if kind == "tensor_type":
            return type_proto
        if kind == "optional_type":
            type_proto = type_proto.optional_type.elem_type
        elif kind == "sequence_type":
            type_proto = type_proto.sequence_type.elem_type
        else:
            return None


def _declared(type_proto: onnx.TypeProto) -> str:
    """A type as the model declares it, with its shape: ``float[batch, 16]``, ``optional(float[N])``."""
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return f"optional({_declared(type_proto.optional_type.elem_type)})"
    if kind == "sequence_type":
        return f"seq({_declared(type_proto.sequence_type.elem_type)})"
    if kind != "tensor_type":
        return schemas.type_string(type_proto)
    name = schemas.type_name(type_proto.tensor_type.elem_type)
    if not type_proto.tensor_type.HasField("shape"):
        return f"{name} of any shape"
    dims = [
        str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in type_proto.tensor_type.shape.dim
    ]
    return f"{name}[{', '.join(dims)}]"


def _bind_given_shapes(inputs: list[onnx.ValueInfoProto], plan: FeedPlan) -> dict[str, int]:
    """Check each ``--shape`` against the input it names (rank, fixed dimensions) and bind the
    named dimensions it gives, so that every input sharing a dimension name follows."""
    by_name = {info.name: info for info in inputs}
    unknown = sorted(set(plan.shapes) - set(by_name))
    if unknown:
        names = ", ".join(by_name) or "none"
        raise LoweringError(f"--shape {', '.join(unknown)}: the model has no such input (its inputs: {names})")
    bound: dict[str, int] = {}
    given_by: dict[str, str] = {}
    for name, shape in plan.shapes.items():
        text = f"--shape {name}:{','.join(str(d) for d in shape)}"
        if any(not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 0 for d in shape):
            raise LoweringError(f"{text}: dimensions are whole numbers of 1 or more")
        if 0 in shape:
            raise LoweringError(
                f"{text}: a dimension of 0 leaves input '{name}' with no values, so nothing would be compared; "
                "give dimensions of 1 or more"
            )
        tensor = _innermost_tensor(by_name[name].type)
        if tensor is None:
            raise LoweringError(f"{text}: input '{name}' is {_declared(by_name[name].type)}, which has no shape")
        if not tensor.tensor_type.HasField("shape"):
            continue
        dims = tensor.tensor_type.shape.dim
        if len(dims) != len(shape):
            raise LoweringError(
                f"{text}: input '{name}' is {_declared(by_name[name].type)}, of rank {len(dims)}; "
                f"give {len(dims)} dimension{'s' if len(dims) != 1 else ''}"
                + (" (or none, for a scalar: --shape NAME:)" if not dims else "")
            )
        for axis, (dim, size) in enumerate(zip(dims, shape, strict=True)):
            if dim.HasField("dim_value") and dim.dim_value != size:
                raise LoweringError(
                    f"{text}: dimension {axis} of input '{name}' is fixed at {dim.dim_value} by the model "
                    f"({_declared(by_name[name].type)})"
                )
            if dim.dim_param:
                if bound.setdefault(dim.dim_param, size) != size:
                    raise LoweringError(
                        f"{text}: dimension '{dim.dim_param}' is {bound[dim.dim_param]} in --shape "
                        f"{given_by[dim.dim_param]}; inputs that share a dimension name share its size"
                    )
                given_by.setdefault(dim.dim_param, name)
    return bound


def _too_large(info: onnx.ValueInfoProto, shape: list[int], plan: FeedPlan) -> LoweringError:
    given = info.name in plan.shapes
    fixed = not given and all(d.HasField("dim_value") for d in _shape_dims(info))
    hint = (
        "the model fixes that shape, so verify cannot feed it"
        if fixed
        else f"give smaller dimensions with --shape {info.name}:D1,D2,..."
    )
    return LoweringError(
        f"input '{info.name}' would be {_declared(info.type)} of shape {shape}: {math.prod(shape):,} values per run, "
        f"over the limit of {MAX_INPUT_VALUES:,} values per input and run that verify generates; {hint}"
    )


def _itemsize(element_type: int) -> int:
    try:
        return floats.numpy_dtype(element_type).itemsize
    except (KeyError, TypeError, ValueError):
        return 8  # strings and the like: a pointer each, at least


def _largest_size(info: onnx.ValueInfoProto, type_proto: onnx.TypeProto, plan: FeedPlan, bound: dict) -> int:
    """The bytes of the largest value build_feeds makes for this input in one run (sequences
    hold up to 2 items); refused where one tensor would exceed MAX_INPUT_VALUES."""
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return _largest_size(info, type_proto.optional_type.elem_type, plan, bound)
    if kind == "sequence_type":
        return 2 * _largest_size(info, type_proto.sequence_type.elem_type, plan, bound)
    if kind != "tensor_type":
        return 0  # refused when it is made
    shape = _tensor_shape(info, type_proto, plan, bound)
    if math.prod(shape) > MAX_INPUT_VALUES:
        raise _too_large(info, shape, plan)
    return math.prod(shape) * _itemsize(type_proto.tensor_type.elem_type)


def _over_budget(runs: int, per_run: int) -> LoweringError:
    return LoweringError(
        f"{runs} runs of {per_run / (1 << 20):.1f} MiB of inputs each exceed {MAX_INPUT_BYTES >> 20} MiB, the limit "
        "of what verify generates over all runs: give smaller dimensions with --shape, or fewer --samples"
    )


def _shape_dims(info: onnx.ValueInfoProto):
    tensor = _innermost_tensor(info.type)
    if tensor is None or not tensor.tensor_type.HasField("shape"):
        return []
    return list(tensor.tensor_type.shape.dim)


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


def _ordinary(count: int, element_type: int, rng: np.random.Generator) -> np.ndarray:
    """Ordinary numbers (normal, scaled by 10^-3 to 10^3) of ``element_type``."""
    values = rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count)
    return values.astype(floats.numpy_dtype(element_type))


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


INTEGER_RANGE = (0, 3)


def _integers(element_type: int, shape: list[int], rng: np.random.Generator, bounds=INTEGER_RANGE) -> np.ndarray:
    """Small non-negative integers (valid as indices, counts and shapes in most models), or
    from ``bounds`` (both included)."""
    dtype = floats.numpy_dtype(element_type)
    low, high = bounds
    drawn = np.int64 if high < 2**63 else np.uint64
    return rng.integers(low, high, size=shape, endpoint=True, dtype=drawn).astype(dtype)


def _integer_info(dtype: np.dtype | None):
    """The integer limits of ``dtype`` (numpy's integers and ml_dtypes' int4, uint4, int2, uint2),
    or None for any other type."""
    if dtype is None:
        return None
    try:
        return ml_dtypes.iinfo(dtype)
    except ValueError:
        return None


def _check_value_ranges(inputs: list[onnx.ValueInfoProto], plan: FeedPlan) -> None:
    """Each ``--value-range NAME:LO,HI`` names an integer input and fits its type."""
    by_name = {info.name: info for info in inputs}
    for name, bounds in plan.value_ranges.items():
        shown = f"--value-range {name}:{','.join(map(str, bounds))}"
        if name not in by_name:
            raise LoweringError(f"{shown}: the model has no such input (its inputs: {', '.join(by_name) or 'none'})")
        tensor = _innermost_tensor(by_name[name].type)
        element_type = tensor.tensor_type.elem_type if tensor is not None else None
        try:
            dtype = np.dtype(floats.numpy_dtype(element_type)) if element_type is not None else None
        except (KeyError, TypeError, ValueError):
            dtype = None
        info = _integer_info(dtype)
        if info is None:
            raise LoweringError(
                f"{shown}: input '{name}' is {_declared(by_name[name].type)}; a range is for integer inputs (float "
                "inputs carry NaN, ±inf, ±0 and the other edge values on purpose)"
            )
        low, high = bounds
        if not (isinstance(low, numbers.Integral) and isinstance(high, numbers.Integral)) or low > high:
            raise LoweringError(f"{shown}: give whole numbers LO <= HI")
        if low < info.min or high > info.max:
            raise LoweringError(f"{shown}: input '{name}' is {dtype}, which holds {info.min} to {info.max}")


def build_feeds(model: onnx.ModelProto, plan: FeedPlan) -> list[Feed]:
    """Feeds for ``plan.runs`` runs at least, more until every float input has carried every edge value.

    Refused with a LoweringError: a seed below 0, runs outside 1 to MAX_RUNS, a ``--shape`` for
    no input or at odds with the input's declared rank or fixed dimensions, a dimension of 0
    given there, and inputs over MAX_INPUT_VALUES values (per input and run) or MAX_INPUT_BYTES
    (over every input and run).
    """
    if isinstance(plan.seed, bool) or not isinstance(plan.seed, numbers.Integral) or plan.seed < 0:
        raise LoweringError(f"seed {plan.seed!r}: give a whole number of 0 or more")
    if isinstance(plan.runs, bool) or not isinstance(plan.runs, numbers.Integral) or not 1 <= plan.runs <= MAX_RUNS:
        raise LoweringError(f"samples {plan.runs!r}: give a whole number from 1 to {MAX_RUNS:,}")
    rng = np.random.default_rng(plan.seed)
    inputs = graph_inputs(model)
    bound = _bind_given_shapes(inputs, plan)
    _check_value_ranges(inputs, plan)
    per_run = sum(_largest_size(info, info.type, plan, bound) for info in inputs)
    if per_run * plan.runs > MAX_INPUT_BYTES:
        raise _over_budget(plan.runs, per_run)
    streams: dict[tuple[str, int], _FloatStream] = {}
    generated = 0

    def element_value(info, type_proto, run: int, path: str):
        nonlocal generated
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
        if count > MAX_INPUT_VALUES:
            raise _too_large(info, shape, plan)
        generated += count * _itemsize(element_type)
        if generated > MAX_INPUT_BYTES:  # runs beyond plan.runs, to feed every edge value
            raise _over_budget(run + 1, per_run)
        if floats.is_float(element_type):
            if count == 0:  # no values to carry edge values: asks for no more runs
                return np.zeros(shape, floats.numpy_dtype(element_type))
            if info.name in plan.narrowed:
                return (
                    _ordinary(count, plan.narrowed[info.name], rng)
                    .astype(floats.numpy_dtype(element_type))
                    .reshape(shape)
                )
            stream = streams.setdefault((path, element_type), _FloatStream(element_type, rng))
            return stream.take(count).reshape(shape)
        if element_type == onnx.TensorProto.BOOL:
            if not shape:
                return np.array(run % 2 == 0)
            return rng.random(shape) < 0.5
        if element_type == onnx.TensorProto.STRING:
            return np.array([f"s{v}" for v in rng.integers(0, 100, count)], dtype=object).reshape(shape)
        try:
            return _integers(element_type, shape, rng, plan.value_ranges.get(info.name, INTEGER_RANGE))
        except (KeyError, TypeError, ValueError):
            raise LoweringError(
                f"input '{info.name}' has element type {schemas.type_name(element_type)}: no inputs can be made for it"
            ) from None

    feeds: list[Feed] = []
    run = 0
    while run < plan.runs or any(s.position < s.edges.size for s in streams.values()):
        feeds.append({info.name: element_value(info, info.type, run, info.name) for info in inputs})
        run += 1
        if not inputs or run >= MAX_RUNS:
            break
    return feeds


def check_feeds(model: onnx.ModelProto, feeds: list[Feed], source: str) -> None:
    """Refuse given inputs (a replay file, ``source``) that do not fit ``model``'s inputs:
    other names, element types, ranks or fixed dimensions, so that the blame falls on them and
    not on the model."""
    inputs = graph_inputs(model)
    expected = [info.name for info in inputs]
    if not feeds:
        raise LoweringError(f"{source}: holds no runs")
    for run, feed in enumerate(feeds):
        if sorted(feed) != sorted(expected):
            raise LoweringError(
                f"{source}: run {run} holds inputs {', '.join(sorted(feed)) or 'none'} but the model takes "
                f"{', '.join(expected) or 'none'} (saved for another model?)"
            )
        for info in inputs:
            problem = _misfit(feed[info.name], info.type)
            if problem:
                raise LoweringError(
                    f"{source}: run {run}, input '{info.name}': {problem}, but the model declares "
                    f"{_declared(info.type)} (saved for another model?)"
                )


def _misfit(value, type_proto: onnx.TypeProto) -> str | None:
    """Why ``value`` cannot be fed as ``type_proto``, or None."""
    kind = type_proto.WhichOneof("value")
    if kind == "optional_type":
        return None if value is None else _misfit(value, type_proto.optional_type.elem_type)
    if value is None:
        return "an empty optional"
    if kind == "sequence_type":
        if not isinstance(value, list):
            return f"a tensor {np.asarray(value).dtype}{list(np.shape(value))}"
        for item in value:
            problem = _misfit(item, type_proto.sequence_type.elem_type)
            if problem:
                return f"a sequence holding {problem}"
        return None
    if kind != "tensor_type":
        return None
    if isinstance(value, list):
        return f"a sequence of {len(value)}"
    array = np.asarray(value)
    element_type = type_proto.tensor_type.elem_type
    if element_type == onnx.TensorProto.STRING:
        if array.dtype.kind not in "OSU":
            return f"{array.dtype}{list(array.shape)}"
    else:
        try:
            dtype = floats.numpy_dtype(element_type)
        except (KeyError, TypeError, ValueError):
            dtype = None
        if dtype is not None and array.dtype != dtype:
            return f"{array.dtype}{list(array.shape)}"
    if type_proto.tensor_type.HasField("shape"):
        dims = type_proto.tensor_type.shape.dim
        if len(dims) != array.ndim or any(
            d.HasField("dim_value") and d.dim_value != size for d, size in zip(dims, array.shape, strict=True)
        ):
            return f"{array.dtype}{list(array.shape)}"
    return None
