"""Col2Im-18, an op without a function body, lowered by its own rule (rules/col2im.py) when
converting below 18: every ONNX backend case at 11, 13 and 17, random and edge values bit for
bit against onnxruntime's kernel and the rule's numpy reference (1-D, 2-D and 3-D images,
strides, dilations, pads; image_shape and block_shape constants or given at run time), the
other types Col2Im takes, and what is refused and why."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_values,
    make_model,
    op_type_set,
    runs_in_onnxruntime,
    slow_but_a_sample,  # noqa: E402
)
from version_cases import fed_data_sets, node_cases, sweep_case

import lowering
from lowering import schemas
from lowering.registry import rule_for
from lowering.samples import sample_values
from lowering.verification.runtime import run_onnxruntime

BACKEND_CASES = {case.name: case for case in node_cases() if case.name.startswith("test_col2im")}
TARGETS = (11, 13, 17)


def reference(x: np.ndarray, image, block, **attributes) -> np.ndarray:
    return rule_for("", "Col2Im").reference(x, np.array(image), np.array(block), **attributes)


# -- every backend case, converted to 11, 13 and 17 ----------------------------------------------


def test_backend_cases_are_found():
    assert len(BACKEND_CASES) >= 5


PAIRS = [(target, name) for name in sorted(BACKEND_CASES) for target in TARGETS]


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_backend_case_converted(target, name):
    """image_shape and block_shape are graph inputs in these cases: the Loop form."""
    case = BACKEND_CASES[name]
    result = lowering.lower_model(case.model, target_opset=target, ops=[])
    assert result.report.complete, result.report.lines()
    assert dict(result.report.rewritten) == {"Col2Im-18": 1}
    assert [entry.version for entry in result.model.opset_import if entry.domain == ""] == [target]
    onnx.checker.check_model(result.model, full_check=True)
    assert "Col2Im" not in op_type_set(result.model) and "Loop" in op_type_set(result.model)
    for feeds, expected in fed_data_sets(case):
        (got,) = run_onnxruntime(result.model, feeds)
        np.testing.assert_allclose(got, expected[0], rtol=1e-3, atol=1e-7)
        assert_same_bits(got, runs_in_onnxruntime(case.model, feeds)[0], f"{name} against onnxruntime's Col2Im")
        assert_same_bits(got, reference(*feeds.values(), **_attributes(case.model.graph.node[0])), name)


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), PAIRS, ids=[f"{n}-to{t}" for t, n in PAIRS])
def test_corpus_pair_converts(target, name):
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong


def _attributes(node: onnx.NodeProto) -> dict:
    return {attribute.name: list(helper.get_attribute_value(attribute)) for attribute in node.attribute}


# -- random and edge values, bit for bit --------------------------------------------------------

# (image_shape, block_shape, attributes, channels): 1-D, 2-D and 3-D images.
FORMS = [
    ([5, 5], [2, 3], {}, 3),
    ([7, 6], [3, 2], {"strides": [2, 3]}, 2),
    ([7, 6], [3, 2], {"pads": [1, 2, 0, 1]}, 2),
    ([9, 8], [2, 3], {"dilations": [2, 3]}, 2),
    ([9, 8], [2, 3], {"dilations": [2, 1], "strides": [2, 2], "pads": [1, 0, 2, 1]}, 3),
    ([6, 5], [3, 3], {"strides": [3, 2], "pads": [2, 2, 2, 1]}, 1),
    ([5, 5], [1, 1], {}, 2),
    ([4, 4], [4, 4], {}, 2),
    ([6], [2], {}, 3),
    ([9], [3], {"strides": [2]}, 2),
    ([9], [3], {"dilations": [2], "pads": [1, 1]}, 2),
    ([4, 5, 3], [2, 2, 2], {}, 2),
    ([6, 5, 4], [2, 2, 2], {"strides": [2, 1, 2]}, 2),
    ([6, 5, 4], [2, 3, 2], {"dilations": [2, 1, 1], "pads": [1, 0, 0, 0, 1, 1]}, 1),
]


def block_counts(image, block, attributes) -> list[int]:
    rank = len(image)
    dilations = attributes.get("dilations", [1] * rank)
    strides = attributes.get("strides", [1] * rank)
    pads = attributes.get("pads", [0] * 2 * rank)
    return [
        (image[d] + pads[d] + pads[rank + d] - (dilations[d] * (block[d] - 1) + 1)) // strides[d] + 1
        for d in range(rank)
    ]


def col2im_model(element_type, image, block, attributes, channels, *, constant: bool, batch=2, opset=18):
    """``y = Col2Im(x, image_shape, block_shape)``: the shapes initializers, or graph inputs."""
    x_shape = [batch, channels * int(np.prod(block)), int(np.prod(block_counts(image, block, attributes)))]
    node = helper.make_node("Col2Im", ["x", "image_shape", "block_shape"], ["y"], name="col2im_node", **attributes)
    shapes = [
        helper.make_tensor("image_shape", TensorProto.INT64, [len(image)], image),
        helper.make_tensor("block_shape", TensorProto.INT64, [len(block)], block),
    ]
    inputs = [helper.make_tensor_value_info("x", element_type, x_shape)]
    if not constant:
        inputs += [helper.make_tensor_value_info(t.name, TensorProto.INT64, [len(image)]) for t in shapes]
    outputs = [helper.make_tensor_value_info("y", element_type, [batch, channels, *image])]
    model = make_model([node], inputs, outputs, opset=opset, initializer=shapes if constant else [])
    feeds = {} if constant else {"image_shape": np.array(image, np.int64), "block_shape": np.array(block, np.int64)}
    return model, x_shape, feeds


def edge_samples(element_type: int, shape, rng) -> np.ndarray:
    """Standard normal values with a fifth of them edge values of the type (NaN payloads, ±inf,
    ±0, subnormals, extremes), so that NaNs meet numbers and NaNs, and infinities cancel."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
        values.reshape(-1)[::5] = info.max
        return values
    values = (rng.standard_normal(shape) * 4).astype(np.float32).astype(dtype)
    edges = sample_values(element_type, random_count=0)
    mask = rng.random(shape) < 0.2
    values[mask] = rng.choice(edges, size=int(mask.sum()))
    return values


