"""A node's form (lowering/node_forms.py) and verdicts read from the probe cases nearest it: the
classes of its attributes, which inputs are fed or constant, the cases a runtime's verdict on
the node is read from, and the shipped forms being those of the probed cases."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from version_cases import node_cases

from lowering.node_forms import (
    CASE_FORMS,
    DEFAULT,
    OTHER_SHAPES,
    SET,
    NodeForm,
    case_forms,
    constants_given_by_nodes,
    nearest_cases,
    node_form,
    value_sources,
)
from lowering.runtime_profiles import (
    DOUBTFUL,
    PARTLY,
    PROFILES,
    REFUSED,
    SUPPORTED,
    profile_from_data,
    profile_names,
)
from lowering.target_lowering import check_model
from lowering.value_kinds import CASE_VALUES, DOWNSAMPLING, KINDS, NEGATIVE_INDICES

TARGETS = Path(__file__).resolve().parents[1] / "targets"


def test_an_int_or_string_attribute_is_classed_by_its_value_and_the_schema_default_fills_in():
    reshape = helper.make_node("Reshape", ["x", "shape"], ["y"])
    form = node_form(reshape, 21, fed_names={"x"}, constant_names={"shape"})
    assert form.inputs == {0, 1} and form.fed == {0} and form.constant == {1} and form.outputs == {0}
    schema = onnx.defs.get_schema("Reshape", 21)
    assert form.attribute_class(schema, "allowzero") == "0"
    allowing = node_form(helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1), 21, (), ())
    assert allowing.attribute_class(schema, "allowzero") == "1"
    resize = node_form(helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic"), 19, (), ())
    assert resize.inputs == {0, 2}
    assert resize.attribute_class(onnx.defs.get_schema("Resize", 19), "mode") == "'cubic'"
    assert resize.attribute_class(onnx.defs.get_schema("Resize", 19), "antialias") == "0"


def test_a_float_or_list_attribute_is_set_only_where_it_differs_from_the_default():
    schema = onnx.defs.get_schema("Attention", 23)
    for softcap, wanted in [(0.0, DEFAULT), (30.0, SET)]:
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"], softcap=softcap)
        assert node_form(node, 23, (), ()).attribute_class(schema, "softcap") == wanted
    assert (
        node_form(helper.make_node("Attention", ["q", "k", "v"], ["y"]), 23, (), ()).attribute_class(schema, "softcap")
        == DEFAULT
    )
    transpose = helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])
    assert node_form(transpose, 21, (), ()).attributes == (("perm", SET),)


def _form(inputs, fed, constant, attributes=(), outputs=(0,), ranks=(), empty=(), types=(), lengths=()) -> NodeForm:
    return NodeForm(frozenset(inputs), frozenset(fed), frozenset(constant), frozenset(outputs), tuple(attributes),
                    tuple(ranks), frozenset(empty), tuple(types), lengths=tuple(lengths))  # fmt: skip


def test_the_nearest_cases_feed_what_the_node_feeds_and_prefer_its_constants(monkeypatch):
    forms = {
        "fed": _form({0, 1}, {0, 1}, ()),
        "constant": _form({0, 1}, {0}, {1}),
        "allowing": _form({0, 1}, {0}, {1}, [("allowzero", "1")]),
    }
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("fed", "fails", "shape input is variable"), ("constant", "right", ""), ("allowing", "fails", "")]
    schema = onnx.defs.get_schema("Reshape", 21)
    fed_shape = _form({0, 1}, {0, 1}, ())
    assert nearest_cases(outcomes, fed_shape, schema) == [outcomes[0]]
    constant_shape = _form({0, 1}, {0}, {1})
    assert nearest_cases(outcomes, constant_shape, schema) == [outcomes[1]]
    allowing = _form({0, 1}, {0}, {1}, [("allowzero", "1")])
    assert nearest_cases(outcomes, allowing, schema) == [outcomes[2]]
    computed_shape = _form({0, 1}, (), ())  # (neither fed nor constant: every case is as near)
    assert nearest_cases(outcomes, computed_shape, schema) == outcomes[:2]
    with_a_third_input = _form({0, 1, 2}, {0}, ())
    assert nearest_cases(outcomes, with_a_third_input, schema) == []


def test_an_attribute_value_no_case_has_is_passed_over(monkeypatch):
    forms = {
        "heads_2": _form({0}, {0}, (), [("q_num_heads", "2")]),
        "heads_4": _form({0}, {0}, (), [("q_num_heads", "4")]),
    }
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("heads_2", "right", ""), ("heads_4", "fails", "")]
    schema = onnx.defs.get_schema("Attention", 23)
    assert nearest_cases(outcomes, _form({0}, {0}, (), [("q_num_heads", "4")]), schema) == [outcomes[1]]
    assert nearest_cases(outcomes, _form({0}, {0}, (), [("q_num_heads", "12")]), schema) == outcomes


def test_a_node_stating_an_attribute_at_its_default_is_read_from_the_cases_that_state_it(monkeypatch):
    """onnx2torch reads a CumSum's ``reverse`` left out as 1 and stated 0 as 0: both are class
    "0", and the cases that state it where the node does (or leave it out where it does) are
    the nearest; where no case does, every case of the class is."""
    forms = {
        "left_out": _form({0, 1}, {0}, {1}),
        "stated": _form({0, 1}, {0}, {1}, [("reverse", "0")]),
        "reversed": _form({0, 1}, {0}, {1}, [("reverse", "1")]),
    }
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("left_out", "wrong", ""), ("stated", "right", ""), ("reversed", "right", "")]
    schema = onnx.defs.get_schema("CumSum", 14)
    assert nearest_cases(outcomes, _form({0, 1}, {0}, {1}), schema) == [outcomes[0]]
    assert nearest_cases(outcomes, _form({0, 1}, {0}, {1}, [("reverse", "0")]), schema) == [outcomes[1]]
    assert nearest_cases(outcomes, _form({0, 1}, {0}, {1}, [("reverse", "1")]), schema) == [outcomes[2]]
    unstated = [outcomes[0], outcomes[2]]
    assert nearest_cases(unstated, _form({0, 1}, {0}, {1}, [("reverse", "0")]), schema) == [outcomes[0]]


def test_a_rank_no_case_leaving_an_attribute_out_has_outweighs_its_being_stated(monkeypatch):
    """Statedness is the last thing the nearest cases are chosen by: a 5-D GridSample leaving
    ``mode`` out is read from the 5-D case that states it (OpenVINO 2024.6 fails both), not from
    a 4-D case that leaves it out and runs."""
    forms = {
        "planar_left_out": _form({0, 1}, {0, 1}, (), ranks=[(0, 4), (1, 4)]),
        "volumetric_stated": _form({0, 1}, {0, 1}, (), [("mode", "'linear'")], ranks=[(0, 5), (1, 5)]),
    }
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("planar_left_out", "right", ""), ("volumetric_stated", "fails", "")]
    schema = onnx.defs.get_schema("GridSample", 20)
    volumetric = _form({0, 1}, {0, 1}, (), ranks=[(0, 5), (1, 5)])
    assert nearest_cases(outcomes, volumetric, schema) == [outcomes[1]]
    planar = _form({0, 1}, {0, 1}, (), ranks=[(0, 4), (1, 4)])
    assert nearest_cases(outcomes, planar, schema) == [outcomes[0]]


def _profile(cases: dict[str, str], op_type: str = "Reshape", version: int = 21):
    """A probed profile loading opset ``version``, of float cases of ``op_type``-``version``."""
    return profile_from_data({
        "name": "made-up", "runtime": "made-up", "runtime_version": "0", "source": {"kind": "probed", "how": "a test"},
        "opsets": [version],
        "cases": {name: {"op": op_type, "version": version, "type": "FLOAT", "verdict": verdict}
                  for name, verdict in cases.items()},
    })  # fmt: skip


def _reshape_model(shape_fed: bool) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
    initializers = []
    if shape_fed:
        inputs.append(helper.make_tensor_value_info("shape", TensorProto.INT64, [2]))
    else:
        initializers.append(numpy_helper.from_array(np.array([3, 2], np.int64), "shape"))
    reshape = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])
    graph = helper.make_graph([reshape], "g", inputs, [output], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_a_verdict_is_read_from_the_cases_of_the_nodes_form():
    """A runtime that reshapes by a constant shape only (tract): the node with its shape fed is
    refused in the words of a case that fed it; with a constant shape it is supported; a
    profile without forms for its cases gives the verdict of every case (partly)."""
    shipped = case_forms()
    fed, constant = "test_reshape_reordered_all_dims", "test_reshape_reordered_all_dims#constant"
    assert shipped[fed].fed == {0, 1} and shipped[constant].constant == {1}
    made_up = _profile({fed: "fails", constant: "right"})
    [finding] = check_model(_reshape_model(shape_fed=True), made_up)
    assert finding.verdict.kind == REFUSED and "nearest its form (inputs 0, 1 fed" in finding.verdict.why
    assert check_model(_reshape_model(shape_fed=False), made_up) == []
    unknown = _profile({"not a probed case": "fails", "nor this one": "right"})
    [finding] = check_model(_reshape_model(shape_fed=False), unknown)
    assert finding.verdict.kind == PARTLY


def test_the_verdict_of_a_profile_without_a_form_given_is_every_cases():
    fed, constant = "test_reshape_reordered_all_dims", "test_reshape_reordered_all_dims#constant"
    made_up = _profile({fed: "fails", constant: "right"})
    assert made_up.verdict("Reshape", 21, "FLOAT").kind == PARTLY
    assert made_up.verdict("Reshape", 21, "FLOAT", case_forms()[constant]).kind == SUPPORTED


PROBED = [name for name in profile_names() if "cases" in json.loads((PROFILES / f"{name}.json").read_text())]


@pytest.mark.parametrize("name", PROBED)
def test_every_probed_case_of_a_shipped_profile_has_its_form(name):
    data = json.loads((PROFILES / f"{name}.json").read_text())
    assert data["cases"]
    missing = sorted(set(data["cases"]) - set(case_forms()))
    assert not missing, missing[:5]


@pytest.mark.slow
def test_the_shipped_forms_and_kinds_of_values_are_those_of_the_prepared_cases(monkeypatch):
    sys.path.insert(0, str(TARGETS))
    try:
        import prepare_cases
    finally:
        sys.path.remove(str(TARGETS))
    monkeypatch.setattr(prepare_cases, "backend_cases", node_cases)  # (the backend cases the tests collected)
    cases = prepare_cases.all_cases()
    written = {name: prepare_cases.case_form(onnx.load_from_string(data), opset).as_data()
               for name, opset, data, *_ in cases}  # fmt: skip
    shipped = json.loads(CASE_FORMS.read_text())
    retired = {name: shipped[name] for name in set(shipped) - set(written)}  # (cases the set no longer makes)
    held = set().union(*(json.loads((PROFILES / f"{name}.json").read_text()).get("cases", {}) for name in PROBED))
    assert set(retired) <= held  # (kept only while a shipped profile holds its verdicts)
    assert written == {name: form for name, form in shipped.items() if name not in retired}
    kinds = {case[0]: prepare_cases.kinds_of_case(case) for case in cases}
    shipped_values = json.loads(CASE_VALUES.read_text())
    for kind in KINDS:
        found = {name for name, held in kinds.items() if kind in held}
        assert found == set(shipped_values[kind]) - set(retired), kind
    negative, shrinking = set(shipped_values[NEGATIVE_INDICES]), set(shipped_values[DOWNSAMPLING])
    assert {"test_gather_elements_negative_indices", "test_gather_elements_negative_indices#constant"} <= negative
    assert "test_gather_elements_0" not in negative and "test_gather_elements_0#constant" not in negative
    assert {"test_resize_downsample_scales_nearest", "test_resize_downsample_sizes_nearest@13"} <= shrinking
    assert not {"test_resize_upsample_scales_nearest", "test_resize_upsample_sizes_nearest@13"} & shrinking


def test_values_computed_from_fed_values_are_fed_and_from_constants_constant():
    """A shape computed from a fed value's contents is fed (the runtime cannot know it); one
    computed from a fed value's shape is neither (a runtime may fold it); from constants only,
    constant; inside an If branch the same."""
    nodes = [
        helper.make_node("Add", ["n", "one"], ["n_plus_one"]),  # (from a fed value: fed)
        helper.make_node("Concat", ["n_plus_one", "one"], ["from_data"], axis=0),
        helper.make_node("Shape", ["x"], ["shape_of_x"]),  # (from a fed value's shape: neither)
        helper.make_node("Mul", ["one", "one"], ["from_constants"]),
        helper.make_node("Constant", [], ["c"], value_ints=[2]),
        helper.make_node("RandomNormal", [], ["drawn"], shape=[2]),
        helper.make_node("If", ["cond"], ["branch_out"], then_branch=helper.make_graph(
            [helper.make_node("Neg", ["n"], ["negated"])], "then", [],
            [helper.make_tensor_value_info("negated", TensorProto.INT64, [1])]), else_branch=helper.make_graph(
            [helper.make_node("Identity", ["one"], ["kept"])], "else", [],
            [helper.make_tensor_value_info("kept", TensorProto.INT64, [1])])),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, t, [1]) for n, t in [("x", TensorProto.FLOAT), ("n", TensorProto.INT64),
                                                               ("cond", TensorProto.BOOL)]],
        [helper.make_tensor_value_info("branch_out", TensorProto.INT64, [1])],
        [numpy_helper.from_array(np.array([1], np.int64), "one")],
    )  # fmt: skip
    fed, constant = value_sources(helper.make_model(graph))
    assert {"x", "n", "cond", "n_plus_one", "from_data", "negated", "branch_out"} <= fed
    assert {"one", "from_constants", "c", "kept"} <= constant
    assert not {"shape_of_x", "drawn"} & (fed | constant)
    assert not fed & constant


def test_an_empty_fed_input_is_nearest_the_cases_of_an_empty_one(monkeypatch):
    forms = {"empty": _form({0, 1}, {0, 1}, (), empty={1}), "full": _form({0, 1}, {0, 1}, ())}
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("empty", "right", ""), ("full", "fails", "expected axes as a constant")]
    schema = onnx.defs.get_schema("ReduceSum", 13)
    assert nearest_cases(outcomes, _form({0, 1}, {0, 1}, ()), schema) == [outcomes[1]]
    assert nearest_cases(outcomes, _form({0, 1}, {0, 1}, (), empty={1}), schema) == [outcomes[0]]


def test_a_fed_parameters_length_picks_the_cases_of_that_length(monkeypatch):
    """rknn runs an Unsqueeze fed one axis and fails one fed two ("'axes' has a duplicate axis")."""
    forms = {"one_axis": _form({0, 1}, {0, 1}, (), ranks=[(0, 3), (1, 1)], lengths=[(1, 1)]),
             "two_axes": _form({0, 1}, {0, 1}, (), ranks=[(0, 3), (1, 1)], lengths=[(1, 2)])}  # fmt: skip
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("one_axis", "right", ""), ("two_axes", "fails", "'axes' has a duplicate axis")]
    schema = onnx.defs.get_schema("Unsqueeze", 13)
    node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"])
    for length, nearest in ((1, outcomes[0]), (2, outcomes[1])):
        form = node_form(node, 13, {"x", "axes"}, (), {"x": (3, 4, 5), "axes": (length,)})
        assert form.lengths == ((1, length),) and f"lengths {length} (input 1)" in form.describe()
        assert nearest_cases(outcomes, form, schema) == [nearest]
    for length, nearest in ((3, outcomes[1]), (5, outcomes[1])):  # (a length no case has: the nearest one)
        longer = node_form(node, 13, {"x", "axes"}, (), {"x": (3, 4, 5), "axes": (length,)})
        assert nearest_cases(outcomes, longer, schema) == [nearest]
    forms["three_axes"] = _form({0, 1}, {0, 1}, (), ranks=[(0, 3), (1, 1)], lengths=[(1, 3)])
    three_axes = ("three_axes", "right", "")
    fed_two = node_form(node, 13, {"x", "axes"}, (), {"x": (3, 4, 5), "axes": (2,)})
    assert nearest_cases([*outcomes, three_axes], fed_two, schema) == [outcomes[1]]  # (its own length)
    assert nearest_cases([outcomes[0], three_axes], fed_two, schema) == [three_axes]  # (a tie: the longer)
    fed_one = node_form(node, 13, {"x", "axes"}, (), {"x": (3, 4, 5), "axes": (1,)})
    assert nearest_cases([outcomes[1], three_axes], fed_one, schema) == [outcomes[1]]  # (shorter than every case)
    forms["no_axes"] = _form({0, 1}, {0, 1}, (), ranks=[(0, 3), (1, 1)], empty={1}, lengths=[(1, 0)])
    no_axes = ("no_axes", "right", "")
    assert nearest_cases([no_axes, outcomes[1]], fed_one, schema) == [outcomes[1]]  # (0 or 2 from 1: the longer)
    data_length = node_form(node, 13, {"x"}, {"axes"}, {"x": (3,), "axes": (2,)})
    assert data_length.lengths == ()  # (a constant parameter's, and a data input's, length is no part of a form)
    assert NodeForm.from_data(form.as_data()) == form


def test_an_ifs_branches_giving_outputs_of_shapes_known_to_differ_are_a_form_of_their_own():
    """tract analyses no If whose branches give other shapes (a DFT's rule writes one for an axis
    fed at run time): such branches are OTHER_SHAPES, read from the shapes given or as declared;
    other ranks differ; lengths neither branch knows alike do not."""

    def if_node(then_shape, else_shape, then_name="t", else_name="e"):
        then = helper.make_graph(
            [], "then", [], [helper.make_tensor_value_info(then_name, TensorProto.FLOAT, then_shape)]
        )
        otherwise = helper.make_graph(
            [], "else", [], [helper.make_tensor_value_info(else_name, TensorProto.FLOAT, else_shape)]
        )
        return helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=otherwise)

    def branches(node, shapes=None):
        return dict(node_form(node, 19, {"c"}, (), shapes or {}).attributes)

    assert branches(if_node([2, 3], [3, 2])) == {"then_branch": OTHER_SHAPES, "else_branch": OTHER_SHAPES}
    assert branches(if_node([2, 3], [6])) == {"then_branch": OTHER_SHAPES, "else_branch": OTHER_SHAPES}
    assert branches(if_node([2, 3], [2, 3])) == {"then_branch": SET, "else_branch": SET}
    assert branches(if_node([2, "n"], ["m", 3])) == {"then_branch": SET, "else_branch": SET}
    assert branches(if_node(None, [3, 2])) == {"then_branch": SET, "else_branch": SET}
    inferred = {"t": (1, 10, 6, 2), "e": (1, 6, 10, 2)}  # (shape inference's, where nothing is declared)
    assert branches(if_node(None, None), inferred)["then_branch"] == OTHER_SHAPES
    assert "then_branch=other shapes" in node_form(if_node([2, 3], [3, 2]), 19, {"c"}, ()).describe()


def test_an_inputs_element_type_picks_the_cases_of_that_type(monkeypatch):
    float_mask, bool_mask = (3, TensorProto.FLOAT), (3, TensorProto.BOOL)
    forms = {"float": _form({0, 1, 2, 3}, {0, 1, 2, 3}, (), types=[float_mask]),
             "bool": _form({0, 1, 2, 3}, {0, 1, 2, 3}, (), types=[bool_mask])}  # fmt: skip
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("float", "right", ""), ("bool", "fails", "Mask must be floating point")]
    schema = onnx.defs.get_schema("Attention", 23)
    node = _form({0, 1, 2, 3}, {0, 1, 2, 3}, (), types=[(0, TensorProto.FLOAT), bool_mask])
    assert nearest_cases(outcomes, node, schema) == [outcomes[1]]
    assert "input 3 BOOL" in node.describe()


def _cast_profile(cases: dict[str, tuple[str, str]]):
    return profile_from_data({
        "name": "made-up", "runtime": "made-up", "runtime_version": "0", "source": {"kind": "probed", "how": "a test"},
        "opsets": [21],
        "cases": {name: {"op": "Cast", "version": 21, "type": type_name, "verdict": verdict}
                  for name, (type_name, verdict) in cases.items()},
    })  # fmt: skip


def test_cases_that_all_fail_but_none_of_the_nodes_attribute_value_are_doubtful_not_refused():
    """rknn fails every Cast-13 case from float (to bfloat16, float16, string...), and runs some
    from other types: a Cast to int64, which no case casts to, is doubtful (lowered where a
    pattern can, never blocking); the same node casting to bfloat16 is refused. Where no case of
    the version ran right on any type (onnx2torch implements no Cast-25), the attribute is not
    why: refused."""
    cases = {
        "test_cast_FLOAT_to_BFLOAT16": ("FLOAT", "fails"),
        "test_cast_FLOAT_to_FLOAT16": ("FLOAT", "wrong"),
        "test_cast_INT32_to_FLOAT": ("INT32", "right"),
    }
    made_up = _cast_profile(cases)
    for to, kind in [(TensorProto.INT64, DOUBTFUL), (TensorProto.BFLOAT16, REFUSED)]:
        node = helper.make_node("Cast", ["x"], ["y"], to=to)
        form = node_form(node, 21, {"x"}, (), {"x": (3, 4)}, {"x": TensorProto.FLOAT})
        verdict = made_up.verdict("Cast", 21, "FLOAT", form)
        assert verdict.kind == kind and not (kind == DOUBTFUL and verdict.blocks)
    never_right = _cast_profile({**cases, "test_cast_INT32_to_FLOAT": ("INT32", "fails")})
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64)
    form = node_form(node, 21, {"x"}, (), {"x": (3, 4)}, {"x": TensorProto.FLOAT})
    assert never_right.verdict("Cast", 21, "FLOAT", form).blocks
    assert (
        f"none with its to={TensorProto.INT64}"
        in made_up.verdict(
            "Cast", 21, "FLOAT", node_form(helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT64), 21, {"x"}, ())
        ).why
    )


def test_a_constant_a_node_gives_is_nearest_the_cases_of_one_a_node_gives(monkeypatch):
    """A Conv whose bias a node gives (a Constant, an Identity of a weight) is judged by the cases
    of a bias a node gives (onnx2torch fails them: KeyError), one of an initializer by the others;
    where no case has the node's way, both count."""
    import dataclasses

    initialized = _form({0, 1, 2}, {0}, {1, 2})
    forms = {"by_node": dataclasses.replace(initialized, from_nodes=frozenset({2})), "initialized": initialized}
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("by_node", "fails", "KeyError"), ("initialized", "right", "")]
    schema = onnx.defs.get_schema("Conv", 11)
    assert nearest_cases(outcomes, forms["by_node"], schema) == [outcomes[0]]
    assert nearest_cases(outcomes, initialized, schema) == [outcomes[1]]
    weight_by_node = dataclasses.replace(initialized, from_nodes=frozenset({1}))  # (no case gives a weight so)
    assert nearest_cases(outcomes, weight_by_node, schema) == [outcomes[1]]


