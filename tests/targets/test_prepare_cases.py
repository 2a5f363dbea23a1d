"""targets/prepare_cases.py's corpus cases: one node of each form a real export holds, alone,
with the export's own values; its constants given as the export gives them (a node or an
initializer), its value_info stated as the export states it, other op versions beside it; no
node whose values ONNX leaves undefined (a float cast to an integer type it lies outside), nor
one computed from them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import make_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "targets"))

import prepare_cases  # noqa: E402
import probe  # noqa: E402
from version_cases import node_cases  # noqa: E402

import lowering  # noqa: E402
from lowering import schemas  # noqa: E402
from lowering.value_kinds import IN_RANGE_TWIN  # noqa: E402


def backend_cases_named(*names: str) -> list:
    """The backend cases of these names as ``prepare_cases.backend_cases()`` gives them (their
    undefined casts made defined), read from the cases kept between sessions
    (tests/version_cases.node_cases) rather than collected again."""
    return [probe.defined_casts(case) for case in node_cases() if case.name in names]


def _export(folder: Path) -> None:
    """y = Add(Cast(Log(x), int64), 1); z = Mul(x, c), c a Constant; u = Add(x, w), w a weight; x
    holds a 0 (Log gives -inf: the Cast is undefined there); the value_info states z."""
    nodes = [
        helper.make_node("Log", ["x"], ["log"], name="log"),
        helper.make_node("Cast", ["log"], ["cast"], name="cast", to=TensorProto.INT64),
        helper.make_node("Add", ["cast", "one"], ["y"], name="add_after_cast"),
        helper.make_node("Constant", [], ["c"], name="c", value=numpy_helper.from_array(np.float32([2, 3, 4]))),
        helper.make_node("Mul", ["x", "c"], ["z"], name="mul_by_constant"),
        helper.make_node("Add", ["x", "w"], ["u"], name="add_weight"),
    ]
    initializers = [numpy_helper.from_array(np.int64(1), "one"), numpy_helper.from_array(np.float32([1, 1, 1]), "w")]
    outputs = [helper.make_tensor_value_info("y", TensorProto.INT64, [3]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, [3]),
               helper.make_tensor_value_info("u", TensorProto.FLOAT, [3])]  # fmt: skip
    stated = [helper.make_tensor_value_info("log", TensorProto.FLOAT, [3])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    model = make_model(nodes, [x], outputs, opset=17, initializer=initializers, value_info=stated)
    onnx.save(model, folder / "toy.onnx")
    np.savez(folder / "toy.npz", **{"input:x": np.float32([0, 1, 2])})


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("corpus")
    _export(folder)
    return {name: (opset, onnx.load_from_string(data), sets) for name, opset, data, sets, *_ in
            prepare_cases.corpus_cases(folder)}  # fmt: skip


def test_a_node_of_undefined_values_and_those_computed_from_them_are_left_out(cases):
    own = {name for name in cases if "@" not in name}
    assert own == {"corpus_toy_log", "corpus_toy_mul_by_constant", "corpus_toy_add_weight"}


def test_a_case_holds_the_exports_values_and_gives_constants_as_the_export_does(cases):
    _, model, [(inputs, expected)] = cases["corpus_toy_mul_by_constant"]
    assert [n.op_type for n in model.graph.node] == ["Constant", "Mul"]  # (a node gave c)
    np.testing.assert_array_equal(inputs[0], np.float32([0, 1, 2]))
    np.testing.assert_array_equal(expected[0], np.float32([0, 3, 8]))
    _, model, _ = cases["corpus_toy_add_weight"]
    assert [n.op_type for n in model.graph.node] == ["Add"] and [t.name for t in model.graph.initializer] == ["w"]
    form = prepare_cases.case_form(cases["corpus_toy_mul_by_constant"][1], 17)
    assert form.from_nodes == {1} and form.fed == {0}
    assert not prepare_cases.case_form(cases["corpus_toy_add_weight"][1], 17).from_nodes


def test_value_info_is_stated_where_the_export_states_it(cases):
    _, log, _ = cases["corpus_toy_log"]
    assert [info.name for info in log.graph.value_info] == ["log"]
    assert not cases["corpus_toy_mul_by_constant"][1].graph.value_info


def test_cases_are_taken_to_the_ops_other_versions(cases):
    """Mul-14 at opset 17; Mul-7 and Mul-13 at their first opsets (Mul-1 and -6 are not in force
    at 7), and Mul-14 at its own, 14 (a runtime that loads opsets up to 14 sees it there)."""
    taken = {name for name in cases if name.startswith("corpus_toy_mul_by_constant@")}
    assert taken == {f"corpus_toy_mul_by_constant@{version}" for version in (7, 13, 14)}
    assert [cases[f"corpus_toy_mul_by_constant@{version}"][0] for version in (7, 13, 14)] == [7, 13, 14]


def test_a_case_that_cannot_be_written_at_a_versions_first_opset_is_taken_to_the_next():
    """Loop-11's body holds a Slice-10 and an int64 Constant: Loop-1 is in force from opset 1,
    probed from 7, and its case can be written at 10 only."""
    [case] = backend_cases_named("test_loop11")
    entry = ("test_loop11", 11, case.model.SerializeToString())
    [(name, opset, written)] = prepare_cases.at_other_versions([entry], "Loop", 11)[:1]
    assert (name, opset) == ("test_loop11@1", 10)
    assert onnx.load_from_string(written).opset_import[0].version == 10
    assert lowering.schemas.version_in_force("Loop", 10) == 1


@pytest.mark.parametrize(
    ("values", "to", "undefined"),
    [([0.0, 1.5, -2.0], TensorProto.INT64, False), ([0.0, -np.inf], TensorProto.INT64, True),
     ([np.nan], TensorProto.INT32, True), ([3e9], TensorProto.INT32, True), ([255.5], TensorProto.UINT8, False),
     ([256.0], TensorProto.UINT8, True), ([-1.0], TensorProto.UINT8, True), ([np.inf], TensorProto.FLOAT16, False)],
)  # fmt: skip
def test_a_float_cast_to_an_integer_type_it_lies_outside_is_undefined(values, to, undefined):
    node = helper.make_node("Cast", ["x"], ["y"], to=to)
    assert prepare_cases.casts_out_of_range(node, {"x": np.array(values, np.float32)}) is undefined


def test_a_castlike_or_a_bfloat16_cast_out_of_range_is_undefined_too():
    import ml_dtypes

    like = helper.make_node("CastLike", ["x", "y"], ["z"])
    values = {"x": np.array([np.inf], np.float32), "y": np.zeros(1, np.int32)}
    assert prepare_cases.casts_out_of_range(like, values)
    cast = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT8)
    assert prepare_cases.casts_out_of_range(cast, {"x": np.array([300.0], ml_dtypes.bfloat16)})
    assert not prepare_cases.casts_out_of_range(cast, {"x": np.array([3.0], ml_dtypes.bfloat16)})


def test_the_nodes_a_pattern_writes_are_cases_with_the_values_they_see():
    """SwiGLU(a, b, alpha=0.5) lowered is Swish(a, alpha=0.5) * b: the Swish is a case of its
    own (no backend case of Swish holds that alpha), fed a and expected onnx's reference values
    (onnxruntime has no Swish-24 kernel), at opset 28 and at 24, where Swish-24 comes in force
    (``@24``: a runtime that loads opsets up to 24 sees it there); no node of constants alone,
    no random draw."""
    node = helper.make_node("SwiGLU", ["a", "b"], ["y"], name="y", alpha=0.5)
    infos = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3]) for name in ("a", "b", "y")]
    model = make_model([node], infos[:2], infos[2:], opset=28)
    lowered = lowering.lower(model, ops=["SwiGLU"], fold="none")
    rng = np.random.default_rng(0)
    feeds = {"a": rng.standard_normal((2, 3)).astype(np.float32), "b": rng.standard_normal((2, 3)).astype(np.float32)}
    found = {name: (opset, onnx.load_from_string(data), sets) for name, opset, data, sets, *_ in
             prepare_cases.node_cases([("swiglu", lowered, feeds)], "lowered", other_versions=False)}  # fmt: skip
    assert {case.graph.node[-1].op_type for _, case, _ in found.values()} <= {"Swish", "Mul", "CastLike", "Cast"}
    assert all(case.graph.input for _, case, _ in found.values())  # (no node of constants alone)
    swish = sorted(name for name, (_, case, _) in found.items() if case.graph.node[-1].op_type == "Swish")
    assert len(swish) == 2 and swish[0].startswith("lowered_swiglu_") and swish[1] == f"{swish[0]}@24"
    assert [found[name][0] for name in swish] == [28, 24]
    assert [schemas.default_opset(found[name][1].opset_import) for name in swish] == [28, 24]
    a = feeds["a"]
    for name in swish:
        _, case, [(inputs, expected)] = found[name]
        assert helper.get_attribute_value(case.graph.node[-1].attribute[0]) == 0.5
        np.testing.assert_allclose(expected[0], a / (1 + np.exp(-0.5 * a)), rtol=1e-6)

    noise = helper.make_node("RandomUniformLike", ["a"], ["noise"], name="noise")
    summed = helper.make_node("Add", ["a", "noise"], ["y"], name="summed")
    drawn = make_model([noise, summed], infos[:1], infos[2:], opset=17)
    names = [name for name, *_ in prepare_cases.node_cases([("drawn", drawn, {"a": a})], "lowered", False)]
    assert names == ["lowered_drawn_summed", "lowered_drawn_summed@14"]  # (Add-14, in force from 14)


def test_the_nodes_a_pattern_writes_are_taken_to_their_ops_other_versions(monkeypatch):
    """BitShift right on int8 (opset 28) lowered writes a Where of int8 data, Where-16 there: it
    is a case at 28, at 16 (Where-16's first opset) and at 9 (Where-9's): ``--target`` may take
    the model to an opset of either version, and a runtime may run Where on int8 at one only."""
    wanted = "test_bitshift_right_int8"
    shift_cases = backend_cases_named(wanted)
    monkeypatch.setattr(prepare_cases, "backend_cases", lambda: shift_cases)
    found = {name: (opset, onnx.load_from_string(data)) for name, opset, data, *_ in prepare_cases.lowered_cases()}
    wheres = {name: opset for name, (opset, model) in found.items() if model.graph.node[-1].op_type == "Where"}
    base = min(wheres, key=len)
    own = schemas.default_opset(shift_cases[0].model.opset_import)
    assert {name.removeprefix(base): opset for name, opset in wheres.items() if name.startswith(base)} == {
        "": own,
        "@16": 16,
        "@9": 9,
    }
    int8 = TensorProto.INT8
    assert all(
        found[name][1].graph.input[1].type.tensor_type.elem_type == int8 for name in wheres if name.startswith(base)
    )


def test_the_nodes_a_pattern_writes_have_their_defaults_stated_beside_them(monkeypatch):
    """The lowered Range of floats sums by a CumSum leaving ``exclusive`` and ``reverse`` out
    (onnx2torch reads ``reverse`` left out as 1, and no backend case of CumSum is of float): its
    case has a ``#stated`` twin, both stated 0, of the same data."""
    wanted = "test_range_float_type_positive_delta"
    range_cases = backend_cases_named(wanted)
    monkeypatch.setattr(prepare_cases, "backend_cases", lambda: range_cases)
    found = {name: (onnx.load_from_string(data), sets) for name, _, data, sets, *_ in prepare_cases.lowered_cases()}
    plain = "lowered_test_range_float_type_positive_delta_output_CumSum"
    (model, sets), (stated, stated_sets) = found[plain], found[f"{plain}#stated"]
    assert [a.name for a in model.graph.node[0].attribute] == []
    attributes = {a.name: helper.get_attribute_value(a) for a in stated.graph.node[0].attribute}
    assert attributes == {"exclusive": 0, "reverse": 0} and repr(stated_sets) == repr(sets)


