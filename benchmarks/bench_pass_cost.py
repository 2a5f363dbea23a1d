"""Pass cost: (load + lower + save) / (load + save) on IsNaN chains and a fan-in, all measured
in this one run; and time per node at 25k, 50k and 100k links to show the growth is linear.
``chain_25k_1n`` is the 25k chain with every node named alike (fresh names must not cost
quadratic time there). ``fn_chain_100k`` is the 100k chain inside a local function: a rewrite
there makes the pass run onnx's plain checker on its result, whose share is printed.
``chain_25k_pl`` is the 25k chain lowered by the plain algorithm (``fast=False``). Each time is
given as wall and CPU time (this process and its children: ``timing.cpu_seconds``).

    python benchmarks/bench_pass_cost.py [--links 25000 50000 100000] [--write docs/performance.md]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).parent))

from models import isnan_chain, isnan_chain_in_function, isnan_fan_in  # noqa: E402
from timing import best_of, command, machine, write_section  # noqa: E402

import lowering  # noqa: E402


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
    return {"check": check, "name": name, "nodes": nodes, "runs": runs, "load_save": baseline,
            "load_lower_save": with_lowering, "ratio": with_lowering.wall / baseline.wall,
            "cpu_ratio": with_lowering.cpu / baseline.cpu,
            "us_per_node": 1e6 * (with_lowering.wall - baseline.wall) / nodes,
            "cpu_us_per_node": 1e6 * (with_lowering.cpu - baseline.cpu) / nodes,
            "save_lowered": save_lowered}  # fmt: skip


DESCRIPTIONS = {
    "chain": "a chain of IsNaN links (three nodes a link: IsNaN, Cast, Add), opset 17",
    "fan_in": "IsNaN nodes on one input, all feeding one Concat",
    "chain_1n": "the chain with every node named alike",
    "fn_chain": "the chain inside a local function the main graph calls once (the pass then runs onnx's checker "
    "on its result)",
    "chain_pl": "the chain lowered by the plain algorithm (`fast=False`)",
}


LINKS = [25_000, 50_000, 100_000]


def page(rows: list[dict], argv: list[str], growth: float, links: list[int]) -> str:
    """The Markdown section of docs/performance.md for this run."""
    lines = [
        "## Pass cost (`bench_pass_cost.py`)",
        "",
        f"Written by `{command(argv)}`.",
        "",
        machine(),
        "",
        "Each model is saved to a file; then, in one Python process, load + save (onnx) against load + "
        "`lowering.lower` + save, each the best of 7 runs (2 runs from 50,000 nodes)."
        + (
            f" A reduced run: chains of {', '.join(f'{n:,}' for n in links)} links, where the script's defaults "
            f"are {', '.join(f'{n:,}' for n in LINKS)}."
            if links != LINKS
            else ""
        )
        + " The models (`benchmarks/models.py`):",
        "",
        *(f"- `{key}`: {text}" for key, text in DESCRIPTIONS.items()),
        "",
        "| model | nodes | load + save, wall / CPU s | load + lower + save, wall / CPU s | ratio, wall / CPU "
        "| lowering µs per node, wall / CPU | save of the lowered model, wall s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        base, low = row["load_save"], row["load_lower_save"]
        lines.append(
            f"| `{row['name']}` | {row['nodes']:,} | {base.wall:.3f} / {base.cpu:.3f} | {low.wall:.3f} / {low.cpu:.3f} "
            f"| {row['ratio']:.2f} / {row['cpu_ratio']:.2f} | {row['us_per_node']:.1f} / {row['cpu_us_per_node']:.1f} "
            f"| {row['save_lowered'].wall:.3f} |"
        )
    lines.append("")
    for row in rows:
        if row["check"] is not None:
            lines.append(
                f"`{row['name']}`: onnx's plain check of the lowered model takes {row['check'].wall:.3f} s wall, "
                f"{row['check'].cpu:.3f} s CPU, {row['check'].wall / row['load_save'].wall:.2f}x load + save (wall)."
            )
    lines.append(
        f"Growth: the lowering cost per node (wall) of the longest chain over the shortest's is {growth:.2f} "
        "(1.00 is linear)."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=LINKS,
                        help="chain lengths (the first also sizes the named-alike and plain chains, the last the "
                        "function's; the fan-in is a fifth of the last)")  # fmt: skip
    parser.add_argument("--write", type=Path, metavar="PAGE", help="write this run's section of PAGE "
                        "(docs/performance.md)")  # fmt: skip
    args = parser.parse_args()
    links = sorted(args.links)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for count in links:
            rows.append(measure(f"chain_{count // 1000}k", isnan_chain(count), folder))
        width = links[-1] // 5
        label = f"fan_in_{width // 1000}k" if width >= 1000 else f"fan_in_{width}"
        rows.append(measure(label, isnan_fan_in(width), folder))
        first = links[0] // 1000
        rows.append(measure(f"chain_{first}k_1n", isnan_chain(links[0], one_name=True), folder))  # named alike
        rows.append(measure(f"fn_chain_{links[-1] // 1000}k", isnan_chain_in_function(links[-1]), folder))
        rows.append(measure(f"chain_{first}k_pl", isnan_chain(links[0]), folder, fast=False))  # the plain algorithm
    print(f"{'model':<14} {'nodes':>7} {'load+save s':>16} {'+lower s':>16} {'ratio':>11} {'lowering us/node':>17} "
          f"{'save lowered s':>15}    (each wall/CPU)")  # fmt: skip
    for row in rows:
        base, low = row["load_save"], row["load_lower_save"]
        print(f"{row['name']:<14} {row['nodes']:>7} {base.wall:>7.3f}/{base.cpu:<8.3f} "
              f"{low.wall:>7.3f}/{low.cpu:<8.3f} {row['ratio']:>5.2f}/{row['cpu_ratio']:<5.2f} "
              f"{row['us_per_node']:>8.1f}/{row['cpu_us_per_node']:<8.1f} "
              f"{row['save_lowered'].wall:>15.3f}")  # fmt: skip
    for row in rows:
        if row["check"] is not None:
            print(f"{row['name']}: onnx's plain check of the result {row['check'].wall:.3f} s, "
                  f"{row['check'].wall / row['load_save'].wall:.2f}x load+save")  # fmt: skip
    chains = rows[: len(links)]
    growth = chains[-1]["us_per_node"] / chains[0]["us_per_node"]
    print(f"growth: lowering cost per node at {links[-1]} / at {links[0]} = {growth:.2f} (1.00 is linear)")
    if args.write:
        write_section(args.write, "bench_pass_cost", page(rows, sys.argv[1:], growth, links))


if __name__ == "__main__":
    main()
