"""Many models at once: ``onnx-lower a.onnx b.onnx ... -o OUTDIR/ -j N``: one line per model,
a summary, a bad model stops no other, the exit status is the highest of any."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import onnx
import onnx.parser
import pytest
from support import REPO, run_cli, run_cli_in_process, slow_but_a_sample  # noqa: E402

EXAMPLE = REPO / "examples" / "isnan_isinf.onnx"


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def models(tmp_path) -> Path:
    """a.onnx and c.onnx lower; b.onnx is not a model; partial.onnx keeps an op it cannot lower."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.onnx").write_bytes(EXAMPLE.read_bytes())
    (folder / "b.onnx").write_bytes(b"not a model at all")
    (folder / "c.onnx").write_bytes(EXAMPLE.read_bytes())
    partial = onnx.parser.parse_model("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) maybe, float[N] x) => (bool has, bool[N] nan) {
            has = OptionalHasElement (maybe)
            nan = IsNaN (x)
        }
    """)
    onnx.save(partial, folder / "partial.onnx")
    return folder


@pytest.mark.slow
def test_many_models_in_a_pool_one_bad_stops_no_other(models, tmp_path):
    before = digests(models)
    out = tmp_path / "out"
    names = ["a.onnx", "b.onnx", "c.onnx", "partial.onnx"]
    completed = run_cli(*names, "-o", "../out/", "-j", "2", cwd=models)  # worker processes
    assert completed.returncode == 2, completed.stderr
    lines = completed.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines[:3]] == ["a.onnx", "c.onnx", "partial.onnx"], "in the order given"
    assert lines[0].startswith("a.onnx → ../out/a.onnx: lowered 3, converted 0, left 0; 403 B → ")
    assert lines[2].startswith("partial.onnx → ../out/partial.onnx: lowered 1, converted 0, left 1; ")
    assert lines[-1] == "4 models: 3 written, 1 failed" and len(lines) == 4
    (error,) = completed.stderr.strip().splitlines()
    assert error.startswith("onnx-lower: error: b.onnx: not an ONNX model")
    assert sorted(p.name for p in out.iterdir()) == ["a.onnx", "c.onnx", "partial.onnx"]
    assert digests(models) == before, "the inputs are never changed"
    alone = tmp_path / "alone.onnx"
    assert run_cli_in_process(EXAMPLE, "-o", alone, "-q").returncode == 0
    assert (out / "a.onnx").read_bytes() == alone.read_bytes(), "the same bytes as one model alone"


@pytest.mark.slow
def test_exit_status_is_the_highest_of_any_model(models, tmp_path):
    strict = run_cli_in_process("a.onnx", "partial.onnx", "-o", f"{tmp_path / 'strict'}/", "--strict", cwd=models)
    assert strict.returncode == 1
    assert "partial.onnx: strict: 1 requested op left" in strict.stderr
    assert sorted(p.name for p in (tmp_path / "strict").iterdir()) == ["a.onnx"]
    worst = run_cli_in_process("partial.onnx", "b.onnx", "--dry-run", "--strict", "-q", cwd=models)
    assert worst.returncode == 2 and worst.stdout == "" and len(worst.stderr.strip().splitlines()) == 2
    good = run_cli("a.onnx", "c.onnx", "-o", f"{tmp_path / 'good'}/", "-j", "0", "-q", cwd=models)  # workers
    assert good.returncode == 0 and good.stdout == good.stderr == ""
    assert sorted(p.name for p in (tmp_path / "good").iterdir()) == ["a.onnx", "c.onnx"]


def test_json_lists_every_model_and_a_summary(models, tmp_path):
    completed = run_cli_in_process("a.onnx", "b.onnx", "--dry-run", "--json", cwd=models)
    assert completed.returncode == 2
    report = json.loads(completed.stdout)
    first, second = report["models"]
    assert first["model"] == "a.onnx" and first["lowered"] == {"IsInf-10": 2, "IsNaN-13": 1}
    assert second["exit_code"] == 2 and second["error"]["kind"] == "bad input"
    assert report["summary"] == {"models": 2, "checked": 1, "failed": 1, "exit_code": 2}
    assert not (models / "out").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_in_place_lowers_each_model_itself(models):
    completed = run_cli_in_process("a.onnx", "c.onnx", "--in-place", "-q", cwd=models)
    assert completed.returncode == 0, completed.stderr
    for name in ("a.onnx", "c.onnx"):
        assert "IsNaN" not in {node.op_type for node in onnx.load(models / name).graph.node}
    assert sorted(p.name for p in models.iterdir()) == ["a.onnx", "b.onnx", "c.onnx", "partial.onnx"]


@slow_but_a_sample()
@pytest.mark.parametrize(
    "args, words",
    [
        (["a.onnx", "c.onnx"], "no output given for several models"),
        (["a.onnx", "c.onnx", "-o", "out.onnx"], "with several models -o names a folder"),
        (["a.onnx", "../in/a.onnx", "-o", "../out/"], "given twice"),
        (["a.onnx", "sub/a.onnx", "-o", "../out/"], "would both be written to ../out/a.onnx"),
        (["a.onnx", "c.onnx", "-o", "./"], "would overwrite the input model"),
        (["a.onnx", "c.onnx", "-o", "../out/", "-j", "-1"], "--jobs"),
    ],
    ids=["no output", "output a file", "twice", "same name", "output is an input", "bad jobs"],
)
def test_batch_usage_errors_write_nothing(models, tmp_path, args, words):
    (models / "sub").mkdir()
    (models / "sub" / "a.onnx").write_bytes(EXAMPLE.read_bytes())
    before = digests(models)
    completed = run_cli_in_process(*args, cwd=models)
    assert completed.returncode == 2 and completed.stdout == ""
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("onnx-lower: error: ") and words in line, line
    assert digests(models) == before and not (tmp_path / "out").exists()


def test_one_model_into_a_folder_keeps_its_name(tmp_path):
    folder = tmp_path / "lowered"
    folder.mkdir()
    completed = run_cli_in_process(EXAMPLE, "-o", folder, "-q")
    assert completed.returncode == 0, completed.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["isnan_isinf.onnx"]
    created = run_cli_in_process(EXAMPLE, "-o", f"{tmp_path / 'new'}/")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines()[-1].startswith(f"wrote {tmp_path / 'new' / 'isnan_isinf.onnx'} (")
    assert "Model size" in created.stdout, "one model: the table, as without a folder"
