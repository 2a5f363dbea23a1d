"""Every ONNX backend node test model taken to target opsets, by onnx's converter and by us.

For each case and target: does ``onnx.version_converter.convert_version`` on the whole model
give a model that passes the full check and runs in onnxruntime; does ``lowering.lower(...,
target_opset=N, ops=[])`` succeed (or refuse, and why); and does each result still give the
case's expected outputs. One pass over the cases; one table, a row per target.

python benchmarks/version_sweep.py [--targets 11 13 17 21] [--limit N] [--cases REGEX]
    [--refusals FILE] [--failures [FILE]] [--no-reference]

--refusals FILE writes every refusal of ours (target, case, message); --failures lists every
pair where ours gives other outputs, does not run in onnxruntime or crashes (and where the
converter gives a wrong or invalid model), and every pair onnx.reference finds wrong or cannot
judge, with details, to FILE or after the table.

Where onnxruntime leaves ours unverified ("no run" and "unchecked"), onnx.reference is a second
oracle (tests/version_cases.py, reference_verdict): ours runs there and is compared with the
case's expected outputs, or, where the case's own model does not give them in onnx.reference
either, with what the case's own model gives there (the backend's tolerances, or for the cases
in STATED_TOLERANCES the one the lowering rule states). Each model gets REFERENCE_SECONDS per
case; KNOWN_REFERENCE_GAPS lists the cases onnx.reference cannot judge, with why (random draws,
an op it computes other than ONNX says at an older version). --no-reference skips this oracle
(its columns stay 0). Its runs cost about a second of CPU in all (452 pairs at 11/13/17/21,
onnx 1.23): the sweep takes about 4 minutes of CPU, with or without it.

Columns (pairs are case x target):
  ours converts   lower() returned a model; of those
    right         it runs and gives the case's expected outputs
    differ        it runs and gives other outputs
    no run        onnxruntime does not run it
    unchecked     it runs, but the case's own model does not give its expected outputs in
                  onnxruntime (random ops, kernel gaps), so there is nothing to compare with
  refuses         a LoweringError;  crashes: any other exception (a bug)
  invalid         lower() returned a model onnx's full checker refuses where it takes the case's own (a bug)
  conv runs       onnx's converter gives a model that passes the checker and runs; of those
    right / wrong as above (its unchecked ones are in neither)
  conv invalid    the converter's model fails onnx's full check
  conv no run     it passes the check but onnxruntime does not run it
  conv fails      the converter raises
  conv>ours       the converter's model runs but ours does not (refused, crashed, no run)
  ref right       of no run + unchecked: onnx.reference finds ours right
  ref wrong       ... finds ours wrong (a bug of ours, or a gap to add to KNOWN_REFERENCE_GAPS)
  ref cannot      ... cannot judge: it fails on ours or on the case's own model, runs past its
                  time, or the case is a known gap
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
import warnings

import onnxruntime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from version_cases import CaseOutcome, node_cases, sweep_case  # noqa: E402

COLUMNS = [  # (heading, tally key)
    ("target", None),
    ("pairs", "pairs"),
    ("ours converts", "ours converts"),
    ("right", "ours right"),
    ("differ", "ours differ"),
    ("no run", "ours does not run"),
    ("unchecked", "ours unchecked"),
    ("refuses", "ours refuses"),
    ("crashes", "ours crashes"),
    ("invalid", "ours invalid"),
    ("conv runs", "converter runs"),
    ("right", "converter right"),
    ("wrong", "converter wrong"),
    ("conv invalid", "converter invalid"),
    ("conv no run", "converter does not run"),
    ("conv fails", "converter fails"),
    ("conv>ours", "converter runs, ours not"),
    ("ref right", "reference right"),
    ("ref wrong", "reference wrong"),
    ("ref cannot", "reference cannot"),
]


def tally_outcome(tally: collections.Counter, outcome: CaseOutcome) -> None:
    tally["pairs"] += 1
    if outcome.ours in ("converts", "does not run"):
        tally["ours converts"] += 1
    if outcome.ours == "converts":
        if not outcome.comparable:
            tally["ours unchecked"] += 1
        elif outcome.ours_wrong:
            tally["ours differ"] += 1
        else:
            tally["ours right"] += 1
    else:
        tally[f"ours {outcome.ours}"] += 1
    tally[f"converter {outcome.converter}"] += 1
    if outcome.converter == "runs" and outcome.comparable:
        tally["converter wrong" if outcome.converter_wrong else "converter right"] += 1
    if outcome.converter == "runs" and outcome.ours != "converts":
        tally["converter runs, ours not"] += 1
    if outcome.reference:
        tally[f"reference {outcome.reference}"] += 1


def table(tallies: dict[int, collections.Counter]) -> str:
    rows = [[heading for heading, _ in COLUMNS]]
    for target, tally in tallies.items():
        rows.append([str(target)] + [str(tally[key]) for _, key in COLUMNS[1:]])
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def one_line(text: str) -> str:
    return " ".join(text.split())


def failure_lines(target: int, name: str, outcome: CaseOutcome) -> list[str]:
    """The pair's problems worth a look: ours wrong, not running or crashing; ours wrong by
    onnx.reference or not judged there; the converter's wrong or invalid models (its refusals
    are its usual state and are not listed)."""
    lines = []
    if outcome.ours_wrong:
        lines.append(f"ours differs\t{target}\t{name}\t{one_line(outcome.detail)}")
    elif outcome.ours in ("does not run", "crashes", "invalid"):
        original = "" if outcome.original_runs else " (the case's own model does not run either)"
        lines.append(f"ours {outcome.ours}\t{target}\t{name}\t{one_line(outcome.detail)}{original}")
    if outcome.reference in ("wrong", "cannot"):
        lines.append(f"ours ref {outcome.reference}\t{target}\t{name}\t{one_line(outcome.reference_detail)}")
    if outcome.converter_wrong or outcome.converter == "invalid":
        kind = "wrong" if outcome.converter_wrong else "invalid"
        lines.append(f"converter {kind}\t{target}\t{name}\t{one_line(outcome.converter_detail)} [ours: {outcome.ours}]")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, nargs="+", default=[11, 13, 17, 21])
    parser.add_argument("--limit", type=int, default=None, help="only the first N cases")
    parser.add_argument("--cases", metavar="REGEX", help="only the cases whose name REGEX finds")
    parser.add_argument("--no-reference", action="store_true", help="no onnx.reference for unverified pairs")
    parser.add_argument("--refusals", metavar="FILE", help="write every refusal of ours: target, case, message")
    parser.add_argument(
        "--failures",
        metavar="FILE",
        nargs="?",
        const="-",
        help="list every wrong, crashed or not-running pair with details (to FILE, or after the table)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    onnxruntime.set_default_logger_severity(3)
    cases = [case for case in node_cases() if args.cases is None or re.search(args.cases, case.name)][: args.limit]
    start = time.perf_counter()
    tallies = {target: collections.Counter() for target in args.targets}
    refusals: list[str] = []
    failures: list[str] = []
    for number, case in enumerate(cases, 1):
        for target in args.targets:
            outcome = sweep_case(case, target, reference=not args.no_reference)
            tally_outcome(tallies[target], outcome)
            if outcome.ours == "refuses":
                refusals.append(f"{target}\t{case.name}\t{one_line(outcome.detail)}")
            failures.extend(failure_lines(target, case.name, outcome))
        if not args.quiet and (number % 50 == 0 or number == len(cases)):
            print(f"{number}/{len(cases)} cases, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print(table(tallies))
    print(f"{len(cases)} cases x {len(args.targets)} targets in {time.perf_counter() - start:.0f} s")
    if args.refusals:
        with open(args.refusals, "w") as file:
            file.write("target\tcase\tmessage\n")
            file.writelines(line + "\n" for line in sorted(refusals, key=lambda line: int(line.split("\t")[0])))
    if args.failures == "-":
        print("\n".join(failures))
    elif args.failures:
        with open(args.failures, "w") as file:
            file.write("kind\ttarget\tcase\tdetail\n")
            file.writelines(line + "\n" for line in failures)


if __name__ == "__main__":
    main()
