"""Conversion cost: (load + convert + save) / (load + save) on a model of about 100k nodes made
from a real export, and onnx's converter beside ours on smaller copies, all measured in this
one run; and the main job as run from the command line.

Each model is ``golden/exports/<export>.onnx`` copied side by side ``copies`` times (each copy's
values renamed, the weights shared, every copy reading the one input): the node kinds and
value_info of a real PyTorch export, at scale. ``untyped`` rows drop the value_info (types are
then derived, and shapes inferred where an adapter needs them). A TorchScript export states no
value_info and carries no notes on its nodes: its bytes are a fifth of a dynamo export's, so
the same pass is a larger multiple of its load+save. Each export goes to the targets below its
own opset. ``ratio`` is the best convert time over the best load+save; ``paired`` the median,
over the rounds, of each convert time over the load+save run just before it. Every time is
measured as wall and as CPU time (this process and the children it waited for:
``timing.cpu_seconds``); ratios are given for both.

    python benchmarks/bench_conversion.py [--exports gpt_block_dynamo18 gpt_block_torchscript17] [--nodes 100000]
        [--rounds 5] [--write docs/performance.md]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import NamedTuple

import onnx

import lowering

sys.path.insert(0, str(Path(__file__).parent))

from timing import Timing, best_of, command, machine, write_section  # noqa: E402

EXPORTS = Path(__file__).resolve().parents[1] / "golden" / "exports"


def side_by_side(model: onnx.ModelProto, copies: int, typed: bool = True) -> onnx.ModelProto:
    """``copies`` copies of the model's graph reading its inputs, weights shared."""
    graph = model.graph
    shared = {info.name for info in graph.input} | {tensor.name for tensor in graph.initializer}
    nodes, outputs, infos = [], [], []
    for copy in range(copies):

        def renamed(name: str, copy: int = copy) -> str:
            return name if not name or name in shared else f"c{copy}/{name}"

        for node in graph.node:
            new = onnx.NodeProto()
            new.CopyFrom(node)
            new.input[:] = [renamed(n) for n in node.input]
            new.output[:] = [renamed(n) for n in node.output]
            new.name = renamed(node.name) if node.name else ""
            nodes.append(new)
        for group, target in ((graph.output, outputs), (graph.value_info if typed else [], infos)):
            for info in group:
                new_info = onnx.ValueInfoProto()
                new_info.CopyFrom(info)
                new_info.name = renamed(info.name)
                target.append(new_info)
    big = onnx.helper.make_graph(
        nodes, graph.name, list(graph.input), outputs, list(graph.initializer), value_info=infos
    )
    return onnx.helper.make_model(big, opset_imports=list(model.opset_import), ir_version=model.ir_version)


NODES = 100_000
ROUNDS = 5  # each round times the baseline and every target once: the machine's drift hits all alike


class Timings(NamedTuple):
    """The best time (wall and CPU, each its own minimum) of the baseline and of each target's run
    over the rounds, and each target's paired ratios of wall time: its run over the baseline run
    beside it, one per round."""

    baseline: Timing
    converted: dict[int, Timing]
    paired: dict[int, list[float]]

    def paired_median(self, target: int) -> float:
        return statistics.median(self.paired[target])

    def ratio(self, target: int) -> Timing:
        """The best conversion over the best baseline, of wall and of CPU time."""
        converted = self.converted[target]
        return Timing(converted.wall / self.baseline.wall, converted.cpu / self.baseline.cpu)


def interleaved(baseline_work, target_work, targets: list[int], rounds: int = ROUNDS) -> Timings:
    """``baseline_work()`` and ``target_work(t)`` for each target, over rounds that each run
    all of them once, in turn, the baseline before each target's run. Both the best times and
    the paired ratios are given: on a machine whose speed drifts within seconds (a shared one's
    by up to 40%), a best time may come from a fast moment the other side never had, while a
    pair shares its moment."""
    worst = Timing(float("inf"), float("inf"))
    baseline, converted = worst, dict.fromkeys(targets, worst)
    paired: dict[int, list[float]] = {target: [] for target in targets}

    def least(a: Timing, b: Timing) -> Timing:
        return Timing(min(a.wall, b.wall), min(a.cpu, b.cpu))

    for _ in range(rounds):
        for target in targets:
            before = best_of(1, baseline_work)
            seconds = best_of(1, lambda t=target: target_work(t))
            baseline, converted[target] = least(baseline, before), least(converted[target], seconds)
            paired[target].append(seconds.wall / before.wall)
    return Timings(baseline, converted, paired)


def measure(model: onnx.ModelProto, folder: Path, targets: list[int], rounds: int = ROUNDS) -> Timings:
    """load+save of the model, and load+convert+save to each target, in seconds (best of
    interleaved rounds)."""
    source, copy, out = folder / "model.onnx", folder / "copy.onnx", folder / "out.onnx"
    onnx.save(model, source)

    def convert(target: int) -> None:
        onnx.save(lowering.lower(onnx.load(source), target_opset=target, ops=[]), out)

    return interleaved(lambda: onnx.save(onnx.load(source), copy), convert, targets, rounds)


