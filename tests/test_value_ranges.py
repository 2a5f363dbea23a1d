"""The integer ranges retyping reads (lowering/value_ranges.py): every value an op can give
from inputs in their ranges lies in the range the rule states, checked against numpy on every
value of small random ranges."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from onnx import helper

from lowering import value_ranges

SIZE_LIMIT = 1 << 31


def node(op_type: str, inputs: int, **attributes) -> onnx.NodeProto:
    return helper.make_node(op_type, [f"x{k}" for k in range(inputs)], ["y"], **attributes)


def truncated_division(a: int, b: int) -> int:
    """Integer Div as onnxruntime computes it (C++: truncation toward zero)."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def mod(a: int, b: int) -> int:
    """Mod with fmod=0: the divisor's sign (Python's %)."""
    return a % b


def fmod(a: int, b: int) -> int:
    """Mod with fmod=1: the dividend's sign (C's fmod)."""
    return a - b * truncated_division(a, b)


OPS = {
    "Add": (2, lambda a, b: a + b),
    "Sub": (2, lambda a, b: a - b),
    "Mul": (2, lambda a, b: a * b),
    "Neg": (1, lambda a: -a),
    "Abs": (1, abs),
    "Div": (2, truncated_division),
    "Mod": (2, mod),
    "Mod fmod": (2, fmod),
    "Max": (2, max),
    "Min": (2, min),
}


@pytest.mark.parametrize("op_type", sorted(OPS))
def test_arithmetic_stays_in_the_stated_range(op_type):
    inputs, compute = OPS[op_type]
    rng = np.random.default_rng(len(op_type))
    made = node("Mod", 2, fmod=1) if op_type == "Mod fmod" else node(op_type, inputs)
    for _ in range(200):
        ranges = []
        for _ in range(inputs):
            low = int(rng.integers(-40, 40))
            ranges.append((low, low + int(rng.integers(0, 12))))
        found = value_ranges.output_range(made, 0, ranges, SIZE_LIMIT)
        assert found is not None and found[0] <= found[1]
        for values in itertools.product(*(range(low, high + 1) for low, high in ranges)):
            if op_type.startswith(("Div", "Mod")) and values[1] == 0:
                continue
            assert found[0] <= compute(*values) <= found[1], (op_type, ranges, values, found)


def test_range_holds_its_values_and_its_count():
    """Range(start, limit, delta): every value, and limit - start (its count's numerator)."""
    for start, limit in [((0, 0), (0, 10)), ((-5, 3), (-20, 7)), ((2, 2), (-9, -9))]:
        found = value_ranges.output_range(node("Range", 3), 0, [start, limit, (1, 1)], SIZE_LIMIT)
        for s in range(start[0], start[1] + 1):
            for stop in range(limit[0], limit[1] + 1):
                for delta in (1, -1, 3):
                    for value in range(s, stop, delta):
                        assert found[0] <= value <= found[1]
                    assert found[0] <= stop - s <= found[1] and found[0] <= s - stop <= found[1]


def test_clip_cuts_by_the_bounds_given():
    clip = node("Clip", 3)
    assert value_ranges.output_range(clip, 0, [(-100, 100), (0, 0), (5, 7)], SIZE_LIMIT) == (0, 7)
    unbounded = helper.make_node("Clip", ["x0", "", "x2"], ["y"])
    assert value_ranges.output_range(unbounded, 0, [(-100, 100), None, (5, 7)], SIZE_LIMIT) == (-100, 7)
    assert value_ranges.output_range(clip, 0, [(-100, 100), None, (5, 7)], SIZE_LIMIT) is None


def test_sizes_and_indices_lie_below_the_size_limit():
    for op_type, position in [("Shape", 0), ("Size", 0), ("ArgMax", 0), ("NonZero", 0), ("TopK", 1)]:
        found = value_ranges.output_range(node(op_type, 1), position, [None], SIZE_LIMIT)
        assert found == (0, SIZE_LIMIT - 1)
    assert value_ranges.output_range(node("TopK", 2), 0, [(3, 9), (1, 1)], SIZE_LIMIT) == (3, 9)


