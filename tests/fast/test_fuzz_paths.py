"""A fixed set of seeds of the paths' differential fuzz (``benchmarks/fuzz_paths.py``): random
small models converted to 11, 12, 13, 16 and 17, and the ops they hold lowered at their own
opset, give the same bytes, or the same refusal, on the fast path as on the plain one, and
neither raises anything but a LoweringError. (A few of the models fail onnx's full check, its
shape inference, which the pass does not run: they are compared all the same.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import slow_but_a_sample  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from fuzz_paths import TARGETS, gen_model, ops_to_lower, outcome  # noqa: E402

SEEDS = range(40001, 40121)  # (among them, each kind of mismatch the fuzz found, before its fix)


@slow_but_a_sample()
@pytest.mark.parametrize("seed", SEEDS)
def test_random_models_convert_alike_on_both_paths(seed):
    model, _ = gen_model(seed)
    ops = ops_to_lower(model, seed)
    for target in [*TARGETS, None]:  # (None: lowering ``ops`` at the model's own opset)
        fast, plain = outcome(model, target, True, ops), outcome(model, target, False, ops)
        assert not plain[0].startswith("OTHER"), plain[1]
        assert fast == plain, (seed, target, fast[0], plain[0])
