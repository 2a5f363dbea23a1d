"""lowering.verify and ``onnx-lower verify``: right lowerings match, wrong ones are caught on
the first run with default settings, and the report says where."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnx.parser
import pytest
from support import (
    parse,
    run_cli_in_process,  # noqa: E402
    slow_but_a_sample,
)

import lowering
from lowering.verification.compare import load_feeds, save_feeds
from lowering.verification.feeds import FeedPlan, build_feeds

REPO = Path(__file__).resolve().parents[1]


def unary(op_body: str, in_type: str = "float", opset: int = 20) -> onnx.ModelProto:
    return parse(f"""
        <ir_version: 9, opset_import: ["" : {opset}]>
        main ({in_type}[N] x) => (bool[N] y) {{
            {op_body}
        }}
    """)


# -- right lowerings verify ----------------------------------------------------------------------

RIGHT = {
    "dynamic dims, several inputs and outputs": """
        <ir_version: 9, opset_import: ["" : 20]>
        main (float[batch, 4] x, double[batch, seq] d, float16[K] h)
            => (bool[batch, 4] a, bool[batch, seq] b, bool[K] c) {
            a = IsNaN (x)
            b = IsInf <detect_positive = 0> (d)
            c = IsInf (h)
        }
    """,
    "bfloat16 and float8 inputs and outputs": """
        <ir_version: 9, opset_import: ["" : 20]>
        main (bfloat16[N] b, float8e4m3fn[N] f, float8e5m2[N] e)
            => (bool[N] nb, bool[N] nf, bool[N] ie, bfloat16[N] same) {
            nb = IsNaN (b)
            nf = IsNaN (f)
            ie = IsInf (e)
            same = Identity (b)
        }
    """,
    "optional and sequence inputs": """
        <ir_version: 9, opset_import: ["" : 18]>
        main (optional(float[N]) maybe, seq(float[N]) items, float[N] x) => (bool has, int64 count, bool[N] nan) {
            has = OptionalHasElement (maybe)
            count = SequenceLength (items)
            nan = IsNaN (x)
        }
    """,
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_lowering_verifies(name):
    model = parse(RIGHT[name])
    report = lowering.verify(model, lowering.lower(model))
    assert report.match, report.lines()
    assert report.runs >= 8 and all(output.compared > 0 for output in report.outputs)


def test_opset_28_optionals_are_run_where_onnxruntime_can_and_say_so():
    model = parse("""
        <ir_version: 10, opset_import: ["" : 28]>
        main (float[N] x) => (bool has, float[N] y) {
            o = Optional (x)
            has = OptionalHasElement (o)
            y = OptionalGetElement (o)
        }
    """)
    report = lowering.verify(model, lowering.lower(model))
    assert report.match and "declared at opset" in report.original_runner


def test_reference_evaluator_when_no_opset_runs_the_original():
    model = unary("y = IsNaN (x)", "bfloat16", 13)
    lowered = lowering.lower(model)
    # Only opset 13's IsNaN exists here; remove every other way to run it in onnxruntime.
    import lowering.verification.compare as verify_module

    original = verify_module._same_meaning_redeclarations
    verify_module._same_meaning_redeclarations = lambda model: iter(())
    try:
        report = lowering.verify(model, lowered)
    finally:
        verify_module._same_meaning_redeclarations = original
    assert report.match and report.original_runner.startswith("onnx.reference")


# -- wrong lowerings are caught on the first run with defaults ------------------------------------

WRONG = {
    "IsNaN swapped for IsInf": (
        "y = IsNaN (x)",
        "float",
        """
        m = Constant <value = float {3.4028235e38}> ()
        a = Abs (x)
        y = Greater (a, m)""",
    ),
    "sign mask dropped": (
        "y = IsInf <detect_negative = 0> (x)",
        "float",
        """
        m = Constant <value = float {3.4028235e38}> ()
        a = Abs (x)
        y = Greater (a, m)""",
    ),
    "Cast narrows float64": (
        "y = IsInf (x)",
        "double",
        """
        narrow = Cast <to = 1> (x)
        a = Abs (narrow)
        m = Constant <value = float {3.4028235e38}> ()
        y = Greater (a, m)""",
    ),
    "NaN mapped to true by IsInf": (
        "y = IsInf (x)",
        "float",
        """
        m = Constant <value = float {3.4028235e38}> ()
        a = Abs (x)
        finite = LessOrEqual (a, m)
        y = Not (finite)""",
    ),
    "subnormals flushed": (
        "y = IsNaN (x)",
        "float",
        """
        tiny = Constant <value = float {1e-38}> ()
        a = Abs (x)
        small = Less (a, tiny)
        e = Equal (x, x)
        ne = Not (e)
        y = Or (ne, small)""",
    ),
    "bfloat16 IsInf misses -inf": (
        "y = IsInf (x)",
        "bfloat16",
        """
        w = Cast <to = 1> (x)
        m = Constant <value = float {3.4028235e38}> ()
        y = Greater (w, m)""",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_lowering_is_caught_with_defaults(name, tmp_path):
    original_body, in_type, wrong_body = WRONG[name]
    original = unary(original_body, in_type)
    wrong = unary(wrong_body, in_type)
    report = lowering.verify(original, wrong, save_inputs=tmp_path / "inputs.npz")
    assert not report.match
    (output,) = report.outputs
    assert output.mismatches > 0 and output.first_index is not None and output.first_run is not None
    assert output.original_value != output.lowered_value and "x" in output.inputs_at_first
    assert report.inputs_file and Path(report.inputs_file).exists()
    replayed = lowering.verify(original, wrong, inputs=load_feeds(report.inputs_file))
    assert replayed.outputs[0].mismatches == output.mismatches


@pytest.mark.slow
def test_tolerances_apply_per_output():
    original = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] a, float[N] b) { a = Identity (x)  b = Identity (x) }
    """)
    nudged = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] a, float[N] b) {
            one = Constant <value = float {1.0000001}> ()
            a = Mul (x, one)
            b = Identity (x)
        }
    """)
    feeds = [{"x": np.array([1.0, 2.0, np.nan, np.inf, -0.0], np.float32)}]
    assert not lowering.verify(original, nudged, inputs=feeds).match
    relaxed = lowering.verify(original, nudged, inputs=feeds, rtol={"a": 1e-6})
    assert relaxed.match and 0 < relaxed.outputs[0].max_difference < 1e-5


@pytest.mark.slow
def test_zero_signs_and_nan_payloads():
    original = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] y) { y = Identity (x) }
    """)
    absolute = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x) => (float[N] y) { y = Abs (x) }
    """)
    zeros = [{"x": np.array([0.0, -0.0], np.float32)}]
    assert not lowering.verify(original, absolute, inputs=zeros).match, "-0 differs from +0"
    nans = [{"x": np.array([np.nan, -np.nan], np.float32)}]
    assert lowering.verify(original, absolute, inputs=nans).match, "NaN equals NaN, whatever its sign"


# -- inputs ---------------------------------------------------------------------------------------


def test_inputs_carry_every_edge_value_and_respect_shapes():
    model = parse(RIGHT["dynamic dims, several inputs and outputs"])
    feeds = build_feeds(model, FeedPlan(seed=1, shapes={"h": [5]}))
    assert all(feed["h"].shape == (5,) for feed in feeds)
    assert all(feed["x"].shape[0] == feed["d"].shape[0] for feed in feeds), "one size per named dimension"
    x = np.concatenate([feed["x"].ravel() for feed in feeds])
    with np.errstate(all="ignore"):
        assert np.isnan(x).any() and np.isposinf(x).any() and np.isneginf(x).any()
        assert (np.signbit(x) & (x == 0)).any() and ((x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)).any()
    optional = parse(RIGHT["optional and sequence inputs"])
    feeds = build_feeds(optional, FeedPlan())
    assert any(f["maybe"] is None for f in feeds) and any(f["maybe"] is not None for f in feeds)
    assert {len(f["items"]) for f in feeds} >= {0, 1, 2}


def test_saved_inputs_round_trip(tmp_path):
    model = parse(RIGHT["bfloat16 and float8 inputs and outputs"])
    feeds = build_feeds(model, FeedPlan())
    save_feeds(tmp_path / "saved.npz", feeds)
    loaded = load_feeds(tmp_path / "saved.npz")
    for a, b in zip(feeds, loaded, strict=True):
        for name in a:
            assert a[name].dtype == b[name].dtype and a[name].tobytes() == b[name].tobytes()


# -- the command line -----------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_verify_exit_codes_json_and_replay(tmp_path):
    original_path, right_path, wrong_path = tmp_path / "o.onnx", tmp_path / "r.onnx", tmp_path / "w.onnx"
    original = unary("y = IsNaN (x)")
    onnx.save(original, original_path)
    onnx.save(lowering.lower(original), right_path)
    onnx.save(
        unary("""
        m = Constant <value = float {3.4028235e38}> ()
        a = Abs (x)
        y = Greater (a, m)"""),
        wrong_path,
    )

    matched = run_cli_in_process("verify", str(original_path), str(right_path), cwd=tmp_path)
    assert matched.returncode == 0 and "MATCH" in matched.stdout

    as_json = run_cli_in_process("verify", str(original_path), str(right_path), "--json", "--seed", "3", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["match"] is True

    mismatched = run_cli_in_process("verify", str(original_path), str(wrong_path), cwd=tmp_path)
    assert mismatched.returncode == 1 and "MISMATCH" in mismatched.stdout
    saved = tmp_path / "w.onnx.inputs.npz"
    assert saved.exists() and f"--inputs {saved}" in mismatched.stdout, "saved beside LOWERED, the path said"
    replay = run_cli_in_process("verify", str(original_path), str(wrong_path), "--inputs", saved.name, cwd=tmp_path)
    assert replay.returncode == 1

    for bad in (["verify", str(original_path)], ["verify", str(original_path), str(tmp_path / "none.onnx")],
                ["verify", str(original_path), str(right_path), "--shape", "x2"],
                ["verify", str(original_path), str(right_path), "--shape", "nosuch:2"],
                ["verify", str(original_path), str(right_path), "--atol", "abc"]):  # fmt: skip
        completed = run_cli_in_process(*bad, cwd=tmp_path)
        assert completed.returncode == 2 and len(completed.stderr.strip().splitlines()) == 1, bad


def test_lower_with_verify_writes_only_on_match(tmp_path):
    example = REPO / "examples" / "isnan_isinf.onnx"
    completed = run_cli_in_process(str(example), "-o", str(tmp_path / "out.onnx"), "--verify", cwd=tmp_path)
    assert completed.returncode == 0 and (tmp_path / "out.onnx").exists() and "MATCH" in completed.stdout


@pytest.mark.slow
def test_lower_with_verify_writes_nothing_on_a_mismatch(tmp_path, monkeypatch, capsys):
    """A rule gone wrong (IsNaN lowered as IsInf) is caught before anything is written."""
    from lowering import registry
    from lowering.cli import main

    def wrong(b, x):
        x = b.computable(x)
        return b.Greater(b.Abs(x), b.constant(3.4028234663852886e38, like=x, hint="max"))

    monkeypatch.chdir(tmp_path)
    output = tmp_path / "out.onnx"
    with registry.body_replaced("IsNaN", wrong):
        assert main([str(REPO / "examples" / "isnan_isinf.onnx"), "-o", str(output), "--verify"]) == 1
    assert not output.exists()
    captured = capsys.readouterr()
    assert "MISMATCH" in captured.out and "was not written" in captured.err
    assert (tmp_path / "out.onnx.inputs.npz").exists()


# -- both sides get the same fallbacks ----------------------------------------------------------

OPSET_28_OPTIONALS = """
    <ir_version: 10, opset_import: ["" : 28]>
    main (float[N] x) => (bool has, float[N] y) {
        o = Optional (x)
        has = OptionalHasElement (o)
        y = OptionalGetElement (o)
    }
