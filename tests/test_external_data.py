"""External data: never pulled into memory, written beside the output, refused when it
points outside the model's folder; a model over 2 GiB."""

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
from onnx import helper, numpy_helper
from support import run_cli_in_process  # noqa: E402

import lowering


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def external_model(folder: Path, element_count: int, *, location: str = "weights.bin", sparse: bool = False) -> Path:
    """``y = IsNaN(x + w)`` with ``w`` (float32[element_count]) stored in ``location``.
    ``sparse``: the data file is made by truncate (holes, no memory, fast), with a marker at the end."""
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[element_count])
    weight.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(4 * element_count))):
        weight.external_data.add(key=key, value=value)
    data = folder / location
    data.parent.mkdir(parents=True, exist_ok=True)
    if sparse:
        with open(data, "wb") as handle:
            handle.truncate(4 * element_count)
            handle.seek(4 * element_count - 4)
            handle.write(np.float32(7.5).tobytes())
    else:
        np.arange(element_count, dtype=np.float32).tofile(data)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("IsNaN", ["s"], ["y"])],
        "main",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [element_count])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, [element_count])],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def peak_rss_mib(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run the command line in a child and return its peak resident memory."""
    wrapper = (
        "import resource, subprocess, sys; "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(done.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.stderr.write(done.stderr)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "lowering", *args], capture_output=True, text=True
    )
    code, peak_kib = completed.stdout.split()
    completed.returncode = int(code)
    return completed, int(peak_kib) / 1024


def test_lowered_into_another_folder_runs_with_the_right_weights(tmp_path):
    source = external_model(tmp_path / "src", 1024)
    before = {p.name: digest(p) for p in source.parent.iterdir()}
    output = tmp_path / "elsewhere" / "lowered.onnx"
    output.parent.mkdir()
    completed = run_cli_in_process(str(source), "-o", str(output))
    assert completed.returncode == 0, completed.stderr
    assert {p.name: digest(p) for p in source.parent.iterdir()} == before
    assert sorted(p.name for p in output.parent.iterdir()) == ["lowered.onnx", "lowered.onnx.data"]
    header = onnx.load(output, load_external_data=False)
    assert header.graph.initializer[0].data_location == onnx.TensorProto.EXTERNAL
    import onnxruntime as ort

    session = ort.InferenceSession(str(output), providers=["CPUExecutionProvider"])
    x = np.full(1024, -np.arange(1024, dtype=np.float32))
    x[::3] = np.nan
    (y,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.isnan(x + np.arange(1024, dtype=np.float32)))
    loaded = onnx.load(output)
    np.testing.assert_array_equal(numpy_helper.to_array(loaded.graph.initializer[0]), np.arange(1024, dtype=np.float32))


def test_lower_verify_with_external_data(tmp_path):
    source = external_model(tmp_path, 256)
    completed = run_cli_in_process(str(source), "-o", str(tmp_path / "out.onnx"), "--verify")
    assert completed.returncode == 0, completed.stderr
    assert "MATCH" in completed.stdout
    verified = run_cli_in_process("verify", str(source), str(tmp_path / "out.onnx"))
    assert verified.returncode == 0, verified.stderr + verified.stdout


@pytest.mark.slow
def test_256_mib_of_weights_lower_in_under_200_mib(tmp_path):
    source = external_model(tmp_path / "src", 64 << 20)  # 256 MiB of float32
    completed, peak = peak_rss_mib(str(source), "-o", str(tmp_path / "out" / "lowered.onnx"))
    assert not completed.returncode, completed.stderr
    assert (tmp_path / "out" / "lowered.onnx.data").stat().st_size == 256 << 20
    assert peak < 200, f"peak resident memory {peak:.0f} MiB"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="needs sparse files")
def test_a_model_over_2_gib(tmp_path):
    count = (2 << 30) // 4 + 1024  # just over 2 GiB of float32
    source = external_model(tmp_path / "src", count, sparse=True)
    output = tmp_path / "out" / "lowered.onnx"
    output.parent.mkdir()
    try:
        result = lowering.lower_model(onnx.load(source, load_external_data=False))
        assert result.report.rewritten == {"IsNaN-13": 1}
        completed = run_cli_in_process(str(source), "-o", str(output))
        assert completed.returncode == 0, completed.stderr
        data = output.with_name("lowered.onnx.data")
        assert data.stat().st_size == 4 * count
        with open(data, "rb") as handle:
            handle.seek(4 * count - 4)
            assert np.frombuffer(handle.read(4), np.float32)[0] == 7.5
        header = onnx.load(output, load_external_data=False)
        assert {e.key: e.value for e in header.graph.initializer[0].external_data}["length"] == str(4 * count)
        assert "IsNaN" not in {n.op_type for n in header.graph.node}
    finally:
        for path in (output.with_name("lowered.onnx.data"), tmp_path / "src" / "weights.bin"):
            if path.exists():
                path.unlink()


@pytest.mark.parametrize("kind", ["parent folder", "absolute path", "symbolic link out"])
def test_external_data_leaving_the_folder_is_refused(tmp_path, kind):
    outside = tmp_path / "outside"
    outside.mkdir()
    np.arange(16, dtype=np.float32).tofile(outside / "secret.bin")
    folder = tmp_path / "model"
    folder.mkdir()
    if kind == "parent folder":
        location = "../outside/secret.bin"
    elif kind == "absolute path":
        location = str(outside / "secret.bin")
    else:
        os.symlink(outside / "secret.bin", folder / "link.bin")
        location = "link.bin"
    weight = onnx.TensorProto(name="w", data_type=onnx.TensorProto.FLOAT, dims=[16])
    weight.data_location = onnx.TensorProto.EXTERNAL
    weight.external_data.add(key="location", value=location)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "main",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [16])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [16])],
        initializer=[weight],
    )
    (folder / "model.onnx").write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    )
    completed = run_cli_in_process(str(folder / "model.onnx"), "-o", str(tmp_path / "out.onnx"))
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1
    assert "refused" in completed.stderr or "outside" in completed.stderr
    assert not (tmp_path / "out.onnx").exists()


def test_external_tensors_are_found_wherever_they_are_and_only_those(tmp_path):
    """The model's bytes rule out external data quickly; where they might hold some, every
    tensor is looked at: initializers, and tensors of Constant nodes inside subgraphs."""
    from lowering.modelio import external_tensors

    model = onnx.load(external_model(tmp_path, 4), load_external_data=False)
    assert [t.name for t in external_tensors(model)] == ["w"]

    inner = onnx.TensorProto(
        name="k", data_type=onnx.TensorProto.FLOAT, dims=[1], data_location=onnx.TensorProto.EXTERNAL
    )
    inner.external_data.add(key="location", value="k.bin")
    branch = helper.make_graph([helper.make_node("Constant", [], ["k"], value=inner)], "b", [], [
        helper.make_tensor_value_info("k", onnx.TensorProto.FLOAT, [1])])  # fmt: skip
    nested = helper.make_model(
        helper.make_graph(
            [helper.make_node("If", ["c"], ["k_out"], then_branch=branch, else_branch=branch)],
            "g",
            [helper.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
            [helper.make_tensor_value_info("k_out", onnx.TensorProto.FLOAT, [1])],
        )
    )
    assert [t.name for t in external_tensors(nested)] == ["k", "k"]

    inline = helper.make_model(
        helper.make_graph([], "g", [], [], initializer=[numpy_helper.from_array(np.zeros(1, np.float32), "z")]),
        doc_string="p\x01 holds the bytes of data_location: EXTERNAL",
    )
    assert external_tensors(inline) == []  # the bytes alone do not decide it


def test_a_graph_past_the_copy_limit_is_still_ruled_out_by_its_bytes(tmp_path, monkeypatch):
    """Only weights decide whether the model is copied to bytes to be searched: a graph whose
    nodes alone pass the limit (a large export with small weights) is not walked tensor by
    tensor; the file's bytes as read serve where the reader has them."""
    from lowering import modelio

    monkeypatch.setattr(modelio, "WHOLE_MODEL_LIMIT_BYTES", 256)
    path = external_model(tmp_path, 4)
    model = onnx.load(path, load_external_data=False)
    model.graph.node.extend(helper.make_node("Identity", ["y"], [f"copy{k}"]) for k in range(40))
    inline = onnx.ModelProto()
    inline.CopyFrom(model)
    del inline.graph.initializer[:]
    inline.graph.initializer.append(numpy_helper.from_array(np.zeros(4, np.float32), "w"))
    assert model.ByteSize() > modelio.WHOLE_MODEL_LIMIT_BYTES and modelio.weights_fit_in_a_copy(model)
    assert [t.name for t in modelio.external_tensors(model)] == ["w"]
    assert modelio.external_tensors(inline) == []
    assert modelio.external_tensors(inline, inline.SerializeToString()) == []
    assert [t.name for t in modelio.external_tensors(model, model.SerializeToString())] == ["w"]
    read = modelio.load_model(path)
    assert read.has_external_data and read.data is None  # bytes that point elsewhere are not the model's


def test_external_data_is_found_in_a_file_whose_varints_are_padded(tmp_path):
    """A file's bytes as read may encode data_location: EXTERNAL with a padded varint (parsers
    take it): the weights are still found outside, verified and written beside the output."""
    padded = b"\x70\x81\x00"
    from lowering.modelio import load_model

    def field(tag: bytes, payload: bytes) -> bytes:  # one length-delimited field
        return tag + _varint(len(payload)) + payload

    path = external_model(tmp_path, 4)
    model = onnx.load(path, load_external_data=False)
    (weight,) = model.graph.initializer
    weight_bytes = weight.SerializeToString()
    assert weight_bytes.count(b"\x70\x01") == 1
    graph, shell = onnx.GraphProto(), onnx.ModelProto()
    graph.CopyFrom(model.graph)
    del graph.initializer[:]
    shell.CopyFrom(model)
    shell.ClearField("graph")
    initializer_tag, graph_tag = b"\x2a", b"\x3a"  # GraphProto.initializer (5), ModelProto.graph (7)
    graph_bytes = graph.SerializeToString() + field(initializer_tag, weight_bytes.replace(b"\x70\x01", padded))
    path.write_bytes(shell.SerializeToString() + field(graph_tag, graph_bytes))
    assert onnx.load(path, load_external_data=False) == model

    assert load_model(path).has_external_data
    out = tmp_path / "out" / "lowered.onnx"
    completed = run_cli_in_process(path, "-o", out, "--verify")
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "out" / "lowered.onnx.data").exists()


