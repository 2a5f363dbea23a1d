"""Retyping (lowering/retyping.py, ``--retype``): int64 to int32 exact or refused, floats
narrowed and said to be inexact; every result passes onnx's full checker and runs in
onnxruntime."""

from __future__ import annotations

import glob
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper
from support import assert_same_bits, make_model, one_error_line, run_cli_in_process, slow_but_a_sample

import lowering
import lowering.retyping
from lowering.retyping import parse_retypings
from lowering.verification import compare
from lowering.verification.runtime import OnnxruntimeRunner, run_onnxruntime

ROOT = Path(__file__).resolve().parents[1]
INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def constant(name: str, values, dtype=np.int64) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, dtype), name)


def element_types(model: onnx.ModelProto) -> dict[str, int]:
    """Every main-graph value's element type as onnx inference gives it."""
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    graph = inferred.graph
    found = {t.name: t.data_type for t in graph.initializer}
    for info in [*graph.input, *graph.value_info, *graph.output]:
        found[info.name] = info.type.tensor_type.elem_type
    return found


def token_model() -> onnx.ModelProto:
    """Token ids through Gather, Shape, Range, CumSum, ArgMax, Slice to the end, Reshape to the
    ids' own shape and a Mul of two sizes: what an exported language model does with int64."""
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["e"]),
        helper.make_node("Shape", ["ids"], ["sh"]),
        helper.make_node("Gather", ["sh", "one"], ["n"]),
        helper.make_node("Range", ["zero", "n", "one"], ["pos"]),
        helper.make_node("CumSum", ["ids", "one"], ["cs"]),
        helper.make_node("ArgMax", ["e"], ["am"], axis=2, keepdims=0),
        helper.make_node("Add", ["am", "pos"], ["amp"]),
        helper.make_node("Slice", ["ids", "one1", "end", "one1"], ["tail"]),
        helper.make_node("Concat", ["sh", "minus_one"], ["view"], axis=0),
        helper.make_node("Reshape", ["e", "view"], ["r"]),
        helper.make_node("Mul", ["n", "n"], ["nn"]),
    ]
    emb = numpy_helper.from_array(np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32), "emb")
    initializers = [
        emb,
        constant("one", 1),
        constant("zero", 0),
        constant("one1", [1]),
        constant("end", [INT64_MAX]),
        constant("minus_one", [-1]),
    ]
    outputs = [("r", T.FLOAT, 3), ("cs", T.INT64, 2), ("amp", T.INT64, 2), ("tail", T.INT64, 2), ("nn", T.INT64, 0)]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("ids", T.INT64, ["b", "s"])],
        [helper.make_tensor_value_info(name, t, [None] * rank) for name, t, rank in outputs],
        opset=18,
        initializer=initializers,
    )


def token_feeds() -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(1)
    return [{"ids": rng.integers(0, 50, shape).astype(np.int64)} for shape in [(2, 5), (1, 1), (3, 17), (4, 2)]]


def test_token_ids_shapes_and_indices_go_to_int32_and_give_identical_outputs():
    model = token_model()
    result = lowering.lower_model(model, ops=[], retype="int64=int32")
    retyped = result.model
    onnx.checker.check_model(retyped, full_check=True)
    types = element_types(retyped)
    # Indices, sizes and positions are int32 inside; the model's inputs and outputs keep int64.
    assert types["e"] == T.FLOAT and types["n"] == T.INT32 and types["pos"] == T.INT32 and types["one"] == T.INT32
    assert [types[o.name] for o in retyped.graph.output] == [T.FLOAT, T.INT64, T.INT64, T.INT64, T.INT64]
    assert types["ids"] == T.INT64
    gathers = [node for node in retyped.graph.node if node.op_type == "Gather" and node.input[0] == "emb"]
    assert types[gathers[0].input[1]] == T.INT32  # the embedding reads int32 ids
    report = result.report.retyping
    kept = " ".join(report.kept_wide)
    assert "CumSum writing 'cs'" in kept and "Mul writing 'nn'" in kept and "Add writing 'amp'" in kept
    assert report.assumed == ["input 'ids' holds int32 values (given as int64)"]
    assert report.wide_only == {"ArgMax": 1, "Reshape": 1, "Shape": 1}
    assert not report.inexact
    for feeds in token_feeds():
        for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
            assert_same_bits(got, want)


def test_a_constant_nothing_reads_is_kept_as_it_is_whatever_it_holds():
    """An initializer no node reads (left by a fold, as --target leaves bert's Slice ends) is no
    value of a node's type: one past int32 is kept, wide, not refused."""
    nodes = [helper.make_node("Add", ["x", "one"], ["y"])]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.INT64, [2])],
        [helper.make_tensor_value_info("y", T.INT64, [2])],
        opset=13,
        initializer=[constant("one", [1]), constant("unread", [INT64_MAX])],
    )
    retyped = lowering.lower(model, ops=[], retype="int64=int32")
    onnx.checker.check_model(retyped, full_check=True)
    kept = {t.name: t for t in retyped.graph.initializer}
    assert kept["unread"].data_type == T.INT64 and numpy_helper.to_array(kept["unread"]).tolist() == [INT64_MAX]


