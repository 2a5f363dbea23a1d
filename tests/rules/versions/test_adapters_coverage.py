"""The run-time-axes choices, Split, Pad and pool adapters and the Col2Im, DFT and GridSample
rules beyond float32 and beyond the main graph: float16, bfloat16 (at targets from 13, where the
older ops take it) and double, fed the edge values (NaN payloads of both signs, quiet and
signalling, ±inf, ±0, subnormals, the extremes), each node alone, inside an If branch, inside a
Loop body and inside a local function. The converted model passes onnx's full check and gives
the original's answer (run in onnxruntime at its own opset; onnx.reference where onnxruntime
lacks a kernel for either): bit for bit for the adapters, within the stated tolerance for the
rules that state one."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np
import onnx
import pytest
from lowering.rules.dft import DFT_TOLERANCE
from lowering.rules.gridsample import GRID_SAMPLE_TOLERANCE, gridsample_reference
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_values,
    make_model,
    onnxruntime_runner,
    runs_in_onnxruntime,
    slow_but_a_sample,  # noqa: E402
)

import lowering
from lowering.function_bodies import Tolerance
from lowering.registry import rule_for
from lowering.verification.runtime import run_reference

F16, BF16, F64 = TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.DOUBLE
DTYPES = {F16: np.float16, BF16: ml_dtypes.bfloat16, F64: np.float64}
TYPE_NAMES = {F16: "float16", BF16: "bfloat16", F64: "double"}
# bfloat16 appears in the older ops at version 13, in If's and Loop's outputs at 16
BFLOAT16_FROM = 13
IF_TAKES_BFLOAT16 = 16

# Edge values by their bits: NaNs of both signs (quiet with a payload, signalling), ±inf, ±0,
# subnormals (least, greatest, negative), the least normal, the extremes, and a few ordinary ones.
EDGE_BITS = {
    F16: [0x7E01, 0xFE03, 0x7C05, 0xFC07, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x83FF, 0x8001, 0x0400, 0x7BFF,
          0xFBFF, 0x3C00, 0xC100],
    BF16: [0x7FC1, 0xFFC3, 0x7F85, 0xFF87, 0x7F80, 0xFF80, 0x0000, 0x8000, 0x0001, 0x807F, 0x8001, 0x0080, 0x7F7F,
           0xFF7F, 0x3F80, 0xC020],
    F64: [0x7FF8000000000001, 0xFFF8000000000123, 0x7FF0000000000005, 0xFFF0000000000007, 0x7FF0000000000000,
          0xFFF0000000000000, 0, 0x8000000000000000, 1, 0x800FFFFFFFFFFFFF, 0x8000000000000001, 0x0010000000000000,
          0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF, 0x3FF0000000000000, 0xC004000000000000],
}  # fmt: skip
# The finite ones only (±0, subnormals, the least normal, ordinary values), where an oracle
# treats a NaN or an infinity times an exact 0 apart from the op's kernels
NOT_FINITE = 6


def edge_values(element_type: int, shape, seed: int = 0, finite: bool = False) -> np.ndarray:
    """An array of ``shape`` holding every edge value of the type (as many as fit), the rest
    ordinary values, in an order fixed by ``seed``."""
    dtype = DTYPES[element_type]
    unsigned = np.uint16 if element_type != F64 else np.uint64
    edges = np.array(EDGE_BITS[element_type], unsigned).view(dtype)
    if finite:
        edges = edges[NOT_FINITE:][:-4]  # no extremes either: their sums overflow apart
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    ordinary = (rng.standard_normal(size) * 4).astype(np.float32).astype(dtype)
    values = np.concatenate([edges, ordinary])[:size]
    return values[rng.permutation(size)].reshape(shape)


@dataclass
class Case:
    """One node (with its Constants) at ``opset``, for element type T, and the feeds to try."""

    name: str
    opset: int
    targets: tuple[int, ...]
    # T -> (nodes, inputs, outputs): each output's name, element type and rank
    build: Callable[[int], tuple[list[onnx.NodeProto], list[onnx.ValueInfoProto], list[tuple[str, int]]]]
    feeds: Callable[[int], list[dict[str, np.ndarray]]]
    compare: str | dict = "bits"  # "bits", "values" (any NaN for a NaN) or a tolerance per type
    types: tuple[int, ...] = (F16, BF16, F64)
    # (target, T) -> the words of our refusal where the conversion is rightly refused, else None
    refused: Callable[[int, int], str | None] = lambda target, element_type: None
    # the original's answer where onnxruntime lacks the kernel and onnx.reference strays (feeds -> outputs)
    oracle: Callable[[dict], list] | None = None
    # only moves values: bfloat16 may run as float32 with the same bits
    moves_only: bool = False
    # T -> how to compare, where a kernel of onnxruntime's makes the original stray (else ``compare``)
    compare_for: dict = field(default_factory=dict)


def const(name: str, values, element_type: int = TensorProto.INT64) -> onnx.NodeProto:
    array = np.asarray(values, dtype=helper.tensor_dtype_to_np_dtype(element_type))
    tensor = helper.make_tensor(name, element_type, array.shape, array.reshape(-1).tolist())
    return helper.make_node("Constant", [], [name], name=f"{name}_constant", value=tensor)


def tensor(name: str, element_type: int, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, element_type, shape)


def ints(values) -> np.ndarray:
    return np.array(values, np.int64)


# ---- the cases -------------------------------------------------------------------------------


def reduce_case(op_type: str, opset: int, targets: tuple[int, ...]) -> Case:
    def build(t):
        node = helper.make_node(op_type, ["x", "axes"], ["y"], name="reduce")
        return [node], [tensor("x", t, [2, 3, 2]), tensor("axes", TensorProto.INT64, ["k"])], [("y", t, 3)]

    def feeds(t):
        return [
            {"x": edge_values(t, [2, 3, 2], s), "axes": ints(a)} for s, a in enumerate([[0], [1], [-1], [0, 2], []])
        ]

    def refused(target, element_type):
        # the choice is a tree of If, whose branches give bfloat16 only from If-16
        return "which If takes only from opset 16" if element_type == BF16 and target < IF_TAKES_BFLOAT16 else None

    return Case(f"{op_type}-{opset} axes at run time", opset, targets, build, feeds, "bits", refused=refused)


def squeeze_case() -> Case:
    def build(t):
        node = helper.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")
        return [node], [tensor("x", t, [1, 3, 1, 2]), tensor("axes", TensorProto.INT64, [2])], [("y", t, 2)]

    def feeds(t):
        return [
            {"x": edge_values(t, [1, 3, 1, 2], s), "axes": ints(a)} for s, a in enumerate([[0, 2], [-2, 0], [2, -4]])
        ]

    return Case("Squeeze-13 axes at run time", 13, (11, 12), build, feeds, types=(F16, F64))


def unsqueeze_case() -> Case:
    def build(t):
        node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"], name="unsqueeze")
        return [node], [tensor("x", t, [3, 2]), tensor("axes", TensorProto.INT64, [1])], [("y", t, 3)]

    def feeds(t):
        return [{"x": edge_values(t, [3, 2], s), "axes": ints(a)} for s, a in enumerate([[0], [1], [2], [-1]])]

    return Case("Unsqueeze-13 axes at run time", 13, (11, 12), build, feeds, types=(F16, F64))


def split_counted_case(size) -> Case:
    def build(t):
        node = helper.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=0, num_outputs=3)
        return [node], [tensor("x", t, [size, 2])], [("a", t, 2), ("b", t, 2), ("c", t, 2)]

    def feeds(t):
        sizes = [7, 6, 8] if size == "n" else [size]
        return [{"x": edge_values(t, [n, 2], n)} for n in sizes]

    return Case(f"Split-18 num_outputs along a size {size}", 18, (11, 13, 17), build, feeds)


def split_sized_case(opset: int) -> Case:
    def build(t):
        node = helper.make_node("Split", ["x", "s"], ["a", "b", "c"], name="split", axis=-1)
        return (
            [node],
            [tensor("x", t, [2, 6]), tensor("s", TensorProto.INT64, [3])],
            [("a", t, 2), ("b", t, 2), ("c", t, 2)],
        )

    def feeds(t):
        return [{"x": edge_values(t, [2, 6], k), "s": ints(s)} for k, s in enumerate([[1, 2, 3], [0, 6, 0], [3, 3, 0]])]

    return Case(f"Split-{opset} sizes at run time", opset, (11, 12), build, feeds, types=(F16, F64))


def wrap_case(run_time: bool) -> Case:
    def build(t):
        nodes = [] if run_time else [const("pads", [1, -1, 2, 5])]
        nodes.append(helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="wrap"))
        inputs = [tensor("x", t, [3, 4])] + ([tensor("pads", TensorProto.INT64, [4])] if run_time else [])
        return nodes, inputs, [("y", t, 2)]

    def feeds(t):
        pads = [[1, 2, 0, 3], [-1, 0, 2, 1], [4, -2, 0, 6]] if run_time else [None]
        return [
            {"x": edge_values(t, [3, 4], k), **({"pads": ints(p)} if p is not None else {})} for k, p in enumerate(pads)
        ]

    targets = (13, 11) if run_time else (18, 13, 11)
    # onnxruntime has no float16 Pad kernel: it pads in float32, which rewrites NaN payloads (the
    # Gathers keep them; test_adapters_split_pad_dilations pins the bits): any NaN for a NaN there
    return Case(
        f"Pad-19 wrap, pads {'at run time' if run_time else 'constant'}", 19, targets, build, feeds,
        compare_for={F16: "values"}, moves_only=True,
    )  # fmt: skip


def pad_axes_case() -> Case:
    """Pad-18 with axes given at run time and a NaN constant value with a payload."""

    def build(t):
        value = np.array(EDGE_BITS[t][1], np.uint16 if t != F64 else np.uint64).view(DTYPES[t])
        nodes = [
            helper.make_node("Constant", [], ["v"], name="v_constant", value=_tensor_of("v", t, value.reshape([]))),
            helper.make_node("Pad", ["x", "pads", "v", "axes"], ["y"], name="pad"),
        ]
        inputs = [
            tensor("x", t, [2, 3, 2]),
            tensor("pads", TensorProto.INT64, [2]),
            tensor("axes", TensorProto.INT64, [1]),
        ]
        return nodes, inputs, [("y", t, 3)]

    def feeds(t):
        chosen = [([1], [1, 2]), ([-1], [0, 3]), ([0], [2, -1])]
        return [
            {"x": edge_values(t, [2, 3, 2], k), "axes": ints(a), "pads": ints(p)} for k, (a, p) in enumerate(chosen)
        ]

    return Case("Pad-18 axes at run time", 18, (13, 11), build, feeds, moves_only=True)


def pad_value_case() -> Case:
    """Pad-18 with constant pads and a constant value of each edge kind, going to Pad-2's attributes."""

    def build(t):
        nodes = [
            const("pads", [0, 1, 2, 0]),
            _value_constant(t, 1),
            helper.make_node("Pad", ["x", "pads", "v"], ["y"], name="pad"),
        ]
        return nodes, [tensor("x", t, [2, 3])], [("y", t, 2)]

    def feeds(t):
        return [{"x": edge_values(t, [2, 3], k)} for k in range(2)]

    # (Pad-2's value is a float attribute: a double NaN's payload does not fit, and such a node
    # goes below 11 by Pad's rule, copies of x and of the value)
    return Case("Pad-18 constant value to attributes", 18, (10, 11, 13, 17), build, feeds)


