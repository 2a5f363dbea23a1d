"""Forms a target chooses (lowering/target_forms.py): Reshape's allowzero=1 dropped where its
constant shape holds no 0 and the runtime gets the allowzero=1 form wrong, the result meaning
the same bit for bit; kept where the shape holds a 0 or is not a constant."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import make_model, slow_but_a_sample
from version_cases import node_cases

import lowering
from lowering import floats, schemas
from lowering.folding import MAX_FOLDED_ELEMENTS
from lowering.graphs import nested_graphs
from lowering.naming import NameAllocator
from lowering.node_forms import case_forms
from lowering.runtime_profiles import PARTLY, REFUSED, SUPPORTED, load_profile, profile_from_data
from lowering.shape_folding import inferred_types
from lowering.target_forms import OP_CHOICES, constants_by_name, indices_never_negative, shape_names_the_lengths
from lowering.target_lowering import TargetRefused, check_model, form_judge
from lowering.value_kinds import COPIED_LENGTH, NEGATIVE_INDICES, ONE_KEEPS_A_LENGTH
from lowering.verification.runtime import run_onnxruntime, run_reference

ALLOWZERO_CASE = "test_reshape_allowzero_reordered#constant"  # (allowzero=1, its shape holds a 0)
PLAIN_CASE = "test_reshape_reordered_all_dims#constant"  # (allowzero=0)


def _made_up(name: str, op_type: str, version: int, opset: int, verdicts: dict[str, str]):
    """A probed profile of one op version on float, its cases' verdicts by case name."""
    return profile_from_data({
        "name": name, "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [opset],
        "cases": {case: {"op": op_type, "version": version, "type": "FLOAT", "verdict": verdict}
                  for case, verdict in verdicts.items()},
    })  # fmt: skip


def _profile_of(name: str, opset: int, cases: dict[str, tuple[str, int, str, str]]):
    """A probed profile loading ``opset``, of the cases: name -> (op, version, type, verdict)."""
    return profile_from_data({
        "name": name, "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [opset],
        "cases": {case: {"op": op, "version": version, "type": element_type, "verdict": verdict}
                  for case, (op, version, element_type, verdict) in cases.items()},
    })  # fmt: skip


def _profile():
    """A runtime that gets the allowzero=1 case wrong and the allowzero=0 one right (OpenVINO 2024.6)."""
    return _made_up("allowzero-wrong", "Reshape", 21, 21, {ALLOWZERO_CASE: "wrong", PLAIN_CASE: "right"})


def _model(shape: list[int] | None, allowzero: int = 1) -> onnx.ModelProto:
    """x (2, 3, 4) reshaped by a constant ``shape``, or (None) x (N, 3, 4) by its own shape."""
    nodes, initializers = [], []
    if shape is None:
        nodes.append(helper.make_node("Shape", ["x"], ["shape"]))
    else:
        initializers.append(numpy_helper.from_array(np.array(shape, np.int64), "shape"))
    nodes.append(helper.make_node("Reshape", ["x", "shape"], ["y"], name="view", allowzero=allowzero))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N" if shape is None else 2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * (3 if shape is None else len(shape)))],
        initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _allowzero(model: onnx.ModelProto) -> list[int]:
    return [
        next((a.i for a in n.attribute if a.name == "allowzero"), 0) for n in model.graph.node if n.op_type == "Reshape"
    ]


def test_allowzero_is_dropped_where_the_constant_shape_holds_no_zero_and_the_model_means_the_same():
    model = _model([4, 6])
    result = lowering.lower_model(model, target=_profile())
    assert _allowzero(result.model) == [0] and _allowzero(model) == [1]  # (the caller's model untouched)
    assert result.report.forms == {"Reshape allowzero=1 -> 0 (its constant shape holds no 0)": 1}
    assert any(line.startswith("chose 1 x Reshape allowzero=1 -> 0") for line in result.report.lines())
    onnx.checker.check_model(result.model, full_check=True)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.tobytes() == want.tobytes() and got.shape == want.shape == (4, 6)


@pytest.mark.parametrize("shape", [[0, 6], None], ids=["a zero in the shape", "a shape computed at run time"])
def test_allowzero_is_kept_where_it_may_change_something_and_the_node_refused(shape):
    with pytest.raises(TargetRefused, match="node 'view'.*allowzero=1"):
        lowering.lower_model(_model(shape), target=_profile())


def test_a_form_the_runtime_takes_already_is_left_as_it_is():
    result = lowering.lower_model(_model([4, 6], allowzero=0), target=_profile())
    assert _allowzero(result.model) == [0] and not result.report.forms


def test_check_names_the_form_target_would_choose():
    [finding] = check_model(_model([4, 6]), _profile())
    assert finding.blocks and "--target chooses the form Reshape allowzero=1 -> 0" in str(finding)
    [finding] = check_model(_model([0, 6]), _profile())
    assert finding.blocks and "no pattern lowers it" in str(finding)


# -- Constant nodes as initializers -----------------------------------------------------------

GIVEN_BY_NODE, INITIALIZED = "mul_with_a_constant_node", "mul_with_an_initializer"


@pytest.fixture
def constant_node_profile(monkeypatch):
    """A runtime that fails Mul where a Constant node gives its second input and runs it where an
    initializer does (onnx2torch's Conv bias); the two cases' forms made up here."""
    from lowering import node_forms

    float_inputs = ((0, TensorProto.FLOAT), (1, TensorProto.FLOAT))
    form = node_forms.NodeForm(
        frozenset({0, 1}), frozenset({0}), frozenset({1}), frozenset({0}), (), types=float_inputs
    )
    forms = {GIVEN_BY_NODE: dataclasses.replace(form, from_nodes=frozenset({1})), INITIALIZED: form}
    monkeypatch.setattr(node_forms, "case_forms", lambda: forms)
    return _made_up("constant-nodes-fail", "Mul", 14, 17, {GIVEN_BY_NODE: "fails", INITIALIZED: "right"})


def _scaled_model(op_type: str = "Mul") -> onnx.ModelProto:
    """y = op(x, c), c = Constant([1.5, -0.0, nan]) (its node named 'scale_node'), x [2, 3]."""
    scale = numpy_helper.from_array(np.array([1.5, -0.0, np.nan], np.float32))
    nodes = [helper.make_node("Constant", [], ["c"], name="scale_node", value=scale),
             helper.make_node(op_type, ["x", "c"], ["y"], name="scaled")]  # fmt: skip
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_constant_node_becomes_an_initializer_where_its_consumer_runs_so(constant_node_profile):
    model = _scaled_model()
    [finding] = [f for f in check_model(model, constant_node_profile) if f.blocks]
    assert "input 1 given by a node" in str(
        finding
    ) and "--target chooses the form constant input read from an initializer" in str(finding)
    result = lowering.lower_model(model, target=constant_node_profile)
    assert [n.op_type for n in result.model.graph.node] == ["Mul"] and [n.op_type for n in model.graph.node] == [
        "Constant",
        "Mul",
    ]
    [initializer] = result.model.graph.initializer
    assert initializer.name == "c" and initializer.raw_data == model.graph.node[0].attribute[0].t.raw_data
    assert result.report.forms == {
        "constant input read from an initializer, not a node (the runtime takes it better so)": 1
    }
    onnx.checker.check_model(result.model, full_check=True)
    x = np.array([[2.0, -3.0, 1.0], [np.inf, 0.0, -0.0]], np.float32)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.tobytes() == want.tobytes()


def test_a_constant_node_whose_consumer_runs_either_way_stays(constant_node_profile):
    result = lowering.lower_model(_scaled_model("Add"), target=constant_node_profile)  # (Add: not probed)
    assert [n.op_type for n in result.model.graph.node] == ["Constant", "Add"] and not result.report.forms


@pytest.mark.parametrize("also_an_output", [False, True])
def test_an_identity_of_a_weight_is_read_past(constant_node_profile, also_an_output):
    """Mul(x, Identity(w)), w an initializer too large to fold (a TorchScript export's shared
    bias): Mul reads w; the Identity goes where nothing else reads it, and stays where the graph
    outputs it."""
    size = MAX_FOLDED_ELEMENTS + 1
    w = numpy_helper.from_array(np.resize(np.array([1.5, -0.0, np.nan], np.float32), size), "w")
    nodes = [helper.make_node("Identity", ["w"], ["w_shared"], name="share"),
             helper.make_node("Mul", ["x", "w_shared"], ["y"], name="scaled")]  # fmt: skip
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, size])]
    if also_an_output:
        outputs.append(helper.make_tensor_value_info("w_shared", TensorProto.FLOAT, [size]))
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, size])
    model = helper.make_model(helper.make_graph(nodes, "g", [x_info], outputs, [w]),
                              opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    result = lowering.lower_model(model, target=constant_node_profile)
    [mul] = [n for n in result.model.graph.node if n.op_type == "Mul"]
    assert list(mul.input) == ["x", "w"] and [t.name for t in result.model.graph.initializer] == ["w"]
    assert [n.op_type for n in result.model.graph.node] == (["Identity", "Mul"] if also_an_output else ["Mul"])
    onnx.checker.check_model(result.model, full_check=True)
    x = np.random.default_rng(0).standard_normal((2, size)).astype(np.float32)
    for got, want in zip(run_onnxruntime(result.model, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
        assert got.tobytes() == want.tobytes()


def test_a_constant_computed_otherwise_is_not_promised_an_initializer(constant_node_profile):
    """Mul(x, Neg(w)), w too large to fold: a node gives the constant, but not one --target can
    read from an initializer (no Constant, no Identity of a weight), so check names no such fix
    and --target refuses the node."""
    size = MAX_FOLDED_ELEMENTS + 1
    w = numpy_helper.from_array(np.ones(size, np.float32), "w")
    nodes = [helper.make_node("Neg", ["w"], ["minus_w"], name="negate"),
             helper.make_node("Mul", ["x", "minus_w"], ["y"], name="scaled")]  # fmt: skip
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, size])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, size])
    model = helper.make_model(helper.make_graph(nodes, "g", [x_info], [y_info], [w]),
                              opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    [finding] = [f for f in check_model(model, constant_node_profile) if f.blocks]
    assert "input 1 given by a node" in str(finding) and "no pattern lowers it" in str(finding)
    with pytest.raises(TargetRefused, match="node 'scaled'"):
        lowering.lower_model(model, target=constant_node_profile)


def test_a_model_the_forms_leave_invalid_is_refused_not_returned(constant_node_profile, monkeypatch):
    """The forms chosen are checked as every lowered model is: a rewrite that dropped a Constant
    without its initializer (made here on purpose) is a clear error, not a model."""
    from lowering import target_forms

    def dropped(model, check_form):
        kept = [node for node in model.graph.node if node.op_type != "Constant"]
        del model.graph.node[:]
        model.graph.node.extend(kept)
        return 1

    monkeypatch.setattr(target_forms, "constants_as_initializers", dropped)
    with pytest.raises(lowering.LoweringError, match="left an invalid model"):
        lowering.lower_model(_scaled_model(), target=constant_node_profile)


def _addend_first_model(element_type: int, constant: np.ndarray, opset: int = 17, fed_default: bool = False):
    """y = Add(c, x): c a constant initializer [k], x [n, 1] (a graph input); with
    ``fed_default`` c is a graph input too (its initializer only a default)."""
    c = numpy_helper.from_array(constant, "c")
    inputs = [helper.make_tensor_value_info("x", element_type, ["n", 1])]
    if fed_default:
        inputs.append(helper.make_tensor_value_info("c", element_type, [constant.size]))
    output = helper.make_tensor_value_info("y", element_type, ["n", constant.size])
    graph = helper.make_graph([helper.make_node("Add", ["c", "x"], ["y"], name="biased")], "g", inputs, [output], [c])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# the forms that commute a node's inputs: its op, its inputs as written and as the form makes them
COMMUTED_FORMS = {
    "constant addend second": ("Add", ["c", "x"], ["x", "c"]),
    "constant factor first": ("Mul", ["x", "c"], ["c", "x"]),
}


def _commuted_model(form: str, element_type: int, constant: np.ndarray, opset: int = 17, fed_default: bool = False):
    """y = Add(c, x) or Mul(x, c), as the ``form`` finds it (:func:`_addend_first_model`)."""
    op_type, written, _ = COMMUTED_FORMS[form]
    model = _addend_first_model(element_type, constant, opset, fed_default)
    node = model.graph.node[0]
    node.op_type, node.input[:] = op_type, written
    return model


def _form_trialled(form: str, better: list[str], worse: list[str]):
    """A probed runtime (of the form's op only, run right) whose trials found whole models right
    with the ``form`` and not without (``better``), and the other way (``worse``)."""
    op_type = COMMUTED_FORMS[form][0]
    profile = _made_up(f"{op_type}-trialled", op_type, 14, 17, {f"test_{op_type.lower()}": "right"})
    forms = {form: {"better": better, "worse": worse, "tried": [*better, *worse]}}
    return dataclasses.replace(profile, model_forms=forms)


def _trialled(better: list[str], worse: list[str]):
    """:func:`_form_trialled` of the constant addend second."""
    return _form_trialled("constant addend second", better, worse)


@pytest.mark.parametrize("form", COMMUTED_FORMS)
@pytest.mark.parametrize(
    "element_type", [TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT64]
)
def test_the_constant_goes_where_the_form_puts_it_and_every_result_keeps_its_bits(form, element_type):
    """Add(c, x) -> Add(x, c) and Mul(x, c) -> Mul(c, x) where trials found whole models better
    so (rknn builds LLaMA's rotary embedding with the factor first): bit for bit in
    onnxruntime, x every float16 bit pattern (NaN of every payload and sign, ±inf, ±0,
    subnormals) or the type's edge values, c the type's edge values but NaN (inf - inf, 0 · inf,
    overflow to ±inf, underflow to ±0, integers wrapping)."""
    from lowering.samples import edge_values, every_bit_pattern

    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        x = constant = np.array([info.min, info.min + 1, -1, 0, 1, 3, info.max - 1, info.max], dtype)
    elif element_type == TensorProto.FLOAT16:  # (±0, the least and largest subnormals, 1, the largest, inf)
        edges = np.array([0x0000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x7BFF, 0x7C00], np.uint16)
        constant = np.concatenate([edges, edges | 0x8000]).view(np.float16)
        x = every_bit_pattern(element_type)
    else:
        x = edge_values(element_type)
        constant = x[~np.isnan(x)]
    _, written, made = COMMUTED_FORMS[form]
    model = _commuted_model(form, element_type, constant)
    result = lowering.lower_model(model, target=_form_trialled(form, ["deit"], []))
    [node] = result.model.graph.node
    assert list(node.input) == made and list(model.graph.node[0].input) == written
    assert sum(result.report.forms.values()) == 1
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"x": x.reshape(-1, 1)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("form", COMMUTED_FORMS)
@pytest.mark.parametrize("case", ["no trial better", "a trial worse", "a NaN in the constant", "the constant is fed",
                                  "version 6", "both constant", "the other form alone"])  # fmt: skip
def test_the_inputs_stay_where_the_trials_or_the_values_do_not_allow_it(form, case):
    """Not made where no trial found it better, where one found it worse, where c holds a NaN
    (NaN + NaN: which payload comes back may follow the order), where a graph input may
    override c, before version 7 (Add-6 and Mul-6 broadcast by their own attributes), where
    both are constant, or where only the other form's trials were better (a form is made only
    where its own trials found it so)."""
    constant = np.array([1.5, -0.0, 3.0], np.float32)
    better, worse, opset, fed = ["deit"], [], 17, False
    if case == "no trial better":
        better = []
    elif case == "a trial worse":
        worse = ["bert"]
    elif case == "a NaN in the constant":
        constant = np.array([1.5, np.nan, 3.0], np.float32)
    elif case == "the constant is fed":
        fed = True
    elif case == "version 6":
        opset = 6
    model = _commuted_model(form, TensorProto.FLOAT, constant, opset, fed)
    if case == "both constant":
        model.graph.initializer.append(numpy_helper.from_array(np.ones((2, 1), np.float32), "x"))
        del model.graph.input[:]
    profile = _form_trialled(form, better, worse)
    if case == "version 6":
        profile = dataclasses.replace(profile, opsets=(6,))
    if case == "the other form alone":
        [other] = [each for each in COMMUTED_FORMS if each != form]
        profile = dataclasses.replace(profile, model_forms=_form_trialled(other, ["deit"], []).model_forms)
    result = lowering.lower_model(model, target=profile, fold="none")
    op_type, written, _ = COMMUTED_FORMS[form]
    nodes = [n for n in result.model.graph.node if n.op_type == op_type]
    assert [list(n.input) for n in nodes] == [written] and not result.report.forms


def test_rknn_writes_a_conv_scaled_by_a_constant_factor_first_and_verify_finds_the_same_bits():
    """A Conv times a constant per channel (a folded batch norm's scale), as made for rknn (whose
    trials found the constant factor first better): Mul(c, Conv(x, w)), and verify compares it
    with the original bit for bit (node by node: onnxruntime fuses the Conv with the Mul only
    where c is second, so run optimized the two would round apart)."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), "w")
    c = numpy_helper.from_array(rng.standard_normal((4, 1, 1)).astype(np.float32), "c")
    nodes = [helper.make_node("Conv", ["x", "w"], ["conv"], name="conv"),
             helper.make_node("Mul", ["conv", "c"], ["y"], name="scaled")]  # fmt: skip
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])
    model = helper.make_model(
        helper.make_graph(nodes, "g", [x], [y], [w, c]), opset_imports=[helper.make_opsetid("", 17)]
    )
    result = lowering.lower_model(model, target="rknn")
    [scaled] = [n for n in result.model.graph.node if n.op_type == "Mul"]
    assert list(scaled.input) == ["c", "conv"]
    report = lowering.verify(model, result.model)
    assert report.match and report.original_runner == report.lowered_runner == "onnxruntime", report.lines()


def test_a_constant_an_identity_gives_goes_second_too():
    """Add(Identity(b), x), b an initializer (a TorchScript export's shared bias): b is a constant."""
    model = _addend_first_model(TensorProto.FLOAT, np.array([1.0, 2.0], np.float32))
    model.graph.node.insert(0, helper.make_node("Identity", ["c"], ["shared"], name="share"))
    model.graph.node[1].input[0] = "shared"
    result = lowering.lower_model(model, target=_trialled(["deit"], []), fold="none")
    [add] = [n for n in result.model.graph.node if n.op_type == "Add"]
    assert list(add.input) == ["x", "shared"] and [n.op_type for n in result.model.graph.node] == ["Identity", "Add"]


@pytest.mark.parametrize("form", COMMUTED_FORMS)
@pytest.mark.parametrize("scope", ["if", "function"])
def test_the_constant_goes_where_the_form_puts_it_in_an_if_branch_and_a_local_function(form, scope):
    """Add(c, x) and Mul(x, c) in both branches of an If (c the branch's initializer) and in a
    local function (c a Constant there): made Add(x, c) and Mul(c, x) in each, the model the
    same bit for bit either way."""
    from support import nested_forms

    from lowering.samples import edge_values

    x = edge_values(TensorProto.FLOAT)
    constant = x[~np.isnan(x)]
    op_type, _, made = COMMUTED_FORMS[form]
    model = nested_forms(_commuted_model(form, TensorProto.FLOAT, constant))[scope]
    result = lowering.lower_model(model, target=_form_trialled(form, ["deit"], []), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    if scope == "if":
        [choose] = result.model.graph.node
        nodes = [n for a in choose.attribute for n in a.g.node if n.op_type == op_type]
    else:
        [function] = result.model.functions
        nodes = [n for n in function.node if n.op_type == op_type]
    assert len(nodes) == (2 if scope == "if" else 1) and all(list(n.input) == made for n in nodes)
    for branch in (True, False):
        feeds = {"x": x.reshape(-1, 1), "branch": np.array(branch)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("form", COMMUTED_FORMS)
def test_the_constant_goes_where_the_form_puts_it_on_bfloat16_and_every_result_keeps_its_bits(form):
    """bfloat16 (Add-13 and Mul-13 on; onnxruntime has no CPU kernel for them, so onnx.reference
    is the oracle): x every bfloat16 bit pattern, c bfloat16's edge values but NaN."""
    import ml_dtypes
    from onnx.reference import ReferenceEvaluator

    from lowering.samples import every_bit_pattern

    # (±0, the least and largest subnormals, 1, the largest finite, inf)
    edges = np.array([0x0000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x7F7F, 0x7F80], np.uint16)
    constant = np.concatenate([edges, edges | 0x8000]).view(ml_dtypes.bfloat16)
    model = _commuted_model(form, TensorProto.BFLOAT16, constant)
    result = lowering.lower_model(model, target=_form_trialled(form, ["deit"], []), fold="none")
    assert [list(n.input) for n in result.model.graph.node] == [COMMUTED_FORMS[form][2]]
    onnx.checker.check_model(result.model, full_check=True)
    x = every_bit_pattern(TensorProto.BFLOAT16).astype(ml_dtypes.bfloat16).reshape(-1, 1)
    with np.errstate(all="ignore"):
        [want] = ReferenceEvaluator(model).run(None, {"x": x})
        [got] = ReferenceEvaluator(result.model).run(None, {"x": x})
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def _scan_sum_model(typed: bool) -> onnx.ModelProto:
    """y, ys = Scan(s0, xs): a running sum (s = s + x, per row x of xs) inside an If's then branch,
    whose body inputs state a type or (typed=False) none, as ONNX's own function bodies write."""
    body_inputs = [helper.make_tensor_value_info("s_in", TensorProto.FLOAT, [3]) if typed else
                   helper.make_value_info("s_in", onnx.TypeProto()),
                   helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [3]) if typed else
                   helper.make_value_info("x_in", onnx.TypeProto())]  # fmt: skip
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_in"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_out"])],
        "body", body_inputs,
        [helper.make_tensor_value_info("s_out", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    scan = helper.make_node("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)
    branch_outputs = [helper.make_tensor_value_info("ys", TensorProto.FLOAT, [4, 3])]
    then_branch = helper.make_graph([scan], "then", [], branch_outputs)
    else_branch = helper.make_graph([helper.make_node("Identity", ["xs"], ["other"])], "else", [],
                                    [helper.make_tensor_value_info("other", TensorProto.FLOAT, [4, 3])])  # fmt: skip
    node = helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)
    graph = helper.make_graph(
        [node], "scan_sum",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("s0", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("xs", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_body_input_of_no_type_is_given_the_type_inference_gives_it():
    """tract refuses a Scan body input that states no type; --target states the one onnx's
    inference gives it (here in an If's branch), only where none is stated; the model passes the
    full checker and means the same, bit for bit."""
    from lowering.target_forms import SUBGRAPH_TYPES_SAID, typed_subgraph_inputs

    model = _scan_sum_model(typed=False)
    result = lowering.lower_model(model, target="tract-0.23")
    assert result.report.forms[SUBGRAPH_TYPES_SAID] == 2
    branches = {a.name: a.g for a in result.model.graph.node[0].attribute}
    [scan] = branches["then_branch"].node
    body = helper.get_node_attr_value(scan, "body")
    assert [(i.type.tensor_type.elem_type, len(i.type.tensor_type.shape.dim)) for i in body.input] == [(1, 1)] * 2
    assert not any(
        d.HasField("dim_value") or d.HasField("dim_param") for i in body.input for d in i.type.tensor_type.shape.dim
    )
    onnx.checker.check_model(result.model, full_check=True)
    rng = np.random.default_rng(0)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32), "xs": rng.standard_normal((4, 3)).astype(np.float32)}
    for cond in (True, False):
        fed = {**feeds, "cond": np.array(cond)}
        assert run_onnxruntime(result.model, fed)[0].tobytes() == run_onnxruntime(model, fed)[0].tobytes()
    typed = _scan_sum_model(typed=True)
    assert typed_subgraph_inputs(typed) == 0 and typed == _scan_sum_model(typed=True)


def _scalar_axes_model() -> onnx.ModelProto:
    """y = Unsqueeze(x, -1) in the main graph (axes an initializer, read by an Add too: k - 1),
    in an If's branches (a Constant node's value_int; the initializer) and in a local function
    (a Constant node's 0-D value)."""
    minus_one = numpy_helper.from_array(np.array(-1, np.int64), "minus_one")
    then_branch = helper.make_graph(
        [helper.make_node("Constant", [], ["axis"], value_int=0),
         helper.make_node("Unsqueeze", ["x", "axis"], ["then_y"])], "then", [],
        [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, [1, 2, 3])],
    )  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Unsqueeze", ["x", "minus_one"], ["else_y"])], "else", [],
        [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, [2, 3, 1])],
    )  # fmt: skip
    function = helper.make_function(
        "local", "Unsqueezed", ["v"], ["w"],
        [helper.make_node("Constant", [], ["last"], value=numpy_helper.from_array(np.array(-1, np.int64))),
         helper.make_node("Unsqueeze", ["v", "last"], ["w"])],
        [helper.make_opsetid("", 21)],
    )  # fmt: skip
    nodes = [
        helper.make_node("Unsqueeze", ["x", "minus_one"], ["y"], name="unsqueeze"),
        helper.make_node("Add", ["minus_one", "k"], ["k_back"], name="add"),
        helper.make_node("If", ["cond"], ["branch"], then_branch=then_branch, else_branch=else_branch),
        helper.make_node("Unsqueezed", ["x"], ["in_function"], domain="local"),
    ]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("k", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 1]),
         helper.make_tensor_value_info("k_back", TensorProto.INT64, []),
         helper.make_tensor_value_info("branch", TensorProto.FLOAT, ["a", "b", "c"]),
         helper.make_tensor_value_info("in_function", TensorProto.FLOAT, [2, 3, 1])],
        [minus_one],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("local", 1)]
    return helper.make_model(graph, opset_imports=opsets, functions=[function])


def test_scalar_axes_become_a_one_element_tensor_and_the_model_means_the_same():
    """Unsqueeze whose constant axes are a scalar (onnx's AffineGrid body writes them;
    onnx2torch fails them) read [a] instead, in the main graph, an If's branch and a local
    function; the scalar itself stays for what else reads it; bit for bit the same outputs."""
    from lowering.target_forms import AXES_SAID, one_dimensional_axes

    model = _scalar_axes_model()
    result = lowering.lower_model(model, target="onnxruntime")
    assert result.report.forms[AXES_SAID] == 4
    made = result.model
    onnx.checker.check_model(made, full_check=True)
    for graph in [made.graph, *nested_graphs(made.graph.node)]:
        values = {t.name: t for t in graph.initializer}
        values |= {n.output[0]: n.attribute[0].t for n in graph.node if n.op_type == "Constant"}
        for node in graph.node:
            if node.op_type == "Unsqueeze":
                assert list(values[node.input[1]].dims) == [1], node
    [function] = made.functions
    constants = {n.output[0]: n for n in function.node if n.op_type == "Constant"}
    assert [list(constants[n.input[1]].attribute[0].t.dims) for n in function.node if n.op_type == "Unsqueeze"] == [[1]]
    assert [n.input for n in made.graph.node if n.op_type == "Add"] == [["minus_one", "k"]]
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    for cond in (True, False):
        fed = {"x": x, "cond": np.array(cond), "k": np.array(3, np.int64)}
        got, want = run_onnxruntime(made, fed), run_onnxruntime(model, fed)
        assert [a.tobytes() for a in got] == [b.tobytes() for b in want]
        assert [a.shape for a in got] == [b.shape for b in want]
    assert one_dimensional_axes(made) == 0


