"""A model that states no value_info (TorchScript's exports) converts without onnx inference of
the whole graph where no step needs a shape that only inference knows: a function body is made
from the types the model states or the op schemas give, Shape-15's bounds are clamped only to a
stated rank, and Softmax-13 on the last axis goes to 11 as it is. A body that cannot go without
a static shape (an axis an older opset needs as an attribute) is made once more from the shapes
inference gives. Both paths give the same bytes, and the results mean what the originals do."""

from __future__ import annotations

import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import lowering
from lowering.verification.runtime import run_onnxruntime

sys.path.insert(0, str(Path(__file__).parent))

from support import assert_same_bits, fast_add_on, make_model, slow_but_a_sample  # noqa: E402

F32 = TensorProto.FLOAT


def of_main(asked: list[str], model: onnx.ModelProto) -> list[str]:
    """Those of ``asked`` that are the whole model's."""
    return [name for name in asked if name == model.graph.name]


def behind_relu(node: onnx.NodeProto, shape: list[int], output, *, opset: int, stated: bool, **fields):
    """``node`` reading ``r = Relu(x)``, x of ``shape``; r's type stated in value_info or not."""
    relu = helper.make_node("Relu", ["x"], ["r"], name="relu")
    info = [helper.make_tensor_value_info("r", F32, shape)] if stated else []
    return make_model(
        [relu, node], [helper.make_tensor_value_info("x", F32, shape)], [output], opset=opset, value_info=info, **fields
    )


def converted_alike(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """``model`` at ``target`` on the fast path, checked whole, and byte for byte the plain path's."""
    fast = lowering.lower(model, target_opset=target, ops=[])
    onnx.checker.check_model(fast, full_check=True)
    plain = lowering.lower(model, target_opset=target, ops=[], fast=False)
    assert fast.SerializeToString() == plain.SerializeToString()
    return fast


@pytest.mark.parametrize("target", [13, 11])
def test_an_untyped_layer_normalization_goes_down_by_its_body_without_inference(target, whole_inferences):
    """LayerNormalization-17's body reads its input's element type alone (its shape comes from
    Shape at run time): bit for bit the typed model's conversion, and no inference asked."""
    shape = [2, 3, 4]
    scale = onnx.numpy_helper.from_array(np.linspace(-2, 2, 4, dtype=np.float32), "scale")
    norm = helper.make_node("LayerNormalization", ["r", "scale"], ["y"], name="norm", axis=-1, epsilon=1e-3)
    output = helper.make_tensor_value_info("y", F32, shape)
    untyped = behind_relu(norm, shape, output, opset=17, stated=False, initializer=[scale])
    converted = converted_alike(untyped, target)
    assert of_main(whole_inferences, untyped) == []
    assert "LayerNormalization" not in {node.op_type for node in converted.graph.node}
    typed = converted_alike(behind_relu(norm, shape, output, opset=17, stated=True, initializer=[scale]), target)
    x = np.random.default_rng(5).standard_normal(shape).astype(np.float32)
    (want,), (got,) = run_onnxruntime(untyped, {"x": x}), run_onnxruntime(converted, {"x": x})
    assert_same_bits(got, run_onnxruntime(typed, {"x": x})[0])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)  # onnxruntime's fused kernel against the body


@pytest.mark.parametrize("stated", [True, False])
def test_a_body_needing_a_static_rank_is_made_again_from_inferred_shapes(stated, whole_inferences):
    """RMSNormalization-23's body takes its axes from Range(rank - 1, rank) at run time; at 17,
    ReduceMean takes axes as an attribute, which its adapter chooses at run time among the
    input's rank's axes: the body goes only where that rank is known, and there its axes fold
    to a constant before it goes (lowering/shape_folding.py). Where the model does not
    state it, the body made from the element type cannot go, and is made again from the shape
    inference gives (asked once a path): the same nodes as where the model states it, names and
    all (the first attempt's names are given back), and there no inference is asked."""
    shape = [2, 3, 4]
    scale = onnx.numpy_helper.from_array(np.linspace(-2, 2, 4, dtype=np.float32), "scale")
    norm = helper.make_node("RMSNormalization", ["r", "scale"], ["y"], name="norm", axis=-1)
    output = helper.make_tensor_value_info("y", F32, shape)
    model = behind_relu(norm, shape, output, opset=23, stated=stated, initializer=[scale])
    converted = converted_alike(model, 17)
    assert of_main(whole_inferences, model) == ([] if stated else ["main", "main"])  # (once a path)
    other = behind_relu(norm, shape, output, opset=23, stated=not stated, initializer=[scale])
    assert converted.graph.node == lowering.lower(other, target_opset=17, ops=[]).graph.node
    (reduce,) = [node for node in converted.graph.node if node.op_type == "ReduceMean"]
    assert [a.ints for a in reduce.attribute if a.name == "axes"] == [[2]]  # (folded from the rank: no If)
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    r = np.maximum(x, 0)
    want = r / np.sqrt(np.mean(r * r, axis=-1, keepdims=True) + 1e-5) * onnx.numpy_helper.to_array(scale)
    np.testing.assert_allclose(run_onnxruntime(converted, {"x": x})[0], want, rtol=1e-5, atol=1e-6)