def test_slice_to_the_end_keeps_its_meaning_with_int32_bounds():
    """Slice clamps starts and ends to the dimension: INT64_MAX and INT64_MIN become int32's
    extremes and slice alike, forwards and backwards."""
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"]),
        helper.make_node("Slice", ["x", "rstarts", "rends", "axes", "rsteps"], ["z"]),
    ]
    initializers = [
        constant("starts", [1]),
        constant("ends", [INT64_MAX]),
        constant("axes", [0]),
        constant("steps", [1]),
        constant("rstarts", [INT64_MAX]),
        constant("rends", [INT64_MIN]),
        constant("rsteps", [-2]),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.INT64, ["n"])],
        [helper.make_tensor_value_info(name, T.INT64, [None]) for name in "yz"],
        opset=13,
        initializer=initializers,
    )
    retyped = lowering.lower(model, ops=[], retype="int64=int32")
    onnx.checker.check_model(retyped, full_check=True)
    assert {t.name: t.data_type for t in retyped.graph.initializer}["ends"] == T.INT32
    for length in (0, 1, 2, 7):
        feeds = {"x": np.arange(length, dtype=np.int64) * 3 - 5}
        for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
            assert_same_bits(got, want)


def add_constant_model(value: int, element_type: int = T.INT64) -> onnx.ModelProto:
    dtype = {T.INT64: np.int64, T.UINT64: np.uint64}[element_type]
    return make_model(
        [helper.make_node("Add", ["x", "c"], ["y"], name="add_c")],
        [helper.make_tensor_value_info("x", element_type, [2])],
        [helper.make_tensor_value_info("y", element_type, [2])],
        opset=18,
        initializer=[constant("c", [value, 1], dtype)],
    )


def test_a_constant_that_does_not_fit_is_refused_naming_it_and_its_reader():
    with pytest.raises(lowering.RetypeRefused) as refused:
        lowering.lower(add_constant_model(2**40), ops=[], retype="int64=int32")
    assert refused.value.reasons == [
        "initializer 'c' holds 1099511627776, which int32 cannot hold (read by Add 'add_c')"
    ]
    with pytest.raises(lowering.RetypeRefused, match="holds -2147483649, which int32"):
        lowering.lower(add_constant_model(-(2**31) - 1), ops=[], retype="int64=int32")
    with pytest.raises(lowering.RetypeRefused, match="holds 4294967296, which uint32"):
        lowering.lower(add_constant_model(2**32, T.UINT64), ops=[], retype="uint64=uint32")


def test_a_constant_that_does_not_fit_leaves_nothing_written(tmp_path):
    source = tmp_path / "big.onnx"
    onnx.save(add_constant_model(2**40), source)
    before = source.read_bytes()
    output = tmp_path / "out.onnx"
    completed = run_cli_in_process(str(source), "-o", str(output), "--retype", "int64=int32")
    assert completed.returncode != 0
    assert "initializer 'c' holds 1099511627776, which int32 cannot hold" in one_error_line(completed)
    assert not output.exists() and source.read_bytes() == before


def test_values_that_fit_add_exactly_in_int32():
    """An Add whose inputs are bounded (an input assumed to fit int32 and a small constant)
    may still overflow int32: it stays int64. With values that fit, the sum is exact."""
    model = add_constant_model(7)
    result = lowering.lower_model(model, ops=[], retype="int64=int32")
    assert any("Add 'add_c'" in why for why in result.report.retyping.kept_wide)
    feeds = {"x": np.array([2**31 - 1, -(2**31)], np.int64)}
    for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)


def test_retype_io_retypes_inputs_and_outputs_where_every_value_fits():
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["table", "ids"], ["y"]),
        helper.make_node("ArgMax", ["y"], ["i"], axis=1, keepdims=0),
    ]
    table = constant("table", np.arange(40).reshape(10, 4) - 20)
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.FLOAT, [3, 4]), helper.make_tensor_value_info("ids", T.INT64, [5])],
        [helper.make_tensor_value_info(n, T.INT64, r) for n, r in [("s", [2]), ("y", [5, 4]), ("i", [5])]],
        opset=18,
        initializer=[table],
    )
    retyped = lowering.lower(model, ops=[], retype="int64=int32", retype_io=True)
    onnx.checker.check_model(retyped, full_check=True)
    assert [i.type.tensor_type.elem_type for i in retyped.graph.input] == [T.FLOAT, T.INT32]
    assert [o.type.tensor_type.elem_type for o in retyped.graph.output] == [T.INT32] * 3
    ids = np.array([0, 9, 3, 3, 5], np.int64)
    x = np.zeros((3, 4), np.float32)
    want = run_onnxruntime(model, {"x": x, "ids": ids})
    got = run_onnxruntime(retyped, {"x": x, "ids": ids.astype(np.int32)})
    for g, w in zip(got, want, strict=True):
        assert_same_bits(g, w.astype(np.int32))


