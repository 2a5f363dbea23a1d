"""Three version adapters that only move values, bit for bit against the original op in
onnxruntime: Split-18 with num_outputs along a dimension not known statically as Slices below
13 (rules/versions/split.py), Pad-19 mode wrap as Gathers of the positions it reads below 19
(rules/versions/pad.py), and AveragePool/LpPool with dilations as a Gather of the dilated
windows and a pool without them (rules/versions/pool.py); and their refusals, in our words.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    checked_conversion,
    make_model,
    op_type_set,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering.registry import rule_for
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime, run_reference


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


@slow_but_a_sample()
@pytest.mark.parametrize("target", [12, 11, 10])
@pytest.mark.parametrize(("count", "axis"), [(1, 0), (2, -1), (3, 1), (4, -2), (5, 0)])
def test_split_num_outputs_of_an_unknown_size_is_sliced_bit_for_bit(count, axis, target):
    """Every size from 0 to 13 along the axis: where Split-18 runs (its last part not negative)
    the Slices give its parts bit for bit, edge values included; where onnxruntime refuses it
    (5 into 4), the Slices give onnx.reference's clamped parts."""
    model = split_model(["a", "b"], count, axis)
    result = checked_conversion(model, target)
    assert "Split" not in op_types(result) and op_types(result).count("Slice") == count
    pool = edge_values(TensorProto.FLOAT)
    got_run, want_run = OnnxruntimeRunner(result), OnnxruntimeRunner(model)  # one session each, every size
    for size in range(14):
        shape = (size, 3) if axis in (0, -2) else (3, size)
        x = np.resize(pool, shape).astype(np.float32)
        got = got_run({"x": x})
        part = -(-size // count)
        if size - (count - 1) * part >= 0:
            assert_same_bits(got, want_run({"x": x}), f"{size} into {count}")
        else:
            with pytest.raises(Exception, match="negative final split"):
                want_run({"x": x})
            assert_same_bits(got, run_reference(model, {"x": x}), f"{size} into {count}")


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL])
def test_split_slices_move_any_type(element_type):
    model = split_model([2, "n", 2], 3, 1, element_type)
    result = checked_conversion(model, 11)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = (np.arange(2 * 8 * 2).reshape(2, 8, 2) % 3).astype(dtype)
    assert_same_bits(run_onnxruntime(result, {"x": x}), run_onnxruntime(model, {"x": x}), "8 into 3")


def test_split_of_a_known_size_with_a_negative_last_part_is_sliced_by_constants():
    """5 into 4 parts of 2: an error whenever Split-18 runs (so it may only sit in a branch not
    taken); the Slices, bounded by constants, clamp as onnx.reference does: [2, 2, 1, 0]."""
    model = split_model([5, 2], 4, 0)
    result = checked_conversion(model, 11)
    assert "Shape" not in op_types(result) and op_types(result).count("Slice") == 4
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    assert [part.shape[0] for part in run_onnxruntime(result, {"x": x})] == [2, 2, 1, 0]
    assert_same_bits(run_onnxruntime(result, {"x": x}), run_reference(model, {"x": x}), "5 into 4")


def test_split_of_a_known_size_keeps_its_sizes_attribute():
    result = checked_conversion(split_model([7, 2], 3, 0), 11)
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


# -- Pad-19 mode wrap ------------------------------------------------------------------------------


# -- Split-13/18 with sizes given at run time -------------------------------------------------------


