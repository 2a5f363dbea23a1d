"""Integer values folded from constants and static shapes (lowering.folding): a node is
evaluated only where its output is known, from its inputs alone, to stay small, so a Range or
an Expand of a few numbers cannot make a huge tensor while a model is converted."""

from __future__ import annotations

import time

import numpy as np
import pytest
from onnx import helper, numpy_helper
from support import slow_but_a_sample  # noqa: E402

from lowering.folding import MAX_FOLDED_ELEMENTS, integer_value_of, output_size_bound


def _value_of(values: dict[str, np.ndarray]):
    return lambda name: numpy_helper.from_array(values[name], name) if name in values else None


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("node", "values", "bound"),
    [
        (helper.make_node("Range", ["s", "l", "d"], ["y"]),
         {"s": np.array(0), "l": np.array(2_000_000_000), "d": np.array(1)}, 2_000_000_000),
        (helper.make_node("Range", ["s", "l", "d"], ["y"]),
         {"s": np.array(5), "l": np.array(-3), "d": np.array(-2)}, 4),
        (helper.make_node("ConstantOfShape", ["shape"], ["y"]), {"shape": np.array([4096, 4096])}, 4096 * 4096),
        (helper.make_node("Expand", ["x", "shape"], ["y"]), {"x": np.array([1]), "shape": np.array([3, 5])}, 15),
        (helper.make_node("Tile", ["x", "r"], ["y"]), {"x": np.arange(6).reshape(2, 3), "r": np.array([100, 100])},
         60000),
        (helper.make_node("Add", ["a", "b"], ["y"]), {"a": np.zeros((64, 1), int), "b": np.zeros((1, 64), int)}, 4096),
        (helper.make_node("Gather", ["x", "i"], ["y"], axis=1), {"x": np.zeros((3, 4), int), "i": np.array([0, 1])}, 6),
        (helper.make_node("Concat", ["a", "b"], ["y"], axis=0), {"a": np.zeros(3, int), "b": np.zeros(4, int)}, 7),
        (helper.make_node("OneHot", ["i", "n", "v"], ["y"]),
         {"i": np.array([1]), "n": np.array(10**9), "v": np.array([0, 1])}, None),
    ],
)  # fmt: skip
def test_output_size_is_bounded_before_evaluating(node, values, bound):
    assert output_size_bound(node, values) == bound


def test_a_huge_range_is_not_folded_and_a_small_one_is():
    huge = {"s": np.array(0, np.int64), "l": np.array(2_000_000_000, np.int64), "d": np.array(1, np.int64)}
    node = helper.make_node("Range", ["s", "l", "d"], ["y"])
    started = time.perf_counter()
    assert integer_value_of(node, 0, _value_of(huge), lambda name: None, 18) is None
    assert time.perf_counter() - started < 5  # refused before evaluating, not after making 16 GB
    small = dict(huge, l=np.array(MAX_FOLDED_ELEMENTS, np.int64))
    folded = integer_value_of(node, 0, _value_of(small), lambda name: None, 18)
    assert np.array_equal(numpy_helper.to_array(folded), np.arange(MAX_FOLDED_ELEMENTS))