# onnxruntime's kernel on images of other than 2 axes takes the dilated block for the block
# (right for one channel only).
def onnxruntime_is_right(image, attributes) -> bool:
    return len(image) == 2 or all(d == 1 for d in attributes.get("dilations", [1]))


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS, ids=[f"{f[0]}-{f[1]}-{f[2]}" for f in FORMS])
def test_float_bit_for_bit_against_onnxruntime_and_the_reference(form):
    image, block, attributes, channels = form
    rng = np.random.default_rng(len(FORMS) + sum(image))
    for constant in (True, False):
        original, x_shape, shape_feeds = col2im_model(TensorProto.FLOAT, image, block, attributes, channels,
                                                      constant=constant)  # fmt: skip
        for target in (11, 17):
            lowered = lowering.lower(original, target_opset=target, ops=[])
            onnx.checker.check_model(lowered, full_check=True)
            assert "Col2Im" not in op_type_set(lowered) and ("Loop" in op_type_set(lowered)) != constant
            for _ in range(3):
                feeds = {"x": edge_samples(TensorProto.FLOAT, x_shape, rng), **shape_feeds}
                (got,) = run_onnxruntime(lowered, feeds)
                where = f"constant={constant} to {target}"
                assert_same_values(got, reference(feeds["x"], image, block, **attributes), where)
                if onnxruntime_is_right(image, attributes):
                    (native,) = run_onnxruntime(original, feeds)
                    assert_same_values(got, native, f"{where} against onnxruntime's Col2Im")


def test_onnxruntime_kernel_is_wrong_on_dilated_1d_images_of_two_channels():
    """Why the rule follows the definition, not onnxruntime, there (re-check on an upgrade)."""
    image, block, attributes, channels = [9], [3], {"dilations": [2]}, 2
    original, x_shape, _ = col2im_model(TensorProto.FLOAT, image, block, attributes, channels, constant=True)
    x = np.arange(np.prod(x_shape), dtype=np.float32).reshape(x_shape) + 1
    (native,) = run_onnxruntime(original, {"x": x})
    assert not np.array_equal(native, reference(x, image, block, **attributes))
    from onnx.reference import ReferenceEvaluator

    assert np.array_equal(ReferenceEvaluator(original).run(None, {"x": x})[0], reference(x, image, block, **attributes))


OTHER_TYPES = [TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8, TensorProto.UINT8,
               TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32, TensorProto.UINT32, TensorProto.INT64,
               TensorProto.UINT64]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("element_type", OTHER_TYPES, ids=[schemas.type_name(t) for t in OTHER_TYPES])
def test_other_types_bit_for_bit_against_the_reference(element_type):
    """onnxruntime runs Col2Im on float only (float16 by its float32 kernel between Casts, which
    the reference follows): the rule's numpy reference is the oracle, and onnx.reference agrees
    with it but for float16 (which it adds in float16) and NaN payloads."""
    rng = np.random.default_rng(element_type)
    for image, block, attributes, channels in [FORMS[4], FORMS[10], FORMS[13]]:
        for constant in (True, False):
            original, x_shape, shape_feeds = col2im_model(element_type, image, block, attributes, channels,
                                                          constant=constant)  # fmt: skip
            for target in (11, 13, 17):
                if element_type == TensorProto.BFLOAT16 and target < 13:
                    continue
                lowered = lowering.lower(original, target_opset=target, ops=[])
                onnx.checker.check_model(lowered, full_check=True)
                feeds = {"x": edge_samples(element_type, x_shape, rng), **shape_feeds}
                (got,) = run_onnxruntime(lowered, feeds)
                where = f"{image} {attributes} constant={constant} to {target}"
                assert_same_values(got, reference(feeds["x"], image, block, **attributes), where)
                if element_type == TensorProto.FLOAT16 and onnxruntime_is_right(image, attributes):
                    native = runs_in_onnxruntime(original, feeds)
                    if native is not None:
                        assert_same_values(got, native[0], f"{where} against onnxruntime's float16 Col2Im")


