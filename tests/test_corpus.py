"""golden/corpus's real exports (tiny random-weight transformers and timm models, made by
golden/corpus/export_corpus.py) taken to opset 11: each passes the full checker and gives the
export's outputs, bit for bit where only versions moved, within the stated tolerance where a
function body replaced a fused op (LayerNormalization below 17). benchmarks/corpus_sweep.py
takes every file to every opset from 11 to 21 beside onnx's converter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from support import slow_but_a_sample

import lowering
from lowering.verification.runtime import run_onnxruntime

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus"
EXPORTS = sorted(path.stem for path in CORPUS.glob("*.onnx"))
RTOL, ATOL = 1e-3, 1e-5  # where a function body replaced a fused op (its mean and variance in other steps)


def test_the_corpus_is_there():
    assert len(EXPORTS) == 57


@slow_but_a_sample(keep=2)
@pytest.mark.parametrize("name", EXPORTS)
def test_an_export_goes_to_opset_11_and_means_the_same(name):
    model = onnx.load(CORPUS / f"{name}.onnx")
    data = np.load(CORPUS / f"{name}.npz")
    feeds = {key.split(":", 1)[1]: data[key] for key in data.files if key.startswith("input:")}
    result = lowering.lower_model(model, target_opset=11, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    want = run_onnxruntime(model, feeds)  # (node by node: onnxruntime's fusions follow the graph's structure)
    got = run_onnxruntime(result.model, feeds)
    replaced = bool(result.report.rewritten)  # (a function body: LayerNormalization-17 and the like)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if replaced:
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
        else:
            assert g.tobytes() == w.tobytes()
