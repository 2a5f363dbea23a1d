"""The shortcuts the pass takes for speed give exactly what the plain way gives: node lists
spliced as bytes, names checked against the model's bytes, replays made together, types
followed back from the node that reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from support import GOLDEN, make_model, oracle, run_cli_in_process

import lowering
import lowering.fast.protowire as protowire
from lowering.fast import Shortcuts
from lowering.fast.names import NamesBySnapshot
from lowering.modelio import load_model
from lowering.naming import NameAllocator, names_in_model
from lowering.opcount import count_ops
from lowering.samples import sample_values
from lowering.verification.runtime import run_onnxruntime

F16, F32, BOOL = onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL
ORIGINALS = sorted(p for p in GOLDEN.rglob("*.onnxtxt") if not p.name.endswith(".lowered.onnxtxt"))


def load_text(path: Path) -> onnx.ModelProto:
    return onnx.parser.parse_model(path.read_text())


# -- wire bytes ----------------------------------------------------------------------------
@pytest.mark.parametrize("number", [0, 1, 127, 128, 300, 16_383, 16_384, 2**21, 2**35])
def test_varint_is_what_protobuf_writes(number):
    tensor = onnx.TensorProto(dims=[number])  # dims: field 1, one varint (proto2, not packed)
    assert tensor.SerializeToString() == b"\x08" + protowire.varint(number)


@pytest.mark.parametrize("text", ["", "x", "é" * 70, "n" * 127, "n" * 128, "v" * 20_000])
def test_length_prefixed_string_parses_back(text):
    node = onnx.NodeProto.FromString(protowire.NAME_TAG + protowire.length_prefixed(text))
    assert node.name == text


@pytest.mark.parametrize("container_kind", ["graph", "function"])
@pytest.mark.parametrize("whole", [True, False])
def test_splicing_replaces_and_keeps_nodes_in_order(container_kind, whole):
    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"], name=f"n{k}") for k in range(6)]
    if container_kind == "graph":
        container = helper.make_graph(nodes, "g", [], [], initializer=[helper.make_tensor("w", F32, [1], [1.0])])
    else:
        container = helper.make_function("d", "f", ["v0"], ["v6"], nodes, [helper.make_opsetid("", 17)])
    before_other_fields = _without_nodes(container)
    tag = protowire.node_tag(container)
    new = helper.make_node("Neg", ["v1"], ["v2"], name="neg")
    replaced = {
        0: [nodes[0]],  # a NodeProto
        2: [protowire.field(tag, new.SerializeToString()), helper.make_node("Abs", ["v2"], ["v2b"], name="abs")],
        5: [],  # removed
    }
    leading = [helper.make_node("Constant", [], ["c"], name="c", value_float=1.0)]
    protowire.splice_nodes(container, leading, replaced, whole=whole)
    assert [n.name for n in container.node] == ["c", "n0", "n1", "neg", "abs", "n3", "n4"]
    assert container.node[3] == new
    assert _without_nodes(container) == before_other_fields


def _without_nodes(container) -> bytes:
    copy = type(container)()
    copy.CopyFrom(container)
    copy.ClearField("node")
    return copy.SerializeToString()


def test_node_spans_refuse_nodes_that_are_not_side_by_side():
    node = protowire.field(b"\x0a", helper.make_node("Relu", ["a"], ["b"]).SerializeToString())
    name = protowire.field(b"\x12", b"g")
    assert protowire.node_spans(node + node + name, 1, 2) is not None
    assert protowire.node_spans(node + name + node, 1, 2) is None  # kept runs would carry the name twice
    assert protowire.node_spans(node + node, 1, 3) is None


@pytest.mark.parametrize("chunk_bytes", [1, 40, 300, 1 << 22])
def test_fields_merged_in_chunks_are_the_fields_merged_at_once(chunk_bytes):
    """Node fields (bytes, and runs cut from a graph's bytes as views) merged a chunk at a time
    give the graph one merge of them all gives: nodes in order, and other fields between."""
    nodes = [helper.make_node("Relu", [f"v{k}"], [f"v{k + 1}"], name="n" * k) for k in range(12)]
    data = helper.make_graph(nodes, "g", [], []).SerializeToString()
    run = memoryview(data)[: len(data) // 2]  # whole node fields: the graph's nodes come first
    _, _, ends = protowire.node_spans(data, 1, len(nodes))
    cut = max(end for end in ends if end <= len(run))
    pieces = [run[:cut], protowire.field(b"\x12", b"name"), data[cut : ends[-1]], *(b"" for _ in range(2))]
    at_once, in_chunks = onnx.GraphProto(), onnx.GraphProto()
    at_once.MergeFromString(b"".join(pieces))
    protowire.merge_in_chunks(in_chunks, pieces, chunk_bytes=chunk_bytes)
    assert in_chunks.SerializeToString() == at_once.SerializeToString()
    assert [node.name for node in in_chunks.node] == [node.name for node in nodes] and in_chunks.name == "name"


# -- names ---------------------------------------------------------------------------------
HINTS = [("y_equal", "_equal"), ("y_Equal", "_Equal"), ("y_equal", "_equal"), ("bool_false", "bool_false"),
         ("9lives_equal", "_equal"), ("x y_equal", "_equal"), ("", ""), ("taken_Abs", "_Abs"),
         ("taken_Abs", "_Abs"), ("w", "")]  # fmt: skip


def naming_model() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["x"], ["taken_Abs"], name="y"),
        helper.make_node("Relu", ["taken_Abs"], ["taken_Abs_1"], name="taken_Abs_2"),
    ]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [helper.make_tensor_value_info("taken_Abs_1", F32, ["N"])],
        opset=17,
        initializer=[helper.make_tensor("w", F32, [1], [1.0])],
    )


@pytest.mark.parametrize("snapshot", [True, False])
def test_names_checked_by_tail_are_the_names_a_full_listing_gives(snapshot):
    model = naming_model()
    listing = NameAllocator(names_in_model(model))
    by_tail = NamesBySnapshot(model, model.SerializeToString()) if snapshot else NameAllocator(model=model)
    for hint, tail in HINTS:
        assert by_tail.fresh(hint, tail=tail) == listing.fresh(hint)
    assert "taken_Abs_3" in by_tail and "nowhere" not in by_tail


def test_claiming_names_takes_all_or_none():
    model = naming_model()
    names = NamesBySnapshot(model, model.SerializeToString())
    assert names.claim(["a_equal", "b_equal"], {"_equal"})
    assert not names.claim(["c_equal", "a_equal"], {"_equal"})  # a_equal is given already
    assert names.fresh("c_equal", tail="_equal") == "c_equal"  # nothing was taken by the refusal
    assert not names.claim(["y_Relu"], {"y"})  # the tail occurs in the model: not decided this way


# -- whole passes: every shortcut off gives the same bytes ---------------------------------
def lowered_bytes(model: onnx.ModelProto, **shortcuts: bool) -> bytes:
    return lowering.lower(model, fast=Shortcuts(**shortcuts)).SerializeToString()


@pytest.mark.parametrize("path", ORIGINALS, ids=lambda p: str(p.relative_to(GOLDEN)))
@pytest.mark.parametrize("shortcut", ["whole_bytes", "direct_replay", "replay_together"])
def test_golden_models_lower_the_same_with_one_shortcut_off_at_a_time(path, shortcut):
    """Each shortcut alone off, the others on: they do not lean on one another. (All of them off
    at once is the plain path, ``fast=False``, which tests/test_golden.py compares.)"""
    model = load_text(path)
    assert lowered_bytes(model, **{shortcut: False}) == lowered_bytes(model)


def many_kinds_model() -> onnx.ModelProto:
    """Replays of several kinds interleaved, names that collide, unnamed nodes, an unused output."""
    nodes = []
    for k, (op_type, attrs, source) in enumerate(
        [("IsNaN", {}, "x"), ("IsInf", {}, "h"), ("IsNaN", {}, "h"), ("IsInf", {"detect_negative": 0}, "x")] * 5
    ):
        name = ["", "same", f"n{k}", "9digit", "é" * 70 + str(k), "long" * 40][k % 6]  # over 127 bytes too
        nodes.append(helper.make_node(op_type, [source], [f"out{k}" + "ø" * (k % 3) * 50], name=name, **attrs))
    outputs = [helper.make_tensor_value_info(n.output[0], onnx.TensorProto.BOOL, ["N"]) for n in nodes]
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", F32, ["N"]), helper.make_tensor_value_info("h", F16, ["N"])],
        outputs,
        opset=20,
    )


def layered_model() -> onnx.ModelProto:
    """Layers of IsNaN, IsInf, a local function call and, now and then, an If whose branches
    lower too: replays wait across the calls and are made before each If."""
    guard = helper.make_function(
        "local", "Guard", ["a"], ["b"],
        [helper.make_node("IsNaN", ["a"], ["n"]), helper.make_node("Where", ["n", "a", "a"], ["b"])],
        [helper.make_opsetid("", 17)],
    )  # fmt: skip
    nodes, previous = [], "x"
    for k in range(12):
        nodes += [
            helper.make_node("IsNaN", [previous], [f"nan{k}"], name=f"layer{k}"),
            helper.make_node("Guard", [previous], [f"g{k}"], domain="local", name=f"layer{k}_guard"),
            helper.make_node("IsInf", [f"g{k}"], [f"inf{k}"], name=f"layer{k}"),  # a node name used twice
            helper.make_node("Where", [f"inf{k}", previous, f"g{k}"], [f"w{k}"]),
        ]
        if k % 4 == 3:
            branch = [helper.make_node("IsNaN", [f"w{k}"], [f"t{k}"], name=f"layer{k}")]  # names as outside
            nodes.append(helper.make_node(
                "If", ["c"], [f"if{k}"],
                then_branch=helper.make_graph(
                    branch, f"then{k}", [], [helper.make_tensor_value_info(f"t{k}", 9, None)]
                ),
                else_branch=helper.make_graph(
                    [helper.make_node("IsInf", [f"w{k}"], [f"e{k}"])], f"else{k}", [],
                    [helper.make_tensor_value_info(f"e{k}", 9, None)],
                ),
            ))  # fmt: skip
        previous = f"w{k}"
    outputs = [helper.make_tensor_value_info(previous, F32, ["N"])]
    outputs += [helper.make_tensor_value_info(f"if{k}", onnx.TensorProto.BOOL, ["N"]) for k in (3, 7, 11)]
    inputs = [helper.make_tensor_value_info("x", F32, ["N"]), helper.make_tensor_value_info("c", 9, [])]
    return make_model(nodes, inputs, outputs, opset=17, functions=[guard], extra_opsets={"local": 1})


@pytest.mark.parametrize("build", [many_kinds_model, layered_model])
def test_interleaved_kinds_and_colliding_names_lower_the_same_one_by_one(build):
    model = build()
    fast = lowered_bytes(model)
    assert lowered_bytes(model, replay_together=False) == fast
    assert lowered_bytes(model, replay_together=False, direct_replay=False) == fast
    assert lowering.lower(model, fast=False).SerializeToString() == fast
    lowered = onnx.load_from_string(fast)
    onnx.checker.check_model(lowered, full_check=True)
    taken = names_in_model(model)  # the model's own node names may repeat; new ones may not
    new_names = [n.name for n in lowered.graph.node if n.name and n.name not in taken]
    assert new_names and len(new_names) == len(set(new_names))


# -- types followed back -------------------------------------------------------------------
def laid_out_by_another_writer(model: onnx.ModelProto) -> bytes:
    """The model's bytes as another protobuf writer may lay them out, fields in another order:
    each node's op_type before its inputs, the graph after the opset imports."""
    node_fields = []
    for node in model.graph.node:
        rest = onnx.NodeProto()
        rest.CopyFrom(node)
        rest.ClearField("op_type")
        payload = protowire.field(protowire.OP_TYPE_TAG, node.op_type.encode()) + rest.SerializeToString()
        node_fields.append(protowire.field(protowire.node_tag(model.graph), payload))
    graph = onnx.GraphProto()
    graph.CopyFrom(model.graph)
    graph.ClearField("node")
    shell = onnx.ModelProto()
    shell.CopyFrom(model)
    shell.ClearField("graph")
    graph_tag = protowire.varint(onnx.ModelProto.DESCRIPTOR.fields_by_name["graph"].number << 3 | 2)
    return shell.SerializeToString() + protowire.field(graph_tag, b"".join(node_fields) + graph.SerializeToString())


@pytest.mark.parametrize("target_opset", [None, 13])
@pytest.mark.parametrize("build", [many_kinds_model, layered_model])
def test_bytes_as_read_in_another_field_order_lower_as_the_models_own(build, target_opset):
    """The pass reads a file's bytes as read (kept nodes cut from them, names checked against
    them) instead of serializing the model again: however the writer laid them out, the result
    is what the model's own bytes give."""
    model = build()
    data = laid_out_by_another_writer(model)
    assert data != model.SerializeToString() and onnx.load_model_from_string(data) == model
    expected = lowering.lower_model(model, target_opset=target_opset).model.SerializeToString()
    parsed = onnx.load_model_from_string(data)
    as_read = lowering.lower_model(parsed, target_opset=target_opset, serialized=data)
    assert as_read.model.SerializeToString() == expected
    assert parsed == model  # the input is left as it was


def test_the_command_line_lowers_a_file_in_another_field_order_as_its_own_bytes(tmp_path):
    model = many_kinds_model()
    canonical, other = tmp_path / "canonical.onnx", tmp_path / "other.onnx"
    onnx.save(model, canonical)
    other.write_bytes(laid_out_by_another_writer(model))
    for source in (canonical, other):
        completed = run_cli_in_process(source, "-o", tmp_path / f"{source.stem}.lowered.onnx", "-q")
        assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "other.lowered.onnx").read_bytes() == (tmp_path / "canonical.lowered.onnx").read_bytes()
    assert load_model(other).data == other.read_bytes()  # what the command line hands the pass


