"""BitwiseAnd, BitwiseOr, BitwiseXor and BitwiseNot (rules/bitwise.py) converted to opsets 11,
13 and 17, bit for bit in onnxruntime against its own Bitwise*-18 kernels on the original:
every type, the extremes, every pair of 8-bit patterns, random values for the wider types,
broadcasting, and the backend corpus cases as tests/version_cases.py sweeps them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import support
from lowering.rules.bitwise import FIRST_OPSET, NOT_FIRST_OPSET
from support import (
    slow_but_a_sample,  # noqa: E402
    type_name,
)
from version_cases import node_cases, sweep_case

import lowering
from lowering import schemas
from lowering.verification.runtime import run_onnxruntime

BINARY = ("BitwiseAnd", "BitwiseOr", "BitwiseXor")
OPS = (*BINARY, "BitwiseNot")
TARGETS = (11, 13, 17)
# Every type the ops take (onnx.defs), the same for the four.
ELEMENT_TYPES = sorted(schemas.input_element_types("BitwiseAnd", 18), key=type_name)


def bitwise_model(op_type: str, element_type: int, shapes: list[list], output_shape=("N",)) -> onnx.ModelProto:
    """``z = op_type(x[, y])`` at opset 18, the inputs of ``shapes``."""
    names = ["x", "y"][: len(shapes)]
    node = onnx.helper.make_node(op_type, names, ["z"], name=f"{op_type.lower()}_node")
    inputs = [
        onnx.helper.make_tensor_value_info(name, element_type, shape) for name, shape in zip(names, shapes, strict=True)
    ]
    return support.make_model(
        [node],
        inputs,
        [onnx.helper.make_tensor_value_info("z", element_type, list(output_shape))],
        opset=18,
    )


def edge_values(element_type: int) -> np.ndarray:
    """Every value of an 8-bit type; else the extremes, 0, ±1, the powers of two and their
    neighbours around the top bits, and random values."""
    dtype = onnx.helper.tensor_dtype_to_np_dtype(element_type)
    info = np.iinfo(dtype)
    if info.bits == 8:
        return np.arange(info.min, info.max + 1).astype(dtype)
    n = info.bits
    chosen = {info.min, info.max, 0, 1, 2, 3, info.max // 2, info.max // 2 + 1, info.min // 2, info.min // 2 - 1}
    chosen |= {2**k for k in range(n - (info.min < 0))} | {2**k - 1 for k in range(n - (info.min < 0))}
    if info.min < 0:
        chosen |= {-1, -2, -3} | {-(2**k) for k in range(n)} | {-(2**k) - 1 for k in range(n - 1)}
    chosen = {v for v in chosen if info.min <= v <= info.max}
    rng = np.random.default_rng(n + (info.min < 0))
    random = rng.integers(info.min, info.max, size=64, dtype=dtype, endpoint=True)
    return np.concatenate([np.array(sorted(chosen), dtype), random])


def all_pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (x, y) of ``values``: 65536 pairs for an 8-bit type."""
    return np.repeat(values, values.size), np.tile(values, values.size)


def assert_bits_equal(got: np.ndarray, expected: np.ndarray, where: str) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape, where
    mismatches = np.flatnonzero(got.reshape(-1) != expected.reshape(-1))
    assert mismatches.size == 0, f"{where}: {mismatches.size} mismatches, first at {mismatches[:3]}"


CASES = [(op, t, target) for op in OPS for t in ELEMENT_TYPES for target in TARGETS]


