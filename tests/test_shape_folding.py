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
from version_cases import feeds_of, node_cases

import lowering
from lowering.graphs import held_graphs
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


FOLD_SEEDS = SHAPE_OPS | {"If"}


@functools.lru_cache(maxsize=1)
def _cases_with_shape_arithmetic():
    """The backend node cases (their _expanded twins too, which hold the function bodies' shape
    arithmetic) whose graphs hold a Shape, Size, Range, ConstantOfShape or If."""
    from lowering.graphs import nested_graphs

    def ops(model):
        yield from (node.op_type for node in model.graph.node)
        for inner in nested_graphs(model.graph.node):
            yield from (node.op_type for node in inner.node)

    return {case.name: case for case in node_cases() if FOLD_SEEDS.intersection(ops(case.model))}


@slow_but_a_sample(keep=6)
@pytest.mark.parametrize("name", sorted(_cases_with_shape_arithmetic()))
def test_backend_cases_fold_all_bit_for_bit(name):
    """Every backend case holding shape arithmetic, fold="all": the full checker passes, and its
    outputs are those of the case's own model, bit for bit (onnx.reference where onnxruntime
    has no kernel for it)."""
    case = _cases_with_shape_arithmetic()[name]
    result = lowering.lower_model(case.model, ops=[], fold="all")
    onnx.checker.check_model(result.model, full_check=True)
    if not result.report.folded:
        assert result.model.graph == case.model.graph
        return
    for inputs, _ in case.data_sets:
        feeds = feeds_of(case.model, inputs)
        want = runs_in_onnxruntime(case.model, feeds)
        got = runs_in_onnxruntime(result.model, feeds) if want is not None else None
        if want is None or got is None:
            want, got = run_reference(case.model, feeds), run_reference(result.model, feeds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            if isinstance(w, list):
                assert [np.asarray(x).tobytes() for x in g] == [np.asarray(x).tobytes() for x in w]
            elif w is not None:
                assert np.asarray(g).dtype == np.asarray(w).dtype and np.asarray(g).tobytes() == np.asarray(w).tobytes()


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
    # Shape stays for the batch size (dynamic); the last size, the Reshape target (a partial
    # shape: [N?, 8]) and the Cast of 8 to float (exact) fold; Sqrt is never folded
    assert ops == ["Shape", "Constant", "Reshape", "Constant", "Gather", "Constant", "Sqrt"]
    assert dict(result.report.folded) == {"Gather": 1, "Concat": 1, "Cast": 1}
    assert "folded 1 x Cast, 1 x Concat, 1 x Gather (values the shapes decide)" in result.report.lines()
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


def test_fold_names_one_of_four_choices():
    with pytest.raises(ValueError, match="fold must be one of emitted, all, inner, none"):
        lowering.lower_model(shape_arithmetic_model(), ops=[], fold="some")


def test_inner_folding_folds_all_but_the_nodes_that_write_the_models_outputs():
    """fold="inner" folds the model's own shape arithmetic as "all" does, but keeps the constant
    outputs and what they follow from (a runtime that gives no constant output computes them):
    the static width cast to float, an output here, stays a Cast of the Gather of the Shape; the
    Reshape's target, no output's, is folded; "all" folds the output to a constant too."""
    model = shape_arithmetic_model()
    model.graph.output.append(helper.make_tensor_value_info("width_float", TensorProto.FLOAT, [1]))
    everything = lowering.lower_model(model, ops=[], fold="all").model
    inner = lowering.lower_model(model, ops=[], fold="inner").model
    writers = {o: n.op_type for n in everything.graph.node for o in n.output}
    assert writers["width_float"] == "Constant" and "Shape" in writers.values()  # (the batch is dynamic)
    writers = {o: n.op_type for n in inner.graph.node for o in n.output}
    assert (writers["width_float"], writers["width"], writers["shape"]) == ("Cast", "Gather", "Shape")
    assert writers["target"] == "Constant"


CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus"
DYNAMIC_EXPORTS = sorted(path.stem for path in CORPUS.glob("*_dynamic_*.onnx"))
STATIC_EXPORTS = sorted(path.stem for path in CORPUS.glob("*.onnx") if "_dynamic_" not in path.stem)


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
    inputs' sizes: no Shape left in the main graph (something folded, where the export holds
    shape arithmetic: a U-Net's convolutions and constant-scale resizes hold none), and outputs
    bit for bit those of the export."""
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    shapes = {info.name: list(feeds[info.name].shape) for info in model.graph.input if info.name in feeds}
    result = lowering.lower_model(model, ops=[], input_shapes=shapes)
    assert "Shape" not in op_types(result.model)
    assert bool(result.report.folded) == bool(op_types(model) & SHAPE_OPS), name
    onnx.checker.check_model(result.model, full_check=True)
    want = unoptimized_outputs(model, feeds)
    for got, wanted in zip(unoptimized_outputs(result.model, feeds), want, strict=True):
        assert got.dtype == wanted.dtype and got.shape == wanted.shape and got.tobytes() == wanted.tobytes()


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("name", STATIC_EXPORTS)
def test_a_static_export_folds_all_its_shape_arithmetic_bit_for_bit(name):
    """golden/corpus's exports at static shapes, fold="all": no Shape, Size, Range or
    ConstantOfShape left in the main graph, and outputs bit for bit those of the export."""
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    result = lowering.lower_model(model, ops=[], fold="all")
    assert not op_types(result.model) & SHAPE_OPS
    assert len(result.model.graph.node) <= len(model.graph.node)
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


EXACT_BINARY = ("Add", "Sub", "Mul", "Div", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")
EXACT_UNARY = ("Neg", "Abs", "Floor", "Ceil", "Round")


def constants_model(nodes: list[onnx.NodeProto], arrays: dict[str, np.ndarray], outputs: list[str]) -> onnx.ModelProto:
    """A model of no inputs: ``arrays`` as Constant nodes, then ``nodes``; ``outputs`` typed by inference."""
    constants = [
        helper.make_node("Constant", [], [name], name=name, value=onnx.numpy_helper.from_array(array))
        for name, array in arrays.items()
    ]
    infos = [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs]
    return onnx.shape_inference.infer_shapes(make_model(constants + nodes, [], infos, opset=17))


def edge_operands(element_type: int) -> tuple[np.ndarray, np.ndarray]:
    """The type's edge values but NaN (±inf, ±0, subnormals, the largest finite values), and the
    same rolled: every pair of kinds meets."""
    from lowering.samples import edge_values

    a = edge_values(element_type)
    a = a[~np.isnan(a)]
    return a, np.roll(a, 7)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
@pytest.mark.parametrize("op", EXACT_BINARY + EXACT_UNARY)
def test_float_ops_ieee_754_rounds_once_fold_bit_for_bit_on_edge_values(op, element_type):
    """Arithmetic IEEE 754 rounds once and comparisons of float32/float64 constants
    fold where no NaN goes in or comes out (inf - inf does: then the op stays), bit for bit
    with onnxruntime over ±inf, ±0, subnormals and the largest finite values."""
    a, b = edge_operands(element_type)
    node = helper.make_node(op, ["a", "b"] if op in EXACT_BINARY else ["a"], ["y"], name=op)
    model = constants_model([node], {"a": a, "b": b}, ["y"])
    result = lowering.lower_model(model, ops=[], fold="all")
    (want,) = unoptimized_outputs(model, {})
    nan_made = want.dtype.kind == "f" and np.isnan(want).any()
    assert result.report.folded == ({} if nan_made else {op: 1})
    (got,) = unoptimized_outputs(result.model, {})
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("op", ["Where", "Max", "Min"])
def test_selecting_ops_fold_float_values_but_never_a_negative_zero(op):
    """Where, Max and Min of float constants fold, but not where a -0 could be selected
    (onnxruntime's Where gives +0 for it, measured; Max(-0, +0) is either zero)."""
    condition = np.array([True, False, True, False])
    plain = {"c": condition, "x": np.array([1.5, -np.inf, 0.0, 2.0], np.float32), "y": np.full(4, 3.0, np.float32)}
    signed = {**plain, "x": np.array([1.5, -np.inf, -0.0, 2.0], np.float32)}
    inputs = ["c", "x", "y"] if op == "Where" else ["x", "y"]
    for arrays, folds in ((plain, True), (signed, False)):
        model = constants_model([helper.make_node(op, inputs, ["z"], name="z")], arrays, ["z"])
        result = lowering.lower_model(model, ops=[], fold="all")
        assert result.report.folded == ({op: 1} if folds else {})
        (got,), (want,) = unoptimized_outputs(result.model, {}), unoptimized_outputs(model, {})
        assert got.tobytes() == want.tobytes()


def test_float_values_ieee_754_leaves_open_are_not_folded():
    """Any op a NaN goes into (which NaN comes back, of what sign and payload, is the kernel's),
    a float Cast to an integer of a value out of its range (undefined), float16 arithmetic and
    Sqrt stay as they are."""
    arrays = {
        "v": np.array([1.5, np.nan, 2.0], np.float32),
        "big": np.array([1.5, 3e10], np.float32),
        "h": np.array([1.5, 2.5], np.float16),
    }
    nodes = [
        helper.make_node("Max", ["v", "v"], ["biggest"], name="biggest"),
        helper.make_node("Round", ["v"], ["rounded"], name="rounded"),
        helper.make_node("Cast", ["big"], ["as_int"], name="as_int", to=TensorProto.INT32),
        helper.make_node("Add", ["h", "h"], ["twice"], name="twice"),
        helper.make_node("Sqrt", ["big"], ["root"], name="root"),
    ]
    model = constants_model(nodes, arrays, ["biggest", "rounded", "as_int", "twice", "root"])
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [node.op_type for node in result.model.graph.node][3:] == ["Max", "Round", "Cast", "Add", "Sqrt"]
    assert not result.report.folded


def test_an_if_whose_condition_is_known_becomes_the_branch_it_takes():
    """If(Greater(Size(x), 4)) on x [2, 3] (fold="all"): the condition folds to true and the then
    branch's nodes take the If's place (its output through an Identity); the result is bit for bit."""
    then_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"], name="negate")], "then", [],
        [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["absolute"], name="absolute")], "else", [],
        [helper.make_tensor_value_info("absolute", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    nodes = [
        helper.make_node("Size", ["x"], ["size"], name="size"),
        helper.make_node("Constant", [], ["four"], name="four", value=ints(4)),
        helper.make_node("Greater", ["size", "four"], ["large"], name="large"),
        helper.make_node("If", ["large"], ["y"], name="choose", then_branch=then_branch, else_branch=else_branch),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], opset=17)
    assert lowering.lower_model(model, ops=[]).model.graph.node == model.graph.node  # (emitted: not the model's)
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [(node.op_type, list(node.input)) for node in result.model.graph.node] == [
        ("Neg", ["x"]), ("Identity", ["negated"])
    ]  # fmt: skip
    assert result.report.folded == {"If": 1, "Greater": 1, "Size": 1}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"x": np.array([[0.0, -0.0, 1.0], [np.inf, np.nan, -2.0]], np.float32)}
    assert runs_in_onnxruntime(result.model, feeds)[0].tobytes() == runs_in_onnxruntime(model, feeds)[0].tobytes()


def test_a_loop_body_folds_what_outer_values_decide_not_what_its_state_does():
    """A Loop body reads Shape(x) of the outer x [2, 8] (the same on every iteration: folds) and
    Shape of its carried state (which may change shape between iterations: stays)."""
    body_nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
        helper.make_node("Shape", ["state"], ["state_shape"], name="state_shape"),
        helper.make_node("Concat", ["x_shape", "state_shape"], ["both"], name="both", axis=0),
        helper.make_node("ReduceSum", ["both"], ["total"], name="total", keepdims=1),
        helper.make_node("Cast", ["total"], ["total_float"], name="total_float", to=TensorProto.FLOAT),
        helper.make_node("Add", ["state", "total_float"], ["next_state"], name="next_state"),
        helper.make_node("Identity", ["condition"], ["condition_out"], name="condition_out"),
    ]
    body = helper.make_graph(
        body_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("condition", TensorProto.BOOL, []),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("condition_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("next_state", TensorProto.FLOAT, [1])],
    )  # fmt: skip
    loop = helper.make_node("Loop", ["trips", "", "start"], ["final"], name="loop", body=body)
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8]),
        helper.make_tensor_value_info("trips", TensorProto.INT64, []),
        helper.make_tensor_value_info("start", TensorProto.FLOAT, [1]),
    ]
    model = make_model([loop], inputs, [helper.make_tensor_value_info("final", TensorProto.FLOAT, [1])], opset=17)
    result = lowering.lower_model(model, ops=[], fold="all")
    folded_body = result.model.graph.node[0].attribute[0].g
    assert [node.op_type for node in folded_body.node] == [
        "Constant", "Shape", "Concat", "ReduceSum", "Cast", "Add", "Identity"
    ]  # fmt: skip
    assert result.report.folded == {"Shape": 1}
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"x": np.zeros((2, 8), np.float32), "trips": np.array(3), "start": np.array([0.5], np.float32)}
    assert runs_in_onnxruntime(result.model, feeds)[0].tobytes() == runs_in_onnxruntime(model, feeds)[0].tobytes()


