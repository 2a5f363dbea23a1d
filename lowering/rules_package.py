"""The top-level ``rules/`` package (installed as ``lowering.rules``), imported on first need:
importing it registers every decomposition, version adapter and function body."""

from __future__ import annotations

_loaded = False


def load_rules_package() -> None:
    """Import ``lowering.rules`` once (a lookup made while it imports finds what is there so far)."""
    global _loaded
    if not _loaded:
        from . import rules  # noqa: F401  (importing the package registers its patterns)

        _loaded = True