def test_whether_a_node_gives_a_constant_weighs_before_the_attributes(monkeypatch):
    """A grouped Conv whose weights a Constant gives (the lowered LpPool's) is judged by the cases
    of weights a node gives, though none of those is grouped, not by a grouped one of
    initializer weights: onnx2torch reads a Conv's weights from initializers only, whatever
    the Conv's attributes."""
    import dataclasses

    initialized = _form({0, 1}, {0}, {1})
    grouped = dataclasses.replace(initialized, attributes=(("group", "3"),))
    forms = {"by_node": dataclasses.replace(initialized, from_nodes=frozenset({1})), "grouped": grouped}
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("by_node", "fails", "KeyError"), ("grouped", "right", "")]
    schema = onnx.defs.get_schema("Conv", 11)
    lowered = dataclasses.replace(grouped, from_nodes=frozenset({1}))
    assert nearest_cases(outcomes, lowered, schema) == [outcomes[0]]
    assert nearest_cases(outcomes, grouped, schema) == [outcomes[1]]


def test_where_the_evidence_splits_the_worse_of_the_two_orders_stands(monkeypatch):
    """The dilated 3-D Conv with uneven pads AveragePool's rule writes, its weight a Constant:
    rknn computes such a Conv wrong (its probe case holds the weight as an initializer) and
    runs 2-D Convs of a Constant's weight and even pads right. No case is alike in both; judged
    by whether a node gives the weight first, the node would run; by its attributes and rank
    first, not: the worse stands. Where the node-given cases are the worse (onnx2torch), they
    stand, as above."""
    import dataclasses

    even = _form({0, 1}, {0}, {1}, [("pads", "set")], ranks=[(0, 4), (1, 4)])
    uneven = _form({0, 1}, {0}, {1}, [("pads", "uneven")], ranks=[(0, 5), (1, 5)])
    forms = {"by_node": dataclasses.replace(even, from_nodes=frozenset({1})), "uneven": uneven}
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    schema = onnx.defs.get_schema("Conv", 11)
    written = dataclasses.replace(uneven, from_nodes=frozenset({1}))
    outcomes = [("by_node", "right", ""), ("uneven", "wrong", "output 0")]
    assert nearest_cases(outcomes, written, schema) == [outcomes[1]]
    assert nearest_cases(outcomes, forms["by_node"], schema) == [outcomes[0]]
    fragile = [("by_node", "fails", "KeyError"), ("uneven", "right", "")]
    assert nearest_cases(fragile, written, schema) == [fragile[0]]


