"""The tables of ``docs/`` that come from the registry, never typed by hand.

Each such table sits in a page of ``docs/`` between generated-content markers::

    <!-- generated: KEY (python -m lowering.docs) -->
    ...
    <!-- end: KEY -->

``python -m lowering.docs`` rewrites every such block from the registry (decompositions,
version adapters, function bodies) and the runtime profiles (targets); ``python -m
lowering.docs --check`` writes nothing and exits 1 naming each page whose blocks differ from
what it would write, or a table no page holds (``tests/test_docs.py`` runs the same check)."""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from .patterns import ADAPTER, DECOMPOSITION, function_body_table, markdown_table, shorten

DOCS = Path(__file__).resolve().parents[1] / "docs"
COMMAND = "python -m lowering.docs"
REFUSED_BY_ONNX_LOWER = "refused by onnx-lower"  # (targets/run_sweep.py's verdict on a model it did not make)
CELL = 300  # a longer cell is cut at a clause, with " …" (``onnx-lower --list-rules -v`` gives it whole)


def targets_table() -> str:
    """One row per runtime profile (lowering/target_profiles/): what it is and where it came from,
    probed from the runtime or read from its published support table."""
    from .runtime_profiles import PARTLY, REFUSED, SUPPORTED, TableProfile, load_profile, profile_names

    rows = [
        "| target | runtime | opsets it loads | what it holds | source |",
        "|---|---|---|---|---|",
    ]
    for name in profile_names():
        profile = load_profile(name)
        span = f"{min(profile.opsets)}-{max(profile.opsets)}" if profile.opsets else "none"
        if isinstance(profile, TableProfile):
            counts = profile.counts()
            span = span if profile.opsets else "not stated"
            held = (
                f"table: {counts[SUPPORTED]} ops supported, {counts[PARTLY]} with restrictions, "
                f"{counts[REFUSED]} marked N; any other refused"
            )
            where = profile.source
            section = f" ({where['section']})" if where.get("section") else ""
            source = (f"table: `{where['path']}`{section} of {where['repo']} at `{where['ref']}`, "
                      f"commit `{where['commit'][:12]}`")  # fmt: skip
            note = where.get("opsets_stated") and f'opsets: "{where["opsets_stated"]}"'
        else:
            verdicts = [verdict for outcomes in profile.cases.values() for _, verdict, _ in outcomes]
            right, wrong = verdicts.count("right"), verdicts.count("wrong")
            held = f"backend cases: {right} right / {wrong} wrong / {len(verdicts) - right - wrong} fail"
            for what, names in sorted(profile.unfed.items()):
                held += f" / {len(names)} unfed ({what}: takes none, whatever the op)"
            if profile.swept:
                swept = profile.swept
                refused = f", {len(swept['refused'])} refused by onnx-lower" if "refused" in swept else ""
                held += (f"; swept after --target (onnx-lower {swept['onnx_lower']}, {swept['date']}): "
                         f"{len(swept['not_right'])} of {swept['models']} models not right{refused}")  # fmt: skip
            for form, found in sorted(profile.model_forms.items()):
                held += (f"; whole models with the form {form}: {len(found['better'])} right only so, "
                         f"{len(found['worse'])} right only without, of {len(found['tried'])}")  # fmt: skip
            source = f"{profile.source.get('kind')}: `{profile.source.get('how')}` ({profile.source.get('date', '?')})"
            for added in profile.source.get("added", []):
                source += f", {added['cases']} cases added with `--add` ({added['date']})"
            if "model_forms" in profile.source:
                trials = profile.source["model_forms"]
                source += f", trials: `{trials['how']}` ({trials['date']})"
            note = profile.source.get("note")
        rows.append(
            f"| `{name}` | {profile.runtime} {profile.runtime_version} | {span} | {held} | "
            f"{source}{'; ' + note if note else ''} |"
        )
    return "\n".join(rows)


def target_refusals_table(shown: int = 12) -> str:
    """One row per swept profile: how many of the swept models onnx-lower refused to make for
    it, and how many it made that the runtime did not run right; of each, how many ran right
    once the inputs setting their parameters were given as constants; and the ops that blocked
    the refused with how many models each blocked (most first; ``shown`` of them, then how many
    more): from the profile's ``swept``."""
    from .runtime_profiles import TableProfile, load_profile, profile_names

    rows = [
        "| target | refused, not right of swept | right with their parameters constant | blocking ops (models) "
        "| not right, keeping nodes the runtime computes wrong on some values (models) |",
        "|---|---|---|---|---|",
    ]
    for name in profile_names():
        profile = load_profile(name)
        if isinstance(profile, TableProfile) or "refused" not in profile.swept:
            continue
        refused, not_right = profile.swept["refused"], profile.swept["not_right"]
        blocking = Counter(op for found in refused.values() for op in found["blockers"] or ["(none named)"])
        ranked = sorted(blocking.items(), key=lambda item: (-item[1], item[0]))
        listed = ", ".join(f"{op} ({count})" for op, count in ranked[:shown])
        more = f", and {len(ranked) - shown} more" if len(ranked) > shown else ""
        constant = (f"refused: {parameters_constant_said(refused)}; "
                    f"not right: {parameters_constant_said(not_right)}")  # fmt: skip
        counts = f"{len(refused)}, {len(not_right)} of {profile.swept['models']}"
        rows.append(f"| `{name}` | {counts} | {constant} | {listed}{more} | {partly_kept_said(profile.swept, shown)} |")
    return "\n".join(rows)


