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
over the rounds, of each convert time over the load+save run just before it.

    python benchmarks/bench_conversion.py [--exports gpt_block_dynamo18 gpt_block_torchscript17] [--nodes 100000]
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

from bench_pass_cost import best_of  # noqa: E402

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


ROUNDS = 5  # each round times the baseline and every target once: the machine's drift hits all alike


class Timings(NamedTuple):
    """The best time of the baseline and of each target's run over the rounds, and each
    target's paired ratios: its run over the baseline run beside it, one per round."""

    baseline: float
    converted: dict[int, float]
    paired: dict[int, list[float]]

    def paired_median(self, target: int) -> float:
        return statistics.median(self.paired[target])


def interleaved(baseline_work, target_work, targets: list[int]) -> Timings:
    """``baseline_work()`` and ``target_work(t)`` for each target, over rounds that each run
    all of them once, in turn, the baseline before each target's run. Both the best times and
    the paired ratios are given: on a machine whose speed drifts within seconds (this shared
    one's by up to 40%), a best time may come from a fast moment the other side never had,
    while a pair shares its moment."""
    baseline, converted = float("inf"), dict.fromkeys(targets, float("inf"))
    paired: dict[int, list[float]] = {target: [] for target in targets}
    for _ in range(ROUNDS):
        for target in targets:
            before = best_of(1, baseline_work)
            seconds = best_of(1, lambda t=target: target_work(t))
            baseline, converted[target] = min(baseline, before), min(converted[target], seconds)
            paired[target].append(seconds / before)
    return Timings(baseline, converted, paired)


def measure(model: onnx.ModelProto, folder: Path, targets: list[int]) -> Timings:
    """load+save of the model, and load+convert+save to each target, in seconds (best of
    interleaved rounds)."""
    source, copy, out = folder / "model.onnx", folder / "copy.onnx", folder / "out.onnx"
    onnx.save(model, source)

    def convert(target: int) -> None:
        onnx.save(lowering.lower(onnx.load(source), target_opset=target, ops=[]), out)

    return interleaved(lambda: onnx.save(onnx.load(source), copy), convert, targets)


def command_line(model: onnx.ModelProto, folder: Path, targets: list[int]) -> Timings:
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
    return interleaved(lambda: run(copying), lambda t: run([*lowering_cli, "--target-opset", str(t)]), targets)


def converter_beside_ours(model: onnx.ModelProto, target: int) -> str:
    """Ours and onnx's converter on ``model``, each the best of five rounds that run both in turn
    (the machine's drift hits both alike)."""
    ours = theirs = float("inf")
    failure = None
    for _ in range(5):
        ours = min(ours, best_of(1, lambda: lowering.lower(model, target_opset=target, ops=[])))
        if failure is None:
            try:
                theirs = min(theirs, best_of(1, lambda: onnx.version_converter.convert_version(model, target)))
            except Exception as error:
                failure = str(error).strip().splitlines()[-1][-60:]
    if failure is not None:
        return f"  to {target}: ours {ours:.3f} s, onnx's converter fails ({failure})"
    return f"  to {target}: ours {ours:.3f} s, onnx's converter {theirs:.3f} s, ours/theirs {ours / theirs:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exports", nargs="+", default=["gpt_block_dynamo18", "gpt_block_torchscript17"])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--targets", type=int, nargs="+", default=[17, 13, 11])
    parser.add_argument("--converter-nodes", type=int, default=4_000, help="size of the models both convert")
    parser.add_argument(
        "--converter-exports",
        nargs="+",
        default=["vit_block_dynamo18", "transformer_encoder_dynamo18", "resnet_block_dynamo18", "lstm_torchscript17"],
        help="exports (copied side by side) taken by both onnx's converter and ours",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'model':<36} {'target':>6} {'nodes':>7} {'load+save s':>12} {'+convert s':>11} {'ratio':>6} {'paired':>7}")
    command_lines = []
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
                timings = measure(model, Path(tmp), targets)
                label = f"{name}{'' if typed else ' untyped'}"
                baseline = timings.baseline
                for target, seconds in timings.converted.items():
                    print(f"{label:<36} {target:>6} {len(model.graph.node):>7} {baseline:>12.3f} {seconds:>11.3f} "
                          f"{seconds / baseline:>6.2f} {timings.paired_median(target):>7.2f}")  # fmt: skip
                timings = command_line(model, Path(tmp), targets)
                baseline = timings.baseline
                lines = [f"\n{label}, the command line, a fresh process each (python -c load+save {baseline:.3f} s):"]
                lines += [
                    f"  onnx-lower --target-opset {target}: {seconds:.3f} s, ratio {seconds / baseline:.2f}, "
                    f"paired {timings.paired_median(target):.2f}"
                    for target, seconds in timings.converted.items()
                ]
                command_lines += lines
    print("\n".join(command_lines))
    del export, model  # (the 100k-node models: not held, nor traversed by the collector, below)
    gc.collect()
    print(f"\nonnx's converter beside ours, about {args.converter_nodes} nodes each (convert only, in memory):")
    for name in args.converter_exports:
        other = onnx.load(EXPORTS / f"{name}.onnx")
        small = side_by_side(other, max(1, args.converter_nodes // len(other.graph.node)))
        print(f"{name} x{len(small.graph.node) // len(other.graph.node)} ({len(small.graph.node)} nodes):")
        for target in args.targets:
            print(converter_beside_ours(small, target))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
