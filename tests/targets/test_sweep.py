"""The sweep's scripts (targets/prepare_sweep.py, targets/run_sweep.py): random ops and training
Dropout are left out of the single-op sweep (their expected outputs are one draw), and the form
trials are recorded in the profile as better (right only with the form) or worse (right only
without), read back by lowering as the profile's model_forms."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import helper

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "targets"))

import prepare_sweep  # noqa: E402
import run_sweep  # noqa: E402
from version_cases import node_cases  # noqa: E402

from lowering.api import lower_model  # noqa: E402
from lowering.runtime_profiles import load_profile, profile_from_data, profile_names  # noqa: E402
from lowering.target_forms import model_forms_taken  # noqa: E402


def made_up_profile(folder: Path, opset: int, cases: dict | None = None) -> None:
    """A probed profile named made-up (runtime made-up 1.0, loading ``opset`` alone, holding
    ``cases``), written to ``folder``/made-up.json as the sweep's scripts read profiles."""
    profile = {"name": "made-up", "runtime": "made-up", "runtime_version": "1.0", "opsets": [opset],
               "source": {"kind": "probed", "how": "a test"}, "cases": cases or {}}  # fmt: skip
    (folder / "made-up.json").write_text(json.dumps(profile))


@pytest.mark.parametrize(
    ("node", "feeds", "random"),
    [
        (helper.make_node("Bernoulli", ["x"], ["y"]), {}, True),
        (helper.make_node("RandomUniformLike", ["x"], ["y"]), {}, True),
        (helper.make_node("Dropout", ["x", "r", "t"], ["y"]), {"r": np.float32(0.5), "t": np.bool_(True)}, True),
        (helper.make_node("Dropout", ["x", "r", "t"], ["y"]), {"r": np.float32(0.0), "t": np.bool_(True)}, False),
        (helper.make_node("Dropout", ["x", "r", "t"], ["y"]), {"r": np.float32(0.5), "t": np.bool_(False)}, False),
        (helper.make_node("Dropout", ["x"], ["y"]), {}, False),
        (helper.make_node("Add", ["x", "x"], ["y"]), {}, False),
    ],
)
def test_outputs_drawn_at_random_are_left_out(node, feeds, random):
    assert prepare_sweep.drawn_at_random(node, {"x": np.ones(2, np.float32), **feeds}) is random


def _trial(without: str, with_form: str) -> dict:
    return {"constant addend second": {"without": without, "with": with_form}}


def test_trials_are_recorded_better_or_worse_and_lowering_reads_them(tmp_path):
    made_up_profile(tmp_path, 17)
    results = [
        {"name": "deit", "trials": _trial("fails", "right")},
        {"name": "bert", "trials": _trial("wrong", "wrong")},
        {"name": "vit", "trials": _trial("right", "right")},
        {"name": "convnext"},  # (no Add of a constant: no trial)
    ]
    run_sweep.record_forms("made-up", results, "1.0", "made-up", profiles=tmp_path)
    written = json.loads((tmp_path / "made-up.json").read_text())
    assert written["model_forms"] == {
        "constant addend second": {"better": ["deit"], "worse": [], "tried": ["deit", "bert", "vit"]}
    }
    assert written["source"]["model_forms"]["models"] == 3
    [taken] = model_forms_taken(profile_from_data(written).model_forms)
    assert taken.name == "constant addend second"

    results.append({"name": "gpt2", "trials": _trial("right", "hangs")})
    run_sweep.record_forms("made-up", results, "1.0", "made-up", profiles=tmp_path)
    written = json.loads((tmp_path / "made-up.json").read_text())
    assert written["model_forms"]["constant addend second"]["worse"] == ["gpt2"]
    assert model_forms_taken(profile_from_data(written).model_forms) == ()


def test_trials_of_another_runtime_version_are_not_recorded(tmp_path):
    made_up_profile(tmp_path, 17)
    with pytest.raises(SystemExit, match="probed on 1.0, this runtime is 2.0"):
        run_sweep.record_forms("made-up", [], "2.0", "made-up", profiles=tmp_path)


class _Giving:
    """A runner whose runtime gives ``outputs`` whatever it is fed."""

    def __init__(self, *outputs):
        self.outputs = list(outputs)

    def run(self, model_bytes, feeds):
        return self.outputs


def test_a_whole_model_within_twice_onnxruntimes_float16_error_is_right_in_float16():
    """A float16 runtime's whole-model outputs outside the per-op tolerance: right in float16
    where each output's largest error is within its bound (twice onnxruntime's on the model in
    float16), wrong past it or where a NaN appears; the error is said either way."""
    import probe

    want = np.array([1.0, -4.0, 0.5], np.float32)
    data_sets = [([], [want])]
    near = want + np.float32(0.004)
    assert probe.judged(_Giving(near), b"", data_sets, 1e-3, 1e-5, []) == ("wrong", "output 0: largest error 0.004")
    verdict, said = probe.judged(_Giving(near), b"", data_sets, 1e-3, 1e-5, [], bounds=[0.01])
    assert verdict == "right in float16" and "largest error 0.004" in said and "0.01" in said
    verdict, said = probe.judged(_Giving(want + np.float32(0.02)), b"", data_sets, 1e-3, 1e-5, [], bounds=[0.01])
    assert verdict == "wrong" and "largest error 0.02" in said
    with_nan = np.array([1.0, np.nan, 0.5], np.float32)
    assert probe.judged(_Giving(with_nan), b"", data_sets, 1e-3, 1e-5, [], bounds=[1.0])[0] == "wrong"
    assert probe.judged(_Giving(want), b"", data_sets, 1e-3, 1e-5, [], bounds=[0.0]) == ("right", "")


