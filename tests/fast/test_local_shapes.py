"""The fast path's local shapes (:mod:`lowering.fast.local_shapes`): a shape the pass asks for
is first inferred one node at a time back from its value, and gives the same bytes as onnx's
inference of the whole graph."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import assert_same_bits, make_model, slow_but_a_sample
from test_untyped_conversion import of_main

import lowering
from lowering.fast import Shortcuts
from lowering.fast.local_shapes import LOCAL_INFERENCE_NODES
from lowering.verification.runtime import run_onnxruntime

F32 = TensorProto.FLOAT


def split_after_relus(links: int, shape: list) -> onnx.ModelProto:
    """Split-18(num_outputs=2) on axis 1 of x passed through ``links`` Relus, no value_info."""
    names = ["x", *(f"r{k}" for k in range(links))]
    nodes = [helper.make_node("Relu", [names[k]], [names[k + 1]], name=f"relu{k}") for k in range(links)]
    nodes.append(helper.make_node("Split", [f"r{links - 1}"], ["a", "b"], name="split", axis=1, num_outputs=2))
    outputs = [helper.make_tensor_value_info(n, F32, [None, None]) for n in "ab"]
    return make_model(nodes, [helper.make_tensor_value_info("x", F32, shape)], outputs, opset=18)


@slow_but_a_sample()
@pytest.mark.parametrize(
    "links, shape, whole",
    [
        (3, [2, 6], False),  # the Relus inferred one at a time give the axis' size
        (3, [2, 5], False),  # (an uneven cut: sizes [3, 2])
        (3, ["n", 6], True),  # a symbolic size left open: the whole graph's inference is asked
        (LOCAL_INFERENCE_NODES + 8, [2, 6], True),  # more nodes back than are inferred one by one
    ],
)
def test_a_shape_is_asked_of_the_nodes_back_from_it_before_the_whole_graph(links, shape, whole, whole_inferences):
    """Split-18 to 13 reads the size of its axis: the fast path first infers the nodes back from
    its input one at a time, and takes a static shape so found; else (a symbolic size, or more
    nodes back than it infers so) it asks onnx's inference of the whole graph, as the plain path
    does for every shape. Every way gives the same bytes."""
    model = split_after_relus(links, shape)
    fast = lowering.lower(model, target_opset=13, ops=[])
    assert of_main(whole_inferences, model) == (["main"] if whole else [])
    without = lowering.lower(model, target_opset=13, ops=[], fast=Shortcuts(local_shapes=False))
    assert fast.SerializeToString() == without.SerializeToString()
    assert fast.SerializeToString() == lowering.lower(model, target_opset=13, ops=[], fast=False).SerializeToString()
    onnx.checker.check_model(fast, full_check=True)
    x = np.random.default_rng(8).standard_normal([2, shape[1]]).astype(np.float32)
    for got, want in zip(run_onnxruntime(fast, {"x": x}), run_onnxruntime(model, {"x": x}), strict=True):
        assert_same_bits(got, want)