def test_axes_a_graph_input_gives_are_not_an_outer_scalar_of_their_name():
    """A Loop body's Unsqueeze reads its axes from the body's input ``ax``, named as a scalar
    Constant outside: those axes are the carried ones, not the scalar, so nothing is rewritten."""
    from lowering.target_forms import one_dimensional_axes

    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["ax"], ["ax_out"]),
         helper.make_node("Unsqueeze", ["x", "ax"], ["y"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("ax", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("ax_out", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)],
    )  # fmt: skip
    scalar = numpy_helper.from_array(np.array(0, np.int64), "ax")
    nodes = [
        helper.make_node("Constant", [], ["ax"], value=scalar),
        helper.make_node("Constant", [], ["trips"], value=numpy_helper.from_array(np.array(1, np.int64), "trips")),
        helper.make_node("Constant", [], ["go"], value=numpy_helper.from_array(np.array(True), "go")),
        helper.make_node("Loop", ["trips", "go", "start"], ["last", "ys"], body=body),
        helper.make_node("Add", ["ax", "k"], ["sum"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("start", TensorProto.INT64, [1]),
              helper.make_tensor_value_info("k", TensorProto.INT64, [])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("ys", TensorProto.FLOAT, [None] * 4),
               helper.make_tensor_value_info("sum", TensorProto.INT64, [])]  # fmt: skip
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 13)]
    )
    onnx.checker.check_model(model, full_check=True)
    made = onnx.ModelProto()
    made.CopyFrom(model)
    assert one_dimensional_axes(made) == 0
    assert made.SerializeToString() == model.SerializeToString()


# -- Equal on bool as Not(Xor) --------------------------------------------------------------------

EQUAL_ON_BOOL = "lowered_test_isnan_y_Equal_1"  # (Equal-19 of a fed bool and a constant one)


def _bool_ops_profile(xor: str = "right"):
    """A runtime that fails Equal on bool (runs it on int32) and runs Xor (``xor``) and Not on
    bool (tract, TVM)."""
    return _profile_of("bool-equal-fails", 19, {
        EQUAL_ON_BOOL: ("Equal", 19, "BOOL", "fails"),
        "test_equal_bcast": ("Equal", 19, "INT32", "right"),
        "test_xor_bcast3v1d": ("Xor", 7, "BOOL", xor),
        "test_xor_bcast3v1d#constant": ("Xor", 7, "BOOL", xor),
        "test_not_2d": ("Not", 1, "BOOL", "right"),
    })  # fmt: skip


def _bool_equal_model(element_type: int = TensorProto.BOOL) -> onnx.ModelProto:
    """y = Equal(a [2, 3], b [3]) (broadcast)."""
    graph = helper.make_graph(
        [helper.make_node("Equal", ["a", "b"], ["y"], name="same")], "g",
        [helper.make_tensor_value_info("a", element_type, [2, 3]),
         helper.make_tensor_value_info("b", element_type, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [2, 3])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


EQUAL_SAID = "Equal(a, b) on bool -> Xor(a, Not(b)) (the runtime runs Xor and Not better)"


def test_equal_on_bool_becomes_xor_not_and_means_the_same_on_every_pair():
    model = _bool_equal_model()
    result = lowering.lower_model(model, target=_bool_ops_profile())
    assert [n.op_type for n in result.model.graph.node] == ["Not", "Xor"]
    assert result.report.forms == {EQUAL_SAID: 1} and [n.op_type for n in model.graph.node] == ["Equal"]
    onnx.checker.check_model(result.model, full_check=True)
    a = np.array([[False, False, True], [True, True, False]])
    for b in (np.array([False, True, False]), np.array([True, False, True])):
        [want], [got] = run_onnxruntime(model, {"a": a, "b": b}), run_onnxruntime(result.model, {"a": a, "b": b})
        assert got.dtype == want.dtype == np.bool_ and got.shape == want.shape == (2, 3)
        assert np.array_equal(got, want) and np.array_equal(got, a == b)
    [finding] = [f for f in check_model(model, _bool_ops_profile()) if f.blocks]
    assert f"--target chooses the form {EQUAL_SAID}" in str(finding)


def test_equal_on_bool_before_a_where_keeps_its_zeros_signs_in_onnxruntime():
    """A NaN mask as the patterns write it, Equal(c, false), choosing a Where of floats: its form
    puts no Not before the Where (onnxruntime would fuse it into the Where by swapping the
    branches, and its Where loses a -0 taken from its second input, so the zeros lost would be
    others), so the lowered model gives the original's bits under onnxruntime's default
    optimizations."""
    false = numpy_helper.from_array(np.array(False), "false")
    graph = helper.make_graph(
        [helper.make_node("Equal", ["c", "false"], ["m"], name="same"),
         helper.make_node("Where", ["m", "x", "z"], ["y"], name="choose")], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, [4]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [false],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    result = lowering.lower_model(model, target=_bool_ops_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {EQUAL_SAID: 1}
    feeds = {"c": np.array([True, False, True, False]), "x": np.float32([-0.0, -0.0, 1, 2]),
             "z": np.float32([-0.0, -0.0, -0.0, -0.0])}  # fmt: skip
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes() and np.signbit(want[[0, 2]]).all()  # (z's -0 where c is true)


def test_equal_stays_where_the_runtime_takes_xor_no_better_or_the_values_are_not_bool():
    with pytest.raises(TargetRefused, match="node 'same'"):
        lowering.lower_model(_bool_equal_model(), target=_bool_ops_profile(xor="fails"))
    result = lowering.lower_model(_bool_equal_model(TensorProto.INT32), target=_bool_ops_profile())
    assert [n.op_type for n in result.model.graph.node] == ["Equal"] and not result.report.forms


def test_equal_on_bool_becomes_xor_not_in_an_if_branch():
    from support import nested_forms

    model = nested_forms(_bool_equal_model())["if"]
    result = lowering.lower_model(model, target=_bool_ops_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    [choose] = result.model.graph.node
    branches = [[n.op_type for n in a.g.node] for a in choose.attribute]
    assert all("Equal" not in ops and "Xor" in ops and "Not" in ops for ops in branches), branches
    a, b = np.array([[False, True, True], [True, False, False]]), np.array([True, True, False])
    for branch in (True, False):
        feeds = {"a": a, "b": b, "branch": np.array(branch)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert np.array_equal(got, want)


def test_a_local_functions_values_are_not_judged_by_the_main_graphs_of_the_same_names():
    """A function F(a, b) = Equal(a, b) called on floats, beside a main graph whose bool inputs are
    also named a and b: the main graph's Equal becomes Xor(a, Not(b)); the function's, whose types are
    each call's (unknown here), is left, and the model runs alike."""
    function = helper.make_function("local", "F", ["a", "b"], ["e"], [helper.make_node("Equal", ["a", "b"], ["e"])],
                                    [helper.make_opsetid("", 19)])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("Equal", ["a", "b"], ["y"], name="same"),
         helper.make_node("F", ["x", "z"], ["w"], domain="local", name="call")], "g",
        [helper.make_tensor_value_info(name, element_type, [3]) for name, element_type in
         [("a", TensorProto.BOOL), ("b", TensorProto.BOOL), ("x", TensorProto.FLOAT), ("z", TensorProto.FLOAT)]],
        [helper.make_tensor_value_info(name, TensorProto.BOOL, [3]) for name in ("y", "w")],
    )  # fmt: skip
    opsets = [helper.make_opsetid("", 19), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=[function])
    result = lowering.lower_model(model, target=_bool_ops_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert [n.op_type for n in result.model.graph.node] == ["Not", "Xor", "F"]
    assert [n.op_type for n in result.model.functions[0].node] == ["Equal"]
    feeds = {"a": np.array([True, False, True]), "b": np.array([True, True, False]),
             "x": np.array([1.0, np.nan, -0.0], np.float32), "z": np.array([1.0, np.nan, 0.0], np.float32)}  # fmt: skip
    for got, want in zip(run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds), strict=True):
        assert np.array_equal(got, want)


# -- Pad with axes as Pad over every axis ---------------------------------------------------------


def _pad_axes_profile():
    """A runtime that fails Pad-18 given its axes and runs it without (tract 0.21), and Constant."""
    cases = {
        "test_constant_pad_axes@18#constant": ("Pad", 18, "FLOAT", "fails"),
        "test_constant_pad@18#constant": ("Pad", 18, "FLOAT", "right"),
        "constant_INT64@13": ("Constant", 13, "INT64", "right"),
    }
    return _profile_of("pad-axes-fail", 18, cases)


def _padded_model(axes: list[int], pads: list[int], axes_fed: bool = False) -> onnx.ModelProto:
    """y = Pad(x [2, 3, 4], pads, value -0.0, axes): pads and axes initializers (axes a graph
    input with ``axes_fed``)."""
    initializers = [numpy_helper.from_array(np.array(pads, np.int64), "pads"),
                    numpy_helper.from_array(np.array(-0.0, np.float32), "value")]  # fmt: skip
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])]
    if axes_fed:
        inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [len(axes)]))
    else:
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), "axes"))
    graph = helper.make_graph(
        [helper.make_node("Pad", ["x", "pads", "value", "axes"], ["y"], name="padded")], "g", inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None, None])], initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


PAD_SAID = "Pad with axes -> Pad with pads for every axis (its pads and axes constants)"


@pytest.mark.parametrize(
    ("axes", "pads", "every"),
    [([2], [1, 3], [0, 0, 1, 0, 0, 3]), ([-1, 0], [1, 0, 2, 1], [0, 0, 1, 1, 0, 2]), ([1, 2, 0], [0] * 6, [0] * 6)],
)
def test_pad_with_axes_becomes_pad_over_every_axis_and_means_the_same(axes, pads, every):
    from lowering.samples import edge_values

    model = _padded_model(axes, pads)
    result = lowering.lower_model(model, target=_pad_axes_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    constant, pad = result.model.graph.node
    assert constant.op_type == "Constant" and pad.op_type == "Pad" and len(pad.input) == 3
    assert numpy_helper.to_array(constant.attribute[0].t).tolist() == every and pad.input[1] == constant.output[0]
    assert result.report.forms == {PAD_SAID: 1}
    values = edge_values(TensorProto.FLOAT)
    x = np.resize(values, 24).reshape(2, 3, 4)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.shape == want.shape and got.tobytes() == want.tobytes()
    [finding] = [f for f in check_model(model, _pad_axes_profile()) if f.blocks]
    assert f"--target chooses the form {PAD_SAID}" in str(finding)


@pytest.mark.parametrize(
    ("axes", "pads", "axes_fed"),
    [([2], [1, 3], True), ([2, -1], [1, 1, 1, 1], False), ([3], [1, 1], False)],
    ids=["axes fed", "an axis named twice", "an axis out of range"],
)
def test_pad_with_axes_stays_where_they_are_fed_or_not_one_axis_each(axes, pads, axes_fed):
    model = _padded_model(axes, pads, axes_fed)
    assert all(PAD_SAID not in str(finding) for finding in check_model(model, _pad_axes_profile()))
    try:
        result = lowering.lower_model(model, target=_pad_axes_profile(), fold="none")
    except TargetRefused as refusal:
        assert "node 'padded'" in str(refusal)
    else:
        assert [len(n.input) for n in result.model.graph.node] == [4] and not result.report.forms


# -- BitShift-28 in an unsigned carrier -----------------------------------------------------------


def _bitshift_profile(out_of_range: str = "wrong"):
    """A runtime that shifts int32 right in range and ``out_of_range`` by amounts out of range
    (tract, OpenVINO, TVM get them wrong), and runs the carrier's ops (int64 and uint64)."""
    cases = {
        "test_bitshift_left_int32": ("BitShift", 28, "INT32", "right"),
        "test_bitshift_left_int32_shift_ge_width": ("BitShift", 28, "INT32", out_of_range),
        "test_bitshift_left_uint64": ("BitShift", 28, "UINT64", "right"),
        "cast_INT32_INT64@28": ("Cast", 28, "INT32", "right"),
        "cast_INT64_UINT64@28": ("Cast", 28, "INT64", "right"),
        "cast_UINT64_INT64@28": ("Cast", 28, "UINT64", "right"),
        "test_less_int64": ("Less", 13, "INT64", "right"),
        "test_not": ("Not", 1, "BOOL", "right"),
        "test_and": ("And", 7, "BOOL", "right"),
        "test_where_int64": ("Where", 16, "BOOL", "right"),  # (judged by its first input)
        "test_add_int64": ("Add", 14, "INT64", "right"),
        "test_sub_int64": ("Sub", 14, "INT64", "right"),
        "test_mod_uint64": ("Mod", 28, "UINT64", "right"),
        "constant_INT64@25": ("Constant", 25, "INT64", "right"),
        "constant_UINT64@25": ("Constant", 25, "UINT64", "right"),
    }
    return _profile_of("bitshift-out-of-range", 28, cases)


def _shift_model() -> onnx.ModelProto:
    """z = BitShift-28(x, y, LEFT), x and y int32 [n]."""
    graph = helper.make_graph(
        [helper.make_node("BitShift", ["x", "y"], ["z"], name="shift", direction="LEFT")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, ["n"]),
         helper.make_tensor_value_info("y", TensorProto.INT32, ["n"])],
        [helper.make_tensor_value_info("z", TensorProto.INT32, ["n"])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])


SHIFT_SAID = "BitShift-28 -> a shift of an unsigned carrier by amounts in range (the runtime runs those better)"


def test_bitshift_28_goes_to_an_unsigned_carrier_and_means_the_same_for_every_amount():
    """Each x of int32's extremes, ±1, 0, 12345 shifted by every amount from -40 to 40: the
    carrier's result is the op's (onnx.reference, version 28: 0 out of range)."""
    from onnx.reference import ReferenceEvaluator

    model = _shift_model()
    result = lowering.lower_model(model, target=_bitshift_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    ops = [n.op_type for n in result.model.graph.node]
    assert result.report.forms == {SHIFT_SAID: 1} and "Mod" in ops and ops.count("BitShift") == 1
    amounts = np.arange(-40, 41, dtype=np.int32)
    bases = np.array([np.iinfo(np.int32).min, -1, 0, 1, 12345, np.iinfo(np.int32).max], np.int32)
    x, y = np.repeat(bases, amounts.size), np.tile(amounts, bases.size)
    [want] = ReferenceEvaluator(model).run(None, {"x": x, "y": y})
    [got] = run_onnxruntime(result.model, {"x": x, "y": y})
    assert got.dtype == np.int32 and np.array_equal(got, want)
    assert (want[(y < 0) | (y >= 32)] == 0).all() and want[(x == 1) & (y == 4)].tolist() == [16]
    [finding] = check_model(model, _bitshift_profile())
    assert f"--target chooses the form {SHIFT_SAID}" in str(finding)


def test_bitshift_28_stays_where_the_runtime_shifts_it_right():
    result = lowering.lower_model(_shift_model(), target=_bitshift_profile("right"), fold="none")
    assert [n.op_type for n in result.model.graph.node] == ["BitShift"] and not result.report.forms


# -- Mod-28's floored remainder on floats from the truncated one ------------------------------------

FLOAT_BITS = {TensorProto.FLOAT16: 16, TensorProto.FLOAT: 32, TensorProto.DOUBLE: 64}
FLOORED_SAID = (
    "Mod-28(a, b, fmod=0) on floats -> the truncated remainder Mod(a, b, fmod=1) moved by b where of the other "
    "sign (the runtime runs those better)"
)
FLOORED_BY_ISNAN_SAID = (
    "Mod-28(a, b, fmod=0) on floats -> the truncated remainder Mod(a, b, fmod=1) moved by b where of the other "
    "sign, NaN found by IsNaN (the runtime runs those better)"
)


def _floored_remainder_profile(edge_cases: str = "wrong", bool_equal: str = "fails"):
    """A runtime that gets Mod-28 fmod=0 on floats ``edge_cases`` on infinities and zeros (TVM
    gets them wrong), runs the truncated remainder's nodes right (the probe's ``chosen_``
    cases of them, a Less of two fed values, and Xor, And and Or of bools), IsNaN right and an
    Equal of bools ``bool_equal`` (TVM fails it)."""
    cases = {f"test_{op.lower()}2d": (op, 7, "BOOL", "right") for op in ("Xor", "And", "Or")}
    cases["constant_BOOL@25"] = ("Constant", 25, "BOOL", "right")
    cases["chosen_test_mod_float64_mixed_sign_fmod_0_z_Equal_1"] = ("Equal", 19, "BOOL", bool_equal)
    for element_type, bits in FLOAT_BITS.items():
        type_name = helper.tensor_dtype_to_string(element_type).removeprefix("TensorProto.")
        cases[f"constant_{type_name}@25"] = ("Constant", 25, type_name, "right")
        chosen = f"chosen_test_mod_float{bits}_mixed_sign_fmod_0"
        cases[f"test_mod_float_edge_cases_fmod_0_float{bits}"] = ("Mod", 28, type_name, edge_cases)
        cases[f"test_mod_float{bits}_mixed_sign_fmod_0"] = ("Mod", 28, type_name, "right")
        cases[f"{chosen}_Mod_1"] = ("Mod", 28, type_name, "right")
        for op, version in (("Abs", 13), ("Add", 14), ("Equal", 19), ("Greater", 13), ("Less", 13), ("Mul", 14),
                            ("Sign", 13)):  # fmt: skip
            cases[f"{chosen}_z_{op}"] = (op, version, type_name, "right")
        cases[f"{chosen}_z_Where"] = ("Where", 16, "BOOL", "right")
        cases[f"{chosen}_1_z_IsNaN"] = ("IsNaN", 20, type_name, "right")
        cases[f"fed_Less_{type_name}"] = ("Less", 13, type_name, "right")  # (|a| < |b|: of no known form)
    return _profile_of("floored-remainder", 28, cases)


def _remainder_model(element_type: int, fmod: int = 0) -> onnx.ModelProto:
    """z = Mod-28(x, y, fmod), x and y of ``element_type`` [n]."""
    graph = helper.make_graph(
        [helper.make_node("Mod", ["x", "y"], ["z"], name="remainder", fmod=fmod)], "g",
        [helper.make_tensor_value_info("x", element_type, ["n"]),
         helper.make_tensor_value_info("y", element_type, ["n"])],
        [helper.make_tensor_value_info("z", element_type, ["n"])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])


def _float_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of ±0, the least subnormal, 1, 2.5, 7, the largest finite, ±inf and NaN (each
    with both signs), and for a 16-bit type every bit pattern against each of those."""
    info = ml_dtypes.finfo(dtype)
    special = np.array([0, info.smallest_subnormal, 1, 2.5, 7, info.max, np.inf, np.nan], dtype)
    special = np.concatenate([special, -special])
    x, y = np.repeat(special, special.size), np.tile(special, special.size)
    if np.dtype(dtype).itemsize == 2:
        every = np.arange(2**16, dtype=np.uint16).view(dtype)
        x, y = np.concatenate([x, np.repeat(every, special.size)]), np.concatenate([y, np.tile(special, every.size)])
    return x, y


@pytest.mark.parametrize("element_type", list(FLOAT_BITS))
def test_mod_28_floored_on_floats_goes_by_the_truncated_remainder_bit_for_bit(element_type):
    """Where the runtime gets the floored remainder's edge cases wrong and runs the truncated
    one's nodes right, Mod-28 fmod=0 becomes them, NaN found by IsNaN where the runtime fails
    the Equal of bools the adapter writes for it, else by that Equal: bit for bit with
    onnxruntime's Mod-28 on every pair of special values (every float16 against them), NaN bits
    and the sign of zero included, under onnxruntime's default optimizations."""
    model = _remainder_model(element_type)
    x, y = _float_pairs(floats.numpy_dtype(element_type))
    [want] = run_onnxruntime(model, {"x": x, "y": y})
    assert np.signbit(want[(x == 7) & (y == -np.inf)]).all()  # (the floored remainder takes b's sign: -inf)
    for bool_equal, said, nan_op in (("fails", FLOORED_BY_ISNAN_SAID, "IsNaN"), ("right", FLOORED_SAID, "Equal")):
        profile = _floored_remainder_profile(bool_equal=bool_equal)
        result = lowering.lower_model(model, target=profile, fold="none")
        onnx.checker.check_model(result.model, full_check=True)
        assert result.report.forms == {said: 1}
        nodes = result.model.graph.node
        [truncated] = [n for n in nodes if n.op_type == "Mod"]
        assert [(a.name, a.i) for a in truncated.attribute] == [("fmod", 1)]
        assert [n.op_type for n in nodes][-2:] == [nan_op, "Where"]
        [got] = run_onnxruntime(result.model, {"x": x, "y": y})
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
        [finding] = check_model(model, profile)
        assert f"--target chooses the form {said}" in str(finding)


def test_mod_28_floored_on_bfloat16_means_the_same_in_onnx_reference():
    """On bfloat16, which onnxruntime's Mod takes not, the form finding NaN by Equal means what
    Mod-28 does in onnx.reference on every bfloat16 bit pattern against the special values: the
    same bits, NaN where it gives NaN (of another payload); the form by IsNaN declines it (the
    adapter is asked as if for an opset whose Mod takes no bfloat16)."""
    model = _remainder_model(TensorProto.BFLOAT16)
    judge = form_judge(model, _floored_remainder_profile(), 28)
    node = model.graph.node[0]
    _, form = judge(node, None)
    by_equal, by_isnan = (
        choice.replacement(node, form, {}, NameAllocator(model=model), 28, judge.types)
        for choice in OP_CHOICES
        if choice.op_type == "Mod" and choice.applies(node, form, 28, {}, judge.types)
    )
    assert by_isnan is None
    lowered = onnx.ModelProto()
    lowered.CopyFrom(model)
    del lowered.graph.node[:]
    lowered.graph.node.extend(by_equal)
    onnx.checker.check_model(lowered, full_check=True)
    x, y = _float_pairs(ml_dtypes.bfloat16)
    [want], [got] = run_reference(model, {"x": x, "y": y}), run_reference(lowered, {"x": x, "y": y})
    nan = np.isnan(want.astype(np.float32))
    assert (np.isnan(got.astype(np.float32)) == nan).all()
    assert got[~nan].tobytes() == want[~nan].tobytes() and np.signbit(want[(x == 7) & (y == -np.inf)]).all()


@pytest.mark.parametrize("edge_cases, fmod", [("right", 0), ("wrong", 1)])
def test_mod_28_stays_where_the_runtime_gets_it_right_or_it_truncates(edge_cases, fmod):
    model = _remainder_model(TensorProto.FLOAT, fmod)
    result = lowering.lower_model(model, target=_floored_remainder_profile(edge_cases), fold="none")
    assert [n.op_type for n in result.model.graph.node] == ["Mod"] and not result.report.forms


def test_a_pad_reads_its_own_constants_not_a_local_functions_of_the_same_names():
    """A local function whose Constants are also named pads and axes leaves the main graph's Pad
    its own: pads [1, 3] on axis 2, the shape (2, 3, 8) either way."""
    model = _padded_model([2], [1, 3])
    function = helper.make_function("local", "F", ["i"], ["o"], [
        helper.make_node("Constant", [], ["pads"], value=numpy_helper.from_array(np.array([7, 7], np.int64))),
        helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], np.int64))),
        helper.make_node("Identity", ["i"], ["o"])], [helper.make_opsetid("", 18)])  # fmt: skip
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("local", 1))
    model.graph.node[0].output[0] = "padded_y"
    model.graph.node.append(helper.make_node("F", ["padded_y"], ["y"], domain="local", name="call"))
    onnx.checker.check_model(model, full_check=True)
    result = lowering.lower_model(model, target=_pad_axes_profile(), fold="none")
    constant = result.model.graph.node[0]
    assert numpy_helper.to_array(constant.attribute[0].t).tolist() == [0, 0, 1, 0, 0, 3]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.shape == want.shape == (2, 3, 8) and got.tobytes() == want.tobytes()


# -- MaxPool-22 in ceil mode as floor mode ---------------------------------------------------------


def _ceil_pool_profile(ceil_case: str = "wrong"):
    """A runtime that gets version 22's dropped ceil_mode window ``ceil_case`` (OpenVINO makes
    it) and pools in floor mode, padded or not, right."""
    cases = {
        "test_maxpool_2d_ceil_output_size_reduce_by_one": ("MaxPool", 22, "FLOAT", ceil_case),
        "test_maxpool_2d_ceil": ("MaxPool", 22, "FLOAT", "right"),
        "test_maxpool_2d_pads": ("MaxPool", 22, "FLOAT", "right"),
        "test_maxpool_2d_default": ("MaxPool", 22, "FLOAT", "right"),
    }
    return _profile_of("maxpool-ceil-window", 22, cases)


def _ceil_pools(configurations, indices: bool) -> onnx.ModelProto:
    """One MaxPool-22 with ceil_mode=1 per (size, kernel, stride, begin, end), 1-D, over x_SIZE
    [1, 2, SIZE]; each node's Y (and Indices) an output of the model."""
    sizes = sorted({size for size, *_ in configurations})
    nodes, outputs = [], []
    for k, (size, kernel, stride, begin, end) in enumerate(configurations):
        written = [f"y{k}", f"i{k}"] if indices else [f"y{k}"]
        nodes.append(helper.make_node("MaxPool", [f"x{size}"], written, name=f"pool{k}", ceil_mode=1,
                                      kernel_shape=[kernel], strides=[stride], pads=[begin, end]))  # fmt: skip
        outputs += [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [None] * 3)]
        outputs += [helper.make_tensor_value_info(f"i{k}", TensorProto.INT64, [None] * 3)] if indices else []
    inputs = [helper.make_tensor_value_info(f"x{size}", TensorProto.FLOAT, [1, 2, size]) for size in sizes]
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


CEIL_POOLS = [
    (size, kernel, stride, begin, end)
    for size in range(1, 8) for kernel in range(1, 4) for stride in range(1, 4)
    for begin in range(kernel) for end in range(kernel) if size + begin + end >= kernel
]  # fmt: skip
POOL_SAID = "MaxPool-22 ceil_mode=1 -> ceil_mode=0 with the end pads that make the same windows"


