"""The lowered model at run time: onnxruntime time of the lowered graph against the native op,
on 16M elements, per type and op (only where onnxruntime has the native kernel), one run.

    python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import helper

import lowering
from lowering import schemas
from lowering.samples import random_bit_patterns
from lowering.verification.runtime import onnxruntime_session

sys.path.insert(0, str(Path(__file__).parent))

ELEMENTS = 16 << 20
OPSETS = (20, schemas.newest_opset())  # float8 Shape kernels arrive in onnxruntime at 21


def model_for(op_type: str, element_type: int, opset: int, **attributes) -> onnx.ModelProto:
    node = helper.make_node(op_type, ["x"], ["y"], **attributes)
    graph = helper.make_graph(
        [node], "bench", [helper.make_tensor_value_info("x", element_type, [ELEMENTS])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.BOOL, [ELEMENTS])],
    )  # fmt: skip
    imports = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=imports, ir_version=helper.find_min_ir_version_for(imports))


def seconds(model: onnx.ModelProto, feed, repeats: int = 5) -> float:
    session = onnxruntime_session(model)
    binding = session.io_binding()
    binding.bind_ortvalue_input("x", feed)
    binding.bind_output("y", "cpu")
    session.run_with_iobinding(binding)  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        session.run_with_iobinding(binding)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    import onnxruntime as ort

    print(f"{'opset':<6} {'op':<12} {'type':<15} {'native ms':>10} {'lowered ms':>11} {'ratio':>6} {'lowered nodes'}")
    ops = (("IsNaN", {}), ("IsInf", {}), ("IsInf", {"detect_negative": 0}))
    cases = [
        (opset, op_type, attributes, element_type)
        for opset in OPSETS
        for op_type, attributes in ops
        for element_type in sorted(schemas.input_element_types(op_type, opset), key=schemas.type_name)
    ]
    for opset, op_type, attributes, element_type in cases:
        native = model_for(op_type, element_type, opset, **attributes)
        lowered = lowering.lower(native)
        values = random_bit_patterns(element_type, ELEMENTS, seed=1)
        bits = values.view(f"u{values.dtype.itemsize}")
        feed = ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.ascontiguousarray(bits), element_type)
        if values.dtype.type.__module__ == "numpy":
            feed = ort.OrtValue.ortvalue_from_numpy(values)
        try:
            native_s = seconds(native, feed)
        except Exception:  # no native kernel: nothing to compare against
            continue
        lowered_s = seconds(lowered, feed)
        label = op_type + ("(+inf)" if attributes else "")
        ops = "+".join(n.op_type for n in lowered.graph.node if n.op_type != "Constant")
        print(f"{opset:<6} {label:<12} {schemas.type_name(element_type):<15} {1e3 * native_s:>10.1f} "
              f"{1e3 * lowered_s:>11.1f} {lowered_s / native_s:>6.2f} {ops}")  # fmt: skip


if __name__ == "__main__":
    main()
