"""Pytest options: ``--update-golden`` rewrites the expected files under golden/."""


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/**/*.lowered.onnxtxt from the current rules (review the diff!)",
    )


def _rules_of_this_checkout() -> None:
    """Make ``lowering.rules`` this checkout's ``rules/``.

    An editable install maps ``lowering.rules`` to its own checkout's ``rules/``; a test run
    from another checkout (a git worktree on PYTHONPATH) would otherwise load its ``lowering``
    but that install's rules. Only where ``lowering`` itself comes from this checkout."""
    import importlib.abc
    import importlib.util
    import sys
    from pathlib import Path

    import lowering

    root = Path(__file__).resolve().parent.parent
    if Path(lowering.__file__).resolve().parent != root / "lowering" or "lowering.rules" in sys.modules:
        return
    rules_dir = root / "rules"

    class ThisCheckoutsRules(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname != "lowering.rules":
                return None
            return importlib.util.spec_from_file_location(
                fullname, rules_dir / "__init__.py", submodule_search_locations=[str(rules_dir)]
            )

    sys.meta_path.insert(0, ThisCheckoutsRules())


_rules_of_this_checkout()