def test_a_feed_the_runtime_takes_none_of_is_unfed_and_other_refusals_fail():
    """A runner raising :class:`runners.Unfed` (rknn's 0-d inputs) gives the verdict "unfed", in
    its words, what it takes none of first; any other exception "fails"."""
    import probe
    from runners import Unfed

    class Refusing:
        def __init__(self, error):
            self.error = error

        def run(self, model_bytes, feeds):
            raise self.error

    data_sets = [([], [np.float32(1.0)])]
    verdict, said = probe.judged(Refusing(Unfed("0-d input", "inputs ['k']")), b"", data_sets, 1e-3, 1e-5, [])
    assert (verdict, said) == ("unfed", "0-d input: inputs ['k']")
    assert probe.judged(Refusing(TypeError("no")), b"", data_sets, 1e-3, 1e-5, [])[0] == "fails"


def test_a_constant_output_refused_is_the_cases_interface_only_where_it_has_one(tmp_path):
    """rknn's builder says "All outputs [...] are constants" of a Shape's output and of a
    window's output of a fed size alike, and drops Dropout's mask and LayerNormalization's Mean
    alike: a runner's Unfed of a constant output stays "unfed" only where the outputs it names
    (all of them, where the builder refused the model) are those prepare_cases.py records as
    constant for the case; else the case fails, saying so (its words are of its op). Without
    that record (no --cases, or cases written before it), the runner's word stands; any other
    verdict is kept."""
    import pickle

    import probe

    constants = {"test_shape": ["y"], "test_dropout_default_mask": ["z"]}
    refused = "constant output: the builder refuses a model of no other outputs (build: All outputs ['y'] ...)"
    assert probe.of_its_interface("unfed", refused, "test_shape", constants, ["y"]) == ("unfed", refused)
    verdict, said = probe.of_its_interface("unfed", refused, "test_hannwindow", constants, ["y"])
    assert verdict == "fails" and said.startswith("outputs ['y'] taken for constants, which vary: the builder")
    dropped = "constant output: outputs ['z']: the built model gives none of them (they fold away)"
    assert probe.of_its_interface("unfed", dropped, "test_dropout_default_mask", constants, ["y", "z"])[0] == "unfed"
    mean = "constant output: outputs ['Mean']: the built model gives none of them (they fold away)"
    assert probe.of_its_interface("unfed", mean, "test_dropout_default_mask", constants, ["y", "Mean"])[0] == "fails"
    assert probe.of_its_interface("unfed", refused, "test_hannwindow", None, ["y"]) == ("unfed", refused)
    rank_0 = "0-d input: inputs ['k']"
    assert probe.of_its_interface("unfed", rank_0, "test_clip", constants, ["y"]) == ("unfed", rank_0)
    assert probe.of_its_interface("fails", refused, "test_hannwindow", constants, ["y"]) == ("fails", refused)
    path = tmp_path / "cases.pkl"
    path.write_bytes(pickle.dumps({"cases": [], "onnxruntime": {}, "constant_outputs": constants}))
    assert probe.prepared_constant_outputs(path) == constants and probe.prepared_constant_outputs(None) is None
    path.write_bytes(pickle.dumps({"cases": [], "onnxruntime": {}}))
    assert probe.prepared_constant_outputs(path) is None


def test_the_largest_error_compares_floats_of_one_shape_with_nans_in_the_same_places():
    import probe

    assert probe.largest_error(np.array([1.0, np.inf, np.nan]), np.array([1.5, np.inf, np.nan])) == 0.5
    assert probe.largest_error(np.array([np.inf]), np.array([-np.inf])) == np.inf
    assert probe.largest_error(np.array([np.nan]), np.array([1.0])) is None
    assert probe.largest_error(np.array([1.0]), np.array([1.0, 2.0])) is None
    assert probe.largest_error(np.array([1]), np.array([1])) is None


def test_what_the_sweep_leaves_not_right_is_recorded_and_check_names_it(tmp_path):
    """record_sweep keeps the models not right after --target with their words, apart from
    those onnx-lower refused with the blockers it named, and the commit that made them; check
    names the swept cases of a node's op, version and type beside its fix."""
    import onnx

    from lowering.target_lowering import check_model

    cases = {"test_hardswish": {"op": "HardSwish", "version": 14, "type": "FLOAT", "verdict": "fails"},
             "test_hardswish_big": {"op": "HardSwish", "version": 14, "type": "FLOAT", "verdict": "fails"},
             "test_relu": {"op": "Relu", "version": 14, "type": "FLOAT", "verdict": "right"}}  # fmt: skip
    made_up_profile(tmp_path, 17, cases)
    results = [
        {"name": "test_hardswish", "before": "fails", "after": "wrong", "after_why": "output 0: largest error 3"},
        {
            "name": "test_hardswish_big",
            "before": "fails",
            "after": "right",
            "after_why": "",
            "partly": ["Div-14 on FLOAT (wrong only on float values the backend's cases lack)"],
        },
        {
            "name": "test_div_wide",
            "before": "wrong",
            "after": "wrong",
            "after_why": "output 0",
            "partly": ["Div-14 on INT32 (wrong only on integers past 2^24)"],
        },
        {"name": "test_relu", "before": "right", "after": "right", "after_why": ""},
        {
            "name": "test_gru",
            "before": "fails",
            "after": "refused by onnx-lower",
            "after_why": "no pattern",
            "blockers": ["GRU-14"],
        },
        {"name": "bert", "before": "wrong", "after": "right in float16", "after_why": "within"},
    ]
    run_sweep.record_sweep("made-up", results, "1.0", "made-up", "0123abcd", profiles=tmp_path)
    written = json.loads((tmp_path / "made-up.json").read_text())
    swept = written["swept"]
    assert swept["onnx_lower"] == "0123abcd" and swept["models"] == 6
    assert swept["not_right"] == {
        "test_hardswish": {"before": "fails", "after": "wrong", "why": "output 0: largest error 3"},
        "test_div_wide": {"before": "wrong", "after": "wrong", "why": "output 0",
                          "partly": ["Div-14 on INT32 (wrong only on integers past 2^24)"]},
    }  # fmt: skip
    assert swept["refused"] == {"test_gru": {"before": "fails", "blockers": ["GRU-14"], "why": "no pattern"}}
    assert swept["totals"]["fails -> wrong"] == 1 and swept["totals"]["wrong -> right in float16"] == 1

    node = helper.make_node("HardSwish", ["x"], ["y"], name="act")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    [finding] = check_model(model, profile_from_data(written), lowerable=frozenset({"HardSwish"}))
    assert "still failed or got wrong 1 swept case(s) of it (onnx-lower 0123abcd)" in str(finding)
    assert "test_hardswish (wrong: output 0: largest error 3)" in finding.as_dict()["swept"]
    divide = helper.make_node("Div", ["n", "n"], ["q"], name="divide")
    graph = helper.make_graph([divide], "g", [helper.make_tensor_value_info("n", onnx.TensorProto.INT32, [2])],
                              [helper.make_tensor_value_info("q", onnx.TensorProto.INT32, [2])])  # fmt: skip
    divided = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    written["cases"]["test_div_wide"] = {"op": "Div", "version": 14, "type": "INT32", "verdict": "wrong"}
    [finding] = check_model(divided, profile_from_data(written), lowerable=frozenset())
    assert ("test_div_wide (wrong: output 0; --target kept Div-14 on INT32 (wrong only on integers past 2^24))"
            in finding.as_dict()["swept"])  # fmt: skip

    # --target says it too, of the node it lowered: a line of the report, and a key of its dict
    report = lower_model(model, target=profile_from_data(written)).report
    assert report.rewritten == {"HardSwish-14 by its function body": 1}
    [line] = [line for line in report.lines() if line.startswith("note: ")]
    assert line.startswith("note: HardSwish-14 on FLOAT: after --target the runtime still failed or got wrong 1 ")
    assert "test_hardswish (wrong: output 0: largest error 3)" in report.as_dict()["swept"]["HardSwish-14 on FLOAT"]


