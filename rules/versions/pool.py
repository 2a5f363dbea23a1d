"""MaxPool, AveragePool and LpPool across the steps that restate their windows, both ways.

MaxPool-12, AveragePool-19 and LpPool-18 restate the output shape under ``auto_pad`` and
``ceil_mode``; AveragePool-22 and MaxPool-22 ignore ceil-mode windows that start in the right
padding. Each version's formulas are those its schema states (``onnx.defs``): a node keeps its
meaning at the older version exactly where, on every spatial axis, both give the same number
of windows and the same padding before and after them (so every window lies in the same
place). That needs the input's spatial dimensions, known statically.
"""

from __future__ import annotations

import numpy as np
import onnx

from lowering import floats, schemas
from lowering.builder import Builder, Value
from lowering.conversion.adapters import (
    AdapterContext,
    adapter,
    attribute_of,
    auto_pad_or_ceil_mode,
    auto_pad_set,
    known_change,
    require_types_taken,
    text_attribute,
)
from lowering.errors import NotLowered

SHAPE_RESTATED = "version {} restates the output shape under auto_pad and ceil_mode"
RIGHT_PADDING_22 = "version 22 ignores windows that start in the right padding (ceil_mode)"
# The version of each op that restates its output shape, from the changelog: declared once here.
SHAPE_RESTATED_AT = {"MaxPool": 12, "LpPool": 18, "AveragePool": 19}
for _op_type, _version in SHAPE_RESTATED_AT.items():
    known_change((_op_type,), _version, SHAPE_RESTATED.format(_version), affects=auto_pad_or_ceil_mode)
known_change(("AveragePool", "MaxPool"), 22, RIGHT_PADDING_22, affects=auto_pad_or_ceil_mode)
# (onnxruntime's AveragePool kernel before this version sums ceil_mode 0's windows in another order
# and refuses a negative SAME padding)
AVERAGE_RESTATED = SHAPE_RESTATED_AT["AveragePool"]
LABEL = "windows proved the same"


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def valid_ceil_counted_apart(size: int, kernel: int, stride: int, dilation: int) -> bool:
    """Whether auto_pad VALID with ceil_mode=1 has its windows along an axis counted otherwise by
    the schema, ``ceil((size - extent + 1) / stride)`` whatever ceil_mode is, and by onnxruntime,
    ``ceil((size - extent) / stride) + 1`` (LpPool-18, kernel 2, stride 2 over 3: 1 against 2):
    where the stride does not divide ``size - extent``."""
    return (size - (kernel - 1) * dilation - 1) % stride != 0


def padding_before(total: int, auto_pad: str) -> int:
    """The part of a total padding (at least 0) that comes before: ``⌊t/2⌋`` for SAME_UPPER, the odd
    one after; ``t - ⌊t/2⌋`` otherwise (SAME_LOWER, and ConvTranspose's output_shape)."""
    return total // 2 if auto_pad == "SAME_UPPER" else total - total // 2


