"""``onnx-lower verify`` (and ``onnx-lower MODEL --verify``), run in-process: the user's own
inputs as plain .npz, --save-outputs, mismatch statistics, the onnx.reference note, custom
domains, where the inputs of a mismatch go, and integer inputs that hold shapes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import onnx.parser
import pytest
from onnx import TensorProto, helper
from support import REPO, one_error_line, run_cli_in_process, slow_but_a_sample  # noqa: E402

EXAMPLE = REPO / "examples" / "isnan_isinf.onnx"


def save_text(path: Path, text: str) -> Path:
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


NUDGED = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (float[N] x, int64[N] k) => (float[N] y, int64[N] j) {
        one = Constant <value = float {1.0000001}> ()
        y = Mul (x, one)
        j = Identity (k)
    }
"""
PLAIN = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (float[N] x, int64[N] k) => (float[N] y, int64[N] j) {
        y = Identity (x)
        j = Identity (k)
    }
"""


@pytest.fixture
def pair(tmp_path) -> tuple[Path, Path]:
    """y = x against y = x * 1.0000001: they differ wherever x is a normal number."""
    return save_text(tmp_path / "plain.onnx", PLAIN), save_text(tmp_path / "nudged.onnx", NUDGED)


# -- 8: the user's own inputs, saved outputs, mismatch statistics ---------------------------------


def test_plain_npz_inputs_one_run_per_file_and_saved_outputs(pair, tmp_path):
    original, _ = pair
    np.savez(tmp_path / "one.npz", x=np.array([1.0, np.nan, -0.0], np.float32), k=np.array([1, 2, 3]))
    np.savez(tmp_path / "two.npz", x=np.array([np.inf, 2.0], np.float32), k=np.array([7, 8]))
    completed = run_cli_in_process("verify", original, original, "--inputs", tmp_path / "one.npz", tmp_path / "two.npz",
                        "--save-outputs", tmp_path / "outputs.npz")  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    assert "2 runs" in completed.stdout and "y: match (5 values)" in completed.stdout
    assert f"outputs saved to {tmp_path / 'outputs.npz'}" in completed.stdout
    with np.load(tmp_path / "outputs.npz") as saved:
        np.testing.assert_array_equal(saved["run1/lowered/y"], [np.inf, 2.0])
        np.testing.assert_array_equal(saved["run0/original/j"], [1, 2, 3])


def test_plain_npz_inputs_that_do_not_fit_blame_the_file(pair, tmp_path):
    original, _ = pair
    np.savez(tmp_path / "wrong_type.npz", x=np.array([1.0]), k=np.array([1]))  # float64, not float32
    np.savez(tmp_path / "missing.npz", x=np.array([1.0], np.float32))
    np.savez(tmp_path / "pickled.npz", x=np.array([{"a": 1}], dtype=object), k=np.array([1]))
    for name, words in (("wrong_type.npz", "float64[1], but the model declares float[N]"),
                        ("missing.npz", "holds inputs x but the model takes x, k"),
                        ("pickled.npz", "without pickled objects")):  # fmt: skip
        completed = run_cli_in_process("verify", original, original, "--inputs", tmp_path / name)
        assert completed.returncode == 2
        line = one_error_line(completed)
        assert name in line and words in line, line


def test_plain_npz_holds_bfloat16_as_numpy_stores_it(tmp_path):
    model = save_text(
        tmp_path / "b.onnx",
        """
        <ir_version: 9, opset_import: ["" : 20]>
        main (bfloat16[N] b) => (bool[N] n) { n = IsNaN (b) }
    """,
    )
    lowered = tmp_path / "lowered.onnx"
    assert run_cli_in_process(model, "-o", lowered, "-q").returncode == 0
    np.savez(tmp_path / "b.npz", b=np.array([1.0, np.nan, -np.inf], ml_dtypes.bfloat16))
    completed = run_cli_in_process("verify", model, lowered, "--inputs", tmp_path / "b.npz")
    assert completed.returncode == 0, completed.stderr
    assert "n: match (3 values)" in completed.stdout


def test_mismatch_statistics_count_relative_error_and_where(pair, tmp_path):
    original, nudged = pair
    np.savez(tmp_path / "in.npz", x=np.array([0.0, 1.0, 3.0, np.nan], np.float32), k=np.arange(4))
    completed = run_cli_in_process("verify", original, nudged, "--inputs", tmp_path / "in.npz", "--json")
    assert completed.returncode == 1
    report = json.loads(completed.stdout)
    y = report["outputs"][0]
    assert y["mismatches"] == 2 and y["compared"] == 4
    assert y["max_difference_run"] == 0 and y["max_difference_index"] == [2]
    assert 1e-7 < y["max_relative_difference"] < 2e-7
    text = run_cli_in_process("verify", original, nudged, "--inputs", tmp_path / "in.npz")
    line = next(line for line in text.stdout.splitlines() if line.startswith("y: "))
    assert re.match(
        r"y: 2 of 4 values differ; max difference 4\.76837e-07 \(relative 1\.5\d+e-07\) at run 0, index \(2,\); "
        r"first at run 0, index \(1,\): original 1\.0 ",
        line,
    ), line


FLOORED = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (float[N] x, int64[N] k) => (float[N] y, int64[N] j) {
        floor = Constant <value = float {-3.0e38}> ()
        y = Max (x, floor)
        j = Identity (k)
    }
"""