def test_the_nodes_a_chosen_form_writes_are_cases_named_by_their_nodes(monkeypatch):
    """Mod-28 fmod=0 on float16 has two forms --target may choose (NaN found by an Equal of
    bools or by IsNaN): each form's nodes are cases fed the values they see there, from the
    backend case's own inputs (the float16 Sign of its divisor and IsNaN of the truncated
    remainder, which no backend case holds), named by the backend case, the form's place among
    those that apply, and the node; a node leaving defaults out has its ``#stated`` twin (an
    AveragePool's explicit pads)."""
    wanted = ("test_mod_float16_mixed_sign_fmod_0", "test_averagepool_2d_same_upper")
    picked = backend_cases_named(*wanted)
    monkeypatch.setattr(prepare_cases, "backend_cases", lambda: picked)
    found = {name: (onnx.load_from_string(data), sets) for name, _, data, sets, *_ in prepare_cases.chosen_cases()}
    mod = wanted[0]
    sign, isnan = f"chosen_{mod}_z_Sign", f"chosen_{mod}_1_z_IsNaN"
    assert {sign, isnan, f"chosen_{mod}_Mod_1"} <= found.keys()
    [(a, b), _] = next(case for case in picked if case.name == mod).data_sets[0]
    case, [(inputs, expected)] = found[sign]
    assert case.graph.node[-1].op_type == "Sign" and inputs[0].tobytes() == b.tobytes()
    assert expected[0].tobytes() == np.sign(b).tobytes()
    case, [(inputs, expected)] = found[isnan]
    assert case.graph.node[-1].op_type == "IsNaN" and inputs[0].tobytes() == np.fmod(a, b).tobytes()
    assert expected[0].tolist() == np.isnan(inputs[0]).tolist()
    pooled = [name for name in found if name.startswith(f"chosen_{wanted[1]}_AveragePool")]
    assert pooled and all(f"{name}#stated" in found for name in pooled if "#" not in name)