def sized_split_model(opset: int, shape: list, count: int, axis: int, element_type=TensorProto.FLOAT):
    outputs = [f"y{k}" for k in range(count)]
    return make_model(
        [helper.make_node("Split", ["x", "sizes"], outputs, name="split_node", axis=axis)],
        [
            helper.make_tensor_value_info("x", element_type, shape),
            helper.make_tensor_value_info("sizes", TensorProto.INT64, [count]),
        ],
        [helper.make_tensor_value_info(name, element_type, [f"d{k}" for k in range(len(shape))]) for name in outputs],
        opset=opset,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 12])
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize(
    ("shape", "axis", "sizes"),
    [([6], 0, [2, 4]), ([3, 7], 1, [0, 3, 4]), ([3, 7], -1, [7, 0]), ([5, 2, 2], 0, [1, 1, 1, 2]), ([0, 4], 1, [1, 3])],
)
def test_split_sizes_given_at_run_time_are_sliced_between_their_running_sums(shape, axis, sizes, opset, target):
    """Each part a Slice from the sizes before it to its own end (CumSum): bit for bit with the
    op on edge values, empty parts and an empty input included."""
    model = sized_split_model(opset, shape, len(sizes), axis)
    converted = checked_conversion(model, target)
    assert "CumSum" in op_types(converted) and "Split" not in op_types(converted)
    values = np.resize(edge_values(TensorProto.FLOAT), int(np.prod(shape))).reshape(shape)
    feeds = {"x": values, "sizes": np.array(sizes, np.int64)}
    assert_same_bits(run_onnxruntime(converted, feeds), run_onnxruntime(model, feeds), f"{shape} {sizes}")


def test_split_sizes_given_at_run_time_are_refused_below_11():
    with pytest.raises(lowering.LoweringError) as refused:
        lowering.lower(sized_split_model(13, [6], 2, 0), target_opset=10, ops=[])
    assert str(refused.value).endswith(
        "Split-13 takes its sizes from 'sizes', which is computed at run time, so it cannot go to opset 10 where "
        "split is an attribute (and their running sums need CumSum, from opset 11)"
    )


