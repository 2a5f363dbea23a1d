"""The progress line: drawn only after its delay, counts every node and graph, cleared at the end."""

from __future__ import annotations

import io

import onnx
import pytest
from onnx import helper
from support import make_model

import lowering
from lowering.progress import Progress


@pytest.mark.slow
def test_progress_counts_every_node_and_graph_and_clears():
    nodes = [helper.make_node("IsNaN", ["x"], [f"y{k}"]) for k in range(5000)]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
        [helper.make_tensor_value_info(f"y{k}", onnx.TensorProto.BOOL, ["N"]) for k in range(5000)],
        opset=13,
    )
    stream = io.StringIO()
    progress = Progress(5000, stream=stream, delay=0.0)
    lowering.lower_model(model, progress=progress)
    progress.close()
    assert progress.nodes == 5000 and progress.graphs == 1
    text = stream.getvalue()
    assert "lowering: " in text and "/5000 nodes" in text and text.endswith("\r\x1b[K")


def test_quick_work_draws_nothing():
    stream = io.StringIO()
    progress = Progress(10, stream=stream, delay=60.0)
    progress.advance(nodes=10, graphs=1)
    progress.close()
    assert stream.getvalue() == ""
