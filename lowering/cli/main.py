"""The ``onnx-lower`` command line: lower one model or many, verify two, list the rules."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .. import __version__
from ..api import FOLD_CHOICES
from ..errors import IncompleteLowering, LoweringError
from ..input_shapes import parse_input_shape
from .arguments import whole_number
from .lower import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    LowerOptions,
    lower_file,
)

EXIT_MISMATCH = EXIT_FAILED  # the name verify's callers know

USAGE = """onnx-lower MODEL... (-o OUTPUT | -o FOLDER/ | --in-place | --dry-run) [options]
       onnx-lower verify ORIGINAL LOWERED [options]   (see onnx-lower verify --help)
       onnx-lower check MODEL --target NAME [-v] [--json]   (see onnx-lower check --help)
       onnx-lower --list-rules [-v] [--json] | --list-targets [--json]"""

EXIT_STATUS = """exit status (a model whose status is not 0 writes nothing):
  0  written (--dry-run: would be written)
  1  a requested op is left (--strict), or the lowered model differs from the original (--verify)
  2  bad input or options, or a model verify cannot run (ops of an unknown domain)
  3  internal error: please report it with the model
  4  the model cannot go to --target-opset or --target: every node that cannot is listed, with why
  several MODELs: the most severe of their statuses (3, then 2, 4, 1)"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2) naming this parser's help."""

    def error(self, message: str):  # type: ignore[override]
        raise LoweringError(f"{message} (see {self.prog} --help)")


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, width=100, max_help_position=28)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="onnx-lower",
        usage=USAGE,
        formatter_class=_formatter,
        description="Rewrite ONNX operators a runtime lacks (IsInf, IsNaN, Optional ops, ...) into primitive ONNX\n"
        "operators, or convert a model to another opset; the input is never modified.",
        epilog=EXIT_STATUS,
    )
    add = parser.add_argument
    add("models", nargs="*", metavar="MODEL", help="ONNX model files (.onnx; .onnxtxt, .textproto, .json read too)")
    add("-o", "--output", metavar="OUTPUT", help="the lowered model, its format from its extension; with several "
        "MODELs (or ending in /) a folder that gets each under its own name")  # fmt: skip
    add("--in-place", action="store_true", help="replace each MODEL itself (atomically)")
    add("--dry-run", action="store_true", help="lower and report, but write nothing")
    add("--ops", metavar="A,B", action="append", help="op types to lower, repeatable (default: IsInf, IsNaN, "
        "OptionalHasElement, OptionalGetElement), or 'none' to lower nothing; see --list-rules")  # fmt: skip
    add("--target-opset", type=whole_number(1, None), metavar="N",
        help="declare default-domain opset N: each op kept, moved or lowered there")  # fmt: skip
    add("--target", metavar="NAME", help="run on runtime NAME (--list-targets): its opset, what it refuses lowered")
    add("--input-shape", action="append", default=[], metavar="X:D,..",
        help="input X static (x:1,3,8,8), or a dimension's size (batch=1); repeatable")  # fmt: skip
    add("--fold", choices=FOLD_CHOICES, metavar="WHAT", help="shape arithmetic folded: emitted (default), "
        "all, inner, none")  # fmt: skip
    add("--retype", metavar="FROM=TO,..", help="int64=int32, uint64=uint32 exact or refused; float64=float32 rounded")
    add("--retype-io", action="store_true", help="with --retype or --target: the model's inputs and outputs too")
    add("--strict", action="store_true", help="a requested op left is an error: exit 1, nothing written")
    add("--verify", action="store_true", help="compare original and lowered on edge values before writing, bit "
        "for bit or within --atol/--rtol; on a mismatch exit 1, write nothing")  # fmt: skip
    add("--custom-op-library", action="append", default=[], metavar="LIB",
        help="onnxruntime custom op library for --verify (repeatable)")  # fmt: skip
    add("--atol", action="append", default=[], metavar="[OUTPUT=]V",
        help="--verify's absolute tolerance, for all outputs or one (default: exact)")  # fmt: skip
    add("--rtol", action="append", default=[], metavar="[OUTPUT=]V",
        help="--verify's relative tolerance, for all outputs or one (default: exact)")  # fmt: skip
    add("--json", action="store_true", help="print the report as JSON (errors too) instead of text")
    add("-j", "--jobs", type=whole_number(0, None), default=1, metavar="N",
        help="lower several MODELs in N processes (0: one per CPU; default 1)")  # fmt: skip
    add("-q", "--quiet", action="store_true", help="print nothing but errors")
    add("--plain", action="store_true", help="the plain algorithm: the same bytes, slower (checks the fast path)")
    add("--list-rules", action="store_true", help="list the rewrite patterns, one line each, and exit")
    add("--list-targets", action="store_true", help="list the runtimes --target names, and exit")
    add("-v", "--verbose", action="store_true", help="with --list-rules: each pattern in full")
    add("--version", action="version", version=f"onnx-lower {__version__}")
    return parser


