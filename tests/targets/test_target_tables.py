"""Target profiles read from published support tables (targets/read_table.py,
lowering/runtime_profiles.py's TableProfile): a table excerpt reads into the verdicts it states;
the shipped profiles are what the script reads from the committed copies, name their commit, and
refuse what their table lacks; a model goes through check and ``--target`` with them."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from support import REPO, assert_same_bits, make_model, run_cli_in_process, runs_in_onnxruntime

import lowering
from lowering import schemas
from lowering.api import lowerable_ops
from lowering.runtime_profiles import (
    PARTLY,
    PROFILES,
    REFUSED,
    SUPPORTED,
    UNVERIFIED,
    TableProfile,
    load_profile,
    profile_from_data,
)
from lowering.target_lowering import check_model


def read_table_module():
    spec = importlib.util.spec_from_file_location("read_table", REPO / "targets" / "read_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


READ_TABLE = read_table_module()
SOURCE = {"repo": "example/runtime", "path": "docs/operators.md", "ref": "main", "commit": "0" * 40}

TENSORRT_LIKE = """# Supported ONNX Operators

Example 1.0 supports operators in the inclusive range of opset 9 to opset 20. More below.

| Operator                  | Supported  | Supported Types | Restrictions |
|---------------------------|------------|-----------------|--------------|
| Abs                       | Y          | FP32, FP16, INT32 |
| AveragePool               | Y          | FP32, FP16 | 2D or 3D Pooling only.<br />`dilations` must be all ones |
| Bernoulli                 | N          |
| ConstantOfShape           | Y          | FP32 |
| DequantizeLinear          | Y          | INT8, FP8 | `x_zero_point` must be zero |
| IsInf                     | Y          | FP32, FP16
| Split                     | Y          | FP32, INT64 BOOL, |
"""

WEBGPU_LIKE = """## Operators Support Table