def test_a_case_that_matches_onnxruntime_where_it_misses_its_expected_outputs_is_right_as_onnxruntime(tmp_path):
    """Outside the case's tolerance, a runtime is right as onnxruntime where it matches
    onnxruntime's outputs on the export (onnxruntime.npz) within the tolerance, or where no
    element is further from the expected one than onnxruntime's is or the tolerance allows;
    wrong where it is off at an element onnxruntime gets right, however large onnxruntime's error
    elsewhere, or where onnxruntime's outputs are not known; the largest errors are said."""
    import probe

    want = np.array([1000.0, 0.0, 0.5], np.float32)
    data_sets = [([], [want])]
    onnxruntime = np.array([1000.0001, 2e-5, 0.5], np.float32)  # (rounding: within rtol at 1000, 2e-5 off at 0)
    near = np.array([1000.0, 2e-6, 0.5], np.float32)  # (nearer the expected 0 than onnxruntime)
    assert probe.judged(_Giving(near), b"", data_sets, 1e-3, 1e-7, [])[0] == "wrong"
    verdict, said = probe.judged(_Giving(near), b"", data_sets, 1e-3, 1e-7, [], references=[[onnxruntime]])
    assert verdict == "right as onnxruntime" and said.startswith(
        "output 0: largest error 2e-06, onnxruntime's 0.000122"
    )
    assert probe.judged(_Giving(onnxruntime), b"", data_sets, 1e-3, 1e-7, [], references=[[onnxruntime]])[0] == (
        "right as onnxruntime"
    )
    elsewhere = np.array([1000.0, 0.0, 0.501], np.float32)  # (off at 0.5, where onnxruntime is exact)
    verdict, said = probe.judged(_Giving(elsewhere), b"", data_sets, 1e-3, 1e-7, [], references=[[onnxruntime]])
    assert verdict == "wrong" and said == "output 0: largest error 0.001 (onnxruntime's: 0.000122)"
    far = np.array([1000.0, 3e-5, 0.5], np.float32)  # (further from 0 than onnxruntime)
    assert probe.judged(_Giving(far), b"", data_sets, 1e-3, 1e-7, [], references=[[onnxruntime]])[0] == "wrong"
    assert probe.judged(_Giving(near), b"", data_sets, 1e-3, 1e-7, [], references=[[None]])[0] == "wrong"
    # (per data set its own outputs: the second set's near miss is judged by the second's)
    two_sets = [([], [want]), ([], [want])]
    assert probe.judged(_Giving(near), b"", two_sets, 1e-3, 1e-7, [], references=[[onnxruntime], [onnxruntime]])[0] == (
        "right as onnxruntime"
    )
    assert probe.judged(_Giving(near), b"", two_sets, 1e-3, 1e-7, [], references=[[onnxruntime], [want]])[0] == "wrong"
    assert probe.judged(_Giving(near), b"", two_sets, 1e-3, 1e-7, [], references=[[onnxruntime], None])[0] == "wrong"
    # (where onnxruntime is right, so must the runtime be: the tolerance is not taken twice)
    assert not probe.as_onnxruntime(np.float32([1.0018]), np.float32([1.0]), np.float32([1.0009]), 1e-3, 1e-7)
    # (where onnxruntime departs from the expected outputs by more than rounding, 16 epsilons of
    # the largest expected value, only an output close to onnxruntime's is right as onnxruntime:
    # not one as far off the other way, however large the other values)
    assert not probe.as_onnxruntime(
        np.float32([9.0, 2000]), np.float32([10, 2000]), np.float32([11.05, 2000]), 1e-3, 1e-7
    )
    assert not probe.as_onnxruntime(
        np.float32([-0.9, 1000]), np.float32([0, 1000]), np.float32([0.9, 1000]), 1e-3, 1e-7
    )
    assert not probe.as_onnxruntime(np.float64([-5e-4, 1]), np.float64([0, 1]), np.float64([5e-4, 1]), 1e-3, 1e-7)
    # (rounding is counted in the output type's epsilons: on float16 onnxruntime 4 ulps off at 0.5,
    # the runtime 2 ulps off the other way, both past the tolerance)
    ulp = 2.0**-11
    want16, onnxruntime16 = np.float16([1, 0.5]), np.float16([1, 0.5 + 4 * ulp])
    assert probe.as_onnxruntime(np.float16([1, 0.5 - 2 * ulp]), want16, onnxruntime16, 1e-3, 1e-7)
    assert not probe.as_onnxruntime(np.float16([1, 0.5 - 8 * ulp]), want16, onnxruntime16, 1e-3, 1e-7)
    departed = np.array([1.0, 0.0, 5.0], np.float32)
    want_small = np.array([0.0, 0.0, 5.0], np.float32)
    assert not probe.as_onnxruntime(np.array([-1.0, 0.0, 5.0], np.float32), want_small, departed, 1e-3, 1e-7)
    assert probe.as_onnxruntime(np.array([1.0, 0.0, 5.0], np.float32), want_small, departed, 1e-3, 1e-7)
    infinite = np.array([np.inf, 2.0], np.float32)
    for got in ([-1e30, 2.0], [-np.inf, 2.0], [1.0, 2.5]):
        assert not probe.as_onnxruntime(np.array(got, np.float32), np.float32([1, 2]), infinite, 1e-3, 1e-7), got
    # (an infinity expected and given by onnxruntime: float's lowest value is not it, OpenVINO's
    # ReduceMax of an empty set)
    lowest = np.float32([-np.inf, 1.0])
    assert not probe.as_onnxruntime(np.float32([-3.4028235e38, 1.0]), lowest, lowest.copy(), 1e-3, 1e-7)
    nan_moved = np.array([np.nan, 0.0, 0.5], np.float32)
    assert not probe.as_onnxruntime(nan_moved, want, onnxruntime, 1e-3, 1e-7)
    assert not probe.as_onnxruntime(np.array([1, 0, 0]), np.array([1, 0, 1]), np.array([1, 0, 0]), 1e-3, 1e-7)

    assert run_sweep.onnxruntime_outputs(tmp_path, [want]) is None  # (no onnxruntime.npz)
    np.savez(tmp_path / "onnxruntime.npz", onnxruntime)
    [read] = run_sweep.onnxruntime_outputs(tmp_path, [want])
    assert read.tobytes() == onnxruntime.tobytes()
    assert run_sweep.onnxruntime_outputs(tmp_path, [want, want]) is None  # (other outputs: not compared)

    import onnx

    x, y = (helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [3]) for name in "xy")
    for op, given in (("Neg", [-want]), ("NoSuchOp", None)):  # (what onnxruntime refuses has no reference)
        model = helper.make_model(helper.make_graph([helper.make_node(op, ["x"], ["y"])], "g", [x], [y]))
        computed = prepare_sweep.onnxruntime_outputs(model, {"x": want})
        assert computed is None if given is None else np.array_equal(computed[0], given[0])