def test_a_case_of_several_inputs_gives_the_others_as_initializers_and_as_constant_nodes():
    """#constant: every input but the first an initializer holding the first data set's value;
    #node: the same given by Constant nodes (as the patterns write constants), which passes
    onnx's full checker and computes the same in onnxruntime."""
    from types import SimpleNamespace

    import onnxruntime

    model = make_model(
        [helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 7, 5]),
         helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 1, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 3])],
        opset=11,
    )  # fmt: skip
    x, w = np.arange(35, dtype=np.float32).reshape(1, 1, 7, 5), np.ones((1, 1, 3, 3), np.float32)
    [y] = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "W": w}
    )
    case = SimpleNamespace(name="test_conv_with_strides_padding", data_sets=[([x, w], [y])], rtol=1e-3, atol=1e-7)
    variants = {name: rest for name, *rest in prepare_cases.with_variants(case.name, 11, model, case)}
    assert set(variants) == {case.name, f"{case.name}#constant", f"{case.name}#node"}
    constant = onnx.load_from_string(variants[f"{case.name}#constant"][1])
    given = onnx.load_from_string(variants[f"{case.name}#node"][1])
    assert [t.name for t in constant.graph.initializer] == ["W"] and not given.graph.initializer
    assert [(n.op_type, list(n.output)) for n in given.graph.node][0] == ("Constant", ["W"])
    onnx.checker.check_model(given, full_check=True)
    [((x,), (want,))] = variants[f"{case.name}#node"][2]
    [got] = onnxruntime.InferenceSession(given.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_a_case_of_one_input_that_sets_parameters_has_it_constant_beside_it():
    """ConstantOfShape fed its shape (a shape sets how it computes): #constant holds the shape as
    an initializer, the model fed nothing, and is typed as check types the node, by the shape
    (int64), not by the output (probe.element_type); a node whose one input is its data (Relu)
    has no such variant."""
    from types import SimpleNamespace

    import onnxruntime

    shape = np.array([2, 3], np.int64)
    node = helper.make_node(
        "ConstantOfShape", ["shape"], ["y"], value=helper.make_tensor("v", TensorProto.INT32, [1], [7])
    )
    model = make_model([node], [helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                       [helper.make_tensor_value_info("y", TensorProto.INT32, [2, 3])], opset=20)  # fmt: skip
    want = np.full((2, 3), 7, np.int32)
    case = SimpleNamespace(name="fill", data_sets=[([shape], [want])], rtol=0.0, atol=0.0)
    variants = {name: rest for name, *rest in prepare_cases.with_variants(case.name, 20, model, case)}
    assert set(variants) == {"fill", "fill#constant", "fill#node"}
    constant = onnx.load_from_string(variants["fill#constant"][1])
    assert not constant.graph.input and [t.name for t in constant.graph.initializer] == ["shape"]
    assert variants["fill#constant"][2] == [([], [want])]
    [got] = onnxruntime.InferenceSession(constant.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {})
    assert np.array_equal(got, want)
    assert probe.element_type(constant, constant.graph.node[0]) == TensorProto.INT64
    given = onnx.load_from_string(variants["fill#node"][1])
    assert probe.element_type(given, given.graph.node[-1]) == TensorProto.INT64
    relu = make_model([helper.make_node("Relu", ["x"], ["y"])],
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=14)  # fmt: skip
    x = np.array([-1, 1], np.float32)
    relu_case = SimpleNamespace(name="relu", data_sets=[([x], [np.maximum(x, 0)])], rtol=0.0, atol=0.0)
    assert [name for name, *_ in prepare_cases.with_variants("relu", 14, relu, relu_case)] == ["relu"]


def test_a_case_leaving_defaulted_attributes_out_has_them_stated_beside_it():
    """#stated: each int and string attribute the node leaves out that its schema defaults,
    stated at that default (Conv-11: auto_pad 'NOTSET', group 1), the rest as it was; a node
    stating every such attribute has none."""
    conv = helper.make_node("Conv", ["x", "W"], ["y"], kernel_shape=[3, 3])
    model = make_model([conv], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 5, 5]),
                                helper.make_tensor_value_info("W", TensorProto.FLOAT, [1, 1, 3, 3])],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 3, 3])], opset=11)  # fmt: skip
    entry = ("conv", 11, model.SerializeToString(), [], 0.0, 0.0)
    [(name, opset, stated_bytes, *rest)] = prepare_cases.with_defaults_stated([entry])
    assert (name, opset, rest) == ("conv#stated", 11, [[], 0.0, 0.0])
    [stated] = onnx.load_from_string(stated_bytes).graph.node
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in stated.attribute}
    assert attributes == {"kernel_shape": [3, 3], "auto_pad": b"NOTSET", "group": 1}
    assert prepare_cases.with_defaults_stated([("conv#stated", 11, stated_bytes, [], 0.0, 0.0)]) == []


def test_each_constant_version_is_a_case_of_each_element_type_its_schema_takes():
    """constant_TYPE@VERSION: a Constant alone at its version's first opset (7 at least), of every
    element type the schema takes there but strings, complex and sub-byte types; each passes onnx's
    full checker, is its own case's node, and gives its value (in onnxruntime, where it holds the
    type). It has no graph input: a runtime that takes no constant output (rknn) fails it unfed."""
    import probe

    cases = {name: (opset, onnx.load_from_string(data), sets) for name, opset, data, sets, *_ in
             prepare_cases.constant_cases()}  # fmt: skip
    schemas_of_constant = [s for s in onnx.defs.get_all_schemas_with_history() if s.name == "Constant"]
    versions = {s.since_version for s in schemas_of_constant if not s.domain}
    for version in sorted(versions):
        opset = max(version, prepare_cases.OLDEST_OPSET)
        if lowering.schemas.version_in_force("Constant", opset) != version:
            continue
        taken = lowering.schemas.output_element_types("Constant", opset)
        probed = {t for t in taken - prepare_cases.UNPROBED_CONSTANT_TYPES if prepare_cases.element_bits(t) >= 8}
        names = {f"constant_{TensorProto.DataType.Name(t)}@{version}" for t in probed}
        assert names <= cases.keys(), sorted(names - cases.keys())[:3]
        assert TensorProto.FLOAT in probed and (version == 1 or TensorProto.INT64 in probed)
    assert cases["constant_FLOAT@1"][0] == 7 and cases["constant_BFLOAT16@13"][0] == 13
    assert not {name for name in cases if "STRING" in name or "COMPLEX" in name or "INT4" in name or "E2M1" in name}
    bits = {t: prepare_cases.element_bits(t) for t in (TensorProto.INT4, TensorProto.FLOAT4E2M1, TensorProto.BOOL)}
    assert bits == {TensorProto.INT4: 4, TensorProto.FLOAT4E2M1: 4, TensorProto.BOOL: 8}
    import onnxruntime

    ran = 0
    for name, (opset, model, [(inputs, [value])]) in cases.items():
        onnx.checker.check_model(model, full_check=True)
        assert probe.main_node(model).op_type == "Constant" and not inputs and not model.graph.input
        assert lowering.schemas.default_opset(model.opset_import) == opset
        if value.dtype.kind in "biuf" and value.dtype.type.__module__ == "numpy":
            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            (got,) = session.run(None, {})
            assert got.dtype == value.dtype and got.tobytes() == value.tobytes(), name
            ran += 1
    assert ran >= 80, ran


