"""The range of values an integer tensor may hold, from its producer's op and its inputs'
ranges: what retyping int64 to int32 asks to know a value fits (:mod:`lowering.retyping`).

A range is a closed interval ``(low, high)`` of Python integers, or None where nothing bounds
it. Sizes are taken to fit the narrow type: every dimension and every tensor's element count is
below ``size_limit`` (a runtime without int64 indexes with int32), so Shape, Size and the index
outputs (ArgMax, NonZero, TopK's indices...) lie in ``[0, size_limit)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from . import floats
from .graphs import constant_tensor

Range = tuple[int, int] | None

# Ops whose output holds some of their inputs' values and nothing else (``positions``: the
# inputs whose values may appear; None: every input).
_VALUES_OF_INPUTS: dict[str, tuple[int, ...] | None] = {
    "Identity": (0,), "Reshape": (0,), "Squeeze": (0,), "Unsqueeze": (0,), "Flatten": (0,),
    "Transpose": (0,), "Expand": (0,), "Tile": (0,), "Slice": (0,), "Gather": (0,),
    "GatherElements": (0,), "GatherND": (0,), "Concat": None, "Split": (0,), "Where": (1, 2),
    "Compress": (0,), "DepthToSpace": (0,), "SpaceToDepth": (0,), "ReverseSequence": (0,),
    "ScatterElements": (0, 2), "ScatterND": (0, 2), "Max": None, "Min": None, "TopK": (0,),
    "Unique": (0,), "Pad": (0, 2), "OneHot": (2,), "Dropout": (0,), "MaxPool": (0,), "Clip": (0,),
}  # fmt: skip
# (Not ReduceMax and ReduceMin: over an empty axis they give the type's extreme values, which
# differ between the wide type and the narrow one.)
# Ops above whose every output holds their inputs' values (of the others, only the first does).
_EVERY_OUTPUT = frozenset({"Split"})
# Index and size outputs: (op, output position) whose values are counts or positions.
_SIZE_VALUED = {
    ("Shape", 0), ("Size", 0), ("ArgMax", 0), ("ArgMin", 0), ("NonZero", 0), ("TopK", 1),
    ("Unique", 1), ("Unique", 2), ("Unique", 3), ("NonMaxSuppression", 0), ("Multinomial", 0),
    ("MaxPool", 1),
}  # fmt: skip


def hull(ranges: Sequence[Range]) -> Range:
    """The smallest range holding every one of ``ranges`` (None where one is unbounded)."""
    if not ranges or any(r is None for r in ranges):
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def type_range(element_type: int) -> tuple[int, int]:
    """The values an integer element type holds (bool: 0 and 1)."""
    if element_type == onnx.TensorProto.BOOL:
        return 0, 1
    info = np.iinfo(floats.numpy_dtype(element_type))
    return int(info.min), int(info.max)


def fits(found: Range, element_type: int) -> bool:
    """Whether every value of ``found`` is one ``element_type`` holds."""
    if found is None:
        return False
    low, high = type_range(element_type)
    return low <= found[0] and found[1] <= high


def tensor_range(tensor: onnx.TensorProto) -> Range:
    """The smallest and largest value a constant integer tensor holds (an empty one: (0, 0))."""
    values = floats.array_of(tensor)
    if values.size == 0:
        return 0, 0
    return int(values.min()), int(values.max())


def _products(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def _arithmetic(node: onnx.NodeProto, inputs: Sequence[Range]) -> Range:
    """Add: [a+c, b+d]; Sub: [a-d, b-c]; Mul: the corners' products; Neg: [-b, -a]; Abs;
    Div of integers: |x / y| <= |x| where y != 0; Mod: |x mod y| < |y| (and <= |x| with
    ``fmod``, the dividend's sign); Sign."""
    op_type = node.op_type
    if any(r is None for r in inputs):
        return None
    if op_type == "Add":
        (a, b), (c, d) = inputs
        return a + c, b + d
    if op_type == "Sub":
        (a, b), (c, d) = inputs
        return a - d, b - c
    if op_type == "Mul":
        return _products(inputs[0], inputs[1])
    if op_type == "Neg":
        a, b = inputs[0]
        return -b, -a
    if op_type == "Abs":
        a, b = inputs[0]
        return (0 if a <= 0 <= b else min(abs(a), abs(b))), max(abs(a), abs(b))
    if op_type == "Sign":
        return -1, 1
    (a, b), (c, d) = inputs[0], inputs[1] if len(inputs) > 1 else (0, 0)
    largest = max(abs(a), abs(b))
    if op_type == "Div":  # the quotient's sign is the operands' signs' product
        signs = {(x > 0) - (x < 0) for x in (a, b)}, {(y > 0) - (y < 0) for y in (c, d)}
        products = {p * q for p in signs[0] for q in signs[1]}
        return (-largest if min(products) < 0 else 0), (largest if max(products) > 0 else 0)
    if op_type == "Mod":
        divisor = max(abs(c), abs(d))
        if _attribute(node, "fmod", 0):  # the dividend's sign, at most |x|
            bound = min(largest, max(divisor - 1, 0))
            return (-bound if a < 0 else 0), (bound if b > 0 else 0)
        bound = max(divisor - 1, 0)  # the divisor's sign
        return (-bound if c < 0 else 0), (bound if d > 0 else 0)
    return None


_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Neg", "Abs", "Sign", "Div", "Mod"})


def output_range(node: onnx.NodeProto, position: int, input_ranges: Sequence[Range], size_limit: int) -> Range:
    """The range of output ``position`` of ``node`` from its inputs' ranges (None for an input
    not of an integer type)."""
    op_type = node.op_type
    if (op_type, position) in _SIZE_VALUED:
        return 0, size_limit - 1
    if op_type in ("Constant", "ConstantOfShape"):
        tensor = written_tensor(node)
        return None if tensor is None else tensor_range(tensor)
    if op_type in _ARITHMETIC:
        return _arithmetic(node, input_ranges)
    if op_type in ("ScatterElements", "ScatterND") and _attribute(node, "reduction", b"none") in (b"add", b"mul"):
        return None  # (the updates are summed or multiplied into the data)
    if op_type in _VALUES_OF_INPUTS and (position == 0 or op_type in _EVERY_OUTPUT):
        positions = _VALUES_OF_INPUTS[op_type]
        chosen = [r for k, r in enumerate(input_ranges) if positions is None or k in positions]
        if op_type == "Pad" and not (len(node.input) > 2 and node.input[2]):
            fill = next((int(a.f) for a in node.attribute if a.name == "value"), 0)  # (Pad-2's attribute)
            chosen.append((fill, fill))
        if op_type == "Clip":
            return _clipped(node, input_ranges)
        return hull(chosen)
    if op_type == "Range":
        return _range_op(input_ranges)
    if op_type == "EyeLike":
        return 0, 1
    if op_type == "Cast":  # (a value out of the target type's range wraps: any of the type's then)
        found = input_ranges[0] if input_ranges else None
        to = _attribute(node, "to", onnx.TensorProto.UNDEFINED)
        if found is None or not (floats.is_integer(to) or to == onnx.TensorProto.BOOL) or fits(found, to):
            return found
        return type_range(to)
    return None


def written_tensor(node: onnx.NodeProto) -> onnx.TensorProto | None:
    """The tensor a Constant holds, or ConstantOfShape fills with (its default: float 0)."""
    if node.op_type == "Constant":
        return constant_tensor(node)
    for attribute in node.attribute:
        if attribute.name == "value" and attribute.type == onnx.AttributeProto.TENSOR:
            return attribute.t
    return numpy_helper.from_array(np.zeros(1, np.float32))


def _attribute(node: onnx.NodeProto, name: str, default):
    """An int or string attribute's value (strings as bytes), or ``default``."""
    for attribute in node.attribute:
        if attribute.name == name:
            return attribute.s if attribute.type == onnx.AttributeProto.STRING else attribute.i
    return default


def _range_op(input_ranges: Sequence[Range]) -> Range:
    """Range(start, limit, delta) holds start + k * delta, between start and limit; its count,
    ceil((limit - start) / delta), is computed in the type too, so the range returned also
    holds limit - start and start - limit (where those do not fit, neither does the op)."""
    if len(input_ranges) < 2 or input_ranges[0] is None or input_ranges[1] is None:
        return None
    (a, b), (c, d) = input_ranges[0], input_ranges[1]
    return min(a, c, c - b, a - d), max(b, d, d - a, b - c)


def _clipped(node: onnx.NodeProto, input_ranges: Sequence[Range]) -> Range:
    """Clip(x, lo, hi) = min(max(x, lo), hi): [min(max(a, l1), h1), min(max(b, l2), h2)] for x
    in [a, b], lo in [l1, l2], hi in [h1, h2], a bound not given leaving that side as it is."""
    found = input_ranges[0]
    if found is None:
        return None
    low, high = found
    given = [k < len(node.input) and bool(node.input[k]) for k in (0, 1, 2)]
    if given[1]:
        if input_ranges[1] is None:
            return None
        low, high = max(low, input_ranges[1][0]), max(high, input_ranges[1][1])
    if given[2]:
        if input_ranges[2] is None:
            return None
        low, high = min(low, input_ranges[2][0]), min(high, input_ranges[2][1])
    return low, high
