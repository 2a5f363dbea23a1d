"""MaxPool, AveragePool and LpPool taken across the steps that restate their windows, down and
up (rules/versions/pool.py): bit for bit against the original in onnxruntime, on the backend
cases and on edge values, wherever every window is proved the same under both versions' rules;
refused in our words where it is not (a window more or less, dimensions unknown, dilations the
older version cannot state).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnxruntime.capi.onnxruntime_pybind11_state import RuntimeException as OnnxruntimeRuntimeException
from support import make_model, refusal, slow_but_a_sample  # noqa: E402
from test_adapter_registry import KERNEL_GAPS, at_opset, dilated_pool, feeds_key, reference_outputs_of_each
from version_cases import feeds_of, node_cases

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for
from lowering.samples import edge_values
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime, run_reference

POOL_CASES = ("test_maxpool_", "test_averagepool_", "test_lppool_")
LABEL = "windows proved the same"
# How many backend cases convert, bit for bit, at each target today (the rest are refused: a
# window more or less under the older version's rules).
CONVERTED_AT_LEAST = {11: 45, 13: 45, 17: 45, 21: 45}


def bits(array) -> np.ndarray:
    array = np.asarray(array)
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def assert_same_bits(got: list, want: list, where: str) -> None:
    assert len(got) == len(want), where
    for a, b in zip(got, want, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        differ = np.flatnonzero(bits(a).reshape(-1) != bits(b).reshape(-1))
        assert differ.size == 0, f"{where}: {differ.size} of {a.size} differ, first at {differ[:5]}"


def with_edge_values(model: onnx.ModelProto, feeds: dict) -> dict:
    """The feeds with every float tensor filled with its type's edge values (NaN, ±inf, ±0,
    subnormals, the extremes), cycled to its shape."""
    result = dict(feeds)
    for info in model.graph.input:
        element_type = info.type.tensor_type.elem_type
        value = feeds.get(info.name)
        if isinstance(value, np.ndarray) and value.size and floats.is_float(element_type):
            pool = edge_values(element_type)
            result[info.name] = np.resize(pool, value.shape).astype(pool.dtype)
    return result


def assert_converts_bit_for_bit(model: onnx.ModelProto, target: int, feeds: dict, where: str) -> None:
    """``model`` taken to ``target`` gives the same bits in onnxruntime; in onnx.reference where
    onnxruntime's kernel for the older version rounds otherwise (KERNEL_GAPS), with onnxruntime
    still running it to outputs of the same shapes."""
    result = lowering.lower_model(model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    labels = (f" via {LABEL}", " via auto_pad stated alike")
    assert all(" via " not in key or key.endswith(labels) for key in result.report.adapted), dict(result.report.adapted)
    op_type = model.graph.node[0].op_type
    in_reference = any(
        (op_type, schemas.version_in_force(op_type, opset)) in KERNEL_GAPS for opset in (opset_of(model), target)
    )
    # dilations as Gathers: run at the source opset, the original's own kernel (see DILATED_POOLS)
    relabeled = in_reference and dilated_pool(model, op_type)
    kinds = ("own inputs", "edge values")
    fed = [feeds, with_edge_values(model, feeds)]
    # each model run on both feeds through one session (or one onnx.reference evaluator)
    got, want = run_each(result.model, fed), original_outputs_of_each(model, fed)
    if relabeled or in_reference:
        for kind, outputs, wanted in zip(kinds, got, want, strict=True):
            assert [np.shape(a) for a in outputs] == [np.shape(b) for b in wanted], f"{where}, {kind}"
    if relabeled:
        got = run_each(at_opset(result.model, opset_of(model)), fed)
    elif in_reference:
        got, want = reference_outputs_of_each(result.model, fed), original_outputs_of_each(model, fed, reference=True)
    for kind, outputs, wanted in zip(kinds, got, want, strict=True):
        assert_same_bits(outputs, wanted, f"{where}, {kind}")


def run_each(model: onnx.ModelProto, feeds: list[dict]) -> list[list]:
    """``run_onnxruntime(model, fed)`` for each of ``feeds``, through one session (made once, not
    once a feed), closed before returning: an open session's idle threads spin, taking a core
    from the lowering that runs next. The first feed that fails raises, as it would alone."""
    runner = OnnxruntimeRunner(model)
    return [runner(fed) for fed in feeds]


_ORIGINAL_OUTPUTS: dict[tuple, list] = {}


def original_outputs_of_each(
    model: onnx.ModelProto, feeds: list[dict], reference: bool = False, done: list | None = None
) -> list[list]:
    """``model``'s outputs in onnxruntime (or onnx.reference) on each of ``feeds`` in order, run
    once per model and feeds in the session (an original is compared with what it becomes at
    every target, and its outputs stay the same), those not run before through one session
    (onnx.reference's by :func:`reference_outputs_of_each`: a computation run before, for a
    converted model of the same graph and op classes, is not run again); the first that fails
    raises, as it would alone, the outputs of those before it in ``done``."""
    serialized = model.SerializeToString()
    name = run_reference.__name__ if reference else run_onnxruntime.__name__
    done = [] if done is None else done
    runner = None
    for fed in feeds:
        key = (name, serialized, feeds_key(fed))
        if key not in _ORIGINAL_OUTPUTS and reference:  # (the same computation as a converted model's, once)
            (_ORIGINAL_OUTPUTS[key],) = reference_outputs_of_each(model, [fed])
        elif key not in _ORIGINAL_OUTPUTS:
            runner = runner or OnnxruntimeRunner(model)
            _ORIGINAL_OUTPUTS[key] = runner(fed)
        done.append(_ORIGINAL_OUTPUTS[key])
    return done


def opset_of(model: onnx.ModelProto) -> int:
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


def pool_cases() -> list:
    return [
        case
        for case in node_cases()
        if case.name.startswith(POOL_CASES) and "_expanded" not in case.name and case.data_sets
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(CONVERTED_AT_LEAST))
def test_backend_cases_convert_bit_for_bit_or_are_refused_in_our_words(target):
    converted = []
    for case in pool_cases():
        where = f"{case.name} to {target}"
        feeds = feeds_of(case.model, case.data_sets[0][0])
        try:
            assert_converts_bit_for_bit(case.model, target, feeds, where)
        except lowering.LoweringError as error:
            op_type = case.model.graph.node[0].op_type
            assert f"({op_type}): {op_type}-22 cannot go to opset {target}" in str(error), f"{where}: {error}"
            continue
        converted.append(case.name)
    assert len(converted) >= CONVERTED_AT_LEAST[target], converted


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17, 21])
@pytest.mark.parametrize(
    "name", ["test_maxpool_2d_ceil_output_size_reduce_by_one", "test_averagepool_2d_ceil_last_window_starts_on_pad"]
)
def test_a_window_starting_in_the_right_padding_goes_as_the_older_pool_without_ceil_mode(name, target):
    """Version 22 ignores a ceil_mode window that starts in the right padding; the older pool
    with ceil_mode 0 counts the same windows with the same padding: the pool alone, bit for bit;
    an AveragePool below version 19 (whose ceil_mode 0 onnxruntime sums otherwise) with ceil_mode
    1 and a Slice cutting the window."""
    case = next(c for c in node_cases() if c.name == name)
    assert_converts_bit_for_bit(case.model, target, feeds_of(case.model, case.data_sets[0][0]), f"{name} to {target}")
    converted = lowering.lower(case.model, target_opset=target, ops=[])
    op_type = case.model.graph.node[0].op_type
    ops = [n.op_type for n in converted.graph.node if n.op_type != "Constant"]
    if op_type == "AveragePool" and schemas.version_in_force(op_type, target) < 19:
        assert ops == [op_type, "Slice"]
        return
    [pool] = converted.graph.node
    assert pool.op_type == op_type and not any(a.name == "ceil_mode" and a.i for a in pool.attribute)


@pytest.mark.parametrize("element_type", [TensorProto.INT8, TensorProto.UINT8])
def test_an_8_bit_window_reading_padding_alone_gives_the_types_lowest_in_float_too(element_type):
    """A window dilated past one element with a pad each side reads padding alone: MaxPool on
    int8 gives -128 there (uint8 0); pooled in float below 12, float's lowest is raised to the
    type's before the Cast back, the same bits."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = helper.make_tensor_value_info("x", element_type, [1, 1, 1])
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2], pads=[1, 1], dilations=[2])
    model = make_model([node], [x], [helper.make_tensor_value_info("y", element_type, [None] * 3)], opset=22)
    converted = lowering.lower(model, target_opset=11, ops=[])
    assert "Max" in {n.op_type for n in converted.graph.node}
    feeds = {"x": np.array([[[5]]], dtype)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(converted, feeds)
    assert want.ravel()[0] == np.iinfo(dtype).min and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("target", [11, 18, 19])
def test_an_average_pool_of_negative_same_padding_goes_no_lower_than_19(target):
    """A stride past the kernel under auto_pad SAME works out a negative padding, which
    onnxruntime's AveragePool below version 19 refuses at run time: refused there, converted to
    19 and later, the same bits."""
    model = pool_model("AveragePool", 22, [1, 1, 2], kernel_shape=[1], strides=[2], auto_pad="SAME_UPPER")
    feeds = {"x": np.array([[[1.5, -2.0]]], np.float32)}
    if target < 19:
        assert "works out a negative padding" in refusal(model, target)
        return
    assert_converts_bit_for_bit(model, target, feeds, f"negative SAME padding to {target}")


@pytest.mark.parametrize("spatial", [[2, 3], [3, 2, 3]])
def test_an_average_pool_below_19_keeps_the_slice_where_ceil_mode_0_sums_otherwise(spatial):
    """onnxruntime's AveragePool below version 19 sums ceil_mode 0's windows in another order than
    ceil_mode 1's (count_include_pad 1, 2-D and 3-D): a window version 22 ignores is cut by a
    Slice there, the same bits; at 19 the pool goes with ceil_mode 0 alone."""
    rank = len(spatial)
    attributes = {"kernel_shape": [2] * rank, "strides": [1] + [2] * (rank - 1), "pads": [0, 1] * rank,
                  "ceil_mode": 1, "count_include_pad": 1}  # fmt: skip
    attributes["pads"] = [0] + [1] * (rank - 1) + [0] + [1] * (rank - 1)
    shape = [1, 1, *spatial]
    model = pool_model("AveragePool", 22, shape, **attributes)
    feeds = random_feeds(shape)
    for target, ops in ((13, ["AveragePool", "Slice"]), (19, ["AveragePool"])):
        converted = lowering.lower(model, target_opset=target, ops=[])
        assert [n.op_type for n in converted.graph.node if n.op_type != "Constant"] == ops
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(converted, feeds)
        assert got.tobytes() == want.tobytes(), target


def test_a_window_wholly_in_the_right_padding_is_cut_from_the_older_pool():
    """Padding after of a window's extent or more (the spec allows it; onnxruntime refuses such
    a pool): version 22 ignores the ceil_mode window starting there, which the older pool makes
    with ceil_mode 0 or 1 alike, last along its axis; a Slice cuts it, and the windows kept are
    the same (onnx.reference, on the original and the converted MaxPool; its AveragePool fails
    on such padding)."""
    op_type, shape = "MaxPool", [1, 2, 4, 5]
    model = pool_model(op_type, 22, shape, kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 2, 1], ceil_mode=1)
    converted = lowering.lower(model, target_opset=13, ops=[])
    assert [n.op_type for n in converted.graph.node if n.op_type != "Constant"] == [op_type, "Slice"]
    feeds = random_feeds(shape)
    [want], [got] = run_reference(model, feeds), run_reference(converted, feeds)
    assert got.shape == want.shape == (1, 2, 2, 3) and got.tobytes() == want.tobytes()


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17])
@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("size", [5, 6, 7])
def test_same_padding_the_older_version_counts_otherwise_goes_as_the_pads_it_works_out(
    size, count_include_pad, auto_pad, target
):
    """AveragePool-11 states two output sizes for auto_pad SAME (floor in its formula, ceil in
    its text); the newer version's windows are stated as explicit pads instead: the same
    windows, padding counted alike, bit for bit."""
    shape = [1, 2, size, size + 1]
    attributes = {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": auto_pad}
    model = pool_model("AveragePool", 22, shape, count_include_pad=count_include_pad, **attributes)
    assert_converts_bit_for_bit(model, target, random_feeds(shape), f"{attributes} to {target}")
    converted = lowering.lower(model, target_opset=target, ops=[]).graph.node
    pooled = [n for n in converted if n.op_type == "AveragePool"]
    assert len(pooled) == 1 and {a.name for a in pooled[0].attribute} >= {"pads"}
    assert "auto_pad" not in {a.name for a in pooled[0].attribute}


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_same_padding_that_works_out_negative_is_refused_in_our_words(auto_pad):
    """A stride past the kernel can make SAME's padding negative ((o - 1)·s + k < d), which no
    pads attribute states (onnxruntime and onnx.reference even split it apart): refused with the
    adapter's own sentence, not onnx's shape inference error on negative pads."""
    model = pool_model("AveragePool", 19, [1, 1, 5], kernel_shape=[1], strides=[3], auto_pad=auto_pad)
    message = refusal(model, 11)
    assert "its windows differ" in message and "ShapeInferenceError" not in message, message


def test_maxpool_22_indices_are_cut_alike():
    """Both outputs of a MaxPool-22 whose last ceil_mode window starts in the right padding."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 5])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
            helper.make_tensor_value_info("i", TensorProto.INT64, [None] * 4),
        ],
        opset=22,
    )
    model.graph.node[0].attribute.append(helper.make_attribute("pads", [0, 0, 1, 0]))
    for target in (11, 13, 21):
        assert_converts_bit_for_bit(model, target, random_feeds([1, 2, 4, 5]), f"MaxPool-22 to {target}")
        converted = lowering.lower(model, target_opset=target, ops=[])
        slices = [n for n in converted.graph.node if n.op_type == "Slice"]
        assert sorted(n.output[0] for n in slices) == ["i", "y"]  # axis 2 (size 4) cut from 3 windows to 2


@pytest.mark.parametrize("storage_order", [0, 1])
def test_maxpool_22_indices_go_alike_without_ceil_mode(storage_order):
    """Both outputs of a MaxPool-22 (storage_order 0 and 1) whose last ceil_mode window starts in
    the right padding on both axes, where the older version's ceil_mode 0 counts the same windows
    (x [1, 2, 4, 6], kernel 2, strides 2, pads after 1): the pool alone, without ceil_mode, the
    same bits."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
                            pads=[0, 0, 1, 1], storage_order=storage_order)  # fmt: skip
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
               helper.make_tensor_value_info("i", TensorProto.INT64, [None] * 4)]  # fmt: skip
    model = make_model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 6])], outputs, opset=22)
    for target in (11, 13, 21):
        assert_converts_bit_for_bit(model, target, random_feeds([1, 2, 4, 6]), f"MaxPool-22 to {target}")
        [pool] = lowering.lower(model, target_opset=target, ops=[]).graph.node
        assert pool.op_type == "MaxPool" and not any(a.name == "ceil_mode" and a.i for a in pool.attribute)


