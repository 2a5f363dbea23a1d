"""Three version adapters that only move values, bit for bit against the original op in
onnxruntime: Split-18 with num_outputs along a dimension not known statically as Slices below
13 (rules/versions/split.py), Pad-19 mode wrap as Slices and a Concat below 19
(rules/versions/pad.py), and AveragePool/LpPool with dilations as a Gather of the dilated
windows and a pool without them (rules/versions/pool.py); and their refusals, in our words.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model

import lowering
from lowering.runtime import run_onnxruntime, run_reference
from lowering.samples import edge_values


def bits(array) -> np.ndarray:
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def assert_same_bits(got: list, want: list, where: str) -> None:
    assert len(got) == len(want), where
    for index, (a, b) in enumerate(zip(got, want, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}, output {index}: {a.shape} vs {b.shape}"
        differ = np.flatnonzero(bits(a).reshape(-1) != bits(b).reshape(-1))
        assert differ.size == 0, f"{where}, output {index}: {differ.size} of {a.size} differ, first at {differ[:5]}"


def lowered(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(result, full_check=True)
    return result


def op_types(model: onnx.ModelProto) -> list[str]:
    return [node.op_type for node in model.graph.node]


# -- Split-18 with num_outputs along a dimension not known statically ------------------------------


def split_model(declared: list, count: int, axis: int, element_type: int = TensorProto.FLOAT) -> onnx.ModelProto:
    outputs = [f"y{k}" for k in range(count)]
    dims = [f"d{k}" for k in range(len(declared))]
    return make_model(
        [helper.make_node("Split", ["x"], outputs, name="split_node", axis=axis, num_outputs=count)],
        [helper.make_tensor_value_info("x", element_type, declared)],
        [helper.make_tensor_value_info(name, element_type, dims) for name in outputs],
        opset=18,
    )


@pytest.mark.parametrize("target", [12, 11, 10])
@pytest.mark.parametrize(("count", "axis"), [(1, 0), (2, -1), (3, 1), (4, -2), (5, 0)])
def test_split_num_outputs_of_an_unknown_size_is_sliced_bit_for_bit(count, axis, target):
    """Every size from 0 to 13 along the axis: where Split-18 runs (its last part not negative)
    the Slices give its parts bit for bit, edge values included; where onnxruntime refuses it
    (5 into 4), the Slices give onnx.reference's clamped parts."""
    model = split_model(["a", "b"], count, axis)
    result = lowered(model, target)
    assert "Split" not in op_types(result) and op_types(result).count("Slice") == count
    pool = edge_values(TensorProto.FLOAT)
    for size in range(14):
        shape = (size, 3) if axis in (0, -2) else (3, size)
        x = np.resize(pool, shape).astype(np.float32)
        got = run_onnxruntime(result, {"x": x})
        part = -(-size // count)
        if size - (count - 1) * part >= 0:
            assert_same_bits(got, run_onnxruntime(model, {"x": x}), f"{size} into {count}")
        else:
            with pytest.raises(Exception, match="negative final split"):
                run_onnxruntime(model, {"x": x})
            assert_same_bits(got, run_reference(model, {"x": x}), f"{size} into {count}")


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL])
def test_split_slices_move_any_type(element_type):
    model = split_model([2, "n", 2], 3, 1, element_type)
    result = lowered(model, 11)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = (np.arange(2 * 8 * 2).reshape(2, 8, 2) % 3).astype(dtype)
    assert_same_bits(run_onnxruntime(result, {"x": x}), run_onnxruntime(model, {"x": x}), "8 into 3")


def test_split_of_a_known_size_with_a_negative_last_part_is_sliced_by_constants():
    """5 into 4 parts of 2: an error whenever Split-18 runs (so it may only sit in a branch not
    taken); the Slices, bounded by constants, clamp as onnx.reference does: [2, 2, 1, 0]."""
    model = split_model([5, 2], 4, 0)
    result = lowered(model, 11)
    assert "Shape" not in op_types(result) and op_types(result).count("Slice") == 4
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    assert [part.shape[0] for part in run_onnxruntime(result, {"x": x})] == [2, 2, 1, 0]
    assert_same_bits(run_onnxruntime(result, {"x": x}), run_reference(model, {"x": x}), "5 into 4")


def test_split_of_a_known_size_keeps_its_sizes_attribute():
    result = lowered(split_model([7, 2], 3, 0), 11)
    assert op_types(result) == ["Split"]


@pytest.mark.parametrize("target", [9, 7])
def test_split_of_an_unknown_size_is_refused_below_10(target):
    with pytest.raises(
        lowering.LoweringError,
        match=rf"'split_node' \(Split\): Split-18 with num_outputs along axis 0 of 'x', whose size is not known "
        rf"statically, cannot go to opset {target} where sizes are an attribute \(and Slice takes its bounds as "
        r"inputs only from opset 10\)",
    ):
        lowering.lower(split_model(["a", 2], 3, 0), target_opset=target, ops=[])


def test_split_negative_axis_of_unknown_rank_is_refused_below_11():
    """r = Reshape(x, s), s of unknown length: no one knows r's rank, so axis -2 cannot be counted."""
    model = make_model(
        [
            helper.make_node("Reshape", ["x", "s"], ["r"]),
            helper.make_node("Split", ["r"], ["y0", "y1"], name="split_node", axis=-2, num_outputs=2),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"]),
            helper.make_tensor_value_info("s", TensorProto.INT64, ["K"]),
        ],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["a", "b"]) for name in ("y0", "y1")],
        opset=18,
    )
    with pytest.raises(lowering.LoweringError, match=r"axis -2 cannot go to opset 10, which takes no negative axis"):
        lowering.lower(model, target_opset=10, ops=[])
