"""The command line: the happy path, external data, and one clear line for every bad input."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from support import (
    REPO,
    make_model,
    run_cli,  # noqa: E402
    run_cli_in_process,  # noqa: E402
    slow_but_a_sample,
)

import lowering
from lowering.cli import main

EXAMPLE = REPO / "examples" / "isnan_isinf.onnx"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_lowers_the_bundled_example(tmp_path):
    before = digest(EXAMPLE)
    output = tmp_path / "lowered.onnx"
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(output))
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    lowered = onnx.load(output)
    onnx.checker.check_model(lowered, full_check=True)
    assert not {"IsNaN", "IsInf"} & {node.op_type for node in lowered.graph.node}
    assert "IsNaN" in completed.stdout and "Original" in completed.stdout and "Lowered" in completed.stdout
    assert "lowered " in completed.stdout
    assert digest(EXAMPLE) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lowered.onnx"], "no temporary files left"


@pytest.mark.slow
def test_the_command_ends_at_once_with_all_its_output_and_its_exit_code(tmp_path):
    """``onnx-lower`` and ``python -m lowering`` run :func:`lowering.cli.run`: main, then the
    process ends without Python's teardown. What it printed still arrives whole through a pipe
    (block-buffered there), the file it wrote is complete, and the exit code is main's."""
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"onnx-lower": "lowering.cli:run"}
    output = tmp_path / "lowered.onnx"
    completed = run_cli(str(EXAMPLE), "-o", str(output), "--json")
    assert completed.returncode == 0, completed.stderr
    import json

    record = json.loads(completed.stdout)  # (the whole document: a cut one does not parse)
    assert record["written"] is True
    onnx.checker.check_model(onnx.load(output), full_check=True)
    missing = run_cli(str(tmp_path / "missing.onnx"), "-o", str(tmp_path / "out.onnx"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    import subprocess
    import sys

    for args, code in (([str(EXAMPLE), "-o", str(tmp_path / "closed.onnx")], 0), ([str(tmp_path / "no.onnx")], 2)):
        closed = subprocess.run(  # stdout closed from the start: Python has no sys.stdout to flush
            [sys.executable, "-m", "lowering", *args], stdout=None, stderr=subprocess.PIPE, text=True, cwd=REPO,
            timeout=300, preexec_fn=lambda: os.close(1),
        )  # fmt: skip
        assert closed.returncode == code and "Traceback" not in closed.stderr, closed.stderr
    onnx.checker.check_model(onnx.load(tmp_path / "closed.onnx"), full_check=True)


@pytest.mark.slow
def test_lowering_and_converting_without_verify_never_load_onnxruntime(tmp_path):
    """onnxruntime is imported where a model is first run (--verify, verify): a plain lowering
    or conversion does without it, and so without its start-up cost."""
    import subprocess
    import sys

    output = tmp_path / "lowered.onnx"
    script = (
        "import sys; from lowering.cli import main; code = main(sys.argv[1:]); "
        "assert 'onnxruntime' not in sys.modules, 'onnxruntime was imported'; sys.exit(code)"
    )
    for extra in ([], ["--target-opset", "13"]):
        completed = subprocess.run(
            [sys.executable, "-c", script, str(EXAMPLE), "-o", str(output), "-q", *extra],
            capture_output=True, text=True, cwd=REPO, timeout=300,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr
        onnx.checker.check_model(onnx.load(output), full_check=True)


def test_quiet_prints_nothing_and_ops_limits_the_rules(tmp_path, capsys):
    output = tmp_path / "out.onnx"
    assert main([str(EXAMPLE), "-o", str(output), "--ops", "IsInf", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    op_types = {node.op_type for node in onnx.load(output).graph.node}
    assert "IsInf" not in op_types and "IsNaN" in op_types


def test_ops_may_be_given_more_than_once(tmp_path):
    """``--ops IsNaN --ops IsInf`` lowers both, as ``--ops IsNaN,IsInf`` does (the last one alone
    was kept); ``none`` goes alone."""
    both = tmp_path / "both.onnx"
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(both), "--ops", "IsNaN", "--ops", "IsInf", "-q")
    assert completed.returncode == 0, completed.stderr
    assert not {"IsNaN", "IsInf"} & {node.op_type for node in onnx.load(both).graph.node}
    together = tmp_path / "together.onnx"
    assert run_cli_in_process(str(EXAMPLE), "-o", str(together), "--ops", "IsNaN,IsInf", "-q").returncode == 0
    assert together.read_bytes() == both.read_bytes()
    mixed = run_cli_in_process(str(EXAMPLE), "-o", str(tmp_path / "x.onnx"), "--ops", "IsNaN", "--ops", "none")
    assert mixed.returncode == 2 and mixed.stderr.count("\n") == 1 and "'none' lowers nothing" in mixed.stderr
    assert not (tmp_path / "x.onnx").exists()


def test_help_lists_every_option():
    completed = run_cli_in_process("--help")
    assert completed.returncode == 0
    for option in ("--output", "--ops", "--quiet", "--list-rules", "--version", "--verify", "--atol", "--rtol"):
        assert option in completed.stdout


def test_list_rules_shows_versions_and_types():
    completed = run_cli_in_process("--list-rules")
    assert completed.returncode == 0
    assert "IsNaN-9/13/20" in completed.stdout and "bfloat16" in completed.stdout and "IsInf-10/20" in completed.stdout


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_INPUTS = {
    "missing file": lambda d: d / "absent.onnx",
    "empty file": lambda d: _write(d / "empty.onnx", b""),
    "random bytes": lambda d: _write(d / "random.onnx", np.random.default_rng(1).bytes(4096)),
    "truncated model": lambda d: _write(d / "truncated.onnx", EXAMPLE.read_bytes()[: len(EXAMPLE.read_bytes()) // 2]),
    "text file": lambda d: _write(d / "notes.onnx", b"this is not a model\n"),
    "directory": lambda d: d,
    "invalid model": lambda d: _write(
        d / "invalid.onnx",
        make_model(
            [helper.make_node("IsNaN", ["undefined_value"], ["y"])],
            [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N"])],
            [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
            opset=13,
        ).SerializeToString(),
    ),
}


@slow_but_a_sample()
@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_is_one_line_and_exit_2(tmp_path, kind):
    source_dir = tmp_path / "in"
    source_dir.mkdir()
    model_path = BAD_INPUTS[kind](source_dir)
    before = digest(model_path) if model_path.is_file() else None
    output = tmp_path / "out" / "lowered.onnx"
    output.parent.mkdir()
    completed = run_cli_in_process(str(model_path), "-o", str(output))
    assert completed.returncode == 2
    assert completed.stdout == ""
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx-lower: error: "), completed.stderr
    assert "Traceback" not in completed.stderr
    assert not any(output.parent.iterdir()), "nothing may be written on failure"
    if before is not None:
        assert digest(model_path) == before


@slow_but_a_sample()
@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--bogus"],
        [str(EXAMPLE)],
        [str(EXAMPLE), "-o", str(EXAMPLE)],
        [str(EXAMPLE), "-o", "x.onnx", "--ops", "Abz"],
    ],
    ids=["nothing", "unknown option", "no output", "output is input", "no such op"],
)
def test_usage_errors_are_one_line_and_exit_2(args, tmp_path):
    before = digest(EXAMPLE)
    completed = run_cli_in_process(*args, cwd=tmp_path)
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1
    assert digest(EXAMPLE) == before
    assert not (tmp_path / "x.onnx").exists()


def test_missing_output_folder_is_created(tmp_path):
    output = tmp_path / "no" / "such" / "dir" / "out.onnx"
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(output))
    assert completed.returncode == 0, completed.stderr
    assert sorted(p.name for p in output.parent.iterdir()) == ["out.onnx"]


@pytest.mark.parametrize("under", ["out.onnx", "deeper/out.onnx"])
def test_output_under_a_file_is_a_clear_error_before_any_work(tmp_path, under):
    """-o FILE/out.onnx: refused in one line before the model is read (no report printed as if
    it would be written), the file left as it was."""
    (tmp_path / "plain").write_text("not a folder")
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(tmp_path / "plain" / under))
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1
    assert f"{tmp_path / 'plain'} is not a folder" in completed.stderr and completed.stdout == ""
    assert (tmp_path / "plain").read_text() == "not a folder"


def test_external_data_is_kept_external_and_loads(tmp_path):
    weights = np.arange(4096, dtype=np.float32)
    model = make_model(
        [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("IsNaN", ["s"], ["y"])],
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4096])],
        [
            helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, [4096]),
            helper.make_tensor_value_info("s", onnx.TensorProto.FLOAT, [4096]),
        ],
        opset=13,
        initializer=[numpy_helper.from_array(weights, "w"), numpy_helper.from_array(np.float32([2.0]), "small")],
    )
    source = tmp_path / "src"
    source.mkdir()
    onnx.save(model, source / "model.onnx", save_as_external_data=True, location="weights.bin", size_threshold=1024)
    before = {p.name: digest(p) for p in source.iterdir()}
    target = tmp_path / "elsewhere"
    target.mkdir()
    completed = run_cli_in_process(str(source / "model.onnx"), "-o", str(target / "lowered.onnx"))
    assert completed.returncode == 0, completed.stderr
    assert {p.name: digest(p) for p in source.iterdir()} == before
    assert sorted(p.name for p in target.iterdir()) == ["lowered.onnx", "lowered.onnx.data"]
    header = onnx.load(target / "lowered.onnx", load_external_data=False)
    big, small = header.graph.initializer
    assert big.data_location == onnx.TensorProto.EXTERNAL and small.data_location == onnx.TensorProto.DEFAULT
    lowered = onnx.load(target / "lowered.onnx")
    np.testing.assert_array_equal(numpy_helper.to_array(lowered.graph.initializer[0]), weights)
    import onnxruntime as ort

    session = ort.InferenceSession(str(target / "lowered.onnx"), providers=["CPUExecutionProvider"])
    x = np.full(4096, np.nan, dtype=np.float32)
    x[::2] = 1.0
    y, s = session.run(None, {"x": x})
    np.testing.assert_array_equal(s, x + weights)
    np.testing.assert_array_equal(y, np.isnan(x))


