"""Helpers the tests share: small models built in code, oracles, and running both models."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from lowering import floats, schemas
from lowering.runtime import run_onnxruntime, run_reference


def make_model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    *,
    opset: int,
    functions: list[onnx.FunctionProto] = (),
    extra_opsets: dict[str, int] | None = None,
    **graph_fields,
) -> onnx.ModelProto:
    """A model at default-domain ``opset`` with the lowest IR version that allows it."""
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(domain, version) for domain, version in (extra_opsets or {}).items()]
    graph = helper.make_graph(nodes, "main", inputs, outputs, **graph_fields)
    ir_version = max(helper.find_min_ir_version_for(imports[:1]), 7 if not functions else 8)
    return helper.make_model(graph, opset_imports=imports, functions=list(functions), ir_version=ir_version)


def unary_model(op_type: str, opset: int, element_type: int, **attributes) -> onnx.ModelProto:
    """``y = op_type(x)`` on a 1-D float input of any length, with a bool output."""
    node = helper.make_node(op_type, ["x"], ["y"], name=f"{op_type.lower()}_node", **attributes)
    return make_model(
        [node],
        [helper.make_tensor_value_info("x", element_type, ["N"])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, ["N"])],
        opset=opset,
    )


def oracle(op_type: str, values: np.ndarray, detect_positive: int = 1, detect_negative: int = 1) -> np.ndarray:
    """What IsNaN / IsInf must return, computed in float64 by numpy (conversion is exact)."""
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64)
    if op_type == "IsNaN":
        return np.isnan(wide)
    if op_type == "IsInf":
        return (np.isposinf(wide) & bool(detect_positive)) | (np.isneginf(wide) & bool(detect_negative))
    raise ValueError(op_type)


def every_op_case(op_type: str) -> list[tuple[int, int]]:
    """(opset, element type) for every opset from the op's first to the newest, every type."""
    first = schemas.op_versions(op_type)[0]
    return [
        (opset, element_type)
        for opset in range(first, schemas.newest_opset() + 1)
        for element_type in sorted(schemas.input_element_types(op_type, opset))
    ]


def runs_in_onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | None:
    """The model's outputs in onnxruntime, or None when onnxruntime has no kernel for it."""
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as OrtNotImplemented

    try:
        return run_onnxruntime(model, feeds)
    except OrtNotImplemented:
        return None


OPTIONAL_OPS = {"Optional", "OptionalHasElement", "OptionalGetElement"}
# The three Optional ops mean the same at every version since 18 (later versions only admit
# more element types); onnxruntime 1.32 runs them up to opset 21, not at 28.
OPTIONAL_SEMANTICS_SINCE = 18


def _uses_ops(model: onnx.ModelProto, op_types: set[str]) -> bool:
    from lowering.opcount import count_ops

    return bool(set(count_ops(model)) & op_types)


def original_outputs(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list:
    """The original model's outputs: onnxruntime where it has the kernels. Else, for Optional
    ops, onnxruntime on the same model declared at the newest opset it runs them at (their
    meaning is unchanged since 18; onnx.reference wraps optionals in lists and gets them
    wrong); for anything else, onnx.reference."""
    outputs = runs_in_onnxruntime(model, feeds)
    if outputs is not None:
        return outputs
    if _uses_ops(model, OPTIONAL_OPS):
        opset = next(e.version for e in model.opset_import if e.domain in ("", "ai.onnx"))
        for older in range(opset - 1, OPTIONAL_SEMANTICS_SINCE - 1, -1):
            redeclared = onnx.ModelProto()
            redeclared.CopyFrom(model)
            for entry in list(redeclared.opset_import) + [i for f in redeclared.functions for i in f.opset_import]:
                if entry.domain in ("", "ai.onnx"):
                    entry.version = older
            outputs = runs_in_onnxruntime(redeclared, feeds)
            if outputs is not None:
                return outputs
        raise AssertionError("no onnxruntime opset runs this model's Optional ops")
    return run_reference(model, feeds)


def same_values(a, b) -> bool:
    """Bit-identical tensors, or sequences of them, item by item."""
    from lowering.samples import same_bits

    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(same_values(x, y) for x, y in zip(a, b, strict=True))
        )
    return same_bits(np.asarray(a), np.asarray(b))


def type_name(element_type: int) -> str:
    return schemas.type_name(element_type)


def has_infinity(element_type: int) -> bool:
    return floats.has_infinity(element_type)
