"""What ``onnx.defs`` cannot say about an op's version steps, and the adapters that cross them.

A version step ``(op, version)`` is the change from the op's previous version to ``version``.
``onnx.defs`` gives each version's inputs, outputs, attributes with defaults and type lists;
:func:`lowering.versioning.meaning_change` compares those. What it cannot see (a new meaning
under the same signature, a new allowed attribute value, an old default behaviour that a new
attribute's default does not keep) is stated here, once per step, as a :class:`MeaningChange`,
from the ONNX changelog (``docs/Changelog.md``) and the schemas' own descriptions. A node such a
step affects is never re-versioned as it is: it goes through the adapter registered for that
step here, else through onnx's version converter, else it is refused.

An adapter is a function ``(node, context) -> nodes``, registered with :func:`adapter` for one
step and one direction; it returns nodes valid at ``context.target_opset`` that mean what
``node`` means at ``context.source_opset``, or raises LoweringError saying why it cannot.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import onnx
from onnx import helper

from . import schemas
from .errors import LoweringError
from .naming import NameAllocator

Predicate = Callable[[onnx.NodeProto], bool]


@dataclass(frozen=True)
class MeaningChange:
    """A version step whose meaning change ``onnx.defs`` cannot show.

    ``down_only``: only nodes going below ``version`` can change meaning (the step added
    something a node at the older version cannot use). ``affects``: the nodes it can change,
    where that can be told from the node alone; None for every node."""

    op_type: str
    version: int
    reason: str
    down_only: bool = False
    affects: Predicate | None = None

    def changes(self, node: onnx.NodeProto, going_down: bool) -> bool:
        if self.down_only and not going_down:
            return False
        return self.affects is None or self.affects(node)


KNOWN_CHANGES: dict[tuple[str, int], MeaningChange] = {}


def known_change(
    op_types: Iterable[str], version: int, reason: str, *, down_only: bool = False, affects: Predicate | None = None
) -> None:
    for op_type in op_types:
        key = (op_type, version)
        if key in KNOWN_CHANGES:
            raise ValueError(f"{op_type}-{version} has a known change already")
        KNOWN_CHANGES[key] = MeaningChange(op_type, version, reason, down_only, affects)


def steps_between(op_type: str, version_a: int, version_b: int) -> list[int]:
    """The since-versions of ``op_type`` crossed going from version ``a`` to version ``b``."""
    low, high = sorted((version_a, version_b))
    return [v for v in schemas.op_versions(op_type) if low < v <= high]


def change_for(node: onnx.NodeProto, source_version: int, target_version: int) -> MeaningChange | None:
    """The first known change between the two versions that can change ``node``'s meaning."""
    going_down = target_version < source_version
    for step in steps_between(node.op_type, source_version, target_version):
        change = KNOWN_CHANGES.get((node.op_type, step))
        if change is not None and change.changes(node, going_down):
            return change
    return None


# -- predicates on a node's attributes -----------------------------------------------------------


def _attribute(node: onnx.NodeProto, name: str):
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return None


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def negative_axis(node: onnx.NodeProto) -> bool:
    """An ``axis``/``axes``/``*_axes`` attribute holds a negative value."""
    for attribute in node.attribute:
        if attribute.name in ("axis", "axes") or attribute.name.endswith("_axes"):
            value = helper.get_attribute_value(attribute)
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, int) and v < 0 for v in values):
                return True
    return False


def auto_pad_set(node: onnx.NodeProto) -> bool:
    """``auto_pad`` is set to something but NOTSET."""
    return _text(_attribute(node, "auto_pad")) not in (None, "NOTSET")


def auto_pad_or_ceil_mode(node: onnx.NodeProto) -> bool:
    return auto_pad_set(node) or bool(_attribute(node, "ceil_mode"))


def attribute_in(name: str, values: frozenset[str]) -> Predicate:
    def uses(node: onnx.NodeProto) -> bool:
        return _text(_attribute(node, name)) in values

    uses.__doc__ = f"``{name}`` is one of {sorted(values)}"
    return uses


# -- the known changes, oldest first ---------------------------------------------------------------