def test_target_opset_and_ops_none(tmp_path):
    output = tmp_path / "at9.onnx"
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(output), "--target-opset", "9", "--ops", "none")
    assert completed.returncode == 0, completed.stderr
    lowered = onnx.load(output)
    onnx.checker.check_model(lowered, full_check=True)
    assert [entry.version for entry in lowered.opset_import if entry.domain == ""] == [9]
    op_types = {node.op_type for node in lowered.graph.node}
    assert "IsNaN" in op_types and "IsInf" not in op_types, "IsNaN exists at 9 and is kept; IsInf does not"
    assert "converted" in completed.stdout


@pytest.mark.parametrize("value", ["x", "0", "999"])
def test_bad_target_opset_is_one_line(tmp_path, value):
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(tmp_path / "out.onnx"), "--target-opset", value)
    assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.onnx").exists()


def test_plain_writes_the_same_bytes(tmp_path):
    fast, plain = tmp_path / "fast.onnx", tmp_path / "plain.onnx"
    assert main([str(EXAMPLE), "-o", str(fast), "--quiet"]) == 0
    assert main([str(EXAMPLE), "-o", str(plain), "--quiet", "--plain"]) == 0
    assert fast.read_bytes() == plain.read_bytes()


def _model_with_an_optional_input(path: Path) -> None:
    model = onnx.parser.parse_model("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) maybe, float[N] x) => (bool has, bool[N] nan) {
            has = OptionalHasElement (maybe)
            nan = IsNaN (x)
        }
    """)
    onnx.save(model, path)


def test_strict_refuses_a_partial_lowering_with_exit_1_and_writes_nothing(tmp_path, capsys):
    source, output = tmp_path / "model.onnx", tmp_path / "out.onnx"
    _model_with_an_optional_input(source)
    assert main([str(source), "-o", str(output), "--strict"]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "strict: 1 requested op left: OptionalHasElement-18" in error
    assert "optional input of graph" in error and not output.exists()
    assert main([str(source), "-o", str(output), "--quiet"]) == 0, "without --strict it is reported and kept"
    assert main([str(source), "-o", str(tmp_path / "only.onnx"), "--strict", "--ops", "IsNaN"]) == 0


def test_strict_in_the_api_raises_with_what_is_left():
    model = onnx.parser.parse_model("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) maybe) => (bool has) { has = OptionalHasElement (maybe) }
    """)
    with pytest.raises(lowering.IncompleteLowering) as raised:
        lowering.lower(model, strict=True)
    (left,) = raised.value.remaining
    assert left.op_type == "OptionalHasElement" and "only its caller decides it" in left.reason
    assert lowering.lower_model(model).report.remaining == raised.value.remaining