def test_an_infinite_original_against_a_finite_lowered_is_infinitely_far(pair, tmp_path):
    """-inf against -3e38: the difference is inf, and so is the relative one (inf / inf in numpy,
    which once came out as NaN with a RuntimeWarning on stderr and the other values' ratio)."""
    original, _ = pair
    floored = save_text(tmp_path / "floored.onnx", FLOORED)
    np.savez(tmp_path / "in.npz", x=np.array([-np.inf, -3.1e38, 1.0], np.float32), k=np.arange(3))
    completed = run_cli_in_process("verify", original, floored, "--inputs", tmp_path / "in.npz")
    assert completed.returncode == 1 and completed.stderr == ""
    line = next(line for line in completed.stdout.splitlines() if line.startswith("y: "))
    assert line.startswith("y: 2 of 3 values differ; max difference inf (relative inf) at run 0, index (0,)"), line


# -- 9: the onnx.reference note ------------------------------------------------------------------


def sigmoid_at_opset_6(path: Path) -> Path:
    """Add-6 has no onnxruntime kernel: the model runs in onnx.reference; at 13 in onnxruntime."""
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"]), helper.make_node("Sigmoid", ["c"], ["y"])],
        "main",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [64]) for name in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)], ir_version=3), path)
    return path


@pytest.mark.slow
def test_reference_against_onnxruntime_mismatch_gets_a_note(tmp_path):
    original = sigmoid_at_opset_6(tmp_path / "sigmoid6.onnx")
    converted = tmp_path / "sigmoid13.onnx"
    assert run_cli_in_process(original, "-o", converted, "--target-opset", "13", "--ops", "none", "-q").returncode == 0
    completed = run_cli_in_process("verify", original, converted, "--samples", "16")
    assert completed.returncode == 1
    assert "original run by onnx.reference" in completed.stdout and "lowered run by onnxruntime\n" in completed.stdout
    note = next(line for line in completed.stdout.splitlines() if line.startswith("note: "))
    assert "onnx.reference" in note and "--atol" in note and "--rtol" in note
    relaxed = run_cli_in_process("verify", original, converted, "--samples", "16", "--atol", "1e-6")
    assert relaxed.returncode == 0 and "note:" not in relaxed.stdout


# -- 11: where the inputs of a mismatch go -------------------------------------------------------


