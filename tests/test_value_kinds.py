"""lowering.value_kinds: the kinds of value a node is given, read from the inputs onnx.defs
names, and the verdicts of the cases of each kind."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from version_cases import node_cases

import lowering
from lowering.graphs import nested_graphs
from lowering.runtime_profiles import PARTLY, REFUSED, SUPPORTED, UNVERIFIED, load_profile, profile_from_data
from lowering.shape_folding import inferred_types
from lowering.target_forms import (
    cast_within_range,
    constants_by_name,
    constants_in_scope,
    known_kinds,
    producers_in_graph,
)
from lowering.target_lowering import TargetRefused, check_model
from lowering.value_kinds import (
    COPIED_LENGTH,
    DOWNSAMPLING,
    NEGATIVE_INDICES,
    ONE_KEEPS_A_LENGTH,
    OUT_OF_RANGE_CAST,
    REDUCED_NOTHING,
    judges_only_free_of,
    kinds_held,
)
from lowering.verification.runtime import run_onnxruntime

NOT_SMALLER, NOT_LARGER = ({"keep_aspect_ratio_policy": policy} for policy in ("not_smaller", "not_larger"))


@pytest.mark.parametrize(
    "op_type, inputs, values, attributes, held",
    [
        ("GatherElements", ["d", "i"], {"i": np.array([[0, -1]])}, {}, {NEGATIVE_INDICES: True}),
        ("Gather", ["d", "i"], {"i": np.array([0, 2])}, {}, {NEGATIVE_INDICES: False}),
        ("Gather", ["d", "i"], {}, {}, {}),  # (indices not known)
        ("Resize", ["x", "", "s"], {"s": np.array([1, 1, 0.6, 0.6], np.float32)}, {}, {DOWNSAMPLING: True}),
        ("Resize", ["x", "", "s"], {"s": np.array([1, 1, 2, 3], np.float32)}, {}, {DOWNSAMPLING: False}),
        ("Resize", ["x", "", "", "z"], {"z": np.array([1, 1, 3, 5])}, {}, {DOWNSAMPLING: True}),  # (5 below 6)
        ("Resize", ["x", "", "", "z"], {"z": np.array([8, 6])}, {"axes": [2, -1]}, {DOWNSAMPLING: False}),
        ("Resize", ["x", "", "", "z"], {"z": np.array([3, 6])}, {"axes": [2, -1]}, {DOWNSAMPLING: False}),
        ("Resize", ["x", "", "", "z"], {"z": np.array([6, 2])}, {"axes": [3, 2]}, {DOWNSAMPLING: True}),
        ("Resize", ["x", "", "", "z"], {}, {}, {}),  # (sizes not known)
        ("Upsample", ["x"], {}, {"scales": [1.0, 1.0, 0.5, 2.0]}, {DOWNSAMPLING: True}),
        # (one scale for every axis: not_larger the least ratio, not_smaller the largest)
        ("Resize", ["x", "", "", "z"], {"z": np.array([2, 12])}, {"axes": [2, 3], **NOT_SMALLER}, {DOWNSAMPLING: 0}),
        ("Resize", ["x", "", "", "z"], {"z": np.array([2, 12])}, {"axes": [2, 3], **NOT_LARGER}, {DOWNSAMPLING: 1}),
        # (an Expand's shape of 1 where x's length is not 1, aligned at the last axes)
        ("Expand", ["x", "s"], {"s": np.array([1, 3, 1])}, {}, {ONE_KEEPS_A_LENGTH: True}),
        ("Expand", ["x", "s"], {"s": np.array([2, 1, 1, 3, 6])}, {}, {ONE_KEEPS_A_LENGTH: False}),
        ("Expand", ["x", "s"], {"s": np.array([5, 3, 1])}, {}, {ONE_KEEPS_A_LENGTH: True}),
        ("Expand", ["x", "s"], {"s": np.array([6])}, {}, {ONE_KEEPS_A_LENGTH: True}),  # (led by 1s: x's 3 kept)
        ("Expand", ["x", "s"], {}, {}, {}),  # (shape not known)
        # (a Reshape's shape of 0 copying the input's length; with allowzero=1 a 0 is a length of 0)
        ("Reshape", ["x", "s"], {"s": np.array([0, 0, -1])}, {}, {COPIED_LENGTH: True}),
        ("Reshape", ["x", "s"], {"s": np.array([1, 3, -1])}, {}, {COPIED_LENGTH: False}),
        ("Reshape", ["x", "s"], {"s": np.array([0, 3, 6])}, {"allowzero": 1}, {COPIED_LENGTH: False}),
        ("Reshape", ["x", "s"], {}, {}, {}),
        # (a Cast between integer types of a value its target does not hold)
        ("Cast", ["c"], {"c": np.array([0, 40000], np.uint16)}, {"to": 5}, {OUT_OF_RANGE_CAST: True}),
        ("Cast", ["c"], {"c": np.array([0, 32767], np.uint16)}, {"to": 5}, {OUT_OF_RANGE_CAST: False}),
        ("Cast", ["c"], {"c": np.array([-1], np.int64)}, {"to": 13}, {OUT_OF_RANGE_CAST: True}),
        ("Cast", ["c"], {"c": np.array([1.5e9], np.float32)}, {"to": 3}, {}),  # (a float: undefined, not wrapped)
        ("Cast", ["c"], {"c": np.array([7], np.int32)}, {"to": 9}, {}),  # (to bool: nonzero)
        ("Cast", ["c"], {}, {"to": 5}, {}),
    ],
)  # fmt: skip
def test_kinds_are_read_from_the_inputs_onnx_defs_names(op_type, inputs, values, attributes, held):
    """Indices holding a value below 0; a Resize's scales below 1 or sizes below its input's
    (x of shape [1, 1, 3, 6]), over its axes where given; an Expand's shape of 1 where x's length
    is not 1; a Reshape's shape of 0 copying a length; nothing where the values are unknown."""
    opset = 7 if op_type == "Upsample" else 19
    node = helper.make_node(op_type, inputs, ["y"], **attributes)
    assert kinds_held(node, opset, values.get, {"x": (1, 1, 3, 6)}) == held


