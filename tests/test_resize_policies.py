"""Resize-18/19's keep_aspect_ratio_policy with sizes given at run time, going down to 17, 13 and
11: bit for bit against onnxruntime's Resize-19 (float and float16, edge values included, sizes
at and beside an exact half of rounding), or refused with a sentence of ours."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_bits, assert_same_values, make_model, refusal

import lowering
from lowering.runtime import run_onnxruntime
from lowering.samples import edge_values

TARGETS = (11, 13, 17)
# float16 is compared any NaN for a NaN: onnxruntime's float16 Resize goes through float32, and
# which payload a signalling NaN comes back with depends on where it lands in the output buffer
# (measured: the first 8 of 15 outputs quieted, 0xFD60 → 0xFF60, the other 7 the canonical 0xFE00).
TYPES = {TensorProto.FLOAT: np.float32, TensorProto.FLOAT16: np.float16}


def edge_array(shape, dtype, seed=0) -> np.ndarray:
    """Ordinary numbers with edge values of ``dtype`` (NaN, ±inf, ±0, subnormals, extremes) mixed in."""
    rng = np.random.default_rng(seed)
    pool = edge_values(helper.np_dtype_to_tensor_dtype(np.dtype(dtype))).astype(dtype)
    size = int(np.prod(shape))
    values = (rng.standard_normal(size) * 3).astype(dtype)
    picked = pool[rng.integers(0, len(pool), size)]
    keep = rng.random(size) < 0.4
    values[keep] = picked[keep]
    return values.reshape(shape)


def policy_model(element_type: int, rank: int, axes, policy: str, **attributes) -> onnx.ModelProto:
    node = helper.make_node(
        "Resize",
        ["x", "", "", "sizes"],
        ["y"],
        name="resize",
        keep_aspect_ratio_policy=policy,
        **({} if axes is None else {"axes": list(axes)}),
        **attributes,
    )
    count = rank if axes is None else len(axes)
    return make_model(
        [node],
        [
            helper.make_tensor_value_info("x", element_type, [f"d{i}" for i in range(rank)]),
            helper.make_tensor_value_info("sizes", TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info("y", element_type, [f"e{i}" for i in range(rank)])],
        opset=19,
    )


def with_axes_counted_from_the_front(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with negative axes counted from the front: onnxruntime 1.32's Resize-19 ignores
    negative axes with a policy (it returns X as it is), which the op's text counts from the back."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    rank = len(model.graph.input[0].type.tensor_type.shape.dim)
    for attribute in model.graph.node[0].attribute:
        if attribute.name == "axes":
            attribute.ints[:] = [a + rank if a < 0 else a for a in attribute.ints]
    return model


def lowered(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert any("Resize-19" in key for key in result.report.adapted), dict(result.report.adapted)
    return result.model


# (input shape, axes, sizes): upsampling, downsampling, a scale of 1, and sizes whose product s · d
# falls on an exact half (2 · 2.5: onnxruntime rounds it away from zero) or just beside one
SHAPES = [
    ((1, 1, 2, 4), (2, 3), (1, 3)),
    ((1, 1, 2, 2), (2, 3), (7, 8)),
    ((1, 1, 2, 5), (2, 3), (1, 100)),  # s = 0.5, 0.5 · 5 = 2.5 → 3
    ((1, 1, 2, 5), (3, 2), (100, 1)),  # the same, axes out of order
    ((2, 5), (-1, -2), (100, 1)),
    ((3, 7, 4), (1, 2), (5, 3)),
    ((3, 7, 4), None, (3, 5, 3)),
    ((1, 2, 6, 10), (2, 3), (9, 13)),  # s = 1.3 · 10 = 13, 1.5 · 6 = 9
    ((1, 1, 6, 10), (2, 3), (3, 9)),
    ((4, 6), (0, 1), (4, 6)),
    ((1, 1, 3, 7), (2, 3), (5, 11)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("element_type", sorted(TYPES))
@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
def test_policy_at_run_time_bit_for_bit(target, element_type, policy):
    dtype = TYPES[element_type]
    for (shape, axes, sizes), mode, nearest in itertools.product(
        SHAPES, ("half_pixel", "asymmetric"), ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
    ):
        model = policy_model(
            element_type, len(shape), axes, policy, mode="nearest", coordinate_transformation_mode=mode,
            nearest_mode=nearest,
        )  # fmt: skip
        converted = lowered(model, target)
        feeds = {"x": edge_array(shape, dtype, seed=len(shape)), "sizes": np.array(sizes, np.int64)}
        (want,) = run_onnxruntime(with_axes_counted_from_the_front(model), feeds)
        (got,) = run_onnxruntime(converted, feeds)
        same = assert_same_bits if element_type == TensorProto.FLOAT else assert_same_values
        same(got, want, f"{shape} {axes} {sizes} {mode} {nearest}")


def test_exact_half_rounds_away_from_zero():
    """2.5 becomes 3 (onnxruntime's std::round), not 2 (Round's half to even)."""
    model = policy_model(TensorProto.FLOAT, 4, (2, 3), "not_larger", mode="nearest")
    feeds = {"x": np.arange(10, dtype=np.float32).reshape(1, 1, 2, 5), "sizes": np.array([1, 100], np.int64)}
    (want,) = run_onnxruntime(model, feeds)
    assert want.shape == (1, 1, 1, 3)
    (got,) = run_onnxruntime(lowered(model, 13), feeds)
    assert_same_bits(got, want)


@pytest.mark.parametrize(
    ("attributes", "words"),
    [
        ({"mode": "linear"}, "computed at run time"),
        ({"mode": "nearest", "coordinate_transformation_mode": "align_corners"}, "computed at run time"),
        ({"mode": "nearest", "coordinate_transformation_mode": "pytorch_half_pixel"}, "computed at run time"),
    ],
)
def test_policy_at_run_time_refused_where_lengths_are_read(attributes, words):
    message = refusal(policy_model(TensorProto.FLOAT, 4, (2, 3), "not_smaller", **attributes), 13)
    assert "Resize-19 keeps the aspect ratio" in message and words in message and "opset 13" in message
