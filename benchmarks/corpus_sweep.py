"""Every real export of golden/corpus taken to every opset 11..21, by onnx's converter and by us.

For each ``golden/corpus/*.onnx`` (with its ``.npz``: the inputs and onnxruntime's outputs of
that file, see golden/corpus/export_corpus.py) and each target opset:

- the converter: ``onnx.version_converter.convert_version(model, N)`` on the whole model;
- ours: ``lowering.lower_model(model, target_opset=N, ops=[])``, a pure conversion; a
  ``lowering.LoweringError`` (``ConversionRefused`` and the like) is a refusal, with its reason.

Each model made must pass ``onnx.checker.check_model(full_check=True)``, run in onnxruntime
(CPU, default session options, as the ``.npz`` outputs were made) and give the file's outputs:

- exact: bit for bit;
- unfused: bit for bit once onnxruntime's graph optimizations are off for both the file and the
  converted model (onnxruntime fuses a graph by what it knows of it: the converter's added
  value_info alone changes its fusions, and so the rounding);
- tol: within rtol 1e-3 and atol 1e-5, where the conversion replaced an op by others (a
  function body or a decomposition computes in other steps than the fused kernel). For ours
  the replaced ops are the report's ``lowered ...`` and ``converted ... via ...`` entries; for
  the converter, the op types of the file that its model no longer has.

Anything else is wrong: outputs beyond the tolerance, or within it with no op replaced.

python benchmarks/corpus_sweep.py [--models REGEX] [--targets 11 13 17 21] [--corpus DIR]
    [--inexact-pairs] [--converter-failures]

Columns (pairs are file x target opset, the file's own opset included):
  pairs          files x this target
  conv right     the converter's model passes the full check, runs and gives the outputs;
    exact / unfused / tol   of those, how (above)
  conv other     the converter raises, or its model fails the check, does not run or is wrong
  ours right     as conv right, for ours (exact / unfused / tol likewise)
  ours refused   lower_model raised a LoweringError (a stated refusal)
  ours wrong     ours gave a model that fails the full check, does not run in onnxruntime or
                 is wrong, or lower_model raised anything else (a crash)
  conv>ours      the converter's model is right where ours is not (refused or wrong)

After the table: every pair ours refuses or gets wrong, with the first line of the reason;
``--inexact-pairs`` adds the pairs right but not exact (unfused or tol), with the differences
and the ops replaced, and ``--converter-failures`` every pair the converter does not get right,
with its reason. The time taken is printed last: all of it, and the converter's and ours'
conversions alone (about 40 s in all for 48 files x 11 targets on 2 cores).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
import onnxruntime

import lowering

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus"
RTOL, ATOL = 1e-3, 1e-5
COLUMNS = [  # (heading, tally key)
    ("target", None),
    ("pairs", "pairs"),
    ("conv right", "conv right"),
    ("exact", "conv exact"),
    ("unfused", "conv unfused"),
    ("tol", "conv tolerance"),
    ("conv other", "conv other"),
    ("ours right", "ours right"),
    ("exact", "ours exact"),
    ("unfused", "ours unfused"),
    ("tol", "ours tolerance"),
    ("ours refused", "ours refused"),
    ("ours wrong", "ours wrong"),
    ("conv>ours", "conv>ours"),
]


@dataclass
class Verdict:
    """What became of one conversion: ``status`` is exact, tolerance, wrong, no run, invalid,
    refused (ours: a LoweringError), fails (the converter raised) or crashes (ours raised
    anything else); ``detail`` says why, or which ops were replaced."""

    status: str
    detail: str = ""
    replaced: list[str] = field(default_factory=list)

    @property
    def right(self) -> bool:
        return self.status in ("exact", "unfused", "tolerance")


@dataclass
class FeedSet:
    """Inputs, and the file's outputs on them (fused: onnxruntime's defaults; unfused: its
    graph optimizations off, found when first needed)."""

    label: str
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]
    unfused: dict[str, np.ndarray] | None = None


@dataclass
class CorpusFile:
    """A model of the corpus and the inputs it is judged on: the ``.npz``'s, and for a model
    with dynamic axes the same resized (:func:`resized_feeds`)."""

    name: str
    model: onnx.ModelProto
    feed_sets: list[FeedSet]


def run(model: onnx.ModelProto, feeds: dict[str, np.ndarray], fused: bool = True) -> dict[str, np.ndarray]:
    """onnxruntime's outputs by name (CPU; ``fused=False``: every graph optimization off)."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if not fused:
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds), strict=True))