def far_chain_model(gap: int) -> onnx.ModelProto:
    """IsNaN on a float16 value produced ``gap`` unrelated nodes earlier, and on a Max whose
    first input's type is not known: only its variadic second input's is."""
    nodes = [helper.make_node("Relu", ["x"], ["far"])]
    nodes += [helper.make_node("Neg", ["x" if k == 0 else f"pad{k - 1}"], [f"pad{k}"]) for k in range(gap)]
    nodes.append(helper.make_node("IsNaN", ["far"], ["far_nan"]))
    nodes.append(helper.make_node("Max", ["far", "x"], ["top"]))
    nodes.append(helper.make_node("IsNaN", ["top"], ["top_nan"]))
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", F16, ["N"])],
        [
            helper.make_tensor_value_info("far_nan", onnx.TensorProto.BOOL, ["N"]),
            helper.make_tensor_value_info("top_nan", onnx.TensorProto.BOOL, ["N"]),
            helper.make_tensor_value_info(f"pad{gap - 1}", F16, ["N"]),
        ],
        opset=17,
    )


@pytest.mark.parametrize("gap", [1, 63, 64, 65, 300])
def test_types_are_found_however_far_back_their_producer_is(gap):
    result = lowering.lower_model(far_chain_model(gap))
    assert not result.report.remaining and count_ops(result.model)["IsNaN"] == 0
    assert count_ops(result.model)["Cast"] == 2  # float16 compared in float32 on the target
    values = sample_values(F16)
    far_nan, top_nan, _ = run_onnxruntime(result.model, {"x": values})
    np.testing.assert_array_equal(far_nan, oracle("IsNaN", np.maximum(values, 0)))
    np.testing.assert_array_equal(top_nan, oracle("IsNaN", values))