@pytest.mark.slow
def test_lower_verify_saves_the_inputs_beside_the_output(tmp_path):
    original = sigmoid_at_opset_6(tmp_path / "sigmoid6.onnx")
    work = tmp_path / "work"
    work.mkdir()
    output = tmp_path / "out" / "s13.onnx"
    args = ("--target-opset", "13", "--ops", "none", "--verify")
    completed = run_cli_in_process(original, "-o", output, *args, cwd=work)
    assert completed.returncode == 1 and "MISMATCH" in completed.stdout
    saved = tmp_path / "out" / "s13.onnx.inputs.npz"
    line = one_error_line(completed)
    assert f"{output} was not written" in line and f"inputs saved to {saved}" in line
    assert sorted(p.name for p in saved.parent.iterdir()) == [saved.name], "the model itself is not written"
    assert not list(work.iterdir()), "nothing in the working folder"
    dry = run_cli_in_process(original, "--dry-run", *args, cwd=work)
    assert dry.returncode == 1 and not list(work.iterdir())
    temporary = Path(one_error_line(dry).split("inputs saved to ")[1].split(";")[0])
    assert temporary.name == "sigmoid6.onnx.inputs.npz" and temporary.exists()
    assert temporary.parent.name.startswith("onnx-lower-")


@pytest.mark.slow
def test_lower_verify_takes_tolerances_and_its_replay_hint_works(tmp_path):
    """The main command's --verify compares within --atol/--rtol as verify does (a mismatch of
    the last bits then writes the model); a mismatch's hint says to write the model first, and
    the command it gives, run once the model is written, replays the mismatch."""
    original = sigmoid_at_opset_6(tmp_path / "sigmoid6.onnx")
    output = tmp_path / "s13.onnx"
    args = ("--target-opset", "13", "--ops", "none", "--verify")
    exact = run_cli_in_process(original, "-o", output, *args)
    assert exact.returncode == 1 and not output.exists()
    line = one_error_line(exact)
    assert "write the lowered model without --verify, then run: onnx-lower verify " in line
    replay = line.split("then run: onnx-lower ")[1].split()
    relaxed = run_cli_in_process(original, "-o", output, *args, "--atol", "1e-6", "-q")
    assert relaxed.returncode == 0 and relaxed.stderr == "" and output.exists()
    assert run_cli_in_process(*replay).returncode == 1, "the saved inputs give the mismatch again"
    assert run_cli_in_process(*replay, "--atol", "1e-6").returncode == 0
    for option in ("--atol", "--rtol"):
        alone = run_cli_in_process(original, "-o", tmp_path / "x.onnx", option, "1e-6")
        assert alone.returncode == 2 and f"{option} is for --verify" in one_error_line(alone)
    unknown = run_cli_in_process(original, "-o", tmp_path / "x.onnx", *args, "--rtol", "nope=1e-6")
    assert unknown.returncode == 2 and "no output 'nope'" in one_error_line(unknown)
    assert not (tmp_path / "x.onnx").exists()


@pytest.mark.slow
def test_verify_saves_beside_lowered_or_in_a_temporary_folder(pair, tmp_path):
    original, nudged = pair
    work = tmp_path / "work"
    work.mkdir()
    completed = run_cli_in_process("verify", original, nudged, cwd=work)
    assert completed.returncode == 1
    beside = tmp_path / "nudged.onnx.inputs.npz"
    assert beside.exists() and f"inputs saved to {beside}; replay: " in completed.stdout
    assert not list(work.iterdir())
    beside.unlink()
    beside.mkdir()  # cannot be written there: a temporary folder instead, and the path said
    again = run_cli_in_process("verify", original, nudged, cwd=work)
    assert again.returncode == 1 and again.stderr == ""
    path = Path(again.stdout.split("inputs saved to ")[1].split(";")[0])
    assert path.parent.name.startswith("onnx-lower-") and path.exists()
    replay = run_cli_in_process("verify", original, nudged, "--inputs", path)
    assert replay.returncode == 1


# -- 10: custom domains ---------------------------------------------------------------------------

CUSTOM = """
    <ir_version: 9, opset_import: ["" : 18, "my.ops" : 1]>
    main (float[N] x) => (float[N] y, bool[N] n) {
        y = my.ops.Foo (x)
        n = IsNaN (x)
    }
"""


