"""The ``onnx-lower`` command line: lower one model or many (:mod:`.lower`, :mod:`.batch`),
verify two (:mod:`.verify`), list the rules (:mod:`.rules`); :mod:`.main` parses and dispatches."""

from .main import build_parser, build_verify_parser, main, run

__all__ = ["build_parser", "build_verify_parser", "main", "run"]