def build_verify_parser() -> argparse.ArgumentParser:
    from .verify import add_verify_arguments

    parser = _Parser(
        prog="onnx-lower verify",
        usage="onnx-lower verify ORIGINAL LOWERED [options]",
        formatter_class=_formatter,
        description="Run ORIGINAL and LOWERED in onnxruntime on inputs that carry NaN, ±inf, ±0, subnormals and\n"
        "extreme values (or on yours: --inputs), and compare every output bit for bit.",
        epilog="exit status: 0 match; 1 mismatch; 2 bad input or options, or cannot verify; 3 internal error",
    )
    add_verify_arguments(parser)
    return parser


def build_check_parser() -> argparse.ArgumentParser:
    from .check import add_check_arguments

    parser = _Parser(
        prog="onnx-lower check",
        usage="onnx-lower check MODEL --target NAME [--input-shape X:D,..] [--retype FROM=TO,..] [--retype-io]\n"
        "       [--json] [-v]",
        formatter_class=_formatter,
        description="List every node of MODEL that runtime NAME refuses (its profile, probed or read from its\n"
        "table: onnx-lower --list-targets), each with the pattern that lowers it or none, in one pass.",
        epilog="exit status: 0 the model fits; 1 it does not; 2 bad input or options; 3 internal error",
    )
    add_check_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    try:
        if argv[:1] == ["verify"]:
            from .verify import run_verify

            return run_verify(build_verify_parser().parse_args(argv[1:]))
        if argv[:1] == ["check"]:
            from .check import run_check

            return run_check(build_check_parser().parse_args(argv[1:]))
        return _run(build_parser().parse_args(argv))
    except IncompleteLowering as error:  # pragma: no cover - lower_file reports it
        return _error(f"{error}; nothing was written", EXIT_FAILED, "incomplete", as_json)
    except LoweringError as error:
        return _error(f"error: {error}", EXIT_BAD_INPUT, "bad input", as_json)
    except KeyboardInterrupt:
        return _error("interrupted; nothing was written", EXIT_INTERRUPTED, "interrupted", as_json)
    except BrokenPipeError:  # stdout closed early (`onnx-lower --list-rules | head`): not an error
        _silence_stdout()
        return EXIT_OK
    except Exception as error:  # one line, never a traceback
        text = str(error).splitlines()[0] if str(error) else ""
        message = f"internal error: {type(error).__name__}: {text} (please report it with the model)"
        return _error(message, EXIT_INTERNAL, "internal", as_json)


def run() -> None:
    """The ``onnx-lower`` command: :func:`main`, its status the process's exit status. Output
    still buffered is flushed here, where a reader that closed the pipe early (``onnx-lower
    --list-rules | head``) is no error."""
    code = main()
    if sys.stdout is not None:  # (None where the process started with it closed)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            _silence_stdout()
    sys.exit(code)


def _error(message: str, code: int, kind: str, as_json: bool) -> int:
    print(f"onnx-lower: {message}", file=sys.stderr)
    if as_json:
        error = {"kind": kind, "message": message.removeprefix("error: ")}
        print(json.dumps({"exit_code": code, "error": error}, indent=2))
    return code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover
        pass


