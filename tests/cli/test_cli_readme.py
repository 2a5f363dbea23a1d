"""README, docs/ and --help agree with the command line: every ``onnx-lower`` line of README and
docs/cli.md parses with the real parsers, docs/cli.md shows every option with an example, the
Rules table whole, the API example's printed Counter what the shipped example gives, the usage
line naming verify, and a usage error pointing to the right help (each run in this process,
``support.run_cli_in_process``: the console script's own process is test_cli.py's)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import onnx
import pytest
from support import REPO, run_cli_in_process  # noqa: E402

import lowering
from lowering.cli import build_parser, build_verify_parser
from lowering.cli.main import build_check_parser

README = (REPO / "README.md").read_text()
CLI_DOCS = (REPO / "docs" / "cli.md").read_text()
RULES_DOCS = (REPO / "docs" / "rules.md").read_text()
API_DOCS = (REPO / "docs" / "api.md").read_text()


def example_lines(text: str) -> list[str]:
    """Every ``onnx-lower ...`` command a page shows (in code blocks and table cells), the usage
    synopsis (``onnx-lower MODEL... (-o OUTPUT | ...) [options]``) and the name ``onnx-lower
    verify`` in prose aside."""
    found = [line.strip() for line in text.splitlines() if line.strip().startswith("onnx-lower ")]
    found += re.findall(r"`(onnx-lower [^`]+)`", text)
    return [line for line in found if not re.search(r"\[(options|-v)\]", line) and line != "onnx-lower verify"]


def options(parser) -> list[list[str]]:
    """Each option's spellings (``["-o", "--output"]``), --help aside."""
    return [action.option_strings for action in parser._actions if action.option_strings and "--help" not in
            action.option_strings]  # fmt: skip


@pytest.mark.parametrize("which", ["lower", "verify"])
def test_docs_show_every_option_with_an_example(which):
    parser = build_parser() if which == "lower" else build_verify_parser()
    examples = [line for line in example_lines(CLI_DOCS) if line.startswith("onnx-lower verify") == (which == "verify")]
    for spellings in options(parser):
        longest = max(spellings, key=len)
        assert f"`{longest}" in CLI_DOCS or f", {longest}" in CLI_DOCS, f"docs/cli.md does not name {longest}"
        assert any(re.search(rf"(^|\s){re.escape(o)}(\s|$)", line) for line in examples for o in spellings), (
            f"docs/cli.md has no example of {which} {longest}"
        )


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_every_command_shown_parses(page):
    """Each ``onnx-lower ...`` line (its comment aside) is one the real parsers take."""
    lines = example_lines((REPO / page).read_text())
    assert len(lines) >= 10
    for line in lines:
        for command in line.split("`, `"):  # a table cell may show two
            args = shlex.split(command, comments=True)[1:]
            if {"--version", "--help", "-h"} & set(args):  # (they print and exit)
                continue
            try:
                if args[:1] == ["verify"]:
                    build_verify_parser().parse_args(args[1:])
                elif args[:1] == ["check"]:
                    build_check_parser().parse_args(args[1:])
                else:
                    build_parser().parse_args(args)
            except (lowering.LoweringError, SystemExit) as error:
                pytest.fail(f"{page}: {command!r} does not parse: {error}")


def test_readme_shows_about_ten_examples_of_both_commands():
    lines = example_lines(README[README.index("## Command line") :])
    verify = [line for line in lines if line.startswith("onnx-lower verify")]
    assert 10 <= len(lines) <= 16 and len(verify) >= 2


def test_rules_table_is_one_table():
    begin = RULES_DOCS.index("<!-- generated: decompositions")
    section = RULES_DOCS[begin : RULES_DOCS.index("<!-- end: decompositions -->")]
    lines = section.strip().splitlines()
    rows = [k for k, line in enumerate(lines) if line.startswith("|")]
    assert rows == list(range(rows[0], rows[-1] + 1)), "no blank line splits the Rules table"
    assert any("OptionalHasElement" in lines[k] for k in rows) and any("Trilu" in lines[k] for k in rows)


@pytest.mark.parametrize("page", ["README", "docs/api.md"])
def test_api_example_prints_what_the_shipped_example_gives(page):
    text = README if page == "README" else API_DOCS
    block = text[text.index("Python API") :]
    block = block[block.index("```python") : block.index("```\n", block.index("```python") + 3)]
    load = re.search(r'onnx\.load\("([^"]+)"\)', block).group(1)
    printed = re.search(r"print\(result\.report\.rewritten\)\s+# (.+)", block).group(1)
    model = onnx.load(REPO / load)
    assert repr(lowering.lower_model(model).report.rewritten) == printed


def test_readme_first_command_lowers_the_example(tmp_path):
    first = README[README.index("```bash") + len("```bash") :].strip().splitlines()[0]
    command = first[first.index("onnx-lower ") :]
    args = shlex.split(command)[1:]
    output = args.index("-o") + 1
    args[output] = str(tmp_path / Path(args[output]).name)
    completed = run_cli_in_process(*args, cwd=REPO)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / Path(args[output]).name).exists()


def test_usage_line_names_verify_and_list_rules():
    completed = run_cli_in_process("--help")
    usage = completed.stdout[: completed.stdout.index("\n\n")]
    assert "onnx-lower MODEL..." in usage and "onnx-lower verify ORIGINAL LOWERED" in usage
    assert "onnx-lower --list-rules" in usage


def test_verify_help_fits_a_terminal():
    completed = run_cli_in_process("verify", "--help")
    assert completed.returncode == 0
    lines = completed.stdout.splitlines()
    assert len(lines) < 50 and max(map(len, lines)) <= 100
    assert "exit status: 0 match; 1 mismatch; 2 bad input" in completed.stdout


def test_a_verify_usage_error_points_to_verify_help(tmp_path):
    completed = run_cli_in_process("verify", tmp_path / "only_one.onnx")
    assert completed.returncode == 2 and completed.stdout == ""
    (line,) = completed.stderr.strip().splitlines()
    assert "required: LOWERED" in line and line.endswith("(see onnx-lower verify --help)")
    lowering_error = run_cli_in_process("--no-such-option")
    assert lowering_error.stderr.strip().endswith("(see onnx-lower --help)")
