"""``onnx-lower check MODEL --target NAME``, ``--target NAME`` and ``--list-targets``."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import make_model, run_cli_in_process, runs_in_onnxruntime

from lowering.runtime_profiles import profile_names


def write(model: onnx.ModelProto, path) -> str:
    onnx.save(model, path)
    return str(path)


def isnan_model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.BOOL, [4])
    return make_model([helper.make_node("IsNaN", ["x"], ["y"], name="nan")], [x], [y], opset=20)


def custom_op_model() -> onnx.ModelProto:
    """Two nodes of a domain no profile knows, around an Abs."""
    nodes = [
        helper.make_node("Scramble", ["x"], ["a"], name="first", domain="example.custom"),
        helper.make_node("Abs", ["a"], ["b"], name="abs"),
        helper.make_node("Scramble", ["b"], ["y"], name="second", domain="example.custom"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], opset=17)
    model.opset_import.append(helper.make_opsetid("example.custom", 1))
    return model


def test_list_targets_names_every_profile_and_its_source():
    result = run_cli_in_process("--list-targets")
    assert result.returncode == 0
    assert [line.split()[0] for line in result.stdout.splitlines()] == list(profile_names())
    listed = json.loads(run_cli_in_process("--list-targets", "--json").stdout)
    assert all(entry["source"]["kind"] == "probed" and entry["opsets"] for entry in listed
               if entry["source"]["kind"] != "table")  # fmt: skip
    tables = {entry["name"]: entry["source"] for entry in listed if entry["source"]["kind"] == "table"}
    assert "tensorrt-10" in tables
    assert all(len(source["commit"]) == 40 and source["repo"] and source["path"] for source in tables.values())


def test_check_of_a_model_that_fits_exits_0(tmp_path):
    result = run_cli_in_process("check", write(isnan_model(), tmp_path / "m.onnx"), "--target", "onnxruntime")
    assert result.returncode == 0, result.stderr
    assert "0 blockers" in result.stdout


@pytest.mark.parametrize("to", ["INT4", "UINT4", "INT2", "UINT2"])
def test_a_float_cast_to_a_4_or_2_bit_integer_fits_onnxruntime(tmp_path, to):
    """The backend's case expects 0 for a float out of the type's range, where Cast's spec says
    undefined and onnxruntime wraps: the probe judges the defined elements only."""
    element_type = getattr(onnx.TensorProto, to)
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Cast", ["x"], ["y"], to=element_type)],
        "cast",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [5])],
        [onnx.helper.make_tensor_value_info("y", element_type, [5])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 25)])
    result = run_cli_in_process("check", write(model, tmp_path / "m.onnx"), "--target", "onnxruntime")
    assert result.returncode == 0 and "0 blockers" in result.stdout, result.stdout


def test_check_lists_every_blocker_and_exits_1(tmp_path):
    path = write(custom_op_model(), tmp_path / "m.onnx")
    result = run_cli_in_process("check", path, "--target", "onnxruntime")
    assert result.returncode == 1
    assert "2 blockers (0 with a fix" in result.stdout
    assert "Scramble at graph 'main', node 'first'" in result.stdout and "node 'second'" in result.stdout
    found = json.loads(run_cli_in_process("check", path, "--target", "onnxruntime", "--json").stdout)
    assert not found["fits"] and [b["node"] for b in found["blockers"]] == ["first", "second"]


def test_check_names_an_unknown_target_in_one_line(tmp_path):
    result = run_cli_in_process("check", write(isnan_model(), tmp_path / "m.onnx"), "--target", "nowhere")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "no target called 'nowhere'" in result.stderr


def test_lowering_for_a_target_writes_a_model_that_runs_there(tmp_path):
    source, output = write(isnan_model(), tmp_path / "m.onnx"), tmp_path / "out.onnx"
    result = run_cli_in_process(source, "-o", str(output), "--target", "onnxruntime")
    assert result.returncode == 0, result.stderr
    x = np.array([np.nan, -np.inf, 0.0, 1.0], np.float32)
    assert runs_in_onnxruntime(onnx.load(output), {"x": x})[0].tolist() == [True, False, False, False]


def test_a_target_that_cannot_be_met_writes_nothing_and_lists_every_node(tmp_path):
    source, output = write(custom_op_model(), tmp_path / "m.onnx"), tmp_path / "out.onnx"
    result = run_cli_in_process(source, "-o", str(output), "--target", "onnxruntime")
    assert result.returncode == 4 and not output.exists()
    assert "2 nodes cannot go to target onnxruntime" in result.stderr
    assert "node 'first'" in result.stderr and "node 'second'" in result.stderr


def test_check_refuses_a_model_onnx_refuses_in_one_line(tmp_path):
    """A model importing an opset this onnx does not know, or none for its default-domain
    nodes, is bad input (exit 2), as lowering it is: not an opset to convert."""
    relu = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [relu], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )  # fmt: skip
    newer = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 99)], ir_version=10)
    unimported = helper.make_model(graph, opset_imports=[helper.make_opsetid("com.x", 1)], ir_version=10)
    for model, said in ((newer, "imports opset 99 of the default domain"), (unimported, "No opset import for domain")):
        completed = run_cli_in_process("check", write(model, tmp_path / "m.onnx"), "--target", "tract-0.23")
        assert completed.returncode == 2 and said in completed.stderr and "Traceback" not in completed.stderr


def test_check_names_only_the_fixes_target_makes(tmp_path):
    """BitCast has a pattern, which takes no float to an integer (it is no Cast): check runs
    --target to confirm each fix, so the BitCast node is named with no fix and --target's words,
    while the opset and IR version keep theirs; --json says the same."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [3])
    model = make_model([helper.make_node("BitCast", ["x"], ["y"], name="bits", to=TensorProto.INT32)], [x], [y],
                       opset=26)  # fmt: skip
    model.ir_version = 13
    path = write(model, tmp_path / "bitcast.onnx")
    result = run_cli_in_process("check", path, "--target", "onnxruntime-cuda")
    assert result.returncode == 1
    [line] = [line for line in result.stdout.splitlines() if "BitCast" in line]
    assert "--target: " in line and "reinterprets bits no Cast keeps" in line and "(no pattern lowers it)" in line
    assert "3 blockers (2 with a fix" in result.stdout
    report = json.loads(run_cli_in_process("check", path, "--target", "onnxruntime-cuda", "--json").stdout)
    assert [(b["op_type"], b["fix"]) for b in report["blockers"]] == [
        ("(opset)", "converted to opset 23"),
        ("(IR version)", "IR version 11 declared"),
        ("BitCast", None),
    ]