def partly_kept_said(swept: dict, shown: int = 12) -> str:
    """Of the models a sweep found not right after --target, how many kept a node the runtime
    computes wrong on some probed values (``partly``: no pattern avoids it there), and those
    nodes' op versions and types with how many models kept each (most first): "2 of 10: Cast-28
    on DOUBLE (2)"; "not recorded" of a sweep made before it looked for them."""
    not_right = swept["not_right"]
    if not swept.get("partly_recorded"):
        return "not recorded"
    kept = Counter(
        op for found in not_right.values() for op in {key.partition(" (")[0] for key in found.get("partly", [])}
    )
    ranked = sorted(kept.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{key} ({count})" for key, count in ranked[:shown])
    more = f", and {len(ranked) - shown} more" if len(ranked) > shown else ""
    keeping = sum(1 for found in not_right.values() if found.get("partly"))
    return f"{keeping} of {len(not_right)}" + (f": {listed}{more}" if listed else "")


def parameters_constant_said(swept: dict[str, dict]) -> str:
    """How the swept models fared with their parameters constant: "R right of N run", of those
    the runtime ran so (N), those it ran right (R); then how many onnx-lower refused to make so
    ("K not made")."""
    tried = [found["constant_parameters"]["after"] for found in swept.values() if "constant_parameters" in found]
    ran = [after for after in tried if after != REFUSED_BY_ONNX_LOWER]
    refused = f", {len(tried) - len(ran)} not made" if len(ran) < len(tried) else ""
    return f"{sum(after.startswith('right') for after in ran)} right of {len(ran)} run{refused}"


TABLES: dict[str, Callable[[], str]] = {
    "decompositions": lambda: markdown_table(DECOMPOSITION),
    "version-adapters": lambda: markdown_table(ADAPTER),
    "function-bodies": function_body_table,
    "targets": targets_table,
    "target-refusals": target_refusals_table,
}

BLOCK = re.compile(r"<!-- generated: (?P<key>[\w-]+) \(.*?\) -->\n(?P<body>.*?)<!-- end: (?P=key) -->", re.S)


def short_cells(table: str, limit: int = CELL) -> str:
    """A Markdown table with each cell longer than ``limit`` cut at a clause, with `` …``."""
    rows = []
    for row in table.splitlines():
        cells = row.split(" | ")
        rows.append(" | ".join(shorten(cell, limit) if len(cell) > limit else cell for cell in cells))
    return "\n".join(rows)


def docs_section(key: str) -> str:
    """The block of docs/ holding table ``key``, its generated-content markers included."""
    return f"<!-- generated: {key} ({COMMAND}) -->\n{short_cells(TABLES[key]())}\n<!-- end: {key} -->"


def regenerated(text: str) -> str:
    """``text`` with every generated block made anew from the registry."""

    def block(match: re.Match) -> str:
        key = match.group("key")
        if key not in TABLES:
            raise KeyError(f"no generated table is named {key!r} (known: {', '.join(TABLES)})")
        return docs_section(key)

    return BLOCK.sub(block, text)


def pages(folder: Path = DOCS) -> list[Path]:
    return sorted(folder.glob("*.md"))


def stale(folder: Path = DOCS) -> list[str]:
    """What differs from what ``python -m lowering.docs`` would write: each page whose generated
    blocks are not current, and each table that no page holds."""
    problems, held = [], set()
    for page in pages(folder):
        text = page.read_text()
        held |= {match.group("key") for match in BLOCK.finditer(text)}
        if regenerated(text) != text:
            problems.append(f"{page.name}: a generated table is stale")
    problems += [f"no page of {folder} holds the generated table {key!r}" for key in TABLES if key not in held]
    return problems


def write(folder: Path = DOCS) -> list[Path]:
    """Rewrite every generated block of every page; the pages changed."""
    changed = []
    for page in pages(folder):
        text = page.read_text()
        new = regenerated(text)
        if new != text:
            page.write_text(new)
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is not current")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"the folder of pages (default: {DOCS})")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale(args.docs)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(f"run {COMMAND} to regenerate", file=sys.stderr)
        return 1 if problems else 0
    for page in write(args.docs):
        print(f"rewrote {page}")
    missing = [key for key in TABLES if all(f"<!-- generated: {key} " not in p.read_text() for p in pages(args.docs))]
    for key in missing:
        print(f"no page holds the generated table {key!r}: add its markers to a page", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
