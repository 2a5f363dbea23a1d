"""ReduceMax and ReduceMin over x of no element lowered to their identity expanded
(rules/empty_reduction.py): axes as an attribute, a constant or an input fed at run time (negative
ones too, none, noop_with_empty_axes), keepdims 0 and 1, shapes known or partly known, at opsets 13,
18 and 20, against onnxruntime's kernel (-inf / +inf, an integer type's lowest / highest) and the
rule's numpy reference; bools (which onnxruntime fails) against onnx.reference; x not known to be
empty declined."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from support import assert_same_elements, lowered_wholly, make_model, nested_forms, runs_in_onnxruntime

import lowering
from lowering import floats, schemas
from lowering.registry import rule_for

TYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8, TensorProto.UINT8,
         TensorProto.INT32, TensorProto.INT64, TensorProto.UINT32, TensorProto.UINT64]  # fmt: skip


def reduction_model(op_type, declared, axes, *, keepdims=1, noop=0, opset=18, fed_axes=False,
                    element_type=TensorProto.FLOAT):  # fmt: skip
    """y = op_type(x, axes): axes an attribute below 18, else an input (constant or fed as ``a``)."""
    names, inputs, initializer = ["x"], [helper.make_tensor_value_info("x", element_type, declared)], []
    attributes = {"keepdims": keepdims}
    if opset >= 18:
        attributes |= {"noop_with_empty_axes": noop} if noop else {}
        if axes is not None:
            names.append("a")
            if fed_axes:
                inputs.append(helper.make_tensor_value_info("a", TensorProto.INT64, [len(axes)]))
            else:
                initializer.append(numpy_helper.from_array(np.array(axes, np.int64).reshape(-1), "a"))
    elif axes is not None:
        attributes["axes"] = axes
    rank = len(declared)
    out_rank = rank if keepdims or (noop and not axes) else (rank - len(axes) if axes else 0)
    node = helper.make_node(op_type, names, ["y"], name="reduce", **attributes)
    output = helper.make_tensor_value_info("y", element_type, [None] * out_rank)
    return make_model([node], inputs, [output], opset=opset, initializer=initializer)


def random_form(rng):
    rank = int(rng.integers(1, 4))
    shape = [int(s) for s in rng.integers(0, 3, rank)]
    shape[int(rng.integers(0, rank))] = 0
    opset = int(rng.choice([13, 18, 20]))
    axes = None
    if rng.random() > 0.2:
        count = int(rng.integers(0 if opset >= 18 else 1, rank + 1))
        axes = sorted({int(a) for a in rng.permutation(np.arange(-rank, rank))[:count]}, key=lambda a: a % rank)
        axes = list({a % rank: a for a in axes}.values())  # (each axis once)
    return shape, axes, {"keepdims": int(rng.integers(0, 2)), "noop": int(rng.random() < 0.3), "opset": opset,
                         "fed_axes": bool(rng.random() < 0.5) and opset >= 18}  # fmt: skip


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
@pytest.mark.parametrize("seed", range(2))
def test_random_forms_are_the_kernel_s_answer(op_type, seed):
    rng = np.random.default_rng(seed)
    reference = rule_for("", op_type).reference
    for _ in range(40):
        shape, axes, form = random_form(rng)
        partly = [None if rng.random() < 0.3 and d else d for d in shape]  # (a 0 stays known)
        element_type = TYPES[int(rng.integers(0, len(TYPES)))]
        model = reduction_model(op_type, partly, axes, element_type=element_type, **form)
        x = np.zeros(shape, floats.numpy_dtype(element_type))
        feeds = {"x": x} | (
            {"a": np.array(axes, np.int64).reshape(-1)} if form["fed_axes"] and axes is not None else {}
        )
        lowered = lowered_wholly(model, op_type)
        where = f"{shape} axes {axes} {form} {element_type}"
        want = runs_in_onnxruntime(model, feeds)
        got = runs_in_onnxruntime(lowered, feeds)
        if want is None:  # (no onnxruntime kernel for the type: the reference)
            given = {"axes_input": axes} if form["opset"] >= 18 else {"axes": axes}
            want = [reference(x, **given, keepdims=form["keepdims"], noop_with_empty_axes=form["noop"])]
        assert got is not None and got[0].dtype == want[0].dtype, where
        assert_same_elements(got[0], want[0])


@pytest.mark.parametrize("op_type", ["ReduceMax", "ReduceMin"])
def test_bfloat16_against_the_reference(op_type):
    model = reduction_model(op_type, [2, 0, 3], [1], element_type=TensorProto.BFLOAT16)
    lowered = lowered_wholly(model, op_type)
    x = np.zeros([2, 0, 3], floats.numpy_dtype(TensorProto.BFLOAT16))
    want = rule_for("", op_type).reference(x, [1])
    got = lowering.verification.runtime.run_reference(lowered, {"x": x})[0]
    assert_same_elements(got, want)
    assert np.isinf(want.astype(np.float32)).all() and want.shape == (2, 1, 3)


@pytest.mark.parametrize(
    ("op_type", "model", "reason"),
    [
        ("ReduceMax", reduction_model("ReduceMax", [2, 3], [1]), "not known to hold no element"),
        ("ReduceMin", reduction_model("ReduceMin", [2, None], [1]), "not known to hold no element"),
        ("ReduceMin", reduction_model("ReduceMin", [2, 0], [2]), "not all axes of x's rank 2"),
    ],
    ids=["not empty", "length unknown", "axis out of range"],
)  # fmt: skip
def test_declined(op_type, model, reason):
    result = lowering.lower_model(model, ops=[op_type])
    assert reason in " ".join(result.report.lines())
    assert op_type in {node.op_type for node in result.model.graph.node}


@pytest.mark.parametrize(("op_type", "identity"), [("ReduceMax", False), ("ReduceMin", True)])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_bools_against_onnx_reference(op_type, identity, keepdims):
    """onnxruntime fails a reduction of no bool; the spec (and onnx.reference) answer False for
    Max and True for Min, and so does the lowered model, in onnxruntime, verified against
    onnx.reference."""
    model = reduction_model(op_type, [2, 0, 3], [1], keepdims=keepdims, opset=20, element_type=TensorProto.BOOL)
    x = np.zeros([2, 0, 3], bool)
    with pytest.raises(Exception, match="not defined for empty set"):
        lowering.verification.runtime.run_onnxruntime(model, {"x": x})
    result = lowering.lower_model(model, ops=[op_type])
    assert op_type not in {node.op_type for node in result.model.graph.node}
    verified = lowering.verification.compare.verify(model, result.model)
    assert verified.match and verified.original_runner.startswith("onnx.reference"), verified.lines()
    assert verified.lowered_runner == "onnxruntime"
    # (onnx.reference stands in for onnxruntime on the original's side only: a lowered model
    # onnxruntime fails so does not pass)
    with pytest.raises(lowering.LoweringError, match="the lowered model fails in onnxruntime"):
        lowering.verification.compare.verify(model, model)
    [got] = runs_in_onnxruntime(result.model, {"x": x})
    [want] = lowering.verification.runtime.run_reference(model, {"x": x})
    assert got.dtype == bool and got.shape == want.shape == ((2, 1, 3) if keepdims else (2, 3))
    assert (got == identity).all() and (want == identity).all()


def test_inside_if_branches_and_local_functions():
    model = reduction_model("ReduceMin", [3, 0], [-1], keepdims=0)
    for label, nested in nested_forms(model).items():
        assert 'op_type: "ReduceMin"' not in str(lowering.lower(nested, ops=["ReduceMin"])), label


def test_a_target_weighs_another_opset_for_a_reduction_the_rule_does_not_take():
    """tract 0.21 refuses ReduceMax-20 on bools, and runs it carried in uint8 at 18: the rule,
    which takes x of no element only, is not named as the fix of such a node
    (Rule.takes_form), so --target converts it instead of refusing; an empty float one the rule
    lowers, bools too."""
    bools = reduction_model("ReduceMax", [2, 3], [1], opset=20, element_type=TensorProto.BOOL)
    result = lowering.lower_model(bools, target="tract-0.21")
    assert schemas.default_opset(result.model.opset_import) in (18, 19)  # (ReduceMax-18 of uint8)
    assert {"Cast", "ReduceMax", "Greater"} <= {node.op_type for node in result.model.graph.node}
    x = np.array([[True, False, False], [False, False, False]])
    assert runs_in_onnxruntime(result.model, {"x": x})[0].tolist() == [[True], [False]]
    empty = lowering.lower_model(reduction_model("ReduceMax", [2, 0], [1], opset=20), target="tract-0.21")
    assert "lowered 1 x ReduceMax-20" in empty.report.lines()
    empty_bools = reduction_model("ReduceMax", [2, 0], [1], opset=20, element_type=TensorProto.BOOL)
    assert "lowered 1 x ReduceMax-20" in lowering.lower_model(empty_bools, target="tract-0.21").report.lines()