def test_verify_feeds_a_model_retyped_at_its_interface_the_types_it_declares(tmp_path):
    """``onnx-lower verify ORIGINAL LOWERED --inputs run.npz``, LOWERED retyped with --retype-io:
    the int64 ids given are fed to it as the int32 it declares, and its int32 outputs compared as
    the original's int64 (it said "Unexpected input data type"); a model whose interface is not
    so retyped is fed as given."""
    ids = np.array([0, 9, 3, 3, 5], np.int64)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"])]
    model = make_model(nodes, [helper.make_tensor_value_info("ids", T.INT64, [5])],
                       [helper.make_tensor_value_info("y", T.INT64, [5, 4])], opset=18,
                       initializer=[constant("table", np.arange(40).reshape(10, 4) - 20)])  # fmt: skip
    retyped = lowering.lower(model, ops=[], retype="int64=int32", retype_io=True)
    assert [i.type.tensor_type.elem_type for i in retyped.graph.input] == [T.INT32]
    original_path, retyped_path, inputs = tmp_path / "m.onnx", tmp_path / "r.onnx", tmp_path / "run.npz"
    onnx.save(model, original_path)
    onnx.save(retyped, retyped_path)
    np.savez(inputs, ids=ids)
    ran = run_cli_in_process("verify", str(original_path), str(retyped_path), "--inputs", str(inputs))
    assert ran.returncode == 0 and "MATCH" in ran.stdout and not ran.stderr, ran.stderr
    assert compare.verify(model, model, inputs=[{"ids": ids}]).match

    # (an output turned into another type than a retyping's is a mismatch, narrowed input or not)
    def cast_model(input_type, output_type):
        nodes = [helper.make_node("Cast", ["x"], ["y"], to=output_type)]
        return make_model(nodes, [helper.make_tensor_value_info("x", input_type, [3])],
                          [helper.make_tensor_value_info("y", output_type, [3])], opset=17)  # fmt: skip

    assert not compare.verify(cast_model(T.INT64, T.DOUBLE), cast_model(T.INT32, T.INT8)).match
    assert compare.verify(cast_model(T.INT64, T.DOUBLE), cast_model(T.INT32, T.FLOAT)).match


def test_retype_io_refuses_an_output_that_may_not_fit():
    with pytest.raises(lowering.RetypeRefused, match="output 'cs' may not fit int32"):
        lowering.lower(token_model(), ops=[], retype="int64=int32", retype_io=True)


def float64_model() -> onnx.ModelProto:
    weights = numpy_helper.from_array(np.random.default_rng(2).standard_normal((4, 3)), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Cast", ["r"], ["y"], to=T.DOUBLE),
        helper.make_node("ConstantOfShape", ["shape"], ["fill"], value=numpy_helper.from_array(np.array([0.1]))),
    ]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.DOUBLE, [2, 4])],
        [helper.make_tensor_value_info("y", T.DOUBLE, [2, 3]), helper.make_tensor_value_info("fill", T.DOUBLE, [2])],
        opset=18,
        initializer=[weights, constant("shape", [2])],
    )


def test_float64_goes_to_float32_within_float32_rounding_and_says_so():
    model = float64_model()
    result = lowering.lower_model(model, ops=[], retype="float64=float32")
    retyped = result.model
    onnx.checker.check_model(retyped, full_check=True)
    types = element_types(retyped)
    assert types["h"] == types["r"] == types["w"] == T.FLOAT and types["y"] == T.DOUBLE
    cast = next(node for node in retyped.graph.node if node.output == ["y_narrow"])
    assert cast.attribute[0].i == T.FLOAT  # Cast's `to` narrowed too
    assert result.report.retyping.inexact  # never called exact
    x = np.random.default_rng(3).standard_normal((2, 4))
    x = x.astype(np.float32).astype(np.float64)  # (values float32 holds: only the arithmetic rounds)
    got, want = run_onnxruntime(retyped, {"x": x}), run_onnxruntime(model, {"x": x})
    assert got[0].dtype == np.float64
    np.testing.assert_allclose(got[0], want[0], rtol=4 * np.finfo(np.float32).eps, atol=0)
    np.testing.assert_array_equal(got[1], np.float32(0.1).astype(np.float64))


def test_a_float_constant_past_the_narrow_types_largest_is_refused():
    model = make_model(
        [helper.make_node("Mul", ["x", "c"], ["y"])],
        [helper.make_tensor_value_info("x", T.DOUBLE, [1])],
        [helper.make_tensor_value_info("y", T.DOUBLE, [1])],
        opset=18,
        initializer=[constant("c", [1e300], np.float64)],
    )
    with pytest.raises(lowering.RetypeRefused, match="initializer 'c' holds a value past float32's largest"):
        lowering.lower(model, ops=[], retype="float64=float32")


def bfloat16_tensor(name: str, values) -> onnx.TensorProto:
    array = np.array(values, np.float32).astype(ml_dtypes.bfloat16)
    return helper.make_tensor(name, T.BFLOAT16, array.shape, array.view(np.uint16).tobytes(), raw=True)


@pytest.mark.parametrize("narrow", ["float16", "float32"])
def test_bfloat16_narrows_with_a_stated_rounding(narrow):
    model = make_model(
        [helper.make_node("Mul", ["x", "c"], ["m"]), helper.make_node("Add", ["m", "c"], ["y"])],
        [helper.make_tensor_value_info("x", T.BFLOAT16, [4])],
        [helper.make_tensor_value_info("y", T.BFLOAT16, [4])],
        opset=18,
        initializer=[bfloat16_tensor("c", [0.5, -2.0, 3.0, 0.125])],
    )
    result = lowering.lower_model(model, ops=[], retype=f"bfloat16={narrow}")
    onnx.checker.check_model(result.model, full_check=True)
    assert element_types(result.model)["m"] == {"float16": T.FLOAT16, "float32": T.FLOAT}[narrow]
    assert result.report.retyping.inexact
    x = np.array([1.0, 2.0, -3.0, 100.0], np.float32)
    want = x * np.array([0.5, -2.0, 3.0, 0.125], np.float32) + np.array([0.5, -2.0, 3.0, 0.125], np.float32)
    (got,) = OnnxruntimeRunner(result.model)({"x": x.astype(ml_dtypes.bfloat16)})
    np.testing.assert_allclose(np.asarray(got, np.float32), want, rtol=1e-2)