ENCODINGS = [b"\x70\x01", b"\x70\x81\x00", b"\x70\x81\x80\x80\x00", b"\xf0\x00\x01", b"\xf0\x80\x00\x81\x00"]
NEAR_MISSES = [b"\x70\x02", b"\xf0\x01", b"\x70\x81\x01", b"\xf0" + b"\x80" * 9 + b"\x00\x01", b"\x70\x81"]


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [3, 7, 1 << 23])
def test_the_scan_for_data_location_finds_what_the_patterns_search_finds(chunk, monkeypatch):
    """Every encoding of data_location: EXTERNAL (plain, either varint padded), none of the near
    misses, wherever they sit (across the scan's chunks too), in random bytes and in bytes made
    of the pattern's own bytes: the scan says what the regular expression's search says."""
    import random

    import lowering.modelio as modelio

    monkeypatch.setattr(modelio, "_SCAN_CHUNK", chunk)
    rng = random.Random(13)
    found = 0
    for trial in range(3000):
        alphabet = bytes(range(256)) if trial % 2 else b"\x70\xf0\x00\x01\x80\x81\x02"
        data = bytearray(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 2, 5, 40, 300])))
        if trial % 3 == 0:
            at = rng.randint(0, len(data))
            data[at:at] = rng.choice(ENCODINGS + NEAR_MISSES)
        expected = modelio._EXTERNAL_LOCATION.search(bytes(data)) is not None
        assert modelio.holds_external_location(bytes(data)) == expected, bytes(data)
        found += expected
    assert 100 < found < 2900  # both answers were asked for many times
    for encoding in ENCODINGS:
        assert modelio.holds_external_location(b"\x02" * 50 + encoding + b"\x02" * 50)
    for near_miss in NEAR_MISSES:
        assert not modelio.holds_external_location(b"\x02" * 50 + near_miss + b"\x02" * 50)