def _tensor_of(name: str, element_type: int, array: np.ndarray) -> onnx.TensorProto:
    made = onnx.TensorProto()
    made.name, made.data_type = name, element_type
    made.dims.extend(array.shape)
    made.raw_data = np.ascontiguousarray(array).tobytes()
    return made


def _value_constant(element_type: int, which: int) -> onnx.NodeProto:
    unsigned = np.uint16 if element_type != F64 else np.uint64
    value = np.array([EDGE_BITS[element_type][which]], unsigned).view(DTYPES[element_type])
    return helper.make_node("Constant", [], ["v"], name="v_constant", value=_tensor_of("v", element_type, value))


# AveragePool and LpPool: onnxruntime's float16 pools of the two versions pick a NaN's sign and
# payload apart where NaNs and infinities meet in a window (AveragePool-22 gives 0xfe00 where
# AveragePool-11 gives 0x7e00, over the same window): any NaN for a NaN there ("values")
def pool_case(op_type: str, opset: int, shape, targets, types=(F16, BF16, F64), indices=False, **attributes) -> Case:
    def build(t):
        outputs = [("y", t, 4)] + ([("indices", TensorProto.INT64, 4)] if indices else [])
        node = helper.make_node(op_type, ["x"], [n for n, *_ in outputs], name="pool", **attributes)
        return [node], [tensor("x", t, shape)], outputs

    def feeds(t):
        # (bfloat16 AveragePool goes below 22 by its rule, which sums in another order: a window
        # holding the largest values of both signs sums to what that order makes it, so finite ones)
        finite = op_type == "AveragePool" and t == BF16
        return [{"x": edge_values(t, shape, k, finite=finite)} for k in range(3)]

    described = ", ".join(f"{k}={v}" for k, v in attributes.items())

    def refused(target, element_type):
        # bfloat16 comes to MaxPool and AveragePool at 22; a plain MaxPool or AveragePool goes
        # below by its rule (rules/maxpool.py, rules/averagepool.py) where the opset has bfloat16 (13)
        by_rule = op_type in ("MaxPool", "AveragePool") and target >= BFLOAT16_FROM
        return "does not take" if element_type == BF16 and target < opset and not by_rule else None

    apart = {} if op_type == "MaxPool" else {F16: "values"}
    if op_type == "AveragePool":  # (its rule sums in another order: within the tolerance it states)
        apart[BF16] = rule_for("", "AveragePool").tolerance
    return Case(
        f"{op_type}-{opset} {described}", opset, targets, build, feeds, "bits", types, refused, compare_for=apart
    )


