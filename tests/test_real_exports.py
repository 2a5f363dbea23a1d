"""Real PyTorch exports taken down to opsets 11, 13, 15 and 17 (issue 13): every converted
model passes the full checker and gives the original's onnxruntime outputs; every refusal
today is a strict xfail with the LoweringError's exact words, listed in REFUSED below.

The models lie in golden/exports, written by golden/exports/export_models.py (PyTorch is a
dev tool there, never imported here). A fix that makes a refused pair convert turns its
xfail into a failure (strict): then delete its row from REFUSED.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from support import slow_but_a_sample  # noqa: E402

import lowering
from lowering import schemas
from lowering.verification.runtime import run_onnxruntime

EXPORTS = Path(__file__).resolve().parents[1] / "golden" / "exports"
TARGET_OPSETS = (11, 13, 15, 17)
# float32 tolerances where a function body replaced an op (LayerNormalization's body computes
# the mean and variance in other steps than onnxruntime's kernel); elsewhere bit-identical
RTOL, ATOL = 1e-3, 1e-5

MODELS = (
    "resnet_block",
    "mobilenet_block",
    "vit_block",
    "transformer_encoder",
    "gpt_block",
    "lstm",
    "gru",
    "unet_block",
    "rmsnorm_mlp",
    "conv1d_audio",
    "attention_dynamic",  # batch and length dynamic: its views' sizes computed at run time
)
EXPORTERS = ("torchscript17", "dynamo18", "dynamo23")
# What export_models.py could not write (its export_failures.txt has the full messages)
NOT_EXPORTED = {
    "rmsnorm_mlp_torchscript17": "the TorchScript exporter has no symbolic for aten::rms_norm",
    "transformer_encoder_dynamo23": "onnxruntime 1.32 refuses its Attention-23 with a [2, 1, 1, 10] mask",
}

# The conversions refused today: model, targets, the node that stops it (the first the pass
# meets), its op and version, and why onnx's converter fails (in our words, from its own).
# Further blockers in the same model are in the comments (each would stop it in turn).
NO_ADAPTER = "it has no adapter for {op} from version {since}"
REFUSED_ROWS: tuple = ()  # none today: every pair converts (Trilu and Resize were the last, issue 13)


def export_opset(name: str) -> int:
    """The opset an export was written at, from its name (``gru_dynamo18``: 18)."""
    return int(re.search(r"\d+$", name).group())


def own_opset(model: onnx.ModelProto) -> int:
    return next(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


def refusal(model_name: str, target: int, node: str, op_version: str, reason: str, since) -> str:
    """The LoweringError's message for one row of REFUSED_ROWS."""
    op = op_version.rsplit("-", 1)[0]
    source = export_opset(model_name)
    return (
        f"graph 'main_graph', node '{node}' ({op}): onnx's version converter cannot take {op_version} "
        f"from opset {source} to {target} ({reason.format(op=op, since=since)})"
    )


REFUSED = {
    (model_name, target): refusal(model_name, target, *blocker)
    for model_name, targets, *blocker in REFUSED_ROWS
    for target in targets
}


def export_names() -> list[str]:
    names = [f"{model}_{exporter}" for model in MODELS for exporter in EXPORTERS]
    return [name for name in names if name not in NOT_EXPORTED]


def pairs() -> list[tuple[str, int]]:
    """(export, target) for every target opset below the export's own."""
    return [(name, target) for name in export_names() for target in TARGET_OPSETS if target < export_opset(name)]


def cases() -> list:
    params = []
    for name, target in pairs():
        marks = ()
        if (name, target) in REFUSED:
            marks = pytest.mark.xfail(strict=True, raises=lowering.LoweringError, reason=REFUSED[(name, target)])
        params.append(pytest.param(name, target, marks=marks, id=f"{name}-to{target}"))
    return params