def test_names_continue_from_the_last_counter_as_a_scan_from_one_would():
    """Counters are remembered per base (many nodes named alike would cost quadratic time);
    the names are those a scan from _1 gives, whatever mix of bases and numbered names."""
    import random

    class Scanning:  # the plain rule: the smallest free counter, from 1
        def __init__(self) -> None:
            self.taken: set[str] = set()

        def fresh(self, base: str) -> str:
            name, counter = base, 0
            while name in self.taken:
                counter += 1
                name = f"{base}_{counter}"
            self.taken.add(name)
            return name

    chooser = random.Random(7)
    plain, remembering = Scanning(), NameAllocator()
    for _ in range(3000):
        base = chooser.choice(["a", "a_1", "a_2", "a_1_1", "b", "b_3", "same_Equal", "same_Equal_1"])
        assert remembering.fresh(base) == plain.fresh(base)


@pytest.mark.parametrize("snapshot", [True, False])
def test_names_given_back_since_a_mark_are_given_again_as_before(snapshot):
    """An attempt whose nodes are dropped gives back the names it took (marks nest): what is
    asked next is named as by an allocator that never gave them, counters and all."""
    model = naming_model()
    names = NamesBySnapshot(model, model.SerializeToString() if snapshot else None)
    untouched = NamesBySnapshot(model, model.SerializeToString() if snapshot else None)
    asked = [(hint, tail) for hint, tail in HINTS] + [("n_Clip", "_Clip")] * 3
    for hint, tail in asked[:2]:
        assert names.fresh(hint, tail=tail) == untouched.fresh(hint, tail=tail)
    outer = names.mark()
    taken = [names.fresh(hint, tail=tail) for hint, tail in asked]
    assert names.claim(["c_equal", "d_equal"], {"_equal"})  # (as a replay takes its names)
    inner = names.mark()
    names.fresh("n_Clip", tail="_Clip")
    names.give_back(inner)
    kept = names.mark()
    kept_name = names.fresh("n_Clip", tail="_Clip")
    names.keep(kept)
    assert kept_name == "n_Clip_3" and kept_name in names
    names.give_back(outer)
    assert not any(name in names for name in [*taken[2:], "c_equal", "d_equal"]) and kept_name not in names
    assert [names.fresh(hint, tail=tail) for hint, tail in asked] == [
        untouched.fresh(hint, tail=tail) for hint, tail in asked
    ]