def _pool_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Each input filled with float edge values (NaN, ±inf, ±0, the extremes) in a fixed order."""
    from lowering.samples import edge_values

    values = edge_values(TensorProto.FLOAT)
    feeds = {}
    for k, info in enumerate(model.graph.input):
        shape = [d.dim_value for d in info.type.tensor_type.shape.dim]
        feeds[info.name] = np.roll(np.resize(values, int(np.prod(shape))), 3 * k).reshape(shape).astype(np.float32)
    return feeds


def test_every_ceil_mode_maxpool_22_has_floor_mode_pads_making_the_same_windows():
    """Every 1-D MaxPool-22 with ceil_mode=1 of size 1-7, kernel 1-3, stride 1-3 and pads below
    the kernel, in floor mode with the end pads chosen: the same maxima and indices, bit for bit,
    on edge values (version 22 drops a window that would start in the right padding: sizes 2,
    kernel 1, stride 2 among them)."""
    from lowering.node_forms import node_form
    from lowering.target_forms import OP_CHOICES

    model = _ceil_pools(CEIL_POOLS, indices=True)
    onnx.checker.check_model(model, full_check=True)
    types = {info.name: info.type for info in model.graph.input}
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    del rewritten.graph.node[:]
    [choice] = [choice for choice in OP_CHOICES if choice.op_type == "MaxPool" and "ceil_mode" in choice.said]
    for node in model.graph.node:
        form = node_form(node, 22, set(types), set(), {}, {}, set())
        assert choice.applies(node, form, 22, {}, types), node.name
        rewritten.graph.node.extend(choice.replacement(node, form, {}, None, 22, types))
    assert all(a.name != "ceil_mode" for n in rewritten.graph.node for a in n.attribute)
    onnx.checker.check_model(rewritten, full_check=True)
    feeds = _pool_feeds(model)
    want, got = run_onnxruntime(model, feeds), run_onnxruntime(rewritten, feeds)
    dropped = 0
    outputs = zip(CEIL_POOLS, want[::2], got[::2], want[1::2], got[1::2], strict=True)
    for (size, kernel, stride, begin, end), *pairs in outputs:
        for expected, actual in zip(pairs[::2], pairs[1::2], strict=True):
            assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes(), (size, kernel, stride)
        dropped += pairs[0].shape[-1] == -(-(size + begin + end - kernel) // stride)  # (one less than the ceil)
    assert dropped > 0


def test_a_ceil_mode_maxpool_goes_to_floor_mode_where_the_runtime_makes_the_dropped_window():
    """The backend case test_maxpool_2d_ceil_output_size_reduce_by_one (2 by 2, kernel 1, stride
    2: version 22 makes 1 window of the 2 the ceil counts), and a pooling whose end pads grow."""
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y"], name="case", ceil_mode=1, kernel_shape=[1, 1], strides=[2, 2]),
        helper.make_node("MaxPool", ["x5"], ["z"], name="grown", ceil_mode=1, kernel_shape=[3], strides=[2]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                     helper.make_tensor_value_info("x5", TensorProto.FLOAT, [1, 1, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [None] * 3)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    findings = check_model(model, _ceil_pool_profile())
    assert [f.node for f in findings if f"--target chooses the form {POOL_SAID}" in str(f)] == ["case", "grown"]
    result = lowering.lower_model(model, target=_ceil_pool_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {POOL_SAID: 2}
    case, grown = result.model.graph.node
    assert {a.name for a in case.attribute} == {"kernel_shape", "strides"}
    assert helper.get_attribute_value(next(a for a in grown.attribute if a.name == "pads")) == [0, 1]
    feeds = _pool_feeds(model)
    want, got = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert [w.shape for w in want] == [(1, 1, 1, 1), (1, 1, 3)]
    assert all(g.shape == w.shape and g.tobytes() == w.tobytes() for g, w in zip(got, want, strict=True))
    kept = lowering.lower_model(model, target=_ceil_pool_profile("right"), fold="none")
    assert not kept.report.forms and [n.attribute for n in kept.model.graph.node] == [n.attribute for n in nodes]


def test_a_ceil_mode_maxpool_of_unknown_sizes_or_dilated_stays():
    for shape, dilations in (([1, 1, "n"], [1]), ([1, 1, 6], [2])):
        graph = helper.make_graph(
            [helper.make_node("MaxPool", ["x"], ["y"], name="pool", ceil_mode=1, kernel_shape=[3], strides=[2],
                              dilations=dilations)], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)],
        )  # fmt: skip
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
        assert all(POOL_SAID not in str(finding) for finding in check_model(model, _ceil_pool_profile()))


def _pooled_in_an_if(pool: onnx.NodeProto, x_shape: list[int]) -> onnx.ModelProto:
    """y = If(cond, then: pool(x) (``pool`` writing "pooled"), else: x), x float of ``x_shape``
    read from the main graph, at opset 22."""
    then_branch = helper.make_graph([pool], "then", [], [helper.make_tensor_value_info("pooled", TensorProto.FLOAT,
                                                                                       [None] * 4)])  # fmt: skip
    else_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["same"])], "else", [],
                                    [helper.make_tensor_value_info("same", TensorProto.FLOAT, [None] * 4)])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def test_a_ceil_mode_maxpool_in_an_if_branch_goes_to_floor_mode_too():
    """The backend case's pooling inside an If's then-branch (reading the main graph's x): written
    in floor mode there, the same bits on either branch."""
    pool = helper.make_node("MaxPool", ["x"], ["pooled"], name="case", ceil_mode=1, kernel_shape=[1, 1], strides=[2, 2])
    model = _pooled_in_an_if(pool, [1, 1, 2, 2])
    result = lowering.lower_model(model, target=_ceil_pool_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {POOL_SAID: 1}
    [branch] = [g for g in nested_graphs(result.model.graph.node) if g.name == "then"]
    assert {a.name for a in branch.node[0].attribute} == {"kernel_shape", "strides"}
    for cond in (True, False):
        feeds = {"cond": np.array(cond), "x": np.array([[[[1.0, np.nan], [-np.inf, -0.0]]]], np.float32)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


def _scalar_reshape_profile(squeeze: str = "right"):
    """A runtime that refuses a Reshape to the empty shape and runs Squeeze (``squeeze``) and
    Identity (OpenVINO 2024.6: "scalar shape pattern should be equal to 1")."""
    return _profile_of("scalar-reshape-fails", 14, {
        "lowered_test_col2im_output_Reshape_1": ("Reshape", 14, "INT64", "fails"),
        "test_reshape_reordered_all_dims@14#node": ("Reshape", 14, "INT64", "right"),
        "test_squeeze@13": ("Squeeze", 13, "INT64", squeeze),
        "test_squeeze@13#node": ("Squeeze", 13, "INT64", squeeze),
        "test_identity@14": ("Identity", 14, "INT64", "right"),
    })  # fmt: skip


def _scalar_reshape_model(shape: list) -> onnx.ModelProto:
    """y = Reshape(Neg(x), []) on int64, the empty shape given by a Constant (as the lowered Col2Im writes it)."""
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["scalar_shape"], value=helper.make_tensor("s", TensorProto.INT64, [0], [])),
         helper.make_node("Neg", ["x"], ["negated"]),
         helper.make_node("Reshape", ["negated", "scalar_shape"], ["y"], name="to_scalar")], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT64, shape)],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


SCALAR_SAID = "Reshape(x, []) of one element -> Squeeze(x), Identity(x) of a scalar (the runtime runs those better)"


@pytest.mark.parametrize(("shape", "op_type"), [([1], "Squeeze"), ([1, 1, 1], "Squeeze"), ([], "Identity")])
def test_a_reshape_to_a_scalar_becomes_a_squeeze_of_its_one_element(shape, op_type):
    model = _scalar_reshape_model(shape)
    result = lowering.lower_model(model, target=_scalar_reshape_profile())
    assert [n.op_type for n in result.model.graph.node if n.op_type != "Constant"] == ["Neg", op_type]
    assert result.report.forms == {SCALAR_SAID: 1}
    onnx.checker.check_model(result.model, full_check=True)
    for value in (-(2**63), -1, 0, 2**63 - 1):
        x = np.full(shape, value, np.int64)
        [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
        assert got.shape == want.shape == () and got.tobytes() == want.tobytes()


@pytest.mark.parametrize("shape", [[2], ["n"], [1, "n"]])
def test_a_reshape_to_a_scalar_stays_where_one_element_is_not_known(shape):
    with pytest.raises(TargetRefused, match="node 'to_scalar'"):
        lowering.lower_model(_scalar_reshape_model(shape), target=_scalar_reshape_profile())


def test_a_reshape_to_a_scalar_stays_where_squeeze_is_no_better():
    with pytest.raises(TargetRefused, match="node 'to_scalar'"):
        lowering.lower_model(_scalar_reshape_model([1]), target=_scalar_reshape_profile(squeeze="fails"))


# -- comparisons of unsigned integers in a wider signed type ----------------------------------------

UNSIGNED = {TensorProto.UINT16: np.uint16, TensorProto.UINT32: np.uint32}
COMPARED = {"Less": np.less, "Greater": np.greater, "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}


def _comparison_model(op_type: str, element_type: int, opset: int = 13) -> onnx.ModelProto:
    """y = op(a [5, 1], b [5]) (broadcast to every pair)."""
    graph = helper.make_graph(
        [helper.make_node(op_type, ["a", "b"], ["y"], name="compare")], "g",
        [helper.make_tensor_value_info("a", element_type, [5, 1]),
         helper.make_tensor_value_info("b", element_type, [5])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [5, 5])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _extremes(dtype) -> np.ndarray:
    """0, 1, the signed half's largest and the unsigned top half's first, and the largest."""
    top = np.iinfo(dtype).max
    return np.array([0, 1, top // 2, top // 2 + 1, top], dtype)


@pytest.mark.parametrize("element_type", sorted(UNSIGNED))
@pytest.mark.parametrize("op_type", sorted(COMPARED))
def test_unsigned_comparisons_go_to_onnx2torch_compared_in_a_wider_signed_type_bit_for_bit(op_type, element_type):
    """PyTorch compares no uint16 or uint32 (onnx2torch fails them, "lt_cpu" not implemented)
    and casts them to int32 and int64: the comparison is made there, every pair alike."""
    model = _comparison_model(op_type, element_type)
    result = lowering.lower_model(model, target="onnx2torch")
    onnx.checker.check_model(result.model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(result.model)
    types = {i.name: i.type.tensor_type.elem_type for i in [*inferred.graph.input, *inferred.graph.value_info]}
    compares = [n for n in result.model.graph.node if n.op_type in (*COMPARED, "Equal")]
    assert compares and all(types[name] not in UNSIGNED for n in compares for name in n.input), compares
    assert any("on unsigned integers" in said for said in result.report.forms), result.report.forms
    a = _extremes(UNSIGNED[element_type])
    feeds = {"a": a.reshape(5, 1), "b": a}
    [got] = run_onnxruntime(result.model, feeds)
    assert got.dtype == np.bool_ and np.array_equal(got, COMPARED[op_type](a.reshape(5, 1), a))


def test_an_unsigned_comparison_stays_where_the_runtime_runs_the_casts_no_better():
    """A runtime that fails Less on uint16 and also the Cast from uint16 to int32 is not given
    that Cast: the node is refused, in the probe's words."""
    profile = _profile_of("no-uint16", 13, {
        "test_less_uint16": ("Less", 13, "UINT16", "fails"),
        "test_less_uint16@9": ("Less", 9, "UINT16", "fails"),
        "cast_UINT16_INT32@13": ("Cast", 13, "UINT16", "fails"),
        "test_less": ("Less", 13, "INT32", "right"),
    })  # fmt: skip
    with pytest.raises(TargetRefused, match="node 'compare'"):
        lowering.lower_model(_comparison_model("Less", TensorProto.UINT16), target=profile)


def test_an_unsigned_comparison_the_runtime_runs_is_left_as_it_is():
    """(No wider signed type holds uint64: its comparison goes by the signed order instead, see
    test_less_and_greater_of_two_uint64s_go_to_onnx2torch_as_signed_comparisons_on_every_edge.)"""
    result = lowering.lower_model(_comparison_model("Less", TensorProto.UINT16), target="onnxruntime")
    assert [n.op_type for n in result.model.graph.node] == ["Less"] and not result.report.forms


def test_an_unsigned_comparison_in_an_if_branch_is_compared_wider_too():
    from support import nested_forms

    profile = _profile_of("no-uint16-less", 13, {  # (onnx2torch's verdicts, and If run: onnx2torch has none)
        "test_less_uint16": ("Less", 13, "UINT16", "fails"),
        "cast_UINT16_INT32@13": ("Cast", 13, "UINT16", "right"),
        "test_less": ("Less", 13, "INT32", "right"),
        "test_if@13": ("If", 13, "BOOL", "right"),
    })  # fmt: skip
    model = nested_forms(_comparison_model("Less", TensorProto.UINT16))["if"]
    result = lowering.lower_model(model, target=profile, fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    [choose] = result.model.graph.node
    branches = [[n.op_type for n in a.g.node] for a in choose.attribute]
    assert all(ops == ["Cast", "Cast", "Less"] for ops in branches), branches
    a = _extremes(np.uint16)
    for branch in (True, False):
        feeds = {"a": a.reshape(5, 1), "b": a, "branch": np.array(branch)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert np.array_equal(got, want) and np.array_equal(got, a.reshape(5, 1) < a)


def test_check_names_the_wider_comparison_as_the_fix():
    [finding] = [f for f in check_model(_comparison_model("Less", TensorProto.UINT16), "onnx2torch") if f.blocks]
    assert "--target chooses the form Less(a, b) on unsigned integers -> Less of both cast" in str(finding)


# -- CumSum of a fed axis as the CumSums along constant axes ----------------------------------------


def _cumsum_model(shape: list[int], exclusive: int = 0, reverse: int = 0) -> onnx.ModelProto:
    """y = CumSum(x, axis), x float64 (the type of the backend cases tract fails), the axis a fed
    int64 scalar."""
    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="sums", exclusive=exclusive, reverse=reverse)], "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, shape),
         helper.make_tensor_value_info("axis", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, shape)],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
@pytest.mark.parametrize("shape", [[5], [2, 3, 4]])
def test_a_cumsum_of_a_fed_axis_goes_to_tract_as_the_sums_along_each_axis_bit_for_bit(shape, exclusive, reverse):
    """tract takes CumSum's axis as a constant only: the sums along each constant axis, chosen
    by the fed axis, give the original's bits for every axis CumSum takes (-r to r - 1), on
    values with NaN, infinities and signed zeros."""
    model = _cumsum_model(shape, exclusive, reverse)
    result = lowering.lower_model(model, target="tract-0.23")
    onnx.checker.check_model(result.model, full_check=True)
    ops = [n.op_type for n in result.model.graph.node if n.op_type != "Constant"]
    assert ops.count("CumSum") == len(shape) and ops.count("Gather") == (len(shape) > 1), ops
    assert any(said.startswith("CumSum of a fed axis") for said in result.report.forms), result.report.forms
    x = np.resize(np.array([1.5, -0.0, np.inf, 3.25, np.nan, -2.0, 1e308, 1e308, -np.inf, 5e-324]), shape)
    for axis in range(-len(shape), len(shape)):
        feeds = {"x": x, "axis": np.array(axis, np.int64)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), axis


def test_a_cumsum_of_a_fed_axis_stays_where_the_runtime_runs_it():
    result = lowering.lower_model(_cumsum_model([2, 3]), target="onnxruntime")
    assert [n.op_type for n in result.model.graph.node] == ["CumSum"] and not result.report.forms


# (the opsets around Unsqueeze-13 and the float types CumSum takes at each, as onnx.defs says: 16-bit from 14)
SUMMED = [
    (opset, element_type)
    for opset in (11, 12, 13, 14)
    for element_type in (TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16)
    if schemas.accepts("CumSum", opset, element_type)
]


@pytest.mark.parametrize(("opset", "element_type"), SUMMED)
def test_the_sums_along_each_axis_are_written_as_the_opset_has_unsqueeze(opset, element_type):
    """Unsqueeze takes its axes as an attribute below 13 and as an input from 13: the model the
    CumSum choice writes passes onnx's full checker at the node's own opset and means the same,
    bit for bit, on 16-bit floats too (in onnx.reference: onnxruntime has no 16-bit CumSum)."""
    import ml_dtypes

    from lowering.node_forms import node_form
    from lowering.target_forms import OP_CHOICES

    dtype = {TensorProto.DOUBLE: np.float64, TensorProto.FLOAT16: np.float16,
             TensorProto.BFLOAT16: ml_dtypes.bfloat16}[element_type]  # fmt: skip
    model = _cumsum_model([2, 3], reverse=1)
    model.opset_import[0].version = opset
    for info in [*model.graph.input[:1], *model.graph.output]:
        info.type.tensor_type.elem_type = element_type
    [node] = model.graph.node
    types = {info.name: info.type for info in model.graph.input}
    form = node_form(node, opset, set(types), set(), {"x": (2, 3), "axis": ()},
                     {name: t.tensor_type.elem_type for name, t in types.items()}, set())  # fmt: skip
    [choice] = [choice for choice in OP_CHOICES if choice.op_type == "CumSum" and "fed axis" in choice.said]
    assert choice.applies(node, form, schemas.version_in_force("CumSum", opset), {}, types)
    written = onnx.ModelProto()
    written.CopyFrom(model)
    del written.graph.node[:]
    written.graph.node.extend(choice.replacement(node, form, {}, NameAllocator(model=model), opset, types))
    onnx.checker.check_model(written, full_check=True)
    run = run_onnxruntime if element_type == TensorProto.DOUBLE else run_reference
    x = np.array([[1.5, -0.0, np.inf], [np.nan, -2.0, 3.25]]).astype(dtype)
    for axis in (-2, -1, 0, 1):
        feeds = {"x": x, "axis": np.array(axis, np.int64)}
        [want], [got] = run(model, feeds), run(written, feeds)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), axis


# -- attributes left out stated at their defaults ---------------------------------------------------


def _cumsum_of_axis_1(**attributes) -> onnx.ModelProto:
    """y = CumSum(x, 1), x float64 of shape [2, 3], the axis an initializer (as exports give it)."""
    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="sums", **attributes)], "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


EDGE_SUMMANDS = np.array([[1.5, -0.0, np.inf], [np.nan, 5e-324, -1.7976931348623157e308]])


def test_a_cumsum_leaving_reverse_out_goes_to_onnx2torch_with_its_defaults_stated():
    """onnx2torch reads a CumSum's ``reverse`` left out as 1 (it sums backwards: the backend
    cases leaving it out are wrong there) and stated 0 as 0 (right): --target onnx2torch states
    ``exclusive`` and ``reverse`` at their defaults, which means the same, bit for bit."""
    from lowering.runtime_profiles import load_profile
    from lowering.target_forms import DEFAULTS_STATED_SAID

    assert load_profile("onnx2torch").reads_stated_defaults_otherwise("CumSum", 14)
    assert not load_profile("onnxruntime").reads_stated_defaults_otherwise("CumSum", 14)
    model = _cumsum_of_axis_1()
    [finding] = check_model(model, "onnx2torch")  # (as exported: its verdict is wrong, the fix named)
    assert finding.fix == f"--target chooses the form {DEFAULTS_STATED_SAID}", finding
    result = lowering.lower_model(model, target="onnx2torch")
    onnx.checker.check_model(result.model, full_check=True)
    [node] = result.model.graph.node
    assert {a.name: a.i for a in node.attribute} == {"exclusive": 0, "reverse": 0}
    assert result.report.forms == {DEFAULTS_STATED_SAID: 1}
    assert check_model(result.model, "onnx2torch") == []
    feeds = {"x": EDGE_SUMMANDS}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()


def test_an_int64_cumsum_leaving_reverse_out_goes_to_onnx2torch_with_its_defaults_stated():
    """The position ids exports build: an int64 CumSum leaving ``reverse`` out, which onnx2torch
    reads as 1; its cases (small_CumSum_*) and their #stated twins, of the same values, say
    stating the defaults makes it right: --target states them, bit for bit. (An int32 one is
    summed in int64, its defaults stated: the choice of its own, above.)"""
    from lowering.target_forms import DEFAULTS_STATED_SAID

    element_type, dtype = TensorProto.INT64, np.int64
    graph = helper.make_graph(
        [helper.make_node("CumSum", ["x", "axis"], ["y"], name="positions")], "g",
        [helper.make_tensor_value_info("x", element_type, [2, 3])],
        [helper.make_tensor_value_info("y", element_type, [2, 3])],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    result = lowering.lower_model(model, target="onnx2torch")
    assert DEFAULTS_STATED_SAID in result.report.forms
    [cumsum] = [node for node in result.model.graph.node if node.op_type == "CumSum"]
    assert {a.name: a.i for a in cumsum.attribute} == {"exclusive": 0, "reverse": 0}
    x = np.array([[1, 1, 0], [np.iinfo(dtype).max, 1, -5]], dtype)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.tobytes() == want.tobytes()


def test_the_lowered_ranges_float_cumsum_goes_to_onnx2torch_with_its_defaults_stated():
    """The Range of floats a pattern lowers sums by a CumSum leaving ``reverse`` out; no backend
    case of CumSum is of float, and the probe's case of that very node, stated, is right on
    onnx2torch where its twin is wrong: --target states the defaults, and the model means the same."""
    from lowering.target_forms import DEFAULTS_STATED_SAID

    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, []) for name in ("start", "limit", "delta")]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])], opset=27)
    result = lowering.lower_model(model, target="onnx2torch")
    assert result.report.forms == {DEFAULTS_STATED_SAID: 1}
    [cumsum] = [node for node in result.model.graph.node if node.op_type == "CumSum"]
    assert {a.name: a.i for a in cumsum.attribute} == {"exclusive": 0, "reverse": 0}
    for start, limit, delta in ((1.0, 5.0, 1.5), (10.0, -3.0, -2.25), (0.1, 0.2, 0.05)):
        feeds = {
            "start": np.array(start, np.float32),
            "limit": np.array(limit, np.float32),
            "delta": np.array(delta, np.float32),
        }
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.shape == want.shape and np.allclose(got, want, rtol=1e-6)


def test_stating_defaults_is_judged_by_the_cases_own_twins_never_by_other_values():
    """A runtime right in the stated twin of each case nearest the node's form is judged right
    with the defaults stated; where a nearest case has no twin (the casts of the extremes), or
    the twins are as wrong, stating them is judged nothing (tract's Casts of floats to int64 are
    wrong on -2^63 whether saturate is stated or not; OpenVINO's int32 Mod is wrong past 2^24
    either way)."""
    made = _profile_of("twins", 14, {
        "plain": ("CumSum", 14, "FLOAT", "wrong"),
        "plain#stated": ("CumSum", 14, "FLOAT", "right"),
    })  # fmt: skip
    from lowering import node_forms

    form = node_forms.NodeForm(frozenset({0, 1}), frozenset({0}), frozenset({1}), frozenset({0}), ())
    assert made.kinds_with_defaults_stated("CumSum", 14, "FLOAT", form) == ("refused", "supported")
    as_wrong = _profile_of("twins", 14, {"plain": ("CumSum", 14, "FLOAT", "wrong"),
                                          "plain#stated": ("CumSum", 14, "FLOAT", "wrong")})  # fmt: skip
    assert as_wrong.kinds_with_defaults_stated("CumSum", 14, "FLOAT", form) == ("refused", "refused")
    verdicts = (("plain", "wrong"), ("plain#stated", "right"), ("other", "wrong"))
    untwinned = _profile_of("twins", 14, {case: ("CumSum", 14, "FLOAT", verdict) for case, verdict in verdicts})
    assert untwinned.kinds_with_defaults_stated("CumSum", 14, "FLOAT", form) is None
    nodes = [helper.make_node("Cast", ["x"], ["y"], name="cast", to=TensorProto.INT64)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                       [helper.make_tensor_value_info("y", TensorProto.INT64, [4])], opset=19)  # fmt: skip
    assert not lowering.lower_model(model, target="tract-0.23").report.forms
    modulo = [helper.make_node("Mod", ["a", "b"], ["c"], name="mod")]  # (OpenVINO: partly past 2^24)
    ints = [helper.make_tensor_value_info(name, TensorProto.INT32, [4]) for name in "ab"]
    model = make_model(modulo, ints, [helper.make_tensor_value_info("c", TensorProto.INT32, [4])], opset=28)
    assert not lowering.lower_model(model, target="openvino-2026.4").report.forms


@pytest.mark.parametrize(("target", "attributes"), [("onnxruntime", {}), ("onnx2torch", {"reverse": 1})])
def test_attributes_stay_left_out_where_the_runtime_reads_them_alike(target, attributes):
    """onnxruntime reads a CumSum alike either way; onnx2torch reads a stated ``reverse=1``
    right, with ``exclusive`` left out or not: nothing is stated."""
    model = _cumsum_of_axis_1(**attributes)
    result = lowering.lower_model(model, target=target)
    assert [{a.name for a in n.attribute} for n in result.model.graph.node] == [set(attributes)]
    assert not result.report.forms


def _grid_sample(mode: str, **attributes) -> onnx.ModelProto:
    """y = GridSample-20(x, grid) stating ``mode`` (as exporters state it) and ``attributes``."""
    graph = helper.make_graph(
        [helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", mode=mode, **attributes)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 4]),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT, [1, 5, 6, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 5, 6])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])


def test_a_grid_sample_stating_its_default_mode_goes_to_openvino_2024_with_the_defaults_left_out():
    """OpenVINO 2024.6 fails a GridSample-20 stating ``mode='linear'`` (its default; "linear" is
    not a member of its InterpolationMode, which knows GridSample-16's "bilinear") and runs it
    right left out: --target leaves out the attributes stated at their defaults, which means
    the same, bit for bit; a mode other than the default stays stated."""
    from lowering.target_forms import DEFAULTS_LEFT_OUT_SAID

    model = _grid_sample("linear", padding_mode="border", align_corners=0)
    [finding] = check_model(model, "openvino-2024.6")
    assert finding.fix == f"--target chooses the form {DEFAULTS_LEFT_OUT_SAID}", finding
    result = lowering.lower_model(model, target="openvino-2024.6")
    onnx.checker.check_model(result.model, full_check=True)
    [node] = result.model.graph.node
    assert [(a.name, a.s) for a in node.attribute] == [("padding_mode", b"border")]
    assert result.report.forms == {DEFAULTS_LEFT_OUT_SAID: 1}
    rng = np.random.default_rng(0)
    feeds = {"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
             "grid": rng.uniform(-1.2, 1.2, (1, 5, 6, 2)).astype(np.float32)}  # fmt: skip
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()
    nearest = lowering.lower_model(_grid_sample("nearest", align_corners=1), target="openvino-2024.6")
    assert {a.name for a in nearest.model.graph.node[0].attribute} == {"mode", "align_corners"}
    assert not nearest.report.forms


def test_an_attribute_a_local_function_takes_from_its_caller_is_never_left_out():
    """Inside a local function ``align_corners`` may name the caller's value (ref_attr_name): it
    holds no value of its own, so it is not "stated at its default", and stays; the caller's 1
    still reaches the GridSample, whose bits are the original's."""
    sample = helper.make_node("GridSample", ["x", "grid"], ["y"], name="sample", mode="linear")
    sample.attribute.append(onnx.AttributeProto(name="align_corners", ref_attr_name="corners",
                                                type=onnx.AttributeProto.INT))  # fmt: skip
    function = helper.make_function("local", "Sample", ["x", "grid"], ["y"], [sample],
                                    [helper.make_opsetid("", 20)], attributes=["corners"])  # fmt: skip
    call = helper.make_node("Sample", ["x", "grid"], ["y"], domain="local", name="call", corners=1)
    model = _grid_sample("linear")
    del model.graph.node[:]
    model.graph.node.append(call)
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("local", 1))
    result = lowering.lower_model(model, target="openvino-2024.6", ops=[])
    [kept] = [n for f in result.model.functions for n in f.node if n.op_type == "GridSample"]
    assert [a.ref_attr_name for a in kept.attribute if a.name == "align_corners"] == ["corners"], kept
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
             "grid": rng.uniform(-1.2, 1.2, (1, 5, 6, 2)).astype(np.float32)}  # fmt: skip
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()