def test_symbolic_link_output_puts_the_data_beside_the_target(tmp_path):
    """-o LINK writes what -o TARGET would: the model into the target, its data beside the target
    and named after it, so that the target loads with its weights; the link stays a link."""
    source = external_model(tmp_path / "src", 1024)
    (tmp_path / "store").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "store" / "v3.onnx"
    link = tmp_path / "links" / "latest.onnx"
    link.symlink_to(target)
    completed = run_cli_in_process(str(source), "-o", str(link), "-q")
    assert completed.returncode == 0, completed.stderr
    assert link.is_symlink() and sorted(p.name for p in (tmp_path / "links").iterdir()) == ["latest.onnx"]
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == ["v3.onnx", "v3.onnx.data"]
    loaded = onnx.load(target)
    np.testing.assert_array_equal(numpy_helper.to_array(loaded.graph.initializer[0]), np.arange(1024, dtype=np.float32))


def test_data_file_that_is_a_link_is_refused_and_kept(tmp_path):
    """onnx refuses external data read through a link, so OUTPUT.data is not written through
    one; nor is the link replaced by a file."""
    source = external_model(tmp_path / "src", 64)
    (tmp_path / "out").mkdir()
    (tmp_path / "big").mkdir()
    data_target = tmp_path / "big" / "weights.data"
    data_target.write_bytes(b"old")
    (tmp_path / "out" / "m.onnx.data").symlink_to(data_target)
    completed = run_cli_in_process(str(source), "-o", str(tmp_path / "out" / "m.onnx"))
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1 and "symbolic link" in completed.stderr
    assert (tmp_path / "out" / "m.onnx.data").is_symlink() and data_target.read_bytes() == b"old"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["m.onnx.data"]


