"""The ``onnx-lower`` command line."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from . import __version__
from .api import lower_model, rules_table
from .errors import IncompleteLowering, LoweringError
from .feeds import MAX_INPUT_VALUES, MAX_RUNS, check_feeds
from .modelio import load_model, same_file, save_model, with_external_data
from .opcount import count_ops, op_count_table
from .patterns import ADAPTER, FUNCTION_BODY, all_patterns
from .progress import Progress
from .verification import check_tolerances, load_feeds, verify

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        raise LoweringError(f"{message} (see onnx-lower --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="onnx-lower",
        description="Rewrite ONNX operators a runtime lacks (IsInf, IsNaN, ...) into primitive ONNX operators. "
        "'onnx-lower verify ORIGINAL LOWERED' compares two models (see onnx-lower verify --help).",
        epilog="exit status: 0 written; 1 the lowered model differs from the original (--verify) or a "
        "requested op is left (--strict), nothing written; 2 bad input or options, nothing written; "
        "3 internal error, nothing written",
    )
    parser.add_argument("model", nargs="?", help="the ONNX model file to lower (never modified)")
    parser.add_argument("-o", "--output", help="where to write the lowered model (written atomically)")
    parser.add_argument(
        "--in-place", action="store_true", help="replace MODEL itself with the lowered model (atomically)"
    )
    parser.add_argument(
        "--ops",
        help="comma-separated op types to lower (default: IsInf, IsNaN, OptionalHasElement, OptionalGetElement), "
        "or 'none' to lower nothing (with --target-opset: a pure version conversion); see --list-rules",
    )
    parser.add_argument(
        "--target-opset",
        type=int,
        metavar="N",
        help="declare default-domain opset N: owned ops are kept, cast or lowered as N requires; "
        "other ops go through onnx's version converter",
    )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print nothing but errors (no table, no progress line)"
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="run original and lowered on edge-value inputs before writing; on a mismatch write nothing, exit 1",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a requested op left is an error: exit 1, nothing written (default: it is reported and kept)",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="run the plain algorithm (every node through its rule, no memoized or byte-level shortcuts): "
        "the same output, slower; for checking the fast path",
    )
    parser.add_argument("--list-rules", action="store_true", help="list the rewrite rules and exit")
    parser.add_argument("--version", action="version", version=f"onnx-lower {__version__}")
    return parser


def build_verify_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="onnx-lower verify",
        description="Run ORIGINAL and LOWERED in onnxruntime on inputs that carry NaN, ±inf, ±0, subnormals "
        "and extreme values, and compare every output bit for bit. Exit 0: match, 1: mismatch, 2: bad input.",
    )
    parser.add_argument("original", help="the original model")
    parser.add_argument("lowered", help="the lowered model")
    parser.add_argument(
        "--seed", type=_whole_number(0, None), help="seed of the random part of the inputs: 0 or more (default 0)"
    )
    parser.add_argument(
        "--samples",
        type=_whole_number(1, MAX_RUNS),
        help=f"at least this many runs, 1 to {MAX_RUNS:,} (default 8; more until every edge value is used)",
    )
    parser.add_argument(
        "--shape",
        action="append",
        default=[],
        metavar="NAME:D1,D2",
        help=f"the shape of input NAME, dimensions of 1 or more (repeatable; at most {MAX_INPUT_VALUES:,} values "
        "per input)",
    )
    parser.add_argument(
        "--atol",
        action="append",
        default=[],
        metavar="[OUTPUT=]VALUE",
        help="absolute tolerance, for all outputs or one",
    )
    parser.add_argument(
        "--rtol",
        action="append",
        default=[],
        metavar="[OUTPUT=]VALUE",
        help="relative tolerance, for all outputs or one",
    )
    parser.add_argument("--inputs", metavar="FILE.npz", help="replay the inputs saved by an earlier mismatch")
    parser.add_argument(
        "--save-inputs",
        metavar="FILE.npz",
        help="where to save the inputs on a mismatch (default: ./LOWERED.inputs.npz)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if argv[:1] == ["verify"]:
            return _run_verify(build_verify_parser().parse_args(argv[1:]))
        return _run(build_parser().parse_args(argv))
    except IncompleteLowering as error:
        print(f"onnx-lower: {error}; nothing was written", file=sys.stderr)
        return EXIT_MISMATCH
    except LoweringError as error:
        print(f"onnx-lower: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("onnx-lower: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as error:  # one line, never a traceback
        print(
            f"onnx-lower: internal error: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''} "
            "(please report it with the model)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    if args.list_rules:
        _print_rules()
        return EXIT_OK
    if not args.model:
        raise LoweringError("no model given (usage: onnx-lower MODEL -o OUTPUT)")
    if args.in_place:
        if args.output and not same_file(args.model, args.output):
            raise LoweringError("--in-place writes MODEL itself: give no -o, or -o MODEL")
        args.output = args.model
    if not args.output:
        raise LoweringError("no output given: add -o OUTPUT (or --in-place to replace MODEL)")
    if not args.in_place and same_file(args.model, args.output):
        raise LoweringError(
            f"{args.output}: the output would overwrite the input model; choose another path or add --in-place"
        )
    ops = None
    if args.ops is not None:
        ops = [op.strip() for op in args.ops.split(",") if op.strip()]
        if ops == ["none"]:
            ops = []
    model_file = load_model(args.model)
    counts_before = count_ops(model_file.model)
    progress = None
    if not args.quiet and sys.stderr.isatty():
        progress = Progress(sum(counts_before.values()))
    try:
        result = lower_model(
            model_file.model,
            ops=ops,
            target_opset=args.target_opset,
            progress=progress,
            fast=False if args.plain else None,
            strict=args.strict,
        )
    finally:
        if progress is not None:
            progress.close()
    if args.verify:
        saved = Path(f"{Path(args.output).name}.inputs.npz")
        _refuse_to_replace(saved, "the inputs saved on a mismatch", args.model)
        original, lowered = model_file.model, result.model
        if model_file.has_external_data:  # onnxruntime needs the weights to run either model
            original, lowered = with_external_data(model_file), with_external_data(model_file, lowered)
        try:
            report = verify(original, lowered, save_inputs=saved)
        except LoweringError as error:
            hint = " (onnx-lower verify takes --shape and --samples)" if "--shape" in str(error) else ""
            raise LoweringError(f"--verify: {error}{hint}; {args.output} was not written") from None
        if not args.quiet or not report.match:
            for line in report.lines():
                print(line)
        if not report.match:
            kept = (
                f"Inputs saved to {saved}: write the lowered model without --verify and replay them with "
                f"onnx-lower verify {args.model} {args.output} --inputs {saved}"
                if report.inputs_file
                else f"The inputs were not saved: {report.inputs_error}"
            )
            print(
                f"onnx-lower: the lowered model differs from the original; {args.output} was not written. {kept}",
                file=sys.stderr,
            )
            return EXIT_MISMATCH
    save_model(result.model, args.output, model_file.folder, replacing_input=args.in_place, input_model=args.model)
    if not args.quiet:
        for line in op_count_table(counts_before, count_ops(result.model)):
            print(line)
        for line in result.report.lines():
            print(line)
        print(f"wrote {args.output}")
    return EXIT_OK


def _run_verify(args: argparse.Namespace) -> int:
    if args.inputs:
        given = [option for option, value in (("--seed", args.seed), ("--samples", args.samples),
                 ("--shape", args.shape), ("--save-inputs", args.save_inputs)) if value not in (None, [])]  # fmt: skip
        if given:
            raise LoweringError(
                f"{', '.join(given)} cannot go with --inputs: the saved inputs are replayed as they are"
            )
    shapes: dict[str, list[int]] = {}
    for name, shape in (_parse_shape(text) for text in args.shape):
        if name in shapes:
            raise LoweringError(f"--shape {name}: given twice; give each input's shape once")
        shapes[name] = shape
    atol, rtol = _parse_tolerance(args.atol, "--atol"), _parse_tolerance(args.rtol, "--rtol")
    inputs = load_feeds(args.inputs) if args.inputs else None
    saved = Path(args.save_inputs) if args.save_inputs else Path(f"{Path(args.lowered).name}.inputs.npz")
    if not args.inputs:
        _refuse_to_replace(saved, "--save-inputs" if args.save_inputs else "the inputs saved on a mismatch",
                           args.original, args.lowered)  # fmt: skip
    original_file, lowered_file = load_model(args.original), load_model(args.lowered)
    outputs = [o.name for o in original_file.model.graph.output]
    check_tolerances(atol, outputs, "--atol")
    check_tolerances(rtol, outputs, "--rtol")
    if inputs is not None:
        check_feeds(original_file.model, inputs, f"--inputs {args.inputs}")
    report = verify(
        with_external_data(original_file) if original_file.has_external_data else original_file.model,
        with_external_data(lowered_file) if lowered_file.has_external_data else lowered_file.model,
        seed=args.seed or 0,
        samples=args.samples,
        shapes=shapes,
        atol=atol,
        rtol=rtol,
        inputs=inputs,
        save_inputs=None if args.inputs else saved,
    )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        for line in report.lines():
            print(line)
        if report.inputs_file:
            print(f"inputs saved to {report.inputs_file}; replay: onnx-lower verify {args.original} {args.lowered} "
                  f"--inputs {report.inputs_file}")  # fmt: skip
    if report.inputs_error:
        print(f"onnx-lower: the inputs were not saved: {report.inputs_error}", file=sys.stderr)
    return EXIT_OK if report.match else EXIT_MISMATCH


def _whole_number(low: int, high: int | None):
    """An argparse type: a whole number from ``low`` to ``high``, refused in one line otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            upper = f" to {high:,}" if high is not None else " or more"
            raise argparse.ArgumentTypeError(f"{text!r}: give a whole number{' from' if high else ' of'} {low}{upper}")
        return value

    return parse