def test_a_local_functions_body_folds_what_its_constants_decide():
    """In a local function: Range(0, 4, 1) of constants folds; Shape of its input (its type is
    the caller's) stays."""
    function = helper.make_function(
        "local", "Steps",
        ["x"], ["y"],
        [helper.make_node("Constant", [], ["zero"], value=ints(0)),
         helper.make_node("Constant", [], ["four"], value=ints(4)),
         helper.make_node("Constant", [], ["one"], value=ints(1)),
         helper.make_node("Range", ["zero", "four", "one"], ["steps"]),
         helper.make_node("Shape", ["x"], ["x_shape"]),
         helper.make_node("Concat", ["steps", "x_shape"], ["y"], axis=0)],
        [helper.make_opsetid("", 17)],
    )  # fmt: skip
    call = helper.make_node("Steps", ["x"], ["y"], name="call", domain="local")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    model = make_model([call], [x], [helper.make_tensor_value_info("y", TensorProto.INT64, [6])], opset=17,
                       functions=[function])  # fmt: skip
    model.opset_import.append(helper.make_opsetid("local", 1))
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [node.op_type for node in result.model.functions[0].node] == ["Constant", "Shape", "Concat"]
    assert result.report.folded == {"Range": 1}
    feeds = {"x": np.zeros((2, 3), np.float32)}
    assert runs_in_onnxruntime(result.model, feeds)[0].tolist() == [0, 1, 2, 3, 2, 3]


