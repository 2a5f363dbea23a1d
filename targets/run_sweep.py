"""The proof of a target on its real runtime, part 2 (in the runtime's environment): each model
targets/prepare_sweep.py wrote, as exported and as made for the target, run through the runtime
and compared with the outputs it must give (within the looser of the model's tolerance and the
one the runner states for its runtime's arithmetic, as targets/probe.py compares); prints one
line per model (with the runtime's words where it is not right) and the totals, and writes them
to FOLDER/results.json (with --only, into the results already there).

    python targets/run_sweep.py RUNNER FOLDER [--only NAME ...] [--seconds S] [--trials [--record-forms]]
                                [--record-sweep]

With ``--trials``, each corpus model's trials (prepare_sweep.py: the model made for the target
without the profile's model forms, and with one of them) run too; ``--record-forms`` writes
what they found into the target's profile (``model_forms``: per form, the models that ran
right with it and not without, ``better``, and the other way, ``worse``). ``--record-sweep``
writes into the profile (``swept``), with the onnx-lower commit that made the models, every
model the runtime still fails or gets wrong after ``--target``, in its words (``onnx-lower
check`` names those of a node's op, version and type beside the fix it offers), and every model
onnx-lower refused to make for it, with the blockers it named; of each, where its case is fed
inputs that only set its parameters, what the runtime did with them given as constants.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from probe import CASE_SECONDS, CONSTANT_PARAMETERS, REFUSED, Worker, largest_error  # noqa: E402

REFUSED_BY_ONNX_LOWER = "refused by onnx-lower"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runner")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only the models whose names start so")
    parser.add_argument(
        "--seconds",
        type=float,
        default=CASE_SECONDS,
        help="a model with no answer in this long (the runner's SECONDS where longer) hangs",
    )
    parser.add_argument("--trials", action="store_true", help="run each corpus model's form trials too")
    parser.add_argument("--record-forms", action="store_true", help="record the trials in the target's profile")
    parser.add_argument("--record-sweep", action="store_true", help="record what is not right in the target's profile")
    args = parser.parse_args()
    if args.record_forms and not args.trials:
        parser.error("--record-forms records the trials: give --trials")
    if args.only and (args.record_forms or args.record_sweep):
        parser.error("--record-forms and --record-sweep record a whole sweep of this runtime: not with --only")
    index = json.loads((args.folder / "index.json").read_text())
    if index.get("only") and (args.record_forms or args.record_sweep):
        parser.error(f"{args.folder} holds only the models named {' '.join(index['only'])}: a sweep records all")
    worker = Worker(args.runner, args.seconds)
    totals: Counter = Counter()
    results = []
    for entry in index["items"]:
        if args.only and not entry["name"].startswith(tuple(args.only)):
            continue
        folder = args.folder / entry["name"]
        inputs = dict(np.load(folder / "inputs.npz"))
        expected_file = np.load(folder / "expected.npz")
        expected = [expected_file[f"arr_{i}"] for i in range(len(expected_file.files))]
        model = onnx.load(folder / "exported.onnx")
        data_sets = [([inputs[info.name] for info in model.graph.input if info.name in inputs], expected)]
        bounds = float16_bounds(worker, folder, expected)
        computed = onnxruntime_outputs(folder, expected)
        references = None if computed is None else [computed]  # (of its one data set)
        before, before_why = worker.verdict(model, data_sets, entry["rtol"], entry["atol"], bounds, references)
        blockers = entry.get("blockers", [])  # (those onnx-lower named refusing it)
        if "refused" in entry:
            after, after_why = REFUSED_BY_ONNX_LOWER, entry["refused"]
        else:
            lowered = onnx.load(folder / "target.onnx")
            after, after_why = worker.verdict(lowered, data_sets, entry["rtol"], entry["atol"], bounds, references)
        totals[(before, after)] += 1
        results.append({"name": entry["name"], "before": before, "before_why": before_why,
                        "after": after, "after_why": after_why,
                        **({"blockers": blockers} if "refused" in entry else {}),
                        **_partly_of(entry)})  # fmt: skip
        line = f"{entry['name']}: as exported {before}; after --target {after}"
        if after != "right" and after_why:
            line += f" ({one_line(after_why)})"
        print(line, flush=True)  # (then the lines of its trials and of its parameters made constant)
        if args.trials:
            results[-1]["trials"] = run_trials(worker, folder, entry, data_sets, bounds, references)
        if "constant_parameters" in entry and not after.startswith("right"):
            results[-1]["constant_parameters"] = run_constant_parameters(
                worker, folder, entry, inputs, expected, bounds, references
            )
    worker.close()
    written = args.folder / "results.json"
    if args.only and written.exists():  # (the others' results kept)
        ran = {result["name"] for result in results}
        results = [r for r in json.loads(written.read_text()) if r["name"] not in ran] + results
        results.sort(key=lambda result: result["name"])
    written.write_text(json.dumps(results, indent=1))
    if args.record_forms:
        record_forms(index["target"], results, worker.version, args.runner)
    if args.record_sweep:
        record_sweep(index["target"], results, worker.version, args.runner, index.get("onnx_lower", "unknown"))
    print(f"\n{index['target']} on {args.runner} {worker.version}:")
    if worker.tolerance:  # (probe.Worker compares within the looser of each model's tolerance and this)
        stated = worker.tolerance
        print(
            f"  (outputs within the looser of each model's tolerance and the runner's, rtol {stated['rtol']:g} "
            f"atol {stated['atol']:g}: {stated['why']})"
        )
    for (before, after), count in sorted(totals.items()):
        print(f"  {count:5d}  as exported {before:<8} -> after --target {after}")


def float16_bounds(worker: Worker, folder: Path, expected: list) -> list[float] | None:
    """For a runtime that computes floats in float16 (its runner's ARITHMETIC), per output the
    largest error a whole model may show: twice onnxruntime's on the export computed in float16
    (``float16.npz``, prepare_sweep.py), 0 where not comparable; None for other runtimes."""
    if not worker.tolerance or worker.tolerance.get("arithmetic") != "float16":
        return None
    if not (folder / "float16.npz").exists():
        return None
    halved = np.load(folder / "float16.npz")
    errors = [largest_error(halved[f"arr_{i}"], want) for i, want in enumerate(expected)]
    # (a reference that overflows, inf or NaN where the model is finite, bounds nothing)
    return [2 * error if error is not None and np.isfinite(error) else 0.0 for error in errors]


def onnxruntime_outputs(folder: Path, expected: list) -> list | None:
    """onnxruntime's outputs on a backend case's export (``onnxruntime.npz``, prepare_sweep.py),
    one per expected output; None where onnxruntime did not run it (and for a corpus export,
    whose expected outputs are its)."""
    if not (folder / "onnxruntime.npz").exists():
        return None
    computed = np.load(folder / "onnxruntime.npz")
    if len(computed.files) != len(expected):
        return None
    return [computed[f"arr_{i}"] for i in range(len(expected))]


def run_trials(
    worker: Worker, folder: Path, entry: dict, data_sets, bounds=None, references=None
) -> dict[str, dict[str, str]]:
    """Per form the entry's trials name: the runtime's verdicts on the model without and with it
    (judged as the model before and after --target are: ``bounds``, ``references``)."""
    found = {}
    for choice_name, place in entry.get("trials", {}).items():
        verdicts = {}
        for side in ("without", "with"):
            refused = folder / place / f"{side}{REFUSED}"  # (prepare_sweep.py: onnx-lower refused it)
            if refused.exists():
                verdicts[side], verdicts[f"{side}_why"] = REFUSED_BY_ONNX_LOWER, refused.read_text()
                continue
            model = onnx.load(folder / place / f"{side}.onnx")
            verdicts[side], verdicts[f"{side}_why"] = worker.verdict(
                model, data_sets, entry["rtol"], entry["atol"], bounds, references
            )
        found[choice_name] = verdicts
        print(f"  trial {choice_name}: without {verdicts['without']}, with {verdicts['with']}", flush=True)
    return found


def run_constant_parameters(
    worker: Worker, folder: Path, entry: dict, inputs: dict, expected: list, bounds=None, references=None
) -> dict[str, object]:
    """The runtime's verdict on the case made for the target with the inputs that set its
    parameters given as constants (prepare_sweep.py), judged as the case is: those inputs, the
    verdict and its words (refused by onnx-lower, where it refused that model too)."""
    found: dict[str, object] = {"inputs": entry["constant_parameters"]}
    refused = folder / f"{CONSTANT_PARAMETERS}{REFUSED}"
    if refused.exists():
        found["after"], found["why"] = REFUSED_BY_ONNX_LOWER, refused.read_text()
    else:
        model = onnx.load(folder / f"{CONSTANT_PARAMETERS}.onnx")
        data_sets = [([inputs[info.name] for info in model.graph.input if info.name in inputs], expected)]
        verdict = worker.verdict(model, data_sets, entry["rtol"], entry["atol"], bounds, references)
        found["after"], found["why"] = verdict
    print(f"  with {', '.join(found['inputs'])} constant: {found['after']}", flush=True)
    return found


PROFILES = HERE.parent / "lowering" / "target_profiles"


def record_forms(target: str, results: list[dict], version: str, runner: str, profiles: Path = PROFILES) -> None:
    """Writes into the target's profile, per form tried, the models that ran right with it and
    not without (``better``) and the other way (``worse``)."""
    path = profiles / f"{target}.json"
    profile = _profile_of(path, version)
    forms: dict[str, dict[str, list[str]]] = {}
    for result in results:
        for choice_name, verdicts in result.get("trials", {}).items():
            record = forms.setdefault(choice_name, {"better": [], "worse": [], "tried": []})
            record["tried"].append(result["name"])
            right_with, right_without = (verdicts[side].startswith("right") for side in ("with", "without"))
            if right_with and not right_without:
                record["better"].append(result["name"])
            elif right_without and not right_with:
                record["worse"].append(result["name"])
    profile["model_forms"] = forms
    tried = sorted({result["name"] for result in results if result.get("trials")})
    profile["source"]["model_forms"] = {
        "how": f"python targets/run_sweep.py {runner} FOLDER --trials --record-forms "
        "(FOLDER: prepare_sweep.py --corpus-only)",
        "models": len(tried), "date": datetime.date.today().isoformat(),
    }  # fmt: skip
    path.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    print(f"recorded in {path}: " + "; ".join(f"{name}: {len(r['better'])} better, {len(r['worse'])} worse of "
                                            f"{len(r['tried'])}" for name, r in forms.items()))  # fmt: skip


def record_sweep(
    target: str, results: list[dict], version: str, runner: str, made_by: str, profiles: Path = PROFILES
) -> None:
    """Writes into the target's profile (``swept``) each model of ``results`` that does not run
    right after --target, with the onnx-lower commit that made the models (``made_by``) and the
    totals: those the runtime fails or gets wrong (``not_right``: what it did as exported and
    after, in its words, and the op versions and types of the nodes --target kept that the
    runtime computes wrong on some probed values, ``partly``: "Div-14 on INT32 (wrong only on
    integers past 2^24)"; ``partly_recorded`` says the sweep looked for them), and those
    onnx-lower refused to make (``refused``: what the runtime did as exported, the blockers' ops
    and versions, and onnx-lower's words); each with what the runtime did with its case's
    parameters constant, where it ran that (``constant_parameters``)."""
    path = profiles / f"{target}.json"
    profile = _profile_of(path, version)
    not_right = {
        result["name"]: {"before": result["before"], "after": result["after"], "why": one_line(result["after_why"]),
                         **_constant_parameters_said(result), **_partly_of(result)}
        for result in results
        if not result["after"].startswith("right") and result["after"] != REFUSED_BY_ONNX_LOWER
    }  # fmt: skip
    refused = {
        result["name"]: {"before": result["before"], "blockers": result.get("blockers", []),
                         "why": one_line(result["after_why"]), **_constant_parameters_said(result)}
        for result in results
        if result["after"] == REFUSED_BY_ONNX_LOWER
    }  # fmt: skip
    totals = Counter(f"{result['before']} -> {result['after']}" for result in results)
    profile["swept"] = {
        "how": f"python targets/run_sweep.py {runner} FOLDER --record-sweep (FOLDER: prepare_sweep.py)",
        "date": datetime.date.today().isoformat(), "onnx_lower": made_by, "models": len(results),
        "totals": dict(sorted(totals.items())), "not_right": not_right, "refused": refused, "partly_recorded": True,
    }  # fmt: skip
    path.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    print(f"recorded in {path}: of {len(results)} models, {len(not_right)} not right after --target "
          f"and {len(refused)} refused by onnx-lower")  # fmt: skip


def _partly_of(found: dict) -> dict:
    """The op versions and types of the nodes --target kept in a model (an index entry's, a
    result's) that the runtime computes wrong on some probed values, as results and the profile
    keep them: ``{"partly": [...]}``, or nothing."""
    return {"partly": found["partly"]} if found.get("partly") else {}


def _constant_parameters_said(result: dict) -> dict:
    """What a result holds of its case run with its parameters constant, as the profile keeps it:
    ``{"constant_parameters": {"inputs": ..., "after": ..., "why": ...}}``, or nothing."""
    found = result.get("constant_parameters")
    if found is None:
        return {}
    return {"constant_parameters": {**found, "why": one_line(found["why"])}}


def _profile_of(path: Path, version: str) -> dict:
    """The profile at ``path``, refused where it was probed on another version of the runtime."""
    profile = json.loads(path.read_text())
    if profile.get("runtime_version") != version:
        raise SystemExit(f"{path.name} was probed on {profile.get('runtime_version')}, this runtime is {version}")
    return profile


def one_line(text: str, limit: int = 300) -> str:
    """The runtime's words on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


if __name__ == "__main__":
    main()
