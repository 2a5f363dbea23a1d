"""The tables of docs/ are generated from the registries, never typed by hand: they hold exactly
what ``python -m lowering.docs`` writes, and README's links lead to docs/'s pages."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from lowering import docs
from lowering.patterns import ADAPTER, DECOMPOSITION, function_body_table, markdown_table

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = (REPO / "README.md").read_text()


def test_docs_hold_exactly_what_the_generator_writes():
    assert docs.stale(DOCS) == [], "docs/ is stale: run python -m lowering.docs"
    assert docs.main(["--check", "--docs", str(DOCS)]) == 0


@pytest.mark.parametrize(
    "key, page, table",
    [
        ("decompositions", "rules.md", lambda: markdown_table(DECOMPOSITION)),
        ("version-adapters", "target-opsets.md", lambda: markdown_table(ADAPTER)),
        ("function-bodies", "function-bodies.md", function_body_table),
    ],
)
def test_each_table_is_the_registry_s_in_its_page(key, page, table):
    text = (DOCS / page).read_text()
    assert docs.docs_section(key) in text, f"docs/{page} must hold, as generated:\n{docs.docs_section(key)}"
    rows = table().splitlines()
    assert len(rows) > 3 and len(docs.short_cells(table()).splitlines()) == len(rows)


def test_check_finds_a_stale_or_missing_table_and_the_generator_mends_it(tmp_path, capsys):
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    page = copy / "target-opsets.md"
    text = page.read_text()
    page.write_text(text.replace("| `allowzero_dropped` |", "| `allowzero_typed_by_hand` |"))
    assert docs.main(["--check", "--docs", str(copy)]) == 1
    assert "target-opsets.md: a generated table is stale" in capsys.readouterr().err
    assert docs.main(["--docs", str(copy)]) == 0
    assert page.read_text() == text
    rules = copy / "rules.md"
    rules.write_text(re.sub(r"<!-- generated: decompositions .*?<!-- end: decompositions -->", "", rules.read_text(),
                            flags=re.S))  # fmt: skip
    assert any("'decompositions'" in problem for problem in docs.stale(copy))
    assert docs.main(["--docs", str(copy)]) == 1


def test_an_unknown_table_name_is_refused(tmp_path):
    (tmp_path / "page.md").write_text(
        "<!-- generated: no-such-table (python -m lowering.docs) -->\n<!-- end: no-such-table -->\n"
    )
    with pytest.raises(KeyError, match="no-such-table"):
        docs.stale(tmp_path)


def test_generated_cells_fit():
    for key in docs.TABLES:
        for row in docs.docs_section(key).splitlines():
            assert all(len(cell) <= docs.CELL for cell in row.split(" | ")), row


def test_readme_links_lead_to_every_page():
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)\)", README))
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert linked == pages, linked ^ pages


def test_links_between_pages_lead_to_pages():
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([\w-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (DOCS / target).exists(), f"{page.name} links to {target}, which is no page"


def test_readme_fits_and_docs_state_no_session_logs():
    assert len(README.encode()) <= 15_000
    for page in [REPO / "README.md", *DOCS.glob("*.md")]:
        assert not re.search(r"\bsession \d", page.read_text(), re.I), page.name


def test_the_adapter_example_is_the_modules_own_code():
    """docs/how-it-works.md shows how an adapter is registered with lines of a real one: each of
    them, in order, is a line of rules/versions/reshape.py."""
    page = (DOCS / "how-it-works.md").read_text()
    blocks = [block.split("  ```\n", 1)[0] for block in page.split("  ```python\n")[1:]]
    (example,) = [block for block in blocks if "@adapter(" in block]
    shown = [line.removeprefix("  ") for line in example.splitlines() if line.strip()]
    source = [line for line in (REPO / "rules" / "versions" / "reshape.py").read_text().splitlines() if line.strip()]
    start = source.index(shown[0])
    assert source[start : start + len(shown)] == shown
