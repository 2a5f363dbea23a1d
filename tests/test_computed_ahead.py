"""Values computed ahead (lowering/computed_ahead.py): a rotary embedding's cos and sin tables,
computed from constants alone, become initializers holding onnxruntime's answer, and the model
gives bit for bit what it gave; what may not be computed so stays as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import rotary_runtime, rotary_tables_model, slow_but_a_sample

import lowering
from lowering import computed_ahead as module
from lowering.computed_ahead import computable_nodes, computed_ahead
from lowering.runtime_profiles import load_profile
from lowering.shape_folding import inferred_types
from lowering.verification.runtime import run_onnxruntime

VALUE_SAID = "value computed from constants alone"


def _x(element_type: int) -> np.ndarray:
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    return np.random.default_rng(0).standard_normal((2, 8, 4)).astype(dtype)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_the_tables_become_initializers_and_the_model_keeps_its_bits(element_type):
    """Cos and Sin (and the nodes before them) computed: the tables are initializers named as
    the values were, the Constants and the initializer only they read are gone, the unread
    Constant and every other node stay, and onnxruntime gives the same bits."""
    model = rotary_tables_model(element_type)
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 6
    assert [node.op_type for node in made.graph.node] == ["Constant", "Mul", "Mul", "Add"]
    assert made.graph.node[0].output[0] == "unread"
    assert sorted(t.name for t in made.graph.initializer) == ["cos", "sin"]
    onnx.checker.check_model(made, full_check=True)
    feeds = {"x": _x(element_type)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    # (the tables hold what onnxruntime computes for them inside the model, not numpy's cos)
    cos = numpy_helper.to_array(next(t for t in made.graph.initializer if t.name == "cos"))
    angles = np.arange(8, dtype=cos.dtype)[:, None] * numpy_helper.to_array(model.graph.initializer[0])
    assert np.allclose(cos, np.cos(angles.astype(np.float64)), rtol=1e-3, atol=1e-3)


def _computed_names(model: onnx.ModelProto) -> list[str]:
    return [node.name or node.op_type for node in computable_nodes(model, inferred_types(model))]


def test_a_value_read_in_a_branch_is_computed_and_still_found_there():
    """Tables only an If's branches read, from outside, become initializers the branches find."""
    model = rotary_tables_model()
    branches = {
        name: helper.make_graph(
            [helper.make_node("Mul", ["x", table], [f"{name}_y"])],
            name,
            [],
            [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)],
        )
        for name, table in (("then", "cos"), ("else", "sin"))
    }
    del model.graph.node[-3:]
    model.graph.node.append(
        helper.make_node("If", ["c"], ["y"], then_branch=branches["then"], else_branch=branches["else"])
    )
    model.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 6
    assert sorted(t.name for t in made.graph.initializer) == ["cos", "sin"]
    onnx.checker.check_model(made, full_check=True)
    for condition in (True, False):
        feeds = {"x": _x(TensorProto.FLOAT), "c": np.array(condition)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "case",
    ["random", "graph output", "too large", "fed default", "external data", "other domain", "holds graphs"],
)
def test_what_may_not_be_computed_ahead_stays(case, monkeypatch):
    """Not computed: a random op's value (RandomUniformLike of a constant), a graph output, a value
    over MOST_ELEMENTS, a value from an initializer a graph input may override, or one stored as
    external data, a node of another domain, a node holding graphs; nor anything computed from
    those."""
    model = rotary_tables_model()
    graph = model.graph
    if case == "random":
        graph.node.insert(9, helper.make_node("RandomUniformLike", ["angles"], ["noise"], name="noise"))
        graph.node[10].input[0] = "noise"
        expected = ["positions", "Cast", "Unsqueeze", "outer", "sin"]
    elif case == "graph output":
        graph.output.append(helper.make_tensor_value_info("angles", TensorProto.FLOAT, [8, 4]))
        expected = ["positions", "Cast", "Unsqueeze"]
    elif case == "too large":
        monkeypatch.setattr(module, "MOST_ELEMENTS", 31)  # (the tables hold 32)
        expected = ["positions", "Cast", "Unsqueeze"]
    elif case == "fed default":
        graph.input.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, [4]))
        expected = ["positions", "Cast", "Unsqueeze"]
    elif case == "external data":
        frequencies = graph.initializer[0]
        frequencies.data_location = TensorProto.EXTERNAL
        expected = ["positions", "Cast", "Unsqueeze"]
    elif case == "other domain":
        graph.node[4].domain = "com.example"
        expected = []
    else:
        branch = helper.make_graph(
            [helper.make_node("Identity", ["p"], ["q"])], "b", [], [helper.make_tensor_value_info("q", 7, None)]
        )
        condition = helper.make_node("Constant", [], ["yes"], value=numpy_helper.from_array(np.array(True)))
        graph.node.insert(5, condition)
        graph.node.insert(6, helper.make_node("If", ["yes"], ["p_kept"], then_branch=branch, else_branch=branch))
        graph.node[7].input[0] = "p_kept"
        expected = ["positions"]
    assert _computed_names(model) == expected