def test_target_notes_the_swept_cases_of_the_versions_the_model_was_exported_at(tmp_path):
    """The sweep files a model under its export's op versions: a HardSwish-22 export taken to
    opset 21 (HardSwish-14) is noted by the swept cases of HardSwish-22."""
    cases = {"test_hardswish": {"op": "HardSwish", "version": 22, "type": "FLOAT", "verdict": "fails"},
             "test_hardswish@14": {"op": "HardSwish", "version": 14, "type": "FLOAT",
                                   "verdict": "right"}}  # fmt: skip
    made_up_profile(tmp_path, 21, cases)
    results = [{"name": "test_hardswish", "before": "fails", "after": "wrong", "after_why": "output 0"}]
    run_sweep.record_sweep("made-up", results, "1.0", "made-up", "0123abcd", profiles=tmp_path)
    written = profile_from_data(json.loads((tmp_path / "made-up.json").read_text()))
    node = helper.make_node("HardSwish", ["x"], ["y"], name="act")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, [2])],
                              [helper.make_tensor_value_info("y", 1, [2])])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    result = lower_model(model, target=written)
    assert result.model.opset_import[0].version == 21 and result.report.converted()
    assert list(result.report.swept) == ["HardSwish-22 on FLOAT"]
    assert "test_hardswish (wrong: output 0)" in result.report.swept["HardSwish-22 on FLOAT"]


def test_a_float16_reference_that_overflows_bounds_nothing(tmp_path):
    """onnxruntime's float16 run of an export can overflow (-3.4e38 is -inf in float16): an
    infinite reference error bounds nothing, so the model is judged by the tolerances alone;
    an output of another element type is not compared by its error at all."""
    import probe

    want = np.array([1.0, 2.0], np.float32)
    np.savez(tmp_path / "float16.npz", np.array([np.inf, 2.0], np.float32))

    class _Float16Worker:
        tolerance = {"rtol": 2.0**-9, "atol": 2.0**-9, "arithmetic": "float16"}

    assert run_sweep.float16_bounds(_Float16Worker(), tmp_path, [want]) == [0.0]
    far = np.array([5.0, -7.0], np.float32)
    assert probe.judged(_Giving(far), b"", [([], [want])], 1e-3, 1e-5, [], bounds=[0.0])[0] == "wrong"
    assert probe.largest_error(want.astype(np.float16), want) is None


def test_only_a_whole_sweep_is_recorded(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["run_sweep.py", "tract", str(tmp_path), "--only", "bert", "--record-sweep"])
    with pytest.raises(SystemExit):
        run_sweep.main()
    assert "not with --only" in capsys.readouterr().err