def command_line(model: onnx.ModelProto, folder: Path, targets: list[int], rounds: int = ROUNDS) -> Timings:
    """The main job as a user runs it, each run a fresh process (best of interleaved rounds):
    ``python -c`` that loads and saves the model with onnx, and ``onnx-lower MODEL -o OUT
    --target-opset N``; both pay the interpreter's start and their imports."""
    source, copy, out = folder / "cli_model.onnx", folder / "cli_copy.onnx", folder / "cli_out.onnx"
    onnx.save(model, source)

    def run(command: list[str]) -> None:
        subprocess.run(command, check=True, capture_output=True)

    load_and_save = "import onnx, sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])"
    copying = [sys.executable, "-c", load_and_save, str(source), str(copy)]
    lowering_cli = [sys.executable, "-m", "lowering", str(source), "-o", str(out), "--ops", "none", "-q"]
    converting = [*lowering_cli, "--target-opset"]
    return interleaved(lambda: run(copying), lambda t: run([*converting, str(t)]), targets, rounds)


class BesideConverter(NamedTuple):
    """Ours and onnx's converter on one model and target: the best of five rounds each, wall and
    CPU; ``failure`` where the converter fails."""

    ours: Timing
    theirs: Timing | None
    failure: str | None

    def line(self, target: int) -> str:
        ours = f"ours {self.ours.wall:.3f} s (CPU {self.ours.cpu:.3f} s)"
        if self.theirs is None:
            return f"  to {target}: {ours}, onnx's converter fails ({self.failure})"
        return (
            f"  to {target}: {ours}, onnx's converter {self.theirs.wall:.3f} s (CPU {self.theirs.cpu:.3f} s), "
            f"ours/theirs {self.ours.wall / self.theirs.wall:.2f} (CPU {self.ours.cpu / self.theirs.cpu:.2f})"
        )


def converter_beside_ours(model: onnx.ModelProto, target: int) -> BesideConverter:
    """Ours and onnx's converter on ``model``, each the best of five rounds that run both in turn
    (the machine's drift hits both alike)."""
    ours: list[Timing] = []
    theirs: list[Timing] = []
    failure = None
    for _ in range(5):
        ours.append(best_of(1, lambda: lowering.lower(model, target_opset=target, ops=[])))
        if failure is None:
            try:
                theirs.append(best_of(1, lambda: onnx.version_converter.convert_version(model, target)))
            except Exception as error:
                last = (str(error).strip().splitlines() or [type(error).__name__])[-1]
                failure = last.split("failed: ", 1)[-1][:80]  # (onnx's C++ assertion text before it: noise)

    def best(times: list[Timing]) -> Timing:
        return Timing(min(t.wall for t in times), min(t.cpu for t in times))

    return BesideConverter(best(ours), None if failure is not None else best(theirs), failure)


def pair(timing: Timing) -> str:
    return f"{timing.wall:.3f} / {timing.cpu:.3f}"


def ratios(timings: Timings, target: int) -> str:
    ratio = timings.ratio(target)
    return f"{ratio.wall:.2f} / {ratio.cpu:.2f} ({timings.paired_median(target):.2f})"