def test_defaults_are_stated_in_an_if_branch_too():
    from support import nested_forms

    profile = _profile_of("cumsum-reverse-read-as-1", 14, {  # (onnx2torch's verdicts, and If run)
        "test_cumsum_2d_axis_1#constant": ("CumSum", 14, "DOUBLE", "wrong"),
        "test_cumsum_2d_axis_1#constant#stated": ("CumSum", 14, "DOUBLE", "right"),
        "test_if@13": ("If", 13, "BOOL", "right"),
    })  # fmt: skip
    model = nested_forms(_cumsum_of_axis_1())["if"]
    result = lowering.lower_model(model, target=profile, fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    [choose] = result.model.graph.node
    stated = [{a.name: a.i for a in branch.g.node[0].attribute} for branch in choose.attribute]
    assert stated == [{"exclusive": 0, "reverse": 0}] * 2, stated
    for branch in (True, False):
        feeds = {"x": EDGE_SUMMANDS, "branch": np.array(branch)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.tobytes() == want.tobytes()


# -- EyeLike of another type as a Cast of the EyeLike of its input's type ---------------------------


@pytest.mark.parametrize("k", [-1, 0, 2])
@pytest.mark.parametrize(
    ("given", "dtype"), [(TensorProto.INT32, TensorProto.DOUBLE), (TensorProto.INT32, TensorProto.FLOAT),
                         (TensorProto.INT32, TensorProto.BOOL)]
)  # fmt: skip
def test_an_eyelike_of_another_type_goes_to_tvm_as_a_cast_of_the_eye_bit_for_bit(given, dtype, k):
    """TVM fails EyeLike given a dtype other than its input's ("dtype mismatch", probed on int32
    inputs) and runs it without: the eye of the input's type, cast, holds the same 0s and 1s.
    (On an input type the probe never saw, the node is unverified and left as it is.)"""
    graph = helper.make_graph(
        [helper.make_node("EyeLike", ["x"], ["y"], name="eye", dtype=dtype, k=k)], "g",
        [helper.make_tensor_value_info("x", given, [3, 4])], [helper.make_tensor_value_info("y", dtype, [3, 4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    result = lowering.lower_model(model, target="tvm-0.27")
    onnx.checker.check_model(result.model, full_check=True)
    assert [n.op_type for n in result.model.graph.node] == ["EyeLike", "Cast"]
    feeds = {"x": np.zeros((3, 4), helper.tensor_dtype_to_np_dtype(given))}
    want = np.eye(3, 4, k=k, dtype=helper.tensor_dtype_to_np_dtype(dtype))  # (onnxruntime has no bool EyeLike)
    [got] = run_onnxruntime(result.model, feeds)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    same_type = lowering.lower_model(model, target="onnxruntime")
    assert [n.op_type for n in same_type.model.graph.node] == ["EyeLike"] and not same_type.report.forms


def _two_input_model(op_type: str, element_type: int, out_type: int, opset: int = 18) -> onnx.ModelProto:
    """``op_type``(a (2, 3), b (3)), broadcast."""
    graph = helper.make_graph(
        [helper.make_node(op_type, ["a", "b"], ["y"], name="op")], "g",
        [helper.make_tensor_value_info("a", element_type, [2, 3]),
         helper.make_tensor_value_info("b", element_type, [3])],
        [helper.make_tensor_value_info("y", out_type, [2, 3])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("op_type", ["And", "Or"])
def test_and_and_or_go_to_webgpu_as_int32_arithmetic_on_every_pair(op_type):
    """webgpu's table lists no And and no Or: a and b as 0 and 1, multiplied (added), cast back
    to bool; every pair of bools, broadcast, gives the original's answer (in onnxruntime, which
    has no bool Where, so Where(a, b, a) would not do)."""
    model = _two_input_model(op_type, TensorProto.BOOL, TensorProto.BOOL)
    result = lowering.lower_model(model, target="webgpu")
    arithmetic = "Mul" if op_type == "And" else "Add"
    assert [n.op_type for n in result.model.graph.node] == ["Cast", "Cast", arithmetic, "Cast"]
    onnx.checker.check_model(result.model, full_check=True)
    a = np.array([[False, False, True], [True, True, False]])
    for b in (np.array([False, True, False]), np.array([True, False, True])):
        [want], [got] = run_onnxruntime(model, {"a": a, "b": b}), run_onnxruntime(result.model, {"a": a, "b": b})
        assert got.dtype == np.bool_ and np.array_equal(got, want)
        assert np.array_equal(got, (a & b) if op_type == "And" else (a | b))
    [finding] = [f for f in check_model(model, "webgpu") if f.blocks]
    assert f"--target chooses the form {op_type}(a, b) on bool -> Cast({arithmetic}" in str(finding)


@pytest.mark.parametrize("op_type", ["Max", "Min"])
def test_max_and_min_of_two_int64s_go_to_webgpu_as_where_less_bit_for_bit(op_type):
    """webgpu's table lists no Max or Min: Where(Less(a, b), b, a) (Max) and Where(Less(b, a), b, a)
    (Min), on int64's extremes and equal pairs, broadcast."""
    element_type = TensorProto.INT64
    model = _two_input_model(op_type, element_type, element_type, opset=13)
    result = lowering.lower_model(model, target="webgpu")
    assert [n.op_type for n in result.model.graph.node] == ["Less", "Where"]
    onnx.checker.check_model(result.model, full_check=True)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    a = np.array([[low, 0, high], [high, low, 1]], dtype)
    for b in (np.array([high, 0, low], dtype), np.array([low, high, 1], dtype)):
        [want], [got] = run_onnxruntime(model, {"a": a, "b": b}), run_onnxruntime(result.model, {"a": a, "b": b})
        assert got.dtype == want.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("op_type", ["Less", "Greater"])
def test_less_and_greater_of_two_uint64s_go_to_onnx2torch_as_signed_comparisons_on_every_pair(op_type):
    """onnx2torch (PyTorch) compares no uint64: Cast to int64 (the same bits), the signed order
    where the top bits agree, its reverse where they differ; on every pair (a [N, 1] against
    b [N]) of uint64's edges, values about 2^63 and seeded random ones, the original's answer in
    onnxruntime and numpy's. Below opset 13 (Cast's wrap undefined) the form is not chosen."""
    top = 2**63
    edges = [0, 1, 2, 2**31, 2**32, top - 2, top - 1, top, top + 1, top + 2, 2**64 - 2, 2**64 - 1]
    drawn = np.random.default_rng(7).integers(0, 2**64 - 1, 48, np.uint64, endpoint=True)
    values = np.concatenate([np.array(edges, np.uint64), drawn])
    n = len(values)
    graph = helper.make_graph(
        [helper.make_node(op_type, ["a", "b"], ["y"], name="compare")], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT64, [n, 1]),
         helper.make_tensor_value_info("b", TensorProto.UINT64, [n])],
        [helper.make_tensor_value_info("y", TensorProto.BOOL, [n, n])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    result = lowering.lower_model(model, target="onnx2torch")
    assert [n.op_type for n in result.model.graph.node] == [
        "Cast",
        "Cast",
        "Constant",
        *["Less"] * 2,
        "Xor",
        "Less",
        "Xor",
    ]
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"a": values.reshape(n, 1), "b": values}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    compare = np.less if op_type == "Less" else np.greater
    assert got.dtype == np.bool_ and np.array_equal(got, want) and np.array_equal(got, compare(feeds["a"], values))
    [finding] = [f for f in check_model(model, "onnx2torch") if f.blocks]
    assert f"--target chooses the form {op_type}(a, b) on uint64 -> Xor(" in str(finding)
    older = _comparison_model(op_type, TensorProto.UINT64, opset=12)
    assert not [f for f in check_model(older, "onnx2torch", 12) if f.fix and "uint64 -> Xor" in f.fix]


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.INT16])
def test_max_of_floats_or_another_integer_type_stays(element_type):
    """Floats: NaN and signed zeros are ordered otherwise. int16: the type a Where selects is not
    judged, and onnxruntime has no int16 Where: its Max-13 on int16 goes another way (no Where)."""
    model = _two_input_model("Max", element_type, element_type, opset=13)
    with pytest.raises(TargetRefused, match="node 'op': Max is not in js/web/docs/webgpu-operators.md"):
        lowering.lower_model(model, target="webgpu")
    result = lowering.lower_model(_two_input_model("Max", TensorProto.INT16, TensorProto.INT16, opset=13),
                                  target="onnxruntime")  # fmt: skip
    assert "Where" not in {node.op_type for node in result.model.graph.node} and not result.report.forms


@pytest.mark.parametrize(
    "value, shape",
    [(numpy_helper.from_array(np.array([-7], np.int64)), [2, 0, 3]),
     (numpy_helper.from_array(np.array([np.nan], np.float32)), []),
     (numpy_helper.from_array(np.array([-0.0], np.float16)), [3, 1]),
     (None, [4])],
)  # fmt: skip
def test_a_constant_of_a_fed_shape_goes_to_webgpu_as_an_expanded_scalar(value, shape):
    """webgpu's table lists no ConstantOfShape: Expand of its value as a scalar (0.0 as float
    where it states none), to any shape (a 0 in it, the empty one), the same bits."""
    attributes = {} if value is None else {"value": value}
    out_type = TensorProto.FLOAT if value is None else value.data_type
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill", **attributes)], "g",
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [len(shape)])],
        [helper.make_tensor_value_info("y", out_type, [None] * len(shape))],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    result = lowering.lower_model(model, target="webgpu")
    assert [n.op_type for n in result.model.graph.node] == ["Constant", "Expand"]
    onnx.checker.check_model(result.model, full_check=True)
    feeds = {"shape": np.array(shape, np.int64)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape == tuple(shape)
    assert got.tobytes() == want.tobytes()


def _identity_model(give_out_identity: bool = False) -> onnx.ModelProto:
    """x -> Identity -> kept, read by a Relu and inside an If branch; ``give_out_identity``: the
    graph also gives out an Identity's output."""
    branch = helper.make_graph([helper.make_node("Neg", ["kept"], ["negated"])], "then", [],
                               [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [3])])  # fmt: skip
    other = helper.make_graph([helper.make_node("Abs", ["kept"], ["absolute"])], "else", [],
                              [helper.make_tensor_value_info("absolute", TensorProto.FLOAT, [3])])  # fmt: skip
    nodes = [
        helper.make_node("Identity", ["x"], ["kept"], name="copy"),
        helper.make_node("Relu", ["kept"], ["y"]),
        helper.make_node("If", ["branch"], ["z"], then_branch=branch, else_branch=other),
    ]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [3]) for name in ("y", "z")]
    if give_out_identity:
        nodes.append(helper.make_node("Identity", ["y"], ["given"], name="out"))
        outputs.append(helper.make_tensor_value_info("given", TensorProto.FLOAT, [3]))
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("branch", TensorProto.BOOL, [])],
        outputs, value_info=[helper.make_tensor_value_info("kept", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_an_identity_webgpu_lacks_is_left_out_its_readers_reading_its_input():
    """webgpu's table lists no Identity: y = Identity(x) is x, so the Relu and the If branches
    read x; the outputs are the original's bit for bit on either branch."""
    model = _identity_model()
    result = lowering.lower_model(model, target="webgpu", fold="none")
    assert "Identity" not in [n.op_type for n in result.model.graph.node]
    assert all(n.input[0] == "x" for g in [result.model.graph, *nested_graphs(result.model.graph.node)]
               for n in g.node if n.op_type in ("Relu", "Neg", "Abs"))  # fmt: skip
    assert "kept" not in {info.name for info in result.model.graph.value_info}
    onnx.checker.check_model(result.model, full_check=True)
    x = np.array([-0.0, np.nan, -3.5], np.float32)
    for branch in (True, False):
        feeds = {"x": x, "branch": np.array(branch)}
        want, got = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want, strict=True))
    [finding] = [f for f in check_model(model, "webgpu") if f.blocks]
    assert "--target chooses the form Identity(x) the runtime refuses left out" in str(finding)


def test_an_identity_a_graph_gives_out_stays_and_blocks():
    """Its output is the graph's: no reader to rewire, so the node stays and the model is refused."""
    findings = [f for f in check_model(_identity_model(give_out_identity=True), "webgpu") if f.blocks]
    assert [(f.node, f.fix) for f in findings if f.node == "out"] == [("out", None)]
    with pytest.raises(TargetRefused, match="node 'out'"):
        lowering.lower_model(_identity_model(give_out_identity=True), target="webgpu", fold="none")


