"""MatMulInteger and ConvInteger lowered to float32 MatMul and Conv of exact chunks
(rules/integer_products.py): every pair of 8-bit types, zero points absent, constant and given
at run time (per row, per column, per output channel), sums of a few terms to thousands (one
chunk to many), batched and 1-D matrices, pads, strides, auto_pad, groups and 1-D to 3-D
kernels, bit for bit against the rule's int64 reference and onnxruntime's kernel (but for two
pairs of types it computes otherwise, below); what is declined and why. The backend cases are
checked against their expected outputs by tests/test_backend_node_cases.py."""

from __future__ import annotations

import itertools

import numpy as np
import onnx
import pytest
from lowering.rules.integer_products import MOST_CHUNKS, REQUANTIZED_TOLERANCE
from onnx import TensorProto, helper
from support import assert_same_bits, lowered_wholly, make_model, nested_forms, runs_in_onnxruntime
from version_cases import node_cases

import lowering
from lowering import floats
from lowering.registry import rule_for

U8, S8 = TensorProto.UINT8, TensorProto.INT8
PAIRS = list(itertools.product([U8, S8], repeat=2))
# Pairs of types on which onnxruntime's kernel gives other sums than the integer ones (measured
# with onnxruntime 1.32 on x86: MatMulInteger of uint8 by int8 gives 29127 for 40493, as if pairs
# of products were added in int16, as its QLinearMatMul and QLinearConv do; ConvInteger of int8 by
# uint8). onnxruntime's quantizer offers reduce_range, 7-bit weights, against it "on non-VNNI CPUs".
ONNXRUNTIME_OTHERWISE = {("MatMulInteger", U8, S8, "any"), ("ConvInteger", S8, U8, "any")}


def random_8_bit(element_type, shape, rng):
    dtype = np.uint8 if element_type == U8 else np.int8
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def zero_points(kind, first_type, second_type, first_shape, second_shape, rng):
    """(first, second) zero points: None, or arrays; constants where ``kind`` is "constant"."""
    if kind == "absent":
        return None, None
    return random_8_bit(first_type, first_shape, rng), random_8_bit(second_type, second_shape, rng)


def integer_model(op_type, first, second, zeros, kind, output_rank, **attributes):
    """op_type(first, second, zeros...): (name, type, array) inputs; the zero points initializers
    where ``kind`` is "constant", else inputs; the second (weights) an initializer for Conv."""
    inputs, initializers, names = [], [], []
    for index, (name, element_type, array) in enumerate([first, second, *zeros]):
        if array is None:
            continue
        names.append(name)
        constant = (kind == "constant" and index >= 2) or (op_type == "ConvInteger" and index == 1)
        if constant:
            initializers.append(onnx.numpy_helper.from_array(array, name))
        else:
            inputs.append(helper.make_tensor_value_info(name, element_type, list(array.shape)))
    node = helper.make_node(op_type, names, ["y"], name="product", **attributes)
    output = helper.make_tensor_value_info("y", TensorProto.INT32, [None] * output_rank)
    return make_model([node], inputs, [output], opset=13, initializer=initializers)