def _run(args: argparse.Namespace) -> int:
    if args.list_targets:
        if args.models:
            raise LoweringError(f"--list-targets takes no MODEL (got {', '.join(args.models)})")
        from .check import print_targets

        print_targets(as_json=args.json)
        return EXIT_OK
    if args.list_rules:
        if args.models:
            raise LoweringError(
                f"--list-rules takes no MODEL (got {', '.join(args.models)}); lower it without --list-rules"
            )
        from .rules import print_rules

        print_rules(verbose=args.verbose, as_json=args.json)
        return EXIT_OK
    if args.verbose:
        raise LoweringError("-v/--verbose goes with --list-rules")
    if not args.models:
        raise LoweringError("no model given (usage: onnx-lower MODEL -o OUTPUT)")
    if args.retype_io and not (args.retype or args.target):
        raise LoweringError("--retype-io goes with --retype FROM=TO or --target NAME")
    verify_options = {"--custom-op-library": args.custom_op_library, "--atol": args.atol, "--rtol": args.rtol}
    for option, given in verify_options.items():
        if given and not args.verify:
            raise LoweringError(f"{option} is for --verify: add --verify, or leave it out")
    from .verify import parse_tolerance

    options = LowerOptions(
        ops=_parse_ops(args.ops),
        target_opset=args.target_opset,
        target=args.target,
        input_shapes=tuple(parse_input_shape(text) for text in args.input_shape),
        fold=args.fold,
        retype=args.retype,
        retype_io=args.retype_io,
        strict=args.strict,
        verify=args.verify,
        plain=args.plain,
        dry_run=args.dry_run,
        in_place=args.in_place,
        custom_op_libraries=tuple(args.custom_op_library),
        atol=parse_tolerance(args.atol, "--atol"),
        rtol=parse_tolerance(args.rtol, "--rtol"),
        progress=not args.quiet and not args.json,
        locations=args.json,
    )
    if args.in_place and args.output:
        raise LoweringError("--in-place writes each MODEL itself: give no -o")
    folder = _output_folder(args.output, several=len(args.models) > 1)
    if len(args.models) > 1:
        from .batch import run_batch

        return run_batch(args.models, folder, options, jobs=args.jobs, as_json=args.json, quiet=args.quiet)
    (model,) = args.models
    output = model if args.in_place else args.output
    if folder is not None:  # one model into a folder: under its own name
        output = os.path.join(folder, Path(model).name)
    if output is None and not args.dry_run:
        raise LoweringError("no output given: add -o OUTPUT (or --in-place to replace MODEL, or --dry-run)")
    outcome = lower_file(model, output, options)
    if args.json:
        print(json.dumps(outcome.record, indent=2))
    else:
        for line in outcome.verify_lines if args.quiet else outcome.lines:
            print(line)
    if outcome.problem:
        print(f"onnx-lower: {outcome.problem}", file=sys.stderr)
    return outcome.exit_code


def _parse_ops(texts: list[str] | None) -> tuple[str, ...] | None:
    """The op types ``--ops`` names, each given once or more (``--ops IsNaN --ops Gelu`` is
    ``--ops IsNaN,Gelu``); ``none`` (alone) lowers nothing."""
    if texts is None:
        return None
    ops = tuple(dict.fromkeys(op.strip() for text in texts for op in text.split(",") if op.strip()))
    if not ops:
        raise LoweringError("--ops: give op types (--ops IsNaN,IsInf), or --ops none to lower nothing")
    if "none" in ops and len(ops) > 1:
        raise LoweringError(f"--ops: 'none' lowers nothing, so it goes alone (given: {', '.join(ops)})")
    return () if ops == ("none",) else ops


def _output_folder(output: str | None, several: bool) -> Path | None:
    """The folder ``-o`` names for a batch (several models, or a path ending in / or naming a
    folder), else None; with several models ``-o`` must be a folder."""
    if output is None:
        return None
    path = Path(output)
    if output.endswith(("/", os.sep)) or path.is_dir():
        return path
    if several:
        raise LoweringError(
            f"-o {output}: with several models -o names a folder (end it with /), which gets each model under "
            "its own name"
        )
    return None


if __name__ == "__main__":  # pragma: no cover
    run()