@slow_but_a_sample()
@pytest.mark.parametrize(
    ("op_type", "element_type", "target"), CASES, ids=[f"{o}-{type_name(t)}-to{g}" for o, t, g in CASES]
)
def test_converted_is_bit_for_bit_onnxruntimes_kernel(op_type, element_type, target):
    values = edge_values(element_type)
    if op_type == "BitwiseNot":
        original, feeds = bitwise_model(op_type, element_type, [["N"]]), {"x": values}
    else:
        x, y = all_pairs(values)
        original, feeds = bitwise_model(op_type, element_type, [["N"], ["N"]]), {"x": x, "y": y}
    result = lowering.lower_model(original, target_opset=target, ops=[])
    assert result.report.complete, result.report.lines()
    converted = result.model
    onnx.checker.check_model(converted, full_check=True)
    assert converted.opset_import[0].version == target
    assert not any(node.op_type.startswith("Bitwise") for node in converted.graph.node)
    (expected,) = run_onnxruntime(original, feeds)
    (got,) = run_onnxruntime(converted, feeds)
    where = f"{op_type} {type_name(element_type)} to {target}"
    assert_bits_equal(got, expected, where)
    reference = np.invert(feeds["x"]) if op_type == "BitwiseNot" else None
    if reference is None:
        function = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}[op_type]
        reference = function(feeds["x"], feeds["y"])
    assert_bits_equal(got, reference, f"{where} (numpy)")


@pytest.mark.slow
@pytest.mark.parametrize("op_type", BINARY)
@pytest.mark.parametrize("element_type", [onnx.TensorProto.INT16, onnx.TensorProto.UINT64], ids=type_name)
def test_inputs_broadcast_as_add(op_type, element_type):
    values = edge_values(element_type)
    x = np.resize(values, (3, 1, 4))
    y = np.resize(values[::-1], (5, 1))
    original = bitwise_model(op_type, element_type, [[3, 1, 4], [5, 1]], [3, 5, 4])
    feeds = {"x": x, "y": y}
    (expected,) = run_onnxruntime(original, feeds)
    assert expected.shape == (3, 5, 4)
    for target in TARGETS:
        (got,) = run_onnxruntime(lowering.lower(original, target_opset=target, ops=[]), feeds)
        assert_bits_equal(got, expected, f"{op_type} {type_name(element_type)} to {target}")


@pytest.mark.parametrize(("op_type", "first"), [("BitwiseAnd", FIRST_OPSET), ("BitwiseNot", NOT_FIRST_OPSET)])
def test_refused_below_the_first_opset_in_our_words(op_type, first):
    shapes = [["N"]] if op_type == "BitwiseNot" else [["N"], ["N"]]
    original = bitwise_model(op_type, onnx.TensorProto.INT32, shapes)
    with pytest.raises(lowering.LoweringError) as raised:
        lowering.lower(original, target_opset=first - 1, ops=[])
    message = str(raised.value)
    assert f"{op_type}-18 cannot be expressed at opset {first - 1}" in message
    assert f"the rule writes ops as they are from opset {first}, not {first - 1}" in message
    assert lowering.lower(original, target_opset=first, ops=[]).opset_import[0].version == first


# -- the corpus pairs that convert (tests/version_cases.py, as the version sweep runs them) --------

BACKEND_CASES = {case.name: case for case in node_cases() if case.name.startswith("test_bitwise")}
CORPUS_PAIRS = [(target, name) for name in sorted(BACKEND_CASES) for target in TARGETS]


def test_the_four_ops_take_the_same_types():
    for op_type in OPS:
        assert schemas.input_element_types(op_type, 18) == set(ELEMENT_TYPES), op_type


def test_corpus_cases_are_found():
    assert len(BACKEND_CASES) >= 15
    assert {node.op_type for case in BACKEND_CASES.values() for node in case.model.graph.node} == set(OPS)


@slow_but_a_sample()
@pytest.mark.parametrize(("target", "name"), CORPUS_PAIRS, ids=[f"{n}-to{t}" for t, n in CORPUS_PAIRS])
def test_corpus_pair_converts(target, name):
    outcome = sweep_case(BACKEND_CASES[name], target)
    assert outcome.ours == "converts", outcome.detail
    assert not outcome.ours_wrong, outcome.detail