def _with_constant_inputs(name: str) -> onnx.ModelProto:
    """The backend case ``name`` with every input but the first an initializer of its value."""
    [case] = [c for c in node_cases() if c.name == name]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    for info, value in list(zip(model.graph.input, case.data_sets[0][0], strict=True))[1:]:
        model.graph.initializer.append(numpy_helper.from_array(np.asarray(value), info.name))
    del model.graph.input[1:]
    return model


def test_a_resize_of_constant_scales_is_judged_by_the_cases_of_its_kind():
    """TVM 0.27 gets the backend's linear downsamplings wrong and its upsamplings right: a
    Resize whose constant scales enlarge is supported, one whose scales shrink refused (not
    partly, as all of its cases together say)."""
    tvm = load_profile("tvm-0.27")

    def verdicts(name):
        return [f.verdict for f in check_model(_with_constant_inputs(name), tvm) if f.op_type == "Resize"]

    assert verdicts("test_resize_upsample_scales_linear") == []  # (supported: no finding)
    [shrinking] = verdicts("test_resize_downsample_scales_linear")
    assert shrinking.kind == REFUSED and "downsample" in shrinking.why
    assert tvm.verdict("Resize", 19, "FLOAT", None).kind not in (SUPPORTED, REFUSED)  # (all cases: partly)


def test_a_node_whose_fed_parameters_may_hold_a_kind_wrong_there_is_refused():
    """onnx2torch gets the backend's nearest downsamplings wrong and its upsamplings right: a
    Resize fed its scales at run time may be given either, so it is refused on that kind (not
    partly, as its cases together say), and --target refuses the model, having no pattern for
    scales fed so; given as constants that enlarge, they are judged by the other cases, and the
    model goes there and means the same in onnxruntime."""
    onnx2torch = load_profile("onnx2torch")
    name = "test_resize_upsample_scales_nearest"
    [case] = [c for c in node_cases() if c.name == name]
    [fed] = [f.verdict for f in check_model(case.model, onnx2torch, 13) if f.op_type == "Resize"]
    assert fed.kind == REFUSED and fed.wrong_values == DOWNSAMPLING and "may hold" in fed.why
    with pytest.raises(TargetRefused, match="Resize"):
        lowering.lower_model(case.model, target="onnx2torch")
    constant = _with_constant_inputs(name)
    assert not [f for f in check_model(constant, onnx2torch, 13) if f.op_type == "Resize"]
    made = lowering.lower_model(constant, target="onnx2torch")
    feeds = {case.model.graph.input[0].name: case.data_sets[0][0][0]}
    assert lowering.verify(constant, made.model, inputs=[feeds]).match


