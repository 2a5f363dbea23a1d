"""The input point each output point of a nearest Resize reads, per axis, as onnxruntime's kernel
picks it for one static shape: Resize(P) of P = the flat positions 0 … n - 1 in X's shape (int32),
with the node's own scales or sizes and attributes, at its own version. Resize in mode nearest
only moves values, so Resize(X)[j] = X[unravel(Resize(P)[j])] for every X of that shape; where
those positions are separable, Resize(P)[j] = ravel(i_0[j_0], …, i_{r-1}[j_{r-1}]), the op is a
Gather of X along each axis a by the constant indices i_a.

This takes onnxruntime's answer where no one formula gives it: its kernels place an output point
at x · (1 / s) or x / s and take the output lengths from the scale or from the sizes by rank and
policy (measured), the ONNX reference in float64. Its float, int32 and uint8 kernels place the
points alike (measured: random shapes, scales, sizes, policies and modes, ranks 1 to 5).
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from lowering.ir_versions import ir_version_for_opset

# P holds int32 positions: at most this many elements in X and in the output (64 MiB of int32)
MOST_ELEMENTS = 1 << 24


def nearest_points(
    shape: list[int],
    element_type: int,
    version: int,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    attributes: dict[str, object],
) -> list[np.ndarray] | None:
    """Per axis of X (static ``shape``, of ``element_type``), the int64 indices i_a onnxruntime's
    Resize-``version`` reads (see the module's docstring), given constant ``scales`` (float32) or
    ``sizes`` (int64) and the node's attributes other than ``mode``; zeros of the output's
    lengths where it holds no element. None where X holds no element, where X or the output
    holds more than :data:`MOST_ELEMENTS`, where onnxruntime fails the node or has no Resize for
    X's type (the original's meaning is then the spec's, whose points may lie elsewhere), or
    where the positions it reads are not separable per axis."""
    elements = int(np.prod(shape, dtype=np.int64))
    if not 0 < elements <= MOST_ELEMENTS:
        return None
    errors = _onnxruntime_errors()
    try:
        _session(shape, element_type, version, scales, sizes, attributes)  # (its kernel for X's own type)
        positions = np.arange(elements, dtype=np.int32).reshape(shape)
        read = _session(shape, TensorProto.INT32, version, scales, sizes, attributes).run(None, {"x": positions})[0]
    except errors:  # onnxruntime refuses or fails the node: the op itself would fail
        return None
    if read.ndim != len(shape) or read.size > MOST_ELEMENTS:
        return None
    if not read.size:  # an empty output: only its lengths matter, every index reads nothing
        return [np.zeros(length, np.int64) for length in read.shape]
    coordinates = np.unravel_index(read.astype(np.int64), shape)
    indices = []
    for axis, along in enumerate(coordinates):
        first_line = tuple(slice(None) if a == axis else 0 for a in range(len(shape)))
        indices.append(np.ascontiguousarray(along[first_line], dtype=np.int64))
    separable = np.ravel_multi_index(np.meshgrid(*indices, indexing="ij"), shape)
    return indices if np.array_equal(separable, read) else None


def _onnxruntime_errors() -> tuple[type[Exception], ...]:
    """The exceptions onnxruntime raises for a model or run it refuses (its own classes)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return tuple(v for v in vars(state).values() if isinstance(v, type) and issubclass(v, Exception))


def _session(
    shape: list[int], element_type: int, version: int, scales: np.ndarray | None, sizes: np.ndarray | None,
    attributes: dict,
):  # fmt: skip
    """A session of Resize(x) of x of ``shape`` and ``element_type`` in onnxruntime's CPU
    provider: no graph optimization, nothing logged, idle threads asleep (a pattern runs no
    verification: its own options, as lowering.verification.runtime's)."""
    import onnxruntime

    if scales is None and version < 13:  # (Resize-11 takes no scales left out: empty ones beside sizes)
        scales = np.zeros(0, np.float32)
    # an empty roi: Resize-11 takes no roi left out, and no mode but tf_crop_and_resize reads one
    initializers, inputs = [helper.make_tensor("roi", TensorProto.FLOAT, [0], [])], ["x", "roi"]
    if scales is not None:
        initializers.append(helper.make_tensor("scales", TensorProto.FLOAT, [scales.size], scales.astype(np.float32)))
    inputs.append("scales" if scales is not None else "")
    if sizes is not None:
        initializers.append(helper.make_tensor("sizes", TensorProto.INT64, [sizes.size], sizes.astype(np.int64)))
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], mode="nearest", **attributes)
    graph = helper.make_graph(
        [node],
        "nearest_points",
        [helper.make_tensor_value_info("x", element_type, list(shape))],
        [helper.make_tensor_value_info("y", element_type, None)],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", version)], ir_version=ir_version_for_opset(version)
    )
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
