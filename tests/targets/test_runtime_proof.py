"""The proof on a real runtime (the optional ``[runtimes]`` extra: tract; skipped without it):
corpus exports made for the tract-0.23 target with their inputs' shapes stated run in tract and
give onnxruntime's outputs on the export (within the corpus tolerance), the dynamic dynamo
exports among them, which tract refuses as exported. ``targets/prepare_sweep.py`` and
``targets/run_sweep.py`` do the same for every export and backend case."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from support import slow_but_a_sample

import lowering
from lowering.verification.runtime import run_onnxruntime

pytest.importorskip("tract", reason="the [runtimes] extra (tract) is not installed")

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "golden" / "corpus"
EXPORTS = ["bert_dynamic_dynamo18", "convnext_atto_dynamo18", "gpt2_torchscript17", "whisper_encoder_dynamic_dynamo18"]


@pytest.fixture(scope="module")
def tract_worker():
    sys.path.insert(0, str(REPO / "targets"))
    from probe import Worker

    worker = Worker("tract")
    yield worker
    worker.close()


@slow_but_a_sample(keep=1)
@pytest.mark.parametrize("name", EXPORTS)
def test_an_export_made_for_tract_runs_there_and_matches(name, tract_worker):
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    want = run_onnxruntime(model, feeds)
    shapes = {key: list(value.shape) for key, value in feeds.items()}
    made = lowering.lower_model(model, target="tract-0.23", input_shapes=shapes).model
    inputs = [feeds[info.name] for info in made.graph.input]
    verdict, detail = tract_worker.verdict(made, [(inputs, want)], 1e-3, 1e-5)
    assert verdict == "right", detail