def test_a_sweep_made_of_some_models_makes_only_those_and_is_never_recorded(tmp_path, monkeypatch, capsys):
    """prepare_sweep.py --only makes the models whose names start so and says so in the index;
    run_sweep.py records no sweep of such a folder."""
    x = np.array([1.5, -2.0], np.float32)
    cases = [
        SimpleNamespace(name=name, model=_abs_model(), data_sets=[([x], [np.abs(x)])], rtol=1e-3, atol=1e-7)
        for name in ("test_abs_one", "test_abs_two", "test_neg")
    ]
    monkeypatch.setattr(prepare_sweep, "backend_cases", lambda: cases)
    made = ["prepare_sweep.py", "onnxruntime", str(tmp_path), "--cases-only", "--only", "test_abs"]
    monkeypatch.setattr(sys, "argv", made)
    prepare_sweep.main()
    index = json.loads((tmp_path / "index.json").read_text())
    assert [item["name"] for item in index["items"]] == ["test_abs_one", "test_abs_two"]
    assert index["only"] == ["test_abs"] and (tmp_path / "test_abs_two" / "target.onnx").exists()
    assert not (tmp_path / "test_neg").exists()
    monkeypatch.setattr(sys, "argv", ["run_sweep.py", "onnxruntime", str(tmp_path), "--record-sweep"])
    with pytest.raises(SystemExit):
        run_sweep.main()
    assert "holds only the models named test_abs: a sweep records all" in capsys.readouterr().err


def test_the_nodes_target_kept_partly_right_travel_from_the_index_to_the_results(tmp_path, monkeypatch):
    """prepare_sweep.py writes in each model's index entry the op versions and types of the
    nodes --target kept that the runtime computes wrong on some probed values (OpenVINO 2026.4's
    int32 Div and Less past 2^24, in the BitShift the rule writes), and run_sweep.py carries them
    into its results, beside a model that keeps none."""
    shifted = [c for c in node_cases() if c.name == "test_bitshift_right_int32_negative_input"]
    x = np.array([1.5, -2.0], np.float32)
    plain = SimpleNamespace(name="test_abs", model=_abs_model(), data_sets=[([x], [np.abs(x)])], rtol=1e-3,
                            atol=1e-7)  # fmt: skip
    monkeypatch.setattr(prepare_sweep, "backend_cases", lambda: [*shifted, plain])
    monkeypatch.setattr(sys, "argv", ["prepare_sweep.py", "openvino-2026.4", str(tmp_path), "--cases-only"])
    prepare_sweep.main()
    entries = {item["name"]: item for item in json.loads((tmp_path / "index.json").read_text())["items"]}
    partly = entries["test_bitshift_right_int32_negative_input"]["partly"]
    assert "Div-14 on INT32 (wrong only on integers past 2^24)" in partly and "partly" not in entries["test_abs"]
    monkeypatch.setattr(sys, "argv", ["run_sweep.py", "onnxruntime", str(tmp_path)])
    run_sweep.main()
    results = {result["name"]: result for result in json.loads((tmp_path / "results.json").read_text())}
    assert results["test_bitshift_right_int32_negative_input"]["partly"] == partly
    assert "partly" not in results["test_abs"]


def _abs_model():
    """y = Abs(x), x float [2]."""
    graph = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", 1, [2])], [helper.make_tensor_value_info("y", 1, [2])],
    )  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_the_commit_a_sweep_names_is_marked_where_changes_bear_on_its_models():
    """git status --porcelain=v1 -z: other targets' profiles and docs (which sweeps write) do
    not bear on a target's models; its own profile, code and new files do; a rename counts both
    paths."""
    status = "\0".join([" M docs/targets.md", " M lowering/target_profiles/tvm-0.27.json",
                        " M lowering/target_profiles/rknn.json", "R  lowering/new.py", "lowering/old.py",
                        "?? targets/extra.py", ""])  # fmt: skip
    assert prepare_sweep.changes_bearing_on("rknn", status) == [
        "lowering/target_profiles/rknn.json", "lowering/new.py", "lowering/old.py", "targets/extra.py"
    ]  # fmt: skip
    others = " M docs/targets.md\0 M lowering/target_profiles/rknn.json\0"
    assert prepare_sweep.changes_bearing_on("tract-0.23", others) == []


SWEPT = [name for name in profile_names() if getattr(load_profile(name), "swept", None)]


@pytest.mark.parametrize("name", SWEPT)
def test_in_each_recorded_sweep_target_left_every_model_the_runtime_ran_right_running_right(name):
    """A model the runtime ran right as exported (or right as onnxruntime, or in float16) runs
    right after --target too (right in float16 counts), in every sweep a profile records:
    --target trades no model that runs for one that fails, gives other outputs or is refused
    (as a DFT-17 tract 0.21 runs as onnxruntime does, lowered into a Reshape it fails, would)."""
    swept = load_profile(name).swept
    worse = {}
    for transition, count in swept["totals"].items():
        before, after = transition.split(" -> ")
        if before.startswith("right") and not after.startswith("right"):
            worse[transition] = count
    assert not worse, worse


def test_a_form_is_tried_beside_the_forms_the_profile_takes():
    """A runtime taking the constant factor first tries the values computed ahead with it: the
    tables computed and then put first (``with``), against the factor-first form alone, which
    finds no constant factor (``without``). The factor-first form, made alone, changes nothing
    there, so it has no trial."""
    from support import rotary_runtime, rotary_tables_model

    trials = prepare_sweep.trial_models(rotary_tables_model(), rotary_runtime("constant factor first"), None)
    assert list(trials) == ["values computed ahead"]
    without, made = trials["values computed ahead"]
    products = [list(node.input) for node in without.graph.node if node.op_type == "Mul"]
    assert ["x", "cos"] in products and {"Cos", "Sin"} <= {node.op_type for node in without.graph.node}
    products = [list(node.input) for node in made.graph.node if node.op_type == "Mul"]
    assert products == [["cos", "x"], ["sin", "x"]]