def branch_graph_of(nodes, name, outputs, initializer=()):
    infos = [helper.make_tensor_value_info(output, TensorProto.FLOAT, None) for output in outputs]
    return helper.make_graph(nodes, name, [], infos, initializer=list(initializer))


def test_a_branch_is_not_inlined_where_its_names_or_initializers_would_be_lost():
    """Two Ifs of a known condition whose branches both define t, and one whose branch holds an
    initializer: inlining would define t twice or read a k nothing defines; they stay Ifs, and
    the model passes the checker and runs (fold="all")."""
    k = onnx.numpy_helper.from_array(np.array([2.0], np.float32), "k")
    nodes = [helper.make_node("Constant", [], ["c"], name="c", value=onnx.numpy_helper.from_array(np.array(True)))]
    for index in (1, 2):
        then_nodes = [helper.make_node("Neg", ["a"], ["t"]), helper.make_node("Abs", ["t"], [f"u{index}"])]
        then_branch = branch_graph_of(then_nodes, f"then{index}", [f"u{index}"])
        else_branch = branch_graph_of(
            [helper.make_node("Identity", ["a"], [f"e{index}"])], f"else{index}", [f"e{index}"]
        )
        nodes.append(helper.make_node("If", ["c"], [f"y{index}"], name=f"if{index}", then_branch=then_branch,
                                      else_branch=else_branch))  # fmt: skip
    held = branch_graph_of([helper.make_node("Add", ["a", "k"], ["z"])], "held", ["z"], [k])
    plain = branch_graph_of([helper.make_node("Identity", ["a"], ["w"])], "plain", ["w"])
    nodes.append(helper.make_node("If", ["c"], ["y3"], name="if3", then_branch=held, else_branch=plain))
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [1]) for i in (1, 2, 3)]
    model = make_model(nodes, [a], outputs, opset=17)
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [node.op_type for node in result.model.graph.node].count("If") == 3
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"a": np.array([-1.5], np.float32)}
    assert [v.tolist() for v in runs_in_onnxruntime(result.model, feeds)] == [[1.5], [1.5], [0.5]]