def test_many_nodes_named_alike_lower_as_one_by_one():
    nodes = [helper.make_node("IsNaN", ["x"], [f"out{k}"], name="same") for k in range(300)]
    outputs = [helper.make_tensor_value_info(f"out{k}", onnx.TensorProto.BOOL, ["N"]) for k in range(300)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F32, ["N"])], outputs, opset=17)
    fast = lowering.lower(model)
    names = [n.name for n in fast.graph.node]
    assert names[-2:] == ["same_Equal_598", "same_Equal_599"] and len(set(names)) == len(names)
    assert lowered_bytes(model, direct_replay=False) == fast.SerializeToString()


@pytest.mark.parametrize("doc_length", [0, 100, 200, 20_000, 3_000_000])
def test_node_spans_cut_nodes_of_every_length_width(doc_length):
    """Node lengths of one, two, three and four varint bytes: each span is exactly its node."""
    nodes = [
        helper.make_node("Relu", ["a"], ["b"], doc_string="d" * doc_length),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Relu", ["c"], ["d"], doc_string="e" * (doc_length // 2 + 130)),
    ]
    data = b"".join(protowire.field(b"\x0a", node.SerializeToString()) for node in nodes) + protowire.field(
        b"\x12", b"g"
    )
    spans = protowire.node_spans(data, 1, len(nodes))
    assert spans is not None
    _, starts, ends = spans
    parsed = [onnx.GraphProto.FromString(data[start:end]).node[0] for start, end in zip(starts, ends, strict=True)]
    assert parsed == nodes
    assert ends[-1] == len(data) - 3


