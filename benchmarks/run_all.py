"""Runs every benchmark in turn; each prints its own figures and ratios, measured in this run.

python benchmarks/run_all.py
"""

from __future__ import annotations

import runpy
from pathlib import Path

HERE = Path(__file__).parent

for name in (
    "bench_pass_cost",
    "bench_vs_onnxscript",
    "bench_conversion",
    "bench_function_bodies",
    "bench_runtime",
    "bench_memory",
):
    print(f"\n== {name}")
    runpy.run_path(str(HERE / f"{name}.py"), run_name="__main__")