def wrap_model(declared: list, pads: list[int] | None, axes: list[int] | None = None, element_type=TensorProto.FLOAT):
    """Pad-19 wrap on x; pads an initializer where given, else a graph input; axes an initializer."""
    inputs = [helper.make_tensor_value_info("x", element_type, declared)]
    initializer = []
    if pads is None:
        inputs.append(helper.make_tensor_value_info("pads", TensorProto.INT64, [2 * len(axes or declared)]))
    else:
        initializer.append(onnx.numpy_helper.from_array(np.array(pads, np.int64), "pads"))
    names = ["x", "pads"]
    if axes is not None:
        names += ["", "axes"]
        initializer.append(onnx.numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    return make_model(
        [helper.make_node("Pad", names, ["y"], name="pad_node", mode="wrap")],
        inputs,
        [helper.make_tensor_value_info("y", element_type, [f"d{k}" for k in range(len(declared))])],
        opset=19,
        initializer=initializer,
    )


# pads over a 3x4 input (begins, then ends): inside the dimension, larger than it (wrapping round
# again), negative (cropping), a negative pad meeting a positive one on the same axis
WRAP_PADS = [
    [1, 2, 1, 2],
    [0, 0, 0, 0],
    [3, 4, 3, 4],
    [7, 9, 5, 11],
    [-1, 0, 2, -2],
    [2, -1, -1, 5],
    [-2, -3, 4, 1],
    [0, 3, 0, 0],
]


@slow_but_a_sample()
@pytest.mark.parametrize("target", [18, 13, 11, 9])
@pytest.mark.parametrize("pads", WRAP_PADS)
def test_wrap_with_constant_pads_is_gathered_bit_for_bit(pads, target):
    model = wrap_model([3, 4], pads)
    result = checked_conversion(model, target)
    assert "Pad" not in op_types(result) and set(op_types(result)) <= {"Constant", "Gather", "Identity"}
    x = np.resize(edge_values(TensorProto.FLOAT), (3, 4)).astype(np.float32)
    assert_same_bits(run_onnxruntime(result, {"x": x}), run_onnxruntime(model, {"x": x}), f"pads {pads}")
    if min(pads) >= 0:  # numpy.pad's wrap (onnx.reference) takes no negative pads
        assert_same_bits(run_onnxruntime(result, {"x": x}), run_reference(model, {"x": x}), f"pads {pads}")


@pytest.mark.slow
@pytest.mark.parametrize("target", [18, 13, 11])
def test_wrap_with_pads_computed_at_run_time_is_gathered_bit_for_bit(target):
    model = wrap_model([3, 4], None)
    result = checked_conversion(model, target)
    assert {"Range", "Mod", "Gather"} <= set(op_types(result)) and "Pad" not in op_types(result)
    x = np.resize(edge_values(TensorProto.FLOAT), (3, 4)).astype(np.float32)
    got_run, want_run = OnnxruntimeRunner(result), OnnxruntimeRunner(model)  # one session each, every pads
    for pads in WRAP_PADS:
        feeds = {"x": x, "pads": np.array(pads, np.int64)}
        assert_same_bits(got_run(feeds), want_run(feeds), f"pads {pads}")


@pytest.mark.slow
@pytest.mark.parametrize("pads", [None, [2, 1, 0, 3, -1, 2]])
def test_wrap_of_a_dimension_not_known_statically_is_gathered_at_run_time(pads):
    model = wrap_model(["a", 4, "b"], pads, element_type=TensorProto.INT32)
    result = checked_conversion(model, 11)
    got_run, want_run = OnnxruntimeRunner(result), OnnxruntimeRunner(model)  # one session each, every feed
    for shape in ((3, 4, 5), (1, 4, 2), (4, 4, 7)):
        x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
        for given in [pads] if pads else [[2, 1, 0, 3, -1, 2], [5, 0, 1, 0, 0, 8], [0, 1, -1, 2, 0, 3]]:
            feeds = {"x": x} | ({} if pads else {"pads": np.array(given, np.int64)})
            assert_same_bits(got_run(feeds), want_run(feeds), f"{shape} {given}")


@pytest.mark.parametrize(
    ("element_type", "axes"), [(TensorProto.DOUBLE, [-1]), (TensorProto.BOOL, [0, -1]), (TensorProto.INT64, [1])]
)
def test_wrap_on_chosen_axes_of_any_type(element_type, axes):
    pads = {1: [2, 3], 2: [1, -1, 3, 2]}[len(axes)]
    model = wrap_model([2, 3, 4], pads, axes, element_type)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = np.resize(edge_values(element_type), (2, 3, 4)) if element_type == TensorProto.DOUBLE else None
    x = x if x is not None else (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    for target in (18, 11):
        result = checked_conversion(model, target)
        assert_same_bits(run_onnxruntime(result, {"x": x}), run_onnxruntime(model, {"x": x}), f"{target}")


def test_wrap_on_float16_keeps_every_bit_where_onnxruntimes_pad_rewrites_nan_payloads():
    """onnxruntime has no float16 Pad kernel: it runs Pad-19 in float32 (Casts inserted), which
    rewrites the payload of a NaN (0x7fff comes back 0x7e00). The Gathers move the bits as Pad's
    spec says: every output is the input's value at numpy.pad(mode="wrap")'s position, bit for
    bit; onnxruntime's Pad agrees on every value but the NaN payloads (NaN and its sign kept)."""
    model = wrap_model([3, 4], [2, 3, 1, 5])
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    x = np.resize(edge_values(TensorProto.FLOAT16), (3, 4))
    x.view(np.uint16)[0, :4] = [0x7FFF, 0xFC01, 0x7C01, 0xFE00]
    positions = np.pad(np.arange(12).reshape(3, 4), ((2, 1), (3, 5)), mode="wrap")
    for target in (18, 11):
        (got,) = run_onnxruntime(checked_conversion(model, target), {"x": x})
        assert_same_bits([got], [x.reshape(-1)[positions]], f"{target}")
        (theirs,) = run_onnxruntime(model, {"x": x})
        same = bits(got) == bits(theirs)
        assert (same | (np.isnan(got) & np.isnan(theirs) & (np.signbit(got) == np.signbit(theirs)))).all()
        assert not same.all()  # the payloads onnxruntime's float32 detour rewrote


def test_wrap_leaving_nothing_to_wrap_around_fails_when_it_runs_as_the_original_does():
    """A pad of -4 crops all 4 values and 1 more is asked for: onnxruntime's Pad-19 fails
    ("zero effective input extent"); known statically that is refused, at run time the Gather of
    an index on an empty axis fails alike."""
    with pytest.raises(lowering.LoweringError, match=r"along axis 1 \(size 4\) its pads -4 and 1 leave nothing"):
        lowering.lower(wrap_model([3, 4], [0, -4, 0, 1]), target_opset=11, ops=[])
    model = wrap_model([3, 4], None)
    result = checked_conversion(model, 11)
    feeds = {"x": np.zeros((3, 4), np.float32), "pads": np.array([0, -4, 0, 1], np.int64)}
    for subject in (model, result):
        with pytest.raises(Exception):  # noqa: B017 (onnxruntime's Fail or InvalidArgument)
            run_onnxruntime(subject, feeds)


def test_wrap_refusals_name_what_is_missing():
    words = r"'pad_node' \(Pad\): Pad-19 with mode wrap cannot go to opset 10: its pads are computed at run time, "
    with pytest.raises(lowering.LoweringError, match=words + r"so the positions it reads need Range \(from opset 11\)"):
        lowering.lower(wrap_model([3, 4], None), target_opset=10, ops=[])
    with pytest.raises(lowering.LoweringError, match=r"Pad-19 with mode wrap cannot go to opset 8, whose Constant "
                       r"holds no int64 indices \(from opset 9\)"):  # fmt: skip
        lowering.lower(wrap_model([3, 4], [1, 1, 1, 1]), target_opset=8, ops=[])
    with pytest.raises(lowering.LoweringError, match=r"the size of its axis 0 is unknown, so the positions it reads"):
        lowering.lower(wrap_model(["a", 4], [1, 0, 1, 0]), target_opset=10, ops=[])
    model = wrap_model([3, 4], [1, 1], [0])
    axes_input = helper.make_tensor_value_info("axes", TensorProto.INT64, [1])
    model.graph.input.append(axes_input)
    del model.graph.initializer[1]
    with pytest.raises(lowering.LoweringError, match=r"its axes 'axes' are computed at run time"):
        lowering.lower(model, target_opset=11, ops=[])


# -- AveragePool/LpPool with dilations -------------------------------------------------------------


def pool_model(op_type: str, opset: int, shape: list, element_type=TensorProto.FLOAT, **attributes):
    x = helper.make_tensor_value_info("x", element_type, shape)
    y = helper.make_tensor_value_info("y", element_type, [None] * len(shape))
    return make_model([helper.make_node(op_type, ["x"], ["y"], name="pool_node", **attributes)], [x], [y], opset=opset)


def at_opset(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    moved = onnx.ModelProto()
    moved.CopyFrom(model)
    moved.opset_import[0].version = opset
    return moved


# (shape, kernel, strides, dilations, pads): windows reaching into the padding at both ends and
# past the padded end under ceil_mode, 1-, 2- and 3-D
DILATED = [
    ([1, 1, 11], [3], [2], [3], [0, 0]),
    ([1, 1, 11], [3], [2], [3], [1, 2]),
    ([2, 3, 9, 8], [2, 3], [1, 2], [2, 2], [0, 0, 0, 0]),
    ([2, 3, 9, 8], [2, 3], [1, 2], [2, 2], [1, 1, 1, 1]),
    ([1, 2, 7, 9], [3, 2], [2, 1], [2, 3], [0, 1, 1, 0]),
    ([1, 1, 5, 5, 6], [2, 2, 2], [2, 1, 2], [2, 2, 1], [1, 0, 1, 1, 1, 0]),
]
POOLS = [
    ("AveragePool", 22, {"count_include_pad": 0}),
    ("AveragePool", 22, {"count_include_pad": 1}),
    ("AveragePool", 19, {"count_include_pad": 1}),
    ("LpPool", 22, {"p": 2}),
    ("LpPool", 18, {"p": 3}),
    ("LpPool", 22, {"p": 1}),
]


def pool_inputs(shape: list, element_type: int) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    pool = edge_values(element_type)
    return [
        rng.standard_normal(shape).astype(dtype),
        np.resize(pool, shape).astype(dtype),
        np.resize(pool[::-1], shape).astype(dtype),
        np.resize(pool[rng.permutation(pool.size)], shape).astype(dtype),
    ]


@slow_but_a_sample()
@pytest.mark.parametrize("ceil_mode", [0, 1])
@pytest.mark.parametrize(("op_type", "opset", "extra"), POOLS)
@pytest.mark.parametrize(("shape", "kernel", "strides", "dilations", "pads"), DILATED)
def test_dilated_windows_are_gathered_bit_for_bit(
    shape, kernel, strides, dilations, pads, op_type, opset, extra, ceil_mode
):
    """Bit for bit in onnxruntime's kernel of the source version (the result run at the source
    opset: Pad, Gather and a pool without dilations mean the same there), on random values and
    on edge values (NaN of both signs and several payloads, ±inf, ±0, subnormals, the extremes);
    at the target opset the result runs to outputs of the same shape. Where a window other than
    the first or last leaves positions out of its count, an AveragePool goes by its rule (within
    its tolerance), another op is refused."""
    attributes = {"kernel_shape": kernel, "strides": strides, "dilations": dilations, "pads": pads, **extra}
    if ceil_mode:
        attributes["ceil_mode"] = 1
    model = pool_model(op_type, opset, shape, **attributes)
    try:
        result = checked_conversion(model, 17)
    except lowering.LoweringError as error:
        assert f"{op_type}-{opset} cannot go to opset 17" in str(error) and "counts" in str(error), error
        assert op_type == "AveragePool" and (extra["count_include_pad"] == 0 or ceil_mode), error
        return
    if "Conv" in op_types(result):  # (windows that gathering cannot count: AveragePool's rule, rules/averagepool.py)
        assert op_type == "AveragePool" and set(op_types(result)) <= {"Constant", "Conv", "Div"}
        x = pool_inputs(shape, TensorProto.FLOAT)[0]  # (within its tolerance; extremes of both signs sum apart)
        [got], [want] = run_onnxruntime(result, {"x": x}), run_onnxruntime(model, {"x": x})
        assert not rule_for("", op_type).tolerance[TensorProto.FLOAT].mismatches(got, want).any()
        return
    assert set(op_types(result)) <= {"Constant", "Pad", "Gather", op_type}
    # one session each for every input
    want_run, got_run = OnnxruntimeRunner(model), OnnxruntimeRunner(result)
    at_source_run = OnnxruntimeRunner(at_opset(result, opset))
    for x in pool_inputs(shape, TensorProto.FLOAT):
        want = want_run({"x": x})
        assert [a.shape for a in got_run({"x": x})] == [b.shape for b in want]
        assert_same_bits(at_source_run({"x": x}), want, f"{op_type} {attributes}")


@pytest.mark.parametrize("op_type", ["AveragePool", "LpPool"])
def test_dilated_windows_of_float16(op_type):  # (onnxruntime's CPU pools take no double)
    element_type = TensorProto.FLOAT16
    attributes = {"kernel_shape": [2, 3], "strides": [1, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]}
    attributes |= {"count_include_pad": 1} if op_type == "AveragePool" else {"p": 2}
    model = pool_model(op_type, 22, [1, 2, 9, 8], element_type, **attributes)
    result = checked_conversion(model, 13)
    for x in pool_inputs([1, 2, 9, 8], element_type):
        want = run_onnxruntime(model, {"x": x})
        assert_same_bits(run_onnxruntime(at_opset(result, 22), {"x": x}), want, f"{op_type} {element_type}")


def test_dilated_windows_at_the_target_agree_with_the_original_on_ordinary_values():
    """The target's own kernels (AveragePool-11, LpPool-11) sum in their own way (KERNEL_GAPS in
    tests/rules/versions/test_adapter_registry.py): on ordinary values the outputs agree to rounding."""
    shape = [2, 3, 9, 8]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for op_type, extra in (("AveragePool", {"count_include_pad": 1}), ("LpPool", {"p": 2})):
        model = pool_model(op_type, 22, shape, kernel_shape=[2, 3], dilations=[2, 2], pads=[1, 1, 1, 1], **extra)
        for target in (11, 13, 17):
            (got,), (want,) = (
                run_onnxruntime(checked_conversion(model, target), {"x": x}),
                run_onnxruntime(model, {"x": x}),
            )
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_dilated_pool_refusals_say_why():
    same = pool_model("AveragePool", 22, [1, 1, 7, 7], kernel_shape=[2, 2], dilations=[2, 2], auto_pad="SAME_LOWER")
    with pytest.raises(lowering.LoweringError, match=r"'pool_node' \(AveragePool\): AveragePool-22 cannot go to "
                       r"opset 17 \(AveragePool-11\): its dilations cannot be stated there, and under auto_pad "
                       r"SAME_LOWER its windows are not agreed on"):  # fmt: skip
        lowering.lower(same, target_opset=17, ops=[])
    # (a window counting part of its positions, which gathered elements cannot say, goes as
    # AveragePool's rule writes it: a dilated Conv of ones over the counts, rules/averagepool.py)
    middle = pool_model("AveragePool", 22, [1, 1, 8], kernel_shape=[2], dilations=[2], pads=[2, 0])
    converted = lowering.lower(middle, target_opset=17, ops=[])
    assert op_type_set(converted) >= {"Conv", "Div"} and "AveragePool" not in op_type_set(converted)
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 8)  # (window i holds x[i - 2] where i >= 2, and x[i])
    want = [[[0.0, 1.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]]  # (onnxruntime refuses pads as large as the kernel)
    assert run_onnxruntime(converted, {"x": x})[0].tolist() == want
    empty = pool_model("AveragePool", 22, [1, 1, 8], kernel_shape=[2], dilations=[2], pads=[3, 0])
    with pytest.raises(lowering.LoweringError, match=r"window 0 of 9 counts 0 of its 2 positions"):
        lowering.lower(empty, target_opset=17, ops=[])
    unknown = pool_model("AveragePool", 22, [1, 1, "h", 8], kernel_shape=[2, 2], dilations=[2, 2])
    words = r"AveragePool-22 cannot go to opset 17 \(AveragePool-11\): its dilations cannot be stated there, and the "
    with pytest.raises(lowering.LoweringError, match=words + "spatial dimensions of its input 'x' are not known"):
        lowering.lower(unknown, target_opset=17, ops=[])
    # (LpPool, which a rule lowers, goes there as a dilated Conv: rules/lppool.py)
    lp_pool = pool_model("LpPool", 18, [1, 1, "h", 8], kernel_shape=[2, 2], dilations=[2, 2])
    assert op_type_set(lowering.lower(lp_pool, target_opset=17, ops=[])) >= {"Conv", "Pow"}


# -- Pad-18 with axes given at run time ------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17])
@pytest.mark.parametrize(
    ("axes", "pads"), [([1], [2, 0]), ([-1, 0], [1, 2, 0, 3]), ([2, 0, 1], [0, 1, 1, 2, 0, 1]), ([], [])]
)
def test_pad_axes_given_at_run_time_spread_the_pads_there(axes, pads, target):
    """Each pad scattered to its axis' begin and end in zeros over every axis: the same padding,
    bit for bit, for axes from either end and none."""
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "value", "axes"], ["y"], name="pad", mode="constant")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("pads", TensorProto.INT64, [2 * len(axes)]),
            helper.make_tensor_value_info("value", TensorProto.FLOAT, []),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", "c"])],
        opset=18,
    )
    converted = checked_conversion(model, target)
    assert "ScatterElements" in op_types(converted)
    feeds = {
        "x": np.resize(edge_values(TensorProto.FLOAT), 24).reshape(2, 3, 4),
        "pads": np.array(pads, np.int64),
        "value": np.array(-0.0, np.float32),
        "axes": np.array(axes, np.int64),
    }
    assert_same_bits(run_onnxruntime(converted, feeds), run_onnxruntime(model, feeds), f"axes {axes}")


def test_pad_axes_out_of_range_at_run_time_fail_there_as_the_original_does():
    model = make_model(
        [helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], name="pad")],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("pads", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("axes", TensorProto.INT64, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])],
        opset=18,
    )
    converted = checked_conversion(model, 13)
    feeds = {"x": np.ones((2, 3), np.float32), "pads": np.array([1, 1], np.int64), "axes": np.array([2], np.int64)}
    for runs in (model, converted):
        with pytest.raises(Exception, match="(?i)out of range|invalid|not in"):
            run_onnxruntime(runs, feeds)
