"""``onnx-lower --list-rules``: one readable line per pattern, grouped by kind, types summarized;
``-v`` in full; ``--json`` as data; a model beside it is a usage error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support import REPO, run_cli_in_process  # noqa: E402

from lowering.cli.rules import WIDTH, summarize_types
from lowering.patterns import ADAPTER, DECOMPOSITION, FUNCTION_BODY, all_patterns, shorten


def test_one_readable_line_per_pattern_grouped_by_kind():
    completed = run_cli_in_process("--list-rules")
    assert completed.returncode == 0 and completed.stderr == ""
    lines = completed.stdout.splitlines()
    assert max(map(len, lines)) <= WIDTH, max(lines, key=len)
    headings = [line for line in lines if line and not line.startswith("  ")]
    assert [h.split(" (")[0] for h in headings] == ["Decompositions into primitive ops", "Version adapters",
                                                    "Function bodies"]  # fmt: skip
    patterns = all_patterns()
    pattern_lines = [line for line in lines if line.startswith("  ")]
    assert len(pattern_lines) == len(patterns), "one line per pattern"
    for kind in (DECOMPOSITION, ADAPTER, FUNCTION_BODY):
        count = sum(entry.kind == kind for entry in patterns)
        assert any(f", {count};" in h for h in headings), (kind, count)
    text = completed.stdout
    assert "  IsNaN-9/13/20 [float, double, float16, bfloat16, float8 ×4]: IsNaN(x) = Equal(Equal(x, x), false)" in text
    assert "  OptionalHasElement-15/18/28 [every tensor, sequence or optional type]: " in text
    assert "  ReduceL1/L2/LogSum/LogSumExp/Max/Mean/Min/Prod/SumSquare down across 18: " in text
    # A formula that does not fit is cut after a clause or word (never inside one) and says so.
    formulas = [entry.formula for entry in all_patterns()]
    for line, formula in zip(pattern_lines, formulas, strict=True):
        shown = line.split("]: ", 1)[-1] if "]: " in line else line.split(": ", 1)[1]
        if shown != formula:
            assert shown.endswith(" …"), line
            kept = shown[:-2]
            assert formula.startswith(kept) and formula[len(kept)] in " ;:,", line
            assert not kept.endswith((" =", ",")), line


def test_verbose_shows_each_pattern_in_full():
    completed = run_cli_in_process("--list-rules", "-v")
    assert completed.returncode == 0
    text = completed.stdout
    assert "IsNaN-9/13/20  (isnan_by_self_comparison)" in text
    assert "  the op takes at 13: bfloat16, double, float, float16" in text
    assert "  emits at 13: Cast, Constant, Equal" in text
    assert "Where Equal takes no floats (opsets below 11)" in text, "the whole docstring, not its first line"
    assert "value_string(s) likewise: a scalar for the singular ones" in text, "an adapter's formula, whole"


def test_json_lists_every_pattern_as_data():
    completed = run_cli_in_process("--list-rules", "--json")
    assert completed.returncode == 0
    records = json.loads(completed.stdout)
    assert len(records) == len(all_patterns())
    isnan = next(r for r in records if r["name"] == "isnan_by_self_comparison")
    assert isnan["types"]["9"] == ["double", "float", "float16"] and "Cast" in isnan["emits"]["13"]
    assert isnan["formula"].startswith("IsNaN(x) = Equal(Equal(x, x), false)")
    assert {r["kind"] for r in records} == {DECOMPOSITION, ADAPTER, FUNCTION_BODY}


def test_a_model_with_list_rules_is_a_usage_error(tmp_path):
    completed = run_cli_in_process(str(REPO / "examples" / "isnan_isinf.onnx"), "--list-rules")
    assert completed.returncode == 2 and completed.stdout == ""
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("onnx-lower: error: --list-rules takes no MODEL")
    verbose_alone = run_cli_in_process(str(REPO / "examples" / "isnan_isinf.onnx"), "--dry-run", "-v")
    assert verbose_alone.returncode == 2 and "-v/--verbose goes with --list-rules" in verbose_alone.stderr


@pytest.mark.slow
def test_list_rules_into_a_closed_pipe_is_no_error():
    shell = f"{sys.executable} -m lowering --list-rules | head -1"
    completed = subprocess.run(shell, shell=True, capture_output=True, text=True, timeout=180)
    assert completed.stdout.startswith("Decompositions") and completed.stderr == ""


def test_types_are_summarized():
    assert summarize_types(["float", "double"]) == "float, double"
    both = [f"{kind}tensor({element}){')' * kind.count('(')}" for kind in ("", "seq(") for element in ("float", "bool")]
    assert summarize_types(both) == "tensor or sequence of float, bool"
    assert shorten("f(a, b) = g(a, b); more words here", 20) == "f(a, b) = g(a, b) …"