def test_an_identity_whose_name_a_sibling_branch_defines_again_stays():
    """Both If branches define y, one as Identity(a), one as Neg(b): y means another value in
    each, so the Identity stays (and webgpu refuses it) rather than the else branch reading a."""
    then_branch = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["y"]), helper.make_node("Add", ["y", "y"], ["then_out"])], "then", [],
        [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [2])])  # fmt: skip
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["b"], ["y"]), helper.make_node("Add", ["y", "y"], ["else_out"])], "else", [],
        [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [2])])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["out"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    with pytest.raises(TargetRefused, match="graph 'then': Identity is not in"):
        lowering.lower_model(model, target="webgpu", fold="none")
    [finding] = [f for f in check_model(model, "webgpu") if f.op_type == "Identity"]
    assert finding.blocks and finding.fix is None


def test_a_chain_of_identities_keeps_the_one_the_graph_gives_out():
    """y1 = Identity(x), y2 = Identity(y1) (given out), y3 = Identity(y2) read in a branch: y1 and
    y3 go, y2 stays (it is the graph's output), now Identity(x); the outputs are the same bits."""

    def value(name, element_type=TensorProto.FLOAT, shape=(2,)):
        return helper.make_tensor_value_info(name, element_type, list(shape))

    then_branch = helper.make_graph([helper.make_node("Neg", ["y3"], ["then_out"])], "then", [], [value("then_out")])
    else_branch = helper.make_graph([helper.make_node("Abs", ["y1"], ["else_out"])], "else", [], [value("else_out")])
    nodes = [
        helper.make_node("Identity", ["x"], ["y1"]),
        helper.make_node("Identity", ["y1"], ["y2"]),
        helper.make_node("Identity", ["y2"], ["y3"]),
        helper.make_node("If", ["c"], ["out"], then_branch=then_branch, else_branch=else_branch),
    ]
    graph = helper.make_graph(nodes, "g", [value("c", TensorProto.BOOL, ()), value("x")], [value("out"), value("y2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    with pytest.raises(TargetRefused, match="graph 'g': Identity is not in"):  # (y2's Identity stays: refused)
        lowering.lower_model(model, target="webgpu", fold="none")
    from lowering.runtime_profiles import load_profile
    from lowering.target_forms import choose_forms
    from lowering.target_lowering import form_judge

    chosen, made = choose_forms(model, form_judge(model, load_profile("webgpu"), 19), 19)
    assert made == {"Identity(x) the runtime refuses left out, its readers reading x": 2}
    assert [(n.op_type, list(n.input)) for n in chosen.graph.node] == [("Identity", ["x"]), ("If", ["c"])]
    for branch in (True, False):
        feeds = {"c": np.array(branch), "x": np.array([-0.0, np.nan], np.float32)}
        want, got = run_onnxruntime(model, feeds), run_onnxruntime(chosen, feeds)
        assert all(a.tobytes() == b.tobytes() for a, b in zip(got, want, strict=True))


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT8E4M3FN, TensorProto.INT4, TensorProto.BFLOAT16])
def test_a_constant_of_shape_of_a_type_expand_lacks_stays_refused(element_type):
    """ConstantOfShape-21 takes float8 and int4 values, Expand-13 neither; Expand-13 takes
    bfloat16, which onnxruntime's CPU provider (every lowered model must run there) does not:
    no Expand is written, and webgpu refuses the node in one clean refusal."""
    value = helper.make_tensor("v", element_type, [1], [1])
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill", value=value)], "g",
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", element_type, [None, None])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    with pytest.raises(TargetRefused, match="ConstantOfShape is not in"):
        lowering.lower_model(model, target="webgpu")


def test_a_local_function_s_attribute_its_caller_gives_is_judged_as_set():
    """A LeakyRelu in a local function takes alpha from its caller (ref_attr_name): it has no
    value there, so its form says "set" rather than read one (which raised)."""
    body = helper.make_node("LeakyRelu", ["a"], ["b"])
    body.attribute.append(onnx.AttributeProto(name="alpha", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
    function = helper.make_function("local", "Leaky", ["a"], ["b"], [body], [helper.make_opsetid("", 18)], ["alpha"])
    graph = helper.make_graph(
        [helper.make_node("Leaky", ["x"], ["y"], domain="local", alpha=0.25)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
                              functions=[function], ir_version=9)  # fmt: skip
    assert not [f for f in check_model(model, "onnxruntime") if f.blocks]
    lowered = lowering.lower_model(model, target="onnxruntime").model
    feeds = {"x": np.array([-4.0, 0.0, 2.0], np.float32)}
    assert np.array_equal(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0])


def test_a_constant_of_a_fed_shape_goes_to_tvm_as_an_expanded_scalar():
    """TVM 0.27 fails ConstantOfShape of a fed shape ("CodeGenVM cannot emit this Relax operator")
    and runs Expand: the backend's three such cases, refused before, ran right so on TVM."""
    graph = helper.make_graph(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="fill",
                          value=numpy_helper.from_array(np.array([1], np.int32)))], "g",
        [helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [None, None, None])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    result = lowering.lower_model(model, target="tvm-0.27")
    assert [n.op_type for n in result.model.graph.node] == ["Constant", "Expand"]
    feeds = {"shape": np.array([2, 0, 3], np.int64)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "op_type, element_type, rewritten",
    [("And", TensorProto.BOOL, "Mul"), ("Or", TensorProto.BOOL, "Add"), ("Max", TensorProto.INT64, "Where")],
)
def test_the_new_choices_apply_inside_if_branches_too(op_type, element_type, rewritten):
    """And, Or and Max in both branches of an If go to webgpu rewritten there, each branch the
    original's answer (the branch nodes are not in a local function, whose nodes stay)."""
    from support import nested_forms

    out_type = TensorProto.BOOL if element_type == TensorProto.BOOL else element_type
    model = nested_forms(_two_input_model(op_type, element_type, out_type, opset=13))["if"]
    result = lowering.lower_model(model, target="webgpu", fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    [choose] = result.model.graph.node
    branches = [[n.op_type for n in a.g.node] for a in choose.attribute]
    assert all(op_type not in ops and rewritten in ops for ops in branches), branches
    if element_type == TensorProto.BOOL:
        a, b = np.array([[False, True, True], [True, False, False]]), np.array([True, False, False])
    else:
        low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
        a, b = np.array([[low, 0, high], [high, low, 1]], np.int64), np.array([high, 0, low], np.int64)
    for branch in (True, False):
        feeds = {"a": a, "b": b, "branch": np.array(branch)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.dtype == want.dtype and np.array_equal(got, want)


# -- MatMul on float16 in float32 -------------------------------------------------------------------


def _half_product_profile(half: str = "wrong"):
    """A runtime whose float16 MatMul is ``half`` (TVM keeps its sums in float16: one step off)
    and which runs the Casts and a float32 MatMul right."""
    cases = {
        "matmul_half": ("MatMul", 13, "FLOAT16", half),
        "matmul_float": ("MatMul", 13, "FLOAT", "right"),
        "cast_FLOAT16_FLOAT@21": ("Cast", 21, "FLOAT16", "right"),
        "cast_FLOAT_FLOAT16@21": ("Cast", 21, "FLOAT", "right"),
    }
    return _profile_of("half-product", 21, cases)


def _half_product_model() -> onnx.ModelProto:
    """y = MatMul(a [2, N, K], b [K, M]) on float16, at opset 21."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="product")], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT16, [2, "N", "K"]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT16, ["K", "M"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, "N", "M"])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


HALF_PRODUCT_SAID = (
    "MatMul(a, b) on float16 -> Cast(MatMul(Cast(a, float), Cast(b, float)), float16) (the runtime runs those better)"
)


def test_a_float16_matmul_goes_to_float32_and_gives_onnxruntimes_bits():
    """Random products of every size from sums of 1 to 300 terms, values up to float16's largest
    (sums that overflow to inf), inf and NaN among them: the float32 form gives onnxruntime's
    float16 kernel's bits."""
    model = _half_product_model()
    result = lowering.lower_model(model, target=_half_product_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {HALF_PRODUCT_SAID: 1}
    assert [n.op_type for n in result.model.graph.node] == ["Cast", "Cast", "MatMul", "Cast"]
    rng = np.random.default_rng(16)
    for n, k, m, scale in ((3, 1, 4, 1.0), (5, 37, 3, 8.0), (4, 300, 6, 2.0), (2, 9, 2, 60000.0)):
        a = np.clip(rng.standard_normal((2, n, k)) * scale, -65504, 65504).astype(np.float16)
        b = np.clip(rng.standard_normal((k, m)) * scale, -65504, 65504).astype(np.float16)
        a[0, 0, 0], a[1, -1, -1] = np.inf, np.nan
        [want] = run_onnxruntime(model, {"a": a, "b": b})
        [got] = run_onnxruntime(result.model, {"a": a, "b": b})
        assert got.dtype == np.float16 and np.array_equal(got.view(np.uint16), want.view(np.uint16)), (n, k, m)


def test_a_float16_matmul_stays_where_the_runtime_gets_it_right():
    result = lowering.lower_model(_half_product_model(), target=_half_product_profile("right"), fold="none")
    assert [n.op_type for n in result.model.graph.node] == ["MatMul"] and not result.report.forms


# -- AveragePool and MaxPool with auto_pad as explicit pads -----------------------------------------

AUTO_PADS = ("SAME_UPPER", "SAME_LOWER", "VALID")
# (op, auto_pad, sizes, kernel, strides, attributes): every 1-D pooling of size 1-7, kernel and
# stride 1-3; a few 2-D and 3-D ones, MaxPool's Indices stored column-major among them
AUTO_PAD_POOLS = [
    (op_type, mode, (size,), (kernel,), (stride,), {"count_include_pad": include} if include else {})
    for op_type in ("AveragePool", "MaxPool") for mode in AUTO_PADS
    for size in range(1, 8) for kernel in range(1, 4) for stride in range(1, 4)
    for include in ((0, 1) if op_type == "AveragePool" else (0,)) if size >= kernel or mode != "VALID"
] + [
    (op_type, mode, sizes, kernel, strides, extra)
    for op_type, extra in (("AveragePool", {"count_include_pad": 1}), ("AveragePool", {}),
                           ("MaxPool", {"storage_order": 1}), ("MaxPool", {}))
    for mode in AUTO_PADS
    for sizes, kernel, strides in (((5, 6), (3, 3), (1, 2)), ((7, 4), (3, 1), (2, 1)),
                                   ((4, 5, 6), (3, 3, 1), (1, 2, 3)))
]  # fmt: skip
# The opsets whose versions differ: AveragePool 7, 10, 11, 19, 22; MaxPool 8, 10, 11, 12, 22
AUTO_PAD_OPSETS = [8, 10, 11, 12, 19, 22]


def _auto_padded_pools(configurations, opset: int) -> onnx.ModelProto:
    """One pooling per configuration (AUTO_PAD_POOLS), over x_SIZES [1, 2, *SIZES]; each
    MaxPool's Indices an output too. storage_order only from MaxPool-8, count_include_pad from
    AveragePool-7 (the opsets tested)."""
    sizes = sorted({tuple(sizes) for _, _, sizes, *_ in configurations})
    nodes, outputs = [], []
    for k, (op_type, mode, extent, kernel, strides, extra) in enumerate(configurations):
        x = "x" + "_".join(map(str, extent))
        written = [f"y{k}", f"i{k}"] if op_type == "MaxPool" else [f"y{k}"]
        nodes.append(helper.make_node(op_type, [x], written, name=f"pool{k}", auto_pad=mode,
                                      kernel_shape=list(kernel), strides=list(strides), **extra))  # fmt: skip
        outputs += [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [None] * (2 + len(extent)))]
        if len(written) == 2:
            outputs += [helper.make_tensor_value_info(f"i{k}", TensorProto.INT64, [None] * (2 + len(extent)))]
    inputs = [
        helper.make_tensor_value_info("x" + "_".join(map(str, extent)), TensorProto.FLOAT, [1, 2, *extent])
        for extent in sizes
    ]
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _same_padding(mode: str, sizes, kernel, strides) -> list[int]:
    """The total padding along each axis: ONNX's SAME formula, (⌈n / s⌉ - 1)·s + k - n; 0 for VALID."""
    if mode == "VALID":
        return [0] * len(sizes)
    return [(-(-n // s) - 1) * s + k - n for n, k, s in zip(sizes, kernel, strides, strict=True)]


@slow_but_a_sample()
@pytest.mark.parametrize("opset", AUTO_PAD_OPSETS)
def test_every_auto_padded_pool_has_explicit_pads_making_the_same_windows(opset):
    """Every pooling of AUTO_PAD_POOLS at every AveragePool and MaxPool version from 7 and 8,
    written with explicit pads (an odd total padding's extra one at the end for SAME_UPPER, at
    the begin for SAME_LOWER): the same averages, maxima and indices, bit for bit, on edge
    values. Declined where SAME's total padding along an axis is negative (the last window ends
    before x does)."""
    from lowering.node_forms import node_form
    from lowering.target_forms import OP_CHOICES

    model = _auto_padded_pools(AUTO_PAD_POOLS, opset)
    onnx.checker.check_model(model, full_check=True)
    types = {info.name: info.type for info in model.graph.input}
    original, rewritten = onnx.ModelProto(), onnx.ModelProto()
    original.CopyFrom(model)
    rewritten.CopyFrom(model)
    del original.graph.node[:], rewritten.graph.node[:], original.graph.output[:], rewritten.graph.output[:]
    declined = 0
    for node, (op_type, mode, sizes, kernel, strides, _) in zip(model.graph.node, AUTO_PAD_POOLS, strict=True):
        [choice] = [c for c in OP_CHOICES if c.op_type == op_type and "auto_pad" in c.said]
        version = schemas.version_in_force(op_type, opset)
        form = node_form(node, version, set(types), set(), {}, {}, set())
        totals = _same_padding(mode, sizes, kernel, strides)
        stated = min(totals) >= 0
        assert choice.applies(node, form, version, {}, types) is stated, node.name
        if not stated:
            declined += 1
            continue
        [pooled] = choice.replacement(node, form, {}, None, opset, types)
        pads = next((helper.get_attribute_value(a) for a in pooled.attribute if a.name == "pads"), None)
        assert all(a.name != "auto_pad" for a in pooled.attribute)
        begins = [t // 2 if mode == "SAME_UPPER" else t - t // 2 for t in totals]  # (the odd one at the end: UPPER)
        assert pads in (None, [*begins, *(t - b for t, b in zip(totals, begins, strict=True))]), node.name
        assert (pads is not None) == any(totals), node.name
        original.graph.node.append(node)
        rewritten.graph.node.append(pooled)
    assert 0 < declined < len(AUTO_PAD_POOLS) // 4
    kept = [name for node in original.graph.node for name in node.output]
    outputs = [o for o in model.graph.output if o.name in kept]
    original.graph.output.extend(outputs)
    rewritten.graph.output.extend(outputs)
    onnx.checker.check_model(rewritten, full_check=True)
    feeds = _pool_feeds(model)
    want, got = run_onnxruntime(original, feeds), run_onnxruntime(rewritten, feeds)
    assert len(want) == len(kept)
    for name, expected, actual in zip(kept, want, got, strict=True):
        assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes(), name


@pytest.mark.parametrize(
    "attributes",
    [{"ceil_mode": 1}, {"dilations": [2]}, {"pads": [1, 1]}, {"auto_pad": "NOTSET", "pads": [1, 1]}],
    ids=["ceil_mode", "dilated", "pads beside auto_pad", "NOTSET"],
)
def test_an_auto_padded_pool_in_ceil_mode_dilated_or_given_pads_too_is_kept(attributes):
    """MaxPool-22 of size 6, kernel 3, stride 1 (SAME pads it by 1 at each end): declined in
    ceil mode, dilated, with pads stated beside auto_pad (onnx's inference reads the pads,
    onnxruntime auto_pad) and with auto_pad NOTSET."""
    from lowering.node_forms import node_form
    from lowering.target_forms import OP_CHOICES

    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[1],
                            **{"auto_pad": "SAME_UPPER", **attributes})  # fmt: skip
    types = {"x": helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 2, 6])}
    [choice] = [c for c in OP_CHOICES if c.op_type == "MaxPool" and "auto_pad" in c.said]
    form = node_form(node, 22, {"x"}, set(), {}, {}, set())
    assert not choice.applies(node, form, 22, {}, types)
    plain = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[1], auto_pad="SAME_UPPER")
    assert choice.applies(plain, node_form(plain, 22, {"x"}, set(), {}, {}, set()), 22, {}, types)


def _auto_pad_profile(same_case: str = "fails", uneven_case: str = "fails"):
    """A runtime that fails the backend's SAME_UPPER and SAME_LOWER poolings, pools with
    explicit pads padding both ends alike right, and ``uneven_case`` those padding one end more
    (onnx2torch fails them); and fails Conv, so that AveragePool's rule is no way out."""
    cases = {
        "test_basic_conv_with_padding": ("Conv", 22, "FLOAT", "fails"),
        "test_averagepool_2d_same_upper": ("AveragePool", 22, "FLOAT", same_case),
        "test_averagepool_2d_same_lower": ("AveragePool", 22, "FLOAT", same_case),
        "test_averagepool_2d_precomputed_pads": ("AveragePool", 22, "FLOAT", "right"),
        "test_averagepool_2d_default": ("AveragePool", 22, "FLOAT", "right"),
        **{f"uneven_AveragePool_{k}@22": ("AveragePool", 22, "FLOAT", uneven_case) for k in range(3)},
    }
    return _profile_of("auto-pad-fails", 22, cases)


AUTO_PAD_SAID = "AveragePool with auto_pad SAME or VALID -> the pads that make the same windows"


def test_an_auto_padded_pool_gets_explicit_pads_where_the_runtime_fails_auto_pad():
    """A SAME_LOWER AveragePool of a 5 by 5 image, kernel 3 by 3, stride 2: pads [1, 1, 1, 1], the
    same averages; kept where the runtime pools SAME right, where the image's sizes are unknown,
    and with kernel 2 by 3, which SAME_LOWER pads by one more at the begin of the first axis,
    where the runtime pools such pads wrong (onnx2torch: lowered by AveragePool's rule instead),
    and written so where it pools them right."""
    pool = helper.make_node("AveragePool", ["x"], ["y"], name="pool", auto_pad="SAME_LOWER", kernel_shape=[3, 3],
                            strides=[2, 2])  # fmt: skip
    graph = helper.make_graph([pool], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    findings = check_model(model, _auto_pad_profile())
    assert [f.node for f in findings if f"--target chooses the form {AUTO_PAD_SAID}" in str(f)] == ["pool"]
    result = lowering.lower_model(model, target=_auto_pad_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {AUTO_PAD_SAID: 1}
    [pooled] = result.model.graph.node
    assert {a.name for a in pooled.attribute} == {"kernel_shape", "strides", "pads"}
    assert helper.get_attribute_value(next(a for a in pooled.attribute if a.name == "pads")) == [1, 1, 1, 1]
    feeds = _pool_feeds(model)
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert want.shape == (1, 1, 3, 3) and got.tobytes() == want.tobytes()
    kept = lowering.lower_model(model, target=_auto_pad_profile("right", "right"), fold="none")
    assert not kept.report.forms and list(kept.model.graph.node) == [pool]
    unknown = onnx.ModelProto()
    unknown.CopyFrom(model)
    unknown.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "h"
    assert all(AUTO_PAD_SAID not in str(f) for f in check_model(unknown, _auto_pad_profile()))
    uneven = onnx.ModelProto()
    uneven.CopyFrom(model)
    uneven.graph.node[0].attribute[1].CopyFrom(helper.make_attribute("kernel_shape", [2, 3]))
    assert all(AUTO_PAD_SAID not in str(f) for f in check_model(uneven, _auto_pad_profile()))
    left = lowering.lower_model(uneven, target=_auto_pad_profile(), fold="none")  # (no form: AveragePool's rule)
    assert not left.report.forms and left.report.rewritten["AveragePool-22"] == 1
    [want], [got] = run_onnxruntime(uneven, _pool_feeds(uneven)), run_onnxruntime(left.model, _pool_feeds(uneven))
    assert np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    taken = lowering.lower_model(uneven, target=_auto_pad_profile(uneven_case="right"), fold="none")
    assert taken.report.forms == {AUTO_PAD_SAID: 1}
    assert helper.get_attribute_value(next(a for a in taken.model.graph.node[0].attribute if a.name == "pads")) == [
        1, 1, 0, 1]  # fmt: skip
    [want], [got] = run_onnxruntime(uneven, feeds), run_onnxruntime(taken.model, feeds)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


# -- CumSum on int32 summed in int64 ----------------------------------------------------------------

CUMSUM_SAID = "CumSum(x, axis) on int32 -> Cast(CumSum(Cast(x, int64), axis), int32) (the runtime runs those better)"
CUMSUM_ATTRIBUTES = [
    {},
    {"exclusive": 1},
    {"reverse": 1},
    {"exclusive": 1, "reverse": 1},
    {"exclusive": 0, "reverse": 0},
]


@pytest.mark.parametrize("opset", [11, 14])
def test_every_int32_cumsum_summed_in_int64_gives_the_same_bits(opset):
    """Every attribute combination, along each axis of a 3 by 4 int32 matrix (given as 0, 1 and
    -1, each a constant, and once fed), holding the type's extremes so that sums wrap: the Cast of
    the int64 sums back to int32 gives what onnxruntime's int32 kernel gives, bit for bit."""
    from lowering.node_forms import node_form
    from lowering.target_forms import OP_CHOICES

    [choice] = [c for c in OP_CHOICES if c.op_type == "CumSum" and "int64" in c.said]
    top, bottom = np.iinfo(np.int32).max, np.iinfo(np.int32).min
    x = np.array([[top, 1, top, -3], [bottom, -1, 5, bottom], [7, top, bottom, 0]], np.int32)
    nodes, rewritten, outputs, initializers = [], [], [], []
    names = NameAllocator()
    types = {"x": helper.make_tensor_type_proto(TensorProto.INT32, [3, 4])}
    version = schemas.version_in_force("CumSum", opset)
    combinations = [(a, axis) for a in CUMSUM_ATTRIBUTES for axis in (0, 1, -1)] + [({"reverse": 1}, None)]
    for k, (attributes, axis) in enumerate(combinations):
        axis_name = f"axis{k}" if axis is not None else "fed_axis"  # (None: the axis fed, -1)
        if axis is not None:
            initializers.append(numpy_helper.from_array(np.array(axis, np.int64), axis_name))
        node = helper.make_node("CumSum", ["x", axis_name], [f"y{k}"], name=f"sum{k}", **attributes)
        fed = {"x"} if axis is not None else {"x", axis_name}
        form = node_form(node, version, fed, {axis_name} - fed, {}, {}, set())
        assert choice.applies(node, form, version, {}, types)
        nodes.append(node)
        rewritten += choice.replacement(node, form, {}, names, opset, types)
        outputs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.INT32, [3, 4]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.INT32, [3, 4]),
              helper.make_tensor_value_info("fed_axis", TensorProto.INT64, [])]  # fmt: skip
    model, widened = (
        helper.make_model(helper.make_graph(made, "g", inputs, outputs, initializers),
                          opset_imports=[helper.make_opsetid("", opset)])
        for made in (nodes, rewritten)
    )  # fmt: skip
    onnx.checker.check_model(widened, full_check=True)
    assert [n.op_type for n in widened.graph.node[:2]] == ["Cast", "CumSum"]
    sums = [n for n in widened.graph.node if n.op_type == "CumSum"]
    assert len(sums) == len(combinations) and all(
        {a.name for a in n.attribute} == {"exclusive", "reverse"} for n in sums
    )
    ops = {
        n.op_type for n in widened.graph.node
    }  # (below 13 Cast-9 leaves a sum past int32 undefined: its low bits taken)
    assert ops == ({"Cast", "CumSum"} if opset >= 13 else {"Cast", "CumSum", "Constant", "Mod", "Add", "Sub"})
    feeds = {"x": x, "fed_axis": np.array(-1, np.int64)}
    want, got = run_onnxruntime(model, feeds), run_onnxruntime(widened, feeds)
    for expected, actual in zip(want, got, strict=True):
        assert actual.dtype == expected.dtype == np.int32 and actual.tobytes() == expected.tobytes()
    exact = np.cumsum(x.astype(np.int64), axis=0)  # (the first node's: no attributes, axis 0)
    assert (want[0] != exact).any() and (want[0] == exact.astype(np.int32)).all()  # (sums wrapped)


def _cumsum_profile(int32_case: str = "wrong"):
    """A runtime that sums int32 wrong (into int64, as onnx2torch does) and int64 right with its
    attributes stated."""
    cases = {
        "small_CumSum_stated_INT32@14#constant": ("CumSum", 14, "INT32", int32_case),
        "small_CumSum_INT32@14#constant": ("CumSum", 14, "INT32", int32_case),
        "small_CumSum_stated_INT64@14#constant": ("CumSum", 14, "INT64", "right"),
        "small_CumSum_exclusive_stated_INT64@14#constant": ("CumSum", 14, "INT64", "right"),
        "small_CumSum_reverse_INT64@14#constant": ("CumSum", 14, "INT64", "right"),
        "small_CumSum_INT64@14#constant": ("CumSum", 14, "INT64", "wrong"),
        "cast_INT32_INT64@13": ("Cast", 13, "INT32", "right"),
        "cast_INT64_INT32@13": ("Cast", 13, "INT64", "right"),
    }
    return _profile_of("cumsum-int32-wrong", 14, cases)


def test_an_int32_cumsum_is_summed_in_int64_where_the_runtime_sums_int32_wrong():
    """An int32 CumSum along a constant axis: written Cast, CumSum on int64 with its attributes
    stated, Cast back, the same sums; kept where the runtime sums int32 right."""
    node = helper.make_node("CumSum", ["x", "axis"], ["y"], name="sum", exclusive=1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT32, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 5])],
                              [numpy_helper.from_array(np.array(1, np.int64), "axis")])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    result = lowering.lower_model(model, target=_cumsum_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {CUMSUM_SAID: 1}
    assert [n.op_type for n in result.model.graph.node] == ["Cast", "CumSum", "Cast"]
    summed = result.model.graph.node[1]
    assert {a.name: a.i for a in summed.attribute} == {"exclusive": 1, "reverse": 0}
    x = np.array([[3, -5, 0, 7, 2**31 - 1], [1, 2, 3, 4, 5]], np.int32)
    [want], [got] = run_onnxruntime(model, {"x": x}), run_onnxruntime(result.model, {"x": x})
    assert got.dtype == np.int32 and got.tobytes() == want.tobytes()
    kept = lowering.lower_model(model, target=_cumsum_profile("right"), fold="none")
    assert not kept.report.forms and list(kept.model.graph.node) == [node]


def test_an_int32_cumsum_in_an_if_branch_is_summed_in_int64_too():
    """The int32 CumSum inside an If's then-branch (reading the main graph's x): written in
    int64 there, the same sums on either branch."""
    summed = helper.make_node("CumSum", ["x", "axis"], ["sums"], name="sum", reverse=1)
    then_branch = helper.make_graph([summed], "then", [], [helper.make_tensor_value_info("sums", TensorProto.INT32,
                                                                                         [2, 5])])  # fmt: skip
    else_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["same"])], "else", [],
                                    [helper.make_tensor_value_info("same", TensorProto.INT32, [2, 5])])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.INT32, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 5])],
        [numpy_helper.from_array(np.array(1, np.int64), "axis")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    result = lowering.lower_model(model, target=_cumsum_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {CUMSUM_SAID: 1}
    [branch] = [g for g in nested_graphs(result.model.graph.node) if g.name == "then"]
    assert [n.op_type for n in branch.node] == ["Cast", "CumSum", "Cast"]
    x = np.array([[3, -5, 0, 7, 2**31 - 1], [1, 2, 3, 4, -(2**31)]], np.int32)
    for cond in (True, False):
        feeds = {"cond": np.array(cond), "x": x}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.dtype == np.int32 and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(("op_type", "element_type"), [("MaxPool", TensorProto.FLOAT16), ("MaxPool", TensorProto.UINT8),
                                                       ("AveragePool", TensorProto.FLOAT16),
                                                       ("MaxPool", TensorProto.DOUBLE)])  # fmt: skip
def test_auto_padded_pools_of_other_types_get_the_same_windows(op_type, element_type):
    """A 2-D pooling of each auto_pad (kernel 2 by 3, stride 2 by 1 over 5 by 6) on float16,
    uint8 and double, written with explicit pads: the same bits in onnxruntime (edge values of
    the type: NaN, ±inf, ±0, subnormals, the extremes)."""
    from lowering.node_forms import node_form
    from lowering.samples import edge_values
    from lowering.target_forms import OP_CHOICES

    [choice] = [c for c in OP_CHOICES if c.op_type == op_type and "auto_pad" in c.said]
    types = {"x": helper.make_tensor_type_proto(element_type, [1, 2, 5, 6])}
    nodes, rewritten, outputs = [], [], []
    for k, mode in enumerate(AUTO_PADS):
        node = helper.make_node(op_type, ["x"], [f"y{k}"], auto_pad=mode, kernel_shape=[2, 3], strides=[2, 1])
        form = node_form(node, 22, {"x"}, set(), {}, {}, set())
        assert choice.applies(node, form, 22, {}, types)
        nodes.append(node)
        rewritten += choice.replacement(node, form, {}, None, 22, types)
        outputs.append(helper.make_tensor_value_info(f"y{k}", element_type, [None] * 4))
    inputs = [helper.make_tensor_value_info("x", element_type, [1, 2, 5, 6])]
    opsets = [helper.make_opsetid("", 22)]
    model, written = (helper.make_model(helper.make_graph(made, "g", inputs, outputs), opset_imports=opsets)
                      for made in (nodes, rewritten))  # fmt: skip
    onnx.checker.check_model(written, full_check=True)
    values = edge_values(element_type)
    x = np.resize(values, 60).reshape(1, 2, 5, 6).astype(values.dtype)
    for expected, actual in zip(run_onnxruntime(model, {"x": x}), run_onnxruntime(written, {"x": x}), strict=True):
        assert actual.shape == expected.shape and actual.tobytes() == expected.tobytes()


# -- Poolings padded by more than half their window, written as a Pool of a Pad ---------------------

# (op, attributes, element types): the poolings whose padding a Pad stands for, on each type
WIDE_POOLINGS = [
    ("MaxPool", {}, (TensorProto.INT8, TensorProto.UINT8)),
    ("AveragePool", {"count_include_pad": 1}, (TensorProto.FLOAT, TensorProto.FLOAT16)),
    ("LpPool", {"p": 2}, (TensorProto.FLOAT, TensorProto.FLOAT16)),
    ("LpPool", {"p": 3}, (TensorProto.FLOAT,)),
]
# (sizes, kernel, strides, pads): 1-D ones of every pad below the kernel over half the window,
# and 2-D ones padding one axis so, at one end or both
WIDE_PADS = [
    ((size,), (kernel,), (stride,), (begin, end))
    for size in (1, 2, 5) for kernel in (2, 3, 4) for stride in (1, 2, 3)
    for begin in range(kernel) for end in range(kernel) if max(begin, end) > kernel // 2
] + [
    ((5, 6), (3, 3), (1, 2), (2, 0, 1, 1)),
    ((4, 4), (3, 2), (2, 1), (0, 1, 2, 1)),
    ((3, 4), (2, 3), (1, 1), (1, 2, 1, 2)),
]  # fmt: skip


def _wide_choice(op_type: str):
    from lowering.target_forms import OP_CHOICES

    [choice] = [c for c in OP_CHOICES if c.op_type == op_type and "more than half its window" in c.said]
    return choice


def _typed_feed(element_type: int, shape) -> np.ndarray:
    """Bit patterns of int8 and uint8 in order, float edge values (every pattern of float16),
    cycled to the shape."""
    from lowering.samples import edge_values

    if element_type in (TensorProto.INT8, TensorProto.UINT8):
        dtype = helper.tensor_dtype_to_np_dtype(element_type)
        values = np.arange(256, dtype=np.uint8).view(dtype)
    else:
        values = edge_values(element_type)
    return np.resize(values, int(np.prod(shape))).reshape(shape)


def _least(op_type: str, dtype: np.dtype):
    """The value a window of x's first channel holds alone: the least a max takes (the integers'
    minimum), -0.0 for sums and p-norms (a sum of -0.0 and padding is +0.0)."""
    return np.iinfo(dtype).min if op_type == "MaxPool" else -0.0


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [11, 18, 22])
def test_every_pooling_padded_wide_gives_the_same_bits_as_a_pool_of_a_pad(opset):
    """Every pooling of WIDE_POOLINGS and WIDE_PADS on each of its types, written as the pool of
    x padded by a Pad (the type's least value for MaxPool, 0 for AveragePool's and LpPool's):
    the same maxima, averages and p-norms as onnxruntime's kernel gives, bit for bit, on NaNs of
    every payload, ±inf, ±0, subnormals and the extremes (bit patterns of int8 and uint8 in
    order), each x rolled so that each window meets other values, its first channel the least
    value a max takes (-0.0 for sums), so that a window of it alone and padding tells a padding
    that is not that value; but for the sign of an average of zeros, which onnxruntime's
    AveragePool-11 kernel on two spatial axes gives by its code path. Both models run each node
    by its own kernel (onnxruntime's fusions off, as verification runs them: with them on, the
    Pad is merged into the pool and the kernel compared with itself)."""
    from lowering.node_forms import WIDE, node_form

    nodes, outputs, inputs, feeds, rewritten = [], [], [], {}, []
    names = NameAllocator()
    for op_type, attributes, element_types in WIDE_POOLINGS:
        if op_type == "MaxPool" and opset < 12:
            continue  # (MaxPool takes 8-bit integers from 12)
        for element_type in element_types:
            for k, (sizes, kernel, strides, pads) in enumerate(WIDE_PADS):
                x, y = f"x_{op_type}_{element_type}_{k}", f"y_{op_type}_{attributes}_{element_type}_{k}"
                x = x.replace(" ", "")
                if x not in feeds:
                    shape = [1, 2, *sizes]
                    inputs.append(helper.make_tensor_value_info(x, element_type, shape))
                    feeds[x] = np.roll(_typed_feed(element_type, shape), 7 * k)
                    feeds[x][:, 0] = _least(op_type, feeds[x].dtype)  # (windows of it alone: the padding's own)
                begins, ends = pads[: len(sizes)], pads[len(sizes) :]
                node = helper.make_node(op_type, [x], [y], name=y, kernel_shape=list(kernel), strides=list(strides),
                                        pads=[*begins, *ends], **attributes)  # fmt: skip
                types = {x: helper.make_tensor_type_proto(element_type, [1, 2, *sizes])}
                form = node_form(node, opset, {x}, set(), {x: (1, 2, *sizes)}, {x: element_type}, set())
                assert dict(form.attributes)["pads"] == WIDE, y
                choice = _wide_choice(op_type)
                version = schemas.version_in_force(op_type, opset)
                assert choice.applies(node, form, version, {}, types), y
                nodes.append(node)
                rewritten += choice.replacement(node, form, {}, names, opset, types)
                outputs.append(helper.make_tensor_value_info(y, element_type, [None] * (2 + len(sizes))))
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", opset)])  # fmt: skip
    written = onnx.ModelProto()
    written.CopyFrom(model)
    del written.graph.node[:]
    written.graph.node.extend(rewritten)
    onnx.checker.check_model(written, full_check=True)
    assert not any(a.name == "pads" for n in written.graph.node if n.op_type.endswith("Pool") for a in n.attribute)
    want, got = run_onnxruntime(model, feeds), run_onnxruntime(written, feeds)
    assert len(want) == len(outputs) > 300
    zero_signs = set()
    for info, expected, actual in zip(outputs, want, got, strict=True):
        assert actual.shape == expected.shape, info.name
        bits = f"u{expected.dtype.itemsize}"
        differ = expected.view(bits) != actual.view(bits)
        assert not (expected[differ] != 0).any() and not (actual[differ] != 0).any(), info.name
        if differ.any():
            zero_signs.add(info.name)
    # onnxruntime's AveragePool-11 kernel on two spatial axes gives an average of zeros the sign
    # of its code path (-0.0 on some windows of -0.0 alone in a padded pool, +0.0 in an unpadded
    # one): the pool of the Pad matches it but for that sign, which no padding value reproduces
    two_axes = {
        o.name for o in outputs if o.name.startswith("y_AveragePool") and len(o.type.tensor_type.shape.dim) == 4
    }
    if schemas.version_in_force("AveragePool", opset) == 11:
        assert zero_signs and zero_signs <= two_axes, zero_signs
    else:
        assert not zero_signs, zero_signs


@pytest.mark.parametrize(
    "op_type, attributes",
    [
        ("AveragePool", {}),
        ("AveragePool", {"count_include_pad": 0}),
        ("MaxPool", {"ceil_mode": 1}),
        ("MaxPool", {"dilations": [1, 2], "pads": [2, 0, 2, 0]}),
        ("MaxPool", {"auto_pad": "VALID"}),
        ("MaxPool", {"storage_order": 1, "indices": True}),
        ("MaxPool", {"pads": [3, 0, 0, 0]}),
        ("MaxPool", {"pads": [2, -1, 2, 1]}),
        ("MaxPool", {"pads": [1, 1, 1, 1]}),
        ("MaxPool", {"type": TensorProto.FLOAT}),
        ("MaxPool", {"type": TensorProto.FLOAT16}),
        ("MaxPool", {"type": TensorProto.DOUBLE}),
        ("AveragePool", {"count_include_pad": 1, "type": TensorProto.BFLOAT16}),
        ("LpPool", {"type": TensorProto.DOUBLE}),
        ("LpPool", {"p": 0}),
        ("LpPool", {"p": -1}),
    ],
    ids=[
        "average not counting pads",
        "counting stated 0",
        "ceil mode",
        "dilated",
        "auto_pad beside pads",
        "indices asked for",
        "a pad of a whole kernel",
        "a negative pad",
        "pads within half",
        "max of float",
        "max of float16",
        "max of double",
        "average of bfloat16",
        "p-norm of double",
        "p-norm of p 0",
        "p-norm of p -1",
    ],  # fmt: skip
)
def test_a_pooling_padded_wide_is_kept_where_a_pad_cannot_stand_for_its_padding(op_type, attributes):
    """Declined: AveragePool not counting the padding (its divisor counts x's elements alone),
    ceil mode, dilation (here of an axis not padded wide), auto_pad beside the pads, MaxPool's
    Indices asked for (they count in x unpadded), a pad of the whole kernel (a window of padding
    alone), a negative pad (onnxruntime refuses the node; a Pad would crop), pads within half the
    window (not the form), MaxPool on floats (onnxruntime's padded kernel maxes NaNs otherwise:
    the next test), types onnxruntime pools none of, and p-norms of p below 1 (0^p is not 0)."""
    from lowering.node_forms import WIDE, node_form

    attributes = dict(attributes)
    outputs = ["y", "i"] if attributes.pop("indices", False) else ["y"]
    pads = attributes.pop("pads", [2, 0, 2, 1])
    fitting = TensorProto.INT8 if op_type == "MaxPool" else TensorProto.FLOAT16
    element_type = attributes.pop("type", fitting)
    node = helper.make_node(op_type, ["x"], outputs, kernel_shape=[3, 3], pads=pads, **attributes)
    types = {"x": helper.make_tensor_type_proto(element_type, [1, 1, 6, 6])}
    form = node_form(node, 22, {"x"}, set(), {"x": (1, 1, 6, 6)}, {"x": element_type}, set())
    assert dict(form.attributes)["pads"] == (WIDE if pads != [1, 1, 1, 1] else "set")
    assert not _wide_choice(op_type).applies(node, form, 22, {}, types)
    plain = helper.make_node(op_type, ["x"], ["y"], kernel_shape=[3, 3], pads=[2, 0, 2, 1],
                             **({"count_include_pad": 1} if op_type == "AveragePool" else {}))  # fmt: skip
    fits = {"x": helper.make_tensor_type_proto(fitting, [1, 1, 6, 6])}
    plain_form = node_form(plain, 22, {"x"}, set(), {"x": (1, 1, 6, 6)}, {"x": fitting}, set())
    assert _wide_choice(op_type).applies(plain, plain_form, 22, {}, fits)


def test_below_opset_11_a_pool_padded_wide_is_kept_as_pad_takes_its_pads_as_an_attribute():
    from lowering.node_forms import node_form

    pool = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], pads=[2, 0], count_include_pad=1)
    types = {"x": helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 1, 6])}
    form = node_form(pool, 10, {"x"}, set(), {"x": (1, 1, 6)}, {"x": TensorProto.FLOAT}, set())
    choice = _wide_choice("AveragePool")
    assert choice.applies(pool, form, 10, {}, types)
    assert choice.replacement(pool, form, {}, NameAllocator(), 10, types) is None
    assert choice.replacement(pool, form, {}, NameAllocator(), 11, types) is not None


