"""targets/probe.py --add: the cases probed are added to the profile (or, probed again with
--again or --again-verdicts, replace their verdicts); with --cases, the cases the profile holds that the prepared
cases no longer hold (a pattern now writes another form) are dropped and named in the record;
the others are kept as they were."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "targets"))

import probe  # noqa: E402

EARLIER = {
    "name": "made-up",
    "source": {"kind": "probed", "added": [{"how": "first --add"}]},
    "cases": {
        "test_add": {"verdict": "right"},
        "lowered_test_x_ReduceMax": {"verdict": "wrong"},
        "cast_INT8_UINT8@6": {"verdict": "wrong"},
    },
}


def test_new_cases_are_added_and_those_no_longer_prepared_dropped_and_named():
    new = {"lowered_test_x_ReduceMin": {"verdict": "right"}}
    prepared = {"test_add", "cast_INT8_UINT8@6", "lowered_test_x_ReduceMin"}
    profile = probe.added_profile(EARLIER, new, prepared, {"how": "second --add"})
    assert profile["cases"] == {
        "test_add": {"verdict": "right"},
        "cast_INT8_UINT8@6": {"verdict": "wrong"},
        "lowered_test_x_ReduceMin": {"verdict": "right"},
    }
    assert profile["source"]["added"] == [
        {"how": "first --add"},
        {"how": "second --add", "cases": 1, "dropped": ["lowered_test_x_ReduceMax"]},
    ]
    assert len(EARLIER["source"]["added"]) == 1 and "lowered_test_x_ReduceMax" in EARLIER["cases"]  # (untouched)


def test_cases_probed_again_replace_their_verdicts_and_without_cases_none_is_dropped():
    again = {"cast_INT8_UINT8@6": {"verdict": "right"}}
    profile = probe.added_profile(EARLIER, again, None, {"how": "--add --again cast_"})
    assert profile["cases"]["cast_INT8_UINT8@6"] == {"verdict": "right"}
    assert set(profile["cases"]) == set(EARLIER["cases"])
    assert profile["source"]["added"][-1] == {"how": "--add --again cast_", "cases": 1}


def test_the_record_names_a_few_prefixes_probed_again_and_lists_many_apart():
    assert probe.again_recorded(()) == ("", {})
    assert probe.again_recorded(("cast_", "test_cast")) == (" --again cast_ test_cast", {})
    many = tuple(f"test_{n}" for n in range(82))
    assert probe.again_recorded(many) == (" --again (the 82 name prefixes of 'again')", {"again": list(many)})


def test_the_cases_probed_are_the_new_ones_and_those_named_or_judged_so_again():
    prepared = [(name,) for name in ("test_add", "lowered_test_x_ReduceMax", "cast_INT8_UINT8@6", "test_new")]
    assert probe.to_probe(prepared, None, ()) == prepared
    assert probe.to_probe(prepared, EARLIER, ()) == [("test_new",)]
    assert probe.to_probe(prepared, EARLIER, ("cast_",)) == [("cast_INT8_UINT8@6",), ("test_new",)]
    assert probe.to_probe(prepared, EARLIER, (), ("wrong",)) == prepared[1:]
    assert probe.to_probe(prepared, EARLIER, ("test_add",), ("fails",)) == [("test_add",), ("test_new",)]