def page(args, argv: list[str], results: list[tuple[str, int, str, Timings]], beside: list[tuple]) -> str:
    """The Markdown section of docs/performance.md for this run."""
    lines = [
        "## Conversion (`bench_conversion.py`)",
        "",
        f"Written by `{command(argv)}`.",
        "",
        machine(),
        "",
        f"Each export of `golden/exports/` ({', '.join(f'`{name}`' for name in args.exports)}) is copied side by side "
        f"to about {args.nodes:,} nodes (each copy's values renamed, the weights shared); a model marked `untyped` "
        "has the export's value_info dropped (the TorchScript export states none). Load + convert + save "
        "(`lowering.lower(model, target_opset=N, ops=[])`, in this process; "
        "`onnx-lower MODEL -o OUT --ops none --target-opset N -q`, a "
        "fresh process each run) against load + save (onnx, in this process; `python -c` that loads and saves, a "
        f"fresh process each run), in {args.rounds} round(s) that each run, for each target, the baseline and then "
        "the conversion, in turn. Times are the best over the rounds; ratios are the best conversion over the best "
        "load + save, wall / CPU, and in brackets the median over the rounds of each conversion over the load + "
        "save run just before it (wall)."
        + (
            f" A reduced run: {args.nodes:,} nodes and {args.rounds} round(s), where the script's defaults are "
            f"{NODES:,} nodes and {ROUNDS} rounds."
            if (args.nodes, args.rounds) != (NODES, ROUNDS)
            else ""
        ),
        "",
    ]
    targets = sorted({target for _, _, _, timings in results for target in timings.converted}, reverse=True)
    lines += [
        "| model | how | nodes | load + save, wall / CPU s | "
        + " | ".join(f"to {t}: wall / CPU s" for t in targets)
        + " | "
        + " | ".join(f"to {t}: ratio wall / CPU (paired)" for t in targets)
        + " |",
        "| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in targets * 2) + " |",
    ]
    for label, nodes, how, timings in results:
        times = [pair(timings.converted[t]) if t in timings.converted else "" for t in targets]
        rates = [ratios(timings, t) if t in timings.converted else "" for t in targets]
        lines.append(f"| {label} | {how} | {nodes:,} | {pair(timings.baseline)} | " + " | ".join(times + rates) + " |")
    lines += [
        "",
        f"onnx's converter beside ours on smaller copies (about {args.converter_nodes:,} nodes; conversion only, in "
        "memory; each the best of five rounds that run both in turn):",
        "",
        "| model | nodes | target | ours, wall / CPU s | onnx's converter, wall / CPU s | ours / theirs, wall / CPU |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, nodes, target, result in beside:
        if result.theirs is None:
            lines.append(f"| {name} | {nodes:,} | {target} | {pair(result.ours)} | fails: {result.failure} | |")
        else:
            lines.append(
                f"| {name} | {nodes:,} | {target} | {pair(result.ours)} | {pair(result.theirs)} | "
                f"{result.ours.wall / result.theirs.wall:.2f} / {result.ours.cpu / result.theirs.cpu:.2f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", nargs="+", default=["gpt_block_dynamo18", "gpt_block_torchscript17"])
    parser.add_argument("--nodes", type=int, default=NODES, help="size of each model, about")
    parser.add_argument("--targets", type=int, nargs="+", default=[17, 13, 11])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="interleaved rounds of each measurement")
    parser.add_argument("--converter-nodes", type=int, default=4_000, help="size of the models both convert")
    parser.add_argument(
        "--converter-exports",
        nargs="+",
        default=["vit_block_dynamo18", "transformer_encoder_dynamo18", "resnet_block_dynamo18", "lstm_torchscript17"],
        help="exports (copied side by side) taken by both onnx's converter and ours",
    )
    parser.add_argument("--write", type=Path, metavar="PAGE", help="write this run's section of PAGE "
                        "(docs/performance.md)")  # fmt: skip
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'model':<36} {'target':>6} {'nodes':>7} {'load+save s':>16} {'+convert s':>16} {'ratio':>11} "
          f"{'paired':>7}   (wall/CPU)")  # fmt: skip
    command_lines = []
    results: list[tuple[str, int, str, Timings]] = []
    export = model = None
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.exports:
            export = onnx.load(EXPORTS / f"{name}.onnx")
            opset = export.opset_import[0].version
            targets = [target for target in args.targets if target < opset]
            copies = max(1, args.nodes // len(export.graph.node))
            stated = (True, False) if len(export.graph.value_info) else (False,)
            for typed in stated:
                model = side_by_side(export, copies, typed)
                nodes = len(model.graph.node)
                timings = measure(model, Path(tmp), targets, args.rounds)
                label = f"{name}{'' if typed else ' untyped'}"
                results.append((label, nodes, "in one process", timings))
                baseline = timings.baseline
                for target, seconds in timings.converted.items():
                    ratio = timings.ratio(target)
                    print(f"{label:<36} {target:>6} {nodes:>7} {baseline.wall:>7.3f}/{baseline.cpu:<8.3f} "
                          f"{seconds.wall:>7.3f}/{seconds.cpu:<8.3f} {ratio.wall:>5.2f}/{ratio.cpu:<5.2f} "
                          f"{timings.paired_median(target):>7.2f}")  # fmt: skip
                timings = command_line(model, Path(tmp), targets, args.rounds)
                results.append((label, nodes, "the command line", timings))
                baseline = timings.baseline
                lines = [
                    f"\n{label}, the command line, a fresh process each (python -c load+save {baseline.wall:.3f} s, "
                    f"CPU {baseline.cpu:.3f} s):"
                ]
                lines += [
                    f"  onnx-lower --target-opset {target}: {seconds.wall:.3f} s (CPU {seconds.cpu:.3f} s), "
                    f"ratio {timings.ratio(target).wall:.2f} (CPU {timings.ratio(target).cpu:.2f}), "
                    f"paired {timings.paired_median(target):.2f}"
                    for target, seconds in timings.converted.items()
                ]
                command_lines += lines
    print("\n".join(command_lines))
    del export, model  # (the 100k-node models: not held, nor traversed by the collector, below)
    gc.collect()
    print(f"\nonnx's converter beside ours, about {args.converter_nodes} nodes each (convert only, in memory):")
    beside = []
    for name in args.converter_exports:
        other = onnx.load(EXPORTS / f"{name}.onnx")
        small = side_by_side(other, max(1, args.converter_nodes // len(other.graph.node)))
        print(f"{name} x{len(small.graph.node) // len(other.graph.node)} ({len(small.graph.node)} nodes):")
        for target in args.targets:
            result = converter_beside_ours(small, target)
            print(result.line(target))
            beside.append((name, len(small.graph.node), target, result))
    sys.stdout.flush()
    if args.write:
        write_section(args.write, "bench_conversion", page(args, sys.argv[1:], results, beside))


if __name__ == "__main__":
    main()