def test_static_form_at_opset_9_takes_pads_and_slices_as_attributes():
    image, block, attributes, channels = FORMS[4]
    original, x_shape, _ = col2im_model(TensorProto.FLOAT, image, block, attributes, channels, constant=True)
    lowered = lowering.lower(original, target_opset=9, ops=[])
    onnx.checker.check_model(lowered, full_check=True)
    assert {"Pad", "Slice", "Add", "Gather"} <= op_type_set(lowered)
    x = edge_samples(TensorProto.FLOAT, x_shape, np.random.default_rng(9))
    assert_same_values(run_onnxruntime(lowered, {"x": x})[0], run_onnxruntime(original, {"x": x})[0])


def test_static_form_is_one_add_per_kernel_offset():
    image, block, attributes, channels = FORMS[1]
    original, _, _ = col2im_model(TensorProto.FLOAT, image, block, attributes, channels, constant=True)
    lowered = lowering.lower(original, target_opset=11, ops=[])
    counts = {op: sum(node.op_type == op for node in lowered.graph.node) for op in ("Sum", "Add", "Pad", "Gather")}
    assert counts == {"Sum": 1, "Add": 5, "Pad": 6, "Gather": 6}, counts  # the first slab added to +0 by Sum


# -- refusals -------------------------------------------------------------------------------------


def _refusal(original, target=11) -> str:
    with pytest.raises(lowering.LoweringError, match=f"Col2Im-18 cannot be expressed at opset {target}") as raised:
        lowering.lower(original, target_opset=target, ops=[])
    return str(raised.value)


def test_more_kernel_offsets_than_the_rule_unrolls_are_refused():
    original, _, _ = col2im_model(TensorProto.FLOAT, [9, 20], [5, 13], {}, 1, constant=True)
    assert "the block has 65 kernel offsets, more than the 64 this rule unrolls" in _refusal(original)


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ("x_rank", "the rank of the input is unknown"),
        ("channels", "the input's second dimension (channels times the block's size) is unknown"),
        ("blocks", "the input holds 7 blocks, not the 16 the image takes"),
        ("bool", "Col2Im adds its blocks, and Add or Pad does not run on bool at opset 11"),
        ("fit", "the block [6, 2] does not fit in the padded image [5, 5]"),
    ],
)
def test_refusals_of_the_unrolled_form(change, reason):
    element_type = TensorProto.BOOL if change == "bool" else TensorProto.FLOAT
    block = [6, 2] if change == "fit" else [2, 2]
    original, _, _ = col2im_model(element_type, [5, 5], block if change != "fit" else [2, 2], {}, 1, constant=True)
    graph = original.graph
    x_type = graph.input[0].type.tensor_type
    if change == "x_rank":  # x made by a Reshape to a shape of unknown length: its rank is unknown
        graph.input[0].name = "data"
        graph.input.append(helper.make_tensor_value_info("target", TensorProto.INT64, ["K"]))
        graph.node.insert(0, helper.make_node("Reshape", ["data", "target"], ["x"]))
    elif change == "channels":
        x_type.shape.dim[1].dim_param = "CB"
    elif change == "blocks":
        x_type.shape.dim[2].dim_value = 7
    elif change == "fit":
        graph.initializer[1].CopyFrom(helper.make_tensor("block_shape", TensorProto.INT64, [2], block))
    assert reason in _refusal(original)


def test_refusals_of_the_loop_form():
    original, _, _ = col2im_model(TensorProto.FLOAT, [5, 5], [2, 2], {}, 1, constant=False)
    original.graph.input[1].type.tensor_type.shape.dim[0].dim_param = "D"
    assert "image_shape or block_shape is no constant and its length (the image's rank) is unknown" in _refusal(
        original
    )
    original, _, _ = col2im_model(TensorProto.FLOAT, [5, 5], [2, 2], {"strides": [1, 1, 1]}, 1, constant=False)
    assert "dilations, strides and pads must hold 2, 2 and 4 values for an image of 2 axes" in _refusal(original)
    original, _, _ = col2im_model(TensorProto.FLOAT, [5, 5], [2, 2], {}, 1, constant=False)
    assert "image_shape or block_shape is no constant, and Pad takes its pads as an attribute at opset 10" in (
        _refusal(original, 10)
    )


def test_below_opset_9_is_refused():
    original, _, _ = col2im_model(TensorProto.FLOAT, [5, 5], [2, 2], {}, 1, constant=True)
    assert "the rule writes ops as they are from opset 9, not 8" in _refusal(original, 8)
