"""``onnx-lower MODEL`` (run in-process, as main): --strict and the exit statuses, --dry-run, --json,
the before/after table with sizes and time, and output formats by extension."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx
import onnx.parser
import pytest
from support import REPO, one_error_line, run_cli_in_process, slow_but_a_sample  # noqa: E402

EXAMPLE = REPO / "examples" / "isnan_isinf.onnx"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


OPTIONAL_INPUT = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (optional(float[N]) maybe, float[N] x) => (bool has, bool[N] nan) {
        has = OptionalHasElement (maybe)
        nan = IsNaN (x)
    }
"""


@pytest.fixture
def partial(tmp_path) -> Path:
    """A model whose OptionalHasElement cannot be lowered (its optional is a graph input)."""
    path = tmp_path / "partial.onnx"
    onnx.save(onnx.parser.parse_model(OPTIONAL_INPUT), path)
    return path


# -- 3: --strict and the exit statuses ------------------------------------------------------------


def test_strict_with_an_op_left_exits_1_writes_nothing_and_says_where_and_why(partial, tmp_path):
    before = digest(partial)
    output = tmp_path / "out" / "lowered.onnx"
    completed = run_cli_in_process(partial, "-o", output, "--strict")
    assert completed.returncode == 1
    line = one_error_line(completed)
    assert line.startswith("onnx-lower: strict: 1 requested op left: OptionalHasElement-18 at ")
    assert "optional input of graph" in line and line.endswith("nothing was written")
    assert not output.parent.exists() and digest(partial) == before


def test_without_strict_the_op_left_is_reported_and_the_model_written(partial, tmp_path):
    completed = run_cli_in_process(partial, "-o", tmp_path / "out.onnx")
    assert completed.returncode == 0 and completed.stderr == ""
    assert "not lowered: OptionalHasElement-18 at " in completed.stdout
    assert "lowered 1 x IsNaN-13" in completed.stdout and (tmp_path / "out.onnx").exists()
    assert "nothing to lower" not in completed.stdout


def test_strict_is_met_when_only_lowerable_ops_are_asked_for(partial, tmp_path):
    completed = run_cli_in_process(partial, "-o", tmp_path / "out.onnx", "--strict", "--ops", "IsNaN", "-q")
    assert completed.returncode == 0 and completed.stdout == completed.stderr == ""


def test_help_states_every_exit_status_and_fits_a_terminal():
    completed = run_cli_in_process("--help")
    assert completed.returncode == 0
    lines = completed.stdout.splitlines()
    assert len(lines) < 50 and max(map(len, lines)) <= 100
    text = completed.stdout
    assert "exit status" in text
    for status, words in (("0", "written"), ("1", "--strict"), ("2", "bad input"), ("3", "internal error")):
        assert any(line.strip().startswith(f"{status}  ") and words in line for line in lines), (status, text)
    for page in ("README.md", "docs/cli.md"):
        text = (REPO / page).read_text()
        assert "Exit status: 0 written" in text and "1 a requested op is left (`--strict`)" in text, page


# -- 4: --dry-run ---------------------------------------------------------------------------------


def test_dry_run_reports_what_would_change_and_writes_nothing(tmp_path):
    (tmp_path / "work").mkdir()
    before = digest(EXAMPLE)
    completed = run_cli_in_process(EXAMPLE, "--dry-run", cwd=tmp_path / "work")
    assert completed.returncode == 0 and completed.stderr == ""
    assert "lowered 2 x IsInf-10" in completed.stdout and "lowered 1 x IsNaN-13" in completed.stdout
    assert "Total" in completed.stdout and completed.stdout.splitlines()[-1].startswith("dry run: nothing written")
    with_output = run_cli_in_process(EXAMPLE, "--dry-run", "-o", tmp_path / "out.onnx", "--target-opset", "11")
    assert with_output.returncode == 0 and "converted 2 x Where-16→9" in with_output.stdout
    assert "nothing written to" in with_output.stdout
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["work"] and digest(EXAMPLE) == before