@pytest.mark.parametrize(("shrinking", "kind"), [("wrong", REFUSED), ("fails", PARTLY)])
def test_only_wrong_cases_of_a_parameter_kind_refuse_a_node_not_known_free_of_it(shrinking, kind):
    """A runtime wrong on the downsampling case and right on the upsampling one refuses a Resize
    whose scales are not known; one failing to load the downsampling case (tract's "shape input is
    variable") says nothing of values: partly, as before."""
    made_up = profile_from_data({
        "name": "made-up", "runtime": "made-up", "runtime_version": "0",
        "source": {"kind": "probed", "how": "a test"}, "opsets": [13],
        "cases": {f"test_resize_{way}_scales_nearest@13": {"op": "Resize", "version": 13, "type": "FLOAT",
                                                          "verdict": verdict}
                  for way, verdict in (("downsample", shrinking), ("upsample", "right"))},
    })  # fmt: skip
    verdict = made_up.verdict("Resize", 13, "FLOAT")
    assert verdict.kind == kind and verdict.wrong_values == DOWNSAMPLING


def test_a_kind_no_case_holds_leaves_the_node_unverified_where_the_others_are_right():
    """Where no case of the op version holds the node's kind, the other cases say nothing of it:
    where they all ran right, unverified, not supported (onnx2torch's Resize-10 cases upsample
    only, and run right)."""
    onnx2torch = load_profile("onnx2torch")
    assert onnx2torch.verdict("Resize", 10, "FLOAT", None).kind == SUPPORTED
    shrinking = onnx2torch.verdict("Resize", 10, "FLOAT", None, holding=DOWNSAMPLING)
    assert shrinking.kind == UNVERIFIED and "holds resize scales below 1" in shrinking.why


def test_a_kind_no_case_holds_keeps_the_others_verdict_where_they_are_not_all_right():
    """Where no case of the op version holds the node's kind and the others are not all right,
    their verdict stands (tract 0.21's Resize-10 cases: partly, none downsampling)."""
    tract = load_profile("tract-0.21")
    others = tract.verdict("Resize", 10, "FLOAT", None)
    assert others.kind == "partly"
    assert tract.verdict("Resize", 10, "FLOAT", None, holding=DOWNSAMPLING) == others


def test_the_kind_a_node_holds_is_not_named_as_what_it_is_wrong_on():
    """Judged by the cases of its own kind alone, a node partly right there is partly on its
    form, not 'only on' that kind (every case left holds it)."""
    shrinking = load_profile("tvm-0.27").verdict("Resize", 13, "FLOAT", None, holding=DOWNSAMPLING)
    assert shrinking.kind == "partly" and shrinking.wrong_values == ""


@pytest.mark.parametrize(("dims", "held"), [((2, 0, 4), True), ((0, None), True), ((2, 3), False), ((None, 3), None)])
def test_a_reduction_of_no_element_is_read_from_its_datas_shape(dims, held):
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1)
    found = kinds_held(node, 18, lambda name: None, {"x": dims})
    assert found.get(REDUCED_NOTHING) is held