def test_a_model_onnxruntime_cannot_compute_is_left_as_it_was(monkeypatch):
    """Where onnxruntime refuses the values' nodes (no kernel), nothing changes."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as NoKernel

    from lowering.verification import runtime

    def refusing(model, feeds, optimized=False):
        raise NoKernel("Could not find an implementation")

    monkeypatch.setattr(runtime, "run_onnxruntime", refusing)
    model = rotary_tables_model()
    before = model.SerializeToString()
    assert computed_ahead(model, inferred_types(model)) == 0
    assert model.SerializeToString() == before


def _weights_model(op_type: str, between: str | None = None) -> onnx.ModelProto:
    """y = OP(x, w), w = Cos(c) (or ``between``(Cos(c))), c a constant [128, 16] (x [2, 128]):
    onnxruntime packs a constant MatMul or Gemm weight ahead, summing it in another order."""
    c = numpy_helper.from_array(np.random.default_rng(1).standard_normal((128, 16)).astype(np.float32), "c")
    nodes = [helper.make_node("Cos", ["c"], ["w"], name="cos")]
    if between is not None:
        nodes.append(helper.make_node(between, ["w"], ["w_moved"], name="moved"))
    nodes.append(helper.make_node(op_type, ["x", nodes[-1].output[0]], ["y"], name="product"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 128])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])
    graph = helper.make_graph(nodes, "g", [x], [y], [c])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op_type", ["MatMul", "Gemm"])
@pytest.mark.parametrize("between", [None, "Identity"])
def test_a_weight_a_kernel_packs_ahead_stays_computed_at_run_time(op_type, between):
    """The weight a MatMul or Gemm reads is not computed ahead (a value before it may be): the
    products give the bits they gave."""
    model = _weights_model(op_type, between)
    made = onnx.ModelProto()
    made.CopyFrom(model)
    count = computed_ahead(made, inferred_types(made))
    assert count == (0 if between is None else 1)
    assert "product" in {node.name for node in made.graph.node}
    assert ("moved" in {node.name for node in made.graph.node}) == (between is not None)
    feeds = {"x": np.random.default_rng(2).standard_normal((2, 128)).astype(np.float32)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.tobytes() == want.tobytes()


def test_a_value_a_local_function_reads_stays_computed_at_run_time():
    """A table a local function's call reads (its body a MatMul, or anything else: a body's
    kernels are not known here) is not computed; the rest of the model is, bit for bit."""
    body = [helper.make_node("MatMul", ["a", "w"], ["b"])]
    function = helper.make_function("local", "Project", ["a", "w"], ["b"], body, [helper.make_opsetid("", 17)])
    model = rotary_tables_model()
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("local", 1))
    square = numpy_helper.from_array(np.eye(4, dtype=np.float32) * 0.5, "square")
    model.graph.initializer.append(square)
    model.graph.node.insert(10, helper.make_node("Cos", ["square"], ["w"], name="weight"))
    y = model.graph.node[-1]
    y.output[0] = "rotated"
    model.graph.node.append(helper.make_node("Project", ["rotated", "w"], ["y"], domain="local", name="project"))
    onnx.checker.check_model(model, full_check=True)
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 6
    assert {"weight", "project"} <= {node.name for node in made.graph.node}
    assert {"cos", "sin"} <= {t.name for t in made.graph.initializer}
    feeds = {"x": _x(TensorProto.FLOAT)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.tobytes() == want.tobytes()


def test_what_is_read_elsewhere_too_or_by_nothing_stays():
    """An initializer and a Constant read by a computed node and by a node left both stay; a node
    computable from constants whose value nothing reads stays as it was; Dropout (random in
    training mode) is never computed."""
    constant = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.full(4, 0.5, np.float32)))
    training = helper.make_node("Constant", [], ["training"], value=numpy_helper.from_array(np.array(True)))
    nodes = [
        constant,
        training,
        helper.make_node("Mul", ["f", "k"], ["a"], name="angles"),
        helper.make_node("Sin", ["a"], ["s"], name="sin"),
        helper.make_node("Neg", ["a"], ["unread"], name="unread"),
        helper.make_node("Dropout", ["f", "", "training"], ["d"], name="dropout"),
        helper.make_node("Identity", ["d"], ["d_copy"], name="copy"),
        helper.make_node("Mul", ["x", "s"], ["y1"], name="rotated"),
        helper.make_node("Mul", ["y1", "f"], ["y2"], name="scaled"),
        helper.make_node("Add", ["y2", "k"], ["y"], name="shifted"),
    ]
    f = numpy_helper.from_array(np.linspace(-3, 3, 4, dtype=np.float32), "f")
    x, y, d = (helper.make_tensor_value_info(name, TensorProto.FLOAT, [4]) for name in ("x", "y", "d_copy"))
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y, d], [f]), opset_imports=[helper.make_opsetid("", 17)]
    )
    assert _computed_names(model) == ["angles", "sin", "unread"]
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 2
    names = [node.name or node.output[0] for node in made.graph.node]
    assert names == ["k", "training", "unread", "dropout", "copy", "rotated", "scaled", "shifted"]
    assert [t.name for t in made.graph.initializer] == ["f", "a", "s"]
    onnx.checker.check_model(made, full_check=True)
    feeds = {"x": np.linspace(-1, 1, 4, dtype=np.float32)}
    [want, _], [got, _] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.BFLOAT16])
def test_sixteen_bit_floats_are_not_computed_ahead(element_type):
    """onnxruntime computes a chain of float16 nodes it has no kernels for in float32, rounding
    once at its end: the tables computed alone would round where the model did not."""
    model = rotary_tables_model(element_type, opset=21)
    assert [node.name or node.op_type for node in computable_nodes(model, inferred_types(model))] == ["positions"]


def test_a_target_whose_trials_found_it_better_computes_the_tables_and_then_puts_them_first():
    """--target of a runtime whose trials found whole models better with the values computed
    ahead and the constant factor first: Mul(x, cos) becomes Mul(cos, x) of the computed table;
    the verification compares bit for bit."""
    model = rotary_tables_model()
    profile = rotary_runtime("values computed ahead", "constant factor first")
    result = lowering.lower_model(model, target=profile)
    said = {form: count for form, count in result.report.forms.items()}
    assert any(form.startswith(VALUE_SAID) for form in said)
    products = [node for node in result.model.graph.node if node.op_type == "Mul"]
    assert [list(node.input) for node in products] == [["cos", "x"], ["sin", "x"]]
    feeds = {"x": _x(TensorProto.FLOAT)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()


def test_a_target_without_such_trials_leaves_the_tables_computed_at_run_time():
    profile = rotary_runtime("constant factor first")
    result = lowering.lower_model(rotary_tables_model(), target=profile)
    assert {"Cos", "Sin"} <= {node.op_type for node in result.model.graph.node}
    assert not any(form.startswith(VALUE_SAID) for form in result.report.forms)


def test_before_ir_version_4_the_values_are_constant_nodes():
    """Before IR version 4 every initializer is a graph input too: a value computed ahead is a
    Constant node there, and the graph's inputs stay as they were."""
    angles = numpy_helper.from_array(np.linspace(-4, 4, 8, dtype=np.float32))
    nodes = [
        helper.make_node("Constant", [], ["angles"], value=angles),
        helper.make_node("Cos", ["angles"], ["cos"]),
        helper.make_node("Mul", ["x", "cos"], ["y"]),
    ]
    x, y = (helper.make_tensor_value_info(name, TensorProto.FLOAT, [8]) for name in "xy")
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 1
    assert [node.op_type for node in made.graph.node] == ["Constant", "Mul"] and not made.graph.initializer
    assert [info.name for info in made.graph.input] == ["x"]
    onnx.checker.check_model(made, full_check=True)
    feeds = {"x": np.arange(8, dtype=np.float32)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.tobytes() == want.tobytes()


CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus"
COMMUTING = {"constant addend second", "constant factor first"}


@slow_but_a_sample(keep=1)
@pytest.mark.parametrize("name", sorted(path.stem for path in CORPUS.glob("*.onnx")))
def test_a_real_export_made_for_rknn_keeps_its_bits_with_its_values_computed_ahead(name):
    """Each corpus export made for rknn (its fixed input shapes stated) with the values computed
    ahead gives in onnxruntime the bits it gives made without them (the rotary tables, attention
    masks and position ids computed)."""
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    shapes = {key: list(value.shape) for key, value in feeds.items()}
    rknn = load_profile("rknn")
    without = lowering.lower_model(model, target=rknn.taking_forms(COMMUTING), input_shapes=shapes)
    made = lowering.lower_model(
        model, target=rknn.taking_forms(COMMUTING | {"values computed ahead"}), input_shapes=shapes
    )
    computed = sum(count for said, count in made.report.forms.items() if said.startswith(VALUE_SAID))
    if computed == 0:
        assert made.model.SerializeToString() == without.model.SerializeToString()
    for want, got in zip(run_onnxruntime(without.model, feeds), run_onnxruntime(made.model, feeds), strict=True):
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_a_value_a_weight_reads_is_left_with_what_reads_it_and_others_still_computed():
    """p = Cos(c) feeds a MatMul (left) and s = Sin(p) (which must then be left too: it reads a
    value computed at run time); the table t = Cos(k), apart from them, is still computed."""
    rng = np.random.default_rng(3)
    c = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "c")
    k = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "k")
    nodes = [
        helper.make_node("Cos", ["c"], ["p"], name="weight"),
        helper.make_node("Sin", ["p"], ["s"], name="from_weight"),
        helper.make_node("Cos", ["k"], ["t"], name="table"),
        helper.make_node("MatMul", ["x", "p"], ["m"]),
        helper.make_node("ReduceMax", ["s"], ["s_max"], keepdims=0, axes=[0]),
        helper.make_node("Add", ["m", "s_max"], ["a"]),
        helper.make_node("Mul", ["a", "t"], ["y"]),
    ]
    x, y = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16]), helper.make_tensor_value_info("y", 1, [2, 8])
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], [c, k]), opset_imports=[helper.make_opsetid("", 17)]
    )
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert computed_ahead(made, inferred_types(made)) == 1
    assert "table" not in {node.name for node in made.graph.node} and "t" in {t.name for t in made.graph.initializer}
    feeds = {"x": rng.standard_normal((2, 16)).astype(np.float32)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
    assert got.tobytes() == want.tobytes()


def test_a_constant_held_as_external_data_is_not_read():
    """A Constant node's tensor stored outside the model (its data not loaded) is no constant to
    compute from: onnxruntime would read the file from wherever it runs."""
    model = rotary_tables_model()
    frequencies = model.graph.initializer.pop()
    frequencies.ClearField("raw_data")
    frequencies.ClearField("float_data")
    frequencies.data_location = TensorProto.EXTERNAL
    frequencies.external_data.add(key="location", value="weights.data")
    model.graph.node.insert(0, helper.make_node("Constant", [], ["f"], value=frequencies))
    assert _computed_names(model) == ["positions", "Cast", "Unsqueeze"]


def test_before_ir_version_4_only_what_the_constant_in_force_takes_is_written():
    """Constant-1 (opset 8) takes float types only: a bool computed from constants stays."""
    angles = numpy_helper.from_array(np.linspace(-4, 4, 8, dtype=np.float32))
    zero = numpy_helper.from_array(np.zeros((), np.float32))
    nodes = [
        helper.make_node("Constant", [], ["angles"], value=angles),
        helper.make_node("Constant", [], ["zero"], value=zero),
        helper.make_node("Cos", ["angles"], ["cos"], name="cos"),
        helper.make_node("Greater", ["cos", "zero"], ["positive"], name="positive"),
        helper.make_node("And", ["positive", "x"], ["y"]),
    ]
    x, y = (helper.make_tensor_value_info(name, TensorProto.BOOL, [8]) for name in "xy")
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    assert _computed_names(model) == ["cos"]
    assert computed_ahead(model, inferred_types(model)) == 1
    onnx.checker.check_model(model, full_check=True)


def test_a_model_its_values_computed_ahead_would_break_is_left_as_it_was():
    """Resize scales computed ahead from Exp(Log(a)): onnx's shape inference then reads them and
    finds 55 rows where onnxruntime's kernel gives 56 (12 · 14/3 rounds to 56 in float32, not in
    float64), against the 56 an Add after it reads, so the made model would fail the checker:
    nothing is computed."""
    a = numpy_helper.from_array(np.array([1, 1, 14 / 3, 1], np.float32), "a")
    nodes = [
        helper.make_node("Log", ["a"], ["log"]),
        helper.make_node("Exp", ["log"], ["scales"]),
        helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="nearest"),
        helper.make_node("Add", ["r", "b"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 12, 1]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 1, 56, 1]),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 56, 1])
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, [y], [a]), opset_imports=[helper.make_opsetid("", 18)]
    )
    onnx.checker.check_model(model, full_check=True)
    feeds = {"x": np.ones((1, 1, 12, 1), np.float32), "b": np.zeros((1, 1, 56, 1), np.float32)}
    assert run_onnxruntime(model, feeds)[0].shape == (1, 1, 56, 1)
    assert len(computable_nodes(model, inferred_types(model))) == 2
    before = model.SerializeToString()
    assert computed_ahead(model, inferred_types(model)) == 0
    assert model.SerializeToString() == before
