"""targets/probe.py --add with --cases: the cases a profile holds that the prepared cases no
longer hold (a pattern now writes another form) are dropped; the others are kept."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "targets"))

import probe  # noqa: E402


def test_the_cases_no_longer_prepared_are_stale():
    earlier = {"cases": {"test_add": {}, "lowered_test_x_ReduceMax": {}, "test_sub": {}}}
    assert probe.stale_cases(earlier, {"test_add", "test_sub", "lowered_test_x_ReduceMin"}) == {
        "lowered_test_x_ReduceMax"
    }
    assert probe.stale_cases(earlier, {"test_add", "test_sub", "lowered_test_x_ReduceMax"}) == set()
