"""Folding the values shapes decide (lowering/shape_folding.py): what the lowering writes by
default, the model's own with fold="all", nothing with fold="none"; exact, bit for bit."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, runs_in_onnxruntime, slow_but_a_sample
from version_cases import node_cases

import lowering
from lowering.verification.runtime import run_reference

SHAPE_OPS = {"Shape", "Size", "Range", "ConstantOfShape"}
BODY_OPS = ("Attention", "RMSNormalization", "LayerNormalization", "GroupNormalization", "Gelu", "Mish", "HardSwish")


@functools.lru_cache(maxsize=1)
def _static_body_cases():
    return [
        case
        for case in node_cases()
        if "expanded" not in case.name and any(node.op_type in BODY_OPS for node in case.model.graph.node)
    ]


def op_types(model: onnx.ModelProto) -> set[str]:
    return {node.op_type for node in model.graph.node}


def outputs_of(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    return runs_in_onnxruntime(model, feeds) or run_reference(model, feeds)


@slow_but_a_sample(keep=4)
@pytest.mark.parametrize("name", [case.name for case in _static_body_cases()])
def test_bodies_at_static_shapes_hold_no_shape_arithmetic_and_mean_the_same(name):
    """The backend cases (static shapes) of ops lowered by their bodies: no Shape, Size, Range or
    ConstantOfShape left, and the outputs those of the unfolded model, bit for bit."""
    (case,) = [case for case in _static_body_cases() if case.name == name]
    op = next(node.op_type for node in case.model.graph.node if node.op_type in BODY_OPS)
    unfolded = lowering.lower_model(case.model, ops=[op], fold="none").model
    folded = lowering.lower_model(case.model, ops=[op])
    assert not op_types(folded.model) & SHAPE_OPS
    assert len(folded.model.graph.node) <= len(unfolded.graph.node)
    onnx.checker.check_model(folded.model, full_check=True)
    for inputs, _ in case.data_sets:
        feeds = {info.name: value for info, value in zip(case.model.graph.input, inputs, strict=True)}
        for got, want in zip(outputs_of(folded.model, feeds), outputs_of(unfolded, feeds), strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def rms_model(dims) -> onnx.ModelProto:
    node = helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="norm", axis=-1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    scale = helper.make_tensor_value_info("scale", TensorProto.FLOAT, [dims[-1]])
    return make_model([node], [x, scale], [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)], opset=23)


@pytest.mark.parametrize("target", [None, 17, 13])
def test_a_static_rank_is_enough_for_axes_derived_from_it(target):
    """RMSNormalization's body takes its axes from Range(rank - 1, rank): with only the rank known
    (dims N, T dynamic), the axes fold; below 18 ReduceMean takes them as an attribute, no If."""
    result = lowering.lower_model(rms_model(["N", "T", 8]), ops=["RMSNormalization"], target_opset=target)
    assert not op_types(result.model) & (SHAPE_OPS | {"If"})
    (reduce,) = [node for node in result.model.graph.node if node.op_type == "ReduceMean"]
    if target is not None and target < 18:
        assert [list(a.ints) for a in reduce.attribute if a.name == "axes"] == [[2]]
    x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)
    feeds = {"x": x, "scale": np.linspace(-1, 1, 8, dtype=np.float32)}
    want = runs_in_onnxruntime(
        lowering.lower_model(rms_model(["N", "T", 8]), ops=["RMSNormalization"], fold="none").model, feeds
    )
    assert runs_in_onnxruntime(result.model, feeds)[0].tobytes() == want[0].tobytes()


def ints(values) -> onnx.TensorProto:
    return onnx.numpy_helper.from_array(np.array(values, np.int64))


def shape_arithmetic_model() -> onnx.ModelProto:
    """The model's own shape arithmetic on x [N, 8]: its last size (static) as a Reshape target,
    its first (dynamic), and the last one as a float through Sqrt."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Constant", [], ["last"], name="last", value=ints([-1])),
        helper.make_node("Gather", ["shape", "last"], ["width"], name="width", axis=0),
        helper.make_node("Concat", ["minus_one", "width"], ["target"], name="target", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["rows"], name="rows"),
        helper.make_node("Constant", [], ["first"], name="first", value=ints(0)),
        helper.make_node("Gather", ["shape", "first"], ["batch"], name="batch", axis=0),
        helper.make_node("Cast", ["width"], ["width_float"], name="width_float", to=TensorProto.FLOAT),
        helper.make_node("Sqrt", ["width_float"], ["root"], name="root"),
    ]  # fmt: skip
    outputs = [
        helper.make_tensor_value_info("rows", TensorProto.FLOAT, ["N", 8]),
        helper.make_tensor_value_info("batch", TensorProto.INT64, []),
        helper.make_tensor_value_info("root", TensorProto.FLOAT, [1]),
    ]
    minus_one = onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus_one")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    return make_model(nodes, [x], outputs, opset=17, initializer=[minus_one])


