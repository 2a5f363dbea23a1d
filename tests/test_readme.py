"""README's lists of patterns are generated from the registries, never typed by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from lowering.patterns import ADAPTER, readme_section

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("kind", [ADAPTER])
def test_readme_lists_what_the_registry_holds(kind):
    expected = readme_section(kind)
    assert expected in README.read_text(), f"README.md must hold, as generated:\n{expected}"
