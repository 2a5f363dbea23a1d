"""Pytest options: ``--update-golden`` rewrites the expected files under golden/. The cases of a
test decorated with ``support.slow_but_a_sample`` are marked slow but for its sample."""

import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/**/*.lowered.onnxtxt from the current rules (review the diff!)",
    )


@pytest.hookimpl(tryfirst=True)  # before -m deselects by the marks
def pytest_collection_modifyitems(items):
    cases = {}
    for item in items:
        keep = getattr(getattr(item, "function", None), "fast_sample", None)
        if keep is not None:
            cases.setdefault(item.function, (keep, []))[1].append(item)
    for keep, group in cases.values():
        step = max(1, -(-len(group) // keep))
        for index, item in enumerate(group):
            if index % step:
                item.add_marker(pytest.mark.slow)
