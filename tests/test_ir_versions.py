"""The IR version a model needs (lowering/ir_versions.py): what each IR version added, read from
onnx's own onnx.proto; the newest a model's opsets, element types and features need; a model
declared at a runtime's newest IR version where it needs none newer, and refused where it does."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_bits, make_model, runs_in_onnxruntime

import lowering
from lowering.ir_versions import (
    declare_ir_version_at_most,
    ir_version_for_opset,
    ir_version_needed,
    ir_version_of_type,
)
from lowering.target_lowering import check_model


def test_the_ir_version_of_each_element_type_is_the_one_onnx_proto_says_added_it():
    """onnx.proto: "IR VERSION 4 ... Add type BFLOAT16", "IR VERSION 9 ... Added FLOAT8E4M3FN,
    ...", "IR VERSION 10 ... Added UINT4, INT4, ...", 11 FLOAT4E2M1, 12 FLOAT8E8M0, 13 UINT2,
    INT2; the first types were never added."""
    versions = {name: ir_version_of_type(getattr(TensorProto, name))
                for name in ["FLOAT", "INT64", "STRING", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E5M2FNUZ", "INT4", "UINT4",
                             "FLOAT4E2M1", "FLOAT8E8M0", "INT2", "UINT2"]}  # fmt: skip
    assert versions == {"FLOAT": 1, "INT64": 1, "STRING": 1, "BFLOAT16": 4, "FLOAT8E4M3FN": 9,
                        "FLOAT8E5M2FNUZ": 9, "INT4": 10, "UINT4": 10, "FLOAT4E2M1": 11, "FLOAT8E8M0": 12, "INT2": 13,
                        "UINT2": 13}  # fmt: skip


def relu_model(**graph_parts) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    return make_model([helper.make_node("Relu", ["x"], ["y"])], [x], [y], opset=17, **graph_parts)


def test_a_model_needs_the_newest_of_its_opsets_types_and_features():
    plain = relu_model()
    assert ir_version_needed(plain) == (8, "opset 17 of ai.onnx")  # (find_min_ir_version_for)
    assert ir_version_needed(plain, opset=13) == (7, "opset 13 of ai.onnx")
    node_metadata = relu_model()
    node_metadata.graph.node[0].metadata_props.add(key="origin", value="export")
    assert ir_version_needed(node_metadata) == (10, "metadata_props on a graph, node, function, value or tensor")
    model_metadata = relu_model()  # (the model's own metadata_props are older than IR 10)
    model_metadata.metadata_props.add(key="origin", value="export")
    assert ir_version_needed(model_metadata)[0] == 8
    casting = relu_model()
    casting.graph.node.append(helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT8E8M0))
    assert ir_version_needed(casting) == (12, "the element type FLOAT8E8M0")  # (named only by Cast's "to")
    weights = relu_model(initializer=[onnx.numpy_helper.from_array(np.zeros(2, np.float32), "w")])
    assert ir_version_needed(weights, opset=7) == (4, "an initializer that is not a graph input")
    overloaded = relu_model()
    overloaded.graph.node[0].overload = "fast"
    assert ir_version_needed(overloaded) == (10, "an overload")


def test_a_model_is_declared_at_the_newest_a_runtime_loads_only_where_it_needs_none_newer():
    model = relu_model()
    model.ir_version = 13
    assert declare_ir_version_at_most(model, 11) and model.ir_version == 11
    onnx.checker.check_model(model, full_check=True)
    already = relu_model()
    already.ir_version = 9
    assert declare_ir_version_at_most(already, 11) and already.ir_version == 9  # (never raised)
    four_bit = relu_model()
    four_bit.graph.node.append(helper.make_node("Cast", ["y"], ["z"], to=TensorProto.INT4))
    four_bit.ir_version = 13
    assert not declare_ir_version_at_most(four_bit, 9) and four_bit.ir_version == 13


def test_a_model_a_runtime_cannot_load_at_its_ir_version_is_refused_naming_what_needs_it():
    """onnxruntime 1.23 (onnxruntime-cuda: onnx 1.18.0, IR 11) loads no FLOAT8E8M0 (IR 12):
    check names the IR version with no fix, and --target refuses (the type exists at no opset the
    runtime loads either)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT8E8M0, [2])
    model = make_model([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E8M0)], [x], [y], opset=24)
    model.ir_version = 13
    finding = next(f for f in check_model(model, "onnxruntime-cuda") if f.op_type == "(IR version)")
    assert finding.blocks and finding.fix is None
    assert finding.verdict.why.endswith("the model needs IR version 12 for the element type FLOAT8E8M0")
    with pytest.raises(lowering.LoweringError, match="type float8e8m0, which opset 23 does not have"):
        lowering.lower(model, target="onnxruntime-cuda")


def test_a_model_declared_older_for_its_runtime_means_the_same():
    """Only the declared IR version changes: the same nodes, the same outputs bit for bit."""
    model = relu_model()
    model.ir_version = 14
    lowered = lowering.lower(model, target="onnxruntime-cuda")
    assert lowered.ir_version == 11 and [n.op_type for n in lowered.graph.node] == ["Relu"]
    feeds = {"x": np.array([-0.0, np.nan], np.float32)}
    want, got = runs_in_onnxruntime(model, feeds), runs_in_onnxruntime(lowered, feeds)
    assert want is not None and got is not None
    assert_same_bits(got[0], want[0], "Relu")


def test_an_opset_no_release_declared_takes_the_next_releases_ir_version():
    """onnx.defs holds opsets 2 to 4 (Pad-2, Concat-4), which no release declared: a model taken
    there (TensorRT 8.6's table names opsets 1 to 17) declares IR version 3, as opset 5's
    release did; a released opset, its release's."""
    assert [ir_version_for_opset(opset) for opset in (1, 2, 4, 5, 9, 13)] == [3, 3, 3, 3, 4, 7]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Concat", ["r", "x"], ["y"], axis=0)]
    model = make_model(nodes, [x], [y], opset=13)
    lowered = lowering.lower(model, target_opset=4)
    onnx.checker.check_model(lowered, full_check=True)
    assert [(o.domain, o.version) for o in lowered.opset_import] == [("", 4)]
