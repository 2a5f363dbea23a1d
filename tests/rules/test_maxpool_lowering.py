"""MaxPool lowered by its rule (rules/maxpool.py): the backend cases against their expected
outputs; random inputs (NaN, ±inf, ties; pads, strides, dilations, ceil_mode, auto_pad, 1-D to
3-D; batch and channels given or left to run time) bit for bit against onnxruntime's kernel where
it pools element by element (dilations, the Indices output, storage_order), and, for a plain
MaxPool, against that kernel (the same node giving Indices too), with onnxruntime's vectorized
answer pinned where it differs; inside If branches and local functions; the refusals."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_bits, make_model, nested_forms, op_type_set, slow_but_a_sample
from version_cases import fed_data_sets, node_cases_of

import lowering
from lowering import floats
from lowering.registry import rule_for
from lowering.verification.runtime import run_onnxruntime

BACKEND_CASES = node_cases_of("MaxPool")
TYPES = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.UINT8)


def maxpool_model(element_type, shape, indices: bool = False, opset: int = 12, batch_known: bool = True, **attributes):
    outputs = ["y", "indices"] if indices else ["y"]
    node = helper.make_node("MaxPool", ["x"], outputs, name="pool", **attributes)
    dims = list(shape) if batch_known else ["n", "c", *shape[2:]]
    x = helper.make_tensor_value_info("x", element_type, dims)
    declared = [
        helper.make_tensor_value_info(name, element_type if name == "y" else TensorProto.INT64,
                                      [f"{name}{k}" for k in range(len(shape))])
        for name in outputs
    ]  # fmt: skip
    return make_model([node], [x], declared, opset=opset)


def lowered(model: onnx.ModelProto) -> onnx.ModelProto:
    result = lowering.lower_model(model, ops=["MaxPool"])
    assert result.report.complete, result.report.lines()
    assert "MaxPool" not in op_type_set(result.model)
    onnx.checker.check_model(result.model, full_check=True)
    return result.model


def edgy(element_type, shape, rng: np.random.Generator) -> np.ndarray:
    """Few values, so that they tie; NaN (two payloads), ±inf among floats."""
    dtype = floats.numpy_dtype(element_type)
    signed = np.dtype(dtype).kind != "u"
    values = rng.integers(-3 if signed else 0, 4 if signed else 7, shape).astype(np.float32)
    if floats.is_float(element_type):
        draw = rng.random(shape)
        values[draw < 0.1] = np.nan
        values[(draw >= 0.1) & (draw < 0.15)] = np.frombuffer(np.uint32(0xFFC00123).tobytes(), np.float32)[0]
        values[(draw >= 0.15) & (draw < 0.25)] = -np.inf
        values[(draw >= 0.25) & (draw < 0.3)] = np.inf
    return values.astype(dtype)


# (spatial shape, attributes)
FORMS = [
    ((6, 6), {"kernel_shape": [2, 2], "dilations": [2, 2]}),
    ((7, 6), {"kernel_shape": [3, 2], "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 1, 1]}),
    ((6, 6), {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [1, 1, 0, 1]}),
    ((7, 7), {"kernel_shape": [3, 3], "strides": [2, 2], "dilations": [2, 1], "pads": [2, 1, 2, 1], "ceil_mode": 1}),
    ((6, 5), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((6, 5), {"kernel_shape": [2, 3], "strides": [2, 1], "auto_pad": "SAME_LOWER"}),
    ((5,), {"kernel_shape": [2], "pads": [1, 1]}),
    ((7, 6), {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "VALID", "ceil_mode": 1}),
    ((6, 7), {"kernel_shape": [2, 2], "strides": [3, 2], "pads": [1, 0, 1, 1], "ceil_mode": 1}),
    ((4, 5, 4), {"kernel_shape": [2, 2, 2], "strides": [1, 2, 1], "dilations": [1, 1, 2], "pads": [1, 0, 0, 0, 1, 1]}),
]


def _ids(forms):
    return [f"{shape}-{attributes}" for shape, attributes in forms]


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 19


@pytest.mark.parametrize("name", sorted(BACKEND_CASES))
def test_backend_case_lowered(name):
    case = BACKEND_CASES[name]
    model = lowered(case.model)
    for feeds, expected in fed_data_sets(case):
        for got, want in zip(run_onnxruntime(model, feeds), expected, strict=True):
            assert_same_bits(got, want, name)


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
@pytest.mark.parametrize("element_type", TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_with_indices_against_onnxruntime(form, element_type, storage_order):
    """The Indices output makes onnxruntime pool element by element: values and indices bit for bit."""
    spatial, attributes = form
    shape = (2, 3, *spatial)
    rng = np.random.default_rng(8)
    for batch_known in (True, False):
        original = maxpool_model(element_type, shape, True, batch_known=batch_known, storage_order=storage_order,
                                 **attributes)  # fmt: skip
        model = lowered(original)
        for draw in range(3):
            feeds = {"x": edgy(element_type, shape, rng)}
            for got, want in zip(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), strict=True):
                assert_same_bits(got, want, f"draw {draw}")


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("form", FORMS, ids=_ids(FORMS))
@pytest.mark.parametrize("element_type", TYPES, ids=lambda t: TensorProto.DataType.Name(t))
def test_plain_maxpool_as_the_element_by_element_kernel(form, element_type):
    """Y alone: the same values as onnxruntime's element-by-element kernel (the node giving
    Indices too), and as its vectorized kernel on inputs free of NaN and -inf."""
    spatial, attributes = form
    shape = (2, 3, *spatial)
    original = maxpool_model(element_type, shape, **attributes)
    with_indices = maxpool_model(element_type, shape, True, **attributes)
    model = lowered(original)
    rng = np.random.default_rng(9)
    for draw in range(3):
        x = edgy(element_type, shape, rng)
        got = run_onnxruntime(model, {"x": x})[0]
        assert_same_bits(got, run_onnxruntime(with_indices, {"x": x})[0], f"draw {draw}")
        finite = np.where(np.isnan(x.astype(np.float64)) | np.isneginf(x.astype(np.float64)), 1, x).astype(x.dtype)
        assert_same_bits(run_onnxruntime(model, {"x": finite})[0], run_onnxruntime(original, {"x": finite})[0], "")


def test_onnxruntime_s_vectorized_kernel_answers_nan_by_place():
    """Why a plain MaxPool follows the element-by-element kernel: the vectorized one answers a
    NaN by where it stands and a window of -inf as float's lowest (seen here, so that a change is
    noticed), which no rewrite follows."""
    rows = np.array([[np.nan, 1, 2, 0], [1, 2, 0, np.nan], [-np.inf] * 4], np.float32).reshape(3, 1, 1, 4)
    plain = run_onnxruntime(maxpool_model(TensorProto.FLOAT, (3, 1, 1, 4), kernel_shape=[1, 4]), {"x": rows})[0]
    assert plain.ravel()[0] == 2 and np.isnan(plain.ravel()[1]) and plain.ravel()[2] == np.finfo(np.float32).min
    model = lowered(maxpool_model(TensorProto.FLOAT, (3, 1, 1, 4), kernel_shape=[1, 4]))
    ours = run_onnxruntime(model, {"x": rows})[0].ravel()
    assert np.isnan(ours[0]) and ours[1] == 2 and ours[2] == -np.inf


def test_bfloat16_against_the_float_kernel():
    """MaxPool-22 takes bfloat16, which onnxruntime's kernel does not: every bfloat16 is a float
    exactly, so the float kernel's Indices (element by element) are the answer, and Y X's own bits there."""
    spatial, attributes = FORMS[1]
    shape = (2, 3, *spatial)
    model = lowered(maxpool_model(TensorProto.BFLOAT16, shape, True, opset=22, **attributes))
    as_float = maxpool_model(TensorProto.FLOAT, shape, True, opset=22, **attributes)
    rng = np.random.default_rng(22)
    for draw in range(3):
        x = edgy(TensorProto.BFLOAT16, shape, rng)
        y, indices = run_onnxruntime(model, {"x": x})
        _, want = run_onnxruntime(as_float, {"x": x.astype(np.float32)})
        assert_same_bits(indices, want, f"draw {draw}")
        assert_same_bits(y, x.reshape(-1)[want], f"draw {draw}")


def test_versions_1_to_22():
    """MaxPool-1 (no Indices), 8, 10, 11, 12 and 22 of one window form, each at its own opset."""
    x = edgy(TensorProto.FLOAT, (1, 2, 5, 5), np.random.default_rng(1))
    for opset in (7, 8, 10, 11, 12, 22):
        indices = opset >= 8
        original = maxpool_model(TensorProto.FLOAT, (1, 2, 5, 5), indices, opset=opset, kernel_shape=[2, 2],
                                 strides=[2, 1], pads=[1, 0, 0, 1])  # fmt: skip
        model = lowering.lower_model(original, ops=["MaxPool"], target_opset=max(opset, 9)).model
        assert "MaxPool" not in op_type_set(model), opset
        want = run_onnxruntime(maxpool_model(TensorProto.FLOAT, (1, 2, 5, 5), True, kernel_shape=[2, 2],
                                             strides=[2, 1], pads=[1, 0, 0, 1]), {"x": x})  # fmt: skip
        for got, expected in zip(run_onnxruntime(model, {"x": x}), want, strict=False):
            assert_same_bits(got, expected, f"opset {opset}")


def test_writes_only_the_ops_it_names():
    original = maxpool_model(TensorProto.FLOAT16, (2, 3, 6, 6), True, batch_known=False, storage_order=1,
                             kernel_shape=[2, 2], dilations=[2, 1])  # fmt: skip
    written = {node.op_type for node in lowered(original).graph.node}
    emits = set(rule_for("", "MaxPool").emits)
    assert written <= emits, sorted(written - emits)


@pytest.mark.parametrize("form", [FORMS[1], FORMS[7]], ids=_ids([FORMS[1], FORMS[7]]))
def test_inside_if_branches_and_local_functions(form):
    spatial, attributes = form
    shape = (1, 2, *spatial)
    original = maxpool_model(TensorProto.FLOAT, shape, True, **attributes)
    rng = np.random.default_rng(3)
    for label, nested in nested_forms(original).items():
        model = lowered(nested)
        feeds = {"x": edgy(TensorProto.FLOAT, shape, rng)}
        want = run_onnxruntime(original, feeds)
        for branch in (True, False):
            got = run_onnxruntime(model, {**feeds, "branch": np.array(branch)})
            for g, w in zip(got, want, strict=True):
                assert_same_bits(g, w, label)


# -- refusals ---------------------------------------------------------------------------------------


def refused(model: onnx.ModelProto) -> str:
    result = lowering.lower_model(model, ops=["MaxPool"])
    assert not result.report.complete
    return "\n".join(result.report.lines())


def test_unknown_spatial_sizes_are_refused():
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, "h", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, "a", 3])
    assert "spatial sizes are unknown" in refused(make_model([node], [x], [y], opset=12))


def test_no_elements_in_batch_and_channels_at_run_time():
    """N and C of 0 given at run time: empty outputs, as the kernel's."""
    original = maxpool_model(TensorProto.FLOAT, (2, 3, 5, 5), True, batch_known=False, kernel_shape=[2, 2])
    model = lowered(original)
    for shape in ((0, 0, 5, 5), (0, 3, 5, 5)):
        feeds = {"x": np.zeros(shape, np.float32)}
        for got, want in zip(run_onnxruntime(model, feeds), run_onnxruntime(original, feeds), strict=True):
            assert_same_bits(got, want, f"{shape}")