def test_bfloat16_to_float16_refuses_a_constant_float16_cannot_hold():
    model = make_model(
        [helper.make_node("Mul", ["x", "c"], ["y"])],
        [helper.make_tensor_value_info("x", T.BFLOAT16, [1])],
        [helper.make_tensor_value_info("y", T.BFLOAT16, [1])],
        opset=18,
        initializer=[bfloat16_tensor("c", [1e10])],
    )
    with pytest.raises(lowering.RetypeRefused, match="past float16's largest"):
        lowering.lower(model, ops=[], retype="bfloat16=float16")
    assert lowering.lower(model, ops=[], retype="bfloat16=float32").graph.initializer[0].data_type == T.FLOAT


def branch(name: str, nodes: list[onnx.NodeProto], output: str) -> onnx.GraphProto:
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(output, T.INT64, [None])])


def test_if_branches_are_retyped_inside_and_give_back_int64():
    """Each branch computes in int32 where its values fit (a Shape's size less a constant, an
    outer int64 input read inside) and gives its output back as int64: the If's type is kept,
    and its output's range is the branches' hull, so a reader may take it narrow."""
    then = branch(
        "then",
        [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Sub", ["s", "two"], ["t_out"])],
        "t_out",
    )
    other = branch("else", [helper.make_node("Gather", ["ids", "zero"], ["e_out"])], "e_out")
    nodes = [
        helper.make_node("If", ["c"], ["picked"], then_branch=then, else_branch=other, name="choice"),
        helper.make_node("Gather", ["table", "picked"], ["y"]),
    ]
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("c", T.BOOL, []),
            helper.make_tensor_value_info("x", T.FLOAT, [3]),
            helper.make_tensor_value_info("ids", T.INT64, [4]),
        ],
        [helper.make_tensor_value_info("y", T.FLOAT, [None]), helper.make_tensor_value_info("picked", T.INT64, [None])],
        opset=18,
        initializer=[
            constant("two", [2]),
            constant("zero", [0]),
            numpy_helper.from_array(np.arange(8.0, dtype=np.float32), "table"),
        ],
    )
    result = lowering.lower_model(model, ops=[], retype="int64=int32")
    retyped = result.model
    onnx.checker.check_model(retyped, full_check=True)
    (if_node,) = [node for node in retyped.graph.node if node.op_type == "If"]
    branches = {attribute.name: attribute.g for attribute in if_node.attribute}
    then_ops = [node.op_type for node in branches["then_branch"].node]
    assert then_ops == ["Shape", "Cast", "Sub", "Cast"]  # Shape int64 -> int32, Sub in int32, back to int64
    gather = next(node for node in retyped.graph.node if node.op_type == "Gather")
    assert gather.input[1] != "picked"  # read narrow: the branches' hull fits
    for c in (True, False):
        feeds = {"c": np.array(c), "x": np.zeros(3, np.float32), "ids": np.array([5, 1, 2, 3], np.int64)}
        for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
            assert_same_bits(got, want)


def test_a_loop_body_keeps_its_carried_int64_and_narrows_what_fits():
    """A Loop's carried count may grow past int32 (its range is unbounded): it stays int64; a
    size the body reads from a Shape goes int32 and back."""
    body = helper.make_graph(
        [
            helper.make_node("Shape", ["x"], ["s"]),
            helper.make_node("Gather", ["s", "zero"], ["n"]),
            helper.make_node("Add", ["acc", "n"], ["acc_out"]),
            helper.make_node("Identity", ["cond"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", T.INT64, []),
            helper.make_tensor_value_info("cond", T.BOOL, []),
            helper.make_tensor_value_info("acc", T.INT64, []),
        ],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []), helper.make_tensor_value_info("acc_out", T.INT64, [])],
    )
    model = make_model(
        [helper.make_node("Loop", ["trips", "", "start"], ["total"], body=body)],
        [helper.make_tensor_value_info("x", T.FLOAT, [5]), helper.make_tensor_value_info("trips", T.INT64, [])],
        [helper.make_tensor_value_info("total", T.INT64, [])],
        opset=18,
        initializer=[constant("start", 2**40), constant("zero", 0)],
    )
    result = lowering.lower_model(model, ops=[], retype="int64=int32")
    retyped = result.model
    onnx.checker.check_model(retyped, full_check=True)
    assert any("Add writing 'acc_out'" in why for why in result.report.retyping.kept_wide)
    feeds = {"x": np.zeros(5, np.float32), "trips": np.array(3, np.int64)}
    for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)
    assert int(run_onnxruntime(retyped, feeds)[0]) == 2**40 + 15