# (type, x, kernel, pads, the padded kernel's maxima, those of the pool of x padded by -inf)
NAN_WINDOWS = [
    (TensorProto.FLOAT, [np.nan], 4, [3, 0], [np.finfo(np.float32).min], [np.nan]),
    (TensorProto.DOUBLE, [np.nan, 1.0], 3, [2, 0], [np.nan, np.nan], [-np.inf, 1.0]),
    (TensorProto.FLOAT16, [np.nan, 2.0], 5, [3, 0], [2.0], [np.nan]),
    (TensorProto.FLOAT16, [np.nan], 4, [3, 0], [-np.inf], [np.nan]),
]


@pytest.mark.parametrize(
    "element_type, x, kernel, pads, padded, pooled", NAN_WINDOWS, ids=["float", "double", "float16", "float16 alone"]
)
def test_onnxruntimes_padded_maxpool_on_float_maxes_nans_otherwise_than_a_pool_of_a_pad(
    element_type, x, kernel, pads, padded, pooled
):
    """Why MaxPool on floats keeps its pads: onnxruntime's padded kernel and its unpadded one,
    run on x padded by -inf, take a NaN otherwise (float's padded kernel gives its lowest finite
    value for a window of padding and one NaN, float16's -inf; double's gives NaN for a window
    of 1.0 following a NaN; float16's passes a NaN before a 2), so the pool of a Pad is not its
    bits."""
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = np.array(x, dtype).reshape(1, 1, -1)
    graphs = (
        (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[kernel], pads=pads), x),
        (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[kernel]),
         np.pad(x, [(0, 0), (0, 0), (pads[0], pads[1])], constant_values=-np.inf)),
    )  # fmt: skip
    got = [
        run_onnxruntime(helper.make_model(helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", element_type, list(feed.shape))],
            [helper.make_tensor_value_info("y", element_type, [None] * 3)]),
            opset_imports=[helper.make_opsetid("", 22)]), {"x": feed})[0].reshape(-1)
        for node, feed in graphs
    ]  # fmt: skip
    for outputs, wanted in zip(got, (padded, pooled), strict=True):
        np.testing.assert_array_equal(outputs, np.array(wanted, dtype))


def test_pads_over_half_the_window_are_a_form_of_their_own_before_uneven_ones():
    """Pads of 2 by a kernel of 3 (half its window: 1) are WIDE, evenly or not; by a kernel of 5,
    or of 3 dilated by 2 (a window of 5), they are not; Conv's pads are never WIDE."""
    from lowering.node_forms import UNEVEN, WIDE, node_form

    def pads_class(op_type, pads, **attributes):
        node = helper.make_node(op_type, ["x", "w"][: 2 if op_type == "Conv" else 1], ["y"], pads=pads, **attributes)
        return dict(node_form(node, 22, {"x"}, set()).attributes)["pads"]

    assert pads_class("MaxPool", [2, 2], kernel_shape=[3]) == WIDE
    assert pads_class("AveragePool", [0, 2], kernel_shape=[3]) == WIDE
    assert pads_class("LpPool", [1, 1, 2, 1], kernel_shape=[3, 3]) == WIDE
    assert pads_class("MaxPool", [2, 2], kernel_shape=[5]) == "set"
    assert pads_class("MaxPool", [2, 2], kernel_shape=[3], dilations=[2]) == "set"
    assert pads_class("MaxPool", [1, 2], kernel_shape=[5]) == UNEVEN
    assert pads_class("Conv", [2, 2], kernel_shape=[3]) == "set"


def _wide_pads_cases() -> dict:
    """A runtime failing the backend's AveragePool counting its pads of 2 by a kernel of 3 and
    its MaxPool so padded (onnx2torch), pooling unpadded and padding right."""
    return {
        "test_averagepool_2d_pads_count_include_pad": ("AveragePool", 22, "FLOAT", "fails"),
        "test_maxpool_2d_pads": ("MaxPool", 22, "FLOAT", "fails"),
        "test_averagepool_2d_default": ("AveragePool", 22, "FLOAT", "right"),
        "test_constant_pad": ("Pad", 21, "FLOAT", "right"),
        **{f"constant_{t}@21": ("Constant", 21, t, "right") for t in ("FLOAT", "INT64")},
    }


WIDE_SAID = ("AveragePool padded by more than half its window -> AveragePool of x padded by a Pad with a value "
             "that leaves each window's value as it is")  # fmt: skip


def test_an_average_counting_pads_wide_goes_as_a_pool_of_a_pad_where_the_runtime_fails_such_pads():
    """A runtime failing the backend's AveragePool counting its pads of 2 by a kernel of 3
    (onnx2torch), and pooling unpadded and padding right: the model made for it pads by a Pad of
    0 and pools unpadded, the same averages as onnxruntime's on edge values; kept where it
    pools such pads right. A MaxPool on float so padded is lowered there by its rule."""
    cases = _wide_pads_cases()
    pool = helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[3, 3], pads=[2, 2, 2, 2],
                            count_include_pad=1)  # fmt: skip
    graph = helper.make_graph([pool], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4)])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    failing = _profile_of("wide-pads-fail", 22, cases)
    findings = check_model(model, failing)
    assert [f.node for f in findings if f"--target chooses the form {WIDE_SAID}" in str(f)] == ["pool"]
    result = lowering.lower_model(model, target=failing, fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {WIDE_SAID: 1}
    assert [n.op_type for n in result.model.graph.node if n.op_type != "Constant"] == ["Pad", "AveragePool"]
    feeds = _pool_feeds(model)
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert want.shape == (1, 1, 7, 7) and got.tobytes() == want.tobytes()
    cases["test_averagepool_2d_pads_count_include_pad"] = ("AveragePool", 22, "FLOAT", "right")
    kept = lowering.lower_model(model, target=_profile_of("wide-pads-right", 22, cases), fold="none")
    assert not kept.report.forms and list(kept.model.graph.node) == [pool]
    maxed = onnx.ModelProto()
    maxed.CopyFrom(model)
    maxed.graph.node[0].CopyFrom(helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[3, 3],
                                                  pads=[2, 2, 2, 2]))  # fmt: skip
    lowered_max = lowering.lower_model(maxed, target=failing, fold="none")  # (by its rule, rules/maxpool.py)
    assert "MaxPool" not in {n.op_type for n in lowered_max.model.graph.node}, lowered_max.report.lines()


def test_opsets_are_told_apart_by_pads_version_only_for_a_pool_padded_wide():
    """The ops whose versions tell a target's opsets apart hold Pad for a pooling padded by more
    than half its window whose padding a Pad can stand for (the form would write one), not for
    one padded less or not at all (onnx2torch's ceil-mode MaxPool goes to opset 11 as before),
    in ceil mode, or padded by a whole kernel."""
    from lowering.target_lowering import op_types_held_or_written

    def held(**attributes):
        pool = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], **attributes)
        graph = helper.make_graph([pool], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 1, 5, 5])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])  # fmt: skip
        return op_types_held_or_written(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]), 22, {})

    assert held(pads=[2, 2, 2, 2]) == {"MaxPool", "Pad"}
    assert held(pads=[1, 1, 1, 1]) == held(ceil_mode=1, strides=[2, 2]) == {"MaxPool"}
    assert held(pads=[2, 2, 2, 2], ceil_mode=1) == held(pads=[3, 3, 3, 3]) == {"MaxPool"}


def test_an_average_counting_pads_wide_in_an_if_branch_goes_as_a_pool_of_a_pad_too():
    """The pooling inside an If's then-branch (reading the main graph's x): written as the pool of
    a Pad there, the same bits on either branch, on edge values."""
    pool = helper.make_node("AveragePool", ["x"], ["pooled"], name="pool", kernel_shape=[3, 3], pads=[2, 2, 2, 2],
                            count_include_pad=1)  # fmt: skip
    model = _pooled_in_an_if(pool, [1, 1, 5, 5])
    result = lowering.lower_model(model, target=_profile_of("wide-pads-fail", 22, _wide_pads_cases()), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {WIDE_SAID: 1}
    [branch] = [g for g in nested_graphs(result.model.graph.node) if g.name == "then"]
    assert [n.op_type for n in branch.node if n.op_type != "Constant"] == ["Pad", "AveragePool"]
    for cond in (True, False):
        feeds = {"cond": np.array(cond), **_pool_feeds(helper.make_model(helper.make_graph(
            [], "x", [model.graph.input[1]], [])))}  # fmt: skip
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()


# -- a MatMul of a vector written as a MatMul of matrices ----------------------------------------------

VECTOR_SAID = (
    "MatMul(a, b) of a vector a -> Squeeze(MatMul(a made a row, b (a vector made a column))) (the runtime runs "
    "those better)"
)


def _matmul_model(
    a_shape: list[int], b_shape: list[int], opset: int, element_type: int = TensorProto.FLOAT
) -> onnx.ModelProto:
    """c = MatMul(a, b) of fed tensors of ``element_type``."""
    product = np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape
    inputs = [
        helper.make_tensor_value_info(name, element_type, shape)
        for name, shape in zip("ab", (a_shape, b_shape), strict=True)
    ]
    output = helper.make_tensor_value_info("c", element_type, list(product))
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"], name="product")], "g", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [9, 11, 13, 18])
def test_a_product_of_two_vectors_goes_to_tract_as_a_product_of_matrices_bit_for_bit(opset):
    """tract multiplies no two vectors ("a_rank > 1 || b_rank > 1", probed): the row a times the
    column b, squeezed to the scalar, runs there; Unsqueeze and Squeeze take their axes as an
    attribute below opset 13 and as a Constant from it. Every sum is onnxruntime's on the
    original, bit for bit, NaN, infinities, signed zeros and the extremes included."""
    model = _matmul_model([5], [5], opset)
    result = lowering.lower_model(model, target="tract-0.23")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {VECTOR_SAID: 1}
    made = [n.op_type for n in result.model.graph.node if n.op_type != "Constant"]
    assert made == ["Unsqueeze", "Unsqueeze", "MatMul", "Squeeze"]
    axes_as_inputs = [len(n.input) == 2 for n in result.model.graph.node if n.op_type in ("Unsqueeze", "Squeeze")]
    assert axes_as_inputs == [schemas.default_opset(result.model.opset_import) >= 13] * 3
    big = np.finfo(np.float32).max
    rows = [[1.5, -2.0, 0.25, 3.0, -0.0], [np.nan, 1, 2, 3, 4], [np.inf, -1, 0, 1, 2], [big, big, -big, 1, 1],
            [-0.0, -0.0, -0.0, -0.0, -0.0], [1e-45, 1e-45, 3e-39, -1e-40, 0]]  # fmt: skip
    for row in rows:
        feeds = {"a": np.array(row, np.float32), "b": np.array(row[::-1], np.float32)}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.shape == want.shape == () and got.tobytes() == want.tobytes(), row


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE,
                                          TensorProto.INT64])  # fmt: skip
@pytest.mark.parametrize(("a_shape", "b_shape"), [([3], [3, 4]), ([3], [2, 3, 4]), ([3], [5, 1, 3, 2])])
def test_a_product_of_a_vector_and_a_matrix_or_stack_is_promoted_alike(a_shape, b_shape, element_type):
    """A vector a times a matrix or a stack of them, written as the choice writes it: a made a
    row, the row axis squeezed from the product, as numpy's matmul does; onnxruntime gives the
    original's products bit for bit. A matrix times a vector b is not rewritten (onnxruntime
    sums a matrix times a column otherwise, measured)."""
    from lowering.naming import NameAllocator
    from lowering.target_forms import OP_CHOICES

    [choice] = [c for c in OP_CHOICES if c.op_type == "MatMul" and "of a vector" in c.said]
    model = _matmul_model(a_shape, b_shape, 17, element_type)
    shapes = {"a": a_shape, "b": b_shape}
    types = {name: helper.make_tensor_type_proto(element_type, shape) for name, shape in shapes.items()}
    node = model.graph.node[0]
    assert choice.applies(node, None, 13, {}, types)
    nodes = choice.replacement(node, None, {}, NameAllocator({"a", "b", "c"}), 17, types)
    rewritten = helper.make_model(helper.make_graph(nodes, "g", list(model.graph.input), list(model.graph.output)),
                                  opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    onnx.checker.check_model(rewritten, full_check=True)
    rng = np.random.default_rng(0)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    feeds = {name: (rng.standard_normal(shape) * 100).astype(dtype) for name, shape in shapes.items()}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(rewritten, feeds)
    assert got.shape == want.shape == np.matmul(feeds["a"], feeds["b"]).shape and got.tobytes() == want.tobytes()
    transposed = {"a": helper.make_tensor_type_proto(element_type, b_shape[::-1]), "b": types["a"]}
    assert not choice.applies(node, None, 13, {}, transposed)


def test_a_product_of_matrices_or_of_vectors_the_runtime_runs_stays():
    """onnxruntime multiplies two vectors: nothing is chosen; nor for two matrices on tract."""
    for shapes, target in ((([5], [5]), "onnxruntime"), (([2, 5], [5, 3]), "tract-0.23")):
        result = lowering.lower_model(_matmul_model(*shapes, 17), target=target)
        assert [n.op_type for n in result.model.graph.node] == ["MatMul"] and not result.report.forms


def test_a_product_of_two_vectors_in_an_if_branch_goes_as_a_product_of_matrices_too():
    """The product inside an If's then-branch (reading the main graph's a and b): written as the
    row times the column there for tract, the same bits on either branch."""
    scalar = [helper.make_tensor_value_info(name, TensorProto.FLOAT, []) for name in ("then_c", "else_c")]
    then_branch = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["then_c"], name="product")], "then", [],
                                    scalar[:1])  # fmt: skip
    else_branch = helper.make_graph([helper.make_node("ReduceSum", ["a"], ["else_c"], keepdims=0)], "else", [],
                                    scalar[1:])  # fmt: skip
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["c"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         *(helper.make_tensor_value_info(name, TensorProto.FLOAT, [5]) for name in "ab")],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    result = lowering.lower_model(model, target="tract-0.23", fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {VECTOR_SAID: 1}
    [branch] = [g for g in nested_graphs(result.model.graph.node) if g.name == "then"]
    made = [n.op_type for n in branch.node if n.op_type != "Constant"]
    assert made == ["Unsqueeze", "Unsqueeze", "MatMul", "Squeeze"]
    a, b = np.float32([1.5, -0.0, np.inf, 2, 3]), np.float32([2, 1, 0.5, -1, 3])
    for cond in (True, False):
        feeds = {"cond": np.array(cond), "a": a, "b": b}
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
        assert got.shape == want.shape == () and got.tobytes() == want.tobytes()


def _transposes(rng, count: int):
    """``count`` ConvTransposes of 1 to 2 spatial axes, each with ``output_shape`` (up to 3 off
    the full length either way) or ``auto_pad``, of random sizes, strides, dilations, groups,
    output_padding and bias: (node, x, w, b or None)."""
    made = []
    for _ in range(count):
        rank = int(rng.integers(1, 3))
        sizes, kernel = rng.integers(1, 6, rank).tolist(), rng.integers(1, 4, rank).tolist()
        strides, dilations = rng.integers(1, 4, rank).tolist(), rng.integers(1, 3, rank).tolist()
        added = [int(rng.integers(0, max(s, d))) for s, d in zip(strides, dilations, strict=True)]
        mode = str(rng.choice(["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
        group = int(rng.choice([1, 2]))
        attributes = {"strides": strides, "dilations": dilations, "group": group}
        if rng.integers(0, 2):
            attributes["kernel_shape"] = kernel
        if any(added):
            attributes["output_padding"] = added
        if mode != "NOTSET":
            attributes["auto_pad"] = mode
        if mode == "NOTSET" or (mode != "VALID" and rng.integers(0, 2)):
            axes = zip(sizes, kernel, strides, dilations, added, strict=True)
            full = [s * (n - 1) + a + (k - 1) * d + 1 for n, k, s, d, a in axes]
            attributes["output_shape"] = [max(1, length + int(rng.integers(-3, 3))) for length in full]
        x = rng.standard_normal((1, 2 * group, *sizes)).astype(np.float32)
        x.flat[rng.integers(0, x.size, 2)] = [np.inf, np.nan]
        w = rng.standard_normal((2 * group, 3, *kernel)).astype(np.float32)
        b = rng.standard_normal(3 * group).astype(np.float32) if rng.integers(0, 2) else None
        inputs = ["x", "w"] + (["b"] if b is not None else [])
        made.append((helper.make_node("ConvTranspose", inputs, ["y"], **attributes), x, w, b))
    return made


def _transpose_model(node: onnx.NodeProto, x, w, b, opset: int) -> onnx.ModelProto:
    values = [("x", x), ("w", w)] + ([("b", b)] if b is not None else [])
    element_type = helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [helper.make_tensor_value_info(name, element_type, list(v.shape)) for name, v in values]
    output = helper.make_tensor_value_info("y", element_type, [None] * x.ndim)
    graph = helper.make_graph([node], "g", inputs, [output])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@slow_but_a_sample()
@pytest.mark.parametrize("element_type", [np.float32, np.float16])
@pytest.mark.parametrize("opset", [11, 22])
def test_a_transpose_given_its_output_shape_or_auto_pad_gets_pads_giving_the_same_output(opset, element_type):
    """ConvTranspose-11 and -22 of random sizes, strides, dilations, groups, output_padding and
    bias, given output_shape or auto_pad SAME_UPPER, SAME_LOWER or VALID: written with pads (an
    odd total's extra one at the begin for SAME_LOWER and NOTSET, at the end for SAME_UPPER, as
    ONNX says) and output_padding (an output_shape past the full length adds to it), the same
    outputs as onnxruntime's, bit for bit, NaN and inf in x, float32 and float16 (onnxruntime
    transposes no double or bfloat16). Declined where SAME's output would be
    longer than the full length (onnxruntime then gives the full length, not n·s, as ONNX says)
    and where the output_padding would reach the stride (onnxruntime refuses that original)."""
    from lowering.node_forms import node_form

    [choice] = [c for c in OP_CHOICES if c.op_type == "ConvTranspose"]
    version = schemas.version_in_force("ConvTranspose", opset)
    rewritten = declined = 0
    for node, x, w, b in _transposes(np.random.default_rng(opset), 300):
        x, w, b = (None if v is None else v.astype(element_type) for v in (x, w, b))
        model = _transpose_model(node, x, w, b, opset)
        types = {info.name: info.type for info in model.graph.input}
        form = node_form(node, version, set(types), set(), {}, {}, set())
        feeds = {"x": x, "w": w, **({"b": b} if b is not None else {})}
        if not choice.applies(node, form, version, {}, types):
            declined += 1
            continue
        [written] = choice.replacement(node, form, {}, None, opset, types)
        assert {a.name for a in written.attribute}.isdisjoint({"auto_pad", "output_shape"})
        made = _transpose_model(written, x, w, b, opset)
        onnx.checker.check_model(made, full_check=True)
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
        assert got.shape == want.shape and got.tobytes() == want.tobytes(), helper.printable_node(node)
        rewritten += 1
    assert rewritten > 150 and declined > 30


def test_a_transpose_keeps_output_shape_where_no_pads_state_it():
    """Declined: SAME_UPPER along an axis whose full length 2 falls short of n·s = 3 (onnxruntime
    gives 2, ONNX says 3); an output_shape 3 past the full length with stride 2 (output_padding
    3 is not below the stride; onnxruntime refuses it); an output_shape naming the batch and
    channel axes too; pads stated beside output_shape; an input of unknown size; ConvTranspose-1
    (the choice is measured from version 11 on)."""
    from lowering.node_forms import node_form

    [choice] = [c for c in OP_CHOICES if c.op_type == "ConvTranspose"]
    x, w = np.zeros((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.float32)
    declined = [
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[3], auto_pad="SAME_UPPER", output_padding=[1]),
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], output_shape=[4]),
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[1, 1, 1]),
        helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[1], pads=[0, 0]),
    ]
    types = {name: helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 1, 1]) for name in ("x", "w")}
    for node in declined:
        assert not choice.applies(node, node_form(node, 22, {"x", "w"}, set(), {}, {}, set()), 22, {}, types)
    taken = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2], output_shape=[2])
    assert choice.applies(taken, node_form(taken, 22, {"x", "w"}, set(), {}, {}, set()), 22, {}, types)
    assert not choice.applies(taken, node_form(taken, 1, {"x", "w"}, set(), {}, {}, set()), 1, {}, types)
    unknown = {**types, "x": helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 1, "n"])}
    assert not choice.applies(taken, node_form(taken, 22, {"x", "w"}, set(), {}, {}, set()), 22, {}, unknown)
    [written] = choice.replacement(taken, None, {}, None, 22, types)  # (full length 1: output_padding 1)
    assert {a.name: helper.get_attribute_value(a) for a in written.attribute} == {"strides": [2], "output_padding": [1]}
    feeds = {"x": x + 1, "w": w + 2}
    want = run_onnxruntime(_transpose_model(taken, x, w, None, 22), feeds)[0]
    assert run_onnxruntime(_transpose_model(written, x, w, None, 22), feeds)[0].tobytes() == want.tobytes()


TRANSPOSE_SAID = (
    "ConvTranspose with output_shape or auto_pad SAME or VALID -> the pads and output_padding that give the same output"
)


@pytest.mark.parametrize("case_name", ["test_convtranspose_output_shape", "test_convtranspose_autopad_same"])
def test_a_transpose_gets_explicit_pads_where_the_runtime_gets_output_shape_or_auto_pad_wrong(case_name):
    """The backend's output_shape case (TVM gets it wrong) and SAME_UPPER case (OpenVINO 2024.6
    does) on a runtime that runs their forms wrong and explicit pads and output_padding right:
    written so, the backend's expected outputs bit for bit; kept where it runs them right."""
    [case] = [case for case in node_cases() if case.name == case_name]
    node = case.model.graph.node[0]
    implicit = "output_shape" if "output_shape" in case_name else "auto_pad"
    cases = {
        case_name: ("ConvTranspose", 22, "FLOAT", "wrong"),
        "test_convtranspose_pad": ("ConvTranspose", 22, "FLOAT", "right"),
        "test_convtranspose_pads": ("ConvTranspose", 22, "FLOAT", "right"),
        "test_convtranspose": ("ConvTranspose", 22, "FLOAT", "right"),
    }
    result = lowering.lower_model(case.model, target=_profile_of("transpose-wrong", 22, cases), fold="none")
    assert result.report.forms == {TRANSPOSE_SAID: 1}
    [written] = result.model.graph.node
    assert implicit in {a.name for a in node.attribute} and implicit not in {a.name for a in written.attribute}
    inputs, [expected] = case.data_sets[0]
    feeds = dict(zip([info.name for info in case.model.graph.input], inputs, strict=True))
    [got] = run_onnxruntime(result.model, feeds)
    assert got.tobytes() == np.asarray(expected, np.float32).tobytes()
    kept = lowering.lower_model(case.model, target=_profile_of("transpose-right", 22, {**cases, case_name: (
        "ConvTranspose", 22, "FLOAT", "right")}), fold="none")  # fmt: skip
    assert not kept.report.forms and list(kept.model.graph.node) == [node]


@pytest.mark.parametrize("opset", [11, 22])
@pytest.mark.parametrize("element_type", [np.float32, np.float16])
def test_a_global_max_pool_is_the_max_pool_of_one_window_bit_for_bit(opset, element_type):
    """GlobalMaxPool of 1 to 3 spatial axes of random sizes, NaN, ±inf and ±0 among the values,
    written as MaxPool with the spatial sizes as its kernel: onnxruntime's maxima bit for bit
    (ReduceMax would differ: it takes a NaN first in a window, GlobalMaxPool passes it by).
    Declined where a spatial size is unknown or 0."""
    from lowering.node_forms import node_form

    [choice] = [c for c in OP_CHOICES if c.op_type == "GlobalMaxPool"]
    rng = np.random.default_rng(opset)
    node = helper.make_node("GlobalMaxPool", ["x"], ["y"], name="pool")
    version = schemas.version_in_force("GlobalMaxPool", opset)
    for _ in range(40):
        x = rng.standard_normal((2, 3, *rng.integers(1, 6, int(rng.integers(1, 4))).tolist())).astype(element_type)
        x.flat[rng.integers(0, x.size, 3)] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], 3)
        elem = helper.np_dtype_to_tensor_dtype(x.dtype)
        types = {"x": helper.make_tensor_type_proto(elem, list(x.shape))}
        form = node_form(node, version, {"x"}, set(), {}, {}, set())
        assert choice.applies(node, form, version, {}, types)
        [written] = choice.replacement(node, form, {}, None, opset, types)
        assert written.op_type == "MaxPool" and written.name == "pool"
        models = [
            helper.make_model(helper.make_graph([n], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
                                                [helper.make_tensor_value_info("y", elem, None)]),
                              opset_imports=[helper.make_opsetid("", opset)])
            for n in (node, written)
        ]  # fmt: skip
        [want], [got] = (run_onnxruntime(m, {"x": x}) for m in models)
        assert got.shape == want.shape == (2, 3, *[1] * (x.ndim - 2)) and got.tobytes() == want.tobytes()
    unknown = {"x": helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3, "h", 4])}
    assert not choice.applies(node, node_form(node, version, {"x"}, set(), {}, {}, set()), version, {}, unknown)
    empty = {"x": helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 2, 0, 3])}  # (MaxPool takes no kernel 0)
    assert not choice.applies(node, node_form(node, version, {"x"}, set(), {}, {}, set()), version, {}, empty)