def load(name: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The export, its inputs and PyTorch's outputs, by graph name."""
    model = onnx.load(EXPORTS / f"{name}.onnx")
    with np.load(EXPORTS / f"{name}.npz") as data:
        arrays = {key: data[key] for key in data.files}
    inputs = {key.removeprefix("input:"): value for key, value in arrays.items() if key.startswith("input:")}
    outputs = {key.removeprefix("output:"): value for key, value in arrays.items() if key.startswith("output:")}
    return model, inputs, outputs


def test_the_corpus_is_what_the_export_script_writes():
    on_disk = sorted(path.stem for path in EXPORTS.glob("*.onnx"))
    assert on_disk == sorted(export_names())
    assert sorted(path.stem for path in EXPORTS.glob("*.npz")) == on_disk
    failures = (EXPORTS / "export_failures.txt").read_text()
    assert sorted(line.split(":")[0] for line in failures.splitlines() if not line.startswith("#")) == sorted(
        NOT_EXPORTED
    )


def test_every_refused_row_names_a_pair_that_is_tested():
    assert set(REFUSED) <= set(pairs())


def assert_matches_original(model: onnx.ModelProto, got: list, want: list, within_tolerance: bool) -> None:
    """Each output of the same type and shape as the original's, and bit-identical, or within
    RTOL/ATOL for float32 where a function body replaced an op (``within_tolerance``)."""
    for output, value, expected in zip(model.graph.output, got, want, strict=True):
        assert value.dtype == expected.dtype and value.shape == expected.shape, output.name
        if within_tolerance and value.dtype == np.float32:
            np.testing.assert_allclose(value, expected, rtol=RTOL, atol=ATOL, err_msg=output.name)
        else:
            differing = np.count_nonzero(value.view(np.uint8) != expected.view(np.uint8))
            assert differing == 0, f"{output.name} is not bit-identical: {differing} bytes differ"


@slow_but_a_sample()
@pytest.mark.parametrize("name", export_names())
def test_the_export_runs_in_onnxruntime_as_in_pytorch(name):
    model, inputs, want = load(name)
    assert own_opset(model) == export_opset(name)
    got = run_onnxruntime(model, inputs)
    assert [o.name for o in model.graph.output] == list(want)
    for value, expected in zip(got, want.values(), strict=True):
        np.testing.assert_allclose(value, expected, rtol=RTOL, atol=ATOL)


@slow_but_a_sample()
@pytest.mark.parametrize("name, target", cases())
def test_real_export_goes_down_and_matches_the_original(name, target):
    model, inputs, _ = load(name)
    try:
        result = lowering.lower_model(model, target_opset=target, ops=[])
    except lowering.LoweringError as error:
        expected = REFUSED.get((name, target))
        if expected is not None and str(error) != expected:
            pytest.fail(f"refused for another reason than REFUSED says:\n{error}\nnot\n{expected}")
        raise
    converted = result.model
    onnx.checker.check_model(converted, full_check=True)
    assert own_opset(converted) == target
    want = run_onnxruntime(model, inputs)
    got = run_onnxruntime(converted, inputs)
    by_function_body = [key for key in result.report.rewritten if key.endswith("by its function body")]
    # ops=[]: nothing else is lowered but an op a rule owns that does not exist at the target
    # (Trilu-14 below 14 by its decomposition, bit-exact)
    decomposed = [key for key in result.report.rewritten if key not in by_function_body]
    assert all(schemas.version_in_force(key.rsplit("-", 1)[0], target) is None for key in decomposed), decomposed
    assert_matches_original(model, got, want, within_tolerance=bool(by_function_body))


# The opsets a model taken down to 11 goes back up to: its export's own, and the newest onnxruntime
# 1.32 runs every op of these exports at.
BACK_UP_TO = ("own", 23)


def round_trips() -> list:
    return [
        pytest.param(name, up, id=f"{name}-11-to{up}")
        for name in export_names()
        for up in BACK_UP_TO
        if up == "own" or up > export_opset(name)
    ]


@slow_but_a_sample()
@pytest.mark.parametrize("name, up", round_trips())
def test_real_export_goes_down_to_11_and_back_up_and_matches_the_original(name, up):
    """What went down comes back up: every node lowered to opset 11 (Resize-11, MaxPool-11, the
    primitive nodes of a function body) moves up again, and the model still means the original."""
    model, inputs, _ = load(name)
    target = export_opset(name) if up == "own" else up
    down = lowering.lower_model(model, target_opset=11, ops=[])
    result = lowering.lower_model(down.model, target_opset=target, ops=[])
    onnx.checker.check_model(result.model, full_check=True)
    assert own_opset(result.model) == target
    assert not result.report.rewritten, dict(result.report.rewritten)  # up: nothing decomposed, only moved
    want = run_onnxruntime(model, inputs)
    got = run_onnxruntime(result.model, inputs)
    by_function_body = [key for key in down.report.rewritten if key.endswith("by its function body")]
    assert_matches_original(model, got, want, within_tolerance=bool(by_function_body))