def test_a_name_sibling_branches_both_define_has_no_one_shape_to_fold():
    """then: t = Concat(a, a), Shape(t); else: t = Identity(a), Shape(t): t is [4] in one branch
    and [2] in the other; neither Shape folds to the other's, whichever branch runs."""

    def shaped(name, first):
        return branch_graph_of([first, helper.make_node("Shape", ["t"], [f"s_{name}"])], name, [f"s_{name}"])

    then_branch = shaped("then", helper.make_node("Concat", ["a", "a"], ["t"], axis=0))
    else_branch = shaped("else", helper.make_node("Identity", ["a"], ["t"]))
    for graph in (then_branch, else_branch):
        graph.output[0].type.tensor_type.elem_type = TensorProto.INT64
    node = helper.make_node("If", ["c"], ["s"], name="choose", then_branch=then_branch, else_branch=else_branch)
    inputs = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
    ]
    model = make_model([node], inputs, [helper.make_tensor_value_info("s", TensorProto.INT64, [1])], opset=17)
    result = lowering.lower_model(model, ops=[], fold="all")
    for flag, size in ((True, 4), (False, 2)):
        feeds = {"a": np.zeros(2, np.float32), "c": np.array(flag)}
        assert runs_in_onnxruntime(result.model, feeds)[0].tolist() == [size]