def test_a_form_whose_model_onnx_lower_refuses_is_a_trial_the_form_makes_worse(monkeypatch, tmp_path):
    """Where the model made with a form is refused (its checker fails, say) and the form applies
    to the model made without it, the trial's ``with`` side is onnx-lower's refusal, which
    run_sweep.py reads as such and record_forms counts worse: the form is not taken."""
    from support import rotary_runtime, rotary_tables_model

    import lowering

    lower_model = lowering.lower_model

    def refusing_the_form(model, target, **options):
        if "values computed ahead" in target.model_forms:
            raise lowering.LoweringError("the forms chosen left an invalid model")
        return lower_model(model, target=target, **options)

    monkeypatch.setattr(prepare_sweep.lowering, "lower_model", refusing_the_form)
    trials = prepare_sweep.trial_models(rotary_tables_model(), rotary_runtime("constant factor first"), None)
    without, made = trials["values computed ahead"]
    assert made == "the forms chosen left an invalid model"

    place = tmp_path / "trials" / "values-computed-ahead"
    place.mkdir(parents=True)
    (place / "without.onnx").write_bytes(without.SerializeToString())
    (place / f"with{prepare_sweep.REFUSED}").write_text(made)

    class RightWorker:
        def verdict(self, model, data_sets, rtol, atol, bounds, references):
            return "right", ""

    entry = {"trials": {"values computed ahead": "trials/values-computed-ahead"}, "rtol": 0, "atol": 0}
    found = run_sweep.run_trials(RightWorker(), tmp_path, entry, [])
    assert found["values computed ahead"]["with"] == run_sweep.REFUSED_BY_ONNX_LOWER
    made_up_profile(tmp_path, 17)
    run_sweep.record_forms("made-up", [{"name": "llama", "trials": found}], "1.0", "made-up", profiles=tmp_path)
    written = json.loads((tmp_path / "made-up.json").read_text())
    assert written["model_forms"]["values computed ahead"]["worse"] == ["llama"]


def test_a_form_without_which_onnx_lower_refuses_the_model_is_a_trial_it_makes_better(monkeypatch):
    """The other way: where only the model made with the form is not refused (and the form
    changed it), the trial's ``without`` side is the refusal."""
    from support import rotary_runtime, rotary_tables_model

    import lowering

    lower_model = lowering.lower_model

    def refusing_without_the_form(model, target, **options):
        if "values computed ahead" not in target.model_forms:
            raise lowering.LoweringError("Cos-7 is refused")
        return lower_model(model, target=target, **options)

    monkeypatch.setattr(prepare_sweep.lowering, "lower_model", refusing_without_the_form)
    trials = prepare_sweep.trial_models(rotary_tables_model(), rotary_runtime("constant factor first"), None)
    without, made = trials["values computed ahead"]
    assert without == "Cos-7 is refused" and "Cos" not in {node.op_type for node in made.graph.node}


def test_a_refusal_names_each_blocking_op_once_in_its_order():
    """The blockers prepare_sweep.py records for a refused model: each op and version once, in
    the refusal's order (two Max nodes WebGPU lacks on floats, then an Mod it lacks too)."""
    import onnx

    from lowering.errors import LoweringError

    info = [helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [2]) for name in ("a", "b", "z")]
    nodes = [helper.make_node("Max", ["a", "b"], ["m"]), helper.make_node("Max", ["m", "b"], ["n"], name="second"),
             helper.make_node("Mod", ["n", "b"], ["z"], fmod=1)]  # fmt: skip
    model = helper.make_model(helper.make_graph(nodes, "g", info[:2], info[2:]),
                              opset_imports=[helper.make_opsetid("", 13)])  # fmt: skip
    with pytest.raises(LoweringError) as refused:
        lower_model(model, target="webgpu")
    assert prepare_sweep.blockers_named(refused.value) == ["Max-13", "Mod-13"]
    assert prepare_sweep.blockers_named(LoweringError("no node named")) == []


@pytest.mark.parametrize(
    ("node", "inputs", "parameters"),
    [
        (helper.make_node("ReduceMax", ["x", "axes"], ["y"]), {"x": 1, "axes": 7}, ["axes"]),
        (helper.make_node("Reshape", ["x", "shape"], ["y"]), {"x": 1, "shape": 7}, ["shape"]),
        (helper.make_node("Gather", ["x", "indices"], ["y"]), {"x": 1, "indices": 7}, ["indices"]),
        (helper.make_node("Resize", ["x", "", "scales"], ["y"]), {"x": 1, "scales": 1}, ["scales"]),
        (helper.make_node("Where", ["c", "x", "z"], ["y"]), {"c": 9, "x": 1, "z": 1}, []),
        (helper.make_node("Add", ["x", "z"], ["y"]), {"x": 7, "z": 7}, []),
        (helper.make_node("Conv", ["x", "w"], ["y"]), {"x": 1, "w": 1}, []),
        (helper.make_node("Concat", ["x", "z"], ["y"], axis=0), {"x": 7, "z": 7}, []),
        (helper.make_node("ConstantOfShape", ["shape"], ["y"]), {"shape": 7}, ["shape"]),
        (helper.make_node("Pow", ["x", "z"], ["y"]), {"x": 1, "z": 1}, []),
        (helper.make_node("GridSample", ["x", "grid"], ["y"]), {"x": 1, "grid": 1}, []),
        (helper.make_node("MatMulInteger", ["x", "w"], ["y"]), {"x": 3, "w": 3}, []),
        (helper.make_node("Clip", ["x", "low"], ["y"]), {"x": 1, "low": 1}, []),  # (its data's type: not told)
    ],
)
def test_the_inputs_that_set_a_nodes_parameters_are_told_from_its_data(node, inputs, parameters):
    """A formal input (onnx.defs) of an index type alone (int32, int64), or past the first
    input a fixed tensor(float), that no output shares sets how the node computes (axes, a
    shape, indices, scales); a Where's X and Y, a Pow's exponent, a GridSample's grid, an Add's,
    a Conv's and a MatMulInteger's second input are data."""
    import onnx

    info = [helper.make_tensor_value_info(name, element_type, None) for name, element_type in inputs.items()]
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    assert prepare_sweep.parameters_fed(model) == parameters