def col2im_case() -> Case:
    def build(t):
        nodes = [
            const("image", [3, 3]),
            const("block", [2, 2]),
            helper.make_node("Col2Im", ["x", "image", "block"], ["y"], name="col2im"),
        ]
        return nodes, [tensor("x", t, [1, 8, 4])], [("y", t, 4)]

    def feeds(t):
        return [{"x": edge_values(t, [1, 8, 4], k)} for k in range(3)]

    return Case("Col2Im-18", 18, (11, 13, 17), build, feeds, "values")


def dft_case(last: int = 1, **attributes) -> Case:
    """DFT-20 along axis 1 of [2, 8, last] (last 1: real, 2: complex), with a dft_length of 6
    where the signal is cut, its attributes (onesided, inverse) as given."""

    def build(t):
        length = [const("length", 6)] if attributes.get("cut") else []
        given = {k: v for k, v in attributes.items() if k != "cut"}
        nodes = [*length, const("axis", 1)]
        nodes.append(helper.make_node("DFT", ["x", "length" if length else "", "axis"], ["y"], name="dft", **given))
        return nodes, [tensor("x", t, [2, 8, last])], [("y", t, 3)]

    def feeds(t):
        # onnxruntime has no bfloat16 DFT, and onnx.reference's (numpy's FFT) skips the terms of
        # an exact 0 weight (bin 0's imaginary part), where a NaN or an infinity times 0 gives NaN
        # in onnxruntime's kernel and in the MatMul alike: finite values there
        return [{"x": edge_values(t, [2, 8, last], k, finite=t == BF16)} for k in range(2)]

    described = ", ".join(f"{k}={v}" for k, v in attributes.items())
    return Case(f"DFT-20 of [2, 8, {last}] {described}", 20, (11, 13), build, feeds, DFT_TOLERANCE)