def test_custom_domain_cannot_be_verified_without_its_library(tmp_path):
    model = tmp_path / "custom.onnx"
    onnx.save(onnx.parser.parse_model(CUSTOM), model)
    lowered = tmp_path / "lowered.onnx"
    refused = run_cli_in_process(model, "-o", lowered, "--verify")
    assert refused.returncode == 2 and not lowered.exists()
    line = one_error_line(refused)
    assert "cannot verify: the original model uses ops of domain 'my.ops' (Foo)" in line
    assert "--custom-op-library" in line and line.endswith("nothing was written")
    assert run_cli_in_process(model, "-o", lowered, "-q").returncode == 0, "lowering alone is fine"
    verify = run_cli_in_process("verify", model, lowered, "--json")
    assert verify.returncode == 2 and "cannot verify" in json.loads(verify.stdout)["error"]["message"]
    missing = run_cli_in_process("verify", model, lowered, "--custom-op-library", tmp_path / "nope.so")
    assert missing.returncode == 2 and "nope.so: no such file" in one_error_line(missing)
    not_a_library = run_cli_in_process("verify", model, lowered, "--custom-op-library", "lowered.onnx", cwd=tmp_path)
    assert not_a_library.returncode == 2 and "onnxruntime cannot load it" in one_error_line(not_a_library)
    alone = run_cli_in_process(model, "-o", lowered, "--custom-op-library", "x.so")
    assert alone.returncode == 2 and "--custom-op-library is for --verify" in one_error_line(alone)


def test_custom_op_library_runs_both_models():
    import tempfile

    import onnxruntime_extensions as extensions  # a test dependency (pyproject's test extra)

    with tempfile.TemporaryDirectory() as folder:
        model = Path(folder) / "upper.onnx"
        onnx.save(onnx.parser.parse_model("""
            <ir_version: 9, opset_import: ["" : 18, "ai.onnx.contrib" : 1]>
            main (string[N] s, float[N] x) => (string[N] y, bool[N] n) {
                y = ai.onnx.contrib.StringUpper (s)
                n = IsNaN (x)
            }
        """), model)  # fmt: skip
        output = Path(folder) / "lowered.onnx"
        completed = run_cli_in_process(
            model, "-o", output, "--verify", "--custom-op-library", extensions.get_library_path()
        )
        assert completed.returncode == 0, completed.stderr
        assert "MATCH" in completed.stdout and output.exists()


# -- 12: integer inputs that hold shapes ----------------------------------------------------------

EXPAND = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (float[3, 1] x, int64[2] shape) => (float[?, ?] y, bool[3, 1] n) {
        y = Expand (x, shape)
        n = IsNaN (x)
    }