"""


def add_6_model() -> onnx.ModelProto:
    """Opset 6, Add-6 with no broadcast attribute (same shapes): onnxruntime has no Add-6 kernel."""
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Add", ["a", "b"], ["c"])],
        "main",
        [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [2, 3]) for n in ("a", "b")],
        [onnx.helper.make_tensor_value_info("c", onnx.TensorProto.FLOAT, [2, 3])],
    )
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 6)], ir_version=3)
    onnx.checker.check_model(model, full_check=True)
    return model


def pytorch_softsign() -> Path | None:
    """onnx's own backend data: an opset-6 PyTorch export with Add-6 (broadcast=1), if shipped."""
    path = Path(onnx.__file__).parent / "backend/test/data/pytorch-converted/test_Softsign/model.onnx"
    return path if path.exists() else None


@pytest.mark.slow
def test_a_model_onnxruntime_cannot_run_verifies_against_itself(tmp_path):
    """verify P P: the lowered side falls back exactly as the original does, and the report says how."""
    optionals = tmp_path / "optionals28.onnx"
    onnx.save(parse(OPSET_28_OPTIONALS), optionals)
    add6 = tmp_path / "add6.onnx"
    onnx.save(add_6_model(), add6)
    expected = {optionals: "declared at opset 27", add6: "onnx.reference"}
    if pytorch_softsign() is not None:
        expected[pytorch_softsign()] = "onnx.reference"
    for path, how in expected.items():
        completed = run_cli_in_process("verify", str(path), str(path), "--json", cwd=tmp_path)
        assert completed.returncode == 0, (path, completed.stderr)
        report = json.loads(completed.stdout)
        assert report["match"] and how in report["original_runner"] and how in report["lowered_runner"], report