| Operator | Opset | Comments |
|:--------:|:-------------:|-----|
| Abs | ai.onnx(6-12,13+) |  |
| FastGelu | com.microsoft(1+) |  |
| Gelu | ai.onnx(20+); com.microsoft(1+) |  |
| Resize | ai.onnx(10,11-12,13-17,18,19+); com.ms.internal.nhwc(10,19+) | align_corners not with downsampling |
"""


def excerpt_profile(text: str) -> TableProfile:
    data = READ_TABLE.table_profile(text, "made-up", runtime="made-up", runtime_version="1.0", source=SOURCE)
    profile = profile_from_data(json.loads(json.dumps(data)))  # (as written and read back)
    assert isinstance(profile, TableProfile)
    return profile


def test_the_table_s_type_names_are_onnx_s():
    names = {token: READ_TABLE.onnx_type_name(token) for token in ["FP32", "FP16", "BF16", "INT64", "BOOL", "INT4"]}
    assert names == {"FP32": "FLOAT", "FP16": "FLOAT16", "BF16": "BFLOAT16", "INT64": "INT64", "BOOL": "BOOL",
                     "INT4": "INT4"}  # fmt: skip
    assert READ_TABLE.onnx_type_name("FP8") is None  # (onnx has four 8-bit float types)
    assert READ_TABLE.onnx_type_name("INF64") is None


def test_a_type_the_runtime_describes_is_the_onnx_type_of_that_layout():
    """TensorRT's FP8, in its own words, is the one onnx float of 1 sign, 4 exponent and 3
    mantissa bits with exponent bias 7 (FLOAT8E4M3FN; bias 8 is FLOAT8E4M3FNUZ); words that
    name no layout, or one no onnx type has, give none."""
    words = "Signed 8-bit floating point with 1 sign bit, 4 exponent bits, 3 mantissa bits, and exponent-bias {}."
    assert READ_TABLE.onnx_type_name("FP8", {"FP8": words.format(7)}) == "FLOAT8E4M3FN"
    assert READ_TABLE.type_of_layout(words.format(8)) == "FLOAT8E4M3FNUZ"
    assert READ_TABLE.type_of_layout(words.format(9)) is None
    assert READ_TABLE.type_of_layout("an 8-bit float") is None
    assert load_profile("tensorrt-10").verdict("DequantizeLinear", 19, "FLOAT8E4M3FN").kind == PARTLY  # (a restriction)
    assert load_profile("tensorrt-10").verdict("DequantizeLinear", 19, "FLOAT8E5M2").kind == REFUSED


def test_a_tensorrt_like_excerpt_reads_into_its_verdicts():
    profile = excerpt_profile(TENSORRT_LIKE)
    assert profile.opsets == tuple(range(9, 21))
    assert profile.source["opsets_stated"].startswith("Example 1.0 supports operators in the inclusive range")
    assert profile.verdict("Abs", 13, "FLOAT").kind == SUPPORTED
    assert profile.verdict("Abs", 13, "INT32").kind == SUPPORTED
    refused = profile.verdict("Abs", 13, "DOUBLE")
    assert refused.kind == REFUSED and refused.why.endswith("lists Abs on FLOAT, FLOAT16, INT32, not DOUBLE")
    assert profile.verdict("Abs", 13, "").kind == UNVERIFIED  # (the node's type is unknown)
    assert profile.verdict("Abs", 1, "FLOAT").kind == REFUSED  # (Abs-1 is in force at none of opsets 9-20)
    partly = profile.verdict("AveragePool", 19, "FLOAT")
    assert partly.kind == PARTLY and partly.why.endswith("2D or 3D Pooling only. `dilations` must be all ones")
    assert profile.verdict("Bernoulli", 15, "FLOAT").why.startswith("Bernoulli is marked N")
    missing = profile.verdict("Mish", 18, "FLOAT")
    assert missing.kind == REFUSED and missing.why == "Mish is not in docs/operators.md of example/runtime at main"
    assert profile.verdict("IsInf", 20, "FLOAT16").kind == SUPPORTED  # (a row without its closing |)
    assert profile.verdict("Split", 18, "BOOL").kind == SUPPORTED  # (a comma missing, one trailing)
    # ConstantOfShape's input is always INT64: FLOAT names its output, so INT64 is not judged
    assert profile.verdict("ConstantOfShape", 20, "INT64").kind == UNVERIFIED
    assert profile.unread == ("DequantizeLinear: 'FP8' names no single onnx element type",)
    assert profile.verdict("DequantizeLinear", 19, "INT8").kind == PARTLY
    assert profile.opset_verdict(20).kind == SUPPORTED and profile.opset_verdict(21).kind == REFUSED
    assert profile.opset_for(23) == 20 and profile.opset_for(7) == 9
    assert profile.counts() == {SUPPORTED: 4, PARTLY: 2, REFUSED: 1}


def test_a_webgpu_like_excerpt_reads_op_versions_and_no_types_or_opsets():
    profile = excerpt_profile(WEBGPU_LIKE)
    assert profile.opsets == () and profile.opset_verdict(21).kind == UNVERIFIED and profile.opset_for(21) == 21
    assert profile.verdict("Abs", 6, "DOUBLE").kind == SUPPORTED  # (the table names no types)
    assert profile.verdict("Abs", 13, "").kind == SUPPORTED
    assert profile.verdict("Abs", 1, "FLOAT") == profile.verdict("Abs", 1, "FLOAT16")
    assert profile.verdict("Abs", 1, "FLOAT").why.endswith("lists Abs at opsets 6-12,13+, not Abs-1")
    assert profile.verdict("Gelu", 20, "FLOAT").kind == SUPPORTED
    assert profile.verdict("FastGelu", 1, "FLOAT").kind == REFUSED  # (com.microsoft's only)
    assert profile.verdict("Resize", 19, "FLOAT").kind == PARTLY
    assert profile.verdict("Resize", 10, "FLOAT").kind == PARTLY


KERNELS_LIKE = """## Operators implemented by CPUExecutionProvider

