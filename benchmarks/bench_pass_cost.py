"""Pass cost: (load + lower + save) / (load + save) on IsNaN chains and a fan-in, all measured
in this one run; and time per node at 25k, 50k and 100k links to show the growth is linear.
``chain_25k_1n`` is the 25k chain with every node named alike (fresh names must not cost
quadratic time there). ``fn_chain_100k`` is the 100k chain inside a local function: a rewrite
there makes the pass run onnx's plain checker on its result, whose share is printed.
``chain_25k_pl`` is the 25k chain lowered by the plain algorithm (``fast=False``).

    python benchmarks/bench_pass_cost.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).parent))

from models import isnan_chain, isnan_chain_in_function, isnan_fan_in  # noqa: E402

import lowering  # noqa: E402


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(name: str, model: onnx.ModelProto, folder: Path, fast: bool = True) -> dict:
    source, plain, lowered_path = folder / f"{name}.onnx", folder / f"{name}.copy.onnx", folder / f"{name}.lowered.onnx"
    onnx.save(model, source)

    def load_save():
        onnx.save(onnx.load(source), plain)

    def load_lower_save():
        onnx.save(lowering.lower(onnx.load(source), fast=fast), lowered_path)

    runs = 2 if len(model.graph.node) >= 50_000 else 7  # small models: more runs, the best steadier
    baseline = best_of(runs, load_save)
    with_lowering = best_of(runs, load_lower_save)
    lowered = onnx.load(lowered_path)
    save_lowered = best_of(runs, lambda: onnx.save(lowered, plain))
    nodes = len(model.graph.node) + sum(len(f.node) for f in model.functions)
    check = best_of(runs, lambda: onnx.checker.check_model(lowered)) if model.functions else None
    return {"check_s": check, "name": name, "nodes": nodes, "load_save_s": baseline, "load_lower_save_s": with_lowering,
            "ratio": with_lowering / baseline, "us_per_node": 1e6 * (with_lowering - baseline) / nodes,
            "save_lowered_s": save_lowered}  # fmt: skip


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for links in (25_000, 50_000, 100_000):
            rows.append(measure(f"chain_{links // 1000}k", isnan_chain(links), folder))
        rows.append(measure("fan_in_20k", isnan_fan_in(20_000), folder))
        rows.append(measure("chain_25k_1n", isnan_chain(25_000, one_name=True), folder))  # all nodes named alike
        rows.append(measure("fn_chain_100k", isnan_chain_in_function(100_000), folder))  # checked after lowering
        rows.append(measure("chain_25k_pl", isnan_chain(25_000), folder, fast=False))  # the plain algorithm
    print(f"{'model':<13} {'nodes':>7} {'load+save s':>12} {'+lower s':>9} {'ratio':>6} {'lowering us/node':>17} "
          f"{'save lowered s':>15}")  # fmt: skip
    for row in rows:
        print(f"{row['name']:<13} {row['nodes']:>7} {row['load_save_s']:>12.3f} {row['load_lower_save_s']:>9.3f} "
              f"{row['ratio']:>6.2f} {row['us_per_node']:>17.1f} {row['save_lowered_s']:>15.3f}")  # fmt: skip
    for row in rows:
        if row["check_s"] is not None:
            print(f"{row['name']}: onnx's plain check of the result {row['check_s']:.3f} s, "
                  f"{row['check_s'] / row['load_save_s']:.2f}x load+save")  # fmt: skip
    chains = [r for r in rows if r["name"] in ("chain_25k", "chain_50k", "chain_100k")]
    growth = chains[-1]["us_per_node"] / chains[0]["us_per_node"]
    print(f"growth: lowering cost per node at 100k / at 25k = {growth:.2f} (1.00 is linear)")


if __name__ == "__main__":
    main()
