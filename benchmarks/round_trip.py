"""Every ONNX backend node test model taken down to an opset and back up, by us.

For each case newer than ``--down`` (default 11) that ``lowering.lower(..., target_opset=11,
ops=[])`` takes down, the result is taken back up to the case's own opset (and to each of
``--up``), checked by onnx's full checker, run in onnxruntime and compared with the case's
expected outputs. One row per opset back up to: pairs, right, unchecked (the case's own model
does not give its expected outputs in onnxruntime either), no run (onnxruntime runs neither
it nor the case's own model), refused (a LoweringError), and the bugs: wrong, invalid,
crashes, ours no run (onnxruntime runs the case's own model and not ours).

    python benchmarks/round_trip.py [--down 11] [--up 21] [--failures]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import warnings

import onnx
import onnxruntime

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from version_cases import judged, node_cases, original_outcome  # noqa: E402

import lowering  # noqa: E402

COLUMNS = ("pairs", "right", "unchecked", "no run", "refused", "wrong", "invalid", "crashes", "ours no run")


def own_opset(model: onnx.ModelProto) -> int | None:
    return next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None)


def back_up(down_model: onnx.ModelProto, case, target: int) -> tuple[str, str]:
    """The outcome of taking ``down_model`` (the case taken down) up to ``target``, and its detail."""
    try:
        back = lowering.lower(down_model, target_opset=target, ops=[])
    except lowering.LoweringError as error:
        return "refused", str(error)
    except Exception as error:  # a bug: every failure must be a LoweringError
        return "crashes", f"{type(error).__name__}: {error}"
    state, detail, wrong = judged(back, case)
    runs, comparable = original_outcome(case)
    if state == "does not run":
        return ("ours no run", detail) if runs else ("no run", "")
    if state == "invalid" or wrong:
        return ("invalid" if state == "invalid" else "wrong"), detail
    return ("right", "") if comparable else ("unchecked", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--down", type=int, default=11)
    parser.add_argument("--up", type=int, nargs="*", default=[21], help="opsets back up to, beside each case's own")
    parser.add_argument("--failures", action="store_true", help="list every pair not right, with why")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    onnxruntime.set_default_logger_severity(3)
    start = time.perf_counter()
    tallies: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: list[str] = []
    taken_down = 0
    for case in node_cases():
        own = own_opset(case.model)
        if own is None or own <= args.down:
            continue
        try:
            down_model = lowering.lower(case.model, target_opset=args.down, ops=[])
        except Exception:  # refusals going down are version_sweep.py's table
            continue
        taken_down += 1
        for target, row in [(own, "own opset"), *((up, str(up)) for up in args.up if up > args.down)]:
            outcome, detail = back_up(down_model, case, target)
            tallies[row]["pairs"] += 1
            tallies[row][outcome] += 1
            if outcome not in ("right", "unchecked"):
                failures.append(f"{outcome}\t{target}\t{case.name}\t{' '.join(detail.split())[:300]}")
    print(f"{taken_down} backend cases taken down to {args.down}, then back up:")
    print(f"{'back up to':<12}" + "".join(f"{column:>13}" for column in COLUMNS))
    for row, tally in tallies.items():
        print(f"{row:<12}" + "".join(f"{tally[column]:>13}" for column in COLUMNS))
    print(f"in {time.perf_counter() - start:.0f} s")
    if args.failures:
        print("\n".join(failures))


if __name__ == "__main__":
    main()