def test_an_op_no_rule_knows_and_an_unbounded_input_give_no_bound():
    assert value_ranges.output_range(node("CumSum", 2), 0, [(0, 1), (0, 0)], SIZE_LIMIT) is None
    assert value_ranges.output_range(node("Add", 2), 0, [(0, 1), None], SIZE_LIMIT) is None
    assert not value_ranges.fits(None, onnx.TensorProto.INT32)
    assert value_ranges.fits((-(2**31), 2**31 - 1), onnx.TensorProto.INT32)
    assert not value_ranges.fits((0, 2**31), onnx.TensorProto.INT32)


def test_constants_give_their_values_and_constant_of_shape_its_fill():
    fill = onnx.numpy_helper.from_array(np.array([2**33 + 5], np.int64))
    made = helper.make_node("ConstantOfShape", ["shape"], ["y"], value=fill)
    assert value_ranges.output_range(made, 0, [(0, 9)], SIZE_LIMIT) == (2**33 + 5, 2**33 + 5)
    listed = helper.make_node("Constant", [], ["y"], value_ints=[-3, 7])
    assert value_ranges.output_range(listed, 0, [], SIZE_LIMIT) == (-3, 7)


def test_what_sums_or_reads_past_its_inputs_values_is_unbounded_or_sized():
    """Scatter with reduction add/mul sums the updates in; ReduceMax/ReduceMin over an empty
    axis give the type's extremes (another type's after retyping); MaxPool's second output
    holds positions, not the data's values."""
    for reduction in ("add", "mul"):
        scatter = node("ScatterND", 3, reduction=reduction)
        assert value_ranges.output_range(scatter, 0, [(0, 5), (0, 1), (0, 5)], SIZE_LIMIT) is None
    assert value_ranges.output_range(node("ScatterND", 3), 0, [(0, 5), (0, 1), (-2, 3)], SIZE_LIMIT) == (-2, 5)
    assert value_ranges.output_range(node("ReduceMax", 1), 0, [(0, 5)], SIZE_LIMIT) is None
    pool = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2])
    assert value_ranges.output_range(pool, 1, [(-128, 127)], SIZE_LIMIT) == (0, SIZE_LIMIT - 1)
    assert value_ranges.output_range(pool, 0, [(-128, 127)], SIZE_LIMIT) == (-128, 127)


def test_unsigned_division_and_remainders_keep_their_sign():
    assert value_ranges.output_range(node("Div", 2), 0, [(0, 100), (3, 3)], SIZE_LIMIT) == (0, 100)
    assert value_ranges.output_range(node("Mod", 2), 0, [(-50, 100), (3, 7)], SIZE_LIMIT) == (0, 6)
    assert value_ranges.output_range(node("Mod", 2, fmod=1), 0, [(0, 100), (-7, 7)], SIZE_LIMIT) == (0, 6)


def test_a_cast_keeps_a_range_its_target_holds_and_gives_the_target_s_where_a_value_may_wrap():
    """Cast-13 wraps an integer out of the target's range (uint16 65535 is int16 -1): the range
    then is the target type's; a range the target holds passes as it is; to bool, 0 or 1."""
    to_int16, to_bool = (node("Cast", 1, to=to) for to in (onnx.TensorProto.INT16, onnx.TensorProto.BOOL))
    assert value_ranges.output_range(to_int16, 0, [(0, 65535)], SIZE_LIMIT) == (-32768, 32767)
    assert value_ranges.output_range(to_int16, 0, [(-5, 300)], SIZE_LIMIT) == (-5, 300)
    assert value_ranges.output_range(to_bool, 0, [(0, 9)], SIZE_LIMIT) == (0, 1)
    assert value_ranges.output_range(to_int16, 0, [None], SIZE_LIMIT) is None
