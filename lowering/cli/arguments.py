"""Argument types the command line's parsers share."""

from __future__ import annotations

import argparse


def whole_number(low: int, high: int | None):
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
