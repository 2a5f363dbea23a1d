"""Pytest options (``--update-golden`` rewrites the expected files under golden/), and the rules
of this checkout bound as ``lowering.rules``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bind_rules_of_this_checkout() -> None:
    """pyproject installs ``rules/`` as ``lowering.rules``. An editable install made from another
    checkout maps that name to its own ``rules/`` (the shared virtual environment's finder does),
    so a checkout put first on the path would run its own ``lowering`` with another's rules and
    version adapters. Where ``lowering`` is this checkout's, bind this checkout's ``rules/``."""
    import lowering

    if Path(lowering.__file__).resolve().parent != REPO / "lowering" or "lowering.rules" in sys.modules:
        return
    rules = REPO / "rules"
    spec = importlib.util.spec_from_file_location(
        "lowering.rules", rules / "__init__.py", submodule_search_locations=[str(rules)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["lowering.rules"] = module
    spec.loader.exec_module(module)
    lowering.rules = module


_bind_rules_of_this_checkout()


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/**/*.lowered.onnxtxt from the current rules (review the diff!)",
    )