def test_a_local_function_is_retyped_inside_keeping_its_signature():
    function = helper.make_function(
        "local",
        "sizes",
        ["v"],
        ["out"],
        [
            helper.make_node("Shape", ["v"], ["s"]),
            helper.make_node("Constant", [], ["one"], value_ints=[1]),
            helper.make_node("Sub", ["s", "one"], ["out"]),
        ],
        [helper.make_opsetid("", 18)],
    )
    model = make_model(
        [helper.make_node("sizes", ["x"], ["y"], domain="local")],
        [helper.make_tensor_value_info("x", T.FLOAT, [3, 4])],
        [helper.make_tensor_value_info("y", T.INT64, [2])],
        opset=18,
        functions=[function],
        extra_opsets={"local": 1},
    )
    retyped = lowering.lower(model, ops=[], retype="int64=int32")
    onnx.checker.check_model(retyped, full_check=True)
    body = retyped.functions[0]
    assert [node.op_type for node in body.node] == ["Shape", "Constant", "Cast", "Sub", "Cast"]
    assert body.node[1].attribute[0].t.data_type == T.INT32
    feeds = {"x": np.zeros((3, 4), np.float32)}
    for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)


@pytest.mark.parametrize(
    "text, message",
    [
        ("int64=int16", "cannot retype int64 to int16; offered: int64=int32, uint64=uint32"),
        ("int64", "--retype takes FROM=TO pairs"),
        ("int65=int32", "'int65' is no element type onnx knows"),
        ("int64=int32,int64=int32", "int64 is retyped twice"),
    ],
)
def test_a_bad_retype_is_one_clear_line(text, message, tmp_path):
    with pytest.raises(lowering.LoweringError, match=message):
        parse_retypings(text)
    source = tmp_path / "m.onnx"
    onnx.save(add_constant_model(1), source)
    completed = run_cli_in_process(str(source), "-o", str(tmp_path / "o.onnx"), "--retype", text)
    assert completed.returncode != 0 and message in one_error_line(completed)


def test_the_command_line_verifies_a_retyped_model_on_the_originals_inputs(tmp_path):
    source = tmp_path / "f64.onnx"
    onnx.save(float64_model(), source)
    output = tmp_path / "f32.onnx"
    exact = run_cli_in_process(str(source), "-o", str(output), "--retype", "float64=float32", "--verify")
    assert exact.returncode == 1 and "--retype rounds floats" in exact.stderr and not output.exists()
    within = run_cli_in_process(
        str(source), "-o", str(output), "--retype", "float64=float32,int64=int32", "--retype-io", "--verify",
        "--rtol", "1e-5", "--atol", "1e-6",
    )  # fmt: skip
    assert within.returncode == 0, within.stderr
    assert "MATCH" in within.stdout and "not exact: initializer 'w' rounded to float32" in within.stdout
    written = onnx.load(output)
    assert written.graph.input[0].type.tensor_type.elem_type == T.FLOAT