| Op Name | Parameters | OpSet Version | Types Supported |
|---------|------------|---------------|-----------------|
|**Operator Domain:** *ai.onnx*||||
|Abs|*in* X:**T**<br> *out* Y:**T**|13+|**T** = tensor(double), tensor(float)|

## Operators implemented by CUDAExecutionProvider

| Op Name | Parameters | OpSet Version | Types Supported |
|---------|------------|---------------|-----------------|
|**Operator Domain:** *ai.onnx*||||
|Add|*in* A:**T**<br> *in* B:**T**<br> *out* C:**T**|14+|**T** = tensor(bfloat16), tensor(float), tensor(int64)|
|||[7, 12]|**T** = tensor(double), tensor(float)|
|Cast|*in* input:**T1**<br> *out* output:**T2**|19+|**T1** = tensor(bool), tensor(float)<br/> **T2** = tensor(float16)|
|Col2Im|*in* input:**tensor(float)**<br> *in* image_shape:**tensor(int64)**|18+||
|DequantizeLinear|*in* x:**T**<br> *out* y:**tensor(float)**<br><br>or<br><br>*in* x:**T1**<br> *in* x_scale:**T2**|21+|**T1** = tensor(int8), tensor(uint8)<br/> **T2** = tensor(float)|
|||[13, 18]|**T** = tensor(int8)|
|Equal|*in* A:**T**<br> *in* B:**T**<br> *out* C:**T1**|7+|**T** = tensor(float)<br/> **T1** = tensor(bool)|
|Identity|*in* input:**T**<br> *out* output:**T**<br><br>or<br><br>*in* input:**V**<br> *out* output:**V**|19+|**V** = seq(tensor(float)), tensor(bool), tensor(float)|
|RandomNormal|*out* output:**T**|1+|**T** = tensor(double)|
|**Operator Domain:** *com.microsoft*||||
|FastGelu|*in* X:**T**<br> *out* Y:**T**|1+|**T** = tensor(float)|
|Gelu|*in* X:**T**<br> *out* Y:**T**|1+|**T** = tensor(float)|
"""  # noqa: E501 (rows as the file writes them)


def kernels_profile(**options) -> TableProfile:
    data = READ_TABLE.table_profile(KERNELS_LIKE, "made-up", runtime="made-up", runtime_version="1.0",
                                    source=SOURCE, section="CUDAExecutionProvider", **options)  # fmt: skip
    profile = profile_from_data(json.loads(json.dumps(data)))
    assert isinstance(profile, TableProfile)
    return profile


def test_an_onnxruntime_kernel_table_reads_each_kernel_s_versions_and_first_input_types():
    """One provider's section; each row a kernel (a row with no op name: another kernel of the op
    above), its types those of the constraint the first input is bound to (of the signature
    whose constraint the row lists; a type named in the signature; the first output's where there
    is no input); sequence types are not element types; other domains' ops are not ONNX's."""
    profile = kernels_profile()
    assert profile.table == "docs/operators.md (CUDAExecutionProvider) of example/runtime at main"
    assert "Abs" not in profile.ops  # (the CPU provider's section)
    assert profile.verdict("Add", 14, "BFLOAT16").kind == SUPPORTED
    assert (
        profile.verdict("Add", 7, "DOUBLE").kind == SUPPORTED and profile.verdict("Add", 14, "DOUBLE").kind == REFUSED
    )
    assert profile.verdict("Add", 13, "FLOAT").why.endswith("lists Add at opsets 14+, [7, 12], not Add-13")
    assert profile.verdict("Cast", 19, "BOOL").kind == SUPPORTED  # (T1: the input's; T2 the output's)
    assert profile.verdict("Cast", 19, "FLOAT16").kind == REFUSED
    assert (
        profile.verdict("Col2Im", 18, "FLOAT").kind == SUPPORTED
        and profile.verdict("Col2Im", 18, "DOUBLE").kind == REFUSED
    )
    assert profile.verdict("DequantizeLinear", 21, "UINT8").kind == SUPPORTED  # (the second signature's T1)
    assert profile.verdict("DequantizeLinear", 13, "UINT8").kind == REFUSED  # (the older kernel: T, int8 only)
    assert profile.verdict("Identity", 19, "BOOL").kind == SUPPORTED and profile.ops["Identity"]["kernels"] == [
        {"versions": [19, 19], "types": ["BOOL", "FLOAT"]}  # ("19+": a kernel of no end version, for 19 alone)
    ]
    assert profile.verdict("Identity", 21, "BOOL").kind == REFUSED  # (the "19+" kernel is Identity-19's alone)
    assert profile.verdict("RandomNormal", 1, "DOUBLE").kind == SUPPORTED  # (its output's type)
    # a kernel's types are its first input's, read so: none it lists is a type Equal-7 takes
    assert profile.verdict("Equal", 7, "INT32").why.endswith("lists Equal on FLOAT, not INT32")
    assert profile.verdict("Gelu", 20, "FLOAT").kind == REFUSED  # (com.microsoft's Gelu only)
    read = READ_TABLE.read_kernel_table(KERNELS_LIKE, "CUDAExecutionProvider")
    assert read["other_domains"] == {
        "FastGelu": "com.microsoft", "Gelu": "com.microsoft"}  # fmt: skip
    assert profile.opsets == () and profile.unread == ()
    with pytest.raises(ValueError, match="no section 'Operators implemented by Dml"):
        READ_TABLE.read_kernel_table(KERNELS_LIKE, "DmlExecutionProvider")


def test_a_kernel_table_takes_an_op_run_without_a_kernel_and_the_opsets_of_the_runtime_s_onnx():
    """Constant has no kernel (onnxruntime makes it an initializer): named with the runtime's
    words it is supported on every type. The opsets: the oldest from the runtime's sentence, the
    newest the onnx release's (1.18.0: 23), and the newest IR version it loads, that release's
    (11). A kernel listed ``21+`` takes version 21 alone (onnxruntime matches a kernel of no end
    version to its own version), so DequantizeLinear-23 is refused; Constant-24 is past the opsets."""
    sentence = "All versions of the runtime support opsets all the way back to (and including) opset version 7."
    profile = kernels_profile(without_kernel={"Constant": "made an initializer"},
                              opsets=READ_TABLE.opsets_of_release(sentence, "1.18.0"))  # fmt: skip
    assert profile.verdict("Constant", 21, "FLOAT8E4M3FN").kind == SUPPORTED
    assert profile.opsets == tuple(range(7, 24)) and profile.ir_version == 11
    assert profile.source["opsets_stated"].endswith("Built with onnx 1.18.0 (opsets to 23, IR version 11).")
    assert profile.verdict("DequantizeLinear", 21, "INT8").kind == SUPPORTED
    assert profile.verdict("DequantizeLinear", 23, "INT8").why.endswith(
        "lists DequantizeLinear at opsets 21+, [13, 18], not DequantizeLinear-23"
    )
    assert profile.verdict("Constant", 24, "FLOAT").why.startswith("Constant-24 is in force at none of opsets 7-23")
    with pytest.raises(ValueError, match="Add is in the table: it is not run without a kernel"):
        kernels_profile(without_kernel={"Add": "no kernel"})
    with pytest.raises(ValueError, match="names no oldest opset"):
        READ_TABLE.opsets_of_release("It loads every opset.", "1.18.0")


TRT, ORT = "onnx/onnx-tensorrt", "microsoft/onnxruntime"
SHIPPED = {  # name: repository, path, commit, the copy read
    "tensorrt-10": (TRT, "docs/operators.md", "96e781103cfc4adf4a6bb557e94bac8e693f6f4c", "tensorrt-10.md"),
    "tensorrt-8.6": (TRT, "docs/operators.md", "ee0b139bc68567a89618c1d84dcd461cc144aad4", "tensorrt-8.6.md"),
    "webgpu": (ORT, "js/web/docs/webgpu-operators.md", "2a4cfab46a8e9159f35b2418ab401937dd8b6502", "webgpu.md"),
    "onnxruntime-cuda": ("microsoft/onnxruntime", "docs/OperatorKernels.md", "30c5f05911c06dc8b0f290122ba0d6ea524fe336",
                         "onnxruntime-kernels.md"),
    "onnxruntime-dml": ("microsoft/onnxruntime", "docs/OperatorKernels.md", "30c5f05911c06dc8b0f290122ba0d6ea524fe336",
                        "onnxruntime-kernels.md"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_a_shipped_table_profile_is_what_the_script_reads_from_its_copy(name):
    """It names its repository, path and commit; the committed copy is the file it read (its
    sha256); reading that copy again gives the same ops, opsets and unread cells."""
    data = json.loads((PROFILES / f"{name}.json").read_text())
    repo, path, commit, copy = SHIPPED[name]
    source = data["source"]
    assert data["kind"] == source["kind"] == "table" and data["name"] == name
    assert (source["repo"], source["path"], source["commit"]) == (repo, path, commit)
    assert source["how"].startswith(f"python targets/read_table.py targets/tables/{copy} {name} ")
    text = (REPO / "targets" / "tables" / copy).read_text()
    assert hashlib.sha256(text.encode()).hexdigest() == source["sha256"]
    described = {token: entry["words"] for token, entry in source.get("types_described", {}).items()}
    without_kernel = {op: entry["words"] for op, entry in source.get("without_kernel", {}).items()}
    opsets = None
    if "opsets_from" in source:
        opsets = READ_TABLE.opsets_of_release(source["opsets_from"]["sentence"], source["opsets_from"]["onnx_release"])
    again = READ_TABLE.table_profile(text, name, runtime="-", runtime_version="-", source={}, described=described,
                                     section=source.get("section"), without_kernel=without_kernel or None,
                                     opsets=opsets)  # fmt: skip
    assert {key: again[key] for key in ("ops", "opsets", "unread", "other_domains")} == {
        key: data[key] for key in ("ops", "opsets", "unread", "other_domains")
    }
    profile = load_profile(name)
    assert isinstance(profile, TableProfile) and commit[:12] in profile.describe()
    known = [op for op in profile.ops if schemas.op_versions(op)]
    assert len(known) >= 0.9 * len(profile.ops) > 50  # (a few rows name ops onnx dropped: ImageScaler)


def test_the_tensorrt_profiles_say_what_their_tables_say():
    tensorrt_10, tensorrt_8 = load_profile("tensorrt-10"), load_profile("tensorrt-8.6")
    assert tensorrt_10.opsets == tuple(range(9, 21)) and tensorrt_8.opsets == tuple(range(1, 18))
    assert tensorrt_10.verdict("CumProd", 26, "FLOAT").why == (
        "CumProd is not in docs/operators.md of onnx/onnx-tensorrt at release/10.1-GA"
    )
    assert tensorrt_10.verdict("BitwiseAnd", 18, "INT32").kind == REFUSED  # (marked N)
    assert tensorrt_10.verdict("Mish", 18, "FLOAT").kind == SUPPORTED  # "| Mish | Y | FP32, FP16 |"
    assert tensorrt_10.verdict("Mish", 18, "BFLOAT16").kind == REFUSED
    assert tensorrt_10.verdict("IsNaN", 13, "INT64").kind == SUPPORTED
    assert "`axes` must be an initializer" in tensorrt_10.verdict("ReduceSum", 13, "FLOAT").why
    assert tensorrt_8.verdict("Mish", 18, "FLOAT").kind == REFUSED  # (not in 8.6's table)
    assert tensorrt_8.verdict("Hardmax", 13, "FLOAT").why.startswith("Hardmax is marked N")
    assert tensorrt_8.verdict("IsInf", 10, "FLOAT").kind == SUPPORTED
    assert tensorrt_8.opset_verdict(18).kind == REFUSED and "up to Opset 17" in tensorrt_8.opset_verdict(18).why


def test_the_webgpu_profile_says_what_its_table_says():
    webgpu = load_profile("webgpu")
    assert webgpu.opsets == tuple(range(7, 23)) and webgpu.ir_version == 10  # (onnx 1.17.0's)
    assert webgpu.opset_verdict(17).kind == SUPPORTED and webgpu.opset_verdict(23).kind == REFUSED
    assert webgpu.verdict("IsInf", 20, "FLOAT").kind == REFUSED  # (not in the table)
    assert webgpu.verdict("CumSum", 14, "FLOAT").kind == SUPPORTED  # "| CumSum | ai.onnx(11-13,14+) |"
    assert webgpu.verdict("Gemm", 6, "FLOAT").kind == REFUSED  # "ai.onnx(7-8,9-10,11-12,13+)"
    assert webgpu.verdict("Gemm", 13, "FLOAT").kind == SUPPORTED
    assert webgpu.verdict("Cos", 22, "FLOAT").kind == REFUSED  # "| Cos | ai.onnx(7+) |": Cos-7 alone
    assert webgpu.verdict("MatMulNBits", 1, "FLOAT").kind == REFUSED  # (com.microsoft's only)
    assert "MatMulNBits" in json.loads((PROFILES / "webgpu.json").read_text())["other_domains"]


def test_the_onnxruntime_provider_profiles_say_what_their_sections_say():
    """CUDA's and DirectML's kernels, from onnxruntime's OperatorKernels.md: per kernel version
    and first-input type; Constant runs without a kernel; opsets 7-23 (onnx 1.18.0)."""
    cuda, dml = load_profile("onnxruntime-cuda"), load_profile("onnxruntime-dml")
    assert cuda.opsets == dml.opsets == tuple(range(7, 24))
    assert cuda.source["section"] == "CUDAExecutionProvider" and dml.source["section"] == "DmlExecutionProvider"
    # "|Add|...|14+|**T** = tensor(bfloat16), tensor(double), tensor(float), tensor(float16), tensor(int16), ..."
    assert cuda.verdict("Add", 14, "INT16").kind == SUPPORTED and cuda.verdict("Add", 14, "BOOL").kind == REFUSED
    assert cuda.verdict("Add", 13, "INT16").kind == REFUSED  # "|||13|**T** = tensor(bfloat16), tensor(double), ..."
    no_kernel = cuda.verdict("BitwiseAnd", 18, "INT32").why
    assert no_kernel.startswith("BitwiseAnd is not in docs/OperatorKernels.md (CUDAExecutionProvider) of microsoft/")
    assert cuda.verdict("Gelu", 20, "FLOAT").kind == SUPPORTED and dml.verdict("Gelu", 20, "FLOAT").kind == REFUSED
    assert cuda.verdict("Constant", 21, "BFLOAT16").kind == dml.verdict("Constant", 13, "STRING").kind == SUPPORTED
    assert cuda.unread == dml.unread == ()
    # DML lists each version as its own kernel: "|Clip|...|13+|...int32...", "|||11+|**T** = tensor(float), ..."
    assert dml.verdict("Clip", 13, "INT32").kind == SUPPORTED and dml.verdict("Clip", 11, "INT32").kind == REFUSED
    assert dml.verdict("Dropout", 13, "FLOAT").kind == REFUSED  # "|Dropout|...|7+|": Dropout-7's alone
    assert dml.verdict("Equal", 7, "INT32").kind == REFUSED  # "|||7+|**T** = tensor(float), tensor(float16)|"
    # "|LayerNormalization|...X:**T**...<br><br>or<br><br>...|17+|**T** = tensor(bfloat16), ...<br/> **U** = ..."
    assert cuda.verdict("LayerNormalization", 17, "BFLOAT16").kind == SUPPORTED
    assert dml.verdict("LayerNormalization", 17, "BFLOAT16").kind == REFUSED  # "**T** = tensor(float), tensor(float16)"
    assert cuda.ir_version == dml.ir_version == 11


def bitwise_and_model() -> onnx.ModelProto:
    nodes = [helper.make_node("BitwiseAnd", ["a", "b"], ["c"], name="and")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT32, [6]) for name in "ab"]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.INT32, [6])], opset=18)


def rms_normalization_model() -> onnx.ModelProto:
    nodes = [helper.make_node("RMSNormalization", ["x", "scale"], ["y"], name="rms", axis=-1)]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT, [4]),
    ]
    return make_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], opset=23)


def test_check_with_a_table_profile_finds_what_blocks_and_its_fix():
    findings = check_model(rms_normalization_model(), "tensorrt-10", lowerable=lowerable_ops())
    blockers = [(f.op_type, f.node, f.fix) for f in findings if f.blocks]
    assert blockers == [
        ("(opset)", "", "converted to opset 20"),
        ("RMSNormalization", "rms", "lowered by its pattern (--ops RMSNormalization)"),
    ]
    assert "inclusive range of opset 9 to opset 20" in findings[0].verdict.why
    webgpu = check_model(bitwise_and_model(), "webgpu", lowerable=lowerable_ops())
    assert [(f.op_type, f.verdict.kind) for f in webgpu] == [("BitwiseAnd", REFUSED)]  # (opset 18 is one it loads)


@pytest.mark.parametrize(
    "model, feeds, gone, rtol",
    [
        (rms_normalization_model, {"x": np.linspace(-3, 5, 8, dtype=np.float32).reshape(2, 4),
                                   "scale": np.array([1, 0.5, -2, 3], np.float32)}, "RMSNormalization", 1e-3),
        (bitwise_and_model, {"a": np.array([0, -1, 7, -8, 2**31 - 1, -(2**31)], np.int32),
                             "b": np.array([5, 12, -1, 3, -2, -(2**31)], np.int32)}, "BitwiseAnd", None),
    ],
)  # fmt: skip
def test_a_model_lowered_for_tensorrt_10_holds_nothing_it_refuses_and_means_the_same(model, feeds, gone, rtol):
    """RMSNormalization (not in TensorRT 10's table, after opset 20) and BitwiseAnd (marked N):
    lowered, the result is at an opset the table states, holds no op it refuses, and gives the
    original's outputs in onnxruntime: bit for bit (BitwiseAnd's pattern), or within the
    tolerance docs/function-bodies.md states (RMSNormalization's function body rounds apart)."""
    original = model()
    lowered = lowering.lower(original, target="tensorrt-10")
    assert schemas.default_opset(lowered.opset_import) in range(9, 21)
    assert gone not in {node.op_type for node in lowered.graph.node}
    assert not [f for f in check_model(lowered, "tensorrt-10") if f.blocks]
    onnx.checker.check_model(lowered, full_check=True)
    want, got = runs_in_onnxruntime(original, feeds), runs_in_onnxruntime(lowered, feeds)
    assert want is not None and got is not None
    for got_output, want_output in zip(got, want, strict=True):
        if rtol is None:
            assert_same_bits(got_output, want_output, gone)
        else:
            assert got_output.dtype == want_output.dtype
            np.testing.assert_allclose(got_output, want_output, rtol=rtol, atol=1e-7)


def test_a_model_for_onnxruntime_s_cuda_provider_is_taken_to_its_opsets_and_lowered_where_it_has_no_kernel():
    """A BitwiseAnd-18 (no CUDA kernel: onnxruntime would run it on the CPU) beside a Constant
    (no kernel needed), at opset 25 (past onnx 1.18.0's 23) and onnx's newest IR version (past
    1.18.0's 11): the opset is a blocker fixed by converting, the IR version by declaring 11,
    BitwiseAnd by its pattern. That pattern writes Casts, and CUDA's Cast kernel of no end
    version is Cast-19's alone: at 23 they are Cast-21's, so --target takes the model to 20.
    After it nothing blocks, onnx's checker passes at IR 11, and the outputs are the original's
    bit for bit."""
    nodes = [
        helper.make_node(
            "Constant", [], ["mask"], value=helper.make_tensor("m", TensorProto.INT32, [6], [7, -1, 0, 5, -8, 3])
        ),
        helper.make_node("BitwiseAnd", ["a", "mask"], ["c"], name="and"),
    ]
    inputs = [helper.make_tensor_value_info("a", TensorProto.INT32, [6])]
    model = make_model(nodes, inputs, [helper.make_tensor_value_info("c", TensorProto.INT32, [6])], opset=25)
    blockers = [
        (f.op_type, f.fix) for f in check_model(model, "onnxruntime-cuda", lowerable=lowerable_ops()) if f.blocks
    ]
    assert blockers == [
        ("(opset)", "converted to opset 23"),
        ("(IR version)", "IR version 11 declared"),
        ("BitwiseAnd", "lowered by its pattern (--ops BitwiseAnd)"),
    ]
    assert model.ir_version > 11
    lowered = lowering.lower(model, target="onnxruntime-cuda")
    assert schemas.default_opset(lowered.opset_import) == 20 and lowered.ir_version == 11
    assert "Cast" in {node.op_type for node in lowered.graph.node}  # (Cast-19 at opset 20)
    assert "BitwiseAnd" not in {node.op_type for node in lowered.graph.node}
    assert not [f for f in check_model(lowered, "onnxruntime-cuda") if f.blocks]
    onnx.checker.check_model(lowered, full_check=True)
    feeds = {"a": np.array([0, -1, 7, 2**31 - 1, -(2**31), 12], np.int32)}
    want, got = runs_in_onnxruntime(model, feeds), runs_in_onnxruntime(lowered, feeds)
    assert want is not None and got is not None
    assert_same_bits(got[0], want[0], "BitwiseAnd")


def test_the_command_line_checks_against_a_table_profile(tmp_path):
    path = tmp_path / "and.onnx"
    onnx.save(bitwise_and_model(), path)
    result = run_cli_in_process("check", str(path), "--target", "tensorrt-10")
    assert result.returncode == 1
    assert re.search(r"blocks: BitwiseAnd-18 on INT32 .*: refused: BitwiseAnd is marked N", result.stdout)
    assert "tensorrt-10 (TensorRT 10.1: opsets 9-20; table ops 110 supported" in result.stdout


def test_an_op_a_table_lists_with_a_restriction_keeps_the_runtimes_kernel():
    """TensorRT 10 lists LSTM with restrictions (bidirectional activations, input_forget,
    layout): text not checked against the node here, so --target keeps LSTM as it is rather
    than unroll it into primitive ops; the probe-based 'partly' lowers, the table's does not."""
    hidden, size = 3, 4
    weights = np.random.default_rng(5).standard_normal((1, 4 * hidden, size)).astype(np.float32)
    recurrence = np.random.default_rng(6).standard_normal((1, 4 * hidden, hidden)).astype(np.float32)
    model = make_model(
        [helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=hidden)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 1, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 1, hidden])],
        opset=17,
        initializer=[onnx.numpy_helper.from_array(weights, "w"), onnx.numpy_helper.from_array(recurrence, "r")],
    )
    assert load_profile("tensorrt-10").verdict("LSTM", 14, "FLOAT").kind == PARTLY
    lowered = lowering.lower(model, target="tensorrt-10")
    assert [node.op_type for node in lowered.graph.node] == ["LSTM"]
