"""The ``onnx-lower`` command line."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .api import lower_model, rules_table
from .errors import LoweringError
from .modelio import load_model, save_model
from .opcount import count_ops, op_count_table

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit status 2."""

    def error(self, message: str):  # type: ignore[override]
        raise LoweringError(f"{message} (see onnx-lower --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="onnx-lower",
        description="Rewrite ONNX operators a runtime lacks (IsInf, IsNaN, ...) into primitive ONNX operators.",
    )
    parser.add_argument("model", nargs="?", help="the ONNX model file to lower (never modified)")
    parser.add_argument("-o", "--output", help="where to write the lowered model (written atomically)")
    parser.add_argument(
        "--ops",
        help="comma-separated op types to lower (default: every op a rule covers), or 'none' to lower "
        "nothing (with --target-opset: a pure version conversion); see --list-rules",
    )
    parser.add_argument(
        "--target-opset",
        type=int,
        metavar="N",
        help="declare default-domain opset N: owned ops are kept, cast or lowered as N requires; "
        "other ops go through onnx's version converter",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    parser.add_argument("--list-rules", action="store_true", help="list the rewrite rules and exit")
    parser.add_argument("--version", action="version", version=f"onnx-lower {__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(build_parser().parse_args(argv))
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
    if not args.output:
        raise LoweringError("no output given: add -o OUTPUT")
    if _same_file(args.model, args.output):
        raise LoweringError(f"{args.output}: the output would overwrite the input model; choose another path")
    ops = None
    if args.ops is not None:
        ops = [op.strip() for op in args.ops.split(",") if op.strip()]
        if ops == ["none"]:
            ops = []
    model_file = load_model(args.model)
    result = lower_model(model_file.model, ops=ops, target_opset=args.target_opset)
    save_model(result.model, args.output, model_file.external_tensor_names)
    if not args.quiet:
        for line in op_count_table(count_ops(model_file.model), count_ops(result.model)):
            print(line)
        for line in result.report.lines():
            print(line)
        print(f"wrote {args.output}")
    return EXIT_OK


def _same_file(model: str, output: str) -> bool:
    model_path, output_path = Path(model), Path(output)
    if output_path.exists() and model_path.exists():
        return os.path.samefile(model_path, output_path)
    return model_path.resolve() == output_path.resolve()


def _print_rules() -> None:
    rows = rules_table()
    for row in rows:
        print(f"{row['op_type']}-{row['version']}  ({row['rule']})")
        print(f"  types: {', '.join(row['types'])}")
        print(f"  emits: {', '.join(row['emits'])}")
        print(f"  {row['formula']}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
