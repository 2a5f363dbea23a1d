"""Converting on the fast path (moves recorded once per kind of node and replayed) gives the
plain path's bytes: on the real exports, on copies of them side by side (where replays happen,
names differ and kinds repeat with other shapes), and on a sample of the backend node cases."""

from __future__ import annotations

import sys

import onnx
import pytest
from onnx import TensorProto, helper
from support import REPO, slow_but_a_sample  # noqa: E402

import lowering
from lowering.errors import LoweringError
from lowering.report import LoweringReport

EXPORTS = REPO / "golden" / "exports"
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_conversion import side_by_side  # noqa: E402
from support import op_type_set  # noqa: E402
from version_cases import node_cases  # noqa: E402

TARGETS = (11, 13, 17)


def converted_bytes(model: onnx.ModelProto, target: int, fast) -> bytes | str:
    """The converted model's bytes, or the refusal's words."""
    try:
        return lowering.lower(model, target_opset=target, ops=[], fast=fast).SerializeToString()
    except LoweringError as error:
        return str(error)


_COPIES_CONVERTED: dict[tuple[bytes, int, bool], lowering.LoweringResult] = {}


def copies_converted(model: onnx.ModelProto, target: int, fast: bool) -> lowering.LoweringResult:
    """``model`` (an export's three copies side by side) converted to ``target`` on the
    plain path (``fast=False``) or the fast one (``fast=True``), under the settings as shipped:
    once per export, target and path in the session, as two tests below compare the same
    conversions (each only reads the result)."""
    key = (model.SerializeToString(), target, fast)
    if key not in _COPIES_CONVERTED:
        _COPIES_CONVERTED[key] = lowering.lower_model(model, target_opset=target, ops=[], fast=fast)
    return _COPIES_CONVERTED[key]


def converted_alike(model: onnx.ModelProto, target: int) -> bytes:
    """The model converted on the plain path, which converts it, and the fast path alike."""
    plain = converted_bytes(model, target, fast=False)
    assert isinstance(plain, bytes), plain
    assert converted_bytes(model, target, fast=True) == plain
    return plain


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(EXPORTS.glob("*.onnx")), ids=lambda p: p.stem)
def test_exports_and_their_copies_convert_alike_on_both_paths(path):
    export = onnx.load(path)
    copies = side_by_side(export, 3)  # the first copy records, the others replay
    untyped = side_by_side(export, 2, typed=False)
    for model in (export, copies, untyped):
        for target in TARGETS:
            if model is copies:  # (every export converts: a refusal raises here)
                plain = copies_converted(copies, target, fast=False).model.SerializeToString()
                fast = copies_converted(copies, target, fast=True).model.SerializeToString()
                assert fast == plain, (path.stem, target)
                continue
            plain = converted_bytes(model, target, fast=False)
            assert isinstance(plain, bytes), plain  # every export converts (test_real_exports)
            assert converted_bytes(model, target, fast=True) == plain, (path.stem, target)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(path.stem for path in EXPORTS.glob("*.onnx")))