BINARY_LIMITED_BROADCAST = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")
known_change(
    (*BINARY_LIMITED_BROADCAST, "Gemm"),
    7,
    "version 7 broadcasts numpy-style; earlier versions broadcast only with broadcast=1, from the right",
    down_only=True,
)
known_change(("BatchNormalization", "Dropout"), 7, "before version 7 the node runs in training mode unless is_test=1")
known_change(("LSTM", "GRU", "RNN"), 7, "version 7 restates the recurrence (R transposed)")
known_change(("Max", "Min", "Sum", "Mean"), 8, "version 8 broadcasts its inputs numpy-style", down_only=True)
known_change(
    ("Conv", "AveragePool", "MaxPool", "LpPool"),
    11,
    "version 11 restates the output shape under auto_pad",
    affects=auto_pad_set,
)
known_change(("ConvTranspose",), 11, "version 11 restates auto_pad's padding split and output_padding")
known_change(
    (
        "ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Hardmax", "LogSoftmax", "Softmax", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
        "ReduceSum", "ReduceSumSquare", "Split", "Squeeze", "Unsqueeze", "TopK", "Scan",
    ),
    11,
    "negative axes are accepted from version 11",
    down_only=True,
    affects=negative_axis,
)  # fmt: skip
known_change(("Gather", "OneHot"), 11, "negative indices are accepted from version 11", down_only=True)
known_change(
    ("MaxPool",), 12, "version 12 restates the output shape under auto_pad and ceil_mode", affects=auto_pad_or_ceil_mode
)
known_change(
    ("Resize",), 13, "version 13 drops the coordinate mode tf_half_pixel_for_nn and makes roi and scales optional"
)
known_change(
    ("RoiAlign",), 16, "version 16's default coordinate_transformation_mode (half_pixel) is not the old behaviour"
)
known_change(
    ("LpPool",), 18, "version 18 restates the output shape under auto_pad and ceil_mode", affects=auto_pad_or_ceil_mode
)
known_change(
    ("ScatterElements", "ScatterND"),
    18,
    "version 18 adds the reductions max and min",
    down_only=True,
    affects=attribute_in("reduction", frozenset({"max", "min"})),
)
known_change(
    ("AveragePool",),
    19,
    "version 19 restates the output shape under auto_pad and ceil_mode",
    affects=auto_pad_or_ceil_mode,
)
known_change(
    ("Pad",), 19, "version 19 adds the mode wrap", down_only=True, affects=attribute_in("mode", frozenset({"wrap"}))
)
known_change(
    ("Resize",),
    19,
    "version 19 adds the coordinate mode half_pixel_symmetric",
    down_only=True,
    affects=attribute_in("coordinate_transformation_mode", frozenset({"half_pixel_symmetric"})),
)
known_change(("GridSample",), 20, "version 20 renames the modes (bilinear → linear, bicubic → cubic) and goes N-D")
known_change(("GroupNormalization",), 21, "version 21 takes scale and bias per channel, not per group")
known_change(
    ("AveragePool", "MaxPool"),
    22,
    "version 22 ignores windows that start in the right padding (ceil_mode)",
    affects=auto_pad_or_ceil_mode,
)
known_change(("Attention",), 24, "version 24 changes causal alignment and adds nonpad_kv_seqlen")
known_change(("Attention",), 25, "version 25 adds sliding windows and restates masking")
known_change(("Range",), 27, "version 27 accumulates float16 and bfloat16 in float by default (stash_type)")
known_change(("Mod",), 28, "version 28 defines fmod=0 on floats", down_only=True)
known_change(("BitShift",), 28, "version 28 defines shifts by negative or too large amounts", down_only=True)
# Softmax, LogSoftmax and Hardmax at 13 are declared with their adapters below.


# -- adapters --------------------------------------------------------------------------------------


@dataclass
class AdapterContext:
    """What an adapter may use: the opsets, fresh names, where the node is (for messages), and
    the type of a value with as much shape as is known (None when unknown)."""

    source_opset: int
    target_opset: int
    names: NameAllocator
    location: str
    type_of: Callable[[str], onnx.TypeProto | None]
    constant_of: Callable[[str], onnx.TensorProto | None] = lambda name: None

    def shape_of(self, name: str) -> list[int | str | None] | None:
        """The dimensions of a tensor (an int, a symbol or None each), None where the rank is unknown."""
        constant = self.constant_of(name)
        if constant is not None:
            return list(constant.dims)
        type_proto = self.type_of(name)
        if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
            return None
        tensor = type_proto.tensor_type
        if not tensor.HasField("shape"):
            return None
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]

    def rank_of(self, name: str) -> int | None:
        shape = self.shape_of(name)
        return None if shape is None else len(shape)

    def fresh(self, hint: str) -> str:
        return self.names.fresh(hint)