@pytest.mark.parametrize("opset", [12, 22])
def test_windows_counted_apart_by_onnxruntime_are_refused(opset):
    """SAME with dilations (onnxruntime pads as if the kernel were not dilated) and VALID with
    ceil_mode where the stride does not divide the span (the schema counts one window fewer)."""
    same = maxpool_model(TensorProto.FLOAT, (1, 1, 4), True, opset=opset, kernel_shape=[3], dilations=[2],
                         auto_pad="SAME_UPPER")  # fmt: skip
    assert "onnxruntime pads as if the kernel were not dilated" in refused(same)
    valid = maxpool_model(TensorProto.FLOAT, (1, 1, 5), True, opset=opset, kernel_shape=[2], strides=[2],
                          auto_pad="VALID", ceil_mode=1)  # fmt: skip
    assert "count its windows otherwise where the stride does not divide the span" in refused(valid)


def test_a_pad_as_long_as_the_kernel_is_refused():
    model = maxpool_model(TensorProto.FLOAT, (1, 1, 6), kernel_shape=[2], dilations=[3], pads=[2, 0])
    assert "which onnxruntime refuses" in refused(model)


def test_a_window_wholly_in_the_padding_is_refused():
    model = maxpool_model(TensorProto.FLOAT, (1, 1, 3), kernel_shape=[2], strides=[4], ceil_mode=1, opset=12)
    assert "lies wholly in the padding" in refused(model)


def test_too_many_offsets_are_refused():
    model = maxpool_model(TensorProto.FLOAT, (1, 1, 20, 20), kernel_shape=[17, 17])
    assert "289 offsets, more than the 256" in refused(model)