@pytest.mark.parametrize("before_whole", [None, 8], ids=["as set", "whole pass soon"])
def test_a_conversion_reports_alike_on_both_paths(name, before_whole, monkeypatch):
    """What the report counts (nodes moved per version step, bodies inlined) is the same where
    kinds are replayed, kept nodes counted without the driver looking at them, or neither; also
    where a walk this short asks for most types (lowering.scopes.PROPAGATIONS_BEFORE_WHOLE
    lowered: on the fast path the whole graph is typed at once from the first producer not found
    nearby, Shortcuts.whole_typing, and the nodes of ops kept whole are counted without being
    walked, Shortcuts.kept_ops; the plain path follows each value back and walks every node);
    and where shapes are inferred back from a value one node at a time, Shortcuts.local_shapes."""
    from lowering.fast import Shortcuts

    if before_whole is not None:
        monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", before_whole)

    model = side_by_side(onnx.load(EXPORTS / f"{name}.onnx"), 3)
    moved = 0
    as_shipped = before_whole is None  # (the plain and fast conversions then test_exports_... compares too)
    for target in TARGETS:
        if as_shipped:
            plain_result = copies_converted(model, target, fast=False)
        else:
            plain_result = lowering.lower_model(model, target_opset=target, ops=[], fast=False)
        plain, plain_bytes = plain_result.report, plain_result.model.SerializeToString()
        for fast in (
            True,
            Shortcuts(kind_memo=False),
            Shortcuts(whole_typing=False),
            Shortcuts(kept_ops=False),
            Shortcuts(local_shapes=False),
        ):
            if as_shipped and fast is True:
                result = copies_converted(model, target, fast=True)
            else:
                result = lowering.lower_model(model, target_opset=target, ops=[], fast=fast)
            report = result.report
            assert report == plain, (name, target, fast)
            assert list(report.adapted) == list(plain.adapted), (name, target, fast)  # in the same order
            assert result.model.SerializeToString() == plain_bytes, (name, target, fast)
        moved += sum(plain.adapted.values())
    assert moved > 0