def test_lower_with_verify_on_an_opset_6_model(tmp_path):
    model = tmp_path / "add6.onnx"
    onnx.save(add_6_model(), model)
    completed = run_cli_in_process(str(model), "-o", str(tmp_path / "out.onnx"), "--verify", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "lowered run by onnx.reference" in completed.stdout and (tmp_path / "out.onnx").exists()
    assert completed.stderr == "", "onnxruntime's own log lines (opset 6 warnings) stay off the terminal"


def test_report_names_how_each_side_ran():
    model = parse(OPSET_28_OPTIONALS)
    report = lowering.verify(model, lowering.lower(model))
    assert "declared at opset" in report.original_runner and report.lowered_runner == "onnxruntime"
    lines = report.lines()
    assert lines[0].startswith("original run by onnxruntime with") and lines[1] == "lowered run by onnxruntime"


def test_onnxruntime_log_lines_never_reach_the_terminal(tmp_path):
    """A model that fails while running (Add of 3 and 4 values): one line of ours, no coloured log."""
    model = tmp_path / "add.onnx"
    onnx.save(
        parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] a, float[M] b) => (float[K] c) { c = Add (a, b) }
    """),
        model,
    )
    completed = run_cli_in_process("verify", str(model), str(model), "--shape", "a:3", "--shape", "b:4", cwd=tmp_path)
    assert completed.returncode == 2
    assert "\x1b[" not in completed.stderr and ":onnxruntime:" not in completed.stderr, completed.stderr
    (line,) = completed.stderr.strip().splitlines()
    assert "run 0" in line and "a: float32[3]" in line and "b: float32[4]" in line


# -- numbers and names in the options: one line, exit 2, blaming the option ---------------------

DYNAMIC = """
    <ir_version: 9, opset_import: ["" : 18]>
    main (float[N, M] x, float[N, M] z) => (bool[N, M] y, float[N, M] s) {
        y = IsNaN (x)
        s = Add (x, z)
    }