EXPORTS = sorted(
    glob.glob(str(ROOT / "golden" / "corpus" / "*.onnx")) + glob.glob(str(ROOT / "golden" / "exports" / "*.onnx"))
)


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("path", EXPORTS, ids=[Path(p).stem for p in EXPORTS])
def test_real_exports_retyped_to_int32_inside_run_and_match(path):
    """Every transformers, timm and PyTorch export of the corpus, int64 to int32 inside: the
    checker passes, onnxruntime runs it, and every output is the original's, bit for bit, on the
    export's own inputs."""
    model = onnx.load(path)
    data = np.load(path[: -len(".onnx")] + ".npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    retyped = lowering.lower(model, ops=[], retype="int64=int32")
    onnx.checker.check_model(retyped, full_check=True)
    for got, want in zip(run_onnxruntime(retyped, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)


def external_model(folder: Path, indices: np.ndarray) -> Path:
    """Gather by int64 indices and a float64 product, both weights held in external data."""
    weights = numpy_helper.from_array(np.linspace(-3.0, 3.0, indices.size), "w")
    model = make_model(
        [helper.make_node("Gather", ["x", "idx"], ["y"]), helper.make_node("Mul", ["w", "w"], ["z"])],
        [helper.make_tensor_value_info("x", T.FLOAT, [7])],
        [
            helper.make_tensor_value_info("y", T.FLOAT, [indices.size]),
            helper.make_tensor_value_info("z", T.DOUBLE, [indices.size]),
        ],
        opset=18,
        initializer=[numpy_helper.from_array(indices, "idx"), weights],
    )
    path = folder / "ext.onnx"
    onnx.save(model, path, save_as_external_data=True, location="ext.data", size_threshold=0)
    return path


def test_external_data_is_read_in_chunks_and_written_inline(tmp_path, monkeypatch):
    monkeypatch.setattr(lowering.retyping, "CHUNK_VALUES", 100)  # (many chunks from a small file)
    source = external_model(tmp_path, np.arange(1000, dtype=np.int64) % 7)
    data_before = (tmp_path / "ext.data").read_bytes()
    output = tmp_path / "out.onnx"
    completed = run_cli_in_process(
        str(source),
        "-o",
        str(output),
        "--retype",
        "int64=int32,float64=float32",
        "--verify",
        "--rtol",
        "1e-6",
        "--atol",
        "0",
    )
    assert completed.returncode == 0, completed.stderr
    written = onnx.load(output)
    assert {t.name: t.data_type for t in written.graph.initializer} == {"idx": T.INT32, "w": T.FLOAT}
    np.testing.assert_array_equal(numpy_helper.to_array(written.graph.initializer[0]), np.arange(1000) % 7)
    assert (tmp_path / "ext.data").read_bytes() == data_before  # the input is never changed
    unloaded = onnx.load(source, load_external_data=False)
    with pytest.raises(lowering.RetypeRefused, match="'idx' is held in external data, whose folder is not known"):
        lowering.lower(unloaded, ops=[], retype="int64=int32")
    retyped = lowering.lower_model(unloaded, ops=[], retype="int64=int32", external_folder=tmp_path).model
    assert numpy_helper.to_array(retyped.graph.initializer[0]).dtype == np.int32


def test_an_external_value_that_does_not_fit_is_found_in_a_late_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(lowering.retyping, "CHUNK_VALUES", 100)
    indices = np.zeros(1000, np.int64)
    indices[950] = 2**33
    source = external_model(tmp_path, indices)
    output = tmp_path / "out.onnx"
    completed = run_cli_in_process(str(source), "-o", str(output), "--retype", "int64=int32")
    assert "initializer 'idx' holds 8589934592, which int32 cannot hold" in one_error_line(completed)
    assert not output.exists() and not (tmp_path / "out.onnx.data").exists()


def int_runtime():
    """A made-up probed runtime that runs Add and Mul on int32 and float, never on int64."""
    from lowering.runtime_profiles import profile_from_data

    cases = {
        f"{op}_{type_name}": {"op": op, "version": version, "type": type_name, "verdict": verdict}
        for op, version in (("Add", 14), ("Mul", 14), ("Gather", 13), ("Shape", 15), ("Sub", 14))
        for type_name, verdict in (("INT32", "right"), ("FLOAT", "right"), ("INT64", "fails"))
    }
    return profile_from_data(
        {"name": "int32-only", "runtime": "made-up", "runtime_version": "0", "source": {"kind": "probed"},
         "opsets": [18], "cases": cases}
    )  # fmt: skip


def test_check_names_the_pattern_where_target_lowers_the_node_before_it_would_retype():
    """CastLike int64 -> int32 refused on int64 and run on int32, its pattern's Cast run on
    int64: --target lowers it to that Cast (a pattern before a retyping), and check says so,
    not --retype."""
    from lowering.api import lowerable_ops
    from lowering.runtime_profiles import profile_from_data
    from lowering.target_lowering import check_model

    cases = {
        f"{op}_{type_name}": {"op": op, "version": 21, "type": type_name, "verdict": verdict}
        for op, type_name, verdict in (("CastLike", "INT64", "wrong"), ("CastLike", "INT32", "right"),
                                       ("Cast", "INT64", "right"))
    }  # fmt: skip
    runtime = profile_from_data(
        {"name": "castlike-int32", "runtime": "made-up", "runtime_version": "0", "source": {"kind": "probed"},
         "opsets": [21], "cases": cases}
    )  # fmt: skip
    model = make_model(
        [helper.make_node("CastLike", ["x", "like"], ["y"])],
        [helper.make_tensor_value_info("x", T.INT64, [3])],
        [helper.make_tensor_value_info("y", T.INT32, [3])],
        opset=21,
        initializer=[constant("like", [0], np.int32)],
    )
    (blocker,) = [f for f in check_model(model, runtime, lowerable=lowerable_ops()) if f.blocks]
    assert blocker.op_type == "CastLike" and blocker.fix == "lowered by its pattern (--ops CastLike)"
    result = lowering.lower_model(model, target=runtime)
    assert [n.op_type for n in result.model.graph.node] == ["Cast"] and result.report.retyping is None
    feeds = {"x": np.array([1, -5, 2**40 + 7], np.int64)}
    assert_same_bits(run_onnxruntime(result.model, feeds)[0], run_onnxruntime(model, feeds)[0])


def test_a_target_refusing_int64_gets_int32_where_the_op_runs_on_it():
    """Sub of a Shape's size and a constant: refused on int64, run on int32: --target retypes
    (the values provably fit) and check then finds nothing to block."""
    from lowering.target_lowering import check_model

    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Sub", ["s", "one"], ["y"])]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", T.INT64, [2])],
        opset=18,
        initializer=[constant("one", [1])],
    )
    runtime = int_runtime()
    (blocker,) = [f for f in check_model(model, runtime) if f.blocks]
    assert blocker.op_type == "Sub" and blocker.fix == "retyped to int32 (--retype int64=int32)"
    result = lowering.lower_model(model, target=runtime)
    assert not [f for f in check_model(result.model, runtime) if f.blocks]
    assert result.report.retyping.retyped == {"int64->int32": 2}
    feeds = {"x": np.zeros((3, 4), np.float32)}
    for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)