def test_a_graph_output_of_no_elements_stays_computed():
    """Shape(x, start=3, end=1) of a static x is [] (no elements): as a graph output it stays a
    Shape (OpenVINO gives a constant output of no elements back as a scalar); the same Shape
    with start=1 folds, and one of no elements that only feeds another node folds too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    empty, some = (helper.make_tensor_value_info(name, TensorProto.INT64, [None]) for name in ("empty", "some"))
    nodes = [
        helper.make_node("Shape", ["x"], ["empty"], start=3, end=1),
        helper.make_node("Shape", ["x"], ["some"], start=1),
        helper.make_node("Shape", ["x"], ["inner_empty"], start=2, end=0),
        helper.make_node("Concat", ["inner_empty", "some"], ["joined"], axis=0),
    ]
    joined = helper.make_tensor_value_info("joined", TensorProto.INT64, [None])
    model = make_model(nodes, [x], [empty, some, joined], opset=21)
    result = lowering.lower_model(model, fold="all")
    producers = {n.output[0]: n.op_type for n in result.model.graph.node}
    assert producers == {"empty": "Shape", "some": "Constant", "joined": "Constant"}
    feeds = {"x": np.zeros((2, 3, 4), np.float32)}
    got, want = runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(model, feeds)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want] and got[0].shape == (0,)


def test_folding_goes_on_while_a_round_lets_inference_know_more_and_stops_once_it_does_not(monkeypatch):
    """Max has no data propagation in onnx's inference: the first round folds Max(Shape(x), 1),
    then inference knows the Reshape's shape and the second round folds its Shape. A third
    round is not run: inference after the second gives every value the type it gave before."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Max", ["s", "ones"], ["m"]),
        helper.make_node("Reshape", ["x", "m"], ["r"]),
        helper.make_node("Shape", ["r"], ["t"]),
        helper.make_node("Shape", ["z"], ["u"]),  # (of a dynamic shape: never folded, a seed in each round)
    ]
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n"]),
        ],  # fmt: skip
        [
            helper.make_tensor_value_info("r", TensorProto.FLOAT, ["a", "b"]),
            helper.make_tensor_value_info("t", 7, [2]),
            helper.make_tensor_value_info("u", 7, [1]),
        ],  # fmt: skip
        opset=17,
        initializer=[onnx.numpy_helper.from_array(np.ones(2, np.int64), "ones")],
    )
    rounds = []
    fold_shapes = lowering.api.fold_shapes

    def counted(*args, **kwargs):
        result = fold_shapes(*args, **kwargs)
        rounds.append(dict(result.folded))
        return result

    monkeypatch.setattr(lowering.api, "fold_shapes", counted)
    folded = lowering.lower(model, ops=[], fold="all")
    assert rounds == [{"Shape": 1, "Max": 1}, {"Shape": 1}]
    assert op_types(folded) == {"Constant", "Reshape", "Shape"}
    feeds = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "z": np.zeros(4, np.float32)}
    for got, want in zip(outputs_of(folded, feeds), outputs_of(model, feeds), strict=True):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _empty_parts_model(read_empty_part: bool) -> onnx.ModelProto:
    """x (float[2, 5]) split into 5 and 0 along axis 1, the 5 joined to c (float[2, 0]) and x; the
    empty part read by an Abs as a graph output where ``read_empty_part``."""
    nodes = [
        helper.make_node("Split", ["x", "lengths"], ["whole", "none"], axis=1),
        helper.make_node("Concat", ["c", "whole", "c", "x"], ["joined"], axis=-1),
        helper.make_node("Concat", ["c", "whole"], ["alone"], axis=1),
    ]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, None]) for name in ("joined", "alone")]
    if read_empty_part:
        nodes.append(helper.make_node("Abs", ["none"], ["none_abs"]))
        outputs.append(helper.make_tensor_value_info("none_abs", TensorProto.FLOAT, [2, 0]))
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
        outputs,
        opset=18,
        initializer=[
            onnx.numpy_helper.from_array(np.array([5, 0], np.int64), "lengths"),
            onnx.numpy_helper.from_array(np.zeros((2, 0), np.float32), "c"),
        ],
    )