def check(model, feeds, want, key, *, against_kernel=True):
    lowered = lowered_wholly(model, model.graph.node[0].op_type)
    (got,) = runs_in_onnxruntime(lowered, feeds)
    assert_same_bits(got, want, "against the int64 reference")
    op_type, first_type, second_type, kind = key
    if not against_kernel or {key, (op_type, first_type, second_type, "any")} & ONNXRUNTIME_OTHERWISE:
        return lowered
    kernel = runs_in_onnxruntime(model, feeds)
    if kernel is not None:
        assert_same_bits(got, kernel[0], "against onnxruntime's kernel")
    return lowered


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS, ids=lambda t: {U8: "u8", S8: "s8"}[t])
@pytest.mark.parametrize("kind", ["absent", "constant", "run time"])
@pytest.mark.parametrize(("a_shape", "b_shape"), [([4, 3], [3, 5]), ([2, 3, 300], [300, 5]), ([6, 2000], [2000])])
def test_matmul_integer_is_bit_for_bit(a_type, b_type, kind, a_shape, b_shape):
    rng = np.random.default_rng(len(a_shape) + 7 * a_type + b_type)
    a, b = random_8_bit(a_type, a_shape, rng), random_8_bit(b_type, b_shape, rng)
    per_column = [b_shape[-1]] if len(b_shape) > 1 else []
    a_zero, b_zero = zero_points(kind, a_type, b_type, [], per_column, rng)
    model = integer_model(
        "MatMulInteger",
        ("a", a_type, a),
        ("b", b_type, b),
        [("a_zero", a_type, a_zero), ("b_zero", b_type, b_zero)],
        kind,
        len(np.matmul(a.astype(np.int64), b.astype(np.int64)).shape),
    )
    feeds = {"a": a, "b": b} | ({"a_zero": a_zero, "b_zero": b_zero} if kind == "run time" else {})
    want = rule_for("", "MatMulInteger").reference(a, b, a_zero, b_zero)
    lowered = check(model, feeds, want, ("MatMulInteger", a_type, b_type, kind))
    matmuls = sum(node.op_type == "MatMul" for node in lowered.graph.node)
    terms = 2**24 // (largest_offset(a_type, a_zero, kind) * largest_offset(b_type, b_zero, kind))
    assert matmuls == -(-a_shape[-1] // terms)  # (chunks of at most 2^24 / (|a - za| |b - zb|) terms)


def largest_offset(element_type, zero, kind):
    """max |v - z| over the type's values v and the zero point's z (any of the type at run time)."""
    info = np.iinfo(np.uint8 if element_type == U8 else np.int8)
    points = [0] if zero is None else [info.min, info.max] if kind == "run time" else zero.reshape(-1).tolist()
    return max(max(info.max - int(z), int(z) - info.min) for z in points)


def test_matmul_integer_with_a_zero_point_per_row():
    rng = np.random.default_rng(5)
    a, b = random_8_bit(U8, [4, 600], rng), random_8_bit(U8, [600, 3], rng)
    a_zero, b_zero = random_8_bit(U8, [4], rng), random_8_bit(U8, [3], rng)
    model = integer_model(
        "MatMulInteger", ("a", U8, a), ("b", U8, b), [("a_zero", U8, a_zero), ("b_zero", U8, b_zero)], "run time", 2
    )
    want = rule_for("", "MatMulInteger").reference(a, b, a_zero, b_zero)
    feeds = {"a": a, "b": b, "a_zero": a_zero, "b_zero": b_zero}
    # (onnxruntime's kernel takes no zero point per row: "input1 zero point must be a scalar")
    check(model, feeds, want, ("MatMulInteger", U8, U8, "row"), against_kernel=False)


CONVS = [
    (3, 1, 4, [7, 7], {}),
    (40, 1, 4, [7, 7], {"pads": [1, 1, 1, 1]}),  # (360 terms: two chunks where zero points are not known)
    (64, 1, 8, [6, 6], {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    (8, 8, 8, [7, 7], {"pads": [1, 2, 1, 0], "dilations": [2, 1]}),
    (8, 2, 4, [7, 7], {}),
    (5, 1, 3, [11], {"kernel_shape": [4], "strides": [3]}),
    (4, 1, 2, [4, 5, 3], {"pads": [1, 0, 1, 1, 0, 1]}),
]


@pytest.mark.parametrize(("x_type", "w_type"), PAIRS, ids=lambda t: {U8: "u8", S8: "s8"}[t])
@pytest.mark.parametrize("kind", ["absent", "constant", "run time"])
@pytest.mark.parametrize(("channels", "group", "maps", "spatial", "attributes"), CONVS, ids=[str(c) for c in CONVS])
def test_conv_integer_is_bit_for_bit(x_type, w_type, kind, channels, group, maps, spatial, attributes):
    rng = np.random.default_rng(channels + 3 * x_type + w_type)
    kernel = attributes.get("kernel_shape", [3] * len(spatial))
    x = random_8_bit(x_type, [2, channels, *spatial], rng)
    w = random_8_bit(w_type, [maps, channels // group, *kernel], rng)
    # (per tensor where constant, per output channel where given at run time, which onnxruntime's
    # kernel refuses: "Non per-tensor quantization is not supported now")
    x_zero, w_zero = zero_points(kind, x_type, w_type, [], [maps] if kind == "run time" else [], rng)
    model = integer_model(
        "ConvInteger",
        ("x", x_type, x),
        ("w", w_type, w),
        [("x_zero", x_type, x_zero), ("w_zero", w_type, w_zero)],
        kind,
        len(spatial) + 2,
        group=group,
        **attributes,
    )
    feeds = {"x": x} | ({"x_zero": x_zero, "w_zero": w_zero} if kind == "run time" else {})
    want = rule_for("", "ConvInteger").reference(x, w, x_zero, w_zero, group=group, **attributes)
    check(model, feeds, want, ("ConvInteger", x_type, w_type, kind), against_kernel=kind != "run time")


def test_inside_if_branches_and_local_functions():
    rng = np.random.default_rng(0)
    a, b = random_8_bit(U8, [2, 3], rng), random_8_bit(U8, [3, 2], rng)
    model = integer_model("MatMulInteger", ("a", U8, a), ("b", U8, b), [], "absent", 2)
    for label, nested in nested_forms(model).items():
        assert "MatMulInteger" not in str(lowering.lower(nested, ops=["MatMulInteger"])), label


def declined_why(model, op_type):
    result = lowering.lower_model(model, ops=[op_type])
    assert op_type in {node.op_type for node in result.model.graph.node}
    return " ".join(result.report.lines())


def test_declined():
    rng = np.random.default_rng(1)
    unknown = make_model(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])],
        [helper.make_tensor_value_info("a", U8, [2, None]), helper.make_tensor_value_info("b", U8, [None, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])],
        opset=13,
    )
    assert "the length K that each dot product sums over is unknown" in declined_why(unknown, "MatMulInteger")
    length = 258 * MOST_CHUNKS + 1
    long = integer_model(
        "MatMulInteger", ("a", U8, np.zeros([1, length], np.uint8)), ("b", U8, np.zeros([length, 1], np.uint8)),
        [("a_zero", U8, np.zeros([], np.uint8)), ("b_zero", U8, np.zeros([1], np.uint8))], "run time", 2,
    )  # fmt: skip
    assert f"more than {MOST_CHUNKS}" in declined_why(long, "MatMulInteger")
    grouped = integer_model(
        "ConvInteger", ("x", U8, random_8_bit(U8, [1, 80, 5, 5], rng)), ("w", U8, random_8_bit(U8, [2, 40, 3, 3], rng)),
        [], "absent", 4, group=2,
    )  # fmt: skip
    assert "with group 2" in declined_why(grouped, "ConvInteger")


def scales(rng, shape, element_type=TensorProto.FLOAT):
    return rng.uniform(0.001, 0.05, shape).astype(floats.numpy_dtype(element_type))


def within_one_step(got, want, where):
    """Equal, or one quantization step apart (the stated tolerance: the reference multiplies in float64)."""
    tolerance = REQUANTIZED_TOLERANCE[helper.np_dtype_to_tensor_dtype(want.dtype)]
    assert got.dtype == want.dtype and got.shape == want.shape, where
    wrong = tolerance.mismatches(got, want)
    assert not wrong.any(), f"{where}: {wrong.sum()} of {got.size} beyond one step"


def qlinear_matmul_model(arrays, opset, constant=()):
    names = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale", "y_zero_point"]
    inputs, initializers = [], []
    for name in names:
        array = arrays[name]
        if name in constant:
            initializers.append(floats.tensor(array, name))
        else:
            element_type = helper.np_dtype_to_tensor_dtype(array.dtype)
            inputs.append(helper.make_tensor_value_info(name, element_type, list(array.shape)))
    output_type = helper.np_dtype_to_tensor_dtype(arrays["y_zero_point"].dtype)
    node = helper.make_node("QLinearMatMul", names, ["y"], name="product")
    rank = np.matmul(np.zeros(arrays["a"].shape), np.zeros(arrays["b"].shape)).ndim
    output = helper.make_tensor_value_info("y", output_type, [None] * rank)
    return make_model([node], inputs, [output], opset=opset, initializer=initializers)


@pytest.mark.parametrize(("a_type", "b_type"), PAIRS, ids=lambda t: {U8: "u8", S8: "s8"}[t])
@pytest.mark.parametrize("y_type", [U8, S8], ids=["y_u8", "y_s8"])
@pytest.mark.parametrize("opset", [10, 21])
@pytest.mark.parametrize("per_row", [False, True], ids=["per_tensor", "per_row_and_column"])
def test_qlinear_matmul_is_onnxruntimes_kernel_and_within_one_step_of_the_reference(
    a_type, b_type, y_type, opset, per_row
):
    rng = np.random.default_rng(a_type + 3 * b_type + 7 * y_type + opset + per_row)
    rows, length, columns = 6, 700, 5  # (700 terms: chunks)
    arrays = {
        "a": random_8_bit(a_type, [rows, length], rng),
        "a_scale": scales(rng, [rows] if per_row else []),
        "a_zero_point": random_8_bit(a_type, [rows] if per_row else [], rng),
        "b": random_8_bit(b_type, [length, columns], rng),
        "b_scale": scales(rng, [columns] if per_row else []),
        "b_zero_point": random_8_bit(b_type, [columns] if per_row else [], rng),
        "y_scale": np.array(40.0, np.float32),
        "y_zero_point": random_8_bit(y_type, [], rng),
    }
    model = qlinear_matmul_model(arrays, opset, constant=("b", "b_scale", "b_zero_point"))
    lowered = lowered_wholly(model, "QLinearMatMul")
    feeds = {name: arrays[name] for name in ("a", "a_scale", "a_zero_point", "y_scale", "y_zero_point")}
    (got,) = runs_in_onnxruntime(lowered, feeds)
    within_one_step(got, rule_for("", "QLinearMatMul").reference(*arrays.values()), "against the float64 reference")
    assert 0 < np.count_nonzero(got != arrays["y_zero_point"])  # (not all saturated or zero)
    kernel = runs_in_onnxruntime(model, feeds) if not per_row and (a_type, b_type) != (U8, S8) else None
    if kernel is not None:  # (its kernel takes scales per tensor; uint8 by int8: its sums, above)
        assert_same_bits(got, kernel[0], "against onnxruntime's kernel")


def test_qlinear_matmul_with_float16_scales_is_within_one_step():
    rng = np.random.default_rng(16)
    arrays = {
        "a": random_8_bit(U8, [2, 3, 40], rng),
        "a_scale": scales(rng, [], TensorProto.FLOAT16),
        "a_zero_point": random_8_bit(U8, [], rng),
        "b": random_8_bit(S8, [40, 4], rng),
        "b_scale": scales(rng, [], TensorProto.FLOAT16),
        "b_zero_point": np.array(0, np.int8),
        "y_scale": np.array(0.5, np.float16),
        "y_zero_point": np.array(128, np.uint8),
    }
    lowered = lowered_wholly(qlinear_matmul_model(arrays, 21), "QLinearMatMul")
    (got,) = runs_in_onnxruntime(lowered, arrays)
    within_one_step(got, rule_for("", "QLinearMatMul").reference(*arrays.values()), "float16 scales")


@pytest.mark.parametrize("opset", [10, 13])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize(("x_type", "w_type"), [(U8, U8), (U8, S8), (S8, S8)], ids=["u8u8", "u8s8", "s8s8"])
def test_qlinear_conv_is_onnxruntimes_kernel_and_within_one_step_of_the_reference(opset, bias, x_type, w_type):
    rng = np.random.default_rng(opset + bias + x_type + w_type)
    maps, channels = 6, 48  # (48 · 9 = 432 terms: two chunks where the zero points allow it)
    arrays = {
        "x": random_8_bit(x_type, [2, channels, 6, 6], rng),
        "x_scale": np.array(0.02, np.float32),
        "x_zero_point": random_8_bit(x_type, [], rng),
        "w": random_8_bit(w_type, [maps, channels, 3, 3], rng),
        "w_scale": scales(rng, [maps]),
        "w_zero_point": np.zeros([], floats.numpy_dtype(w_type)),
        "y_scale": np.array(2.0, np.float32),
        "y_zero_point": random_8_bit(x_type, [], rng),
    }
    if bias:
        arrays["B"] = rng.integers(-5000, 5000, [maps]).astype(np.int32)
    names = list(arrays)
    initializers = [floats.tensor(arrays[name], name) for name in names if name not in ("x", "x_zero_point")]
    node = helper.make_node("QLinearConv", names, ["y"], name="conv", pads=[1, 1, 1, 1], strides=[2, 1])
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", x_type, [2, channels, 6, 6]),
         helper.make_tensor_value_info("x_zero_point", x_type, [])],
        [helper.make_tensor_value_info("y", x_type, [None] * 4)],
        opset=opset,
        initializer=initializers,
    )  # fmt: skip
    lowered = lowered_wholly(model, "QLinearConv")
    feeds = {"x": arrays["x"], "x_zero_point": arrays["x_zero_point"]}
    (got,) = runs_in_onnxruntime(lowered, feeds)
    want = rule_for("", "QLinearConv").reference(*arrays.values(), pads=[1, 1, 1, 1], strides=[2, 1])
    within_one_step(got, want, "against the float64 reference")
    kernel = runs_in_onnxruntime(model, feeds) if (x_type, w_type) != (U8, S8) else None
    if kernel is not None:  # (uint8 by int8: its sums, as MatMulInteger's, up to 34 steps away here)
        assert_same_bits(got, kernel[0], "against onnxruntime's kernel")