def test_a_target_retypes_where_it_chose_a_form_too():
    """The same, with a Mul(x, c) the target writes Mul(c, x) (its trials found whole models
    better so): the form chosen does not stop the retyping."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Sub", ["s", "one"], ["y"]),
        helper.make_node("Mul", ["x", "c"], ["z"]),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", T.INT64, [2]), helper.make_tensor_value_info("z", T.FLOAT, ["n", 4])],
        opset=18,
        initializer=[constant("one", [1]), numpy_helper.from_array(np.arange(4, dtype=np.float32), "c")],
    )
    runtime = int_runtime().taking_forms(["constant factor first"])
    result = lowering.lower_model(model, target=runtime)
    assert result.report.retyping.retyped == {"int64->int32": 2}
    assert [list(node.input) for node in result.model.graph.node if node.op_type == "Mul"] == [["c", "x"]]
    feeds = {"x": np.ones((3, 4), np.float32)}
    for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds), strict=True):
        assert_same_bits(got, want)


def test_tensorrt_takes_no_float64_so_its_target_retypes_with_the_inputs_when_asked(tmp_path):
    source = tmp_path / "f64.onnx"
    onnx.save(float64_model(), source)
    output = tmp_path / "trt.onnx"
    refused = run_cli_in_process(str(source), "-o", str(output), "--target", "tensorrt-10")
    assert refused.returncode == 4 and not output.exists()
    assert "--retype-io: the model's inputs and outputs change type" in refused.stderr
    done = run_cli_in_process(str(source), "-o", str(output), "--target", "tensorrt-10", "--retype-io")
    assert done.returncode == 0, done.stderr
    assert "not exact: float64 arithmetic now rounds as float32 does" in done.stdout
    checked = run_cli_in_process("check", str(output), "--target", "tensorrt-10")
    assert checked.returncode == 0 and "0 blockers" in checked.stdout


def assert_retyped_alike(model, feeds_list, retype="int64=int32", retype_io=False) -> onnx.ModelProto:
    """``model`` retyped: the full checker passes and every output is the original's, bit for bit."""
    retyped = lowering.lower(model, ops=[], retype=retype, retype_io=retype_io)
    onnx.checker.check_model(retyped, full_check=True)
    for feeds in feeds_list:
        given = feeds
        if retype_io:
            declared = {i.name: i.type.tensor_type.elem_type for i in retyped.graph.input}
            given = {k: v.astype(helper.tensor_dtype_to_np_dtype(declared[k])) for k, v in feeds.items()}
        for got, want in zip(run_onnxruntime(retyped, given), run_onnxruntime(model, feeds), strict=True):
            assert_same_bits(got.astype(want.dtype) if retype_io else got, want)
    return retyped


def vi(name, element_type, shape):
    return helper.make_tensor_value_info(name, element_type, shape)


def test_sibling_branches_may_reuse_a_name_of_another_type_or_range():
    """Two If branches may each define 't': one int64 constant 5, the other float 2.5, or the
    other Mul(x, x): each branch's types and ranges are its own."""
    then_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["t"], value_ints=[5]), helper.make_node("Cast", ["t"], ["o1"], to=T.FLOAT)],
        "then", [], [vi("o1", T.FLOAT, [1])],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["t"], value_floats=[2.5]),
         helper.make_node("Cast", ["t"], ["o2"], to=T.FLOAT)],
        "else", [], [vi("o2", T.FLOAT, [1])],
    )  # fmt: skip
    model = make_model(
        [helper.make_node("If", ["c"], ["r"], then_branch=then_branch, else_branch=else_branch)],
        [vi("c", T.BOOL, [])], [vi("r", T.FLOAT, [1])], opset=18,
    )  # fmt: skip
    assert_retyped_alike(model, [{"c": np.array(True)}, {"c": np.array(False)}])
    then_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["t"], value_ints=[5])], "then", [], [vi("t", T.INT64, [1])]
    )
    else_branch = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["t"])], "else", [], [vi("t", T.INT64, [1])])
    model = make_model(
        [
            helper.make_node("If", ["c"], ["r"], then_branch=then_branch, else_branch=else_branch),
            helper.make_node("Add", ["r", "one"], ["y"]),
        ],
        [vi("c", T.BOOL, []), vi("x", T.INT64, [1])], [vi("y", T.INT64, [1])], opset=18,
        initializer=[constant("one", [1])],
    )  # fmt: skip
    feeds = [{"c": np.array(c), "x": np.array([100000], np.int64)} for c in (True, False)]
    assert_retyped_alike(model, feeds)


def test_what_sums_or_reads_past_the_inputs_values_stays_exact():
    """ConstantOfShape's int64 fill past int32 (kept wide) and at its edge (the Add after it
    stays int64); ScatterND adding updates in; MaxPool's indices; ReduceMax over an empty axis
    (int64's lowest value, not int32's)."""
    big = numpy_helper.from_array(np.array([2**33 + 5], np.int64))
    edge = numpy_helper.from_array(np.array([2**31 - 1], np.int64))
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["c"], value=big),
        helper.make_node("ConstantOfShape", ["shape"], ["e"], value=edge),
        helper.make_node("Add", ["e", "one"], ["f"]),
        helper.make_node("Slice", ["e", "zero", "one", "zero"], ["e1"]),
        helper.make_node("ScatterND", ["e", "where", "e1"], ["s"], reduction="add"),
        helper.make_node("ReduceMax", ["x", "axis"], ["m"], keepdims=0),
    ]
    model = make_model(
        nodes,
        [vi("x", T.INT64, [0, 2])],
        [vi("c", T.INT64, [3]), vi("f", T.INT64, [3]), vi("s", T.INT64, [3]), vi("m", T.INT64, [2])],
        opset=18,
        initializer=[
            constant("shape", [3]), constant("one", [1]), constant("zero", [0]), constant("where", [[0]]),
            constant("axis", [0]),
        ],
    )  # fmt: skip
    assert_retyped_alike(model, [{"x": np.zeros((0, 2), np.int64)}])
    pooled = make_model(
        [
            helper.make_node("MaxPool", ["x"], ["p", "i"], kernel_shape=[1, 1]),
            helper.make_node("Mul", ["i", "scale"], ["y"]),
        ],
        [vi("x", T.INT8, [1, 1, 16, 16])], [vi("y", T.INT64, [1, 1, 16, 16]), vi("p", T.INT8, [1, 1, 16, 16])],
        opset=12,
        initializer=[constant("scale", [2**24])],
    )  # fmt: skip
    x = np.arange(256, dtype=np.int64).astype(np.int8).reshape(1, 1, 16, 16)
    assert_retyped_alike(pooled, [{"x": x}])