def test_an_empty_input_weighs_before_whether_a_node_gives_it(monkeypatch):
    """A Reshape to the empty shape (a scalar) that a Constant gives is judged by the case of an
    empty shape (an initializer: OpenVINO 2024.6 refuses it), not by the cases of other shapes
    that Constants give."""
    import dataclasses

    initialized = _form({0, 1}, {0}, {1})
    forms = {
        "empty": dataclasses.replace(initialized, empty=frozenset({1})),
        "by_node": dataclasses.replace(initialized, from_nodes=frozenset({1})),
    }
    monkeypatch.setattr("lowering.node_forms.case_forms", lambda: forms)
    outcomes = [("empty", "fails", "scalar shape pattern should be equal to 1"), ("by_node", "right", "")]
    schema = onnx.defs.get_schema("Reshape", 21)
    scalar_by_node = dataclasses.replace(forms["by_node"], empty=frozenset({1}))
    assert nearest_cases(outcomes, scalar_by_node, schema) == [outcomes[0]]
    assert nearest_cases(outcomes, forms["by_node"], schema) == [outcomes[1]]


def test_constants_a_node_gives_are_those_not_initializers():
    """Of the constant values, a Constant's output and an Identity of a weight, not the weight."""
    nodes = [
        helper.make_node("Constant", [], ["c"], value_float=2.0),
        helper.make_node("Identity", ["w"], ["shared"]),
        helper.make_node("Mul", ["x", "c"], ["y"]),
        helper.make_node("Add", ["y", "shared"], ["z"]),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1])],
        [onnx.numpy_helper.from_array(np.float32([1.0]), "w")],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    fed, constant = value_sources(model)
    assert constants_given_by_nodes(model, constant) == {"c", "shared"}
    form = node_form(nodes[3], 17, fed, constant, node_constants={"c", "shared"})
    assert form.from_nodes == {1} and "input 1 given by a node" in form.describe()