@slow_but_a_sample()
@pytest.mark.parametrize("stated", [True, False])
@pytest.mark.parametrize("start, end", [(0, 9), (-2, None), (1, 3)])
def test_shape_15_bounds_are_clamped_to_a_stated_rank_only(start, end, stated, whole_inferences):
    """Shape-15(r, start, end) at 13: where the model states r's rank the bounds are clamped
    here (covering every dimension, Shape(r) alone); where only inference would know it,
    Slice(Shape(r), [start], [end]), which clamps alike when it runs, and no inference is asked."""
    attributes = {"start": start} if end is None else {"start": start, "end": end}
    node = helper.make_node("Shape", ["r"], ["y"], name="shape_node", **attributes)
    model = behind_relu(node, [2, 3, 4], helper.make_tensor_value_info("y", TensorProto.INT64, ["n"]),
                        opset=15, stated=stated)  # fmt: skip
    converted = converted_alike(model, 13)
    assert of_main(whole_inferences, model) == []
    slices = [n for n in converted.graph.node if n.op_type == "Slice"]
    assert len(slices) == (0 if stated and (start, end) == (0, 9) else 1)
    x = np.ones((2, 3, 4), np.float32)
    assert run_onnxruntime(converted, {"x": x})[0].tolist() == run_onnxruntime(model, {"x": x})[0].tolist()


@pytest.mark.parametrize("target, axis", [(11, -1), (10, 2)])
def test_softmax_13_on_the_last_axis_reads_no_rank_at_11(target, axis, whole_inferences):
    """Softmax-13(r, axis=-1) at 11 and 12, which take a negative axis, is Softmax(r, axis=-1)
    whatever r's rank; at 10 the axis must be written as rank - 1, from inference here: of the
    Relu alone on the fast path, of the whole graph on the plain path."""
    node = helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)
    model = behind_relu(node, [2, 3, 4], helper.make_tensor_value_info("y", F32, [2, 3, 4]), opset=13, stated=False)
    converted = converted_alike(model, target)
    if target >= 11 or find_spec("lowering.fast") is not None:  # (at 10 the plain path infers once more)
        assert of_main(whole_inferences, model) == ([] if target >= 11 else ["main"])
    (softmax,) = [n for n in converted.graph.node if n.op_type == "Softmax"]
    assert [a.i for a in softmax.attribute if a.name == "axis"] == [axis]
    x = np.random.default_rng(7).standard_normal((2, 3, 4)).astype(np.float32)
    assert_same_bits(run_onnxruntime(converted, {"x": x})[0], run_onnxruntime(model, {"x": x})[0])


EXPORTS = Path(__file__).resolve().parents[1] / "golden" / "exports"


@slow_but_a_sample()
@pytest.mark.parametrize("name", sorted(path.stem for path in EXPORTS.glob("*.onnx")))
def test_real_exports_without_value_info_ask_inference_only_for_split_sizes(name, whole_inferences):
    """Every export of the team's set, its value_info dropped (TorchScript's state none), taken
    to each target below its opset: onnx inference of the whole graph is asked only where a
    Split-18 cuts by num_outputs along an axis whose size inference of the nodes back from it,
    one at a time, leaves open (the model's inputs have symbolic sizes), or, below 14, a
    Reshape-14 with allowzero=1 has sizes computed at run time (its result's sizes, from
    inference's data propagation, show whether a 0 in them can only be its input's own). The
    8-bit check of MaxPool and Pow's types read element types alone, and Resize-18 reads its
    input's rank only where axes or a policy need it. The plain path, which asks the whole
    graph's inference for every shape, gives the same bytes."""
    fast_add_on()  # (what is counted is the fast path's inference)
    model = onnx.load(EXPORTS / f"{name}.onnx")
    del model.graph.value_info[:]
    opset = model.opset_import[0].version
    nodes = model.graph.node
    counted_split = any(
        node.op_type == "Split" and any(a.name == "num_outputs" for a in node.attribute) for node in nodes
    )
    constants = {node.output[0] for node in nodes if node.op_type == "Constant"}
    constants |= {tensor.name for tensor in model.graph.initializer}
    run_time_view = any(
        node.op_type == "Reshape"
        and any(a.name == "allowzero" and a.i == 1 for a in node.attribute)
        and node.input[1] not in constants
        for node in nodes
    )
    static_inputs = all(
        dim.HasField("dim_value") for info in model.graph.input for dim in info.type.tensor_type.shape.dim
    )
    for target in [t for t in (11, 13, 15, 17) if t < opset]:
        whole_inferences.clear()
        converted = lowering.lower(model, target_opset=target, ops=[])
        onnx.checker.check_model(converted, full_check=True)
        inferred = (counted_split and not static_inputs) or (run_time_view and target < 14)
        assert of_main(whole_inferences, model) == ([model.graph.name] if inferred else []), target
        plain = lowering.lower(model, target_opset=target, ops=[], fast=False)
        assert converted.SerializeToString() == plain.SerializeToString(), target