def test_the_models_own_shape_arithmetic_is_folded_only_when_asked():
    model = shape_arithmetic_model()
    assert lowering.lower_model(model, ops=[]).model.graph.node == model.graph.node  # (default: what it writes)
    assert lowering.lower_model(model, ops=[], fold="none").model.graph.node == model.graph.node
    result = lowering.lower_model(model, ops=[], fold="all")
    ops = [node.op_type for node in result.model.graph.node]
    # Shape stays for the batch size (dynamic); the last size and the Reshape target fold
    # (a partial shape: [N?, 8]); the float Cast and Sqrt are never folded
    assert ops == ["Shape", "Constant", "Constant", "Reshape", "Constant", "Gather", "Cast", "Sqrt"]
    assert dict(result.report.folded) == {"Gather": 1, "Concat": 1}
    assert "folded 1 x Concat, 1 x Gather (values the shapes decide)" in result.report.lines()
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    for got, want in zip(
        runs_in_onnxruntime(result.model, {"x": x}), runs_in_onnxruntime(model, {"x": x}), strict=True
    ):
        assert got.tobytes() == want.tobytes()


def test_random_values_and_float_arithmetic_are_never_folded():
    nodes = [
        helper.make_node("RandomUniform", [], ["noise"], name="noise", shape=[2], dtype=TensorProto.FLOAT),
        helper.make_node("Constant", [], ["two"], name="two", value=onnx.numpy_helper.from_array(np.float32(2))),
        helper.make_node("Sqrt", ["two"], ["root"], name="root"),
        helper.make_node("Add", ["noise", "root"], ["y"], name="y"),
    ]  # fmt: skip
    model = make_model(nodes, [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=17)
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [node.op_type for node in result.model.graph.node] == ["RandomUniform", "Constant", "Sqrt", "Add"]
    assert not result.report.folded


def test_fold_names_one_of_three_choices():
    with pytest.raises(ValueError, match="fold must be one of emitted, all, none"):
        lowering.lower_model(shape_arithmetic_model(), ops=[], fold="some")


CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus"
DYNAMIC_EXPORTS = sorted(path.stem for path in CORPUS.glob("*_dynamic_*.onnx"))


def unoptimized_outputs(model: onnx.ModelProto, feeds) -> list[np.ndarray]:
    """onnxruntime's outputs with its graph optimizations off: its fusions follow the graph's
    structure (folding changes it), and so would the rounding."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("name", DYNAMIC_EXPORTS)
def test_a_dynamic_export_made_static_folds_and_gives_the_same_bits(name):
    """golden/corpus's exports with dynamic batch and sequence axes, declared static at their
    inputs' sizes: no Shape left in the main graph, and outputs bit for bit those of the export."""
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    shapes = {info.name: list(feeds[info.name].shape) for info in model.graph.input if info.name in feeds}
    result = lowering.lower_model(model, ops=[], input_shapes=shapes)
    assert "Shape" not in op_types(result.model) and result.report.folded
    onnx.checker.check_model(result.model, full_check=True)
    want = unoptimized_outputs(model, feeds)
    for got, wanted in zip(unoptimized_outputs(result.model, feeds), want, strict=True):
        assert got.dtype == wanted.dtype and got.shape == wanted.shape and got.tobytes() == wanted.tobytes()


def test_an_ifs_branches_fold_too_seeing_what_is_known_outside():
    """x [N, 8] outside; in each branch Concat([-1], Shape(x)[-1:]) as a Reshape target folds to
    [-1, 8] (fold="all"); the If stays, and both branches mean what they meant."""

    def branch(name: str) -> onnx.GraphProto:
        nodes = [
            helper.make_node("Shape", ["x"], [f"{name}_shape"], name=f"{name}_shape", start=-1),
            helper.make_node("Concat", ["minus_one", f"{name}_shape"], [f"{name}_target"], axis=0),
            helper.make_node("Reshape", ["x", f"{name}_target"], [f"{name}_rows"], name=f"{name}_rows"),
            helper.make_node("Neg" if name == "then" else "Abs", [f"{name}_rows"], [f"{name}_y"]),
        ]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)])

    choose = helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch("then"), else_branch=branch("else"))
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
    ]
    minus_one = onnx.numpy_helper.from_array(np.array([-1], np.int64), "minus_one")
    model = make_model([choose], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], opset=17,
                       initializer=[minus_one])  # fmt: skip
    assert lowering.lower_model(model, ops=[]).model.graph.node == model.graph.node  # (emitted: none of these)
    result = lowering.lower_model(model, ops=[], fold="all")
    assert dict(result.report.folded) == {"Shape": 2, "Concat": 2}
    for branch_graph in (a.g for a in result.model.graph.node[0].attribute):
        assert [node.op_type for node in branch_graph.node] == ["Constant", "Reshape", branch_graph.node[2].op_type]
    onnx.checker.check_model(result.model, full_check=True)
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    for flag in (True, False):
        feeds = {"x": x, "c": np.array(flag)}
        assert runs_in_onnxruntime(result.model, feeds)[0].tobytes() == runs_in_onnxruntime(model, feeds)[0].tobytes()