def test_the_backend_qlinearconv_case_with_quantize_linear_kept():
    [case] = [case for case in node_cases() if case.name == "test_qlinearconv"]
    lowered = lowered_wholly(case.model, "QLinearConv")
    for inputs, [expected] in case.data_sets:
        feeds = {info.name: np.asarray(value) for info, value in zip(case.model.graph.input, inputs, strict=True)}
        (got,) = runs_in_onnxruntime(lowered, feeds)
        assert_same_bits(got, expected)


@pytest.mark.parametrize("op_type", ["MatMulInteger", "QLinearMatMul"])
def test_a_vector_a_with_zero_points_and_scales_of_one_element(op_type):
    """A 1-D A: its zero point (and scale) of shape [1] is one value, not one per row; checked
    against numpy's own matmul, not the rule's reference."""
    rng = np.random.default_rng(1)
    a, b = random_8_bit(U8, [5], rng), random_8_bit(U8, [5, 2], rng)
    a_zero, b_zero = np.array([3], np.uint8), np.array([7], np.uint8)
    exact = np.matmul(a.astype(np.int64) - 3, b.astype(np.int64) - 7)
    if op_type == "MatMulInteger":
        model = integer_model(
            op_type, ("a", U8, a), ("b", U8, b), [("az", U8, a_zero), ("bz", U8, b_zero)], "run time", 1
        )
        feeds, want = {"a": a, "b": b, "az": a_zero, "bz": b_zero}, exact.astype(np.int32)
    else:
        arrays = {
            "a": a, "a_scale": np.array([0.5], np.float32), "a_zero_point": a_zero, "b": b,
            "b_scale": np.array(0.25, np.float32), "b_zero_point": b_zero, "y_scale": np.array(16.0, np.float32),
            "y_zero_point": np.array(100, np.uint8),
        }  # fmt: skip
        model = qlinear_matmul_model(arrays, 21)
        feeds = arrays
        want = np.clip(np.rint(exact * (0.5 * 0.25 / 16.0)) + 100, 0, 255).astype(np.uint8)
    lowered = lowered_wholly(model, op_type)
    (got,) = runs_in_onnxruntime(lowered, feeds)
    assert_same_bits(got, want)
    assert_same_bits(got, runs_in_onnxruntime(model, feeds)[0])


def test_chunks_along_a_b_of_unknown_rank_are_declined():
    """B reshaped to a shape given at run time: a 1-D or an N-D B sums along other axes."""
    model = make_model(
        [helper.make_node("Reshape", ["b", "s"], ["r"]), helper.make_node("MatMulInteger", ["a", "r"], ["y"])],
        [helper.make_tensor_value_info("a", U8, [1, 600]), helper.make_tensor_value_info("b", U8, [600]),
         helper.make_tensor_value_info("s", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, None])],
        opset=13,
    )  # fmt: skip
    assert "B's rank, which places the axis its 3 chunks are sliced along, is unknown" in declined_why(
        model, "MatMulInteger"
    )