def test_a_node_of_another_domain_is_read_at_its_own_domains_opset():
    """An ai.onnx.ml node is looked up at the model's ai.onnx.ml opset (its Y of int64 indices
    is a parameter), and a model importing no default domain is read, not refused."""
    import onnx

    node = helper.make_node("ArrayFeatureExtractor", ["x", "indices"], ["y"], domain="ai.onnx.ml")
    info = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("indices", onnx.TensorProto.INT64, [1])]  # fmt: skip
    graph = helper.make_graph([node], "g", info, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)])
    assert prepare_sweep.parameters_fed(model) == ["indices"]
    del model.opset_import[:]
    assert prepare_sweep.parameters_fed(model) == []


def test_a_case_with_its_parameters_constant_computes_what_it_computes_fed_them():
    """with_constants gives the fed values as initializers, no longer graph inputs: onnxruntime
    computes the same with the other inputs fed."""
    import onnx

    from lowering.verification.runtime import run_onnxruntime

    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x, axes = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1], np.int64)
    constant = prepare_sweep.with_constants(model, {"axes": axes})
    onnx.checker.check_model(constant, full_check=True)
    assert [info.name for info in constant.graph.input] == ["x"] and [i.name for i in model.graph.input] == [
        "x",
        "axes",
    ]
    [want], [got] = run_onnxruntime(model, {"x": x, "axes": axes}), run_onnxruntime(constant, {"x": x})
    assert np.array_equal(got, want) and np.array_equal(got, [3, 12])


def test_a_case_run_with_its_parameters_constant_is_recorded_beside_its_refusal(tmp_path):
    """record_sweep keeps, for a refused or not-right case, what the runtime did with it made
    with its parameters constant (its words on one line); a case without that run has none."""
    made_up_profile(tmp_path, 18)
    ran = {"inputs": ["axes"], "after": "right", "why": ""}
    results = [
        {"name": "test_reduce_max", "before": "fails", "after": "refused by onnx-lower", "after_why": "fed axes",
         "blockers": ["ReduceMax-18"], "constant_parameters": ran},
        {"name": "test_expand", "before": "fails", "after": "wrong", "after_why": "output 0",
         "constant_parameters": {"inputs": ["shape"], "after": "fails", "why": "a\n  b"}},
        {"name": "test_gru", "before": "fails", "after": "refused by onnx-lower", "after_why": "no pattern"},
    ]  # fmt: skip
    run_sweep.record_sweep("made-up", results, "1.0", "made-up", "0123abcd", profiles=tmp_path)
    swept = json.loads((tmp_path / "made-up.json").read_text())["swept"]
    assert swept["refused"]["test_reduce_max"]["constant_parameters"] == ran
    assert "constant_parameters" not in swept["refused"]["test_gru"] and swept["refused"]["test_gru"]["blockers"] == []
    assert swept["not_right"]["test_expand"]["constant_parameters"] == {"inputs": ["shape"], "after": "fails",
                                                                        "why": "a b"}  # fmt: skip


def test_an_old_ir_model_with_its_parameters_constant_no_longer_lists_them_as_inputs():
    """Before IR 4 an initializer must be a graph input too: the model made with constants is
    declared at IR 4 (from onnx.proto), passes the full checker and computes the same."""
    import onnx

    from lowering.ir_versions import unlisted_initializers_ir
    from lowering.verification.runtime import run_onnxruntime

    node = helper.make_node("Tile", ["x", "repeats"], ["y"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("repeats", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [6])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=3)
    x, repeats = np.array([1.5, -2.0], np.float32), np.array([3], np.int64)
    constant = prepare_sweep.with_constants(model, {"repeats": repeats})
    assert constant.ir_version == unlisted_initializers_ir() and model.ir_version == 3
    onnx.checker.check_model(constant, full_check=True)
    [want], [got] = run_onnxruntime(model, {"x": x, "repeats": repeats}), run_onnxruntime(constant, {"x": x})
    assert np.array_equal(got, want)


class _Judge:
    """A runtime that runs every model right, keeping what it was given."""

    def __init__(self):
        self.given = []

    def verdict(self, model, data_sets, rtol, atol, bounds=None, references=None):
        self.given.append(([info.name for info in model.graph.input], [len(inputs) for inputs, _ in data_sets]))
        return "right", ""


def test_a_case_with_its_parameters_constant_runs_fed_only_its_other_inputs(tmp_path):
    """run_constant_parameters feeds the model prepare_sweep.py made with constants only the
    inputs it still has; a model onnx-lower refused so is said refused, with its words."""
    import onnx

    node = helper.make_node("ReduceSum", ["x", "axes"], ["y"])
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
    )  # fmt: skip
    axes = np.array([1], np.int64)
    made = prepare_sweep.with_constants(helper.make_model(graph), {"axes": axes})
    onnx.save(made, tmp_path / f"{prepare_sweep.CONSTANT_PARAMETERS}.onnx")
    entry = {"name": "case", "rtol": 0.0, "atol": 0.0, "constant_parameters": ["axes"]}
    inputs = {"x": np.ones((2, 3), np.float32), "axes": axes}
    judge = _Judge()
    found = run_sweep.run_constant_parameters(judge, tmp_path, entry, inputs, [np.full((2, 1), 3.0, np.float32)])
    assert found == {"inputs": ["axes"], "after": "right", "why": ""} and judge.given == [(["x"], [1])]
    (tmp_path / f"{prepare_sweep.CONSTANT_PARAMETERS}.onnx").unlink()
    (tmp_path / f"{prepare_sweep.CONSTANT_PARAMETERS}{prepare_sweep.REFUSED}").write_text("ReduceSum-13 at ...")
    refused = run_sweep.run_constant_parameters(judge, tmp_path, entry, inputs, [])
    assert refused == {"inputs": ["axes"], "after": run_sweep.REFUSED_BY_ONNX_LOWER, "why": "ReduceSum-13 at ..."}
    assert len(judge.given) == 1