def alike_with_and_without_local_shapes(model: onnx.ModelProto, target: int) -> str:
    """``model`` at ``target`` on the fast path, with local shapes off, and on the plain path:
    the same bytes, or the same refusal; the refusal, or "converted". (Where the speed add-on is
    deleted, ``fast=True`` is the plain path too.)"""
    outcomes = set()
    try:
        from lowering.fast import Shortcuts

        local_shapes_off = [Shortcuts(local_shapes=False)]
    except ImportError:
        local_shapes_off = []
    for fast in (True, *local_shapes_off, False):
        try:
            outcomes.add(lowering.lower(model, target_opset=target, ops=[], fast=fast).SerializeToString())
        except lowering.LoweringError as refused:
            outcomes.add(str(refused))
    (outcome,) = outcomes
    return outcome if isinstance(outcome, str) else "converted"


def test_an_input_not_given_and_an_input_of_unknown_shape_are_other_kinds(monkeypatch):
    """Squeeze(x, "") removes every 1 of x [1, 4, 1, 6]; Squeeze(x, axes) with axes from a far
    Constant (not inferred one node at a time) is another kind of node, whose result's shape
    the first's must not stand for: Split-18 of it goes down alike on every path."""
    monkeypatch.setattr(lowering.scopes, "PROPAGATIONS_BEFORE_WHOLE", 4)
    monkeypatch.setattr(lowering.scopes, "NEARBY_NODES", 2)
    axes = onnx.numpy_helper.from_array(np.array([0], np.int64))
    nodes = [helper.make_node("Constant", [], ["ax"], value=axes)]
    nodes += [
        helper.make_node("Split", [f"z{k - 1}" if k else "z"], [f"z{k}", f"w{k}"], axis=0, num_outputs=2)
        for k in range(8)
    ]
    nodes += [
        helper.make_node("Squeeze", ["x", ""], ["a"]),
        helper.make_node("Split", ["a"], ["a0", "a1"], axis=1, num_outputs=2),
        helper.make_node("Squeeze", ["x", "ax"], ["b"]),
        helper.make_node("Split", ["b"], ["b0", "b1"], axis=1, num_outputs=2),
    ]
    outputs = [helper.make_tensor_value_info(n, F32, [None] * 2) for n in ("a0", "a1")]
    outputs += [helper.make_tensor_value_info(n, F32, [None] * 3) for n in ("b0", "b1")]
    outputs.append(helper.make_tensor_value_info("z7", F32, [None]))
    inputs = [helper.make_tensor_value_info("x", F32, [1, 4, 1, 6]), helper.make_tensor_value_info("z", F32, [1024])]
    model = make_model(nodes, inputs, outputs, opset=18)
    assert alike_with_and_without_local_shapes(model, 17) == "converted"


def test_a_value_read_twice_by_one_node_is_inferred_once(whole_inferences):
    """Mul(r, r) reads r twice, which is no cycle: its shape is inferred back one node at a time
    (no inference of the whole graph on the fast path), and Split-18 of it is two equal parts,
    alike on every path."""
    fast_add_on()  # (what is counted is the fast path's inference)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Mul", ["r", "r"], ["b"]),
        helper.make_node("Split", ["b"], ["b0", "b1"], axis=1, num_outputs=2),
    ]
    outputs = [helper.make_tensor_value_info(n, F32, [None] * 2) for n in ("b0", "b1")]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F32, [4, 6])], outputs, opset=18)
    converted = lowering.lower(model, target_opset=17, ops=[])
    assert of_main(whole_inferences, model) == []
    assert alike_with_and_without_local_shapes(model, 17) == "converted"
    (split,) = [node for node in converted.graph.node if node.op_type == "Split"]
    assert len(split.input) == 1  # 6 cut in 2 equal parts: no sizes needed
    x = np.random.default_rng(9).standard_normal([4, 6]).astype(np.float32)
    for got, want in zip(run_onnxruntime(converted, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
        assert_same_bits(got, want)


def test_a_value_stated_of_another_element_type_is_not_inferred_past():
    """v = Relu(x) is float, but the graph states v as double (no shape): onnx's inference of
    the whole graph fails on that, so no shape is known on any path, and Split-18 cannot go."""
    nodes = [
        helper.make_node("Relu", ["x"], ["v"]),
        helper.make_node("Relu", ["v"], ["a"]),
        helper.make_node("Split", ["a"], ["a0", "a1"], axis=1, num_outputs=2),
    ]
    outputs = [helper.make_tensor_value_info(n, F32, [None, None]) for n in ("a0", "a1")]
    stated = [helper.make_tensor_value_info("v", TensorProto.DOUBLE, None)]
    model = make_model(nodes, [helper.make_tensor_value_info("x", F32, [4, 6])], outputs, opset=18, value_info=stated)
    assert alike_with_and_without_local_shapes(model, 17) != "converted"
