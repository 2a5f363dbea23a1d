"""What every onnx and onnxruntime the package declares must do (CI runs this module on the
newest and, in .ci/oldest, on the oldest declared): patterns register only the op versions the
installed onnx defines, 8- and 16-bit float constants are written and read whatever onnx maps
them to, and every command ends in a result or a clear refusal, never an internal error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from support import GOLDEN, run_cli_in_process

from lowering import floats, registry, schemas
from lowering.conversion import adapters

NEWER = schemas.newest_opset() + 1  # an op version the installed onnx cannot know


def test_a_pattern_for_versions_newer_than_onnx_serves_the_versions_it_knows():
    """BitCast-26 under onnx 1.18 (opset 23) was "BitCast has no versions [26]": an internal
    error on every command. Such versions are left out; a known version onnx lacks is a typo."""
    assert schemas.defined_versions("Identity", (1, NEWER)) == (1,)
    assert schemas.defined_versions("Identity", (NEWER,)) == ()
    with pytest.raises(ValueError, match="Identity has no versions \\[2\\]"):
        schemas.defined_versions("Identity", (1, 2))

    def probe(b, x):
        """Identity(x) = x."""
        return x

    registry.rule("NotAnOpOfOnnx", versions=(NEWER,))(probe)
    assert registry.rule_for("", "NotAnOpOfOnnx") is None


def test_a_version_step_newer_than_onnx_has_no_adapter_and_no_known_change():
    def crossing(node, context):
        """op-N(x) = op-(N-1)(x)."""
        return [node]

    before = dict(adapters.known_changes())
    assert (
        adapters.adapter(("Identity",), NEWER, "down", "probe", versions=(1, NEWER), reason="new", cases=1)(crossing)
        is crossing
    )
    adapters.known_change(("Identity",), NEWER, "new")
    assert dict(adapters.known_changes()) == before
    assert all(found.version != NEWER for found in adapters.all_adapters())
    assert adapters.HeldAttributes.added_at(NEWER, "Cast").names == frozenset()


@pytest.mark.parametrize("element_type", [onnx.TensorProto.BFLOAT16, *range(17, 21)], ids=schemas.type_name)
def test_8_and_16_bit_float_constants_round_trip_bit_for_bit(element_type):
    """onnx before 1.19 maps bfloat16 to float32 and float8 to placeholder dtypes, and its
    from_array takes no ml_dtypes array ("constant bfloat16_max has the wrong element type")."""
    dtype = floats.numpy_dtype(element_type)
    assert dtype.itemsize == (2 if element_type == onnx.TensorProto.BFLOAT16 else 1)
    bits = np.arange(2 ** (8 * dtype.itemsize), dtype=f"u{dtype.itemsize}")
    tensor = floats.tensor(bits.view(dtype), "every")
    assert tensor.data_type == element_type
    read = floats.array_of(tensor)
    assert read.dtype == dtype and np.array_equal(read.view(bits.dtype), bits)


EXPORTS = sorted((GOLDEN / "exports").glob("*.onnx"))


@pytest.mark.parametrize("export", EXPORTS, ids=lambda path: path.stem)
@pytest.mark.parametrize("options", [("--dry-run", "--ops", "none"), ("--dry-run", "--target-opset", "13")])
def test_every_command_ends_in_a_result_or_a_clear_refusal(export: Path, options):
    completed = run_cli_in_process(str(export), *options)
    assert completed.returncode in (0, 2, 4), completed.stderr  # 4: the nodes that cannot go, each on a line
    assert "internal error" not in completed.stderr, completed.stderr
    if completed.returncode == 2:
        assert completed.stderr.count("\n") == 1, completed.stderr
    if completed.returncode == 4:
        first, *nodes = completed.stderr.splitlines()
        assert first.endswith("(nothing would be written):") and nodes, completed.stderr


def test_the_bundled_example_lowers_and_the_patterns_list():
    assert run_cli_in_process("--list-rules").returncode == 0
    completed = run_cli_in_process(str(GOLDEN.parent / "examples" / "isnan_isinf.onnx"), "--dry-run")
    assert completed.returncode == 0, completed.stderr
    assert "lowered" in completed.stdout