def _reshape_carrying(index: int, doc: str | None, metadata: dict[str, str], unknown: bytes = b"") -> onnx.NodeProto:
    """A Reshape-14 with allowzero=1 (kept at 13 as a Reshape without it) carrying fields."""
    node = helper.make_node("Reshape", [f"x{index}", "shape"], [f"y{index}"], name=f"r{index}", allowzero=1)
    if doc is not None:
        node.doc_string = doc
    for key, value in metadata.items():
        node.metadata_props.add(key=key, value=value)
    return onnx.NodeProto.FromString(node.SerializeToString() + unknown) if unknown else node


CARRIED_CASES = [
    (None, {}),
    ("", {}),  # a doc_string set to "" is written out
    ("short doc", {"namespace": "a"}),
    ("d" * 300, {"k" * 200: "v" * 5000, "stack": "line\n" * 40}),  # lengths of two and three bytes
    (None, {"only": "metadata", "second": "entry"}),
]


def _fields_alone(doc: str | None, metadata: dict[str, str]) -> tuple[bytes, bytes]:
    """The doc_string and metadata_props fields as protobuf writes them in a node of their own."""
    doc_node, metadata_node = onnx.NodeProto(), onnx.NodeProto()
    if doc is not None:
        doc_node.doc_string = doc
    for key, value in metadata.items():
        metadata_node.metadata_props.add(key=key, value=value)
    return doc_node.SerializeToString(), metadata_node.SerializeToString()