def test_dry_run_with_strict_fails_as_the_real_run_would(partial, tmp_path):
    completed = run_cli_in_process(partial, "--dry-run", "--strict")
    assert completed.returncode == 1 and "nothing would be written" in one_error_line(completed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partial.onnx"]


# -- 2: --json ------------------------------------------------------------------------------------


def test_json_report_of_a_lowering(partial, tmp_path):
    output = tmp_path / "out.onnx"
    completed = run_cli_in_process(partial, "-o", output, "--json")
    assert completed.returncode == 0 and completed.stderr == ""
    report = json.loads(completed.stdout)
    assert report["written"] is True and report["output"] == str(output) and report["exit_code"] == 0
    assert report["lowered"] == {"IsNaN-13": 1} and report["converted"] == {} and report["kept"] == {}
    (left,) = report["remaining"]
    assert left["op_type"] == "OptionalHasElement" and left["version"] == 18
    assert left["location"] and "optional input of graph" in left["reason"]
    assert report["ops"]["before"] == {"IsNaN": 1, "OptionalHasElement": 1}
    assert report["ops"]["after"]["Equal"] == 2 and "IsNaN" not in report["ops"]["after"]
    assert report["size_bytes"]["after"] == output.stat().st_size
    assert report["size_bytes"]["before"] == partial.stat().st_size
    assert report["opset"] == {"before": 18, "after": 18} and report["elapsed_s"] >= 0


def test_json_errors_are_json_too(partial, tmp_path):
    strict = run_cli_in_process(partial, "-o", tmp_path / "out.onnx", "--strict", "--json")
    assert strict.returncode == 1
    report = json.loads(strict.stdout)
    assert report["exit_code"] == 1 and report["written"] is False and report["error"]["kind"] == "incomplete"
    assert report["remaining"][0]["op_type"] == "OptionalHasElement"
    missing = run_cli_in_process(tmp_path / "absent.onnx", "-o", tmp_path / "out.onnx", "--json")
    assert missing.returncode == 2
    error = json.loads(missing.stdout)["error"]
    assert error["kind"] == "bad input" and "absent.onnx: no such file" in error["message"]
    usage = run_cli_in_process("--json", "--bogus")
    assert usage.returncode == 2 and json.loads(usage.stdout)["exit_code"] == 2
    assert "unrecognized arguments: --bogus" in json.loads(usage.stdout)["error"]["message"]
    assert not (tmp_path / "out.onnx").exists()


def test_json_with_a_target_opset_counts_conversions_and_kept_ops(tmp_path):
    completed = run_cli_in_process(EXAMPLE, "--dry-run", "--json", "--target-opset", "13", "--ops", "none")
    report = json.loads(completed.stdout)
    assert report["converted"] == {"Where-16→9": 2} and report["kept"] == {"IsInf-10": 2, "IsNaN-13": 1}
    assert report["opset"] == {"before": 17, "after": 13} and report["lowered"] == {}


def test_json_lists_where_each_replaced_node_was():
    completed = run_cli_in_process(EXAMPLE, "--dry-run", "--json")
    report = json.loads(completed.stdout)
    replaced = report["replaced"]
    assert sum(report["lowered"].values()) == len(replaced) > 0
    original = onnx.load(EXAMPLE)
    names = {node.name or f"#{index}": node.op_type for index, node in enumerate(original.graph.node)}
    for entry in replaced:
        assert names[entry["node"]] == entry["op_type"] and entry["graph"] == original.graph.name
    converted = json.loads(
        run_cli_in_process(EXAMPLE, "--dry-run", "--json", "--target-opset", "13", "--ops", "none").stdout
    )
    assert converted["converted"] == {"Where-16→9": 2} and converted["replaced"] == []  # re-versioned: same nodes


# -- 5: the table, sizes, time and wording --------------------------------------------------------


def test_table_shows_model_size_and_the_time_taken(tmp_path):
    output = tmp_path / "out.onnx"
    completed = run_cli_in_process(EXAMPLE, "-o", output)
    assert completed.returncode == 0
    lines = completed.stdout.splitlines()
    size_row = next(line for line in lines if line.startswith("Model size"))
    assert size_row.split()[2:] == ["403", "B", f"{output.stat().st_size}", "B"], size_row
    assert lines[0].split() == ["Op", "Original", "Lowered"]
    last = lines[-1]
    assert last.startswith(f"wrote {output} (") and last.endswith(" s)")


def test_conversion_at_the_models_own_opset_says_kept_not_converted(tmp_path):
    completed = run_cli_in_process(EXAMPLE, "--dry-run", "--target-opset", "17", "--ops", "none")
    assert completed.returncode == 0
    assert "→" not in completed.stdout and "converted" not in completed.stdout
    assert "kept 2 x IsInf-10 (unchanged at the target opset)" in completed.stdout
    assert "kept 1 x IsNaN-13 (unchanged at the target opset)" in completed.stdout


def test_verify_report_says_1_run_not_1_runs(tmp_path):
    lowered = tmp_path / "lowered.onnx"
    assert run_cli_in_process(EXAMPLE, "-o", lowered, "-q").returncode == 0
    import numpy as np

    np.savez(tmp_path / "one.npz", x=np.zeros((2, 16), np.float32))
    completed = run_cli_in_process("verify", EXAMPLE, lowered, "--inputs", tmp_path / "one.npz")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.splitlines()[2] == "1 run"


def test_progress_line_says_1_graph(tmp_path):
    import io

    from lowering.progress import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream, delay=0.0)
    progress.advance(nodes=3, graphs=1)
    assert stream.getvalue().endswith("3/3 nodes, 1 graph")