def test_the_docs_count_those_run_with_constants_apart_from_those_onnx_lower_refused_so():
    """Of the swept models with their parameters constant, the docs count those the runtime ran
    right of those it ran, and say apart how many onnx-lower refused to make so."""
    from lowering.docs import parameters_constant_said

    swept = {
        "a": {"constant_parameters": {"after": "right"}},
        "b": {"constant_parameters": {"after": "right as onnxruntime"}},
        "c": {"constant_parameters": {"after": "fails"}},
        "d": {"constant_parameters": {"after": run_sweep.REFUSED_BY_ONNX_LOWER}},
        "e": {},
    }
    assert parameters_constant_said(swept) == "2 right of 3 run, 1 not made"
    assert parameters_constant_said({"e": {}}) == "0 right of 0 run"


def test_the_docs_name_the_nodes_kept_in_the_models_not_right_once_per_model():
    """Of the swept models not right, the docs count those that kept a node the runtime computes
    wrong on some probed values, and name each such op version and type with how many models
    kept it (a model keeping it twice, or on two kinds of values, counted once), most first; of
    a sweep made before it looked for them, "not recorded"."""
    from lowering.docs import partly_kept_said

    not_right = {
        "a": {"partly": ["Div-14 on INT32 (wrong only on integers past 2^24)", "Less-13 on INT32"]},
        "b": {"partly": ["Div-14 on INT32 (wrong only on integers past 2^24)", "Div-14 on INT32"]},
        "c": {},
    }
    swept = {"not_right": not_right, "partly_recorded": True}
    assert partly_kept_said(swept) == "2 of 3: Div-14 on INT32 (2), Less-13 on INT32 (1)"
    assert partly_kept_said(swept, shown=1) == "2 of 3: Div-14 on INT32 (2), and 1 more"
    assert partly_kept_said({"not_right": {"c": {}}, "partly_recorded": True}) == "0 of 1"
    assert partly_kept_said({"not_right": not_right}) == "not recorded"


def test_a_refusal_says_how_many_swept_cases_of_its_op_ran_right_with_their_parameters_constant(tmp_path):
    """A node refused for the target and fed a parameter (its axes) is said with what the sweep
    found of its op version and type: of the cases onnx-lower refused, how many the runtime ran
    right once their parameters were given as constants, which tells the user what to make
    constant; a node given its axes as a constant is not."""
    import onnx

    from lowering.target_lowering import TargetRefused

    cases = {"test_reduce_max": {"op": "ReduceMax", "version": 18, "type": "FLOAT", "verdict": "fails"},
             "test_reduce_max_random": {"op": "ReduceMax", "version": 18, "type": "FLOAT",
                                        "verdict": "fails"}}  # fmt: skip
    made_up_profile(tmp_path, 18, cases)
    refused = {"after": "refused by onnx-lower", "after_why": "fed axes", "blockers": ["ReduceMax-18"]}
    results = [
        {"name": "test_reduce_max", "before": "fails", **refused,
         "constant_parameters": {"inputs": ["axes"], "after": "right", "why": ""}},
        {"name": "test_reduce_max_random", "before": "fails", **refused,
         "constant_parameters": {"inputs": ["axes"], "after": "fails", "why": "no"}},
    ]  # fmt: skip
    run_sweep.record_sweep("made-up", results, "1.0", "made-up", "0123abcd", profiles=tmp_path)
    written = profile_from_data(json.loads((tmp_path / "made-up.json").read_text()))
    node = helper.make_node("ReduceMax", ["x", "axes"], ["y"], name="reduce")
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
              helper.make_tensor_value_info("axes", onnx.TensorProto.INT64, [1])]  # fmt: skip
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    said = ("1 of the 2 swept case(s) of it onnx-lower refused ran right on the runtime with their parameters given "
            "as constants (onnx-lower 0123abcd), and this node is fed its axes at run time")  # fmt: skip
    with pytest.raises(TargetRefused, match=re.escape(said)):
        lower_model(model, target=written)
    constant = prepare_sweep.with_constants(model, {"axes": np.array([1], np.int64)})
    with pytest.raises(TargetRefused) as refused_so:  # (its axes constant already: nothing to say of them)
        lower_model(constant, target=written)
    assert "given as constants" not in str(refused_so.value)


def test_check_says_the_sweeps_words_of_a_node_once_where_target_refuses_it():
    """check's finding whose fix --target does not make takes the refusal's words as its why,
    less what the finding says apart (its verdict, and the sweep's words, said once)."""
    from lowering.report import RemainingOp
    from lowering.runtime_profiles import REFUSED, Verdict
    from lowering.target_lowering import Finding, TargetRefused, fixes_confirmed

    swept = "3 of the 4 swept case(s) of it onnx-lower refused ran right ..."
    finding = Finding("Resize", 19, "FLOAT", "g", "up", Verdict(REFUSED, "fails"), "lowered by its pattern", None,
                      swept)  # fmt: skip
    left = RemainingOp("Resize", 19, finding.location, f"fails; its pattern left it: mode cubic; {swept}", "g", "up")

    def lower():
        raise TargetRefused([left], "made-up")

    resize = helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="cubic")
    model = helper.make_model(helper.make_graph([resize], "g", [], []))
    [confirmed] = fixes_confirmed([finding], lower, model)
    assert str(confirmed).count(swept) == 1 and "its pattern left it: mode cubic" in str(confirmed)