def grid_sample_case(padding_mode: str) -> Case:
    def build(t):
        node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="grid_sample", padding_mode=padding_mode)
        return [node], [tensor("x", t, [1, 2, 3, 3]), tensor("grid", t, [1, 2, 3, 2])], [("y", t, 4)]

    def feeds(t):
        grid = np.random.default_rng(5).uniform(-1.3, 1.3, [1, 2, 3, 2]).astype(DTYPES[t])
        return [{"x": edge_values(t, [1, 2, 3, 3], k), "grid": grid} for k in range(2)]

    def oracle(feeds):
        # onnxruntime has no bfloat16 GridSample, and onnx.reference's computes in bfloat16
        # (1e-2 off on these values): the op as its rule states it, in float64 rounded once
        with np.errstate(all="ignore"):  # NaN and infinities among the values
            return [gridsample_reference(feeds["x"], feeds["grid"], padding_mode=padding_mode)]

    return Case(
        f"GridSample-22 padding {padding_mode}", 22, (11, 13), build, feeds, GRID_SAMPLE_TOLERANCE, oracle=oracle
    )


CASES = [
    reduce_case("ReduceMax", 18, (11, 13, 17)),
    reduce_case("ReduceMean", 18, (11, 13, 17)),
    reduce_case("ReduceSum", 13, (11, 12)),
    squeeze_case(),
    unsqueeze_case(),
    split_counted_case("n"),
    split_counted_case(7),
    split_sized_case(13),
    split_sized_case(18),
    wrap_case(False),
    wrap_case(True),
    pad_axes_case(),
    pad_value_case(),
    pool_case(
        "MaxPool",
        22,
        [1, 1, 4, 4],
        (11, 13, 17),
        indices=True,
        kernel_shape=[2, 2],
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        ceil_mode=1,
    ),
    pool_case(
        "MaxPool", 22, [1, 1, 4, 4], (11, 13, 17), kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], ceil_mode=1
    ),
    pool_case(
        "AveragePool",
        22,
        [1, 1, 4, 4],
        (11, 13, 17),
        kernel_shape=[2, 2],
        strides=[2, 2],
        pads=[0, 0, 1, 1],
        ceil_mode=1,
    ),
    pool_case(
        "AveragePool",
        19,
        [1, 1, 6, 6],
        (11, 13, 17),
        types=(F16, F64),
        kernel_shape=[2, 2],
        dilations=[2, 2],
    ),
    pool_case(
        "AveragePool",
        19,
        [1, 1, 5, 5],
        (11, 13, 17),
        types=(F16, F64),
        kernel_shape=[3, 3],
        strides=[2, 2],
        auto_pad="SAME_UPPER",
    ),
    pool_case(
        "LpPool",
        18,
        [1, 1, 6, 6],
        (11, 13, 17),
        types=(F16, F64),
        kernel_shape=[2, 2],
        dilations=[2, 2],
        p=2,
    ),
    col2im_case(),
    dft_case(),
    dft_case(onesided=1),
    dft_case(2, inverse=1),
    dft_case(2, cut=1),
    grid_sample_case("zeros"),
    grid_sample_case("reflection"),
]