# -- 6: output formats by extension ---------------------------------------------------------------


@slow_but_a_sample()
@pytest.mark.parametrize(
    "suffix, starts",
    [(".onnxtxt", "<"), (".textproto", "ir_version: "), (".json", "{"), (".onnx", None)],
)
def test_output_format_follows_the_extension_and_reads_back(tmp_path, suffix, starts):
    output = tmp_path / f"lowered{suffix}"
    completed = run_cli_in_process(EXAMPLE, "-o", output, "-q")
    assert completed.returncode == 0 and completed.stderr == "", completed.stderr
    if starts is not None:
        assert output.read_text().lstrip().startswith(starts)
    again = tmp_path / "again.onnx"
    reread = run_cli_in_process(output, "-o", again, "--ops", "none", "-q")
    assert reread.returncode == 0 and reread.stderr == "", "read back with no warning"
    verified = run_cli_in_process("verify", EXAMPLE, again, "--json")
    assert verified.returncode == 0 and json.loads(verified.stdout)["match"], verified.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({output.name, again.name})


def test_reading_onnx_text_leaks_no_warning(tmp_path):
    text = tmp_path / "model.onnxtxt"
    text.write_text(onnx.printer.to_text(onnx.load(EXAMPLE)))
    completed = run_cli_in_process(text, "--dry-run")
    assert completed.returncode == 0 and completed.stderr == ""
    assert "lowered 1 x IsNaN-13" in completed.stdout


def test_a_text_model_that_does_not_parse_is_one_line(tmp_path):
    for name, text in (("broken.onnxtxt", "<ir_version: 8> main (float x) => ("), ("broken.json", "{nope")):
        path = tmp_path / name
        path.write_text(text)
        completed = run_cli_in_process(path, "-o", tmp_path / "out.onnx")
        assert completed.returncode == 2, completed.stderr
        line = one_error_line(completed)
        assert line.startswith(f"onnx-lower: error: {path}: not an ONNX model") and not (tmp_path / "out.onnx").exists()


def test_a_refused_conversion_lists_every_blocker_with_an_exit_status_of_its_own(tmp_path):
    from test_engine import blocked_twice

    model = tmp_path / "blocked.onnx"
    onnx.save(blocked_twice(), model)
    before = digest(model)
    completed = run_cli_in_process(str(model), "--target-opset", "10", "-o", str(tmp_path / "out.onnx"))
    assert completed.returncode == 4
    lines = completed.stderr.splitlines()
    assert lines[0] == "onnx-lower: 3 nodes cannot go to opset 10 (nothing was written):"
    assert [line.split(" at ")[0] for line in lines[1:]] == ["  Reshape-14"] * 3
    assert "node 'second'" in lines[2] and not (tmp_path / "out.onnx").exists() and digest(model) == before
    record = json.loads(run_cli_in_process(str(model), "--target-opset", "10", "--dry-run", "--json").stdout)
    assert record["exit_code"] == 4 and record["error"]["kind"] == "refused"
    assert [entry["node"] for entry in record["remaining"]] == ["first", "second", "in_branch"]
    assert set(record["remaining"][0]) == {"op_type", "version", "graph", "node", "location", "reason"}


def test_several_models_exit_with_the_most_severe_status():
    from lowering.cli.lower import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, most_severe

    assert most_severe(EXIT_REFUSED, EXIT_INTERNAL) == EXIT_INTERNAL
    assert most_severe(EXIT_REFUSED, EXIT_BAD_INPUT) == EXIT_BAD_INPUT
    assert most_severe(EXIT_FAILED, EXIT_REFUSED) == EXIT_REFUSED
    assert most_severe(EXIT_OK, EXIT_FAILED) == EXIT_FAILED


def test_a_verify_mismatch_after_patterns_that_state_a_tolerance_says_so(tmp_path):
    """LayerNormalization by its function body (taken to 13) differs from the fused kernel by
    ulps: the mismatch message names it and points to --rtol/--atol."""
    export = REPO / "golden" / "exports" / "gpt_block_torchscript17.onnx"
    completed = run_cli_in_process(str(export), "--target-opset", "13", "--verify", "-o", str(tmp_path / "out.onnx"))
    assert completed.returncode == 1
    assert "(LayerNormalization lowered by patterns that compute otherwise than a fused kernel" in completed.stderr
    assert "compare with --rtol/--atol" in completed.stderr
