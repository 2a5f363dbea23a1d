"""The onnxruntime CPU target's compute types agree with onnxruntime's own kernel registry."""

from __future__ import annotations

import onnx
import pytest
from support import slow_but_a_sample  # noqa: E402

from lowering import floats, schemas
from lowering.targets import ONNXRUNTIME_CPU

EMITTED_ARITHMETIC = ("Abs", "Equal", "Greater", "Less")


def _cpu_kernel_types(op_type: str) -> set[int]:
    state = pytest.importorskip("onnxruntime.capi.onnxruntime_pybind11_state")
    types: set[int] = set()
    for kernel in state.get_all_opkernel_def():
        if kernel.op_name == op_type and kernel.domain in ("", "ai.onnx") and kernel.provider == "CPUExecutionProvider":
            for allowed in kernel.type_constraints.values():
                types |= schemas._tensor_element_types(allowed)
    return types


@slow_but_a_sample()
@pytest.mark.parametrize("op_type", EMITTED_ARITHMETIC)
def test_compute_types_have_cpu_kernels(op_type):
    assert ONNXRUNTIME_CPU.compute_types <= _cpu_kernel_types(op_type)


def test_every_other_float_type_is_widened_exactly():
    float_types = [t for t in onnx.TensorProto.DataType.values() if floats.is_float(t)]
    assert onnx.TensorProto.FLOAT8E5M2 in float_types and onnx.TensorProto.BFLOAT16 in float_types
    for element_type in float_types:
        compute_type = ONNXRUNTIME_CPU.compute_type(element_type)
        if element_type in ONNXRUNTIME_CPU.compute_types:
            assert compute_type == element_type
        else:
            assert compute_type == onnx.TensorProto.FLOAT
            assert floats.numpy_dtype(element_type).itemsize < 4
    assert ONNXRUNTIME_CPU.compute_type(onnx.TensorProto.DOUBLE) == onnx.TensorProto.DOUBLE, "never narrow float64"


def test_float_facts_come_from_the_dtypes():
    no_infinity = {t for t in (onnx.TensorProto.FLOAT8E4M3FN, onnx.TensorProto.FLOAT8E4M3FNUZ,
                               onnx.TensorProto.FLOAT8E5M2FNUZ)}  # fmt: skip
    for element_type in schemas.input_element_types("IsInf", 20):
        assert floats.has_infinity(element_type) == (element_type not in no_infinity)
    assert floats.largest_finite(onnx.TensorProto.FLOAT16) == 65504.0
    assert floats.largest_finite(onnx.TensorProto.FLOAT8E4M3FN) == 448.0


def test_the_default_lowered_ops_are_the_seed_ops_each_with_a_rule():
    """Lowered when the caller names none: the target's list, not every op a rule covers."""
    from lowering.registry import all_rules

    assert ONNXRUNTIME_CPU.lowered_ops == {"IsInf", "IsNaN", "OptionalHasElement", "OptionalGetElement"}
    assert ONNXRUNTIME_CPU.lowered_ops <= {rule.op_type for rule in all_rules()}


def test_a_target_names_what_is_lowered_by_default():
    import dataclasses

    from support import unary_model

    import lowering

    only_isinf = dataclasses.replace(ONNXRUNTIME_CPU, name="isinf-only", lowered_ops=frozenset({"IsInf"}))
    model = unary_model("IsNaN", 13, onnx.TensorProto.FLOAT)
    assert lowering.lower_model(model, target=only_isinf).report.rewritten == {}
    assert lowering.lower_model(model).report.rewritten == {"IsNaN-13": 1}
