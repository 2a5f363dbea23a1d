"""Against the onnxscript rewriter performing the same rewrite (IsNaN(x) to
Equal(Equal(x, x), false)) on the same models, both timed in this one run.

    python benchmarks/bench_vs_onnxscript.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnx_ir as ir
from onnxscript.rewriter import pattern, rewrite

sys.path.insert(0, str(Path(__file__).parent))

from models import isnan_chain, isnan_fan_in  # noqa: E402

import lowering  # noqa: E402


def isnan_target(op, x):
    return op.IsNaN(x)


def isnan_replacement(op, x):
    false = op.Constant(value=ir.tensor(np.array(False)))
    return op.Equal(op.Equal(x, x), false)


ISNAN_RULE = pattern.RewriteRule(isnan_target, isnan_replacement)


def timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def main() -> None:
    cases = [("chain_25k", isnan_chain(25_000)), ("chain_50k", isnan_chain(50_000)),
             ("chain_100k", isnan_chain(100_000)), ("fan_in_20k", isnan_fan_in(20_000))]  # fmt: skip
    print(f"{'model':<12} {'onnx-lower s':>13} {'onnxscript s':>13} {'speed-up':>9}")
    for name, model in cases:
        ours, lowered = timed(lambda: lowering.lower(model))  # noqa: B023
        theirs, rewritten = timed(lambda: rewrite(model, pattern_rewrite_rules=[ISNAN_RULE]))  # noqa: B023
        left = sum(n.op_type == "IsNaN" for n in rewritten.graph.node)
        assert left == 0 and not any(n.op_type == "IsNaN" for n in lowered.graph.node), f"{name}: not all rewritten"
        print(f"{name:<12} {ours:>13.2f} {theirs:>13.2f} {theirs / ours:>8.1f}x")


if __name__ == "__main__":
    main()