Adapter = Callable[[onnx.NodeProto, AdapterContext], "list[onnx.NodeProto] | None"]


@dataclass(frozen=True)
class RegisteredAdapter:
    function: Adapter
    label: str  # how the report names it: "Softmax-13→11 via <label>"
    versions: tuple[int, int]  # the op versions it moves nodes between, both ways across its step


ADAPTERS: dict[tuple[str, int, str], RegisteredAdapter] = {}


def adapter(
    op_types: Iterable[str],
    version: int,
    direction: str,
    label: str,
    *,
    versions: tuple[int, int],
    reason: str | None = None,
):
    """Register the decorated function as the adapter across step ``version`` of ``op_types``
    going ``direction`` ("down" or "up"), for nodes moving between op versions in ``versions``
    (inclusive): it handles every other step in that range too. ``reason`` declares the step's
    known change. The function returns None for a node it leaves to onnx's converter."""
    if direction not in ("down", "up"):
        raise ValueError(direction)
    op_types = tuple(op_types)

    def register(function: Adapter) -> Adapter:
        if reason is not None:
            known_change(op_types, version, reason)
        for op_type in op_types:
            if (op_type, version) not in KNOWN_CHANGES:
                raise ValueError(f"an adapter for {op_type}-{version} needs that step's known change")
            ADAPTERS[(op_type, version, direction)] = RegisteredAdapter(function, label, versions)
        return function

    return register


def adapter_for(op_type: str, source_version: int, target_version: int) -> RegisteredAdapter | None:
    """The adapter for a step crossed in this direction whose range holds both versions: it
    moves the node all the way to the target opset."""
    direction = "down" if target_version < source_version else "up"
    for step in steps_between(op_type, source_version, target_version):
        found = ADAPTERS.get((op_type, step, direction))
        if found is not None and all(
            found.versions[0] <= v <= found.versions[1] for v in (source_version, target_version)
        ):
            return found
    return None


def _moved(node: onnx.NodeProto, *, dropped: tuple[str, ...] = (), **attributes) -> onnx.NodeProto:
    """A copy of ``node`` without the attributes named in ``dropped``, with ``attributes`` set
    (replacing any of the same name)."""
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    kept = [a for a in moved.attribute if a.name not in attributes and a.name not in dropped]
    del moved.attribute[:]
    moved.attribute.extend(kept)
    moved.attribute.extend(helper.make_attribute(name, value) for name, value in attributes.items())
    return moved


def _axis(node: onnx.NodeProto, default: int) -> int:
    value = _attribute(node, "axis")
    return default if value is None else value


SOFTMAX_FAMILY = ("Softmax", "LogSoftmax", "Hardmax")
SOFTMAX_13 = (
    "version 13 normalizes along `axis` alone; versions 1-12 coerce the input to 2-D at `axis` and normalize each row"
)


