"""Every rule that names what it writes (``emits``, which a target's opset ranking reads through
``ops_written_for``) names every op it writes on its op's backend cases: the ops of the lowered
model, nested graphs included, beside those of the original (a Scan's body, inlined) and the
Identity the decomposition writes where a rule answers a value it did not make."""

from __future__ import annotations

import warnings

import pytest
from support import slow_but_a_sample
from version_cases import node_cases_of

import lowering
from lowering.errors import LoweringError
from lowering.opcount import count_ops
from lowering.registry import all_rules

# MelWeightMatrix's and Pad's backend cases feed the inputs their rules take only as constants, and
# Tile's its repeats at opset 13, where a repeat of 0 is not written (tests/rules/test_pad_lowering.py
# and tests/rules/test_unsqueeze_tile_lowering.py check their emits on their own forms).
CASES_NOT_LOWERED = {"MelWeightMatrix", "Pad", "Tile"}
NAMED = sorted({rule.op_type for rule in all_rules() if rule.emits is not None and not rule.domain})


def _op_types(model) -> set[str]:
    return {key for key in count_ops(model) if "." not in key}


@slow_but_a_sample(keep=6)
@pytest.mark.parametrize("op_type", NAMED)
def test_a_rule_writes_only_the_ops_it_names(op_type):
    cases = node_cases_of(op_type)
    emits = set(next(rule for rule in all_rules() if rule.op_type == op_type and not rule.domain).emits)
    lowered = 0
    for name, case in sorted(cases.items()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result = lowering.lower_model(case.model, ops=[op_type])
            except LoweringError:
                continue
        if op_type in _op_types(result.model):
            continue  # (not lowered there: its refusals are their tests')
        written = _op_types(result.model) - _op_types(case.model) - {"Identity"}
        assert written <= emits, f"{name}: writes {sorted(written - emits)}, which its rule's emits leave out"
        lowered += 1
    assert lowered or not cases or op_type in CASES_NOT_LOWERED, f"none of {len(cases)} cases of {op_type} lowered"