@pytest.mark.parametrize(
    ("op_type", "pads", "kind"),
    [
        ("AveragePool", [0, 0, 1, 1], "uneven"),
        ("MaxPool", [1, 0, 1, 0], "set"),
        ("Conv", [0, 1, 1, 0], "uneven"),
        ("Conv", [2, 2, 2, 2, 2, 2], "set"),
        ("Pad", [0, 0, 1, 3, 0, 0, 2, 4], "uneven"),
    ],
)
def test_pads_padding_one_end_more_are_a_form_of_their_own(op_type, pads, kind):
    """pads (every op's begins, then ends) padding some axis more at one end than at the other
    class as 'uneven' (runtimes take them otherwise: onnx2torch pools no AveragePool so); pads
    alike at both ends of every axis as 'set'."""
    opset = 2 if op_type == "Pad" else 22
    node = helper.make_node(op_type, ["x", "w"][: 1 if op_type != "Conv" else 2], ["y"], pads=pads)
    form = node_form(node, opset, {"x"}, {"w"}, {}, {}, set())
    assert dict(form.attributes)["pads"] == kind


def _unsqueeze(verdicts: dict[str, str]):
    return _profile(verdicts, "Unsqueeze", 13)


def test_a_node_fed_its_parameters_is_refused_where_cases_fed_them_alike_are_wrong_on_some_values():
    """rknn unsqueezes right where its axes, fed at run time, are [0], and wrong where they are
    [1], right again given [1] as a constant: a node fed its axes, whose values are not known, is
    refused, not partly; one given them as constants is judged by the cases given constants.
    Partly where the other cases fail rather than compute wrong (the runtime says so itself),
    where the wrong case is wrong given constants too (the fed values are not why), or where its
    form is not known (what it was fed is not)."""
    cases = {"test_unsqueeze_axis_0@13": "right", "test_unsqueeze_axis_1@13": "wrong",
             "test_unsqueeze_axis_0@13#constant": "right", "test_unsqueeze_axis_1@13#constant": "right"}  # fmt: skip
    assert {1} <= case_forms()["test_unsqueeze_axis_1@13"].fed
    node = helper.make_node("Unsqueeze", ["x", "axes"], ["y"])
    shapes, types = {"x": (3, 4, 5), "axes": (1,)}, {"x": TensorProto.FLOAT, "axes": TensorProto.INT64}
    fed = node_form(node, 13, {"x", "axes"}, (), shapes, types)
    given = node_form(node, 13, {"x"}, {"axes"}, shapes, types)
    verdict = _unsqueeze(cases).verdict("Unsqueeze", 13, "FLOAT", fed)
    assert verdict.kind == REFUSED and "fed its axes at run time as the node is, and right given them" in verdict.why
    assert _unsqueeze(cases).verdict("Unsqueeze", 13, "FLOAT", given).kind == SUPPORTED
    for changed in ({"test_unsqueeze_axis_1@13": "fails"}, {"test_unsqueeze_axis_1@13#constant": "wrong"}):
        assert _unsqueeze({**cases, **changed}).verdict("Unsqueeze", 13, "FLOAT", fed).kind == PARTLY
    formless = {"made_up_right": "right", "made_up_wrong": "wrong", "made_up_wrong#constant": "right"}
    assert _unsqueeze(formless).verdict("Unsqueeze", 13, "FLOAT", fed).kind == PARTLY