"""


@pytest.fixture
def dynamic_model(tmp_path) -> Path:
    path = tmp_path / "dynamic.onnx"
    onnx.save(parse(DYNAMIC), path)
    return path


BAD_OPTIONS = {
    "negative seed": (["--seed", "-5"], "--seed"),
    "negative samples": (["--samples", "-1"], "--samples"),
    "zero samples": (["--samples", "0"], "--samples"),
    "too many samples": (["--samples", "10001"], "10,000"),
    "zero dimension": (["--shape", "x:0,4"], "nothing would be compared"),
    "huge shape": (["--shape", "x:1000000000,1000000"], "16,777,216"),
    "too much over all runs": (["--shape", "x:4000,4000"], "512 MiB"),
    "wrong rank": (["--shape", "x:3"], "rank 2"),
    "dimension names disagree": (["--shape", "x:3,4", "--shape", "z:3,5"], "'M' is 4"),
    "unknown input": (["--shape", "N:3"], "its inputs: x, z"),
    "shape given twice": (["--shape", "x:3,4", "--shape", "x:3,4"], "twice"),
    "NaN tolerance": (["--atol", "nan"], "finite"),
    "infinite tolerance": (["--rtol", "inf"], "finite"),
    "tolerance for no output": (["--atol", "nosuch=1e-6"], "their outputs: y, s"),
    "replay with a shape": (["--inputs", "saved.npz", "--shape", "x:2,2"], "cannot go with --inputs"),
}


@slow_but_a_sample()
@pytest.mark.parametrize("name", sorted(BAD_OPTIONS))
def test_bad_verify_options_are_one_line_and_exit_2(name, dynamic_model, tmp_path, capsys):
    from lowering.cli import main

    options, expected = BAD_OPTIONS[name]
    code = main(["verify", str(dynamic_model), str(dynamic_model), *options])
    captured = capsys.readouterr()
    assert code == 2, captured
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("onnx-lower: error: ") and expected in line, line
    assert "internal error" not in line and captured.out == ""
    assert not list(tmp_path.glob("*.npz"))


def test_replay_file_from_another_model_blames_the_file(tmp_path, dynamic_model, capsys):
    from lowering.cli import main

    other = unary("y = IsNaN (x)")
    feeds = build_feeds(other, FeedPlan())
    save_feeds(tmp_path / "other.npz", feeds)
    (tmp_path / "same_names.npz").write_bytes(b"")
    save_feeds(tmp_path / "same_names.npz", [{"x": np.zeros((2, 2, 2), np.float32), "z": np.zeros((2, 2), np.float32)}])
    np.save(tmp_path / "plain.npy", np.zeros(3))
    cases = {
        "other.npz": "takes x, z",
        "same_names.npz": "input 'x': float32[2, 2, 2], but the model declares float[N, M]",
        "plain.npy": "not an inputs file",
    }
    for file, expected in cases.items():
        code = main(["verify", str(dynamic_model), str(dynamic_model), "--inputs", str(tmp_path / file)])
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and expected in line and file in line, line


def test_a_shape_binds_its_dimension_names_for_every_input(dynamic_model):
    """--shape x:3,4 fixes N and M, so z (also [N, M]) is fed at 3x4 and the models run."""
    report = lowering.verify(dynamic_model, dynamic_model, shapes={"x": [3, 4]})
    assert report.match and report.outputs[1].compared == report.runs * 12


def test_python_api_refuses_bad_numbers():
    model = unary("y = IsNaN (x)")
    for kwargs in ({"seed": -1}, {"samples": 0}, {"samples": -3}, {"atol": float("nan")}, {"rtol": {"y": -1.0}}):
        with pytest.raises(lowering.LoweringError):
            lowering.verify(model, model, **kwargs)


def test_nothing_compared_is_never_a_plain_match():
    empty_input = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[0] x) => (bool[0] y) { y = IsNaN (x) }
    """)
    with pytest.raises(lowering.LoweringError, match="nothing was compared"):
        lowering.verify(empty_input, empty_input)
    partly = parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[N] x, float[0] e) => (bool[N] y, bool[0] f) { y = IsNaN (x)  f = IsNaN (e) }
    """)
    report = lowering.verify(partly, partly)
    assert report.match and report.nothing_compared == ["f"]
    assert report.lines()[-1].startswith("MATCH (nothing compared for f")
    assert "f: nothing compared (no values in any run)" in report.lines()


def test_inputs_that_cannot_be_saved_still_report_the_mismatch(tmp_path):
    original_body, in_type, wrong_body = WRONG["IsNaN swapped for IsInf"]
    original, wrong = unary(original_body, in_type), unary(wrong_body, in_type)
    report = lowering.verify(original, wrong, save_inputs=tmp_path)  # a folder: cannot be written
    assert not report.match and report.inputs_file is None and "is a directory" in report.inputs_error


def test_saved_inputs_go_through_a_symbolic_link(tmp_path):
    original_body, in_type, wrong_body = WRONG["IsNaN swapped for IsInf"]
    target = tmp_path / "kept.npz"
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    report = lowering.verify(unary(original_body, in_type), unary(wrong_body, in_type), save_inputs=link)
    assert link.is_symlink() and len(load_feeds(target)) == report.runs


def test_lower_with_verify_refuses_an_input_too_large_to_generate(tmp_path):
    model = tmp_path / "big.onnx"
    onnx.save(
        parse("""
        <ir_version: 9, opset_import: ["" : 18]>
        main (float[5000, 5000] x) => (bool[5000, 5000] y) { y = IsNaN (x) }
    """),
        model,
    )
    completed = run_cli_in_process(str(model), "-o", str(tmp_path / "out.onnx"), "--verify", cwd=tmp_path)
    assert completed.returncode == 2
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("onnx-lower: error: --verify: input 'x'") and "the model fixes that shape" in line
    assert "25,000,000 values" in line and not (tmp_path / "out.onnx").exists()


def test_numpy_integers_are_whole_numbers():
    model = unary("y = IsNaN (x)")
    report = lowering.verify(model, model, seed=np.int64(3), samples=np.int32(9), shapes={"x": [np.int64(5)]})
    assert report.match and report.runs >= 9 and report.outputs[0].compared == report.runs * 5