def pooled_windows(
    op_type: str, version: int, size: int, kernel: int, stride: int, dilation: int, pads: tuple[int, int],
    auto_pad: str, ceil_mode: bool,
) -> tuple[int, int, int]:  # fmt: skip
    """(number of windows, padding before, padding after) along one axis of ``size`` under the
    formulas of ``op_type``-``version``'s schema."""
    extent = (kernel - 1) * dilation + 1
    # MaxPool-11 and LpPool-11/18 state one formula for auto_pad whatever ceil_mode is; AveragePool-11
    # states floor(size / stride) and floor((size - extent + 1) / stride) without ceil_mode; the
    # versions that restate it floor((size - 1) / stride) + 1 and floor((size - extent) / stride) + 1,
    # the same counts as the ceil formulas (ceil(n / s) = floor((n - 1) / s) + 1 for every integer n),
    # so LpPool-18, which states only the ceil ones, counts alike either way.
    # (AveragePool-11's auto_pad description says ceil(size / stride) for SAME too: where its two
    # statements disagree, the floor one differs from the later versions' count, so going down to
    # it is refused or said by explicit pads; going up, a source AveragePool-11 is counted by the
    # ceil one, as onnxruntime counts it.)
    restated = version >= SHAPE_RESTATED_AT[op_type]
    floor_stated = op_type == "AveragePool" and version >= 11  # AveragePool-7/10 state the ceil ones
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if ceil_mode or not (restated or floor_stated):
            count = _ceil_div(size, stride)
        elif restated:
            count = (size - 1) // stride + 1
        else:
            count = size // stride
        total = (count - 1) * stride + extent - size
        before = padding_before(total, auto_pad)
        return count, before, total - before
    if auto_pad == "VALID":
        if ceil_mode or not (restated or floor_stated):
            count = _ceil_div(size - extent + 1, stride)
        elif restated:
            count = (size - extent) // stride + 1
        else:
            count = (size - extent + 1) // stride
        return count, 0, 0
    before, after = pads
    span = size + before + after - extent
    count = (_ceil_div(span, stride) if ceil_mode else span // stride) + 1
    if ceil_mode and version >= 22 and op_type in ("MaxPool", "AveragePool") and (count - 1) * stride >= size + before:
        count -= 1  # version 22: a window that would start in the right padding is ignored
    return count, before, after


# Cases: backend cases to 11 and the newest opset before the step (uint8 at 11 in float); dilations and a
# window more or less under the older version's rules refused; dilations as Gathers among them
@adapter(("MaxPool",), 12, "down", LABEL, versions=(11, 22), cases=6)
@adapter(("LpPool",), 18, "down", LABEL, versions=(11, 22), cases=6)
@adapter(("AveragePool",), 19, "down", LABEL, versions=(11, 22), cases=17)
@adapter(("AveragePool", "MaxPool"), 22, "down", LABEL, versions=(11, 22), cases={"AveragePool": 17, "MaxPool": 6})
def pool_windows_proved_same(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """Pool-new(x, attrs) = Pool-old(x, attrs it takes) where every window is the same; dilations as Gathers.

    The node is re-versioned as it is (``dilations`` of 1 and ``ceil_mode=0`` dropped where the
    older version lacks them) exactly where, on every spatial axis of ``x`` (known statically),
    the newer version's formulas and the older one's give the same number of windows and the
    same padding before and after: the windows then cover the same elements. An AveragePool or
    LpPool whose dilations the older version cannot state goes as a pool of its windows
    gathered side by side (:func:`dilated_windows_gathered`). Elsewhere (unknown dimensions, a
    window more, padding split otherwise, MaxPool's dilations or a ceil_mode the older
    version cannot state) refused. Where the newer version keeps fewer windows along an axis with
    the same padding (version 22 ignores a ceil_mode window starting in the right padding), the
    older pool goes with ceil_mode 0 where that counts the same windows with the same padding on
    every axis (a MaxPool, or an AveragePool of version 19 or later: onnxruntime's older
    AveragePool sums ceil_mode 0's windows in another order), else the older pool's extra windows,
    last along that axis, are cut by a Slice of every output (the windows kept are the same
    windows). Where the two versions count auto_pad SAME otherwise
    (AveragePool-11 states floor(size / stride) windows), the older pool is given the padding the
    newer version works out as explicit pads (where none is negative); an AveragePool whose SAME
    padding works out negative goes no lower than version 19 (onnxruntime's older kernels refuse
    it). A MaxPool on int8 or
    uint8, which MaxPool takes from version 12, goes below as ``Cast(MaxPool(Cast(x, float)),
    T)``: exact both ways, the same maximum and the same index (its second output) of the same
    values."""
    source = schemas.version_in_force(node.op_type, context.source_opset)
    target = schemas.version_in_force(node.op_type, context.target_opset)
    op = node.op_type
    cannot = f"{op}-{source} cannot go to opset {context.target_opset} ({op}-{target})"
    widened = _eight_bit_widened(node, context)
    if widened is None:
        require_types_taken(node, context)
    target_attributes = schemas.schema_in_force(node.op_type, context.target_opset).attributes
    kernel = list(attribute_of(node, "kernel_shape") or [])
    dilations = list(attribute_of(node, "dilations") or [1] * len(kernel))
    ceil_mode = bool(attribute_of(node, "ceil_mode"))
    dropped = []
    if ceil_mode and "ceil_mode" not in target_attributes:
        _refuse_valid_counted_by_ceil_mode(node, context, kernel, dilations, cannot)
    if "dilations" not in target_attributes and attribute_of(node, "dilations") is not None:
        if any(d != 1 for d in dilations):
            if node.op_type in ("AveragePool", "LpPool"):
                if ceil_mode:  # (the windows gathered are counted as the schema counts them)
                    _refuse_valid_counted_by_ceil_mode(node, context, kernel, dilations, cannot)
                return dilated_windows_gathered(node, context, source, cannot)
            raise NotLowered(f"{cannot}: its dilations {dilations} cannot be stated there")
        dropped.append("dilations")
    if "ceil_mode" not in target_attributes and attribute_of(node, "ceil_mode") is not None:
        dropped.append("ceil_mode")
    if not auto_pad_or_ceil_mode(node):
        # the same formulas in both versions: judged as any, unless an attribute must go or a type
        if widened is None and not dropped:
            return None
        b = context.builder(node)
        _in_float(b, node, widened, list(node.output), dropped=tuple(dropped))
        return b.nodes

    shape = context.shape_of(node.input[0])
    spatial = None if shape is None else shape[2:]
    if spatial is None or len(spatial) != len(kernel) or not all(isinstance(d, int) for d in spatial):
        raise NotLowered(
            f"{cannot}: the spatial dimensions of its input '{node.input[0]}' are not known statically, so its "
            f"windows under both versions' rules cannot be compared ({_reason(node, source, target)})"
        )
    strides = list(attribute_of(node, "strides") or [1] * len(kernel))
    pads = list(attribute_of(node, "pads") or [0] * (2 * len(kernel)))
    auto_pad = text_attribute(node, "auto_pad", context.source_opset)
    target_ceil = ceil_mode and "ceil_mode" in target_attributes

    def compared(auto_pad: str, pads: list[int]) -> tuple[dict[int, int], str | None]:
        """The axes whose extra last windows are cut (axis → windows kept), and why the
        windows differ otherwise (None where they are the same)."""
        kept: dict[int, int] = {}
        for axis, size in enumerate(spatial):
            arguments = (size, kernel[axis], strides[axis], dilations[axis], (pads[axis], pads[axis + len(kernel)]))
            at_source = source_windows[axis]
            at_target = pooled_windows(node.op_type, target, *arguments, auto_pad, target_ceil)
            if at_source[0] < at_target[0] and at_source[1:] == at_target[1:]:
                kept[axis] = at_source[0]  # the target version's extra windows, last along the axis, are cut
            elif at_source != at_target:
                return kept, (
                    f"{cannot}: along spatial axis {axis} (size {size}) its windows differ: {_described(at_source)} "
                    f"under {node.op_type}-{source}'s rules, {_described(at_target)} under {node.op_type}-{target}'s "
                    f"({_reason(node, source, target)})"
                )
        return kept, None

    # A source AveragePool-11 under auto_pad is counted by its auto_pad description's ceil formulas,
    # as onnxruntime, onnx.reference and onnx's shape inference count it (its output-shape formula's
    # floor gives fewer where the stride does not divide the span: 1 window of 2 by 2 over 4, VALID)
    counted_by_ceil = ceil_mode or (
        node.op_type == "AveragePool" and source < SHAPE_RESTATED_AT["AveragePool"] and auto_pad_set(node)
    )
    source_windows = [
        pooled_windows(node.op_type, source, size, kernel[a], strides[a], dilations[a],
                       (pads[a], pads[a + len(kernel)]), auto_pad, counted_by_ceil)
        for a, size in enumerate(spatial)
    ]  # fmt: skip
    kept, differ = compared(auto_pad, pads)
    explicit = {}
    same_pads = [w[1] for w in source_windows] + [w[2] for w in source_windows]
    if differ is not None and auto_pad in ("SAME_UPPER", "SAME_LOWER") and min(same_pads) >= 0:
        # The padding the source version's auto_pad works out, stated as pads (counted alike by
        # count_include_pad: onnxruntime pads SAME as it pads the pads given); a negative one
        # (a stride past the kernel) no pads attribute states
        kept, differ_stated = compared("NOTSET", same_pads)
        if differ_stated is None:
            differ, explicit = None, {"pads": same_pads}
            dropped.append("auto_pad")
    if differ is not None:
        raise NotLowered(differ)
    if (
        auto_pad in ("SAME_UPPER", "SAME_LOWER")
        and min(same_pads) < 0
        and op == "AveragePool"
        and target < AVERAGE_RESTATED
    ):
        raise NotLowered(
            f"{cannot}: its auto_pad {auto_pad} works out a negative padding (strides {strides} past the kernel "
            f"{kernel}), which onnxruntime's AveragePool below version {AVERAGE_RESTATED} refuses at run time"
        )
    b = context.builder(node)
    if not kept:
        _in_float(b, node, widened, list(node.output), dropped=tuple(dropped), **explicit)
        return b.nodes
    used_auto_pad, used_pads = ("NOTSET", explicit["pads"]) if explicit else (auto_pad, pads)
    # (onnxruntime's AveragePool below version 19 sums the windows of ceil_mode 0 in another order)
    averaged_otherwise = node.op_type == "AveragePool" and target < AVERAGE_RESTATED
    floored = None if averaged_otherwise else [
        pooled_windows(node.op_type, target, size, kernel[a], strides[a], dilations[a],
                       (used_pads[a], used_pads[a + len(kernel)]), used_auto_pad, False)
        for a, size in enumerate(spatial)
    ]  # fmt: skip
    if floored == source_windows:  # (ceil_mode 0 counts the windows kept: each wholly in the padded input)
        without_ceil_mode = tuple(dict.fromkeys([*dropped, "ceil_mode"]))
        _in_float(b, node, widened, list(node.output), dropped=without_ceil_mode, **explicit)
        return b.nodes
    # the older pool's windows, then a Slice of each output keeping the first kept[axis] along each axis
    axes = sorted(kept)
    first = b.ints([0] * len(axes), "first_window")
    windows_kept = b.ints([kept[a] for a in axes], "windows_kept")
    window_axes = b.ints([2 + a for a in axes], "window_axes")
    every_window = [b.fresh("all_windows") if name else "" for name in node.output]
    _in_float(b, node, widened, every_window, dropped=tuple(dropped), **explicit)
    for every, output in zip(every_window, node.output, strict=True):
        if output:
            b.Slice(every, first, windows_kept, window_axes, outputs=[output])
    return b.nodes


# Cases: the same cases taken down to 11 (or the newest opset before the step) and back up; a window the
# older version counts and 22 drops refused
@adapter(("MaxPool",), 12, "up", LABEL, versions=(11, 22), cases=5)
@adapter(("LpPool",), 18, "up", LABEL, versions=(11, 22), cases=4)
@adapter(("AveragePool",), 19, "up", LABEL, versions=(11, 22), cases=6)
@adapter(("AveragePool", "MaxPool"), 22, "up", LABEL, versions=(11, 22), cases={"AveragePool": 6, "MaxPool": 5})
def pool_windows_proved_same_going_up(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto]:
    """Pool-old(x, attrs) = Pool-new(x, attrs) where every window is the same; the newer pool's extra windows cut.

    The same proof as :func:`pool_windows_proved_same`, the older version's formulas now the
    source's: on every spatial axis of ``x`` (known statically) both versions give the same
    padding and the newer one as many windows, or more, last along the axis, which a Slice of
    every output cuts. A source AveragePool-11 under auto_pad is counted by the ceil of its
    auto_pad description, as onnxruntime counts it (its output-shape formula floors). SAME
    padding the versions count otherwise goes as the explicit pads the older one works out.
    Elsewhere refused: unknown dimensions, the older version counting a window the newer one
    leaves out (a ceil_mode window starting in the right padding, from 22), padding split
    otherwise."""
    return pool_windows_proved_same(node, context)


# What gathering a pool's windows writes, and the first opset where all of it exists.
GATHERED_WINDOWS_FIRST_OPSET = schemas.first_opset_writing(("Pad", "Gather"), int64_constants=True)


def dilated_windows_gathered(
    node: onnx.NodeProto, context: AdapterContext, source: int, cannot: str
) -> list[onnx.NodeProto]:
    """Pool-new(x, dilations=d) = Pool-old(Gather(Pad(x, 0), i), kernel=K, strides=K), i = o·s + k·d - b per axis.

    For AveragePool (19 on) and LpPool (18 on) going where dilations cannot be stated. Along each
    spatial axis (its size known statically) the windows are those of the source version's
    formulas (``auto_pad``, ``ceil_mode``, version 22's windows starting in the right padding
    left out): output ``o`` reads positions ``o·s + k·d - b`` for ``k < K``. Gather puts each
    window's elements side by side, in order, so a pool with kernel ``K``, stride ``K`` reads the
    same elements in the same order (row-major over the kernel, as the dilated one does);
    positions in the padding read zeros that ``Pad`` adds first. Gather and Pad only move values.
    LpPool: a zero adds nothing to the sum of ``|x|^p`` (a sum that starts at +0 is never -0, so
    ``s + 0 = s``). AveragePool counts, for each window, the positions inside the input
    (``count_include_pad=0``) or before the padded end (``=1``, past it under ``ceil_mode``); the
    positions it leaves out are a first window's leading ones and a last window's trailing ones,
    which the pool's own padding (``count_include_pad=0``) leaves out alike: those are not
    gathered. Refused: a window other than the first or last leaving positions out, a window
    counting none, ``auto_pad`` SAME_UPPER/SAME_LOWER (onnxruntime pads as if the kernel were not
    dilated, against the spec's output size), a ceil_mode window starting in the right padding
    that the source version's formula counts (AveragePool before 22, LpPool: onnxruntime and
    onnx.reference leave it out), and spatial sizes not known statically. (A pad not
    smaller than the kernel, which onnxruntime refuses to load, is gathered as zeros alike.)"""
    op = node.op_type
    if context.target_opset < GATHERED_WINDOWS_FIRST_OPSET:
        raise NotLowered(
            f"{cannot}: its dilations cannot be stated there, and gathering its windows needs Pad, Gather and "
            f"int64 constants, which opset {GATHERED_WINDOWS_FIRST_OPSET} first holds"
        )
    shape = context.shape_of(node.input[0])
    kernel = list(attribute_of(node, "kernel_shape") or [])
    spatial = None if shape is None else shape[2:]
    if spatial is None or len(spatial) != len(kernel) or not all(isinstance(d, int) for d in spatial):
        raise NotLowered(
            f"{cannot}: its dilations cannot be stated there, and the spatial dimensions of its input "
            f"'{node.input[0]}' are not known statically, so its dilated windows cannot be gathered"
        )
    rank = len(kernel)
    strides = list(attribute_of(node, "strides") or [1] * rank)
    dilations = list(attribute_of(node, "dilations") or [1] * rank)
    pads = list(attribute_of(node, "pads") or [0] * (2 * rank))
    if len(strides) != rank or len(dilations) != rank or len(pads) != 2 * rank or min(strides + dilations) < 1:
        raise NotLowered(f"{cannot}: its strides, dilations or pads do not state one positive step per axis")
    auto_pad = text_attribute(node, "auto_pad", context.source_opset)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        raise NotLowered(
            f"{cannot}: its dilations cannot be stated there, and under auto_pad {auto_pad} its windows are not "
            "agreed on (onnxruntime pads as if the kernel were not dilated, giving fewer windows than the spec's "
            "ceil(size / stride)), so no gathering of them is the original's"
        )
    ceil_mode = bool(attribute_of(node, "ceil_mode"))
    include_pad = bool(attribute_of(node, "count_include_pad"))
    zeros_before, zeros_after, gathered, left_out = [], [], [], ([0] * rank, [0] * rank)
    for axis, size in enumerate(spatial):
        count, before, after = pooled_windows(
            op, source, size, kernel[axis], strides[axis], dilations[axis], (pads[axis], pads[axis + rank]),
            auto_pad, ceil_mode,
        )  # fmt: skip
        step, reach = strides[axis], dilations[axis]
        if ceil_mode and (count - 1) * step >= size + before:
            raise NotLowered(
                f"{cannot}: its dilations cannot be stated there, and along spatial axis {axis} (size {size}) its "
                f"last ceil_mode window would start in the right padding, which {op}-{source}'s formula counts and "
                "onnxruntime and onnx.reference leave out (as version 22 says for AveragePool and MaxPool)"
            )
        windows = [[o * step + k * reach - before for k in range(kernel[axis])] for o in range(count)]
        kept = [_counted(op, window, size, after, include_pad) for window in windows]
        for o, (window, counted) in enumerate(zip(windows, kept, strict=True)):
            leading = window.index(counted[0]) if counted else len(window)
            trailing = len(window) - leading - len(counted)
            if not counted or (leading and o > 0) or (trailing and o < count - 1):
                raise NotLowered(
                    f"{cannot}: its dilations cannot be stated there, and along spatial axis {axis} (size {size}) "
                    f"window {o} of {count} counts {len(counted)} of its {len(window)} positions, which a pool of "
                    "the gathered elements cannot say (only a first window's leading positions and a last "
                    "window's trailing ones may be left out, as the pool's own padding is)"
                )
            if o == 0:
                left_out[0][axis] = leading
            if o == count - 1:
                left_out[1][axis] = trailing
        every = [q for counted in kept for q in counted]
        if not every:
            raise NotLowered(f"{cannot}: along spatial axis {axis} (size {size}) it has no window to gather")
        low = max(0, -min(every))
        zeros_before.append(low)
        zeros_after.append(max(0, max(every) - size + 1))
        gathered.append([q + low for q in every])
    require_types_taken(node, context)
    b = context.builder(node)
    current = Value(node.input[0], None)
    if any(zeros_before) or any(zeros_after):
        current = b.Pad(current, b.ints([0, 0, *zeros_before, 0, 0, *zeros_after], "pads"))  # constant 0: the defaults
    for axis, indices in enumerate(gathered):
        if indices != list(range(spatial[axis] + zeros_before[axis] + zeros_after[axis])):  # (the padded length)
            current = b.Gather(current, b.ints(indices, f"windows{axis}"), axis=axis + 2)
    attributes = {"kernel_shape": kernel, "strides": kernel}
    if any(left_out[0]) or any(left_out[1]):
        attributes["pads"] = left_out[0] + left_out[1]  # left out of each count: count_include_pad=0
    elif include_pad:
        attributes["count_include_pad"] = 1  # no padding: the same count either way, kept as the node says
    dropped = ("dilations", "pads", "auto_pad", "ceil_mode", "count_include_pad")
    b.moved(node, inputs=[current.name, *node.input[1:]], dropped=dropped, **attributes)
    return b.nodes


def _counted(op: str, window: list[int], size: int, after: int, include_pad: bool) -> list[int]:
    """The positions of a window its pool counts: LpPool every one (padding adds |0|^p = 0);
    AveragePool those inside the input, or with count_include_pad those before the padded end."""
    if op == "LpPool":
        return window
    end = size + after if include_pad else size
    return [q for q in window if (include_pad or q >= 0) and q < end]


def _refuse_valid_counted_by_ceil_mode(
    node: onnx.NodeProto, context: AdapterContext, kernel: list[int], dilations: list[int], cannot: str
) -> None:
    """Refuse auto_pad VALID with ceil_mode=1 going where ceil_mode cannot be stated, or where its
    windows are gathered, unless on no axis they are counted apart (:func:`valid_ceil_counted_apart`)."""
    if text_attribute(node, "auto_pad", context.source_opset) != "VALID":
        return
    strides = list(attribute_of(node, "strides") or [1] * len(kernel))
    if all(stride == 1 for stride in strides):
        return
    shape = context.shape_of(node.input[0])
    spatial = None if shape is None else shape[2:]
    if spatial is not None and len(spatial) == len(kernel) and all(isinstance(d, int) for d in spatial):
        if not any(map(valid_ceil_counted_apart, spatial, kernel, strides, dilations)):
            return
    raise NotLowered(
        f"{cannot}: it takes auto_pad VALID with ceil_mode=1 and strides {strides}, whose windows its schema and "
        "onnxruntime count otherwise (where the stride does not divide the span), and ceil_mode cannot go with "
        "them there"
    )


def _eight_bit_widened(node: onnx.NodeProto, context: AdapterContext) -> int | None:
    """The 8-bit integer type of a MaxPool's input that the target's MaxPool does not take (it
    then pools the values as float, which holds every 8-bit integer exactly), else None."""
    if node.op_type != "MaxPool":
        return None
    type_proto = context.judged_type_of(node.input[0])
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    element_type = type_proto.tensor_type.elem_type
    taken = schemas.input_element_types(node.op_type, context.target_opset, 0)
    if element_type in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8) and element_type not in taken:
        return element_type
    return None


def _in_float(
    b: Builder, node: onnx.NodeProto, widened: int | None, outputs: list[str], dropped: tuple[str, ...], **attributes
) -> None:
    """Emit ``node`` (moved: without ``dropped``, with ``attributes``) writing ``outputs``, or where
    its input is an 8-bit integer type the target's MaxPool lacks,
    ``Cast(Max(MaxPool(Cast(x, float)), lowest(T)), T)``: the cast is exact both ways, the maximum
    and its index (the second output, kept) are those of the same values in the same order, and
    a window reading padding alone, float's lowest there, gives T's lowest, as MaxPool on T does."""
    if widened is None:
        b.moved(node, outputs=outputs, dropped=dropped, **attributes)
        return
    as_float = b.Cast(node.input[0], to=onnx.TensorProto.FLOAT)
    pooled = b.moved(
        node,
        inputs=[as_float.name, *node.input[1:]],
        outputs=[b.fresh("pooled"), *outputs[1:]],
        dropped=dropped,
        **attributes,
    )
    lowest = b.tensor(np.array(np.iinfo(floats.numpy_dtype(widened)).min, np.float32), "lowest")
    b.Cast(b.Max(pooled.output[0], lowest), to=widened, outputs=[outputs[0]])


def _described(windows: tuple[int, int, int]) -> str:
    count, before, after = windows
    return f"{count} window{'' if count == 1 else 's'} with padding {before} before and {after} after"


def _reason(node: onnx.NodeProto, source: int, target: int) -> str:
    """The known changes between the two versions, as the changelog states them."""
    from lowering.conversion.adapters import KNOWN_CHANGES, steps_between

    steps = steps_between(node.op_type, source, target)
    reasons = [KNOWN_CHANGES[(node.op_type, s)].reason for s in steps if (node.op_type, s) in KNOWN_CHANGES]
    return "; ".join(reasons) or "the versions state the windows differently"