@pytest.mark.parametrize(
    "unknown, cut",
    [
        (b"", True),
        (b"\x5a\x02ab", True),  # an unknown length-delimited field 11: skipped by the cut
        (b"\x7a\x81\x01" + b"x" * 129, True),  # field 15, its length a two-byte varint
        (b"\x78\x05", False),  # field 15 as a varint: not a NodeProto's kind of field, written anew
        (b"\x82\x01\x03abc", False),  # field 16 (a two-byte key): written anew
    ],
)
def test_carried_fields_cut_from_the_nodes_bytes_are_the_fields_written_alone(unknown, cut, monkeypatch):
    import lowering.fast.kind_memo as kind_memo

    written_anew: list[onnx.NodeProto] = []
    original = kind_memo._carried_fields_written

    def counted(node):
        written_anew.append(node)
        return original(node)

    monkeypatch.setattr(kind_memo, "_carried_fields_written", counted)
    for index, (doc, metadata) in enumerate(CARRIED_CASES):
        node = _reshape_carrying(index, doc, metadata, unknown)
        assert kind_memo._carried_fields(node) == _fields_alone(doc, metadata)
    assert len(written_anew) == (0 if cut else len(CARRIED_CASES))


def test_replayed_nodes_carry_each_nodes_own_doc_string_and_metadata_as_the_plain_path_does():
    nodes = [_reshape_carrying(index, doc, metadata) for index, (doc, metadata) in enumerate(CARRIED_CASES * 2)]
    count = len(nodes)
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(f"x{k}", F32, [2, 3]) for k in range(count)],
        [helper.make_tensor_value_info(f"y{k}", F32, [3, 2]) for k in range(count)],
        [helper.make_tensor("shape", onnx.TensorProto.INT64, [2], [3, 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    fast = lowering.lower(model, target_opset=13)
    assert fast.SerializeToString() == lowering.lower(model, target_opset=13, fast=False).SerializeToString()
    for before, after in zip(nodes, fast.graph.node, strict=True):
        assert not after.attribute  # moved: allowzero dropped, every node replayed after the first
        assert after.HasField("doc_string") == before.HasField("doc_string")
        assert (after.doc_string, list(after.metadata_props)) == (before.doc_string, list(before.metadata_props))


# -- inference reads the lean bytes --------------------------------------------------------
def noted_model() -> onnx.ModelProto:
    """Nodes carrying exporter notes (metadata_props, doc_string) in the main graph, in a
    subgraph and in a local function; notes elsewhere (graph, value_info, model) too."""

    def noted(node: onnx.NodeProto, tag: str) -> onnx.NodeProto:
        node.doc_string = f"stack trace of {tag}"
        node.metadata_props.add(key="pkg.torch.onnx.stack_trace", value=f"File x.py, {tag}")
        return node

    branch = helper.make_graph(
        [noted(helper.make_node("Neg", ["r"], ["b"], name="inside"), "inside")],
        "branch",
        [],
        [helper.make_tensor_value_info("b", F32, None)],
    )
    function = helper.make_function(
        "local",
        "Twice",
        ["a"],
        ["t"],
        [noted(helper.make_node("Add", ["a", "a"], ["t"]), "body")],
        [helper.make_opsetid("", 18)],
    )
    nodes = [
        noted(helper.make_node("Relu", ["x"], ["r"], name="relu"), "relu"),
        noted(helper.make_node("Reshape", ["r", "shape"], ["s"]), "reshape"),
        helper.make_node("ReduceSum", ["r"], ["c"], keepdims=0),
        noted(helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=branch), "if"),
        helper.make_node("Twice", ["s"], ["z"], domain="local"),
    ]
    graph = helper.make_graph(
        nodes,
        "noted",
        [helper.make_tensor_value_info("x", F32, [2, 3]), helper.make_tensor_value_info("cond", BOOL, [])],
        [helper.make_tensor_value_info(n, F32, None) for n in ("c", "y", "z")],
        [helper.make_tensor("shape", onnx.TensorProto.INT64, [2], [3, 2])],
        doc_string="the graph's notes stay",
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)], functions=[function]
    )
    model.metadata_props.add(key="kept", value="yes")
    return model