def test_a_global_max_pool_becomes_a_max_pool_where_the_runtime_converts_none():
    """onnx2torch converts no GlobalMaxPool, and MaxPool: the backend's case is written as the
    MaxPool of its 5 by 5 window, the case's expected outputs; kept where GlobalMaxPool runs."""
    [case] = [case for case in node_cases() if case.name == "test_globalmaxpool"]
    cases = {
        "test_globalmaxpool": ("GlobalMaxPool", 22, "FLOAT", "fails"),
        "test_maxpool_2d_default": ("MaxPool", 22, "FLOAT", "right"),
        "test_maxpool_1d_default": ("MaxPool", 22, "FLOAT", "right"),
    }
    said = "GlobalMaxPool(x) -> MaxPool(x) of one window, x's spatial sizes (the runtime runs that better)"
    result = lowering.lower_model(case.model, target=_profile_of("no-global-max", 22, cases), fold="none")
    assert result.report.forms == {said: 1}
    [pooled] = result.model.graph.node
    assert pooled.op_type == "MaxPool" and helper.get_attribute_value(pooled.attribute[0]) == [5, 5]
    inputs, [expected] = case.data_sets[0]
    [got] = run_onnxruntime(result.model, {case.model.graph.input[0].name: inputs[0]})
    assert got.tobytes() == np.asarray(expected).tobytes()
    runs = {**cases, "test_globalmaxpool": ("GlobalMaxPool", 22, "FLOAT", "right")}
    kept = lowering.lower_model(case.model, target=_profile_of("global-max", 22, runs), fold="none")
    assert not kept.report.forms and [n.op_type for n in kept.model.graph.node] == ["GlobalMaxPool"]


def _scatters(rng, count: int):
    """``count`` ScatterElements of ranks 1 to 3, random sizes and axis (negative too), indices
    int64 or int32 that repeat no position (as ONNX requires), some counted from the end, on
    float32, float16, int64 and bool data: (node, feeds)."""
    made = []
    for _ in range(count):
        rank = int(rng.integers(1, 4))
        shape = rng.integers(1, 5, rank).tolist()
        axis = int(rng.integers(-rank, rank))
        size = shape[axis % rank]
        taken = [int(rng.integers(1, n + 1)) for n in shape]
        # (each slice along the axis a permutation's first positions, some counted from the end)
        along = axis % rank
        slices = int(np.prod(taken)) // taken[along]
        indices = np.stack([rng.permutation(size)[: taken[along]] for _ in range(slices)])
        indices = np.moveaxis(indices.reshape([*np.delete(taken, along), taken[along]]), -1, along)
        indices = np.where(rng.integers(0, 2, indices.shape) == 1, indices - size, indices)
        element_type = rng.choice([np.float32, np.float16, np.int64, np.bool_])
        feeds = {
            "data": (rng.standard_normal(shape) * 3).astype(element_type),
            "i": indices.astype(rng.choice([np.int64, np.int32])),
            "u": (rng.standard_normal(taken) * 3).astype(element_type),
        }
        made.append((helper.make_node("ScatterElements", ["data", "i", "u"], ["y"], name="scatter", axis=axis), feeds))
    return made


@slow_but_a_sample()
@pytest.mark.parametrize("opset", [11, 13, 18])
def test_a_scatter_of_elements_is_the_scatter_of_their_coordinates_bit_for_bit(opset):
    """ScatterElements of random ranks, sizes, axes and types, negative indices (none repeating
    a position, as ONNX requires), written as ScatterND of each element's coordinates (its own
    position, its index along the axis, wrapped where negative: each coordinate in [0, size)):
    onnxruntime's outputs bit for bit. Declined with a reduction, where the data's rank is
    unknown or 0, and where the axis is out of range."""
    from lowering.node_forms import node_form

    [choice] = [c for c in OP_CHOICES if c.op_type == "ScatterElements" and not c.free_of]
    version = schemas.version_in_force("ScatterElements", opset)
    for node, feeds in _scatters(np.random.default_rng(opset), 60):
        inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
                  for n, v in feeds.items()]  # fmt: skip
        output = helper.make_tensor_value_info("y", inputs[0].type.tensor_type.elem_type, list(feeds["data"].shape))
        model = helper.make_model(helper.make_graph([node], "g", inputs, [output]),
                                  opset_imports=[helper.make_opsetid("", opset)])  # fmt: skip
        types = {info.name: info.type for info in model.graph.input}
        shapes = {name: tuple(value.shape) for name, value in feeds.items()}
        element_types = {name: types[name].tensor_type.elem_type for name in feeds}
        form = node_form(node, version, set(feeds), set(), shapes, element_types, set())
        assert choice.applies(node, form, version, {}, types)
        written = choice.replacement(node, form, {}, NameAllocator(model=model), opset, types)
        assert written[-1].op_type == "ScatterND" and list(written[-1].output) == ["y"]
        made = helper.make_model(helper.make_graph(written, "g", inputs, [output]),
                                 opset_imports=[helper.make_opsetid("", opset)])  # fmt: skip
        onnx.checker.check_model(made, full_check=True)
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(made, feeds)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), helper.printable_node(node)
        coordinates = helper.make_tensor_value_info(written[-1].input[1], TensorProto.INT64, None)
        made.graph.output.append(coordinates)  # (the wrap: ScatterND of onnxruntime wraps negatives itself)
        [_, at] = run_onnxruntime(made, feeds)
        assert at.shape == (*feeds["i"].shape, feeds["data"].ndim)
        assert (at >= 0).all() and (at < np.array(feeds["data"].shape)).all()
    if version >= 16:
        added = helper.make_node("ScatterElements", ["data", "i", "u"], ["y"], reduction="add")
        form = node_form(added, version, {"data", "i", "u"}, set(), {}, element_types, set())
        assert not choice.applies(added, form, version, {}, types)
    unknown = node_form(node, version, {"data", "i", "u"}, set(), {}, element_types, set())
    assert not choice.applies(node, unknown, version, {}, {})
    scalar = node_form(node, version, {"data", "i", "u"}, set(), dict.fromkeys(("data", "i", "u"), ()),
                       element_types, set())  # fmt: skip
    assert not choice.applies(node, scalar, version, {}, {})
    beyond = helper.make_node("ScatterElements", ["data", "i", "u"], ["y"], axis=3)
    assert not choice.applies(beyond, node_form(beyond, version, {"data", "i", "u"}, set(), {
        name: (2, 2, 2) for name in ("data", "i", "u")}, element_types, set()), version, {}, {})  # fmt: skip


def test_a_scatter_of_elements_becomes_a_scatter_nd_where_the_runtime_converts_none():
    """onnx2torch converts no ScatterElements: the backend's negative-indices case is written as
    ScatterND of coordinates, the case's expected outputs; kept where ScatterElements runs."""
    [case] = [case for case in node_cases() if case.name == "test_scatter_elements_with_negative_indices"]
    said = ("ScatterElements(data, i, u) -> ScatterND(data, each element's coordinates, i along the axis, u) "
            "(the runtime runs those better)")  # fmt: skip
    for verdict, forms in (("fails", {said: 1}), ("right", {})):
        cases = {case.name: ("ScatterElements", 18, "FLOAT", verdict)}
        result = lowering.lower_model(case.model, target=_profile_of("scatter", 18, cases), fold="none")
        assert result.report.forms == forms
        inputs, [expected] = case.data_sets[0]
        feeds = dict(zip([info.name for info in case.model.graph.input], inputs, strict=True))
        [got] = run_onnxruntime(result.model, feeds)
        assert got.tobytes() == np.asarray(expected).tobytes()
        ops = {n.op_type for n in result.model.graph.node}
        assert ("ScatterND" in ops and "ScatterElements" not in ops) if forms else ops == {"ScatterElements"}


def _case_in_both_branches(case) -> onnx.ModelProto:
    """y = If(cond, then: the case's node, else: the same node), reading the main graph's inputs."""
    node = case.model.graph.node[0]
    output = case.model.graph.output[0]

    def branch(name: str) -> onnx.GraphProto:
        copied = onnx.NodeProto()
        copied.CopyFrom(node)
        copied.output[0] = f"{name}_y"
        typed = onnx.ValueInfoProto()
        typed.CopyFrom(output)
        typed.name = f"{name}_y"
        return helper.make_graph([copied], name, [], [typed])

    if_node = helper.make_node("If", ["cond"], [output.name], then_branch=branch("then"), else_branch=branch("else"))
    graph = helper.make_graph([if_node], "g", [*case.model.graph.input, helper.make_tensor_value_info(
        "cond", TensorProto.BOOL, [])], [output])  # fmt: skip
    return helper.make_model(graph, opset_imports=case.model.opset_import)


@pytest.mark.parametrize(
    ("case_name", "op_type", "kept_case", "said"),
    [
        ("test_globalmaxpool", "GlobalMaxPool", "test_maxpool_2d_default",
         "GlobalMaxPool(x) -> MaxPool(x) of one window, x's spatial sizes (the runtime runs that better)"),
        ("test_scatter_elements_with_negative_indices", "ScatterElements", "test_scatternd",
         "ScatterElements(data, i, u) -> ScatterND(data, each element's coordinates, i along the axis, u) "
         "(the runtime runs those better)"),
        ("test_convtranspose_output_shape", "ConvTranspose", "test_convtranspose_pads", TRANSPOSE_SAID),
    ],
)  # fmt: skip
def test_the_newer_forms_are_written_in_both_branches_of_an_if(case_name, op_type, kept_case, said):
    """GlobalMaxPool, ScatterElements and ConvTranspose given output_shape, each the node of both
    branches of an If, on a runtime that fails them and runs the form's op: written in each
    branch, the case's expected outputs bit for bit whichever branch runs."""
    [case] = [case for case in node_cases() if case.name == case_name]
    opset = schemas.default_opset(case.model.opset_import)
    written = {"GlobalMaxPool": "MaxPool", "ScatterElements": "ScatterND", "ConvTranspose": "ConvTranspose"}[op_type]
    cases = {
        case_name: (op_type, schemas.version_in_force(op_type, opset), "FLOAT", "fails"),
        kept_case: (written, schemas.version_in_force(written, opset), "FLOAT", "right"),
        "test_if": ("If", schemas.version_in_force("If", opset), "BOOL", "right"),
    }
    model = _case_in_both_branches(case)
    result = lowering.lower_model(model, target=_profile_of("newer-forms", opset, cases), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {said: 2}
    assert op_type == written or op_type not in {
        n.op_type for g in nested_graphs(result.model.graph.node) for n in g.node
    }
    inputs, [expected] = case.data_sets[0]
    for cond in (True, False):
        feeds = {
            **dict(zip([info.name for info in case.model.graph.input], inputs, strict=True)),
            "cond": np.array(cond),
        }
        [got] = run_onnxruntime(result.model, feeds)
        assert got.tobytes() == np.asarray(expected).astype(got.dtype).tobytes()


def _indexing_choice(op_type: str):
    [choice] = [c for c in OP_CHOICES if c.op_type == op_type and c.free_of == NEGATIVE_INDICES]
    return choice


# (op, data shape, indices shape, axis): every index of [-s, s - 1] along the axis, s the data's size there
INDEXINGS = [
    ("Gather", (5, 3), (2, 5), 0),
    ("Gather", (3, 4), (), -1),
    ("GatherElements", (3, 4), (6, 4), 0),
    ("GatherElements", (2, 7), (2, 14), -1),
    ("ScatterElements", (3, 4), (1, 4), 0),
    ("ScatterElements", (2, 5), (2, 5), 1),
]


@pytest.mark.parametrize("op_type, data_shape, indices_shape, axis", INDEXINGS)
@pytest.mark.parametrize("index_type", [TensorProto.INT32, TensorProto.INT64])
@pytest.mark.parametrize("known", ["static shape", "dynamic shape", "constant indices"])
def test_indices_made_non_negative_give_the_same_bits(op_type, data_shape, indices_shape, axis, index_type, known):
    """op(data, Where(i < 0, i + s, i)) gives op(data, i) bit for bit in onnxruntime for every
    index of [-s, s - 1] (each a feed of its own where they would collide in a scatter), the
    data's size s read from its shape or computed (Shape, Gather), constant indices written
    non-negative; the data float values of every class (NaN payloads, ±0, ±inf, subnormals)."""
    from lowering.samples import edge_values

    size = data_shape[axis]
    count = int(np.prod(indices_shape, dtype=np.int64))
    every = np.arange(-size, size)
    index_dtype = helper.tensor_dtype_to_np_dtype(index_type)
    if op_type == "ScatterElements":  # (one index per column: no two writes to one element)
        index_sets = [np.full(indices_shape, i, index_dtype) for i in every]
    else:
        index_sets = [np.resize(np.roll(every, k), count).reshape(indices_shape).astype(index_dtype) for k in (0, 3)]
    data = np.resize(edge_values(TensorProto.FLOAT), int(np.prod(data_shape))).reshape(data_shape)
    dims = list(data_shape) if known != "dynamic shape" else [f"d{i}" for i in range(len(data_shape))]
    for indices in index_sets:
        inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, dims)]
        feeds = {"data": data}
        initializers = []
        if known == "constant indices":
            initializers.append(numpy_helper.from_array(indices, "indices"))
        else:
            inputs.append(helper.make_tensor_value_info("indices", index_type, list(indices_shape)))
            feeds["indices"] = indices
        names = ["data", "indices"]
        if op_type == "ScatterElements":
            inputs.append(helper.make_tensor_value_info("updates", TensorProto.FLOAT, list(indices_shape)))
            feeds["updates"] = np.arange(1, count + 1, dtype=np.float32).reshape(indices_shape)
            names.append("updates")
        node = helper.make_node(op_type, names, ["y"], name="indexed", axis=axis)
        rank = {"Gather": len(data_shape) - 1 + len(indices_shape), "GatherElements": len(indices_shape)}
        output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * rank.get(op_type, len(data_shape)))
        graph = helper.make_graph([node], "g", inputs, [output], initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        types = {info.name: info.type for info in inputs}
        constants = {t.name: t for t in initializers}
        choice = _indexing_choice(op_type)
        version = schemas.version_in_force(op_type, 18)
        if known == "constant indices" and not (indices < 0).any():  # (nothing to write)
            assert not choice.applies(node, None, version, constants, types)
            continue
        assert choice.applies(node, None, version, constants, types)
        made = choice.replacement(node, None, constants, NameAllocator(model=model), 18, types)
        assert [n.op_type for n in made][-1] == op_type
        if known == "constant indices":
            assert [n.op_type for n in made] == ["Constant", op_type]
        elif known == "dynamic shape":
            assert "Shape" in [n.op_type for n in made]
        written = onnx.ModelProto()
        written.CopyFrom(model)
        del written.graph.node[:]
        written.graph.node.extend(made)
        onnx.checker.check_model(written, full_check=True)
        producers = {name: n for n in written.graph.node for name in n.output}
        assert indices_never_negative(made[-1], producers, constants_by_name(written), inferred_types(written))
        [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(written, feeds)
        assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    "wrong", ["none", "size of another axis", "Less than 1", "Add of other indices", "Shape of other data"]
)
def test_indices_written_otherwise_are_not_known_non_negative(wrong):
    """Only Where(Less(i, 0), Add(i, s), i) with s the data's size along the axis (here
    Gather(Shape(data), 1)) makes every index of [-s, s - 1] non-negative: another s, another
    bound or other values are not judged so."""
    data = helper.make_tensor_value_info("data", TensorProto.FLOAT, ["a", "b"])
    other = helper.make_tensor_value_info("other", TensorProto.FLOAT, ["a", "b"])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [2, 2])
    j = helper.make_tensor_value_info("j", TensorProto.INT64, [2, 2])
    bound = 1 if wrong == "Less than 1" else 0
    axis = 0 if wrong == "size of another axis" else 1
    nodes = [
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.array(bound, np.int64), "zero")),
        helper.make_node("Constant", [], ["at"], value=numpy_helper.from_array(np.array(axis, np.int64), "at")),
        helper.make_node("Shape", ["other" if wrong == "Shape of other data" else "data"], ["shape"]),
        helper.make_node("Gather", ["shape", "at"], ["size"]),
        helper.make_node("Less", ["i", "zero"], ["negative"]),
        helper.make_node("Add", ["j" if wrong == "Add of other indices" else "i", "size"], ["wrapped"]),
        helper.make_node("Where", ["negative", "wrapped", "i"], ["k"]),
        helper.make_node("GatherElements", ["data", "k"], ["y"], axis=1),
    ]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    model = helper.make_model(helper.make_graph(nodes, "g", [data, other, i, j], [y]),
                              opset_imports=[helper.make_opsetid("", 18)])  # fmt: skip
    producers = {name: n for n in model.graph.node for name in n.output}
    known = indices_never_negative(nodes[-1], producers, constants_by_name(model), inferred_types(model))
    assert known == (wrong == "none")


def test_indices_known_non_negative_are_left_as_they_are():
    """Constant indices holding no negative value, or of a type no Less takes, need no Where."""
    choice = _indexing_choice("GatherElements")
    node = helper.make_node("GatherElements", ["data", "indices"], ["y"], axis=0)
    types = {"data": helper.make_tensor_type_proto(TensorProto.FLOAT, [3, 3])}
    constants = {"indices": numpy_helper.from_array(np.array([[0, 2, 1]], np.int64), "indices")}
    types["indices"] = helper.make_tensor_type_proto(TensorProto.INT64, [1, 3])
    assert not choice.applies(node, None, 13, constants, types)
    constants["indices"] = numpy_helper.from_array(np.array([[0, -1, 1]], np.int64), "indices")
    assert choice.applies(node, None, 13, constants, types)
    types["indices"] = helper.make_tensor_type_proto(TensorProto.FLOAT, [1, 3])
    assert not choice.applies(node, None, 13, {}, types)


def test_a_runtime_wrong_only_on_negative_indices_is_given_them_non_negative():
    """onnx2torch fails GatherElements' case of negative indices alone (torch.gather takes none):
    partly, on negative indices (a kind of value its cases hold, not a form); --target writes the
    indices through Where(i < 0, i + s, i), which the verdict on cases without negative indices
    calls supported (check of the result finds nothing), and the result verifies bit for bit.
    OpenVINO 2024.6 reads -1 past the data too, but computes the int64 Less, Add and Where wrong
    past 2^24: the form is written there where the data's length s along the axis is static (every
    index of [-s, s - 1], and i + s, within 2^24), the node kept where it is not known; check of
    the result knows its Less, Add and Where within 2^24 too."""
    from lowering.runtime_profiles import load_profile

    [case] = [c for c in node_cases() if c.name == "test_gather_elements_negative_indices"]
    onnx2torch = load_profile("onnx2torch")
    [finding] = [f for f in check_model(case.model, onnx2torch) if f.op_type == "GatherElements"]
    assert finding.verdict.kind == PARTLY and finding.verdict.wrong_values == NEGATIVE_INDICES
    assert "(each with negative indices)" in finding.verdict.why
    free = onnx2torch.verdict("GatherElements", 13, "FLOAT", None, NEGATIVE_INDICES)
    assert free.kind == SUPPORTED
    result = lowering.lower_model(case.model, target="onnx2torch")
    assert [n.op_type for n in result.model.graph.node][-2:] == ["Where", "GatherElements"]
    feeds = dict(zip([i.name for i in case.model.graph.input], case.data_sets[0][0], strict=True))
    assert lowering.verify(case.model, result.model, inputs=[feeds]).match
    assert not [f for f in check_model(result.model, onnx2torch) if f.op_type == "GatherElements"]
    again = lowering.lower_model(result.model, target="onnx2torch")  # (indices so written are known)
    assert [n.op_type for n in again.model.graph.node].count("Where") == 1 and not again.report.forms
    written = lowering.lower_model(case.model, target="openvino-2024.6")
    assert [n.op_type for n in written.model.graph.node][-2:] == ["Where", "GatherElements"]
    assert lowering.verify(case.model, written.model, inputs=[feeds]).match
    openvino = load_profile("openvino-2024.6")  # (its Less, Add, Where known within 2^24: no note)
    assert not [f for f in check_model(written.model, openvino) if f.verdict.kind != SUPPORTED]
    assert not [line for line in lowering.lower_model(written.model, target=openvino).report.lines() if "2^24" in line]
    dynamic = onnx.ModelProto()
    dynamic.CopyFrom(case.model)
    for dim in dynamic.graph.input[0].type.tensor_type.shape.dim:
        dim.dim_param = "n"
    kept = lowering.lower_model(dynamic, target="openvino-2024.6")
    assert [n.op_type for n in kept.model.graph.node] == ["GatherElements"]


@pytest.mark.parametrize("target", ["onnx2torch", "openvino-2024.6"])
def test_constant_negative_indices_are_written_non_negative_where_the_runtime_is_wrong_on_them(target):
    """GatherElements along axis 1 of constant indices holding -1 and -3: judged by the cases of
    negative indices (check and the choices alike), it is not right on either runtime, and the
    indices are written non-negative as a Constant (no Less, Add or Where, so OpenVINO's int64
    arithmetic is not asked for); check of the result finds nothing, and it verifies."""
    data = helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    indices = numpy_helper.from_array(np.array([[-1, 0], [2, -3]], np.int64), "idx")
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], name="gathered", axis=1)
    graph = helper.make_graph([node], "g", [data], [y], [indices])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    [finding] = [f for f in check_model(model, target) if f.op_type == "GatherElements"]
    assert finding.verdict.kind != SUPPORTED and "Where(i < 0, i + s, i)" in finding.fix
    result = lowering.lower_model(model, target=target)
    assert [n.op_type for n in result.model.graph.node] == ["Constant", "GatherElements"]
    written = numpy_helper.to_array(result.model.graph.node[0].attribute[0].t)
    assert written.tolist() == [[3, 0], [2, 1]]
    assert not [f for f in check_model(result.model, target) if f.op_type == "GatherElements"]
    assert lowering.verify(model, result.model).match


def test_a_graph_input_hiding_an_outer_constant_of_its_name_is_not_that_constant():
    """A Loop body's GatherElements reads the loop's carried indices, named as a Constant outside
    that holds -1: those indices are the fed ones, not the constant, so onnx2torch's verdict
    stays partly on negative indices, and the choice writes them through the Where, not as the
    outer constant made non-negative (onnx2torch takes no Loop: the choice alone is made here)."""
    from lowering.runtime_profiles import load_profile
    from lowering.target_forms import replace_ops

    outer = numpy_helper.from_array(np.array([[0, -1, 2], [1, 1, -3]], np.int64), "idx")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["idx"], ["idx_out"]),
         helper.make_node("GatherElements", ["data", "idx"], ["y"], name="gathered", axis=0)],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("idx_out", TensorProto.INT64, [2, 3]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )  # fmt: skip
    nodes = [
        helper.make_node("Constant", [], ["idx"], value=outer),
        helper.make_node("Constant", [], ["trips"], value=numpy_helper.from_array(np.array(1, np.int64), "trips")),
        helper.make_node("Constant", [], ["go"], value=numpy_helper.from_array(np.array(True), "go")),
        helper.make_node("Loop", ["trips", "go", "start"], ["last", "ys"], body=body),
        helper.make_node("Add", ["idx", "last"], ["sum"]),
    ]
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3, 3]),
              helper.make_tensor_value_info("start", TensorProto.INT64, [2, 3])]  # fmt: skip
    outputs = [helper.make_tensor_value_info("ys", TensorProto.FLOAT, [1, 2, 3]),
               helper.make_tensor_value_info("sum", TensorProto.INT64, [2, 3])]  # fmt: skip
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 13)]
    )
    onnx.checker.check_model(model, full_check=True)
    [finding] = [f for f in check_model(model, "onnx2torch") if f.op_type == "GatherElements"]
    assert finding.verdict.wrong_values == NEGATIVE_INDICES
    replaced = onnx.ModelProto()
    replaced.CopyFrom(model)
    made = replace_ops(replaced, 13, form_judge(replaced, load_profile("onnx2torch"), 13))
    assert sum(made.values()) == 1
    [body_out] = [a.g for n in replaced.graph.node if n.op_type == "Loop" for a in n.attribute]
    assert [n.op_type for n in body_out.node][-2:] == ["Where", "GatherElements"]
    feeds = {"data": np.arange(9, dtype=np.float32).reshape(3, 3), "start": np.array([[2, 0, -1], [-3, 1, 0]])}
    assert lowering.verify(model, replaced, inputs=[feeds]).match