# ---- where the node stands --------------------------------------------------------------------

PLACES = ("graph", "if", "loop", "function")
FUNCTION_DOMAIN = "local.cover"


def _renamed(nodes: list[onnx.NodeProto], prefix: str, outer: set[str]) -> list[onnx.NodeProto]:
    """The nodes with every value they make (and node name) given ``prefix``, so that a branch
    or body shadows nothing outside."""
    made = {o for n in nodes for o in n.output if o}
    result = []
    for node in nodes:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        copy.name = prefix + node.name
        copy.input[:] = [prefix + i if i in made else i for i in node.input]
        copy.output[:] = [prefix + o if o else o for o in node.output]
        result.append(copy)
    return result


def placed(case: Case, element_type: int, place: str) -> onnx.ModelProto:
    """The case's node in the main graph, in both branches of an If, in a Loop body (run twice,
    its outputs stacked) or in a local function the graph calls."""
    nodes, inputs, outputs = case.build(element_type)
    outer = {i.name for i in inputs}
    extra = 1 if place == "loop" else 0
    declared = [tensor(name, t, [f"{name}{k}" for k in range(rank + extra)]) for name, t, rank in outputs]
    if place == "graph":
        return make_model(nodes, inputs, declared, opset=case.opset)
    if place == "if":

        def branch(prefix: str) -> onnx.GraphProto:
            inner = _renamed(nodes, prefix, outer)
            return helper.make_graph(inner, f"{prefix}branch", [], [tensor(prefix + n, t, None) for n, t, _ in outputs])

        node = helper.make_node(
            "If",
            ["cond"],
            [n for n, *_ in outputs],
            name="choice",
            then_branch=branch("then_"),
            else_branch=branch("else_"),
        )
        return make_model([node], [tensor("cond", TensorProto.BOOL, []), *inputs], declared, opset=case.opset)
    if place == "loop":
        inner = _renamed(nodes, "body_", outer)
        inner.append(helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"))
        body = helper.make_graph(
            inner,
            "body",
            [tensor("iteration", TensorProto.INT64, []), tensor("cond_in", TensorProto.BOOL, [])],
            [tensor("cond_out", TensorProto.BOOL, []), *(tensor("body_" + n, t, None) for n, t, _ in outputs)],
        )
        loop = helper.make_node("Loop", ["trips", "keep_going"], [n for n, *_ in outputs], name="loop", body=body)
        keep_going = const("keep_going", True, TensorProto.BOOL)
        return make_model([const("trips", 2), keep_going, loop], inputs, declared, opset=case.opset)
    assert place == "function"
    function = helper.make_function(
        FUNCTION_DOMAIN,
        "Body",
        [i.name for i in inputs],
        [n for n, *_ in outputs],
        nodes,
        [helper.make_opsetid("", case.opset)],
    )
    call = helper.make_node(
        "Body", [i.name for i in inputs], [n for n, *_ in outputs], name="call", domain=FUNCTION_DOMAIN
    )
    return make_model(
        [call], inputs, declared, opset=case.opset, functions=[function], extra_opsets={FUNCTION_DOMAIN: 1}
    )


def feeds_for(case: Case, element_type: int, place: str) -> list[dict[str, np.ndarray]]:
    every = case.feeds(element_type)
    if place != "if":
        return every
    return [{"cond": np.array(c), **f} for f in every for c in (True, False)]


def outputs(model: onnx.ModelProto, feeds: dict) -> tuple[str, list | None]:
    """onnxruntime's answer, or None where it has no kernel; and which ran."""
    return "onnxruntime", runs_in_onnxruntime(model, feeds)


def _widened_types(graph: onnx.GraphProto) -> None:
    """bfloat16 made float32 in the graph (and the graphs it holds): types and Constants, by bits."""
    for info in [*graph.input, *graph.output, *graph.value_info]:
        if info.type.tensor_type.elem_type == BF16:
            info.type.tensor_type.elem_type = TensorProto.FLOAT
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                _widened_types(attribute.g)
            if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type == BF16:
                narrow = onnx.numpy_helper.to_array(attribute.t).view(np.uint16)
                wide = (narrow.astype(np.uint32) << 16).view(np.float32)
                attribute.t.CopyFrom(_tensor_of(attribute.t.name, TensorProto.FLOAT, wide))


def moved_in_float32(model: onnx.ModelProto, feeds: dict) -> list:
    """A model that only moves values, run on bfloat16 values as float32 (the same bits, 16 zero
    bits added), its outputs narrowed back by those bits: where onnxruntime has no bfloat16 kernel
    (Pad) and onnx.reference cannot say it (negative pads)."""
    wide_model = onnx.ModelProto()
    wide_model.CopyFrom(model)
    _widened_types(wide_model.graph)
    for function in wide_model.functions:
        for node in function.node:
            for attribute in node.attribute:
                if attribute.type == onnx.AttributeProto.TENSOR and attribute.t.data_type == BF16:
                    narrow = onnx.numpy_helper.to_array(attribute.t).view(np.uint16)
                    wide = (narrow.astype(np.uint32) << 16).view(np.float32)
                    attribute.t.CopyFrom(_tensor_of(attribute.t.name, TensorProto.FLOAT, wide))
    wide_feeds = {k: v.astype(np.float32) if v.dtype == ml_dtypes.bfloat16 else v for k, v in feeds.items()}
    outputs = runs_in_onnxruntime(wide_model, wide_feeds)
    return [(o.view(np.uint32) >> 16).astype(np.uint16).view(ml_dtypes.bfloat16) for o in outputs]


def made_when_first_run(model: onnx.ModelProto) -> Callable[[dict], list | None]:
    """:func:`support.runs_in_onnxruntime` for ``model`` on any number of feeds, through one
    session (support.onnxruntime_runner), made where it is first run: never for a model not run."""
    made = []

    def run(feeds: dict) -> list | None:
        if not made:
            made.append(onnxruntime_runner(model))
        return made[0](feeds)

    return run


_ORIGINAL_ANSWERS: dict[tuple, list | None] = {}


def feeds_key(feeds: dict) -> tuple | None:
    """The feeds as a key (names, types, shapes and bytes), or None where one is not an array."""
    if not all(isinstance(value, np.ndarray) for value in feeds.values()):
        return None
    return tuple((name, value.dtype.name, value.shape, value.tobytes()) for name, value in sorted(feeds.items()))


def original_answer(original: onnx.ModelProto, run: Callable[[dict], list | None], feeds: dict) -> list | None:
    """``run(feeds)``, the original's outputs in onnxruntime (None where it lacks a kernel), once
    per original and feeds in the session: the same original is compared with what it becomes at
    every target, and its answer stays the same."""
    key = feeds_key(feeds)
    if key is None:
        return run(feeds)
    key = (original.SerializeToString(), key)
    if key not in _ORIGINAL_ANSWERS:
        _ORIGINAL_ANSWERS[key] = run(feeds)
    return _ORIGINAL_ANSWERS[key]


def answers(
    case: Case,
    original: onnx.ModelProto,
    converted: onnx.ModelProto,
    feeds: dict,
    run_original: Callable[[dict], list | None],
    run_converted: Callable[[dict], list | None],
) -> tuple[str, list, list]:
    """Both models' outputs in onnxruntime (``run_original`` and ``run_converted``: runs_in_onnxruntime
    for each, through one session, the original's answer once in the session); where it lacks a
    kernel for either, both in onnx.reference, or the original's by the case's oracle."""
    want, got = original_answer(original, run_original, feeds), None
    if want is not None:
        got = run_converted(feeds)
    if want is not None and got is not None:
        return "onnxruntime", want, got
    if case.moves_only and any(getattr(v, "dtype", None) == ml_dtypes.bfloat16 for v in feeds.values()):
        return "float32 bits", moved_in_float32(original, feeds), moved_in_float32(converted, feeds)
    if case.oracle is not None:
        plain = {k: v for k, v in feeds.items() if k != "cond"}
        want = case.oracle(plain)
        if "loop" in converted.graph.node[-1].name:
            want = [np.stack([w, w]) for w in want]
        return "the rule's reference", want, run_reference(converted, feeds)
    return "onnx.reference", run_reference(original, feeds), run_reference(converted, feeds)


def converted_model(model: onnx.ModelProto, target: int, refusal: str | None = None) -> onnx.ModelProto | None:
    """The model converted to ``target`` and checked in full; None where it is refused as expected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if refusal is not None:
            with pytest.raises(lowering.LoweringError) as refused:
                lowering.lower(model, target_opset=target, ops=[])
            assert refusal in str(refused.value) and "Assertion" not in str(refused.value), str(refused.value)
            return None
        result = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(result, full_check=True)
    return result


def params():
    for case in CASES:
        for target in case.targets:
            for element_type in case.types:
                if element_type == BF16 and target < BFLOAT16_FROM:
                    continue
                for place in PLACES:
                    yield pytest.param(
                        case,
                        target,
                        element_type,
                        place,
                        id=f"{case.name}-to{target}-{TYPE_NAMES[element_type]}-{place}",
                    )


@slow_but_a_sample()
@pytest.mark.parametrize(("case", "target", "element_type", "place"), list(params()))
def test_converted_node_gives_the_originals_answer(case: Case, target: int, element_type: int, place: str):
    original = placed(case, element_type, place)
    onnx.checker.check_model(original, full_check=True)
    refusal = case.refused(target, element_type)
    if refusal is None and element_type == BF16 and place in ("if", "loop") and target < IF_TAKES_BFLOAT16:
        refusal = "does not take"  # If-13 and Loop-13 give no bfloat16
    converted = converted_model(original, target, refusal)
    if converted is None:
        return
    compare = case.compare_for.get(element_type, case.compare)
    run_original, run_converted = made_when_first_run(original), made_when_first_run(converted)
    for feeds in feeds_for(case, element_type, place):
        ran, want, got = answers(case, original, converted, feeds, run_original, run_converted)
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            where = f"{case.name} to {target} in {place}, output {k} ({ran}), feeds {list(feeds)}"
            g, w = np.asarray(g), np.asarray(w)
            if compare == "bits":
                assert_same_bits(g, w, where)
            elif compare == "values":
                assert_same_values(g, w, where)
            else:
                tolerance: Tolerance = compare[element_type]
                assert g.dtype == w.dtype and g.shape == w.shape, where
                wrong = tolerance.mismatches(g, w)
                assert not wrong.any(), f"{where}: {int(wrong.sum())} of {w.size} beyond {tolerance}"


@slow_but_a_sample()
@pytest.mark.parametrize("target", [11, 13, 17])
@pytest.mark.parametrize("element_type", [F16, F64])
def test_split_leaving_a_negative_last_part_in_a_branch_not_taken_still_loads(element_type, target):
    """Split-18 cutting 5 into num_outputs=4 parts of 2 leaves a last part of -1: an error when it
    runs, but a model holding it in a branch not taken loads and runs (as AffineGrid's body
    does). Converted, the branch not taken is still harmless; the branch taken fails as the
    original does (Split-13 given sizes at run time), or, below 13, gives the clamped parts
    [2, 2, 1, 0] onnx.reference's Split gives (the Slices)."""
    outputs = ["a", "b", "c", "d"]
    then_branch = helper.make_graph(
        [helper.make_node("Split", ["x"], [f"then_{o}" for o in outputs], name="split", axis=0, num_outputs=4)],
        "then",
        [],
        [tensor(f"then_{o}", element_type, None) for o in outputs],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], [f"else_{o}"], name=f"keep_{o}") for o in outputs],
        "else",
        [],
        [tensor(f"else_{o}", element_type, None) for o in outputs],
    )
    node = helper.make_node("If", ["cond"], outputs, name="choice", then_branch=then_branch, else_branch=else_branch)
    original = make_model(
        [node],
        [tensor("cond", TensorProto.BOOL, []), tensor("x", element_type, [5])],
        [tensor(o, element_type, [f"{o}0"]) for o in outputs],
        opset=18,
    )
    converted = converted_model(original, target)
    x = edge_values(element_type, [5])
    feeds = {"cond": np.array(False), "x": x}
    for got, want in zip(runs_in_onnxruntime(converted, feeds), runs_in_onnxruntime(original, feeds), strict=True):
        assert_same_bits(got, want, "the branch not taken")
    feeds["cond"] = np.array(True)
    with pytest.raises(Exception):  # noqa: B017 - onnxruntime's own error, of its own wording
        runs_in_onnxruntime(original, feeds)
    if target >= 13:
        with pytest.raises(Exception):  # noqa: B017
            runs_in_onnxruntime(converted, feeds)
        return
    got = runs_in_onnxruntime(converted, feeds)
    for part, (start, end) in zip(got, [(0, 2), (2, 4), (4, 5), (5, 5)], strict=True):
        assert_same_bits(part, x[start:end], "the clamped parts")