@pytest.mark.parametrize("read_empty_part", [False, True])
def test_parts_of_no_elements_are_dropped_from_concats_and_splits(read_empty_part):
    """Concat(c, a, c, b) = Concat(a, b) where c's size along the axis is static and 0, and
    Concat(c, a) = Identity(a); Split(x) -> (y, e) = Identity(x) -> y where e is empty along the
    axis and nothing reads it (read, the Split stays). The same bits (NaN, ±inf, ±0 fed)."""
    model = _empty_parts_model(read_empty_part)
    result = lowering.lower_model(model, ops=[], fold="all")
    onnx.checker.check_model(result.model, full_check=True)
    writers = {output: node for node in result.model.graph.node for output in node.output}
    assert list(writers["joined"].input) == ["whole", "x"]
    assert writers["alone"].op_type == "Identity" and list(writers["alone"].input) == ["whole"]
    assert writers["whole"].op_type == ("Split" if read_empty_part else "Identity")
    assert result.report.folded == ({"Concat": 2} if read_empty_part else {"Concat": 2, "Split": 1})
    x = np.array([[np.nan, -np.nan, np.inf, -np.inf, -0.0], [0.0, 1e-45, -3.4e38, 1.5, -2.0]], np.float32)
    got, want = runs_in_onnxruntime(result.model, {"x": x}), runs_in_onnxruntime(model, {"x": x})
    assert [(g.shape, g.tobytes()) for g in got] == [(w.shape, w.tobytes()) for w in want]


def test_a_concat_of_inputs_all_empty_or_of_unknown_sizes_stays():
    """Nothing is dropped where every input is empty (the output is) or no size is static."""
    nodes = [helper.make_node("Concat", ["c", "c"], ["both_empty"], axis=1),
             helper.make_node("Concat", ["y", "y"], ["unknown"], axis=0)]  # fmt: skip
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [None, None]) for name in ("both_empty", "unknown")],
        opset=18,
        initializer=[onnx.numpy_helper.from_array(np.zeros((2, 0), np.float32), "c")],
    )
    result = lowering.lower_model(model, ops=[], fold="none")
    assert [node.op_type for node in result.model.graph.node] == ["Concat", "Concat"]
    folded = lowering.lower_model(model, ops=[], fold="all").model
    writers = {node.output[0]: node for node in folded.graph.node}
    assert writers["unknown"].op_type == "Concat" and list(writers["unknown"].input) == ["y", "y"]


def test_a_rotary_embedding_over_the_whole_head_is_lowered_with_no_value_of_no_elements():
    """RotaryEmbedding-23 rotating the whole head: its body splits off an empty unrotated part
    and joins it back; lowered, no value of the model has a zero size (rknn's toolkit fails on
    one), and the outputs are the bits of the body lowered with nothing folded."""
    [case] = [case for case in node_cases() if case.name == "test_rotary_embedding"]
    result = lowering.lower_model(case.model, ops=["RotaryEmbedding"])
    unfolded = lowering.lower_model(case.model, ops=["RotaryEmbedding"], fold="none").model
    assert "Split" in op_types(unfolded) and result.report.folded["Split"] == 1
    inferred = onnx.shape_inference.infer_shapes(result.model)
    sizes = [[d.dim_value for d in info.type.tensor_type.shape.dim] for info in inferred.graph.value_info]
    assert sizes and not any(0 in dims for dims in sizes), sizes
    for inputs, _ in case.data_sets:
        feeds = feeds_of(case.model, inputs)
        got, want = runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(unfolded, feeds)
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def test_a_default_a_graph_input_overrides_decides_no_size():
    """Split lengths given as a graph input with a default initializer ([5, 0]): fed [3, 2], the
    parts are 3 and 2, so nothing is dropped and the bits stay (inference must not read the
    default as a constant)."""
    nodes = [helper.make_node("Split", ["x", "lengths"], ["w", "e"], axis=1),
             helper.make_node("Concat", ["e", "w"], ["y"], axis=1),
             helper.make_node("Shape", ["e"], ["e_shape"])]  # fmt: skip
    model = make_model(
        nodes,
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
            helper.make_tensor_value_info("lengths", TensorProto.INT64, [2]),
        ],  # fmt: skip
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, None]),
            helper.make_tensor_value_info("e_shape", TensorProto.INT64, [2]),
        ],  # fmt: skip
        opset=18,
        initializer=[onnx.numpy_helper.from_array(np.array([5, 0], np.int64), "lengths")],
    )
    result = lowering.lower_model(model, ops=[], fold="all")
    assert not result.report.folded
    feeds = {"x": np.arange(10, dtype=np.float32).reshape(2, 5), "lengths": np.array([3, 2], np.int64)}
    got, want = runs_in_onnxruntime(result.model, feeds), runs_in_onnxruntime(model, feeds)
    assert [g.tobytes() for g in got] == [w.tobytes() for w in want]


