"""What the pass removes after resolving optionals: only what it made unread, matched by name
space (the main graph and each local function keep their own names); and the initializers and
Constant nodes only a lowered node read."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from support import parse, slow_but_a_sample  # noqa: E402

import lowering
from lowering.opcount import count_ops
from lowering.verification.runtime import run_onnxruntime

FLOAT = onnx.TensorProto.FLOAT


def _optional_info(name: str) -> onnx.ValueInfoProto:
    return helper.make_value_info(name, helper.make_optional_type_proto(helper.make_tensor_type_proto(FLOAT, None)))


def _deciding_function(k: int) -> onnx.FunctionProto:
    """``Decide{k}(v, cond)``: If(cond) yields Optional(v) or Optional(); returns OptionalHasElement."""
    then = helper.make_graph([helper.make_node("Optional", ["v"], ["t"])], f"g{k}t", [], [_optional_info("t")])
    empty = helper.make_node("Optional", [], ["e"], type=helper.make_tensor_type_proto(FLOAT, None))
    other = helper.make_graph([empty], f"g{k}e", [], [_optional_info("e")])
    nodes = [
        helper.make_node("If", ["cond"], ["opt"], then_branch=then, else_branch=other),
        helper.make_node("OptionalHasElement", ["opt"], ["has"]),
    ]
    return helper.make_function("local", f"Decide{k}", ["v", "cond"], ["has"], nodes, [helper.make_opsetid("", 18)])


def _many_functions_model(count: int) -> onnx.ModelProto:
    calls = [helper.make_node(f"Decide{k}", ["x", "c"], [f"h{k}"], domain="local") for k in range(count)]
    graph = helper.make_graph(
        calls,
        "main",
        [
            helper.make_tensor_value_info("x", FLOAT, ["N"]),
            helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info(f"h{k}", onnx.TensorProto.BOOL, []) for k in range(count)],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
        functions=[_deciding_function(k) for k in range(count)],
        ir_version=8,
    )


@slow_but_a_sample()
@pytest.mark.parametrize("count", range(1, 15))
def test_each_of_many_functions_splits_its_own_if(count):
    """The If-split memo was keyed by id() of scopes that were freed and reused: with 5, 7, 8,
    11, 12 functions a later function got an earlier one's split (If with no outputs,
    Identity of an undefined flag)."""
    model = _many_functions_model(count)
    onnx.checker.check_model(model, full_check=True)
    result = lowering.lower_model(model)
    onnx.checker.check_model(result.model, full_check=True)
    assert result.report.rewritten == {"OptionalHasElement-18": count}
    assert not {"Optional", "OptionalHasElement"} & set(count_ops(result.model))
    for function in result.model.functions:
        (if_node,) = [node for node in function.node if node.op_type == "If"]
        (flag,) = if_node.output
        assert flag.startswith("opt_has_element")
    for condition in (True, False):
        outputs = run_onnxruntime(result.model, {"x": np.ones(2, np.float32), "c": np.array(condition)})
        assert [bool(o) for o in outputs] == [condition] * count


def test_a_function_value_named_like_a_split_optional_of_main_is_kept():
    """Main splits an optional named 'opt'; a local function's If has an unread output also
    named 'opt'. Names are matched with their name space, so the function is untouched."""
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18, "local" : 1]>
        main (float[N] x, bool c) => (bool has, float[N] y) {
            opt = If (c) <
                then_branch = then_graph () => (optional(float[N]) some) { some = Optional (x) },
                else_branch = else_graph () => (optional(float[N]) none) { none = Optional <type = float[N]> () }
            >
            has = OptionalHasElement (opt)
            y = local.Pick (x, c)
        }
        <domain: "local", opset_import: ["" : 18]>
        Pick (v, cond) => (out) {
            opt, out = If (cond) <
                then_branch = a () => (float[N] a1, float[N] a2) { a1 = Identity (v)  a2 = Neg (v) },
                else_branch = b () => (float[N] b1, float[N] b2) { b1 = Identity (v)  b2 = Abs (v) }
            >
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert lowered.functions[0].SerializeToString() == model.functions[0].SerializeToString()
    assert list(lowered.graph.node[0].output) == ["opt_has_element"]


def test_an_optional_node_the_user_left_unread_stays():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (bool has, float[N] y) {
            unread = Optional (x)
            read = Optional (x)
            has = OptionalHasElement (read)
            y = Identity (x)
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert [n.output[0] for n in lowered.graph.node if n.op_type == "Optional"] == ["unread"]


def test_an_if_whose_every_output_was_an_optional_now_unread_goes_whole():
    """Both branches empty: the flag is the constant false, no value is needed, and the If
    that yielded only the optional is read by nobody: it goes, never left with no outputs."""
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x, bool c) => (bool has) {
            maybe = If (c) <
                then_branch = then_graph () => (optional(float[N]) a) { a = Optional <type = float[N]> () },
                else_branch = else_graph () => (optional(float[N]) b) { b = Optional <type = float[N]> () }
            >
            has = OptionalHasElement (maybe)
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    assert "If" not in count_ops(lowered)
    (has,) = run_onnxruntime(lowered, {"x": np.ones(2, np.float32), "c": np.array(True)})
    assert not bool(has)


def _drop_every_if_output(model):
    """A broken cleanup, standing in for any defect that leaves an invalid model."""
    for function in model.functions:
        for node in function.node:
            if node.op_type == "If":
                del node.output[:]
    return set()


def test_an_invalid_result_is_an_internal_error_naming_the_node(monkeypatch):
    monkeypatch.setattr(lowering.engine, "remove_unused", _drop_every_if_output)
    with pytest.raises(lowering.InternalError, match=r"function 'local.Decide0', node #0 \(If\): .*output size 0"):
        lowering.lower(_many_functions_model(2))


def test_the_command_line_writes_nothing_and_exits_3_on_an_internal_error(monkeypatch, tmp_path, capsys):
    from lowering.cli import main

    source = tmp_path / "model.onnx"
    onnx.save(_many_functions_model(2), source)
    monkeypatch.setattr(lowering.engine, "remove_unused", _drop_every_if_output)
    assert main([str(source), "-o", str(tmp_path / "out.onnx")]) == 3
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "internal error" in error and "If" in error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def test_ifs_in_sibling_branches_yielding_the_same_name_are_split_each_on_its_own():
    """Sibling branches may both define 'opt': the split of one If is not the other's (it was
    memoized by name: a silent wrong answer, exit 0)."""
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (bool c1, bool c2, float[2] x) => (bool y) {
            y = If (c1) <
                then_branch = present () => (bool ph) {
                    opt = If (c2) <
                        then_branch = pt () => (optional(float[2]) a) { a = Optional (x) },
                        else_branch = pe () => (optional(float[2]) b) { b = Optional (x) }
                    >
                    ph = OptionalHasElement (opt)
                },
                else_branch = empty () => (bool eh) {
                    opt = If (c2) <
                        then_branch = et () => (optional(float[2]) d) { d = Optional <type = float[2]> () },
                        else_branch = ee () => (optional(float[2]) e) { e = Optional <type = float[2]> () }
                    >
                    eh = OptionalHasElement (opt)
                }
            >
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    for c1 in (True, False):
        for c2 in (True, False):
            feeds = {"c1": np.array(c1), "c2": np.array(c2), "x": np.ones(2, np.float32)}
            (y,) = run_onnxruntime(lowered, feeds)
            assert bool(y) == c1


def test_ifs_in_sibling_branches_with_run_time_flags_each_get_their_own_flag():
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (bool c1, bool c2, bool c3, float[2] x) => (bool y) {
            y = If (c1) <
                then_branch = first () => (bool fh) {
                    opt = If (c2) <
                        then_branch = ft () => (optional(float[2]) a) { a = Optional (x) },
                        else_branch = fe () => (optional(float[2]) b) { b = Optional <type = float[2]> () }
                    >
                    fh = OptionalHasElement (opt)
                },
                else_branch = second () => (bool sh) {
                    opt = If (c3) <
                        then_branch = st () => (optional(float[2]) d) { d = Optional (x) },
                        else_branch = se () => (optional(float[2]) e) { e = Optional <type = float[2]> () }
                    >
                    sh = OptionalHasElement (opt)
                }
            >
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    for c1, c2, c3 in [(True, True, False), (True, False, True), (False, True, False), (False, False, True)]:
        feeds = {"c1": np.array(c1), "c2": np.array(c2), "c3": np.array(c3), "x": np.ones(2, np.float32)}
        (y,) = run_onnxruntime(lowered, feeds)
        assert bool(y) == (c2 if c1 else c3)


def test_a_users_unread_optional_in_a_sibling_branch_stays():
    """Branch A holds the user's unread 'v = Optional(x)'; branch B's 'v' is an Identity the
    pass reads through. Only B's goes."""
    model = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (bool c, float[2] x) => (bool y) {
            o = Optional (x)
            y = If (c) <
                then_branch = a () => (bool ah) { v = Optional (x)  ah = Identity (c) },
                else_branch = b () => (bool bh) { v = Identity (o)  bh = OptionalHasElement (v) }
            >
        }
    """)
    lowered = lowering.lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    then_branch, else_branch = (a.g for a in lowered.graph.node[-1].attribute)
    assert [n.op_type for n in then_branch.node] == ["Optional", "Identity"]
    assert "Identity" not in [n.op_type for n in else_branch.node[:-1]] and "Optional" not in count_ops(
        onnx.helper.make_model(else_branch)
    )
    assert "onnx_lower" not in str(lowered), "no cleanup mark is left behind"


def _cast_like_model(target_by: str) -> onnx.ModelProto:
    """y = CastLike(x, like) inside an If's branch, ``like`` a float initializer or Constant node of
    the main graph; ``spare`` an initializer no node reads."""
    like = onnx.numpy_helper.from_array(np.array([0], np.float32), "like")
    cast = helper.make_node("CastLike", ["x", "like"], ["z"])
    branch = helper.make_graph([cast], "branch", [], [helper.make_tensor_value_info("z", FLOAT, [4])])
    nodes = [helper.make_node("If", ["flag"], ["y"], then_branch=branch, else_branch=branch)]
    initializers = [onnx.numpy_helper.from_array(np.array([1], np.float32), "spare")]
    if target_by == "initializer":
        initializers.append(like)
    else:
        nodes.insert(0, helper.make_node("Constant", [], ["like"], value=like))
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.INT32, [4]),
         helper.make_tensor_value_info("flag", onnx.TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", FLOAT, [4])], initializers,
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("target_by", ["initializer", "Constant"])
@pytest.mark.parametrize("options", [{"ops": ["CastLike"]}, {"target_opset": 13}, {"target": "openvino-2024.6"}])
def test_a_value_only_a_lowered_node_read_goes_and_one_never_read_stays(target_by, options):
    """A CastLike lowered to a Cast reads its target no longer: the initializer or Constant node
    giving it goes; ``spare``, which the model never read, stays, as all does where nothing is
    lowered."""
    model = _cast_like_model(target_by)
    lowered = lowering.lower_model(model, **options).model
    onnx.checker.check_model(lowered, full_check=True)
    assert [t.name for t in lowered.graph.initializer] == ["spare"]
    assert [n.op_type for n in lowered.graph.node] == ["If"]
    feeds = {"x": np.array([1, -2, 3, 70000], np.int32), "flag": np.array(True)}
    assert run_onnxruntime(lowered, feeds)[0].tolist() == [1, -2, 3, 70000]
    kept = lowering.lower_model(model, ops=[]).model
    assert kept.SerializeToString() == model.SerializeToString()


def test_a_dropped_value_takes_its_value_info_and_what_else_names_it_stays():
    """The value_info of a dropped initializer goes with it; an initializer a quantization
    annotation names (as a scale, or as the tensor annotated) stays, read or not."""
    model = _cast_like_model("initializer")
    model.graph.value_info.append(helper.make_tensor_value_info("like", FLOAT, [1]))
    lowered = lowering.lower_model(model, ops=["CastLike"]).model
    assert [t.name for t in lowered.graph.initializer] == ["spare"] and not lowered.graph.value_info
    for annotated, scale in (("y", "like"), ("like", "spare")):  # (a scale, or the tensor annotated)
        annotation = onnx.TensorAnnotation(tensor_name=annotated)
        annotation.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value=scale)
        del model.graph.quantization_annotation[:]
        model.graph.quantization_annotation.append(annotation)
        lowered = lowering.lower_model(model, ops=["CastLike"]).model
        assert [t.name for t in lowered.graph.initializer] == ["spare", "like"]


def test_a_constant_a_sibling_branch_defines_too_stays():
    """Two branches each define a Constant ``c``; only the then branch's CastLike reads its own.
    Lowered, neither is read, and the else branch's, unread from the start, stays (the names
    read before are told by name, not by branch: neither goes)."""
    like = onnx.numpy_helper.from_array(np.array([0], np.float32), "like")

    def branch(name: str, reads: bool) -> onnx.GraphProto:
        read = helper.make_node("CastLike", ["x", "c"], [f"z{name}"])
        nodes = [helper.make_node("Constant", [], ["c"], value=like),
                 read if reads else helper.make_node("Cast", ["x"], [f"z{name}"], to=FLOAT)]  # fmt: skip
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"z{name}", FLOAT, [4])])

    split = helper.make_node("If", ["flag"], ["y"], then_branch=branch("t", True), else_branch=branch("e", False))
    graph = helper.make_graph(
        [split], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.INT32, [4]),
         helper.make_tensor_value_info("flag", onnx.TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", FLOAT, [4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    lowered = lowering.lower_model(model, ops=["CastLike"]).model
    onnx.checker.check_model(lowered, full_check=True)
    then_branch, else_branch = (a.g for a in lowered.graph.node[0].attribute)
    assert [n.op_type for n in then_branch.node] == ["Constant", "Cast"]
    assert [n.op_type for n in else_branch.node] == ["Constant", "Cast"]


def test_nothing_is_looked_for_where_nothing_was_lowered(monkeypatch):
    """Where the pass rewrote, converted and folded nothing, no name is read to find what went
    unread (a walk over every node of a model left as it was)."""
    import lowering.api

    def walked(*args):
        raise AssertionError("drop_left_unread called where nothing changed")

    monkeypatch.setattr(lowering.api, "drop_left_unread", walked)
    model = _cast_like_model("initializer")
    assert lowering.lower_model(model, ops=[]).model.SerializeToString() == model.SerializeToString()
    with pytest.raises(AssertionError, match="nothing changed"):
        lowering.lower_model(model, ops=["CastLike"])