def test_a_reduction_of_elements_is_not_judged_by_the_cases_of_none():
    """TVM leaves the answer of a reduction of no element unwritten (the empty_* cases of uint8
    ReduceMin are wrong); a uint8 ReduceMin of static data holding elements (bools carried in
    uint8, its axes constant) is judged by the other cases, not refused by those; one of no
    element is judged by them."""
    tvm = load_profile("tvm-0.27")
    assert tvm.verdict("ReduceMin", 18, "UINT8", None, holding=REDUCED_NOTHING).kind != SUPPORTED
    assert tvm.verdict("ReduceMin", 18, "UINT8", None, free_of=REDUCED_NOTHING).kind != REFUSED
    [case] = [c for c in node_cases() if c.name == "test_reduce_min_bool_inputs"]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    axes = next(i for i in model.graph.input if i.name == "axes")
    model.graph.initializer.append(numpy_helper.from_array(case.data_sets[0][0][1], "axes"))
    model.graph.input.remove(axes)
    made = lowering.lower_model(model, target="tvm-0.27", input_shapes={"data": [4, 2]})
    assert "ReduceMin" in [n.op_type for n in made.model.graph.node]


def _cast(source: int, to: int, opset: int = 25) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], name="cast", to=to)], "cast",
        [helper.make_tensor_value_info("x", source, [None])], [helper.make_tensor_value_info("y", to, [None])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_an_in_range_twin_judges_only_a_cast_known_in_range():
    """OpenVINO 2024.6 saturates a uint16 out of int16's range (cast_UINT16_INT16@25 wrong) and
    casts those it holds right (its #in_range twin): a Cast fed values not known is judged by the
    wrapping case alone and refused; --target writes the wraparound in int32 (Mod), and its last
    Cast, known in range by the ranges of what it is computed from, is judged by the twin: the
    lowered model fits and gives every uint16 value's bits."""
    assert judges_only_free_of("cast_UINT16_INT16@25#in_range") == OUT_OF_RANGE_CAST
    assert judges_only_free_of("cast_UINT16_INT16@25") == ""
    model = _cast(onnx.TensorProto.UINT16, onnx.TensorProto.INT16)
    [finding] = check_model(model, "openvino-2024.6")
    assert finding.verdict.kind == REFUSED and "cast_UINT16_INT16@25: wrong" in finding.verdict.why
    assert "Cast(w, to)" in finding.fix
    lowered = lowering.lower(model, target="openvino-2024.6")
    assert "Mod" in [node.op_type for node in lowered.graph.node]
    assert not [f for f in check_model(lowered, "openvino-2024.6") if f.verdict.kind == REFUSED]
    x = np.arange(65536).astype(np.uint16)
    [got] = run_onnxruntime(lowered, {"x": x})
    assert got.dtype == np.int16 and np.array_equal(got, x.view(np.int16))
    last = lowered.graph.node[-1]
    producers = {output: node for node in lowered.graph.node for output in node.output}
    kinds = known_kinds(last, 25, constants_by_name(lowered), producers, inferred_types(lowered))
    assert kinds == (OUT_OF_RANGE_CAST, "")
    assert not [f for f in check_model(lowered, "openvino-2024.6") if f.node == last.name]


@pytest.mark.parametrize("fed", [False, True])
def test_a_castlike_between_integer_types_is_judged_by_its_own_cases_and_lowered_to_a_wraparound(fed):
    """OpenVINO 2024.6 saturates an int16 CastLike to int8 as it does a Cast (castlike_INT16_INT8@21
    wrong): a CastLike whose target type is given by a Constant node, or fed, is refused, not
    unverified; --target lowers it to the Cast it means and writes that Cast's wraparound, which
    gives every int16 value's low byte in onnxruntime."""
    target = helper.make_tensor_value_info("like", onnx.TensorProto.INT8, [1])
    nodes = [helper.make_node("CastLike", ["x", "like"], ["y"], name="castlike")]
    if not fed:
        like = numpy_helper.from_array(np.zeros(1, np.int8), "like")
        nodes.insert(0, helper.make_node("Constant", [], ["like"], value=like))
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.INT16, [None]), *([target] if fed else [])]
    graph = helper.make_graph(
        nodes, "castlike", inputs, [helper.make_tensor_value_info("y", onnx.TensorProto.INT8, [None])]
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    [finding] = [f for f in check_model(model, "openvino-2024.6") if f.op_type == "CastLike"]
    assert finding.verdict.kind == REFUSED and "castlike_INT16_INT8@21" in finding.verdict.why
    lowered = lowering.lower(model, target="openvino-2024.6")
    assert "CastLike" not in [node.op_type for node in lowered.graph.node]
    assert not [f for f in check_model(lowered, "openvino-2024.6") if f.verdict.kind == REFUSED]
    x = np.arange(-32768, 32768).astype(np.int16)
    feeds = {"x": x, **({"like": np.zeros(1, np.int8)} if fed else {})}
    [got] = run_onnxruntime(lowered, feeds)
    assert got.dtype == np.int8 and np.array_equal(got, x.astype(np.int8))


def test_a_cast_from_32_bits_is_refused_where_its_carrier_is_wrong_at_every_version():
    """uint32 to int32 on OpenVINO 2024.6: no in-range form at 25 (its carrier would be int64),
    and below 13, where the adapter writes the wraparound in int64 (bit for bit in onnxruntime),
    the carrier's Cast from uint32 to int64 is what the runtime gets wrong (uint32 values from
    2^31): refused, in the words of the case it fails."""
    model = _cast(onnx.TensorProto.UINT32, onnx.TensorProto.INT32)
    with pytest.raises(lowering.LoweringError, match="cast_UINT32_INT32@25: wrong"):
        lowering.lower(model, target="openvino-2024.6")
    at_12 = lowering.lower(model, target_opset=12)
    assert "Mod" in [node.op_type for node in at_12.graph.node]
    x = np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 1, 123456789], np.uint32)
    assert np.array_equal(run_onnxruntime(at_12, {"x": x})[0], x.view(np.int32))
    [carrier] = [f for f in check_model(at_12, "openvino-2024.6") if f.op_type == "Cast" and f.element_type == "UINT32"]
    assert carrier.verdict.kind in (PARTLY, REFUSED) and "cast_UINT32_INT64@" in carrier.verdict.why


