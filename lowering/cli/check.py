"""``onnx-lower check MODEL --target NAME``: every node the runtime refuses, in one pass, and
``onnx-lower --list-targets``."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from ..api import check_input, lower_model, lowerable_ops
from ..input_shapes import parse_input_shape, with_input_shapes
from ..retyping import parse_retypings
from ..runtime_profiles import PARTLY, load_profile, profile_names
from ..target_lowering import check_model, fixes_confirmed
from .files import read_model

EXIT_FITS, EXIT_DOES_NOT_FIT = 0, 1


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("model", metavar="MODEL", help="the ONNX model file")
    add("--target", required=True, metavar="NAME", help="the runtime (see onnx-lower --list-targets)")
    add("--json", action="store_true", help="print the findings as JSON")
    add("-v", "--verbose", action="store_true", help="list unverified nodes too (the profile does not decide them)")
    add("--input-shape", action="append", default=[], metavar="X:D,..",
        help="as --target would be given: input X static (x:1,3,8,8), or a dimension's size (batch=1)")  # fmt: skip
    add("--retype", metavar="FROM=TO,..", help="the retyping --target would be given (int64=int32, ...)")
    add(
        "--retype-io",
        action="store_true",
        help="as --target would be given: the model's inputs and outputs retyped too",
    )


def run_check(args: argparse.Namespace) -> int:
    """Print every blocker (and, verbose, every unverified node); 0 if none blocks. Each fix
    named is one ``--target`` makes (given the same --input-shape, --retype and --retype-io): it
    is run to confirm them (:func:`fixes_confirmed`)."""
    profile = load_profile(args.target)
    input_shapes = dict(parse_input_shape(text) for text in args.input_shape)
    parse_retypings(args.retype)  # (a bad one: one line, exit 2, before anything runs)
    model_file = read_model(args.model)
    model = model_file.model
    check_input(model)  # (what onnx's checker refuses, and an opset this onnx lacks: exit 2)
    if input_shapes:  # (judged as --target would see it: its inputs static first)
        model = with_input_shapes(model, input_shapes)
    findings = check_model(model, profile, lowerable=lowerable_ops())
    findings = fixes_confirmed(  # (the fixes --target makes)
        findings, lambda: lower_model(model, target=profile, retype=args.retype, retype_io=args.retype_io), model
    )
    blockers = [f for f in findings if f.blocks]
    if args.json:
        print(json.dumps({
            "model": args.model,
            "target": profile.name,
            "runtime": f"{profile.runtime} {profile.runtime_version}",
            "fits": not blockers,
            "blockers": [f.as_dict() for f in blockers],
            "unverified": [f.as_dict() for f in findings if not f.blocks],
        }, indent=1))  # fmt: skip
        return EXIT_DOES_NOT_FIT if blockers else EXIT_FITS
    print(f"{args.model} on {profile.name} ({profile.describe()}):")
    shown = findings if args.verbose else blockers
    for finding in shown:
        print(f"  {'blocks' if finding.blocks else 'note'}: {finding}")
    fixable = sum(1 for f in blockers if f.fix)
    notes = [f for f in findings if not f.blocks]
    given = "".join(f" --input-shape {text}" for text in args.input_shape)
    given += (f" --retype {args.retype}" if args.retype else "") + (" --retype-io" if args.retype_io else "")
    print(
        f"{len(blockers)} blocker{'s' * (len(blockers) != 1)} ({fixable} with a fix: onnx-lower MODEL -o OUT "
        f"--target {profile.name}{given}); {_notes_said(notes)}"
        + ("" if args.verbose or not notes else " (-v lists them)")
    )
    return EXIT_DOES_NOT_FIT if blockers else EXIT_FITS


def _notes_said(notes: list) -> str:
    """The findings that block nothing, counted by kind: 'N notes: P partly (Q only on integers
    past 2^24, R only on float values the backend's cases lack), U unverified' ('no notes' where
    there are none)."""
    if not notes:
        return "no notes"
    kinds = Counter(f.verdict.kind for f in notes)
    by_values = Counter(f.verdict.wrong_values for f in notes if f.verdict.only_on_values)
    said = ", ".join(f"{count} only on {values}" for values, count in sorted(by_values.items(), reverse=True))
    edges = f" ({said})" if said else ""
    parts = [f"{count} {kind}{edges if kind == PARTLY else ''}" for kind, count in sorted(kinds.items())]
    return f"{len(notes)} note{'s' * (len(notes) != 1)}: {', '.join(parts)}"


def print_targets(as_json: bool) -> None:
    profiles = [load_profile(name) for name in profile_names()]
    if as_json:
        print(json.dumps([{"name": p.name, "runtime": p.runtime, "version": p.runtime_version,
                           "opsets": list(p.opsets), "source": p.source} for p in profiles], indent=1))  # fmt: skip
        return
    for profile in profiles:
        print(f"{profile.name:<18} {profile.describe()}")