"""


@pytest.mark.slow
def test_an_integer_input_read_as_a_shape_is_named_with_the_way_out(tmp_path):
    model = save_text(tmp_path / "expand.onnx", EXPAND)
    completed = run_cli_in_process("verify", model, model)
    assert completed.returncode == 2
    line = one_error_line(completed)
    assert "the original model fails in onnxruntime" in line
    assert "input 'shape' (read by Expand input 'shape'; integers in [0, 4)) looks like a shape" in line
    assert "--inputs FILE.npz" in line and "--value-range shape:LO,HI" in line
    too_wide = run_cli_in_process("verify", model, model, "--value-range", "shape:-1,-1")
    assert too_wide.returncode == 2, "the hint says the range given, not the default one"
    assert "(read by Expand input 'shape'; integers from -1 to -1 (--value-range))" in one_error_line(too_wide)
    ranged = run_cli_in_process("verify", model, model, "--value-range", "shape:1,1")
    assert ranged.returncode == 0 and ranged.stdout.splitlines()[-1] == "MATCH", ranged.stderr
    np.savez(tmp_path / "mine.npz", x=np.zeros((3, 1), np.float32), shape=np.array([3, 4]))
    given = run_cli_in_process("verify", model, model, "--inputs", tmp_path / "mine.npz")
    assert given.returncode == 0, given.stderr
    lowered = run_cli_in_process(model, "-o", tmp_path / "out.onnx", "--verify")
    assert lowered.returncode == 2 and "options of onnx-lower verify" in one_error_line(lowered)


def test_int4_inputs_take_a_value_range_and_go_in_as_onnx_stores_them(tmp_path):
    """f = Cast(x) holds x's values: every int4 from -8 to 7, not the codes of bytes unpacked
    (which before packing gave a 0 in every other element)."""
    model = save_text(
        tmp_path / "int4.onnx",
        """
        <ir_version: 10, opset_import: ["" : 21]>
        main (int4[5, 5] x) => (float[5, 5] f, bool[5, 5] y) {
            f = Cast <to = 1> (x)
            y = IsInf (f)
        }
    """,
    )
    outputs = tmp_path / "outputs.npz"
    completed = run_cli_in_process("verify", model, model, "--value-range", "x:-8,7", "--save-outputs", outputs)
    assert completed.returncode == 0 and "\nMATCH\n" in completed.stdout, completed.stderr
    assert "original run by onnxruntime" in completed.stdout
    with np.load(outputs) as saved:
        f = np.concatenate([saved[name].reshape(-1) for name in saved.files if name.endswith("/original/f")])
    assert set(f.tolist()) == set(range(-8, 8))
    assert (f == 0).mean() < 0.25


@slow_but_a_sample()
@pytest.mark.parametrize(
    "value_range, words",
    [
        ("x:1,2", "a range is for integer inputs"),  # (float)
        ("nosuch:1,2", "the model has no such input (its inputs: x, shape)"),
        ("shape:3,1", "expected NAME:LO,HI with whole numbers LO <= HI"),
        ("shape:1", "expected NAME:LO,HI"),
        ("shape:-1,99999999999999999999", "which holds"),
    ],
)
def test_bad_value_ranges_are_one_line(tmp_path, value_range, words):
    model = save_text(tmp_path / "expand.onnx", EXPAND)
    completed = run_cli_in_process("verify", model, model, "--value-range", value_range)
    assert completed.returncode == 2 and completed.stdout == ""
    assert words in one_error_line(completed)


@slow_but_a_sample()
@pytest.mark.parametrize("option", ["--save-inputs", "--save-outputs"])
@pytest.mark.parametrize("value", ["", "folder", "folder/"])
def test_a_save_option_naming_no_file_blames_the_option_before_any_run(pair, tmp_path, option, value):
    original, nudged = pair
    (tmp_path / "folder").mkdir()
    completed = run_cli_in_process("verify", original, nudged, option, value, cwd=tmp_path)
    assert completed.returncode == 2 and completed.stdout == ""
    assert one_error_line(completed).startswith(f"onnx-lower: error: {option} {value!r}: give a file name")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "nudged.onnx", "plain.onnx"]


def test_an_integer_input_read_as_indices_is_named_with_the_way_out():
    """Token ids read as a Gather's indices into a table of 2 rows: the generated integers, in
    [0, 4), run past it, so the hint names the input (bert's token_type_ids); a float input and
    an integer one read as data are not named."""
    from lowering.verification.compare import shape_hint, shape_like_inputs

    table = onnx.numpy_helper.from_array(np.zeros((2, 3), np.float32), "table")
    nodes = [onnx.helper.make_node("Gather", ["table", "ids"], ["y"]), onnx.helper.make_node("Neg", ["n"], ["m"])]
    model = onnx.helper.make_model(onnx.helper.make_graph(
        nodes, "g",
        [onnx.helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [4]),
         onnx.helper.make_tensor_value_info("n", onnx.TensorProto.INT64, [4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 3]),
         onnx.helper.make_tensor_value_info("m", onnx.TensorProto.INT64, [4])], [table],
    ), opset_imports=[onnx.helper.make_opsetid("", 13)])  # fmt: skip
    assert shape_like_inputs(model) == {"ids": "Gather input 'indices'"}
    assert "input 'ids' (read by Gather input 'indices'; integers in [0, 4)) looks like" in shape_hint(model)
    assert "--value-range ids:LO,HI" in shape_hint(model)
    one_hot = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("OneHot", ["ids", "depth", "values"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4, 2])],
        [onnx.numpy_helper.from_array(np.array(2, np.int64), "depth"),
         onnx.numpy_helper.from_array(np.array([0, 1], np.float32), "values")],
    ), opset_imports=[onnx.helper.make_opsetid("", 13)])  # fmt: skip
    assert shape_like_inputs(one_hot) == {}, "OneHot's indices past its depth give zeros, not a failure"
