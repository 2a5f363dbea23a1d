"""The sweep's second oracle (tests/version_cases.py, reference_verdict): onnx.reference judges
ours where onnxruntime leaves it unverified."""

from __future__ import annotations

import onnx
import pytest
from version_cases import KNOWN_REFERENCE_GAPS, STATED_TOLERANCES, node_cases, reference_verdict, sweep_case

import lowering

CASES = {case.name: case for case in node_cases()}


def test_the_tables_name_backend_cases():
    assert set(KNOWN_REFERENCE_GAPS) <= set(CASES)
    assert set(STATED_TOLERANCES) <= set(CASES)


def test_right_wrong_and_cannot():
    case = CASES["test_relu"]
    ours = lowering.lower(case.model, target_opset=13, ops=[])
    assert reference_verdict(ours, case) == ("right", "")
    negated = onnx.ModelProto()
    negated.CopyFrom(ours)
    negated.graph.node[0].op_type = "Neg"
    verdict, detail = reference_verdict(negated, case)
    assert verdict == "wrong" and "values differ" in detail
    unknown = onnx.ModelProto()
    unknown.CopyFrom(ours)
    unknown.graph.node[0].domain = "com.example"
    unknown.opset_import.add(domain="com.example", version=1)
    verdict, detail = reference_verdict(unknown, case)
    assert verdict == "cannot" and detail.startswith("onnx.reference fails on ours")


@pytest.mark.slow
def test_a_rule_is_judged_by_the_tolerance_it_states():
    # DFT-17's inverse at 16, a MatMul by cosine and sine matrices: within DFT_TOLERANCE of the
    # expected outputs, not bit for bit.
    outcome = sweep_case(CASES["test_dft_inverse"], 16, reference=True)
    assert outcome.ours == "converts"
    assert outcome.reference == "right" and "stated tolerance" in outcome.reference_detail


def test_a_bfloat16_body_computed_in_float32_needs_no_tolerance():
    # Celu's expanded case on bfloat16 at 13: Elu by its body, computed in float32 and rounded
    # once (lowering/function_bodies.py float32_widening), gives the expected bits; onnxruntime
    # cannot run the case's own bfloat16 Div. Celu-28 itself goes by its body in float32 too.
    outcome = sweep_case(CASES["test_celu_bfloat16_expanded"], 13, reference=True)
    assert outcome.ours == "does not run"
    assert (outcome.reference, outcome.reference_detail) == ("right", "")
    assert sweep_case(CASES["test_celu_bfloat16"], 13, reference=True).ours == "converts"


def test_a_known_gap_is_cannot_not_wrong():
    # onnx.reference runs ours, RoiAlign-10, with RoiAlign-16's default half_pixel
    outcome = sweep_case(CASES["test_roialign_aligned_false"], 11, reference=True)
    assert not outcome.comparable and outcome.ours == "converts" and not outcome.ours_wrong
    assert outcome.reference == "cannot" and "RoiAlign-10" in outcome.reference_detail


def test_without_reference_nothing_is_judged():
    outcome = sweep_case(CASES["test_celu_bfloat16"], 13)
    assert (outcome.reference, outcome.reference_detail) == ("", "")


def test_a_run_past_its_time_is_cannot(monkeypatch):
    import version_cases

    monkeypatch.setattr(version_cases, "REFERENCE_SECONDS", 1e-6)
    case = CASES["test_relu"]
    verdict, detail = reference_verdict(lowering.lower(case.model, target_opset=13, ops=[]), case)
    assert verdict == "cannot" and "took over" in detail
