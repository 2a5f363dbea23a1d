"""Every ONNX backend node test model taken to target opsets, by onnx's converter and by us.

For each case and target: does ``onnx.version_converter.convert_version`` on the whole model
give a model that passes the checker and runs in onnxruntime; does ``lowering.lower(...,
target_opset=N, ops=[])`` succeed (or refuse, and why); and does each result still give the
case's expected outputs.

python benchmarks/version_sweep.py [--targets 11 13 17] [--limit N] [--show-failures]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

import onnxruntime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from version_cases import CaseOutcome, node_cases, sweep_case  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[11, 13, 17])
    parser.add_argument("--limit", type=int, default=None, help="only the first N cases")
    parser.add_argument("--show-failures", action="store_true", help="list every case we refuse or get wrong")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    onnxruntime.set_default_logger_severity(3)
    cases = node_cases()[: args.limit]
    start = time.perf_counter()
    tallies = {target: collections.Counter() for target in args.targets}
    failures: list[str] = []
    for case in cases:
        for target in args.targets:
            outcome: CaseOutcome = sweep_case(case, target)
            tally = tallies[target]
            tally["cases"] += 1
            tally[f"converter {outcome.converter}"] += 1
            tally[f"ours {outcome.ours}"] += 1
            if outcome.converter == "runs" and outcome.ours != "converts":
                tally["ours fails where the converter runs"] += 1
            if outcome.ours == "does not run" and outcome.original_runs:
                tally["ours does not run where the original runs"] += 1
            if outcome.converter_wrong:
                tally["converter runs but gives other outputs"] += 1
            if outcome.ours_wrong:
                tally["ours gives other outputs"] += 1
            if args.show_failures and (outcome.ours_wrong or outcome.ours != "converts"):
                failures.append(f"{target} {case.name}: {outcome.ours} {outcome.detail}")
    for target, tally in tallies.items():
        print(f"target {target}:")
        for key, count in sorted(tally.items()):
            print(f"  {key}: {count}")
    print(f"{len(cases)} cases x {len(args.targets)} targets in {time.perf_counter() - start:.0f} s")
    for line in failures:
        print(line)


if __name__ == "__main__":
    main()
