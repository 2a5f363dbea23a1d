"""The proof of a target on its real runtime, part 2 (in the runtime's environment): each model
targets/prepare_sweep.py wrote, as exported and as made for the target, run through the runtime
and compared with the outputs it must give (within the looser of the model's tolerance and the
one the runner states for its runtime's arithmetic, as targets/probe.py compares); prints one
line per model (with the runtime's words where it is not right) and the totals, and writes them
to FOLDER/results.json.

    python targets/run_sweep.py RUNNER FOLDER
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import Worker  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner")
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    index = json.loads((args.folder / "index.json").read_text())
    worker = Worker(args.runner)
    totals: Counter = Counter()
    results = []
    for entry in index["items"]:
        folder = args.folder / entry["name"]
        inputs = dict(np.load(folder / "inputs.npz"))
        expected_file = np.load(folder / "expected.npz")
        expected = [expected_file[f"arr_{i}"] for i in range(len(expected_file.files))]
        model = onnx.load(folder / "exported.onnx")
        data_sets = [([inputs[info.name] for info in model.graph.input if info.name in inputs], expected)]
        before, before_why = worker.verdict(model, data_sets, entry["rtol"], entry["atol"])
        if "refused" in entry:
            after, after_why = "refused by onnx-lower", entry["refused"]
        else:
            lowered = onnx.load(folder / "target.onnx")
            after, after_why = worker.verdict(lowered, data_sets, entry["rtol"], entry["atol"])
        totals[(before, after)] += 1
        results.append({"name": entry["name"], "before": before, "before_why": before_why,
                        "after": after, "after_why": after_why})  # fmt: skip
        line = f"{entry['name']}: as exported {before}; after --target {after}"
        if after != "right":
            line += f" ({one_line(after_why)})"
        print(line, flush=True)
    worker.close()
    (args.folder / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\n{index['target']} on {args.runner} {worker.version}:")
    if worker.tolerance:  # (probe.Worker compares within the looser of each model's tolerance and this)
        stated = worker.tolerance
        print(
            f"  (outputs within the looser of each model's tolerance and the runner's, rtol {stated['rtol']:g} "
            f"atol {stated['atol']:g}: {stated['why']})"
        )
    for (before, after), count in sorted(totals.items()):
        print(f"  {count:5d}  as exported {before:<8} -> after --target {after}")


def one_line(text: str, limit: int = 300) -> str:
    """The runtime's words on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


if __name__ == "__main__":
    main()