def test_parts_are_kept_where_the_axis_is_the_callers_or_an_output_unnamed():
    """In a local function Concat(c, x, axis=@ax) with c of shape [0, 3]: the axis is the caller's
    (1), not 0, and c stays. Split(x, [3, 5, 0]) -> ("", a, ""): the unnamed first part has 3
    elements, so a is not all of x."""
    concat = helper.make_node("Concat", ["c", "x"], ["y"])
    concat.attribute.append(onnx.AttributeProto(name="axis", ref_attr_name="ax", type=onnx.AttributeProto.INT))
    empty = onnx.numpy_helper.from_array(np.zeros((0, 3), np.float32), "c")
    function = helper.make_function(
        "local", "F", ["x"], ["s"],
        [helper.make_node("Constant", [], ["c"], value=empty), concat, helper.make_node("Shape", ["y"], ["s"])],
        opset_imports=[helper.make_opsetid("", 18)], attributes=["ax"],
    )  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["s"], domain="local", ax=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 5])],
        [helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
                              functions=[function], ir_version=8)  # fmt: skip
    result = lowering.lower_model(model, ops=[], fold="all")
    assert [node.op_type for node in result.model.functions[0].node] == ["Constant", "Concat", "Shape"]
    feeds = {"x": np.zeros((0, 5), np.float32)}
    assert runs_in_onnxruntime(result.model, feeds)[0].tolist() == [0, 8]
    split = make_model(
        [helper.make_node("Split", ["x", "lengths"], ["", "a", ""], axis=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 5])],
        opset=18,
        initializer=[onnx.numpy_helper.from_array(np.array([3, 5, 0], np.int64), "lengths")],
    )
    kept = lowering.lower_model(split, ops=[], fold="all").model
    assert [node.op_type for node in kept.graph.node] == ["Split"]


@pytest.mark.parametrize("target", [None, 19, 13])
def test_a_rotary_embedding_lowered_for_an_older_opset_holds_no_value_of_no_elements(target):
    """The body folded before it goes to an older opset (body_inlining) drops its empty parts too."""
    [case] = [case for case in node_cases() if case.name == "test_rotary_embedding"]
    result = lowering.lower_model(case.model, ops=["RotaryEmbedding"], target_opset=target)
    inferred = onnx.shape_inference.infer_shapes(result.model)
    sizes = [[d.dim_value for d in info.type.tensor_type.shape.dim] for info in inferred.graph.value_info]
    assert sizes and not any(0 in dims for dims in sizes), sizes


def _empty_parts_nodes(prefix: str, x: str) -> list[onnx.NodeProto]:
    """x (of shape [2, n]) split into n and 0 along axis 1 by constant lengths, the n joined to a
    Constant of shape [2, 0] of x's type: ``{prefix}joined`` is x's elements as they are."""
    return [
        helper.make_node("Split", [x, f"{prefix}lengths"], [f"{prefix}whole", f"{prefix}none"], axis=1),
        helper.make_node("Concat", [f"{prefix}empty", f"{prefix}whole"], [f"{prefix}joined"], axis=1),
    ]


def _small_floats_split_and_concat_take(opset: int) -> list[int]:
    """The 8- and 16-bit float types both Split and Concat take at ``opset`` (onnx.defs)."""
    from lowering import floats, schemas

    taken = schemas.input_element_types("Split", opset) & schemas.input_element_types("Concat", opset)
    return sorted(t for t in taken if floats.is_float(t) and floats.numpy_dtype(t).itemsize <= 2)


