"""Invalid and hostile models: a LoweringError from Python; from the command line one clear
line, exit status 2, no traceback, no output file, the input untouched."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper
from support import run_cli_in_process, slow_but_a_sample  # noqa: E402

import lowering

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "isnan_isinf.onnx"
F32, BOOL = onnx.TensorProto.FLOAT, onnx.TensorProto.BOOL


def model_of(nodes, *, opset: int = 13, inputs=None, outputs=None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "main",
        inputs or [helper.make_tensor_value_info("x", F32, ["N"])],
        outputs or [helper.make_tensor_value_info("y", BOOL, ["N"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


HOSTILE_MODELS = {
    "value defined twice": lambda: model_of(
        [helper.make_node("IsNaN", ["x"], ["y"]), helper.make_node("IsInf", ["x"], ["y"])]
    ),
    "input never defined": lambda: model_of([helper.make_node("IsNaN", ["ghost"], ["y"])]),
    "cycle": lambda: model_of(
        [
            helper.make_node("Or", ["b", "y"], ["a"]),
            helper.make_node("Not", ["a"], ["b"]),
            helper.make_node("IsNaN", ["x"], ["y"]),
        ]
    ),
    "opset newer than onnx knows": lambda: model_of([helper.make_node("IsNaN", ["x"], ["y"])], opset=99),
    "attribute the op does not have": lambda: model_of([helper.make_node("IsInf", ["x"], ["y"], detect_nan=1)]),
    "wrong attribute type": lambda: model_of([helper.make_node("IsInf", ["x"], ["y"], detect_negative=0.5)]),
    "no graph outputs produced": lambda: model_of([helper.make_node("IsNaN", ["x"], ["z"])]),
    "node with no op type": lambda: model_of([helper.make_node("", ["x"], ["y"])]),
    "subgraph reading an undefined value": lambda: model_of(
        [
            helper.make_node(
                "If",
                ["c"],
                ["y"],
                then_branch=helper.make_graph(
                    [helper.make_node("IsNaN", ["nowhere"], ["t"])],
                    "t",
                    [],
                    [helper.make_tensor_value_info("t", BOOL, ["N"])],
                ),
                else_branch=helper.make_graph(
                    [helper.make_node("IsNaN", ["x"], ["e"])],
                    "e",
                    [],
                    [helper.make_tensor_value_info("e", BOOL, ["N"])],
                ),
            )
        ],
        inputs=[helper.make_tensor_value_info("x", F32, ["N"]), helper.make_tensor_value_info("c", BOOL, [])],
    ),
}


@slow_but_a_sample()
@pytest.mark.parametrize("kind", sorted(HOSTILE_MODELS))
def test_hostile_model_is_a_lowering_error(kind):
    model = HOSTILE_MODELS[kind]()
    before = model.SerializeToString()
    with pytest.raises(lowering.LoweringError) as raised:
        lowering.lower(model)
    assert str(raised.value).strip() and "\n" not in str(raised.value)
    assert model.SerializeToString() == before


def _bytes_of(kind: str, folder: Path) -> Path:
    example = EXAMPLE.read_bytes()
    path = folder / "model.onnx"
    if kind in HOSTILE_MODELS:
        path.write_bytes(HOSTILE_MODELS[kind]().SerializeToString())
    elif kind == "random bytes":
        path.write_bytes(np.random.default_rng(7).bytes(10_000))
    elif kind == "truncated file":
        path.write_bytes(example[: len(example) * 2 // 3])
    elif kind == "empty file":
        path.write_bytes(b"")
    elif kind == "directory":
        path.mkdir()
    elif kind == "protobuf of another kind":
        path.write_bytes(helper.make_tensor("t", F32, [2], [1.0, 2.0]).SerializeToString())
    return path


FILE_KINDS = sorted(HOSTILE_MODELS) + [
    "random bytes",
    "truncated file",
    "empty file",
    "directory",
    "protobuf of another kind",
]


@slow_but_a_sample()
@pytest.mark.parametrize("kind", FILE_KINDS)
def test_hostile_file_on_the_command_line(tmp_path, kind):
    source = tmp_path / "in"
    source.mkdir()
    path = _bytes_of(kind, source)
    before = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    output = tmp_path / "out" / "lowered.onnx"
    completed = run_cli_in_process(str(path), "-o", str(output))
    assert completed.returncode == 2, completed.stdout + completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("onnx-lower: error: ") and "Traceback" not in completed.stderr
    assert not output.exists() and not (output.parent.exists() and any(output.parent.iterdir()))
    if before is not None:
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_read_only_destination_is_a_clear_error(tmp_path):
    completed = run_cli_in_process(str(EXAMPLE), "-o", "/proc/lowered.onnx")
    assert completed.returncode == 2
    assert "cannot" in completed.stderr and len(completed.stderr.strip().splitlines()) == 1


def test_in_place_replaces_the_model_atomically(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(EXAMPLE.read_bytes())
    completed = run_cli_in_process(str(model), "--in-place", "-q")
    assert completed.returncode == 0, completed.stderr
    assert "IsNaN" not in {n.op_type for n in onnx.load(model).graph.node}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]
    refused = run_cli_in_process(str(model), "-o", str(model))
    assert refused.returncode == 2 and "--in-place" in refused.stderr


@pytest.mark.slow
def test_command_line_output_is_byte_identical_across_runs_and_hash_seeds(tmp_path):
    digests = set()
    for seed in ("0", "1", "4242"):
        output = tmp_path / f"out{seed}.onnx"
        completed = subprocess.run(
            [sys.executable, "-m", "lowering", str(EXAMPLE), "-o", str(output), "-q"],
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert completed.returncode == 0, completed.stderr
        digests.add(hashlib.sha256(output.read_bytes()).hexdigest())
    assert len(digests) == 1


FUNCTION_HOSTILE = {
    "function reads an undefined value": [helper.make_node("IsNaN", ["ghost"], ["r"])],
    "function defines a value twice": [
        helper.make_node("IsNaN", ["v"], ["r"]),
        helper.make_node("IsInf", ["v"], ["r"]),
    ],
    "function node with an unknown attribute": [helper.make_node("IsInf", ["v"], ["r"], detect_nan=1)],
    "function node with a wrong attribute type": [helper.make_node("IsInf", ["v"], ["r"], detect_negative="yes")],
}


@slow_but_a_sample()
@pytest.mark.parametrize("kind", sorted(FUNCTION_HOSTILE))
def test_hostile_local_function_is_a_lowering_error(kind):
    function = helper.make_function("local", "F", ["v"], ["r"], FUNCTION_HOSTILE[kind], [helper.make_opsetid("", 18)])
    graph = helper.make_graph(
        [helper.make_node("F", ["x"], ["y"], domain="local")],
        "main",
        [helper.make_tensor_value_info("x", F32, ["N"])],
        [helper.make_tensor_value_info("y", BOOL, ["N"])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)], functions=[function]
    )
    model.ir_version = 9
    with pytest.raises(lowering.LoweringError, match="not valid ONNX"):
        lowering.lower(model)


def test_input_type_the_op_does_not_take_exits_2(tmp_path):
    model = model_of([helper.make_node("IsNaN", ["x"], ["y"], name="bad")],
                     inputs=[helper.make_tensor_value_info("x", onnx.TensorProto.INT32, ["N"])])  # fmt: skip
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    completed = run_cli_in_process(str(path), "-o", str(tmp_path / "out.onnx"))
    assert completed.returncode == 2 and "node 'bad'" in completed.stderr and not (tmp_path / "out.onnx").exists()


# -- what -o names: links, FIFOs, devices -------------------------------------------------------


def lowered_bytes(tmp_path: Path) -> bytes:
    """What -o writes to a plain new file: the reference for every other kind of destination."""
    reference = tmp_path / "reference" / "plain.onnx"
    assert run_cli_in_process(str(EXAMPLE), "-o", str(reference), "-q").returncode == 0
    return reference.read_bytes()


def test_output_through_a_symbolic_link_writes_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "real" / "model.onnx"
    target.write_bytes(b"old contents")
    target.chmod(0o640)
    link = tmp_path / "links" / "latest.onnx"
    link.symlink_to(Path("..") / "real" / "model.onnx")
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(link), "-q")
    assert completed.returncode == 0, completed.stderr
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "real", "model.onnx")
    assert target.read_bytes() == lowered_bytes(tmp_path)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640, "the replaced file keeps its permission bits"
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["model.onnx"]
    assert sorted(p.name for p in (tmp_path / "links").iterdir()) == ["latest.onnx"]


def test_in_place_on_a_symbolic_link_writes_the_target(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(EXAMPLE.read_bytes())
    link = tmp_path / "link.onnx"
    link.symlink_to("model.onnx")
    completed = run_cli_in_process(str(link), "--in-place", "-q")
    assert completed.returncode == 0, completed.stderr
    assert link.is_symlink()
    assert "IsNaN" not in {n.op_type for n in onnx.load(target).graph.node}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.onnx", "model.onnx"]


def test_output_to_a_fifo_streams_the_model_into_it(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # open first, so the writer never waits
    try:
        completed = run_cli_in_process(str(EXAMPLE), "-o", str(fifo), "-q")
        received = b""
        while chunk := _read_some(reader):
            received += chunk
    finally:
        os.close(reader)
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO stays a FIFO"
    assert received == lowered_bytes(tmp_path), "the model fits the pipe's buffer, all of it read back"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "reference") == ["pipe"], "no temporary file"


def _read_some(descriptor: int) -> bytes:
    try:
        return os.read(descriptor, 1 << 16)
    except BlockingIOError:
        return b""


def test_output_to_a_device_writes_into_it(tmp_path):
    """A private copy of /dev/null (needs root to make); the real one as any user when writable."""
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot make a device node here")
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(device), "-q")
    assert completed.returncode == 0, completed.stderr
    assert stat.S_ISCHR(os.lstat(device).st_mode), "the device stays a device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]


def test_output_through_a_loop_of_links_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    completed = run_cli_in_process(str(EXAMPLE), "-o", str(tmp_path / "a"))
    assert completed.returncode == 2, completed.stderr
    assert len(completed.stderr.strip().splitlines()) == 1 and "symbolic link" in completed.stderr
    assert all(p.is_symlink() for p in tmp_path.iterdir())


def test_replacing_a_regular_output_keeps_its_permission_bits(tmp_path):
    output = tmp_path / "out.onnx"
    output.write_bytes(b"old")
    output.chmod(0o604)
    assert run_cli_in_process(str(EXAMPLE), "-o", str(output), "-q").returncode == 0
    assert stat.S_IMODE(output.stat().st_mode) == 0o604 and output.read_bytes() != b"old"


@pytest.mark.parametrize("which", ["original", "lowered"])
def test_saved_inputs_never_replace_a_model_being_compared(tmp_path, capsys, which):
    from support import unary_model

    from lowering.cli import main

    original, lowered = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(unary_model("IsNaN", 13, onnx.TensorProto.FLOAT), original)
    onnx.save(unary_model("IsInf", 13, onnx.TensorProto.FLOAT), lowered)
    before = {path: path.read_bytes() for path in (original, lowered)}
    target = original if which == "original" else lowered
    assert main(["verify", str(original), str(lowered), "--save-inputs", str(target)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "would overwrite the model" in error
    assert {path: path.read_bytes() for path in (original, lowered)} == before