def test_ops_typing_their_output_by_their_input_or_lacking_int32_kernels_stay_wide():
    """EyeLike without dtype takes its input's type; Unique and OneHot have no int32 kernel in
    onnxruntime: each stays as it was."""
    eye = make_model(
        [helper.make_node("Mul", ["a", "a"], ["p"]), helper.make_node("EyeLike", ["p"], ["e"]),
         helper.make_node("Add", ["e", "one"], ["y"])],
        [vi("a", T.INT64, [3, 3])], [vi("y", T.INT64, [3, 3])], opset=18, initializer=[constant("one", 1)],
    )  # fmt: skip
    assert_retyped_alike(eye, [{"a": np.full((3, 3), 2**20, np.int64)}])
    unique = make_model(
        [helper.make_node("Unique", ["x"], ["u"], sorted=1)],
        [vi("x", T.INT64, [6])],
        [vi("u", T.INT64, ["k"])],
        opset=18,
    )
    assert_retyped_alike(unique, [{"x": np.array([3, 1, 3, 9, -4, 1], np.int64)}])
    one_hot = make_model(
        [helper.make_node("OneHot", ["x", "d", "vals"], ["y"])], [vi("x", T.INT64, [3])], [vi("y", T.INT64, [3, 5])],
        opset=18, initializer=[constant("d", 5), constant("vals", [0, 7])],
    )  # fmt: skip
    assert_retyped_alike(one_hot, [{"x": np.array([0, 4, -1], np.int64)}])


@pytest.mark.skipif(onnx.defs.onnx_opset_version() < 26, reason="BitCast is defined from opset 26")
def test_bitcast_reads_its_inputs_bits_and_stays_wide():
    """BitCast(int64 -> double) reinterprets 64 bits: retyped to int32 -> float it would mean
    another number, so it stays as it was, with both retypings asked."""
    bits = make_model(
        [helper.make_node("BitCast", ["x"], ["d"], to=T.DOUBLE)], [vi("x", T.INT64, [1])], [vi("d", T.DOUBLE, [1])],
        opset=26,
    )  # fmt: skip
    retyped = assert_retyped_alike(bits, [{"x": np.array([4], np.int64)}], retype="int64=int32,float64=float32")
    assert [(n.op_type, n.attribute[0].i) for n in retyped.graph.node] == [("BitCast", T.DOUBLE)]


def test_a_clamped_bound_that_is_also_an_output_is_refused_with_retype_io():
    model = make_model(
        [helper.make_node("Slice", ["x", "start", "end"], ["y"])],
        [vi("x", T.FLOAT, [4])], [vi("y", T.FLOAT, [3]), vi("end", T.INT64, [1])], opset=13,
        initializer=[constant("start", [1]), constant("end", [INT64_MAX])],
    )  # fmt: skip
    with pytest.raises(lowering.RetypeRefused, match="initializer 'end' holds 9223372036854775807"):
        lowering.lower(model, ops=[], retype="int64=int32", retype_io=True)
    assert_retyped_alike(model, [{"x": np.arange(4, dtype=np.float32)}])  # (kept int64 without retype_io)


def test_an_output_listed_twice_and_a_functions_value_info_are_retyped_once():
    twice = make_model(
        [helper.make_node("Shape", ["x"], ["s"])], [vi("x", T.FLOAT, [2, 3])], [vi("s", T.INT64, [2])] * 2, opset=18
    )
    assert_retyped_alike(twice, [{"x": np.zeros((2, 3), np.float32)}], retype_io=True)
    function = helper.make_function(
        "local", "sizes", ["v"], ["out"],
        [helper.make_node("Shape", ["v"], ["s"]), helper.make_node("Constant", [], ["one"], value_ints=[1]),
         helper.make_node("Sub", ["s", "one"], ["out"])],
        [helper.make_opsetid("", 18)],
    )  # fmt: skip
    function.value_info.extend([vi("one", T.INT64, [1])])
    model = make_model(
        [helper.make_node("sizes", ["x"], ["y"], domain="local")], [vi("x", T.FLOAT, [3, 4])], [vi("y", T.INT64, [2])],
        opset=18, functions=[function], extra_opsets={"local": 1},
    )  # fmt: skip
    retyped = assert_retyped_alike(model, [{"x": np.zeros((3, 4), np.float32)}])
    assert [i.type.tensor_type.elem_type for i in retyped.functions[0].value_info] == [T.INT32]
    from onnx import inliner

    onnx.checker.check_model(inliner.inline_local_functions(retyped), full_check=True)


def test_verify_still_tells_an_output_of_another_type_without_retype_io():
    """Casting outputs to the original's type is for a model retyped with retype_io only."""
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])], [vi("x", T.INT64, [2])], [vi("y", T.INT64, [2])], opset=18
    )
    other = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=T.INT32)], [vi("x", T.INT64, [2])], [vi("y", T.INT32, [2])], opset=18
    )
    assert not lowering.verify(model, other).match
    retyped = lowering.lower(model, ops=[], retype="int64=int32", retype_io=True)
    assert lowering.verify(model, retyped, retyped_io=True).match