def _parse_shape(text: str) -> tuple[str, list[int]]:
    name, separator, dims = text.rpartition(":")
    try:
        shape = [int(d) for d in dims.split(",")] if dims.strip() else []
    except ValueError:
        shape = None
    if not separator or not name or shape is None or any(d < 0 for d in shape):
        raise LoweringError(f"--shape {text!r}: expected NAME:D1,D2,... with whole numbers, e.g. x:2,3")
    return name, shape


def _parse_tolerance(values: list[str], option: str) -> float | dict[str, float] | None:
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
    """Refuse to write ``path`` where it names one of the ``models`` being read."""
    for model in models:
        if same_file(path, model):
            raise LoweringError(f"{path}: {what} would overwrite the model {model}; choose another path")


def _print_rules() -> None:
    print("Decompositions (rules/):")
    for row in rules_table():
        print(f"{row['op_type']}-{row['version']}  ({row['rule']})")
        print(f"  types: {', '.join(row['types'])}")
        print(f"  emits: {', '.join(row['emits'])}")
        print(f"  {row['formula']}")
    entries = all_patterns()
    print()
    print("Version adapters (rules/versions/):")
    for entry in entries:
        if entry.kind == ADAPTER:
            print(f"{', '.join(entry.op_types)}  {entry.versions}  ({entry.name})")
            print(f"  {entry.formula}")
            print(f"  checked: {entry.checked_by}")
    print()
    print("Function bodies (rules/functions.py), lowered when asked (--ops) or when a target opset needs it:")
    for entry in entries:
        if entry.kind == FUNCTION_BODY:
            print(f"{entry.op_types[0]}-{entry.versions.replace(', ', '/')}: {entry.formula}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