def test_the_output_cases_are_of_no_elements_from_constants_alone_or_a_fed_value():
    """output_constant_empty: a Slice of Constants from 1 to 1 (not past its end: tract and TVM
    fail such a Slice whatever its output), of no graph input, giving int64 [0]; output_fed_empty:
    the same Slice of a fed float32 [3, 4], giving [0, 4]. Each passes onnx's full checker, runs so
    in onnxruntime, is an output of no elements (from no input's values, or a fed one's), and is
    read by the profile as that kind of output, not as a case of Slice."""
    import onnxruntime

    from lowering.constant_outputs import NO_ELEMENTS, constant_outputs
    from lowering.runtime_profiles import EMPTY_CONSTANT_OUTPUT, EMPTY_FED_OUTPUT, profile_from_data
    from lowering.shape_folding import inferred_types

    cases = {name: rest for name, *rest in prepare_cases.output_cases()}
    assert cases.keys() == {f"output_{EMPTY_CONSTANT_OUTPUT}", f"output_{EMPTY_FED_OUTPUT}"}
    entries = {}
    for name, (opset, data, [(feeds, [expected])], *_) in cases.items():
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        fed = name.endswith(EMPTY_FED_OUTPUT)
        assert opset == 13 and [i.name for i in model.graph.input] == (["data"] if fed else [])
        slice_node = probe.main_node(model)
        constants = [n for n in model.graph.node if n.op_type == "Constant" and n.output[0] != "data"]
        bounds = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in constants}
        assert slice_node.op_type == "Slice" and bounds["starts"].tolist() == bounds["ends"].tolist() == [1]
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        [got] = session.run(None, {"data": feeds[0]} if fed else {})
        assert got.dtype == expected.dtype and got.shape == expected.shape == ((0, 4) if fed else (0,))
        [found] = constant_outputs(model, inferred_types(model)).values()
        assert found.why == NO_ELEMENTS and found.reads_feeds == fed
        entries[name] = {"op": "Slice", "version": 13, "type": "INT64", "verdict": "right", "opset": 13}
    entries[f"output_{EMPTY_CONSTANT_OUTPUT}"].update(verdict="crashes", detail="exit code -11")
    profile = profile_from_data({"name": "p", "runtime": "r", "runtime_version": "0", "source": {}, "opsets": [13],
                                 "cases": entries})  # fmt: skip
    assert not profile.cases and profile.output_not_given(EMPTY_FED_OUTPUT) is None
    assert profile.output_not_given(EMPTY_CONSTANT_OUTPUT) == "output_constant_empty: crashes (exit code -11)"


def test_each_input_case_is_an_identity_of_one_input_of_its_kind_and_rank():
    """input_TYPE_RANKd: an Identity of one graph input of that element type and rank (1 to 5),
    at the first opset from 13 whose Identity takes the type; input_OPTIONAL_TYPE_RANKd: of an
    optional holding such a tensor, at 16. Each passes onnx's full checker, gives its input back
    in onnxruntime where it has the kernel, and is read by the profile as that kind of input, not
    as a case of Identity."""
    import onnxruntime

    from lowering.runtime_profiles import input_kind, input_kind_of_case, profile_from_data

    cases = prepare_cases.input_cases()
    names = {name for name, *_ in cases}
    assert {"input_INT8_4d", "input_FLOAT_1d", "input_BOOL_5d", "input_BFLOAT16_2d", "input_OPTIONAL_FLOAT_1d"} <= names
    assert not {name for name in names if "STRING" in name or "INT4" in name or name.endswith("_0d")}
    ran = 0
    for name, opset, data, [([value], [expected])], *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        [info] = model.graph.input
        assert input_kind(info.type) == input_kind_of_case(name) and input_kind_of_case(name)[1] == value.ndim
        optional = info.type.HasField("optional_type")
        element_type = (info.type.optional_type.elem_type if optional else info.type).tensor_type.elem_type
        taken = lowering.schemas.input_element_types
        assert element_type in taken("Identity", opset)
        assert opset == (16 if optional else 13) or element_type not in taken("Identity", opset - 1)
        if value.dtype.type.__module__ == "numpy":
            session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
            assert session.run(None, {"x": value})[0].tobytes() == expected.tobytes() == value.tobytes(), name
            ran += 1
    assert ran >= 40, ran
    entries = {name: {"op": "Identity", "version": 13, "type": "INT8", "verdict": "right", "opset": 13}
               for name, *_ in cases if name.startswith("input_INT8_")}  # fmt: skip
    entries["input_INT8_4d"] = {**entries["input_INT8_4d"], "verdict": "crashes", "detail": "exit code -11"}
    entries["input_OPTIONAL_INT8_2d"] = {**entries["input_INT8_2d"], "verdict": "fails", "detail": "KeyError: 0"}
    profile = profile_from_data({"name": "p", "runtime": "r", "runtime_version": "0", "source": {}, "opsets": [13],
                                 "cases": entries})  # fmt: skip
    assert not profile.cases and profile.inputs[("INT8", 4)] == ("input_INT8_4d", "crashes", "exit code -11")
    assert profile.input_not_taken("INT8", 4).startswith("an Identity of one: input_INT8_4d: crashes")
    assert profile.input_not_taken("INT8", 3) is None
    assert profile.input_not_taken("optional(INT8)", 2).endswith("INT8 right at rank 2 as a tensor")
    assert profile.input_not_taken("optional(INT8)", 3) is None  # (not probed)


