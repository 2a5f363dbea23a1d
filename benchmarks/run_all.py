"""Runs every benchmark in turn; each prints its own figures and ratios, measured in this run.
With ``--write PAGE`` the benchmarks that write a section of docs/performance.md
(bench_pass_cost, bench_conversion) write theirs.

python benchmarks/run_all.py [--write docs/performance.md]
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
WRITERS = ("bench_pass_cost", "bench_conversion")

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--write", metavar="PAGE", help="the page the writing benchmarks write their sections of")
args = parser.parse_args()

for name in (
    "bench_pass_cost",
    "bench_vs_onnxscript",
    "bench_conversion",
    "bench_function_bodies",
    "bench_runtime",
    "bench_memory",
):
    print(f"\n== {name}")
    script = str(HERE / f"{name}.py")
    sys.argv = [script, "--write", args.write] if args.write and name in WRITERS else [script]
    runpy.run_path(script, run_name="__main__")