def test_external_data_into_a_fifo_is_refused_before_anything_is_written(tmp_path):
    source = external_model(tmp_path / "src", 64)
    fifo = tmp_path / "out" / "pipe"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    completed = run_cli_in_process(str(source), "-o", str(fifo))
    assert completed.returncode == 2
    assert len(completed.stderr.strip().splitlines()) == 1 and "external data" in completed.stderr
    assert sorted(p.name for p in fifo.parent.iterdir()) == ["pipe"] and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_output_data_file_never_replaces_the_input_model(tmp_path):
    """A model read from OUT.data, written to OUT: its weights would go over the model read."""
    model = external_model(tmp_path, 16)
    source = model.rename(tmp_path / "out.onnx.data")
    before = digest(source)
    completed = run_cli_in_process(str(source), "-o", str(tmp_path / "out.onnx"))
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1, completed.stderr
    assert "would overwrite the input model" in completed.stderr
    assert digest(source) == before and not (tmp_path / "out.onnx").exists()


@pytest.mark.parametrize("output_name", ["weights.bin", "./weights.bin"])
def test_the_output_never_replaces_a_file_the_input_keeps_its_weights_in(tmp_path, output_name):
    """-o naming the input's own external data file: the model written there would destroy the
    input's weights; refused in one line before anything is written, every input file as it was."""
    source = external_model(tmp_path, 64)
    before = {p.name: digest(p) for p in tmp_path.iterdir()}
    completed = run_cli_in_process(str(source), "-o", str(tmp_path / output_name), "-q")
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1, completed.stderr
    assert "keeps its weights in" in completed.stderr and "Traceback" not in completed.stderr
    assert {p.name: digest(p) for p in tmp_path.iterdir()} == before
    loaded = onnx.load(source)
    np.testing.assert_array_equal(numpy_helper.to_array(loaded.graph.initializer[0]), np.arange(64, dtype=np.float32))


def _varint(number: int) -> bytes:
    """Protobuf's base-128 varint of a non-negative ``number``."""
    out = bytearray()
    while number >= 128:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


@pytest.mark.parametrize("layout", ["data, hole, data", "hole, data", "data, hole", "no holes"])
def test_external_data_is_copied_byte_for_byte_holes_and_all(tmp_path, layout):
    """The copy skips a sparse file's holes (the kernel reads nothing there) and copies its data
    regions: the output holds the very bytes, the tensor read back equal."""
    count = 1 << 20  # 4 MiB of float32
    source = external_model(tmp_path / "src", count)
    data = source.parent / "weights.bin"
    values = np.arange(count, dtype=np.float32)
    with open(data, "wb") as handle:
        handle.truncate(4 * count)
        for start, end in {
            "data, hole, data": [(0, 1000), (count - 1000, count)],
            "hole, data": [(count // 2, count // 2 + 5)],
            "data, hole": [(0, 7)],
            "no holes": [(0, count)],
        }[layout]:
            handle.seek(4 * start)
            handle.write(values[start:end].tobytes())
    output = tmp_path / "out" / "lowered.onnx"
    output.parent.mkdir()
    completed = run_cli_in_process(str(source), "-o", str(output))
    assert completed.returncode == 0, completed.stderr
    assert output.with_name("lowered.onnx.data").read_bytes() == data.read_bytes()
    np.testing.assert_array_equal(
        numpy_helper.to_array(onnx.load(output).graph.initializer[0]), np.fromfile(data, np.float32)
    )


def test_external_data_that_ends_early_is_refused_and_nothing_is_written(tmp_path):
    source = external_model(tmp_path / "src", 1024)
    data = source.parent / "weights.bin"
    with open(data, "r+b") as handle:
        handle.truncate(4 * 1000)
    output = tmp_path / "out" / "lowered.onnx"
    output.parent.mkdir()
    completed = run_cli_in_process(str(source), "-o", str(output))
    assert completed.returncode == 2, completed.stderr
    assert "tensor 'w' reads past the end of 'weights.bin'" in completed.stderr
    assert list(output.parent.iterdir()) == []