@pytest.mark.parametrize("where", ["graph", "If branch", "Loop body", "local function"])
@pytest.mark.parametrize("element_type", _small_floats_split_and_concat_take(21))
def test_empty_parts_go_in_every_graph_on_every_bit_pattern(where, element_type):
    """The Split and Concat of _empty_parts_nodes, in the main graph, an If branch, a Loop body
    (reading an outer value) or a local function (its Concat: a function's input shapes are its
    callers'), fed every bit pattern of a 16- or 8-bit float type: the empty parts go and the
    outputs keep their bits."""
    from lowering.samples import every_bit_pattern

    x = every_bit_pattern(element_type)
    x = np.concatenate([x, x]).reshape(2, -1)
    n = x.shape[1]
    dtype = x.dtype

    def constants(prefix: str) -> list[onnx.NodeProto]:
        lengths = onnx.numpy_helper.from_array(np.array([n, 0], np.int64), f"{prefix}lengths")
        empty = helper.make_tensor(f"{prefix}empty", element_type, [2, 0], [])
        return [helper.make_node("Constant", [], [f"{prefix}lengths"], value=lengths),
                helper.make_node("Constant", [], [f"{prefix}empty"], value=empty)]  # fmt: skip

    out = helper.make_tensor_value_info("y", element_type, [2, n])
    x_info = helper.make_tensor_value_info("x", element_type, [2, n])
    functions, extra = [], None
    if where == "graph":
        nodes, inputs = (
            [*constants(""), *_empty_parts_nodes("", "x"), helper.make_node("Identity", ["joined"], ["y"])],
            [x_info],
        )
    elif where == "If branch":
        branch = helper.make_graph([*constants("b_"), *_empty_parts_nodes("b_", "x")], "then", [],
                                   [helper.make_tensor_value_info("b_joined", element_type, [2, n])])  # fmt: skip
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "else", [],
                                  [helper.make_tensor_value_info("o", element_type, [2, n])])  # fmt: skip
        nodes = [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)]
        inputs = [x_info, helper.make_tensor_value_info("c", TensorProto.BOOL, [])]
    elif where == "Loop body":
        body = helper.make_graph(
            [*constants("b_"), *_empty_parts_nodes("b_", "x"), helper.make_node("Identity", ["cond"], ["cond_out"])],
            "body",
            [helper.make_tensor_value_info("i", TensorProto.INT64, []),
             helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
             helper.make_tensor_value_info("b_joined", element_type, [2, n])],
        )  # fmt: skip
        trips = onnx.numpy_helper.from_array(np.array(1, np.int64), "trips")
        nodes = [helper.make_node("Constant", [], ["trips"], value=trips),
                 helper.make_node("Loop", ["trips", ""], ["stacked"], body=body),
                 helper.make_node("Squeeze", ["stacked", "zero"], ["y"])]  # fmt: skip
        nodes.insert(
            0, helper.make_node("Constant", [], ["zero"], value=onnx.numpy_helper.from_array(np.array([0]), "zero"))
        )
        inputs = [x_info]
    else:
        functions = [helper.make_function("local", "F", ["fx"], ["f_joined"],
                                          [*constants("f_"), *_empty_parts_nodes("f_", "fx")],
                                          opset_imports=[helper.make_opsetid("", 21)])]  # fmt: skip
        nodes, inputs, extra = [helper.make_node("F", ["x"], ["y"], domain="local")], [x_info], {"local": 1}
    model = make_model(nodes, inputs, [out], opset=21, functions=functions, extra_opsets=extra)
    onnx.checker.check_model(model, full_check=True)
    result = lowering.lower_model(model, ops=[], fold="all")
    onnx.checker.check_model(result.model, full_check=True)
    graphs = [result.model.graph, *(g for node in result.model.graph.node for _, _, g in held_graphs(node))]
    held = [node.op_type for graph in graphs for node in graph.node]
    held += [node.op_type for function in result.model.functions for node in function.node]
    assert "Concat" not in held
    if where != "local function":  # (a function's Split: its input's shape is its callers')
        assert "Split" not in held
    feeds = {"x": x, **({"c": np.array(True)} if where == "If branch" else {})}
    got, want = outputs_of(result.model, feeds), outputs_of(model, feeds)
    assert got[0].dtype == dtype and got[0].view(np.uint8).tobytes() == want[0].view(np.uint8).tobytes()