def test_the_cases_constant_outputs_are_recorded_for_the_probe():
    """prepare_cases.py records each case's outputs a runtime of static shapes finds constant (a
    Shape's), and none of a window's of a fed size, so the probe tells the two apart."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    size = helper.make_tensor_value_info("size", TensorProto.INT32, [])
    shape = make_model([helper.make_node("Shape", ["x"], ["y"])], [x],
                       [helper.make_tensor_value_info("y", TensorProto.INT64, [2])], opset=17)  # fmt: skip
    window = make_model([helper.make_node("HannWindow", ["size"], ["w"])], [size],
                        [helper.make_tensor_value_info("w", TensorProto.FLOAT, None)], opset=17)  # fmt: skip
    cases = [("test_shape", 17, shape.SerializeToString(), []), ("test_hannwindow", 17, window.SerializeToString(), [])]
    assert prepare_cases.constant_outputs_of(cases) == {"test_shape": ["y"]}


def test_each_expand_version_is_a_case_of_each_type_a_constant_of_shape_may_fill():
    """expand_TYPE@VERSION: Expand of a fed scalar to a fed shape, of each type Expand takes
    that ConstantOfShape's value may hold (a form writes that Expand), bfloat16 at 13 among
    them; each passes the full checker, is recorded under its own type (the first fed input's),
    and gives the scalar in the shape where onnxruntime has the kernel (no bfloat16 there)."""
    import onnxruntime
    import probe

    cases = {name: (opset, onnx.load_from_string(data), sets) for name, opset, data, sets, *_ in
             prepare_cases.expand_scalar_cases()}  # fmt: skip
    assert {"expand_FLOAT@8", "expand_BOOL@13", "expand_BFLOAT16@13"} <= cases.keys()
    assert "expand_BFLOAT16@8" not in cases and not {name for name in cases if "STRING" in name}
    ran = 0
    for name, (opset, model, [([value, shape], [expected])]) in cases.items():
        onnx.checker.check_model(model, full_check=True)
        assert probe.main_node(model).op_type == "Expand" and opset == int(name.split("@")[1])
        assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.DataType.Value(name[7:].split("@")[0])
        assert expected.shape == (2, 3) and (expected == value).all() and shape.tolist() == [2, 3]
        if "BFLOAT16" not in name:
            session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            (got,) = session.run(None, {"value": value, "shape": shape})
            assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), name
            ran += 1
    assert ran == len(cases) - 1


def test_each_if_version_is_a_case_of_branches_of_one_shape_and_of_other_shapes():
    """if_same_shapes@VERSION and if_other_shapes@VERSION: an If on a fed condition, run down
    each branch; the branches of other shapes form OTHER_SHAPES, those of one shape not; If-1 of
    other shapes, which onnx's inference refuses, is no case. onnxruntime gives each data set's
    outputs."""
    import onnxruntime
    import probe

    from lowering.node_forms import OTHER_SHAPES, SET

    cases = {
        name: (opset, onnx.load_from_string(data), sets) for name, opset, data, sets, *_ in prepare_cases.if_cases()
    }
    versions = [v for v in schemas.op_versions("If") if schemas.version_in_force("If", max(v, 7)) == v]
    assert {f"if_same_shapes@{v}" for v in versions} <= cases.keys()
    assert {name for name in cases if name.startswith("if_other")} == {
        f"if_other_shapes@{v}" for v in versions if v >= 11
    }
    for name, (opset, model, data_sets) in cases.items():
        onnx.checker.check_model(model, full_check=True)
        assert probe.main_node(model).op_type == "If" and opset == max(int(name.split("@")[1]), 7)
        form = prepare_cases.case_form(model, opset)
        wanted = OTHER_SHAPES if name.startswith("if_other") else SET
        assert dict(form.attributes) == {"then_branch": wanted, "else_branch": wanted} and form.fed == {0}
        session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        shapes = set()
        for (condition, x), [expected] in data_sets:
            (got,) = session.run(None, {"c": condition, "x": x})
            assert got.tobytes() == expected.tobytes() and got.shape == expected.shape, name
            shapes.add(got.shape)
        assert len(shapes) == (2 if name.startswith("if_other") else 1)


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_each_cast_version_is_a_case_from_each_integer_type_to_each_other():
    """cast_FROM_TO@VERSION: a Cast alone between every pair of integer types and bool, at each
    Cast version's first opset (7 at least), of the source type's extreme values, -1, 0, 1 and
    100; each passes onnx's full checker, is its own case's node, and its expected output is
    onnxruntime's (the spec's two's complement out of range)."""
    import onnxruntime
    import probe

    cases = prepare_cases.integer_cast_cases()
    names = {name for name, *_ in cases}
    pairs = [(a, b) for a in prepare_cases.INTEGER_TYPES for b in prepare_cases.INTEGER_TYPES if a != b]
    for version in (6, 13, 19, 25):
        expected = {f"cast_{TensorProto.DataType.Name(a)}_{TensorProto.DataType.Name(b)}@{version}" for a, b in pairs}
        assert expected <= names, sorted(expected - names)[:3]
    for name, _, data, data_sets, *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        assert probe.main_node(model).op_type == "Cast"
        (values,), (want,) = data_sets[0]
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        [got] = session.run(None, {"x": values})
        assert got.dtype == want.dtype and np.array_equal(got, want), name
        version = int(name.rsplit("@", 1)[1].split("#")[0])
        if version < 13 and want.dtype != np.bool_ and values.dtype != np.bool_:  # (undefined out of range)
            assert [int(v) for v in want] == [int(v) for v in values], name
        if IN_RANGE_TWIN in name:  # (the twin holds values the target holds alone; its case holds others too)
            assert [int(v) for v in want] == [int(v) for v in values], name
            twin_of = {n: sets for n, _, _, sets, *_ in cases}[name.removesuffix(IN_RANGE_TWIN)]
            [((held,), (wrapped,))] = twin_of
            assert [int(v) for v in wrapped] != [int(v) for v in held], name
    [((values,), (wrapped,))] = {name: sets for name, _, _, sets, *_ in cases}["cast_INT16_INT8@25"]
    assert values.tolist() == [-32768, -1, 0, 1, 100, 32767] and wrapped.tolist() == [0, -1, 0, 1, 100, -1]
    [((values,), _)] = {name: sets for name, _, _, sets, *_ in cases}["cast_UINT16_INT16@25" + IN_RANGE_TWIN]
    assert values.tolist() == [0, 1, 100, 32767]
    assert not any(IN_RANGE_TWIN in name for name in names if "@6" in name or "@9" in name or "BOOL" in name)


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_each_castlike_version_is_a_case_from_each_integer_type_to_each_other_given_and_fed():
    """castlike_FROM_TO@VERSION (its target given by a Constant node) and its #fed twin (fed at
    run time), each of a one-element and (#scalar) a scalar target: a CastLike alone between
    every pair of integer types and bool at each CastLike
    version, of the values the Casts are probed on; each passes onnx's full checker, is its own
    case's node, and its expected output is onnxruntime's (two's complement out of range)."""
    import onnxruntime

    cases = prepare_cases.integer_castlike_cases()
    names = {name for name, *_ in cases}
    pairs = [(a, b) for a in prepare_cases.INTEGER_TYPES for b in prepare_cases.INTEGER_TYPES if a != b]
    for version in schemas.op_versions("CastLike"):
        for a, b in pairs:
            name = f"castlike_{TensorProto.DataType.Name(a)}_{TensorProto.DataType.Name(b)}@{version}"
            assert {name, name + "#fed", name + "#scalar", name + "#fed#scalar"} <= names, name
    assert len(cases) == len(names) == 4 * len(pairs) * len(schemas.op_versions("CastLike"))
    for name, _, data, data_sets, *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        node = probe.main_node(model)
        assert node.op_type == "CastLike"
        fed = [i.name for i in model.graph.input]
        assert fed == (["x", "like"] if "#fed" in name else ["x"]), name
        (values, *like), (want,) = data_sets[0]
        given = like[0] if like else numpy_helper.to_array(model.graph.node[0].attribute[0].t)
        assert given.ndim == (0 if "#scalar" in name else 1), name
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        [got] = session.run(None, dict(zip(fed, [values, *like], strict=True)))
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    [((values,), (wrapped,))] = {name: sets for name, _, _, sets, *_ in cases}["castlike_INT16_INT8@25"]
    assert values.tolist() == [-32768, -1, 0, 1, 100, 32767] and wrapped.tolist() == [0, -1, 0, 1, 100, -1]


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_each_cast_version_is_a_case_between_each_float_and_integer_type_with_the_extremes_apart():
    """cast_FROM_TO@VERSION between float, float16 or double and every integer type and bool, each
    way, of -1, 0, 1 and 100 (those the integer type holds); ``#extremes`` of the integer type's
    least and greatest values the float holds exactly, where there are some. Each passes onnx's
    full checker and its expected output is onnxruntime's; every value is the float's exactly."""
    import onnxruntime

    cases = prepare_cases.float_integer_cast_cases()
    by_name = {name: sets for name, _, _, sets, *_ in cases}
    integers, float_types = prepare_cases.INTEGER_TYPES, prepare_cases.CAST_FLOATS
    pairs = [(a, b) for a in float_types for b in integers] + [(a, b) for a in integers for b in float_types]
    for version in (6, 13, 19, 25):
        expected = {f"cast_{TensorProto.DataType.Name(a)}_{TensorProto.DataType.Name(b)}@{version}" for a, b in pairs}
        assert expected <= set(by_name), sorted(expected - set(by_name))[:3]
    for name, _, data, data_sets, *_ in cases:
        onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
        (values,), (want,) = data_sets[0]
        session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        [got] = session.run(None, {"x": values})
        assert got.dtype == want.dtype and np.array_equal(got, want), name
        as_float = values if values.dtype.kind == "f" else want
        as_integer = want if values.dtype.kind == "f" else values
        if as_integer.dtype != np.bool_:
            assert [int(v) for v in as_float] == [int(v) for v in as_integer], name
    [((ordinary,), _)] = by_name["cast_FLOAT16_UINT32@19"]
    assert ordinary.dtype == np.float16 and ordinary.tolist() == [0, 1, 100]
    assert "cast_FLOAT16_UINT32@19#extremes" not in by_name  # (4294967295 is past float16's range)
    [((extremes,), _)] = by_name["cast_FLOAT16_INT8@19#extremes"]
    assert extremes.dtype == np.float16 and extremes.tolist() == [-128, 127]
    [((extremes,), (want,))] = by_name["cast_FLOAT_INT64@13#extremes"]  # (2^63 - 1 is not a float32)
    assert extremes.tolist() == [-(2**63)] and want.tolist() == [-(2**63)]
    assert "cast_FLOAT_BOOL@13#extremes" not in by_name


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_unsigned_ops_are_cases_of_operands_in_the_upper_half_of_their_range():
    """upper_OP_TYPE@VERSION: each compared, arithmetic and shift op alone on each unsigned type its
    version takes, most operands at or above 2^(bits-1), every exact result in range (Python's
    integers agree); each passes onnx's full checker and its expected output is onnxruntime's
    (onnx.reference's where it has no kernel)."""
    import operator

    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    cases = prepare_cases.unsigned_upper_half_cases()
    names = {name for name, *_ in cases}
    assert {"upper_Less_UINT32@13", "upper_Mod_UINT64@13", "upper_BitShift_RIGHT_UINT8@11"} <= names
    for name, _, data, data_sets, *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        inputs, (want,) = data_sets[0]
        assert (inputs[0] >= np.iinfo(inputs[0].dtype).max // 2 + 1).sum() >= 2, name
        assert len(inputs) == (1 if name.endswith(("#constant", "#node")) else 2) == len(model.graph.input), name
        feeds = {info.name: value for info, value in zip(model.graph.input, inputs, strict=True)}
        try:
            session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        except Exception:  # (no kernel for the type: onnx.reference)
            [got] = ReferenceEvaluator(model).run(None, feeds)
        else:
            [got] = session.run(None, feeds)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
        if not name.endswith(("#constant", "#node")) and want.dtype != np.bool_:
            op_type = name.removeprefix("upper_").split("_")[0]
            left = "_LEFT_" in name
            exact = {"Mod": operator.mod, "Mul": operator.mul, "Add": operator.add, "Sub": operator.sub,
                     "Div": operator.floordiv, "Max": max, "Min": min,
                     "BitShift": operator.lshift if left else operator.rshift}[op_type]  # fmt: skip
            a, b = inputs
            assert [exact(int(p), int(q)) for p, q in zip(a, b, strict=True)] == [int(v) for v in want], name
    [((a, b), (less,))] = {name: sets for name, _, _, sets, *_ in cases}["upper_Less_UINT32@13"]
    assert a[0] == 2**32 - 1 and not less[0] and "upper_Less_UINT32@13#constant" in names


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_signed_ops_are_cases_past_float32s_int32s_and_float64s_integers_beside_small_ones():
    """wide_OP_TYPE@VERSION: each compared, arithmetic and selecting op alone on int32 and int64
    where its version takes them, fed the type's extremes and values one step past 2^24 (and in
    64 bits 2^31, 2^32 and 2^53); small_OP_TYPE@VERSION the same op fed small values of both
    signs. Each passes onnx's full checker, its expected output is Python's exact integer (Div
    truncating toward zero, Mod of the divisor's sign, or the dividend's with fmod=1), and both
    onnxruntime and onnx.reference give it."""
    import onnxruntime
    from onnx.reference import ReferenceEvaluator

    cases = prepare_cases.signed_wide_cases()
    by_name = {name: (data, sets) for name, _, data, sets, *_ in cases}
    labels = ("Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Equal", "Max", "Min", "Add", "Sub", "Mul", "Div",
              "Mod", "Mod_1", "Abs", "Neg", "Where")  # fmt: skip
    for op_type in labels:
        for type_name in ("INT32", "INT64"):
            assert any(n.startswith(f"wide_{op_type}_{type_name}@") for n in by_name), (op_type, type_name)
    assert {name.replace("wide_", "small_", 1) for name in by_name if name.startswith("wide_")} == {
        name for name in by_name if name.startswith("small_")
    }
    for name, (data, data_sets) in by_name.items():
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        inputs, (want,) = data_sets[0]
        feeds = {info.name: value for info, value in zip(model.graph.input, inputs, strict=True)}
        [by_reference] = ReferenceEvaluator(model).run(None, feeds)
        [by_onnxruntime] = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
        for got in (by_reference, by_onnxruntime):
            assert got.dtype == want.dtype and np.array_equal(got, want), name
        if "#" not in name:  # (a #constant or #node variant feeds only the first, Where's condition)
            values = inputs[-1] if name.startswith("wide_Where") else inputs[0]
            largest = int(np.abs(values.astype(object)).max())
            assert largest > 2**24 if name.startswith("wide_") else largest < 2**7, name
    (a, b), (quotient,) = by_name["wide_Div_INT32@14"][1][0]
    assert a[0] == 2**31 - 1 and b[0] == 1 and quotient[0] == 2**31 - 1
    assert 2**53 + 1 in by_name["wide_Equal_INT64@13"][1][0][0][0].tolist()
    (a, b), (remainder,) = by_name["small_Mod_1_INT64@13"][1][0]
    assert [np.fmod(p, q) for p, q in zip(a, b, strict=True)] == remainder.tolist()
    assert "wide_Where_INT64@16#constant" in by_name and "wide_Abs_INT32@13#constant" not in by_name


@pytest.mark.slow  # (each case of the set run in onnxruntime)
def test_ieee_cases_feed_every_class_of_float_value_and_hold_ieee_754s_answers():
    """ieee_OP_TYPE_TYPE@VERSION: each exact or correctly rounded float op alone on float16, float
    and double where its version takes them, fed zeros, subnormals, the extremes, infinities and
    NaN (each pair of them for two operands) and values spread over every binade. Each passes
    onnx's full checker; onnxruntime and onnx.reference give its expected output within its
    tolerance (exact for the exact ops; 2 machine epsilons, relative, and 2 subnormal steps for
    the rounded ones), which a result 8 ulps off or computed in float32 misses; and the expected
    outputs are numpy's on the cases that tell a runtime's shortcuts apart."""
    import onnxruntime
    from onnx.reference import ReferenceEvaluator
    from probe import matches

    cases = prepare_cases.ieee_cases()
    by_name = {name: (data, sets, rtol, atol) for name, _, data, sets, rtol, atol in cases}
    for op_type, attributes, _, _ in prepare_cases.IEEE_OPS:
        label = "_".join([op_type, *map(str, attributes.values())])
        for type_name in ("FLOAT16", "FLOAT", "DOUBLE"):
            assert any(n.startswith(f"ieee_{label}_{type_name}@") for n in by_name), (label, type_name)
    for name, (data, data_sets, rtol, atol) in by_name.items():
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        inputs, (want,) = data_sets[0]
        feeds = {info.name: value for info, value in zip(model.graph.input, inputs, strict=True)}
        with np.errstate(all="ignore"):  # (IEEE 754's answers: 0/0 is NaN, 1/0 infinite)
            found = [ReferenceEvaluator(model).run(None, feeds)[0]]
        try:
            session = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
        except Exception as error:  # (no double Max-6 or Min-6 kernel)
            assert "NOT_IMPLEMENTED" in str(error) and name.startswith(("ieee_Max_DOUBLE@6", "ieee_Min_DOUBLE@6"))
        else:
            found.append(session.run(None, feeds)[0])
        for got in found:
            assert matches(got, want, rtol, atol), name
        op_type = name.removeprefix("ieee_").split("_")[0]
        rounded = op_type in ("Sqrt", "Reciprocal", "Add", "Sub", "Mul", "Div")
        info = np.finfo(inputs[0].dtype)
        stated = (2 * float(info.eps), 2 * float(info.smallest_subnormal)) if rounded else (0.0, 0.0)
        assert (rtol, atol) == stated, name
        if "#" not in name:
            values = inputs[0]
            for special in (0.5, 1.5, 2.5, info.max, info.smallest_normal, info.smallest_subnormal, np.inf):
                assert special in values and -special in values, (name, special)
            nan_fed = op_type not in prepare_cases.NAN_UNDEFINED
            assert np.isnan(values).any() == nan_fed and np.signbit(values[values == 0]).any(), name
            _, exponents = np.frexp(np.abs(values[np.isfinite(values) & (values != 0)]).astype(np.float64))
            assert exponents.min() <= info.minexp - info.nmant + 2 and exponents.max() >= info.maxexp - 1, name
            binades = info.maxexp - info.minexp + info.nmant + 1
            assert len(np.unique(exponents)) >= min(binades, prepare_cases.IEEE_SPREAD) / 2, name
    (a, b), (remainder,) = by_name["ieee_Mod_1_FLOAT@13"][1][0]
    assert np.float32(-3) in a[(b == np.inf)] and remainder[(a == -3) & (b == np.inf)].tolist() == [-3.0]
    (x,), (rounded,) = by_name["ieee_Round_FLOAT@11"][1][0]
    assert rounded[x == 0.5].tolist() == [0.0] and rounded[x == 2.5].tolist() == [2.0] and rounded[x == 1.5] == 2
    (x,), (signs,) = by_name["ieee_Sign_FLOAT@13"][1][0]
    assert signs[np.isinf(x)].tolist() == [1.0, -1.0] and not np.isnan(x).any()
    (x,), (nan,) = by_name["ieee_IsNaN_FLOAT16@9"][1][0]
    assert nan.tolist() == np.isnan(x).tolist() and nan.sum() == 1
    (a, b), (total,) = by_name["ieee_Add_FLOAT@14"][1][0]
    biggest = np.finfo(np.float32).max
    assert total[(a == biggest) & (b == biggest)].tolist() == [np.inf]
    (a, b), (quotient,) = by_name["ieee_Div_FLOAT@14"][1][0]
    least = np.finfo(np.float32).smallest_subnormal
    assert quotient[(a == least) & (b == least)].tolist() == [1.0]
    _, _, rtol, atol = by_name["ieee_Div_FLOAT@14"]
    with np.errstate(all="ignore"):  # (by the reciprocal: 1 ulp off, or infinite past 2^128)
        assert not matches(a * (np.float32(1) / b), quotient, rtol, atol)
        (_, _), (product,) = by_name["ieee_Mul_DOUBLE@14"][1][0]
        _, _, rtol, atol = by_name["ieee_Mul_DOUBLE@14"]
        finite = np.isfinite(product) & (np.abs(product) > 1)
        eight_ulps_off = np.where(finite, product * (1 + 8 * np.finfo(np.float64).eps), product)
        assert not matches(eight_ulps_off, product, rtol, atol)
        (a, b), (greater,) = by_name["ieee_Greater_FLOAT16@13"][1][0]
        assert not greater[np.isnan(a)].any() and not greater[np.isnan(b)].any()
        (x,), (absolute,) = by_name["ieee_Abs_DOUBLE@13"][1][0]
        assert not matches(np.abs(x).astype(np.float32).astype(np.float64), absolute, 0.0, 0.0)
    assert "ieee_Mod_1_DOUBLE@13#constant" in by_name and "ieee_Abs_FLOAT@13#constant" not in by_name


def test_integer_cumsum_cases_hold_the_exact_sums_of_each_attribute_combination():
    """small_CumSum_* on int32 and int64 at versions 11 and 14: each expected sum numpy's (in
    Python's integers), forward or reversed, inclusive or exclusive; each model valid."""
    cases = prepare_cases.integer_cumsum_cases()
    plain = [case for case in cases if "#" not in case[0]]
    assert len(plain) == 2 * 2 * len(prepare_cases.CUMSUM_ATTRIBUTES) and len(cases) == 3 * len(plain)
    for name, _, data, data_sets, *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        [node] = [n for n in model.graph.node if n.op_type == "CumSum"]  # (#node: a Constant gives the axis)
        attributes = {a.name: a.i for a in node.attribute}
        [(inputs, [expected])] = data_sets
        x = inputs[0][::-1] if attributes.get("reverse") else inputs[0]
        sums = np.cumsum(x.astype(np.int64)) - (x if attributes.get("exclusive") else 0)
        assert expected.dtype == inputs[0].dtype and expected.tolist() == (sums[::-1] if attributes.get("reverse")
                                                                           else sums).tolist(), name  # fmt: skip


def test_uneven_pads_cases_hold_the_windows_numpy_makes():
    """uneven_* poolings: each expected output is numpy's over the padded input (the maximum
    with -inf padding; the mean over the input's elements, or over the whole window with
    count_include_pad; the p=2 norm; Conv's weighted sum), of the shape onnx's inference gives;
    each model valid."""
    cases = prepare_cases.uneven_pads_cases()
    ops = {onnx.load_from_string(case[2]).graph.node[0].op_type for case in cases}
    assert ops == {"AveragePool", "MaxPool", "LpPool", "Conv"}
    checked = 0
    for name, _, data, data_sets, *_ in cases:
        model = onnx.load_from_string(data)
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.output[0]
        [node] = model.graph.node
        [([x], [expected])] = data_sets
        dims = [d.dim_value for d in inferred.type.tensor_type.shape.dim]
        assert dims == list(expected.shape), name
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        begin_h, begin_w, end_h, end_w = attributes["pads"]
        stride = attributes.get("strides", [1, 1])[0]
        fill = -np.inf if node.op_type == "MaxPool" else 0.0
        padded = np.pad(x[0, 0], ((begin_h, end_h), (begin_w, end_w)), constant_values=fill)
        inside = np.pad(np.ones_like(x[0, 0]), ((begin_h, end_h), (begin_w, end_w)))
        rows, columns = expected.shape[2:]
        windows = [[(padded[i * stride : i * stride + 2, j * stride : j * stride + 2],
                     inside[i * stride : i * stride + 2, j * stride : j * stride + 2])
                    for j in range(columns)] for i in range(rows)]  # fmt: skip
        if node.op_type == "MaxPool":
            want = [[w.max() for w, _ in row] for row in windows]
        elif node.op_type == "AveragePool":
            count = (lambda m: 4) if attributes.get("count_include_pad") else (lambda m: m.sum())
            want = [[w.sum() / count(m) for w, m in row] for row in windows]
        elif node.op_type == "LpPool":
            want = [[np.sqrt((w**2).sum()) for w, _ in row] for row in windows]
        else:  # (Conv: each window against its weights)
            weights = numpy_helper.to_array(model.graph.initializer[0])[0, 0]
            want = [[(w * weights).sum() for w, _ in row] for row in windows]
        np.testing.assert_allclose(expected[0, 0], np.array(want, np.float32), rtol=1e-6, atol=1e-6, err_msg=name)
        checked += 1
    assert checked == len(cases) > 100


def test_a_case_of_a_deprecated_version_is_one_of_the_op_that_takes_its_place():
    """Upsample-10 is deprecated: test_upsample_nearest taken to opset 10 is one Resize-10, a
    case of Resize-10 named for the Upsample case."""
    [case] = backend_cases_named("test_upsample_nearest")
    entry = ("test_upsample_nearest", 9, case.model.SerializeToString())
    taken = {name: (opset, written) for name, opset, written in prepare_cases.at_other_versions([entry], "Upsample", 9)}
    assert taken.keys() == {"test_upsample_nearest@10"}  # (Upsample-7 takes scales as an attribute: not written)
    opset, written = taken["test_upsample_nearest@10"]
    assert opset == 10 and [n.op_type for n in onnx.load_from_string(written).graph.node] == ["Resize"]


def test_onnxruntimes_outputs_go_beside_each_case_of_a_float_output_and_the_probe_reads_them(tmp_path):
    """Per case with a float output, onnxruntime's outputs on each data set (what the probe judges
    "right as onnxruntime" by); none for a case of integer outputs, one onnxruntime refuses, or
    one whose outputs are drawn at random; the probe reads them beside the cases (and a list of
    cases alone, as written before)."""
    import pickle

    import probe

    def case(name: str, op_type: str, element_type: int, data_sets: list) -> tuple:
        x, y = (helper.make_tensor_value_info(v, element_type, [2]) for v in "xy")
        model = make_model([helper.make_node(op_type, ["x"], ["y"])], [x], [y], opset=13)
        return name, 13, model.SerializeToString(), data_sets, 1e-3, 1e-7

    floats = [([np.float32([1, -2])], [np.float32([-1, 2])]), ([np.float32([0.5, 3])], [np.float32([-0.5, -3])])]
    integers = [([np.int32([1, -2])], [np.int32([-1, 2])])]
    cases = [case("neg_float", "Neg", TensorProto.FLOAT, floats), case("neg_int", "Neg", TensorProto.INT32, integers),
             case("refused", "NoSuchOp", TensorProto.FLOAT, floats),
             case("drawn", "RandomUniformLike", TensorProto.FLOAT, floats)]  # fmt: skip
    x, y = (helper.make_tensor_value_info(v, TensorProto.FLOAT, [8]) for v in "xy")
    in_training = [numpy_helper.from_array(np.float32(0.5), "r"), numpy_helper.from_array(np.bool_(True), "t")]
    dropout = make_model([helper.make_node("Dropout", ["x", "r", "t"], ["y"])], [x], [y], opset=13,
                         initializer=in_training)  # fmt: skip
    eight = [([np.arange(8, dtype=np.float32)], [np.arange(8, dtype=np.float32)])]
    cases.append(("training_dropout#constant", 13, dropout.SerializeToString(), eight, 1e-3, 1e-7))
    references = prepare_cases.onnxruntime_references(cases)
    assert list(references) == ["neg_float"]
    assert [[output.tolist() for output in outputs] for outputs in references["neg_float"]] == [[[-1, 2]], [[-0.5, -3]]]
    path = tmp_path / "cases.pkl"
    path.write_bytes(pickle.dumps({"cases": cases, "onnxruntime": references}))
    read = {name: rest[-1] for name, *rest in probe.probed_cases(path)}
    assert [[output.tolist() for output in outputs] for outputs in read["neg_float"]] == [[[-1, 2]], [[-0.5, -3]]]
    assert read["neg_int"] is None and read["refused"] is None and read["drawn"] is None
    path.write_bytes(pickle.dumps(cases))
    assert [rest[-1] for _, *rest in probe.probed_cases(path)] == [None] * 5