# -- cases built here ----------------------------------------------------------------------------


def pool_model(op_type: str, opset: int, shape: list, **attributes) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))
    node = helper.make_node(op_type, ["x"], ["y"], **attributes)
    return make_model([node], [x], [y], opset=opset)


def random_feeds(shape: list) -> dict:
    return {"x": np.random.default_rng(3).standard_normal(shape).astype(np.float32)}


# (name, op type, source opset, input shape, attributes, targets it converts to, targets refused)
EXPLICIT = [
    # ceil_mode adds a window that starts inside the input: the same under every version
    (
        "maxpool ceil, last window inside",
        "MaxPool",
        22,
        [1, 2, 6, 6],
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
        (11, 17, 21),
        (),
    ),
    (
        "averagepool ceil, last window inside",
        "AveragePool",
        22,
        [1, 2, 6, 7],
        {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1, "count_include_pad": 1},
        (11, 17, 21),
        (),
    ),
    # ceil_mode adds a window that starts in the right padding: version 22 ignores it, the older
    # pool's is cut by a Slice
    (
        "maxpool ceil, last window in the padding",
        "MaxPool",
        22,
        [1, 1, 4, 4],
        {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1], "ceil_mode": 1},
        (11, 17, 21),
        (),
    ),
    # SAME: AveragePool-11 states floor(size / stride) windows, the later versions ceil(size / stride)
    (
        "averagepool same_upper, size a multiple of the stride",
        "AveragePool",
        22,
        [1, 1, 6, 4],
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        (11, 17, 21),
        (),
    ),
    (
        "averagepool same_lower, size not a multiple (as the pads it works out)",
        "AveragePool",
        22,
        [1, 1, 5, 5],
        {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
        (11, 17, 21),
        (),
    ),
    (
        "maxpool same_lower with dilations",
        "MaxPool",
        22,
        [1, 1, 7, 5],
        {"kernel_shape": [2, 2], "strides": [2, 1], "dilations": [2, 1], "auto_pad": "SAME_LOWER"},
        (11, 17, 21),
        (),
    ),
    # dilations of 1 dropped where the older version lacks the attribute
    (
        "averagepool dilations of 1",
        "AveragePool",
        22,
        [1, 1, 5, 5],
        {"kernel_shape": [2, 2], "dilations": [1, 1]},
        (11, 17, 21),
        (),
    ),
    # LpPool-11 has no ceil_mode: dropped where floor and ceil agree
    (
        "lppool ceil where floor agrees",
        "LpPool",
        18,
        [1, 1, 7, 5],
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "p": 2},
        (11, 17),
        (),
    ),
    (
        "lppool ceil adding a window",
        "LpPool",
        18,
        [1, 1, 6, 5],
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1, "p": 2},
        (),
        (11, 17),
    ),
]