@adapter(SOFTMAX_FAMILY, 13, "down", "Transpose", versions=(1, 13), reason=SOFTMAX_13)
def one_axis_to_coerced_2d(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``op-13(x, axis=a)`` = ``op-1..12(x, axis=r-1)`` where ``a`` is the last axis (``r = rank(x)``),
    else ``Transpose(op-1..12(Transpose(x, perm), axis=r-1), perm)`` with ``perm`` swapping ``a``
    and ``r-1`` (its own inverse): coerced to 2-D at the last axis, each row is one line along
    ``a``. Needs the rank of ``x``, except for ``axis=-1`` at a target of 11 or 12."""
    axis = _axis(node, -1)
    rank = context.rank_of(node.input[0])
    if rank is None:
        if axis == -1 and context.target_opset >= 11:
            return [_moved(node, axis=-1)]
        raise LoweringError(
            f"{context.location}: {node.op_type}-13 with axis={axis} cannot go to opset {context.target_opset} "
            f"without the rank of its input '{node.input[0]}', which is unknown ({SOFTMAX_13})"
        )
    last = rank - 1
    axis = axis + rank if axis < 0 else axis
    if axis == last:
        return [_moved(node, axis=last)]
    perm = list(range(rank))
    perm[axis], perm[last] = last, axis
    hint = node.name or node.output[0]
    moved_in, moved_out = context.fresh(f"{hint}_axis_last"), context.fresh(f"{hint}_axis_last_{node.op_type}")
    before = helper.make_node(
        "Transpose", [node.input[0]], [moved_in], name=context.fresh(f"{hint}_Transpose"), perm=perm
    )
    op = _moved(node, axis=last)
    op.input[0] = moved_in
    op.output[0] = moved_out
    after = helper.make_node(
        "Transpose", [moved_out], [node.output[0]], name=context.fresh(f"{hint}_Transpose_back"), perm=perm
    )
    return [before, op, after]


@adapter(SOFTMAX_FAMILY, 13, "up", "Flatten and Reshape", versions=(1, 13))
def coerced_2d_to_one_axis(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """``op-1..12(x, axis=a)`` = ``Reshape(op-13(Flatten(x, axis=a), axis=1), Shape(x))``: the 2-D
    coercion made explicit, each row normalized along axis 1 (the last of 2); where ``a`` is the
    last axis of ``x`` (``-1``, or ``r-1`` with ``r = rank(x)`` known), ``op-13(x, axis=a)`` alone."""
    axis = _axis(node, 1)
    rank = context.rank_of(node.input[0])
    if axis == -1 or (rank is not None and axis == rank - 1):
        return [_moved(node, axis=axis)]
    hint = node.name or node.output[0]
    flat, flat_out, shape = (context.fresh(f"{hint}_{part}") for part in ("2d", f"2d_{node.op_type}", "shape"))
    flatten = helper.make_node("Flatten", [node.input[0]], [flat], name=context.fresh(f"{hint}_Flatten"), axis=axis)
    op = _moved(node, axis=1)
    op.input[0] = flat
    op.output[0] = flat_out
    shape_of = helper.make_node("Shape", [node.input[0]], [shape], name=context.fresh(f"{hint}_Shape"))
    reshape = helper.make_node("Reshape", [flat_out, shape], [node.output[0]], name=context.fresh(f"{hint}_Reshape"))
    return [flatten, op, shape_of, reshape]


BATCH_NORMALIZATION_14 = (
    "version 14 adds training_mode and outputs running statistics; versions 9-13 train when asked for "
    "more than one output"
)


def _inference_only(node: onnx.NodeProto) -> bool:
    return not _attribute(node, "training_mode") and not any(node.output[1:])


@adapter(("BatchNormalization",), 14, "down", "inference form", versions=(9, 15), reason=BATCH_NORMALIZATION_14)
def batch_normalization_without_training_mode(node: onnx.NodeProto, context: AdapterContext):
    """``BatchNormalization-14/15(X, scale, B, mean, var)`` with ``training_mode=0`` and one
    output = ``BatchNormalization-9(X, scale, B, mean, var)``: ``(X - mean) / sqrt(var + epsilon)
    * scale + B`` in both (inputs 3 and 4 were renamed mean → input_mean, var → input_var).
    Training mode is left to onnx's converter."""
    if not _inference_only(node):
        return None
    moved = _moved(node, dropped=("training_mode",))
    del moved.output[1:]
    return [moved]


@adapter(("BatchNormalization",), 14, "up", "inference form", versions=(9, 15))
def batch_normalization_in_inference(node: onnx.NodeProto, context: AdapterContext):
    """``BatchNormalization-9(X, scale, B, mean, var)`` with one output =
    ``BatchNormalization-14/15`` of the same inputs (``training_mode`` defaults to 0). Training
    (five outputs) is left to onnx's converter."""
    if not _inference_only(node):
        return None
    moved = onnx.NodeProto()
    moved.CopyFrom(node)
    del moved.output[1:]
    return [moved]


PRELU_7 = (
    "version 7 broadcasts slope unidirectionally (from the last axis); before, a slope of C values applied per channel"
)


@adapter(("PRelu",), 7, "up", "per-channel slope", versions=(1, 16), reason=PRELU_7)
def per_channel_slope(node: onnx.NodeProto, context: AdapterContext):
    """``PRelu-1/6(X, slope)`` with ``X`` of rank ``r >= 2`` and ``slope`` of ``C`` values (one per
    channel, axis 1) = ``PRelu-7+(X, Unsqueeze(slope, axes=[1, ..., r-2]))``: shape ``[C, 1, ..., 1]``,
    the channel axis lined up for unidirectional broadcasting. A slope of one value is kept as it is."""
    slope = context.shape_of(node.input[1])
    rank = context.rank_of(node.input[0])
    if slope is not None and all(isinstance(d, int) for d in slope) and math.prod(slope) == 1:
        return [_moved(node)]
    if slope is None or rank is None or len(slope) != 1 or rank < 2:
        raise LoweringError(
            f"{context.location}: PRelu below version 7 with a slope of shape {slope} on an input of rank {rank} "
            f"cannot go to opset {context.target_opset} ({PRELU_7})"
        )
    moved = _moved(node)
    if rank == 2:  # [C] lines up with [N, C] already
        return [moved]
    hint = node.name or node.output[0]
    lined_up = context.fresh(f"{hint}_slope_per_channel")
    axes = list(range(1, rank - 1))
    if context.target_opset < 13:
        nodes = [
            helper.make_node(
                "Unsqueeze", [node.input[1]], [lined_up], name=context.fresh(f"{hint}_Unsqueeze"), axes=axes
            )
        ]
    else:
        axes_name = context.fresh(f"{hint}_slope_axes")
        value = helper.make_tensor(axes_name, onnx.TensorProto.INT64, [len(axes)], axes)
        nodes = [
            helper.make_node("Constant", [], [axes_name], name=context.fresh(f"{axes_name}_constant"), value=value),
            helper.make_node(
                "Unsqueeze", [node.input[1], axes_name], [lined_up], name=context.fresh(f"{hint}_Unsqueeze")
            ),
        ]
    moved.input[1] = lined_up
    return [*nodes, moved]


def _no_split_input(node: onnx.NodeProto) -> bool:
    """A Split given no ``split`` input: it cuts into as many equal parts as it has outputs."""
    return len(node.input) < 2 or not node.input[1]


known_change(
    ("Split",),
    18,
    "from version 18 a Split with no split input must give num_outputs (and may then cut unevenly)",
    affects=_no_split_input,
)


@adapter(("Split",), 18, "up", "num_outputs", versions=(13, 18))
def equal_parts_counted(node: onnx.NodeProto, context: AdapterContext):
    """``Split-13(x)`` with ``n`` outputs and no ``split`` input = ``Split-18(x, num_outputs=n)``:
    both cut ``x`` into ``n`` equal parts along ``axis`` (a length ``n`` does not divide is an error
    at 13, so the uneven cut 18 allows is never reached)."""
    return [_moved(node, num_outputs=len(node.output))]


QUANTIZE_13 = "version 13 takes a scale and zero point per slice along axis; version 10 only scalars"


@adapter(("QuantizeLinear", "DequantizeLinear"), 13, "down", "per-tensor scale", versions=(10, 13), reason=QUANTIZE_13)
def per_tensor_scale_kept(node: onnx.NodeProto, context: AdapterContext):
    """``QuantizeLinear-13(x, s, z)`` with a scalar scale = ``QuantizeLinear-10(x, s, z)`` (``axis``,
    which a scalar scale leaves unused, dropped); likewise DequantizeLinear. A scale of any other
    shape quantizes per slice, which version 10 cannot say: refused."""
    scale = context.shape_of(node.input[1]) if len(node.input) > 1 else None
    if scale != []:
        raise LoweringError(
            f"{context.location}: {node.op_type} with a scale of shape {scale} cannot go to opset "
            f"{context.target_opset} ({QUANTIZE_13}); only a scalar scale can"
        )
    moved = _moved(node, dropped=("axis",))
    return [moved]


# -- the Reduce family at 18: axes from an attribute to an input ----------------------------------

REDUCE_18 = "version 18 takes axes as an input, and noop_with_empty_axes says what no axes mean"
# Those whose version 18 takes an axes input, from onnx.defs (ReduceSum moved at 13).
REDUCE_AXES_AT_18 = tuple(
    sorted(
        {
            s.name
            for s in onnx.defs.get_all_schemas_with_history()
            if s.name.startswith("Reduce") and s.domain == "" and s.since_version == 18
            and any(formal.name == "axes" for formal in s.inputs)
        }
    )
)  # fmt: skip
# Reductions whose no-op (empty axes, noop_with_empty_axes=1) is the input itself beyond doubt.
# For the others (L1, L2, LogSum, LogSumExp, SumSquare) the spec says the output is the input,
# while onnx.reference and onnxruntime apply the element-wise step (SumSquare squares, LogSum
# takes the log): such a node is refused rather than given one of the two meanings.
NOOP_IS_IDENTITY = frozenset({"ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd"})


def _constant_ints(node: onnx.NodeProto, context: AdapterContext) -> list[int] | None:
    """The node's second input (Reduce axes, a Reshape shape) as integers, [] when absent or
    empty; None when it is not a constant."""
    if len(node.input) < 2 or not node.input[1]:
        return []
    tensor = context.constant_of(node.input[1])
    if tensor is None:
        return None
    try:
        return [int(v) for v in onnx.numpy_helper.to_array(tensor).reshape(-1)]
    except Exception:  # external data, a wrong type: not a constant this adapter can read
        return None


# From 11 to 13 only the type lists changed (the full check at the target refuses a type it lacks).
@adapter(REDUCE_AXES_AT_18, 18, "down", "axes attribute", versions=(11, 18), reason=REDUCE_18)
def axes_input_to_attribute(node: onnx.NodeProto, context: AdapterContext):
    """``ReduceX-18(x, axes=a, keepdims=k)`` with ``a`` constant = ``ReduceX-11/13(x, keepdims=k, axes=a)``;
    no or empty axes with ``noop_with_empty_axes=0`` = ``ReduceX-13(x, keepdims=k)`` (every axis);
    with ``noop_with_empty_axes=1`` = ``Identity(x)`` (Max, Min, Mean, Prod). Axes computed at run
    time cannot become an attribute: refused."""
    axes = _constant_ints(node, context)
    if axes is None:
        raise LoweringError(
            f"{context.location}: {node.op_type}-18 takes its axes from '{node.input[1]}', which is computed at "
            f"run time, so it cannot go to opset {context.target_opset} where axes is an attribute"
        )
    noop = bool(_attribute(node, "noop_with_empty_axes"))
    if not axes and noop:
        if node.op_type not in NOOP_IS_IDENTITY:
            raise LoweringError(
                f"{context.location}: {node.op_type}-18 with no axes and noop_with_empty_axes=1 has no agreed "
                f"meaning to carry to opset {context.target_opset} (the spec says the input itself; onnx.reference "
                "and onnxruntime apply the element-wise step)"
            )
        return [helper.make_node("Identity", [node.input[0]], list(node.output), name=node.name)]
    moved = _moved(node, dropped=("noop_with_empty_axes",))
    del moved.input[1:]
    if axes:
        moved.attribute.append(helper.make_attribute("axes", axes))
    return [moved]


@adapter(REDUCE_AXES_AT_18, 18, "up", "axes input", versions=(11, 18))
def axes_attribute_to_input(node: onnx.NodeProto, context: AdapterContext):
    """``ReduceX-13(x, axes=a, keepdims=k)`` = ``ReduceX-18(x, Constant(a), keepdims=k)``; without
    ``axes`` = ``ReduceX-18(x, keepdims=k)`` (``noop_with_empty_axes=0``: every axis)."""
    axes = _attribute(node, "axes")
    moved = _moved(node, dropped=("axes",))
    if axes is None:
        return [moved]
    hint = node.name or node.output[0]
    name = context.fresh(f"{hint}_axes")
    value = helper.make_tensor(name, onnx.TensorProto.INT64, [len(axes)], list(axes))
    constant = helper.make_node("Constant", [], [name], name=context.fresh(f"{name}_constant"), value=value)
    del moved.input[1:]
    moved.input.append(name)
    return [constant, moved]


# -- Reshape at 14: allowzero ------------------------------------------------------------------------

RESHAPE_14 = "version 14 adds allowzero: with allowzero=1 a 0 in the shape means size 0, not 'copy this dimension'"
known_change(
    ("Reshape",), 14, RESHAPE_14, down_only=True, affects=lambda node: _attribute(node, "allowzero") is not None
)


@adapter(("Reshape",), 14, "down", "allowzero dropped", versions=(5, 14))
def allowzero_dropped(node: onnx.NodeProto, context: AdapterContext):
    """``Reshape-14(x, s, allowzero=0)`` = ``Reshape-5/13(x, s)``: a 0 in ``s`` copies that dimension
    in both. ``allowzero=1`` means the same where ``s`` is a constant holding no 0; otherwise the
    older versions cannot say it: refused."""
    if _attribute(node, "allowzero"):
        shape = _constant_ints(node, context)
        if shape is None or 0 in shape:
            raise LoweringError(
                f"{context.location}: Reshape-14 with allowzero=1 and a shape that is computed at run time or "
                f"holds a 0 cannot go to opset {context.target_opset} ({RESHAPE_14})"
            )
    moved = _moved(node, dropped=("allowzero",))
    return [moved]