@pytest.mark.parametrize("sub_first", [True, False])
def test_a_cast_in_a_branch_is_not_known_in_range_by_a_type_its_sibling_gives_the_same_name(sub_first):
    """The types of nested graphs' values are merged by name: where one branch writes ``d`` as
    int16 and the other as Sub(p, q) of uint16 constants (65531 and 2), d's range is read from
    what writes it (the uint16 constants), not from the merged type, so neither Cast to int8 is
    known in range; both are written in range, and the model keeps its bits."""

    def branch(name, nodes, initializer=()):
        out = helper.make_tensor_value_info("o", onnx.TensorProto.INT8, [2])
        return helper.make_graph([*nodes, helper.make_node("Cast", ["d"], ["o"], to=onnx.TensorProto.INT8)], name, [],
                                 [out], initializer=list(initializer))  # fmt: skip

    p = numpy_helper.from_array(np.array([0, 5], np.uint16), "p")
    q = numpy_helper.from_array(np.array([5, 3], np.uint16), "q")
    subtracted = branch("subtracted", [helper.make_node("Sub", ["p", "q"], ["d"])], [p, q])
    given = branch("given", [helper.make_node("Identity", ["xs"], ["d"])])
    then_branch, else_branch = (subtracted, given) if sub_first else (given, subtracted)
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch)], "g",
        [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("xs", onnx.TensorProto.INT16, [2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.INT8, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    constants_at, producers_at = constants_in_scope(model), producers_in_graph(model)
    types = inferred_types(model)
    [cast] = [
        n for g in nested_graphs(model.graph.node) if g.name == "subtracted" for n in g.node if n.op_type == "Cast"
    ]
    assert not cast_within_range(cast, producers_at(cast), constants_at(cast), types)
    lowered = lowering.lower(model, target="openvino-2024.6")
    for c in (True, False):
        feeds = {"c": np.array(c), "xs": np.array([-300, 200], np.int16)}
        assert np.array_equal(run_onnxruntime(lowered, feeds)[0], run_onnxruntime(model, feeds)[0]), c
    assert [len(g.node) > 2 for g in nested_graphs(lowered.graph.node)] == [True, True]  # (both written in range)
