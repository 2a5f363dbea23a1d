"""The plain path is the specification and the fast path an add-on: the environment can
select the plain one for a whole run, and without the fast package the product still gives
the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import onnx
import pytest
from support import REPO
from test_golden import ORIGINALS, lowering_options

import lowering


def test_the_environment_selects_the_plain_path(monkeypatch):
    model = onnx.parser.parse_model(ORIGINALS[0].read_text())
    monkeypatch.delenv("ONNX_LOWER_PLAIN", raising=False)  # the suite itself may run on the plain path
    fast = lowering.lower_model(model)
    monkeypatch.setenv("ONNX_LOWER_PLAIN", "1")
    plain = lowering.lower_model(model)
    assert (fast.path, plain.path) == ("fast", "plain")
    assert plain.model.SerializeToString() == fast.model.SerializeToString()
    assert lowering.lower_model(model, fast=True).path == "fast"  # an explicit choice wins


@pytest.mark.slow
def test_without_the_fast_package_every_golden_model_lowers_the_same():
    """``lowering.fast`` made unimportable in a fresh interpreter: every golden original lowers,
    on the plain path, to the bytes the fast path gives here."""
    script = f"""
import sys, json, hashlib
sys.modules["lowering.fast"] = None  # as if the package were deleted
sys.path.insert(0, {str(REPO / "tests")!r})
import onnx, lowering
from test_golden import ORIGINALS, lowering_options
digests = {{}}
for path in ORIGINALS:
    result = lowering.lower_model(onnx.parser.parse_model(path.read_text()), **lowering_options(path))
    assert result.path == "plain", result.path
    digests[str(path)] = hashlib.sha256(result.model.SerializeToString()).hexdigest()
print(json.dumps(digests))
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ONNX_LOWER_PLAIN", None)
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert completed.returncode == 0, completed.stderr
    digests = json.loads(completed.stdout)
    assert len(digests) == len(ORIGINALS) > 50
    for path in ORIGINALS:
        result = lowering.lower_model(onnx.parser.parse_model(path.read_text()), fast=True, **lowering_options(path))
        assert result.path == "fast"
        assert digests[str(path)] == hashlib.sha256(result.model.SerializeToString()).hexdigest(), path


@pytest.mark.parametrize("shortcut", ["whole_bytes", "direct_replay", "replay_together"])
def test_a_shortcut_switched_off_is_still_the_fast_path(shortcut):
    from lowering.fast import Shortcuts

    model = onnx.parser.parse_model(ORIGINALS[-1].read_text())
    result = lowering.lower_model(model, fast=Shortcuts(**{shortcut: False}), **lowering_options(ORIGINALS[-1]))
    assert result.path == "fast"
    assert (
        result.model.SerializeToString()
        == lowering.lower(model, fast=False, **lowering_options(ORIGINALS[-1])).SerializeToString()
    )