def identical(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> bool:
    return sorted(got) == sorted(want) and all(
        got[name].dtype == value.dtype and got[name].shape == value.shape and got[name].tobytes() == value.tobytes()
        for name, value in want.items()
    )


def resized_feeds(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``feeds`` at other sizes on the model's dynamic axes, or None where it has none: axis 0
    (the batch) 3 long, any other 5/8 as long as it was; cut, or repeated from the start, from
    the stored values (so token ids and masks stay valid)."""
    dynamic_axes = {
        value.name: [axis for axis, dim in enumerate(value.type.tensor_type.shape.dim) if not dim.HasField("dim_value")]
        for value in model.graph.input
    }
    if not any(dynamic_axes.values()):
        return None
    resized = {}
    for name, array in feeds.items():
        for axis in dynamic_axes.get(name, []):
            size = 3 if axis == 0 else max(1, array.shape[axis] * 5 // 8)
            array = np.take(array, np.arange(size) % array.shape[axis], axis=axis)
        resized[name] = array
    return resized


def load_corpus(corpus: Path, pattern: str | None) -> list[CorpusFile]:
    files = []
    for path in sorted(corpus.glob("*.onnx")):
        if pattern is not None and not re.search(pattern, path.stem):
            continue
        model = onnx.load(path)
        arrays = np.load(path.with_suffix(".npz"))
        feeds = {key.removeprefix("input:"): arrays[key] for key in arrays.files if key.startswith("input:")}
        expected = {key.removeprefix("output:"): arrays[key] for key in arrays.files if key.startswith("output:")}
        feed_sets = [FeedSet("", feeds, expected)]
        resized = resized_feeds(model, feeds)
        if resized is not None:
            shapes = ", ".join(f"{name} {list(array.shape)}" for name, array in resized.items())
            feed_sets.append(FeedSet(f"resized ({shapes}): ", resized, run(model, resized)))
        files.append(CorpusFile(path.stem, model, feed_sets))
    return files


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    line = text.splitlines()[0] if text else ""
    return f"{type(error).__name__}: {line}"


def judge(model: onnx.ModelProto, file: CorpusFile, replaced: list[str]) -> Verdict:
    """Whether ``model`` passes the full check, runs, and gives ``file``'s outputs on each of
    its feed sets: the worst verdict of :func:`judge_outputs` over them."""
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as error:  # noqa: BLE001 - every checker complaint is a verdict
        return Verdict("invalid", first_line(error), replaced)
    verdicts = [judge_outputs(model, file.model, feed_set, replaced) for feed_set in file.feed_sets]
    wrong = [verdict for verdict in verdicts if not verdict.right]
    if wrong:
        return wrong[0]
    order = ("exact", "unfused", "tolerance")
    return max(verdicts, key=lambda verdict: order.index(verdict.status))


def judge_outputs(model: onnx.ModelProto, original: onnx.ModelProto, feed_set: FeedSet, replaced: list[str]) -> Verdict:
    """On one feed set: bit for bit (exact), bit for bit with onnxruntime's fusions off in
    both (unfused), or within the tolerance where ``replaced`` names the ops replaced by others."""
    label = feed_set.label
    try:
        got = run(model, feed_set.feeds)
    except Exception as error:  # noqa: BLE001 - onnxruntime's refusals are verdicts
        return Verdict("no run", label + first_line(error), replaced)
    expected = feed_set.expected
    if identical(got, expected):
        return Verdict("exact", "", replaced)
    for name, want in expected.items():
        have = got.get(name)
        if have is None or have.dtype != want.dtype or have.shape != want.shape:
            shown = "missing" if have is None else f"{have.dtype}{list(have.shape)}"
            return Verdict("wrong", f"{label}{name}: {shown}, expected {want.dtype}{list(want.shape)}", replaced)
    differing = [name for name, want in expected.items() if got[name].tobytes() != want.tobytes()]
    shown = label + ", ".join(
        f"{name} max |d| {np.max(np.abs(got[name].astype(np.float64) - expected[name])):.3g}" for name in differing
    )
    # onnxruntime fuses a graph by what it knows of it: the same nodes with value_info added
    # (the converter adds it) are fused otherwise and round otherwise. Unfused, they agree.
    if feed_set.unfused is None:
        feed_set.unfused = run(original, feed_set.feeds, fused=False)
    try:
        same_unfused = identical(run(model, feed_set.feeds, fused=False), feed_set.unfused)
    except Exception:  # noqa: BLE001 - then it is judged on the fused run alone
        same_unfused = False
    if same_unfused:
        return Verdict("unfused", f"{shown}; bit for bit with onnxruntime's graph optimizations off", replaced)
    close = all(np.allclose(got[name], expected[name], rtol=RTOL, atol=ATOL, equal_nan=True) for name in differing)
    if not close:
        return Verdict("wrong", f"{shown} (beyond rtol {RTOL:g}, atol {ATOL:g})", replaced)
    if not replaced:
        return Verdict("wrong", f"{shown}: within tolerance, but no op was replaced", replaced)
    return Verdict("tolerance", f"{shown}; {', '.join(replaced)}", replaced)


def op_types(model: onnx.ModelProto) -> set[str]:
    """The op types of the main graph and every subgraph."""
    found = set()
    graphs = [model.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            found.add(node.op_type)
            for attribute in node.attribute:
                graphs.extend([attribute.g] if attribute.HasField("g") else [])
                graphs.extend(attribute.graphs)
    return found


def by_converter(file: CorpusFile, target: int, clock: collections.Counter) -> Verdict:
    start = time.perf_counter()
    try:
        converted = onnx.version_converter.convert_version(file.model, target)
    except Exception as error:  # noqa: BLE001 - the converter's refusals are verdicts
        return Verdict("fails", first_line(error))
    finally:
        clock["converter"] += time.perf_counter() - start
    return judge(converted, file, sorted(op_types(file.model) - op_types(converted)))


def by_ours(file: CorpusFile, target: int, clock: collections.Counter) -> Verdict:
    start = time.perf_counter()
    try:
        result = lowering.lower_model(file.model, target_opset=target, ops=[])
    except lowering.LoweringError as error:
        return Verdict("refused", first_line(error))
    except Exception as error:  # noqa: BLE001 - a crash is a verdict too (and a bug)
        return Verdict("crashes", first_line(error))
    finally:
        clock["ours"] += time.perf_counter() - start
    report = result.report
    replaced = [f"lowered {key}" for key in sorted(report.rewritten)]
    replaced += [key for key in sorted(report.converted()) if " via " in key]
    return judge(result.model, file, replaced)


def tally(counts: collections.Counter, converter: Verdict, ours: Verdict) -> None:
    counts["pairs"] += 1
    counts["conv right" if converter.right else "conv other"] += 1
    if converter.right:
        counts[f"conv {converter.status}"] += 1
    if ours.right:
        counts["ours right"] += 1
        counts[f"ours {ours.status}"] += 1
    elif ours.status == "refused":
        counts["ours refused"] += 1
    else:
        counts["ours wrong"] += 1
    if converter.right and not ours.right:
        counts["conv>ours"] += 1


def table(tallies: dict[int, collections.Counter]) -> str:
    total = sum(tallies.values(), collections.Counter())
    rows = [[heading for heading, _ in COLUMNS]]
    for target, counts in [*tallies.items(), ("all", total)]:
        rows.append([str(target)] + [str(counts[key]) for _, key in COLUMNS[1:]])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    rule = "-" * len(lines[0])
    return "\n".join([lines[0], rule, *lines[1:-1], rule, lines[-1]])


def one_line(text: str) -> str:
    return " ".join(text.split())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", metavar="REGEX", help="only the files whose name REGEX finds")
    parser.add_argument("--targets", type=int, nargs="+", default=list(range(11, 22)))
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"the folder of models (default {CORPUS})")
    parser.add_argument("--inexact-pairs", action="store_true", help="list the pairs right, not bit for bit")
    parser.add_argument("--converter-failures", action="store_true", help="list the converter's failures")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    onnxruntime.set_default_logger_severity(3)
    start = time.perf_counter()
    files = load_corpus(args.corpus, args.models)
    if not files:
        print(f"no model in {args.corpus} matches", file=sys.stderr)
        return 2
    tallies = {target: collections.Counter() for target in args.targets}
    clock: collections.Counter = collections.Counter()
    ours_problems, inexact_pairs, converter_problems = [], [], []
    for file in files:
        for target in args.targets:
            converter = by_converter(file, target, clock)
            ours = by_ours(file, target, clock)
            tally(tallies[target], converter, ours)
            if not ours.right:
                ours_problems.append(f"{target}\t{file.name}\tours {ours.status}\t{one_line(ours.detail)}")
            for by, verdict in (("ours", ours), ("converter", converter)):
                if verdict.status in ("unfused", "tolerance"):
                    inexact_pairs.append(f"{target}\t{file.name}\t{by} {verdict.status}\t{one_line(verdict.detail)}")
            if not converter.right:
                converter_problems.append(
                    f"{target}\t{file.name}\tconverter {converter.status}\t{one_line(converter.detail)}"
                )
        if not args.quiet:
            print(f"{file.name}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(table(tallies))
    print(f"\nours refused or wrong ({len(ours_problems)} pairs): target, file, verdict, reason")
    print("\n".join(sorted(ours_problems, key=lambda line: int(line.split("\t")[0]))) or "(none)")
    if args.inexact_pairs:
        print(f"\nright, not bit for bit ({len(inexact_pairs)} pairs): target, file, by and verdict, detail")
        print("\n".join(inexact_pairs) or "(none)")
    if args.converter_failures:
        print(f"\nthe converter not right ({len(converter_problems)} pairs): target, file, verdict, reason")
        print("\n".join(converter_problems) or "(none)")
    elapsed = time.perf_counter() - start
    print(
        f"\n{len(files)} files x {len(args.targets)} targets in {elapsed:.0f} s "
        f"(converter {clock['converter']:.1f} s, ours {clock['ours']:.1f} s of conversion; "
        f"the rest is checking and onnxruntime)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