def sequence_map_whose_body_does_not_go(body_nodes: list, before: list | None = None) -> onnx.ModelProto:
    """An opset-18 model: ``before`` (Identity nodes from k0, to k{n}), then SequenceMap over S
    whose body (on x, float [2, 3]) is ``body_nodes`` ending in Col2Im(r, img, blk) → c. Asked
    to lower SequenceMap and Col2Im, its function body cannot go: the Col2Im in its Loop cannot
    be lowered (its input's rank is unknown)."""
    before = before or []
    body = helper.make_graph(
        body_nodes,
        "body",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)],
    )
    sequence = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [2, 3]))
    kept_in = [helper.make_tensor_value_info("k0", TensorProto.FLOAT, [2])] if before else []
    kept_out = [helper.make_tensor_value_info(before[-1].output[0], TensorProto.FLOAT, [2])] if before else []
    graph = helper.make_graph(
        [*before, helper.make_node("SequenceMap", ["S"], ["o"], body=body)],
        "m",
        [
            *kept_in,
            helper.make_value_info("S", sequence),
            helper.make_tensor_value_info("sh", TensorProto.INT64, ["n"]),
            helper.make_tensor_value_info("img", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("blk", TensorProto.INT64, [2]),
        ],
        [
            *kept_out,
            helper.make_value_info(
                "o", helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
            ),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def lowered_alike_on_both_paths(model: onnx.ModelProto, target: int) -> LoweringReport:
    """The plain path's report, where the fast path gives the same bytes and report (in order)."""
    plain = lowering.lower_model(model, target_opset=target, ops=["SequenceMap", "Col2Im"], fast=False)
    fast = lowering.lower_model(model, target_opset=target, ops=["SequenceMap", "Col2Im"], fast=True)
    assert fast.model.SerializeToString() == plain.model.SerializeToString()
    assert fast.report == plain.report, target
    assert list(fast.report.adapted) == list(plain.report.adapted)
    return plain.report


def test_kept_nodes_count_into_the_report_they_were_kept_under():
    """Identity-16 nodes before a SequenceMap whose function body does not go, and in its body:
    kept nodes of the pass count into the pass's report, those kept in the attempt's Loop body
    into the attempt's own (dropped); both paths report alike. (The pass's nodes are counted by
    the end of the walk of SequenceMap's own body, before the attempt: the case where they are
    still waiting when an attempt's walk ends is pinned in tests/fast/test_fast_paths.py.)"""
    body = [
        helper.make_node("Identity", ["x"], ["i0"]),
        helper.make_node("Identity", ["i0"], ["i1"]),
        helper.make_node("Reshape", ["i1", "sh"], ["r"]),
        helper.make_node("Col2Im", ["r", "img", "blk"], ["c"]),
    ]
    before = [helper.make_node("Identity", [f"k{k}"], [f"k{k + 1}"]) for k in range(4)]
    model = sequence_map_whose_body_does_not_go(body, before)
    for target in (18, 21):
        report = lowered_alike_on_both_paths(model, target)
        assert {op.op_type for op in report.remaining} >= {"Col2Im"}
        if target == 21:  # the four before, and the two of SequenceMap's own body (kept with it)
            assert report.adapted["Identity-16→21"] == 6, report.adapted


def test_replays_in_a_function_body_that_does_not_go_are_not_counted():
    """SequenceMap's function body holds a Loop whose body holds a Col2Im that cannot be lowered
    (its input's rank is unknown): the body's attempt, ReduceMeans replayed in it included, is
    dropped, and so is what it counted; both paths report only what stays."""
    body = [
        helper.make_node("ReduceMean", ["x"], ["v0"], keepdims=1),
        helper.make_node("ReduceMean", ["v0"], ["v1"], keepdims=1),
        helper.make_node("Reshape", ["v1", "sh"], ["r"]),
        helper.make_node("Col2Im", ["r", "img", "blk"], ["c"]),
    ]
    model = sequence_map_whose_body_does_not_go(body)
    for target in (18, 21):
        report = lowered_alike_on_both_paths(model, target)
        assert {op.op_type for op in report.remaining} >= {"Col2Im"}
        assert not any(label.startswith("ReduceMean") for label in report.adapted)


def test_the_move_memo_is_a_shortcut_that_can_be_switched_off():
    from lowering.fast import Shortcuts

    model = side_by_side(onnx.load(EXPORTS / "vit_block_dynamo18.onnx"), 2)
    plain = converted_bytes(model, 13, fast=False)
    assert converted_bytes(model, 13, fast=Shortcuts(kind_memo=False)) == plain
    assert converted_bytes(model, 13, fast=True) == plain


@pytest.mark.slow
def test_backend_cases_convert_alike_on_both_paths():
    """Every 7th backend node case (about 240), to each target: the same bytes or the same words."""
    cases = node_cases()[::7]
    compared = 0
    for case in cases:
        for target in TARGETS:
            plain = converted_bytes(case.model, target, fast=False)
            assert converted_bytes(case.model, target, fast=True) == plain, (case.name, target)
            compared += isinstance(plain, bytes)
    assert compared > 300


@slow_but_a_sample()
@pytest.mark.parametrize("naming", ["named alike", "unnamed", "named apart", "a body's name taken"])
def test_function_bodies_asked_for_replay_as_the_plain_path_names_them(naming):
    """Gelu and LayerNormalization lowered on request, nodes of one kind replayed: where nodes
    share a name (or have none), or the model holds a name a body would take, the fresh names
    collide and count up exactly as node by node."""
    from onnx import TensorProto, helper

    nodes, previous = [], "x"
    for index in range(6):
        name = {"named alike": "n", "unnamed": ""}.get(naming, f"n{index}")
        op = ("Gelu", {"approximate": "tanh"}) if index % 3 else ("LayerNormalization", {"axis": -1})
        inputs = [previous, "scale", "bias"] if op[0] == "LayerNormalization" else [previous]
        nodes.append(helper.make_node(op[0], inputs, [f"v{index}"], name=name, **op[1]))
        previous = f"v{index}"
    outputs = [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["N", 8])]
    if naming == "a body's name taken":  # the second LayerNormalization's body would name a value so
        nodes.append(helper.make_node("Identity", ["x"], ["n3_Mean2D"], name="n3_ReduceMean"))
        outputs.append(helper.make_tensor_value_info("n3_Mean2D", TensorProto.FLOAT, ["N", 8]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])]
        + [helper.make_tensor_value_info(n, TensorProto.FLOAT, [8]) for n in ("scale", "bias")],
        outputs,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    for options in ({"ops": ["Gelu", "LayerNormalization"]}, {"ops": ["Gelu"], "target_opset": 17}):
        plain = lowering.lower(model, fast=False, **options).SerializeToString()
        assert lowering.lower(model, fast=True, **options).SerializeToString() == plain, options
        if naming == "a body's name taken" and "LayerNormalization" in options["ops"]:
            lowered = onnx.load_model_from_string(plain)
            outputs_made = [name for node in lowered.graph.node for name in node.output]
            assert outputs_made.count("n3_Mean2D") == 1 and "n3_Mean2D_1" in outputs_made


@pytest.mark.slow
def test_a_graph_held_under_an_attribute_named_with_two_underscores_converts_alike_on_both_paths():
    """onnx's checker lets an attribute named "__…" through on any op: a Relu may hold a graph
    there. Relus holding equal or different graphs are moved and replayed alike."""
    from onnx import TensorProto, helper

    def branch(name: str) -> onnx.GraphProto:
        return helper.make_graph(
            [helper.make_node("IsNaN", ["x"], [f"{name}_nan"])], name, [],
            [helper.make_tensor_value_info(f"{name}_nan", TensorProto.BOOL, ["N"])],
        )  # fmt: skip

    nodes, previous = [], "x"
    for index, held in enumerate(["a", "a", "b", "a"]):
        node = helper.make_node("Relu", [previous], [f"r{index}"])
        node.attribute.append(helper.make_attribute("__g", branch(f"{held}{index}" if held == "b" else held)))
        nodes.append(node)
        previous = f"r{index}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, ["N"])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    for options in ({}, {"target_opset": 12}, {"target_opset": 13, "ops": []}):
        plain = lowering.lower(model, fast=False, **options).SerializeToString()
        assert lowering.lower(model, fast=True, **options).SerializeToString() == plain, options
    converted = lowering.lower(model, target_opset=13, ops=[])
    onnx.checker.check_model(converted, full_check=True)
    assert "Relu" not in op_type_set(converted)  # moved by its function body, which takes no "__g"


def test_kinds_repeated_in_if_branches_and_local_functions_convert_alike_on_both_paths():
    """The kind memo inside subgraphs and a local function: Reshape-14, ReduceMean-18 and
    Split-18 repeated in both If branches and in a function called twice, float16 and float,
    taken to 13 and 11."""
    model = onnx.parser.parse_model("""
        <ir_version: 10, opset_import: ["" : 18, "local" : 1]>
        main (bool c, float16[2, 4] h, float[2, 4] x)
            => (float16[2, 2] a, float[2, 2] b, float[2, 2] f, float[2, 2] g) {
            shape = Constant <value = int64[2] {2, 4}> ()
            axes = Constant <value = int64[1] {1}> ()
            a = If (c) <
                then_branch = g1 () => (float16[2, 2] o1) {
                    r1 = Reshape (h, shape)
                    m1 = ReduceMean <keepdims = 1> (r1, axes)
                    s1 = Sub (r1, m1)
                    o1, p1 = Split <num_outputs = 2, axis = 1> (s1)
                },
                else_branch = g2 () => (float16[2, 2] o2) {
                    r2 = Reshape (h, shape)
                    m2 = ReduceMean <keepdims = 1> (r2, axes)
                    s2 = Sub (r2, m2)
                    p2, o2 = Split <num_outputs = 2, axis = 1> (s2)
                }
            >
            b = local.Block (x)
            f = local.Block (x)
            g, unused = Split <num_outputs = 2, axis = 1> (x)
        }
        <domain: "local", opset_import: ["" : 18]>
        Block (x) => (y) {
            shape = Constant <value = int64[2] {2, 4}> ()
            axes = Constant <value = int64[1] {1}> ()
            r = Reshape (x, shape)
            m = ReduceMean <keepdims = 1> (r, axes)
            s = Sub (r, m)
            y, z = Split <num_outputs = 2, axis = 1> (s)
        }
    """)
    onnx.checker.check_model(model, full_check=True)
    converted_alike(model, 13)
    # at 11 Split's sizes must be an attribute, and the branch's dimension is not known statically:
    # both paths cut it with Slices bounded by Shape at run time, alike
    converted_alike(model, 11)


def _input_name(element_type: int) -> str:
    return f"x_{onnx.helper.tensor_dtype_to_string(element_type).removeprefix('TensorProto.').lower()}"


def _mixed_type_chain(order: list[int], prefix: str) -> tuple[list[onnx.NodeProto], list[str]]:
    """Add and Transpose nodes, each pair on the element type ``order`` names in turn (reading
    the graph's input of that type); returns the nodes and their last outputs."""
    nodes, outputs = [], []
    for index, element_type in enumerate(order):
        added, moved = f"{prefix}add{index}", f"{prefix}t{index}"
        nodes.append(helper.make_node("Add", [_input_name(element_type)] * 2, [added], name=f"{prefix}a{index}"))
        nodes.append(helper.make_node("Transpose", [added], [moved], name=f"{prefix}tr{index}", perm=[1, 0]))
        outputs.append(moved)
    return nodes, outputs


def _mixed_type_model(types: list[int], first: int) -> onnx.ModelProto:
    order = [first, *types, first, *reversed(types), first]
    main_nodes, main_outputs = _mixed_type_chain(order, "m_")
    branch_nodes, branch_outputs = _mixed_type_chain(order, "b_")
    floats = order.index(TensorProto.FLOAT)  # the If's output: float, which every If version takes
    then_branch = helper.make_graph(
        branch_nodes, "then", [], [helper.make_tensor_value_info(branch_outputs[floats], TensorProto.FLOAT, None)]
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", [main_outputs[floats]], ["e_out"])],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)],
    )
    graph = helper.make_graph(
        [*main_nodes, helper.make_node("If", ["cond"], ["picked"], then_branch=then_branch, else_branch=else_branch)],
        "mixed",
        [
            *[helper.make_tensor_value_info(_input_name(t), t, [2, 3]) for t in types],
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [
            *[helper.make_tensor_value_info(name, t, [3, 2]) for name, t in zip(main_outputs, order, strict=True)],
            helper.make_tensor_value_info("picked", TensorProto.FLOAT, [3, 2]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    return model


@slow_but_a_sample()
@pytest.mark.parametrize("first", [TensorProto.FLOAT, TensorProto.INT8, TensorProto.FLOAT16, TensorProto.BFLOAT16])
@pytest.mark.parametrize("target", [13, 11])
def test_kinds_kept_for_one_type_and_moved_for_another_convert_alike_on_both_paths(first, target):
    """Add-14 and Transpose-13 are kept (re-versioned) on float, float16 and, at 13, bfloat16,
    while Add on int8 is written in 32 bits below version 14; in the main graph and an If branch,
    each type first or later: kinds first seen kept and later moved (and the reverse) give
    the plain path's bytes and report. (bfloat16 exists from opset 13: at 11 the models hold
    none, and the bfloat16-first case is the float-first one.)"""
    types = [TensorProto.FLOAT, TensorProto.INT8, TensorProto.FLOAT16]
    if target >= 13:
        types.append(TensorProto.BFLOAT16)
    model = _mixed_type_model(types, first if first in types else TensorProto.FLOAT)
    plain = lowering.lower_model(model, target_opset=target, ops=[], fast=False)
    fast = lowering.lower_model(model, target_opset=target, ops=[], fast=True)
    assert fast.model.SerializeToString() == plain.model.SerializeToString()
    assert fast.report == plain.report and list(fast.report.adapted) == list(plain.report.adapted)
    assert len(plain.report.adapted) >= 2  # a step kept and a step moved, at least


def _with_unknown_field(node: onnx.NodeProto, value: int) -> onnx.NodeProto:
    """``node`` holding a field its NodeProto does not know (number 19, a varint), as written
    by a newer onnx."""
    return onnx.NodeProto.FromString(node.SerializeToString() + b"\x98\x01" + bytes([value]))


@slow_but_a_sample()
@pytest.mark.parametrize("field", ["device_configurations", "unknown"])
@pytest.mark.parametrize("target", [13, 11])
def test_fields_of_a_node_no_kind_holds_are_its_own_on_both_paths(field, target):
    """A moved node is the node, copied: its ``device_configurations`` and fields unknown to this
    onnx go with it. Nodes of one kind (Reshape-14, Split-18) differing there each keep their own
    on the fast path as on the plain one, whichever comes first."""
    nodes, previous = [], "x"
    for index, configured in enumerate([True, False, True, True]):
        reshape = helper.make_node("Reshape", [previous, "s"], [f"r{index}"], allowzero=0)
        split = helper.make_node("Split", [f"r{index}"], [f"a{index}", f"b{index}"], axis=0, num_outputs=2)
        joined = helper.make_node("Concat", [f"a{index}", f"b{index}"], [f"y{index}"], axis=1)
        for number, node in enumerate([reshape, split]):
            if field == "device_configurations" and configured:
                node.device_configurations.add(configuration_id=f"cfg{index}.{number}")
        if field == "unknown" and configured:
            reshape, split = _with_unknown_field(reshape, index), _with_unknown_field(split, 10 + index)
        nodes += [reshape, split, joined]
        previous = f"y{index}"
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor("s", TensorProto.INT64, [2], [4, 2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plain = converted_alike(model, target)
    reshapes = [node for node in onnx.load_from_string(plain).graph.node if node.op_type == "Reshape"]
    assert [node.SerializeToString() for node in reshapes] != [reshapes[0].SerializeToString()] * 4  # each its own


def _attribute_field(name: str, value) -> bytes:
    """An attribute as its NodeProto field's wire bytes (``attribute``, number 5)."""
    data = helper.make_attribute(name, value).SerializeToString()
    return b"\x2a" + bytes([len(data)]) + data


@pytest.mark.parametrize("target", [13, 10])
def test_nodes_moved_with_attributes_dropped_or_replaced_convert_alike_on_both_paths(target):
    """Reshape-14 moved down drops allowzero; Softmax-13 moved to 10 (which takes no negative
    axis) replaces axis=-1 by the last axis. A node of a kind seen is its own bytes less the
    dropped attribute's field and plus the new one's, except where that field's bytes also lie
    elsewhere in the node (inside another
    attribute here, which onnx's checker lets through under a name starting "__"): then the
    recorded result is written out. Both as on the plain path, carried fields and all."""
    nodes, previous = [], "x"
    for index in range(6):
        reshape = helper.make_node("Reshape", [previous, "s"], [f"r{index}"], allowzero=0)
        softmax = helper.make_node("Softmax", [f"r{index}"], [f"y{index}"], axis=-1)
        if index >= 3:  # another kind: an attribute holds the bytes of the axis attribute's field
            softmax.attribute.append(helper.make_attribute("__note", b"holds" + _attribute_field("axis", -1)))
        for node in (reshape, softmax):
            node.metadata_props.add(key="at", value=str(index))
        nodes += [reshape, softmax]
        previous = f"y{index}"
    shape = [1, 1, 2, 2]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, shape)],
        [helper.make_tensor("s", TensorProto.INT64, [4], shape)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plain = converted_alike(model, target)
    converted = onnx.load_from_string(plain).graph.node
    assert [node.metadata_props[0].value for node in converted] == [str(index // 2) for index in range(12)]
    assert all(not node.attribute for node in converted if node.op_type == "Reshape")
    axes = [helper.get_attribute_value(a) for node in converted for a in node.attribute if a.name == "axis"]
    assert axes == [-1 if target == 13 else 3] * 6


def _named_like_a_value(op: str, first_name: str) -> tuple[onnx.ModelProto, int]:
    """Two nodes of one kind, the first named like one of its own values ("x" its input, "y0" its
    output), and the opset they are moved to: ReduceLogSumExp-18 to 11 (axes an attribute),
    Shape-15 with start to 13 (Shape, then Slice), Reshape-14 with allowzero=1 to 13 (the dropped
    field's bytes also inside a "__" attribute: written the recorded way)."""
    # (Shape's input of dynamic size: at a static one, the Shape the adapter writes would fold)
    nodes, inits, shape = [], [], ["n", 3] if op == "Shape" else [2, 3]
    for k, name in enumerate([first_name, "second"]):
        if op == "ReduceLogSumExp":
            node, out_shape = helper.make_node(op, ["x", "axes"], [f"y{k}"], name=name), [1, 3]
        elif op == "Shape":
            node, out_shape = helper.make_node(op, ["x"], [f"y{k}"], name=name, start=1), [1]
        else:
            node, out_shape = helper.make_node(op, ["x", "s"], [f"y{k}"], name=name, allowzero=1), [3, 2]
            node.attribute.insert(0, helper.make_attribute("__x", _attribute_field("allowzero", 1)))
        nodes.append(node)
    inits = [
        helper.make_tensor("axes", TensorProto.INT64, [1], [0]),
        helper.make_tensor("s", TensorProto.INT64, [2], [3, 2]),
    ]
    out_type = TensorProto.INT64 if op == "Shape" else TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(f"y{k}", out_type, out_shape) for k in range(2)], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return model, 11 if op == "ReduceLogSumExp" else 13


@slow_but_a_sample()
@pytest.mark.parametrize("op", ["ReduceLogSumExp", "Shape", "Reshape"])
@pytest.mark.parametrize("first_name", ["x", "y0"])
def test_a_node_named_like_one_of_its_values_leaves_later_nodes_their_own_names(op, first_name):
    """A replay cannot tell whether a result node named like the recorded node meant its name or
    its value's: such a recording is not replayed, and a later node keeps its own name."""
    model, target = _named_like_a_value(op, first_name)
    onnx.checker.check_model(model, full_check=True)
    plain = converted_alike(model, target)
    names = [node.name for node in onnx.load_from_string(plain).graph.node]
    assert first_name in names and "second" in names


def test_a_held_graph_holding_the_memos_marker_texts_keeps_them():
    """The kind memo marks the fields a node carries along with texts of its own; a node of a
    graph held under a "__" attribute whose doc_string or metadata key is that text keeps it (the
    moved Softmax's own fields are not carried into it), as on the plain path."""
    inner = helper.make_node("Relu", ["x"], ["z"], doc_string="\x00carried doc_string\x00")
    inner.metadata_props.add(key="\x00carried metadata_props\x00", value="v")
    held = helper.make_graph([inner], "held", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])])
    nodes = []
    for index in range(3):
        node = helper.make_node("Softmax", ["x"], [f"y{index}"], axis=-1, doc_string=f"outer {index}")
        node.attribute.append(helper.make_attribute("__g", held))
        node.metadata_props.add(key="outer", value=str(index))
        nodes.append(node)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(f"y{index}", TensorProto.FLOAT, [2, 3]) for index in range(3)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plain = converted_alike(model, 11)
    for node in onnx.load_from_string(plain).graph.node:
        kept = next(a.g for a in node.attribute if a.name == "__g").node[0]
        assert kept.doc_string == inner.doc_string and kept.metadata_props[0].key == inner.metadata_props[0].key


def _holding_bytes(node: onnx.NodeProto, field_tag: int, data: bytes) -> onnx.NodeProto:
    """``node`` with a string field (3 name, 6 doc_string) holding ``data``, as protobuf and onnx's
    checker take it though it is not UTF-8 (protobuf then reads the field as bytes)."""
    return onnx.NodeProto.FromString(node.SerializeToString() + bytes([field_tag << 3 | 2, len(data)]) + data)


@pytest.mark.parametrize("field_tag", [3, 6], ids=["name", "doc_string"])
def test_names_and_doc_strings_that_are_not_utf8_convert_alike_or_are_refused_alike(field_tag):
    """Softmax-13 to 11 (a kind repeated, the odd node first), Squeeze-13 with run-time axes to 11
    (its doc_string carried onto the If choosing the axes) convert alike on both paths and keep
    the bytes; ReduceMean-18 with empty axes and noop_with_empty_axes, made an Identity named like
    it, is refused alike, in one clear line, where its name is not UTF-8."""
    odd = b"odd\xa0bytes"
    nodes = [_holding_bytes(helper.make_node("Softmax", ["x"], ["s0"], axis=0), field_tag, odd)]
    nodes += [helper.make_node("Softmax", ["x"], [f"s{k}"], axis=0, name=f"n{k}") for k in (1, 2)]
    nodes.append(_holding_bytes(helper.make_node("Squeeze", ["t", "axes"], ["q"]), field_tag, odd + b"2"))
    shape = [2, 3]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 3, 1]),
         helper.make_tensor_value_info("axes", TensorProto.INT64, [1])],
        [*(helper.make_tensor_value_info(f"s{k}", TensorProto.FLOAT, shape) for k in range(3)),
         helper.make_tensor_value_info("q", TensorProto.FLOAT, ["a", "b"])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plain = converted_alike(model, 11)
    # the Softmax's (its fresh names are made from the name's bytes as Python writes them), and the
    # Squeeze's doc_string on the If standing for it
    assert plain.count(odd) >= (1 if field_tag == 3 else 2)

    reduce = _holding_bytes(helper.make_node("ReduceMean", ["x", "none"], ["r"], keepdims=1), field_tag, odd)
    graph = helper.make_graph(
        [reduce], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, shape)],
        [helper.make_tensor("none", TensorProto.INT64, [0], [])],
    )  # fmt: skip
    refused = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    reduce.attribute.append(helper.make_attribute("noop_with_empty_axes", 1))
    refused.graph.node[0].CopyFrom(reduce)
    onnx.checker.check_model(refused, full_check=True)
    words = converted_bytes(refused, 11, fast=False)
    assert converted_bytes(refused, 11, fast=True) == words
    if field_tag == 3:  # (a doc_string the Identity does not carry: converted)
        assert isinstance(words, str) and "not UTF-8" in words and "\n" not in words, words