@slow_but_a_sample()
@pytest.mark.parametrize(("name", "op_type", "opset", "shape", "attributes", "converts", "refused"), EXPLICIT)
def test_explicit_cases(name, op_type, opset, shape, attributes, converts, refused):
    model = pool_model(op_type, opset, shape, **attributes)
    for target in converts:
        assert_converts_bit_for_bit(model, target, random_feeds(shape), f"{name} to {target}")
    for target in refused:
        with pytest.raises(lowering.LoweringError, match=rf"{op_type}-\d+ cannot go to opset {target}.*differ"):
            lowering.lower_model(model, target_opset=target, ops=[])


def test_unknown_spatial_dimensions_are_refused():
    model = pool_model("MaxPool", 22, [1, 1, "h", "w"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    with pytest.raises(lowering.LoweringError, match="not known statically"):
        lowering.lower_model(model, target_opset=17, ops=[])


def test_dilations_the_older_version_lacks_are_gathered_and_refused_where_not_exact():
    model = pool_model("AveragePool", 22, [1, 1, 6, 6], kernel_shape=[2, 2], dilations=[2, 1])
    assert_converts_bit_for_bit(model, 17, random_feeds([1, 1, 6, 6]), "averagepool dilations [2, 1] to 17")
    model = pool_model("AveragePool", 22, [1, 1, 6, 6], kernel_shape=[2, 2], dilations=[2, 1], auto_pad="SAME_UPPER")
    with pytest.raises(lowering.LoweringError, match=r"AveragePool-22 cannot go to opset 17.*SAME_UPPER its windows"):
        lowering.lower_model(model, target_opset=17, ops=[])


@pytest.mark.parametrize("shape", [[1, 1, 1], [1, 1, 1, 1], [1, 1, 2]])
def test_dilated_windows_over_a_padded_axis_are_gathered_from_the_padded_length(shape):
    """Windows of a padded axis that happen to read positions 0, 1, ... of the padded tensor are
    still gathered where the padded length is longer (kernel 2, dilation 3, stride 4, pads 1,
    ceil_mode, count_include_pad: one window reading the two pads, onnxruntime's 0)."""
    spatial = len(shape) - 2
    model = pool_model("AveragePool", 22, shape, kernel_shape=[2] * spatial, dilations=[3] * spatial,
                       strides=[4] * spatial, pads=[1] * (2 * spatial), ceil_mode=1, count_include_pad=1)  # fmt: skip
    assert_converts_bit_for_bit(model, 18, random_feeds(shape), f"averagepool over padding, x {shape}, to 18")


CEIL_IN_THE_PADDING = [("AveragePool", 19, {"count_include_pad": 1}), ("AveragePool", 21, {}), ("LpPool", 22, {"p": 2})]


@pytest.mark.parametrize(("op_type", "opset", "extra"), CEIL_IN_THE_PADDING)
def test_dilated_windows_with_a_ceil_window_starting_in_the_right_padding_are_refused(op_type, opset, extra):
    """Before version 22 (and for LpPool) the formula counts a ceil_mode window starting in the
    right padding, which onnxruntime and onnx.reference leave out: which one the model means is
    not agreed, so its windows are not gathered."""
    model = pool_model(op_type, opset, [1, 1, 7], kernel_shape=[2], dilations=[3], strides=[4], pads=[1, 1],
                       ceil_mode=1, **extra)  # fmt: skip
    with pytest.raises(lowering.LoweringError, match="window would start in the right padding"):
        lowering.lower_model(model, target_opset=17, ops=[])


def test_a_plain_pool_with_unknown_dimensions_still_goes():
    model = pool_model("MaxPool", 22, [1, 1, "h", "w"], kernel_shape=[2, 2], strides=[2, 2])
    result = lowering.lower_model(model, target_opset=11, ops=[])
    assert result.model.graph.node[0].op_type == "MaxPool"


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", [TensorProto.UINT8, TensorProto.INT8])
@pytest.mark.parametrize(
    "attributes",
    [{"kernel_shape": [3, 3]}, {"kernel_shape": [2, 3], "strides": [2, 1], "pads": [1, 0, 1, 2]},
     {"kernel_shape": [3, 2], "dilations": [2, 1], "storage_order": 1},
     {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}],
)  # fmt: skip
def test_maxpool_on_8_bit_integers_goes_to_11_in_float(element_type, attributes):
    """MaxPool takes int8 and uint8 from 12: below, Cast(Max(MaxPool(Cast(x, float)), lowest(T)),
    T), exact both ways; the indices (second output) are the same, every 8-bit pattern pooled."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = helper.make_tensor_value_info("x", element_type, [2, 2, 64, 32])
    outputs = [
        helper.make_tensor_value_info("y", element_type, [None] * 4),
        helper.make_tensor_value_info("i", TensorProto.INT64, [None] * 4),
    ]
    model = make_model(
        [helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool", **attributes)], [x], outputs, opset=22
    )
    rng = np.random.default_rng(5)
    every = np.arange(256, dtype=np.uint8).view(dtype)
    feeds = [
        {"x": rng.permutation(np.resize(every, 2 * 2 * 64 * 32)).reshape(2, 2, 64, 32)},
        {"x": rng.choice(every[:3], (2, 2, 64, 32))},
    ]  # fmt: skip  (ties: which index wins)
    for target in (11,):
        result = lowering.lower_model(model, target_opset=target, ops=[])
        onnx.checker.check_model(result.model, full_check=True)
        assert [n.op_type for n in result.model.graph.node if n.op_type != "Constant"] == [
            "Cast",
            "MaxPool",
            "Max",
            "Cast",
        ]
        for fed in feeds:
            assert_same_bits(run_onnxruntime(result.model, fed), run_onnxruntime(model, fed), f"to {target}")


# Pools at opset 11 under every auto_pad, ceil_mode and count_include_pad, along one axis of every
# size from 1 to 8 with kernels and strides 1 to 4 (a stride that does not divide the span
# among them), taken up to 19 and 22.
UP_SWEEP = [
    (op_type, size, kernel, stride, auto_pad, ceil_mode, include_pad)
    for op_type in ("AveragePool", "MaxPool", "LpPool")
    for size in range(1, 9)
    for kernel in range(1, 5)
    for stride in range(1, 5)
    for auto_pad in ("SAME_UPPER", "SAME_LOWER", "VALID")
    for ceil_mode in ((0, 1) if op_type != "LpPool" else (0,))
    for include_pad in ((0, 1) if op_type == "AveragePool" else (0,))
    if not (auto_pad == "VALID" and kernel > size)
]


@pytest.mark.slow
@pytest.mark.parametrize("target", [19, 22])
def test_pools_at_11_under_auto_pad_go_up_with_the_windows_onnxruntime_takes(target):
    """Every pool of UP_SWEEP goes up with the windows and values onnxruntime gives the original
    (AveragePool-11's output-shape formula floors where its auto_pad description and every runtime
    take the ceil: 2 windows of 2 by 2 over 4, VALID, counted by the ceil), or is refused in our
    words where version 22 drops a ceil_mode window starting in the right padding."""
    converted = 0
    for op_type, size, kernel, stride, auto_pad, ceil_mode, include_pad in UP_SWEEP:
        attributes = {"kernel_shape": [kernel], "strides": [stride], "auto_pad": auto_pad}
        attributes |= {"ceil_mode": ceil_mode} if op_type != "LpPool" else {}
        attributes |= {"count_include_pad": include_pad} if op_type == "AveragePool" else {}
        model = pool_model(op_type, 11, [1, 2, size], **attributes)
        where = f"{op_type} {attributes} over {size} to {target}"
        try:
            result = lowering.lower_model(model, target_opset=target, ops=[])
        except lowering.LoweringError as error:
            assert ceil_mode and target == 22 and f"{op_type}-11 cannot go to opset 22" in str(error), where
            assert "its windows differ" in str(error), str(error)
            continue
        onnx.checker.check_model(result.model, full_check=True)
        feeds = random_feeds([1, 2, size])
        # MaxPool runs on edge values too: each model on both feeds through one session
        fed = [feeds, with_edge_values(model, feeds)] if op_type == "MaxPool" else [feeds]
        done = []
        try:
            want, *edges_want = original_outputs_of_each(model, fed, done=done)
        except OnnxruntimeRuntimeException:  # SAME with a stride past the kernel: negative padding
            if done:  # (the edge values failed, not the feeds)
                raise
            assert auto_pad != "VALID" and stride > kernel, where
            continue
        got, *edges_got = run_each(result.model, fed)
        if op_type == "MaxPool":
            assert_same_bits(got, want, where)
            assert_same_bits(edges_got[0], edges_want[0], where)
        else:  # onnxruntime's AveragePool-11 and LpPool-11 kernels sum otherwise (KERNEL_GAPS), and
            # onnx.reference takes no ceil_mode beside auto_pad: the same windows, ulps apart
            assert got[0].shape == want[0].shape, where
            np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7, err_msg=where)
        converted += 1
    assert converted >= len(UP_SWEEP) * 9 // 10, converted


def test_average_pool_11_valid_and_same_are_counted_as_onnxruntime_counts():
    """2 by 2 over 4, VALID: 2 windows (its output-shape formula says floor(3 / 2) = 1); kernel 3,
    stride 2 over 3, SAME_UPPER: 2 windows (floor(3 / 2) = 1), the first padded by 1 after."""
    valid = pool_model("AveragePool", 11, [1, 1, 4, 4], kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID")
    same = pool_model("AveragePool", 11, [1, 1, 3], kernel_shape=[3], strides=[2], auto_pad="SAME_UPPER")
    for model, x, want in (
        (valid, np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4), [[[[2.5, 4.5], [10.5, 12.5]]]]),
        (same, np.array([[[1, 2, 4]]], np.float32), [[[1.5, 3.0]]]),
    ):
        assert np.array_equal(run_onnxruntime(model, {"x": x})[0], np.array(want, np.float32))
        for target in (19, 22):
            converted = lowering.lower(model, target_opset=target, ops=[])
            assert np.array_equal(run_onnxruntime(converted, {"x": x})[0], np.array(want, np.float32)), target


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", ["Conv", "MaxPool", "AveragePool", "LpPool"])
def test_auto_pad_before_11_goes_across_11_where_both_versions_state_it_alike(op_type):
    """SAME before 11 pads so that the output is as long as the input, from 11 to ceil(size /
    stride): alike where every stride is 1, and VALID pads nothing in both; SAME with a stride of
    2 is refused both ways (MaxPool, Conv and AveragePool lowered by their rules instead, as
    onnxruntime answers: Conv bit for bit, measured; AveragePool within its rule's tolerance)."""
    rng = np.random.default_rng(10)
    for auto_pad, strides in (("SAME_UPPER", [1, 1]), ("SAME_LOWER", [1, 1]), ("VALID", [2, 1])):
        attributes = {"kernel_shape": [2, 3], "strides": strides, "auto_pad": auto_pad}
        model = pool_model(op_type, 10, [1, 2, 5, 6], **attributes)
        if op_type == "Conv":
            model.graph.node[0].input.append("w")
            weights = rng.standard_normal((3, 2, 2, 3)).astype(np.float32)
            model.graph.initializer.append(onnx.numpy_helper.from_array(weights, "w"))
        feeds = {"x": rng.standard_normal((1, 2, 5, 6)).astype(np.float32)}
        for target in (11, 13, 22):
            result = lowering.lower_model(model, target_opset=target, ops=[])
            assert any("via auto_pad stated alike" in key for key in result.report.adapted), result.report.adapted
            got, want = run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds)
            if op_type in ("Conv", "MaxPool"):
                assert_same_bits(got, want, f"{op_type} {auto_pad} to {target}")
            else:  # onnxruntime's AveragePool-10 and LpPool-2 kernels sum otherwise (KERNEL_GAPS)
                assert got[0].shape == want[0].shape
                assert_same_bits(run_reference(result.model, feeds), run_reference(model, feeds), f"{op_type}")
        back = lowering.lower(lowering.lower(model, target_opset=22, ops=[]), target_opset=10, ops=[])
        assert_same_bits(run_onnxruntime(back, feeds), run_onnxruntime(model, feeds), f"{op_type} back to 10")
    strided = pool_model(op_type, 10, [1, 2, 5, 6], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")
    if op_type == "Conv":
        strided.graph.node[0].input.append("w")
        strided.graph.initializer.append(onnx.numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w"))
    for moved_to, target in ((strided, 11), (at_opset(strided, 11), 10)):  # up, and down from 11
        if op_type in ("MaxPool", "Conv", "AveragePool"):  # lowered by its rule (rules/maxpool.py, rules/conv.py,
            # rules/averagepool.py) instead, which counts the source version's windows as onnxruntime does
            result = lowering.lower_model(moved_to, target_opset=target, ops=[])
            assert op_type not in {node.op_type for node in result.model.graph.node}, result.report.lines()
            feeds = {"x": rng.standard_normal((1, 2, 5, 6)).astype(np.float32)}
            got, want = run_onnxruntime(result.model, feeds), run_onnxruntime(moved_to, feeds)
            if op_type == "AveragePool":  # (its Conv sums in another order: within the rule's tolerance)
                assert not rule_for("", op_type).tolerance[TensorProto.FLOAT].mismatches(got[0], want[0]).any()
            else:
                assert_same_bits(got, want, f"to {target}")
            continue
        message = refusal(moved_to, target)
        assert (
            "pads by auto_pad SAME_UPPER with strides [2, 2]: before version 11 SAME pads so that the output" in message
        )
        assert f"cannot go to opset {target} ({op_type}-" in message and "restates the output shape" in message


VALID_CEIL = "it takes auto_pad VALID with ceil_mode=1 and strides"


@pytest.mark.parametrize(
    "op_type, opset, shape, attributes, targets",
    [
        # kernel 2, stride 2 over 3: onnxruntime counts 2 windows by ceil_mode, the schema's VALID formula 1
        ("LpPool", 18, [1, 1, 3], {"kernel_shape": [2], "strides": [2]}, [11, 10]),
        # dilated: the windows gathered where dilations cannot be stated (AveragePool-10 and -11 have ceil_mode)
        ("AveragePool", 22, [1, 1, 6], {"kernel_shape": [3], "strides": [3], "dilations": [2]}, [17, 11, 10]),
        ("LpPool", 22, [1, 1, 6], {"kernel_shape": [3], "strides": [3], "dilations": [2]}, [17, 10]),
    ],
)
def test_valid_with_ceil_mode_counted_otherwise_by_onnxruntime_is_refused(op_type, opset, shape, attributes, targets):
    model = pool_model(op_type, opset, shape, auto_pad="VALID", ceil_mode=1, **attributes)
    windows = run_onnxruntime(model, {"x": np.ones(shape, np.float32)})[0].shape[-1]
    assert windows == 2
    for target in targets:
        assert VALID_CEIL in refusal(model, target)


@pytest.mark.parametrize(
    "op_type, opset, shape, attributes, target",
    [
        ("MaxPool", 12, [1, 1, 5, 5], {"kernel_shape": [2, 2], "strides": [1, 1]}, 8),  # stride 1: the same count
        ("MaxPool", 12, [1, 1, 5, 7], {"kernel_shape": [3, 3], "strides": [2, 2]}, 8),  # 2 divides 5 - 3 and 7 - 3
        ("MaxPool", 22, [1, 1, 4, 6], {"kernel_shape": [2, 3], "strides": [2, 3]}, 8),  # 2 | 4 - 2, 3 | 6 - 3
    ],
)
def test_valid_with_ceil_mode_where_both_count_alike_goes_without_it(op_type, opset, shape, attributes, target):
    model = pool_model(op_type, opset, shape, auto_pad="VALID", ceil_mode=1, **attributes)
    assert_converts_bit_for_bit(model, target, random_feeds(shape), f"{op_type} VALID ceil_mode to {target}")


def test_pools_the_older_versions_take_with_attributes_at_their_defaults_go_below_11():
    """Exporters' no-op attributes (ceil_mode=0, dilations of 1) and 8-bit MaxPools go down to 7-10;
    AveragePool-19 VALID, kernel 2, stride 2 over 6 counts 3 windows at 10 as at 19 (AveragePool-10
    states the ceil formulas)."""
    noop = pool_model("AveragePool", 13, [1, 1, 5, 5], kernel_shape=[2, 2], ceil_mode=0)
    assert_converts_bit_for_bit(noop, 7, random_feeds([1, 1, 5, 5]), "AveragePool no-op attributes to 7")
    maxpool = pool_model("MaxPool", 12, [1, 1, 5, 5], kernel_shape=[2, 2], dilations=[1, 1], ceil_mode=0)
    assert_converts_bit_for_bit(maxpool, 9, random_feeds([1, 1, 5, 5]), "MaxPool no-op attributes to 9")
    valid = pool_model("AveragePool", 19, [1, 1, 6, 6], kernel_shape=[2, 2], strides=[2, 2], auto_pad="VALID")
    assert_converts_bit_for_bit(valid, 10, random_feeds([1, 1, 6, 6]), "AveragePool-19 VALID to 10")
    x = helper.make_tensor_value_info("x", TensorProto.INT8, [1, 1, 5, 5])
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])
    eight_bit = make_model([node], [x], [helper.make_tensor_value_info("y", TensorProto.INT8, [None] * 4)], opset=12)
    feeds = {"x": np.arange(-12, 13, dtype=np.int8).reshape(1, 1, 5, 5)}
    for target in (10, 8):
        converted = lowering.lower(eight_bit, target_opset=target, ops=[])
        assert_same_bits(run_onnxruntime(converted, feeds), run_onnxruntime(eight_bit, feeds), f"int8 to {target}")


def test_windows_that_cannot_be_gathered_are_refused_in_our_words():
    """No window along an axis (kernel 3 dilated by 2 over 4, VALID): a LoweringError naming why.
    Gathering below opset 9, where Constant holds no int64, cannot be done: there a dilated
    AveragePool goes as its rule writes it (a dilated Conv of ones over the counts, within the
    rule's tolerance, rules/averagepool.py); from 9 its windows gathered, bit for bit."""
    empty = pool_model("LpPool", 18, [1, 2, 3, 4], kernel_shape=[1, 3], dilations=[2, 2], auto_pad="VALID")
    assert "along spatial axis 1 (size 4) it has no window to gather" in refusal(empty, 11)
    dilated = pool_model("AveragePool", 22, [1, 1, 6, 6], kernel_shape=[2, 2], dilations=[2, 2], auto_pad="VALID")
    feeds = random_feeds([1, 1, 6, 6])
    for target in (7, 8):
        converted = lowering.lower(dilated, target_opset=target, ops=[])
        assert {"Conv", "Div"} <= {node.op_type for node in converted.graph.node}
        [got], [want] = run_onnxruntime(converted, feeds), run_onnxruntime(dilated, feeds)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True), target
    assert_converts_bit_for_bit(dilated, 9, feeds, "dilated AveragePool to 9")


def _pools_and_resizes_in_a_branch_and_a_function(element_type: int) -> onnx.ModelProto:
    """Opset 11: MaxPool-11 under SAME and Resize-11 (empty roi, scales) in both branches of an If
    and in a local function (its scales and roi Constants)."""

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [
                helper.make_node("MaxPool", ["x"], [f"{name}_p"], kernel_shape=[2, 2], auto_pad="SAME_UPPER"),
                helper.make_node(
                    "Resize",
                    [f"{name}_p", "roi", "scales"],
                    [f"{name}_y"],
                    mode="nearest",
                    coordinate_transformation_mode="asymmetric",
                    nearest_mode="floor",
                ),
            ],  # fmt: skip
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", element_type, ["a", "b", "c", "d"])],
        )

    def constant(name: str, values: list) -> onnx.NodeProto:
        return helper.make_node(
            "Constant", [], [name], value=onnx.numpy_helper.from_array(np.array(values, np.float32))
        )

    function = helper.make_function(
        "local", "F", ["a"], ["b"],
        [constant("r", []), constant("s", [1, 1, 2, 1.5]),
         helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[3, 1], auto_pad="SAME_LOWER"),
         helper.make_node("Resize", ["p", "r", "s"], ["b"], mode="nearest")],
        [helper.make_opsetid("", 11)],
    )  # fmt: skip
    unknown = ["a", "b", "c", "d"]
    graph = helper.make_graph(
        [
            helper.make_node("If", ["c"], ["y"], then_branch=branch("t"), else_branch=branch("e")),
            helper.make_node("F", ["x"], ["z"], domain="local"),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", element_type, [1, 2, 4, 5]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(name, element_type, unknown) for name in ("y", "z")],
        [onnx.numpy_helper.from_array(np.zeros(0, np.float32), "roi"),
         onnx.numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )  # fmt: skip
    imports = [helper.make_opsetid("", 11), helper.make_opsetid("local", 1)]
    return helper.make_model(graph, opset_imports=imports, functions=[function], ir_version=7)


@pytest.mark.slow
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_pools_and_resizes_go_up_inside_branches_and_local_functions(element_type):
    model = _pools_and_resizes_in_a_branch_and_a_function(element_type)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    for target in (13, 19, 22):
        result = lowering.lower_model(model, target_opset=target, ops=[])
        onnx.checker.check_model(result.model, full_check=True)
        adapted = dict(result.report.adapted)
        assert sum(count for key, count in adapted.items() if key.startswith("MaxPool-11")) == 3, adapted
        assert sum(count for key, count in adapted.items() if key.startswith("Resize-11")) == 3, adapted
        for taken in (True, False):
            feeds = {"x": np.random.default_rng(4).standard_normal((1, 2, 4, 5)).astype(dtype), "c": np.array(taken)}
            for fed in (feeds, with_edge_values(model, feeds)):
                want, got = run_onnxruntime(model, fed), run_onnxruntime(result.model, fed)
                assert_same_bits(got, want, f"to {target}, branch {taken}")