def without_notes(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of ``noted_model()`` (or of its inferred model) without the nodes' notes, and how
    many notes were left out."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    removed = 0
    for nodes in (copy.graph.node, copy.graph.node[3].attribute[0].g.node,
                  copy.graph.node[3].attribute[1].g.node, copy.functions[0].node):  # fmt: skip
        for node in nodes:
            removed += bool(node.doc_string) + len(node.metadata_props)
            node.ClearField("doc_string")
            node.ClearField("metadata_props")
    return copy, removed


def test_lean_bytes_leave_out_every_nodes_notes_and_nothing_else():
    from lowering.fast.inference_bytes import lean_bytes

    model = noted_model()
    lean = onnx.ModelProto.FromString(lean_bytes(model.SerializeToString()))
    expected, removed = without_notes(model)
    assert removed == 12  # six noted nodes (the branch twice: both attributes hold it), two notes each
    assert lean == expected
    assert lean.graph.doc_string and lean.metadata_props[0].value == "yes"


def test_inference_types_the_lean_bytes_as_the_model():
    """The inferred models are alike but for the notes: value_info of the main graph and of the
    branches, and the function."""
    from lowering.fast.inference_bytes import lean_bytes

    model = noted_model()
    whole, _ = without_notes(onnx.shape_inference.infer_shapes(model))
    lean = onnx.shape_inference.infer_shapes(lean_bytes(model.SerializeToString()))
    assert len(whole.graph.value_info) == 2  # r, s (the static Reshape gives s a shape)
    assert whole.graph.value_info[1].type.tensor_type.shape.dim[0].dim_value == 3
    assert len(whole.graph.node[3].attribute[0].g.output[0].type.tensor_type.shape.dim) == 2  # the branch's b
    assert lean == whole


def split_of_an_untyped_value() -> onnx.ModelProto:
    """Split-18 (num_outputs) of a Relu's output, which no value_info types: to 13 its sizes
    need the axis' size, which only inference gives. The nodes carry a note."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Split", ["r"], ["a", "b"], axis=1, num_outputs=2),
    ]
    for node in nodes:
        node.metadata_props.add(key="namespace", value="block")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", F32, [2, 6])],
        [helper.make_tensor_value_info(n, F32, [2, 3]) for n in "ab"],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("lean", [True, False])
def test_a_conversion_reading_inferred_shapes_is_alike_with_lean_inference_on_or_off(lean, monkeypatch):
    """Split-18 to 13 needs the split axis' size, which an untyped graph leaves to inference
    (of the whole graph: the one node back, inferred alone, is switched off here)."""
    import lowering.fast

    read = []
    monkeypatch.setattr(
        lowering.fast, "lean_bytes", lambda data: read.append(data) or lowering.fast.inference_bytes.lean_bytes(data)
    )
    model = split_of_an_untyped_value()
    converted = lowering.lower(model, target_opset=13, ops=[], fast=Shortcuts(lean_inference=lean, local_shapes=False))
    split = converted.graph.node[-1]
    assert split.op_type == "Split" and split.metadata_props[0].value == "block"
    plain = lowering.lower(model, target_opset=13, ops=[], fast=False)
    assert converted.SerializeToString() == plain.SerializeToString()
    assert len(read) == lean  # inference was asked, of the lean bytes where on


def test_where_lean_bytes_cannot_be_made_inference_reads_the_model_as_it_is(monkeypatch):
    """A failure making the lean bytes is not the user's: inference reads the model's bytes as
    the plain path does, and the conversion gives the same bytes."""
    import lowering.fast

    def failing(data: bytes) -> bytes:
        raise RuntimeError("no lean schema")

    monkeypatch.setattr(lowering.fast, "lean_bytes", failing)
    model = split_of_an_untyped_value()
    plain = lowering.lower(model, target_opset=13, ops=[], fast=False)
    assert lowering.lower(model, target_opset=13, ops=[]).SerializeToString() == plain.SerializeToString()
    assert plain.graph.node[-1].op_type == "Split"


def test_nodes_kept_again_count_into_the_report_they_were_taken_under(monkeypatch):
    """The kind memo counts nodes it keeps again in batches (KindMemo.count_kept, at each walk's
    end); each batch goes to the report that was the driver's when its nodes were taken, even
    where another report is the driver's by then (a function body's attempt, dropped where the
    body does not go), and nothing is counted twice."""
    from lowering.fast import kind_memo
    from lowering.report import LoweringReport

    captured = {}
    kept_again = kind_memo.KindMemo.kept_again

    def capturing(memo, scope, node, index):
        captured["memo"], captured["scope"] = memo, scope
        return kept_again(memo, scope, node, index)

    monkeypatch.setattr(kind_memo.KindMemo, "kept_again", capturing)
    nodes = [helper.make_node("Identity", [f"k{k}"], [f"k{k + 1}"]) for k in range(3)]
    x = helper.make_tensor_value_info("k0", onnx.TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("k3", onnx.TensorProto.FLOAT, [2])
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 18)])
    result = lowering.lower_model(model, target_opset=21, ops=[])
    assert result.report.adapted == {"Identity-16→21": 3}  # one recorded, two kept again
    memo, scope, graph = captured["memo"], captured["scope"], result.model.graph
    the_pass, attempt = LoweringReport(), LoweringReport()
    memo.driver.report = the_pass
    assert memo.kept_again(scope, graph.node[1], 1) and memo.kept_again(scope, graph.node[2], 2)
    memo.driver.report = attempt  # (as a body's attempt walks a graph of its own)
    assert memo.kept_again(scope, graph.node[1], 1)
    memo.count_kept()  # (that walk's end)
    assert the_pass.adapted == {"Identity-16→21": 2} and attempt.adapted == {"Identity-16→21": 1}
    memo.count_kept()
    assert the_pass.adapted == {"Identity-16→21": 2} and attempt.adapted == {"Identity-16→21": 1}