def test_check_takes_the_input_shapes_and_retyping_target_would_be_given(tmp_path):
    """check judges the model as --target would see it given --input-shape (its inputs static
    first: rknn fails a Shape of a fed value, which --target then folds), runs --target with
    --retype and --retype-io to confirm the fixes, and names them in the command it offers; a bad
    one is refused in one line."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"), helper.make_node("Reshape", ["x", "s"], ["y"])]
    path = write(make_model(nodes, [x], [y], opset=17), tmp_path / "dynamic.onnx")
    dynamic = run_cli_in_process("check", path, "--target", "rknn")
    assert (
        dynamic.returncode == 1 and "1 blocker (0 with a fix: onnx-lower MODEL -o OUT --target rknn)" in dynamic.stdout
    )
    static = run_cli_in_process("check", path, "--target", "rknn", "--input-shape", "n=2", "--retype-io")
    assert static.returncode == 1, static.stderr
    assert (
        "1 blocker (1 with a fix: onnx-lower MODEL -o OUT --target rknn --input-shape n=2 --retype-io)" in static.stdout
    )
    assert "folded to a constant by --target" in static.stdout
    for option, value, said in (("--input-shape", "n=four", "n=four"), ("--retype", "float=int8", "cannot retype")):
        bad = run_cli_in_process("check", path, "--target", "rknn", option, value)
        assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
        assert said in bad.stderr
    # (TensorRT 8.6 takes no int64 Concat nor Cast: the retyping's fix stands only with --retype-io)
    nodes = [helper.make_node("Concat", ["x", "x"], ["y"], name="twice", axis=0)]
    wide = helper.make_tensor_value_info("x", TensorProto.INT64, [2])
    path = write(make_model(nodes, [wide], [helper.make_tensor_value_info("y", TensorProto.INT64, [4])], opset=17),
                 tmp_path / "int64.onnx")  # fmt: skip
    kept_wide = run_cli_in_process("check", path, "--target", "tensorrt-8.6")
    assert "1 blocker (0 with a fix" in kept_wide.stdout and "the retyping wrote what it refuses" in kept_wide.stdout
    narrowed = run_cli_in_process("check", path, "--target", "tensorrt-8.6", "--retype-io")
    assert "1 blocker (1 with a fix: onnx-lower MODEL -o OUT --target tensorrt-8.6 --retype-io)" in narrowed.stdout


def test_check_counts_the_notes_by_kind_and_names_integers_wrong_only_past_the_edges(tmp_path):
    """OpenVINO 2026.4 divides int32 through float32 (probed: wide_Div_INT32): the Div blocks
    nothing, and is counted and listed as partly, only on integers past 2^24, with no fix."""
    nodes = [helper.make_node("Div", ["a", "b"], ["c"], name="divide")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT32, [4]) for name in "ab"]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.INT32, [4])], opset=14)
    path = write(model, tmp_path / "m.onnx")
    result = run_cli_in_process("check", path, "--target", "openvino-2026.4")
    assert result.returncode == 0, result.stderr
    assert "0 blockers (0 with a fix" in result.stdout
    assert "1 note: 1 partly (1 only on integers past 2^24) (-v lists them)" in result.stdout
    listed = run_cli_in_process("check", path, "--target", "openvino-2026.4", "-v").stdout
    assert "note: Div-14 on INT32 at graph" in listed and "wide_Div_INT32@14" in listed
    [finding] = json.loads(run_cli_in_process("check", path, "--target", "openvino-2026.4", "--json").stdout)[
        "unverified"
    ]
    assert finding["verdict"] == "partly" and finding["only_past_edges"] and finding["fix"] is None
    plain = run_cli_in_process("check", path, "--target", "tract-0.23")
    assert plain.returncode == 0 and plain.stdout.rstrip().endswith("; no notes")


def test_check_names_float_ops_wrong_only_on_ieee_values(tmp_path):
    """OpenVINO 2026.4 takes float fmod through a float32 quotient (probed: ieee_Mod_1_FLOAT):
    the Mod blocks nothing, and is counted and listed as partly, only on float values the
    backend's cases lack, beside an int32 Div wrong only past 2^24; onnxruntime finds nothing."""
    nodes = [helper.make_node("Mod", ["a", "b"], ["c"], name="remainder", fmod=1),
             helper.make_node("Div", ["i", "j"], ["k"], name="divide")]  # fmt: skip
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [4]) for name in "ab"]
    inputs += [helper.make_tensor_value_info(name, TensorProto.INT32, [4]) for name in "ij"]
    outputs = [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4]),
               helper.make_tensor_value_info("k", TensorProto.INT32, [4])]  # fmt: skip
    path = write(make_model(nodes, inputs, outputs, opset=14), tmp_path / "m.onnx")
    result = run_cli_in_process("check", path, "--target", "openvino-2026.4")
    assert result.returncode == 0, result.stderr
    said = "2 notes: 2 partly (1 only on integers past 2^24, 1 only on float values the backend's cases lack)"
    assert said in result.stdout
    listed = run_cli_in_process("check", path, "--target", "openvino-2026.4", "-v").stdout
    assert "note: Mod-13 on FLOAT at graph" in listed and "ieee_Mod_1_FLOAT@13: wrong" in listed
    findings = json.loads(run_cli_in_process("check", path, "--target", "openvino-2026.4", "--json").stdout)
    said = sorted((f["wrong_values"], f["only_past_edges"], f["fix"]) for f in findings["unverified"])
    assert said == [("float values the backend's cases lack", False, None), ("integers past 2^24", True, None)]
    assert run_cli_in_process("check", path, "--target", "onnxruntime").stdout.rstrip().endswith("; no notes")
