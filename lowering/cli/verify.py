"""``onnx-lower verify ORIGINAL LOWERED``: its options, and running it."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

from ..errors import LoweringError
from ..modelio import same_file, with_external_data
from ..verification import check_tolerances, load_inputs, save_feeds, verify
from ..verification.feeds import MAX_INPUT_VALUES, MAX_RUNS, check_feeds
from .arguments import whole_number
from .files import read_model
from .lower import EXIT_FAILED, EXIT_OK, inputs_path


def add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("original", metavar="ORIGINAL", help="the original model (any format onnx reads, as MODEL)")
    add("lowered", metavar="LOWERED", help="the lowered model")
    add("--seed", type=whole_number(0, None), help="seed of the random part of the inputs (default 0)")
    add("--samples", type=whole_number(1, MAX_RUNS),
        help=f"at least this many runs, 1 to {MAX_RUNS:,} (default 8; more till every edge value is fed)")  # fmt: skip
    add("--shape", action="append", default=[], metavar="NAME:D1,D2",
        help=f"the shape of input NAME (repeatable; at most {MAX_INPUT_VALUES:,} values per input)")  # fmt: skip
    add("--value-range", action="append", default=[], metavar="NAME:LO,HI",
        help="integers for input NAME from LO to HI (default 0 to 3; for shapes, sizes, indices)")  # fmt: skip
    add("--atol", action="append", default=[], metavar="[OUTPUT=]V", help="absolute tolerance, for all outputs or one")
    add("--rtol", action="append", default=[], metavar="[OUTPUT=]V", help="relative tolerance, for all outputs or one")
    add("--inputs", action="extend", nargs="+", default=[], metavar="FILE.npz",
        help="run on these inputs: an .npz of arrays named after the inputs (one run each), or one saved by "
        "a mismatch")  # fmt: skip
    add("--save-inputs", metavar="FILE.npz",
        help="where the inputs of a mismatch go (default: LOWERED.inputs.npz beside LOWERED)")  # fmt: skip
    add("--save-outputs", metavar="FILE.npz", help="save both models' outputs of every run (run0/original/y, ...)")
    add("--custom-op-library", action="append", default=[], metavar="LIB",
        help="an onnxruntime custom op library for ops of other domains (repeatable)")  # fmt: skip
    add("--json", action="store_true", help="print the report as JSON (errors too)")


def run_verify(args: argparse.Namespace) -> int:
    if args.inputs:
        given = [option for option, value in (("--seed", args.seed), ("--samples", args.samples),
                 ("--shape", args.shape), ("--value-range", args.value_range),
                 ("--save-inputs", args.save_inputs)) if value not in (None, [])]  # fmt: skip
        if given:
            raise LoweringError(f"{', '.join(given)} cannot go with --inputs: the given inputs are run as they are")
    shapes: dict[str, list[int]] = {}
    for name, shape in (_parse_shape(text) for text in args.shape):
        if name in shapes:
            raise LoweringError(f"--shape {name}: given twice; give each input's shape once")
        shapes[name] = shape
    value_ranges: dict[str, tuple[int, int]] = {}
    for name, bounds in (_parse_value_range(text) for text in args.value_range):
        if name in value_ranges:
            raise LoweringError(f"--value-range {name}: given twice; give each input's range once")
        value_ranges[name] = bounds
    atol, rtol = parse_tolerance(args.atol, "--atol"), parse_tolerance(args.rtol, "--rtol")
    for option, value in (("--save-inputs", args.save_inputs), ("--save-outputs", args.save_outputs)):
        if value is not None and (not value or value.endswith(("/", os.sep)) or Path(value).is_dir()):
            raise LoweringError(f"{option} {value!r}: give a file name (FILE.npz), not a folder")
    for library in args.custom_op_library:
        if not Path(library).is_file():
            raise LoweringError(f"--custom-op-library {library}: no such file")
    models = (args.original, args.lowered)
    saved = Path(args.save_inputs) if args.save_inputs else inputs_path(args.lowered, args.lowered)
    if not args.inputs:
        _refuse_to_replace(saved, "--save-inputs" if args.save_inputs else "the inputs saved on a mismatch", *models)
    if args.save_outputs:
        _refuse_to_replace(Path(args.save_outputs), "--save-outputs", *models, *args.inputs)
    original_file, lowered_file = read_model(args.original), read_model(args.lowered)
    original = with_external_data(original_file) if original_file.has_external_data else original_file.model
    lowered = with_external_data(lowered_file) if lowered_file.has_external_data else lowered_file.model
    outputs = [o.name for o in original.graph.output]
    check_tolerances(atol, outputs, "--atol")
    check_tolerances(rtol, outputs, "--rtol")
    inputs = None
    if args.inputs:
        inputs = []
        for path in args.inputs:
            runs = load_inputs([path], original)
            check_feeds(original, runs, f"--inputs {path}")
            inputs += runs
    report = verify(
        original,
        lowered,
        seed=args.seed or 0,
        samples=args.samples,
        shapes=shapes,
        value_ranges=value_ranges,
        atol=atol,
        rtol=rtol,
        inputs=inputs,
        save_inputs=None if args.inputs else saved,
        save_outputs=args.save_outputs,
        custom_op_libraries=tuple(args.custom_op_library),
    )
    if report.inputs_error and not args.save_inputs:  # beside LOWERED could not be written: a temporary folder
        fallback = inputs_path(None, args.lowered)
        try:
            save_feeds(fallback, report.feeds)
            report.inputs_file, report.inputs_error = str(fallback), None
        except LoweringError:
            pass
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        for line in report.lines():
            print(line)
        if report.outputs_file:
            print(f"outputs saved to {report.outputs_file}")
        if report.inputs_file:
            print(f"inputs saved to {report.inputs_file}; replay: onnx-lower verify {args.original} {args.lowered} "
                  f"--inputs {report.inputs_file}")  # fmt: skip
    if report.inputs_error:
        print(f"onnx-lower: the inputs were not saved: {report.inputs_error}", file=sys.stderr)
    return EXIT_OK if report.match else EXIT_FAILED


def _parse_shape(text: str) -> tuple[str, list[int]]:
    name, separator, dims = text.rpartition(":")
    try:
        shape = [int(d) for d in dims.split(",")] if dims.strip() else []
    except ValueError:
        shape = None
    if not separator or not name or shape is None or any(d < 0 for d in shape):
        raise LoweringError(f"--shape {text!r}: expected NAME:D1,D2,... with whole numbers, e.g. x:2,3")
    return name, shape


def _parse_value_range(text: str) -> tuple[str, tuple[int, int]]:
    name, separator, bounds = text.rpartition(":")
    try:
        low, high = (int(b) for b in bounds.split(","))
    except ValueError:
        low = high = None
    if not separator or not name or low is None or low > high:
        raise LoweringError(f"--value-range {text!r}: expected NAME:LO,HI with whole numbers LO <= HI, e.g. shape:1,4")
    return name, (low, high)


def parse_tolerance(values: list[str], option: str) -> float | dict[str, float] | None:
    if not values:
        return None
    per_output: dict[str, float] = {}
    overall = None
    for text in values:
        name, separator, number = text.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            raise LoweringError(f"{option} {text!r}: expected VALUE or OUTPUT=VALUE, e.g. 1e-6") from None
        if not math.isfinite(value) or value < 0:
            raise LoweringError(f"{option} {text!r}: a tolerance is a finite number of 0 or more")
        if separator:
            per_output[name] = value
        else:
            overall = value
    if per_output:
        return per_output if overall is None else _Default(per_output, overall)
    return overall


class _Default(dict):
    """Per-output tolerances with a value for every other output."""

    def __init__(self, values: dict[str, float], default: float) -> None:
        super().__init__(values)
        self.default = default

    def get(self, key, default=None):  # type: ignore[override]
        return super().get(key, self.default)


def _refuse_to_replace(path: Path, what: str, *models: str) -> None:
    """Refuse to write ``path`` where it names one of the files being read."""
    for model in models:
        if same_file(path, model):
            raise LoweringError(f"{path}: {what} would overwrite the model {model}; choose another path")
