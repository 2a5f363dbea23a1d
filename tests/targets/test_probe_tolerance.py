"""targets/probe.py: a runner that states its runtime's own tolerance (an NPU's float16
arithmetic) has outputs compared within the looser of it and each case's own; one that states
none is compared within the case's own, as before."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "targets"))

import probe  # noqa: E402

FLOAT16 = {"rtol": 2.0**-9, "atol": 2.0**-9, "why": "float16 arithmetic"}


def test_a_runner_states_its_tolerance_or_none():
    stated = SimpleNamespace(VERSION="0", TOLERANCE=(2.0**-9, 2.0**-9), TOLERANCE_WHY="float16 arithmetic")
    assert probe.runner_tolerance(stated) == FLOAT16
    assert probe.runner_tolerance(SimpleNamespace(VERSION="0")) is None


def test_the_looser_of_the_cases_tolerance_and_the_runners():
    assert probe.looser(1e-3, 1e-7, None) == (1e-3, 1e-7)
    assert probe.looser(1e-3, 1e-7, FLOAT16) == (2.0**-9, 2.0**-9)
    assert probe.looser(1e-2, 1e-7, FLOAT16) == (1e-2, 2.0**-9)


def test_float16_outputs_are_right_within_the_runners_tolerance_only():
    x = np.array([1.00563, 0.8119434, -3.25], np.float32)
    runner = SimpleNamespace(run=lambda model_bytes, feeds: [feeds["x"].astype(np.float16).astype(np.float32)])
    data_sets = [([x], [x])]
    assert probe.judged(runner, b"", data_sets, 1e-5, 1e-7, ["x"])[0] == "wrong"
    assert probe.judged(runner, b"", data_sets, *probe.looser(1e-5, 1e-7, FLOAT16), ["x"])[0] == "right"