def test_the_nodes_a_choice_writes_are_judged_by_their_own_kinds_too(monkeypatch):
    """GatherElements of fed indices on data of a dynamic shape is written with the data's size
    Gather(Shape(data), axis): on a runtime wrong on int64 Gather of negative indices too
    (onnx2torch's profile, every other int64 Gather-13 case made one of negative indices that
    fails), that Gather, of a constant index, is judged by the cases free of them, so the
    choice is still made; judged by all its cases it would be partly, no better than the node."""
    import json

    from lowering import runtime_profiles, value_kinds
    from lowering.runtime_profiles import PROFILES

    data = json.loads((PROFILES / "onnx2torch.json").read_text())
    made_negative = sorted(
        name for name, case in data["cases"].items()
        if case["op"] == "Gather" and case["type"] == "INT64" and case["version"] == 13 and case["verdict"] == "right"
    )[::2]  # fmt: skip
    for name in made_negative:
        data["cases"][name]["verdict"] = "fails"
    kinds = dict(value_kinds.cases_of_values())
    kinds[NEGATIVE_INDICES] = kinds[NEGATIVE_INDICES] | set(made_negative)
    monkeypatch.setattr(runtime_profiles, "cases_of_values", lambda: kinds)
    profile = profile_from_data(data)
    assert profile.verdict("Gather", 13, "INT64", None).kind == PARTLY
    assert profile.verdict("Gather", 13, "INT64", None, NEGATIVE_INDICES).kind == SUPPORTED
    x = helper.make_tensor_value_info("data", TensorProto.FLOAT, ["n", 3])
    i = helper.make_tensor_value_info("idx", TensorProto.INT64, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    node = helper.make_node("GatherElements", ["data", "idx"], ["y"], name="gathered", axis=0)
    model = helper.make_model(helper.make_graph([node], "g", [x, i], [y]), opset_imports=[helper.make_opsetid("", 13)])
    result = lowering.lower_model(model, target=profile)
    ops = [n.op_type for n in result.model.graph.node]
    assert "Shape" in ops and ops[-2:] == ["Where", "GatherElements"], ops
    feeds = {"data": np.arange(9, dtype=np.float32).reshape(3, 3), "idx": np.array([[-1, 0, 2], [1, -3, -2]])}
    assert lowering.verify(model, result.model, inputs=[feeds]).match


def test_one_blocker_of_a_node_without_a_name_names_its_op():
    """A model refused for one node says that node's op and version first, as each of several
    blockers is listed: a node may have no name to find it by."""
    model = _two_input_model("Max", TensorProto.FLOAT, TensorProto.FLOAT, opset=13)
    model.graph.node[0].name = ""
    with pytest.raises(TargetRefused, match=r"^Max-13 at graph '[^']*': Max is not in js/web/docs/webgpu-operators.md"):
        lowering.lower_model(model, target="webgpu")


def _expand_choice():
    [choice] = [c for c in OP_CHOICES if c.op_type == "Expand" and c.free_of == ONE_KEEPS_A_LENGTH]
    return choice


# (input shape, shape fed): a 1 keeping the input's length, shapes of either rank longer, a 0 length
EXPANSIONS = [
    ((3, 1), [2, 1, 6]),
    ((2, 3, 4), [3, 1]),
    ((2, 1, 4), [1, 5, 1]),
    ((4,), [1, 1, 1]),
    ((0, 1), [1, 3]),
    ((1, 1), [1, 0]),
    ((2, 3), [2, 3]),
]


@pytest.mark.parametrize("data_shape, shape", EXPANSIONS)
@pytest.mark.parametrize("static", [True, False])
@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT8])
def test_an_expand_shape_naming_the_lengths_gives_the_same_bits(data_shape, shape, static, element_type):
    """Expand(x, Where(s = 1, x's lengths, s)), the two aligned at their last axes, gives
    Expand(x, s) bit for bit in onnxruntime (float values of every class), x's lengths a
    constant where its shape is static, else Shape(x); the shape written is known to hold no 1
    where x's length is not 1, so the choice no longer applies to the result's kind."""
    from lowering.samples import edge_values

    dims = list(data_shape) if static else [f"d{i}" for i in range(len(data_shape))]
    x = helper.make_tensor_value_info("x", element_type, dims)
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [len(shape)])
    y = helper.make_tensor_value_info("y", element_type, [None] * max(len(data_shape), len(shape)))
    node = helper.make_node("Expand", ["x", "s"], ["y"], name="expanded")
    model = helper.make_model(helper.make_graph([node], "g", [x, s], [y]), opset_imports=[helper.make_opsetid("", 18)])
    types = {info.name: info.type for info in (x, s)}
    choice = _expand_choice()
    assert choice.applies(node, None, 13, {}, types)
    made = choice.replacement(node, None, {}, NameAllocator(model=model), 18, types)
    assert [n.op_type for n in made][-3:] == ["Equal", "Where", "Expand"]
    assert ("Shape" in [n.op_type for n in made]) == (not static)
    written = onnx.ModelProto()
    written.CopyFrom(model)
    del written.graph.node[:]
    written.graph.node.extend(made)
    onnx.checker.check_model(written, full_check=True)
    producers = {name: n for n in written.graph.node for name in n.output}
    assert shape_names_the_lengths(made[-1], producers, constants_by_name(written), inferred_types(written))
    data = np.resize(edge_values(element_type), int(np.prod(data_shape))).reshape(data_shape)
    feeds = {"x": data, "s": np.array(shape, np.int64)}
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(written, feeds)
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def _names_the_lengths(nodes: list, inputs: list) -> bool:
    """Whether the last of ``nodes`` (an Expand) is known to be given a shape naming x's lengths."""
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)
    model = make_model(nodes, inputs, [y], opset=18)
    producers = {name: n for n in model.graph.node for name in n.output}
    return shape_names_the_lengths(nodes[-1], producers, constants_by_name(model), inferred_types(model))


def _int64_constant(name: str, values) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, np.int64), name))


@pytest.mark.parametrize("wrong", ["none", "Equal to 2", "Where of another shape", "Shape of another input"])
def test_a_shape_written_otherwise_is_not_known_to_name_the_lengths(wrong):
    """Only Where(Equal(s, 1), Shape(x), s) names x's lengths where s says 1."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])
    other = helper.make_tensor_value_info("other", TensorProto.FLOAT, ["a", "b"])
    s, t = (helper.make_tensor_value_info(name, TensorProto.INT64, [2]) for name in ("s", "t"))
    nodes = [
        _int64_constant("one", 2 if wrong == "Equal to 2" else 1),
        helper.make_node("Shape", ["other" if wrong == "Shape of another input" else "x"], ["lengths"]),
        helper.make_node("Equal", ["s", "one"], ["keeps"]),
        helper.make_node("Where", ["keeps", "lengths", "t" if wrong == "Where of another shape" else "s"], ["stated"]),
        helper.make_node("Expand", ["x", "stated"], ["y"]),
    ]
    assert _names_the_lengths(nodes, [x, other, s, t]) == (wrong == "none")


@pytest.mark.parametrize("lengths, named", [([1, 2, 3], True), ([1, 3, 3], False), ("2s", False), ("1s", True)])
def test_lengths_led_by_ones_or_constant_name_the_lengths(lengths, named):
    """x's lengths as a constant its static shape [2, 3] states (led by 1s), or Shape(x) led by a
    constant of 1s, name them; other constants, or Shape(x) led by 2s, do not."""
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [3])
    if isinstance(lengths, list):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        made = [_int64_constant("d", lengths)]
    else:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["a", "b"])
        made = [_int64_constant("lead", [int(lengths[0])]), helper.make_node("Shape", ["x"], ["shape"]),
                helper.make_node("Concat", ["lead", "shape"], ["d"], axis=0)]  # fmt: skip
    nodes = [
        _int64_constant("one", 1),
        *made,
        helper.make_node("Equal", ["s", "one"], ["keeps"]),
        helper.make_node("Where", ["keeps", "d", "s"], ["stated"]),
        helper.make_node("Expand", ["x", "stated"], ["y"]),
    ]
    assert _names_the_lengths(nodes, [x, s]) is named


def test_a_runtime_wrong_where_a_one_keeps_a_length_is_given_the_length():
    """TVM 0.27 takes a fed Expand shape as the output's shape: the backend's case whose shape
    holds a 1 where the input's length is 3 is wrong there, the other right (refused, on that kind
    of value, which a shape not known may hold); --target names the length in the shape, which the
    verdict on the other cases calls supported, and the result verifies bit for bit; lowered
    again, nothing changes. A constant shape is left as it is."""
    from lowering.runtime_profiles import load_profile

    [case] = [c for c in node_cases() if c.name == "test_expand_dim_changed"]
    tvm = load_profile("tvm-0.27")
    [finding] = [f for f in check_model(case.model, tvm) if f.op_type == "Expand"]
    assert finding.verdict.kind == REFUSED and finding.verdict.wrong_values == ONE_KEEPS_A_LENGTH
    assert finding.fix and "chooses the form" in finding.fix
    result = lowering.lower_model(case.model, target="tvm-0.27")
    assert [n.op_type for n in result.model.graph.node][-3:] == ["Equal", "Where", "Expand"]
    feeds = dict(zip([i.name for i in case.model.graph.input], case.data_sets[0][0], strict=True))
    assert lowering.verify(case.model, result.model, inputs=[feeds]).match
    assert not [f for f in check_model(result.model, tvm) if f.op_type == "Expand"]
    again = lowering.lower_model(result.model, target="tvm-0.27")
    assert [n.op_type for n in again.model.graph.node].count("Where") == 1 and not again.report.forms
    constant = onnx.ModelProto()
    constant.CopyFrom(case.model)
    constant.graph.initializer.append(numpy_helper.from_array(feeds["new_shape"], "new_shape"))
    del constant.graph.input[1:]
    assert not lowering.lower_model(constant, target="tvm-0.27").report.forms


def _stating_choice():
    [choice] = [c for c in OP_CHOICES if c.op_type == "Reshape" and c.free_of == COPIED_LENGTH]
    return choice


@pytest.mark.parametrize(
    "dims, shape, allowzero, stated",
    [
        ((1, 3, 2, 4), [0, 0, -1], 0, [1, 3, 8]),
        ((1, 3, 2, 4), [1, 0, 8], 0, [1, 3, 8]),
        ((2, 3, 4), [0, -1, 0], 0, [2, 3, 4]),
        ((5, 1, 2), [-1, 0], 0, [10, 1]),
        ((1, 3, 2, 4), [1, 3, -1], 0, None),  # (no 0: nothing to state)
        ((1, 3, 0, 4), [0, 0, -1], 0, None),  # (a length of 0: -1 names no one length)
        ((1, 3, 2, 4), [0, 0, 0, 8], 1, None),  # (allowzero: a 0 is a length of 0)
        ((1, None, 2, 4), [0, 0, -1], 0, None),  # (a length not known)
        ((1, 3, 2, 4), [0, 0, 5], 0, "does not fit"),
    ],
)  # fmt: skip
def test_a_reshape_shape_copying_lengths_is_stated(dims, shape, allowzero, stated):
    """Reshape(x, s) = Reshape(x, t), t the output's shape (0 copying x's length there, -1 the
    rest of its elements), bit for bit in onnxruntime; not where s holds no 0, allowzero makes a
    0 a length, a length of x is unknown or 0, or s does not fit x (the node fails either way)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [d if d is not None else "n" for d in dims])
    attributes = {"allowzero": allowzero} if allowzero else {}
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="reshaped", **attributes)
    constants = {"s": numpy_helper.from_array(np.array(shape, np.int64), "s")}
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [constants["s"]]),
                              opset_imports=[helper.make_opsetid("", 19)])  # fmt: skip
    types = {"x": x.type, "s": helper.make_tensor_type_proto(TensorProto.INT64, [len(shape)])}
    choice = _stating_choice()
    applies = choice.applies(node, None, 19, constants, types)
    assert applies == (stated is not None)
    if not applies:
        return
    made = choice.replacement(node, None, constants, NameAllocator(model=model), 19, types)
    if stated == "does not fit":
        assert made is None
        return
    assert [n.op_type for n in made] == ["Constant", "Reshape"]
    assert numpy_helper.to_array(made[0].attribute[0].t).tolist() == stated
    written = helper.make_model(helper.make_graph(made, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 19)])
    onnx.checker.check_model(written, full_check=True)
    from lowering.samples import edge_values

    data = {"x": np.resize(edge_values(TensorProto.FLOAT), int(np.prod(dims))).reshape(dims)}
    [want], [got] = run_onnxruntime(model, data), run_onnxruntime(written, data)
    assert got.shape == want.shape and got.tobytes() == want.tobytes()


def test_tract_021_is_given_the_lengths_a_reshape_copies():
    """tract 0.21 copies a length by 0 wrong (or aborts) behind a leading 1, as the Attention
    body's last Reshape [0, 0, -1] of a batch of one does: partly there, on the cases of that
    value; --target writes the shape out, which verifies bit for bit; tract 0.23, right on
    those cases, keeps the 0s of a Reshape alone."""
    [case] = [c for c in node_cases() if c.name == "test_attention_3d_transpose_verification"]
    old = lowering.lower_model(case.model, target="tract-0.21")
    reshapes = [n for n in old.model.graph.node if n.op_type == "Reshape"]
    constants = constants_by_name(old.model)
    shapes = [numpy_helper.to_array(constants[n.input[1]]).tolist() for n in reshapes]
    assert [1, 2, 12] in shapes and not any(0 in shape for shape in shapes)
    assert any("a 0 copies a length" in said for said in old.report.forms)
    feeds = dict(zip([i.name for i in case.model.graph.input], case.data_sets[0][0], strict=True))
    assert lowering.verify(case.model, old.model, inputs=[feeds]).match
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8])
    copied = numpy_helper.from_array(np.array([0, 0, -1], np.int64), "s")
    alone = make_model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x], [y], opset=19, initializer=[copied])
    for target, shape in (("tract-0.21", [1, 3, 8]), ("tract-0.23", [0, 0, -1])):
        result = lowering.lower_model(alone, target=target)
        [reshape] = [n for n in result.model.graph.node if n.op_type == "Reshape"]
        assert numpy_helper.to_array(constants_by_name(result.model)[reshape.input[1]]).tolist() == shape
        assert ("s" in {t.name for t in result.model.graph.initializer}) is (0 in shape)  # (dropped once unread)
    constant = helper.make_node("Constant", [], ["s"], name="shape", value=copied)
    given_by_a_node = make_model([constant, helper.make_node("Reshape", ["x", "s"], ["y"])], [x], [y], opset=19)
    result = lowering.lower_model(given_by_a_node, target="tract-0.21")
    assert "shape" not in {n.name for n in result.model.graph.node}  # (the Constant only it read, dropped likewise)


def test_tract_021_is_given_the_lengths_the_dft_rules_reshapes_copy_of_a_rank_3_input():
    """The DFT rule's bins, Reshape(rows [1, 10, 20], [0, 0, 10, 2]): a rank-3 input made rank 4
    by 0s copying behind a leading 1, which tract 0.21 aborts on (its case of that form,
    copied_Reshape_4); --target writes out the shape of both Reshapes of the backend's test_dft,
    its axis a constant, and the result is the case's expected output (numpy's float64 FFT)
    within the rule's stated tolerance."""
    from lowering.rules.dft import DFT_TOLERANCE

    [case] = [c for c in node_cases() if c.name == "test_dft"]
    (x, axis), [expected] = case.data_sets[0]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(axis), model.graph.input[1].name))
    del model.graph.input[1:]
    result = lowering.lower_model(model, target="tract-0.21")
    assert result.report.rewritten == {"DFT-20": 1}
    constants = constants_by_name(result.model)
    shapes = [numpy_helper.to_array(constants[n.input[1]]).tolist()
              for n in result.model.graph.node if n.op_type == "Reshape"]  # fmt: skip
    assert shapes == [[1, 10, 10], [1, 10, 10, 2]]
    [got] = run_onnxruntime(result.model, {model.graph.input[0].name: x})
    assert got.shape == expected.shape and not DFT_TOLERANCE[TensorProto.FLOAT].mismatches(got, expected).any()


@pytest.mark.parametrize("length, within", [(2**23, True), (2**23 + 1, False), (None, False)])
def test_indices_are_within_the_edges_where_the_indexed_length_is_static_and_at_most_2_23(length, within):
    """Every index of [-s, s - 1], and i + s (at most 2s - 1), lies within 2^24 where s <= 2^23."""
    [choice] = [c for c in OP_CHOICES if c.op_type == "GatherElements" and c.free_of == NEGATIVE_INDICES]
    node = helper.make_node("GatherElements", ["data", "i"], ["y"], axis=1)
    types = {"data": helper.make_tensor_type_proto(TensorProto.FLOAT, [2, length if length else "n"])}
    assert choice.within_edges(node, types) is within


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL])
def test_the_kinds_of_shape_values_are_judged_on_each_type(element_type):
    """The cases of a Reshape copying lengths and of an Expand keeping them are of every common
    type: onnxruntime and tract 0.23 run the Reshape of [0, 0, -1] as it is, tract 0.21 is given
    the shape written out, TVM the Expand's fed shape naming the lengths."""
    x = helper.make_tensor_value_info("x", element_type, [1, 3, 2, 4])
    y = helper.make_tensor_value_info("y", element_type, [1, 3, 8])
    copied = numpy_helper.from_array(np.array([0, 0, -1], np.int64), "s")
    reshape = make_model([helper.make_node("Reshape", ["x", "s"], ["y"])], [x], [y], opset=19, initializer=[copied])
    for target, chosen in (("onnxruntime", False), ("tract-0.23", False), ("tract-0.21", True)):
        assert bool(lowering.lower_model(reshape, target=target).report.forms) is chosen, target
    x = helper.make_tensor_value_info("x", element_type, [3, 1])
    s = helper.make_tensor_value_info("s", TensorProto.INT64, [3])
    y = helper.make_tensor_value_info("y", element_type, [None] * 3)
    expand = make_model([helper.make_node("Expand", ["x", "s"], ["y"])], [x, s], [y], opset=18)
    assert lowering.lower_model(expand, target="tvm-0.27").report.forms


@pytest.mark.parametrize("also", ["nothing", "a node reads it", "an If branch reads it", "training reads it"])
def test_an_initializer_replaced_nodes_read_is_dropped_only_once_nothing_reads_it(also):
    """The Reshape form writes its shape anew (tract 0.21): the old shape initializer goes where
    nothing else reads it, and stays where a node of the graph or of a branch does (an Add of a
    fed value, which no folding takes), or a model's training graphs may."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 2, 4])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [3])
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    added = helper.make_tensor_value_info("n", TensorProto.INT64, [3])
    inputs, outputs = [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8])]
    nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
    if also == "a node reads it":
        nodes.append(helper.make_node("Add", ["s", "k"], ["n"]))
        inputs, outputs = [x, k], [*outputs, added]
    if also == "an If branch reads it":
        m = helper.make_tensor_value_info("m", TensorProto.INT64, [3])
        branch = helper.make_graph([helper.make_node("Add", ["s", "k"], ["m"])], "b", [], [m])
        nodes.append(helper.make_node("If", ["c"], ["n"], then_branch=branch, else_branch=branch))
        inputs, outputs = [x, k, c], [*outputs, added]
    shape = numpy_helper.from_array(np.array([0, 0, -1], np.int64), "s")
    model = make_model(nodes, inputs, outputs, opset=19, initializer=[shape])
    if also == "training reads it":
        training = onnx.TrainingInfoProto()
        t = helper.make_tensor_value_info("t", TensorProto.INT64, [3])
        training.algorithm.CopyFrom(helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "train", [], [t]))
        model.training_info.append(training)
    result = lowering.lower_model(model, target="tract-0.21")
    assert any("a 0 copies a length" in said for said in result.report.forms)
    assert ("s" in {t.name for t in result.model.graph.initializer}) is (also != "nothing")


# -- AveragePool and LpPool with dilations, their windows gathered ---------------------------------

DILATED_CASES = [
    "test_averagepool_2d_dilations",
    "test_averagepool_3d_dilations_small",
    *(f"test_averagepool_3d_dilations_large_count_include_pad_is_{pad}_ceil_mode_is_{ceil}"
      for pad in (0, 1) for ceil in ("False", "True")),
    "test_lppool_2d_dilations",
]  # fmt: skip


def _dilated_pool_cases(dilated: str, element_type: str = "FLOAT") -> dict[str, tuple[str, int, str, str]]:
    """A runtime that pools with dilations ``dilated`` (rknn fails AveragePool-19's, and its
    dilated 3-D Conv, AveragePool's rule, is wrong) and runs undilated pools, Pad and Gather,
    each on ``element_type``: name -> (op, version, type, verdict)."""
    cases = {name: (name.split("_")[1].replace("averagepool", "AveragePool").replace("lppool", "LpPool"), 22,
                    element_type, dilated) for name in DILATED_CASES}  # fmt: skip
    undilated = (
        "test_averagepool_2d_default",
        "test_averagepool_3d_default",
        "test_averagepool_2d_pads",
        "test_averagepool_2d_pads_count_include_pad",
        "test_lppool_2d_default",
        "test_lppool_2d_pads",
    )
    for name in undilated:
        cases[name] = ("LpPool" if "lppool" in name else "AveragePool", 22, element_type, "right")
    cases.update({f"test_gather_{k}": ("Gather", 13, element_type, "right") for k in (0, 1)})
    cases["test_constant_pad"] = ("Pad", 21, element_type, "right")
    cases["constant_INT64@25"] = ("Constant", 25, "INT64", "right")
    return cases


def _dilated_pool_profile(dilated: str):
    """The runtime of :func:`_dilated_pool_cases` on float."""
    return _profile_of("dilated-pool", 22, _dilated_pool_cases(dilated))


@pytest.mark.parametrize("name", DILATED_CASES)
def test_a_dilated_pool_gets_its_windows_gathered_where_the_runtime_fails_dilations(name):
    """Each backend case of a dilated AveragePool or LpPool: its windows gathered side by side and
    pooled undilated, the same elements in the same order: the case's expected outputs, and
    onnxruntime's on the original bit for bit; kept where the runtime pools dilations right."""
    [case] = [case for case in node_cases() if case.name == name]
    op_type = case.model.graph.node[0].op_type
    said = f"{op_type} with dilations -> {op_type} of its windows gathered side by side (the runtime runs those better)"
    result = lowering.lower_model(case.model, target=_dilated_pool_profile("fails"), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.forms == {said: 1}
    ops = [n.op_type for n in result.model.graph.node]
    assert ops[-1] == op_type and "Gather" in ops
    assert all(a.name != "dilations" for a in result.model.graph.node[-1].attribute)
    inputs, [expected] = case.data_sets[0]
    feeds = {case.model.graph.input[0].name: inputs[0]}
    [got], [want] = run_onnxruntime(result.model, feeds), run_onnxruntime(case.model, feeds)
    assert got.tobytes() == want.tobytes()
    assert np.allclose(got, expected, rtol=case.rtol, atol=case.atol)
    kept = lowering.lower_model(case.model, target=_dilated_pool_profile("right"), fold="none")
    assert not kept.report.forms and [n.op_type for n in kept.model.graph.node] == [op_type]


def _float16_dilated_pool_profile():
    """The runtime of :func:`_dilated_pool_cases`, its cases probed on float16."""
    return _profile_of("dilated-pool-float16", 22, _dilated_pool_cases("fails", "FLOAT16"))


@pytest.mark.parametrize("name", ["test_averagepool_2d_dilations", "test_lppool_2d_dilations"])
@pytest.mark.parametrize("in_branch", [False, True])
def test_a_float16_dilated_pool_gathered_keeps_every_bit_of_special_values(name, in_branch, monkeypatch):
    """A backend case's dilated pool on float16 NaN, ±inf, ±0, subnormals and the largest finite
    values (the runtime's cases probed on float16: their forms say so): its windows gathered and
    pooled undilated give onnxruntime's bits on the original (NaN where it is NaN), in the main
    graph and in an If's branch alike."""
    shipped = case_forms()
    as_float16 = {case: dataclasses.replace(form, types=tuple((i, TensorProto.FLOAT16 if t == TensorProto.FLOAT else t)
                                                              for i, t in form.types))
                  for case, form in shipped.items()}  # fmt: skip
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: as_float16)
    monkeypatch.setattr("lowering.runtime_profiles.case_forms", lambda: as_float16)
    [case] = [case for case in node_cases() if case.name == name]
    pool = onnx.NodeProto()
    pool.CopyFrom(case.model.graph.node[0])
    pool.input[:], pool.output[:] = ["x"], ["pooled"]
    op_type = pool.op_type
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 2, 6, 7])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 2, "h", "w"])
    if in_branch:
        pooled = helper.make_tensor_value_info("pooled", TensorProto.FLOAT16, [1, 2, "h", "w"])
        then = helper.make_graph([pool], "then", [], [pooled])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["pooled"])], "else", [], [pooled])
        nodes = [helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other)]
        inputs = [x, helper.make_tensor_value_info("flag", TensorProto.BOOL, [])]
    else:
        nodes, inputs = [pool, helper.make_node("Identity", ["pooled"], ["y"])], [x]
    model = helper.make_model(helper.make_graph(nodes, "g", inputs, [y]), opset_imports=[helper.make_opsetid("", 22)])
    result = lowering.lower_model(model, target=_float16_dilated_pool_profile(), fold="none")
    onnx.checker.check_model(result.model, full_check=True)
    assert sum(result.report.forms.values()) == 1
    assert all(a.name != "dilations" for g in [result.model.graph, *nested_graphs(result.model.graph.node)]
               for n in g.node if n.op_type == op_type for a in n.attribute)  # fmt: skip
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0, -0.0, 6e-8, -6e-8, 65504, -65504, 1.5, -2.25], np.float16)
    rng = np.random.default_rng(7)
    values = rng.standard_normal((1, 2, 6, 7)).astype(np.float16)
    for trial in range(40):
        feed = values.copy().reshape(-1)
        where = rng.choice(feed.size, size=trial % 9, replace=False)
        feed[where] = rng.choice(special, size=where.size)
        feeds = {"x": feed.reshape(values.shape)}
        if in_branch:
            feeds["flag"] = np.array(True)
        [got], [want] = run_onnxruntime(result.model, feeds), run_onnxruntime(model, feeds)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert got[~nan].tobytes() == want[~nan].tobytes()


def _gemm_of_a_bias(bias_shape, trans_b: int | None = None, bias_constant: np.ndarray | None = None):
    b_shape = [5, 4] if trans_b else [4, 5]
    attributes = {} if trans_b is None else {"transB": trans_b}
    fed = [helper.make_tensor_value_info("a", TensorProto.FLOAT, [3, 4]),
           helper.make_tensor_value_info("b", TensorProto.FLOAT, b_shape)]  # fmt: skip
    if bias_constant is None:
        fed.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, bias_shape))
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["a", "b", "c"], ["y"], name="gemm", **attributes)], "g", fed,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])],
        initializer=[] if bias_constant is None else [numpy_helper.from_array(bias_constant, "c")],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)


@pytest.mark.parametrize("bias_shape", [[1], [5]])
@pytest.mark.parametrize("constant", [False, True])
def test_a_gemm_bias_of_one_row_at_most_goes_to_rknn_expanded_to_the_row(bias_shape, constant):
    """rknn fails a Gemm given a bias C of rank 1 (its toolkit: "'NoneType' object has no
    attribute 'reshape'", B fed): C expanded to [1, N] first, which both broadcast to the output's
    [M, N] alike; the output bit for bit onnxruntime's."""
    rng = np.random.default_rng(5)
    feeds = {"a": rng.standard_normal((3, 4)).astype(np.float32), "b": rng.standard_normal((4, 5)).astype(np.float32),
             "c": rng.standard_normal(bias_shape).astype(np.float32)}  # fmt: skip
    model = _gemm_of_a_bias(bias_shape, bias_constant=feeds["c"] if constant else None)
    if constant:
        del feeds["c"]
    result = lowering.lower_model(model, target="rknn")
    assert [n.op_type for n in result.model.graph.node if n.op_type != "Constant"] == ["Expand", "Gemm"]
    onnx.checker.check_model(result.model, full_check=True)
    [want], [got] = run_onnxruntime(model, feeds), run_onnxruntime(result.model, feeds)
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("trans_b", [0, 1])
def test_a_gemm_bias_row_holds_the_output_columns(trans_b):
    """The row's length N is B's second dimension, its first where transB; the choice reads B's
    shape, so a B of unknown shape is not chosen for."""
    [choice] = [c for c in OP_CHOICES if c.op_type == "Gemm"]
    model = _gemm_of_a_bias([1], trans_b)
    judge = form_judge(model, load_profile("rknn"), 13)
    node = model.graph.node[0]
    _, form = judge(node, None)
    assert choice.applies(node, form, 13, {}, judge.types)
    made = choice.replacement(node, form, {}, NameAllocator(model=model), 13, judge.types)
    [shape] = [n for n in made if n.op_type == "Constant"]
    assert numpy_helper.to_array(shape.attribute[0].t).tolist() == [1, 5]
    assert choice.replacement(node, form, {}, NameAllocator(model=model), 8, judge.types) is None  # (no int64 Constant)
    model.graph.input[1].type.tensor_type.ClearField("shape")
    judge = form_judge(model, load_profile("rknn"), 13)
    assert not choice.applies(node, judge(node, None)[1], 13, {}, judge.types)