@slow_but_a_sample()
@pytest.mark.parametrize("field_tag", [3, 6], ids=["name", "doc_string"])
@pytest.mark.parametrize("options", [{}, {"target_opset": 13}], ids=["lowered", "converted"])
def test_seed_ops_named_not_in_utf8_lower_alike_on_both_paths(field_tag, options):
    """IsNaN nodes, one kind, the first and last with a name (or doc_string) that is not UTF-8:
    lowered, and converted, alike on both paths (their fresh names made from the bytes as Python
    writes them, on both)."""
    nodes = [_holding_bytes(helper.make_node("IsNaN", ["x"], ["y0"]), field_tag, b"o\xa0")]
    nodes += [helper.make_node("IsNaN", ["x"], [f"y{k}"], name=f"n{k}") for k in (1, 2)]
    nodes.append(_holding_bytes(helper.make_node("IsNaN", ["x"], ["y3"]), field_tag, b"p\xa0"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(f"y{k}", TensorProto.BOOL, [2]) for k in range(4)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    plain = lowering.lower(model, fast=False, **options)
    assert "IsNaN" not in op_type_set(plain)
    assert lowering.lower(model, fast=True, **options).SerializeToString() == plain.SerializeToString()


@slow_but_a_sample()
@pytest.mark.parametrize("path", sorted(EXPORTS.glob("*.onnx")), ids=lambda p: p.stem)
def test_untyped_exports_convert_alike_with_the_graph_typed_at_once_or_value_by_value(path, monkeypatch):
    """Without value_info, a conversion follows most element types from the op schemas: all of
    a graph's in one pass once many are asked (:data:`lowering.scopes.PROPAGATIONS_BEFORE_WHOLE`),
    else one value at a time. Either gives the same bytes."""
    import lowering.scopes

    untyped = side_by_side(onnx.load(path), 2, typed=False)
    for target in (11, 13):
        converted = {}
        for before_whole in (0, 10**9):
            monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", before_whole)
            converted[before_whole] = converted_bytes(untyped, target, fast=True)
        assert isinstance(converted[0], bytes), converted[0]
        assert converted[0] == converted[10**9], (path.stem, target)
