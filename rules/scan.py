"""Scan (versions 9 to 25) unrolled, where its number of iterations is known."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from lowering.graphs import holds_graphs
from lowering.registry import Builder, NotLowered, Value, rule

from .gathering import gather_along

# (GatherElements and what feeds it: strings scanned along another axis than the last, rules/gathering.py)
EMITS = (
    "Gather",
    "Unsqueeze",
    "Concat",
    "Identity",
    "Constant",
    "GatherElements",
    "Expand",
    "Shape",
    "Slice",
    "Reshape",
    "Squeeze",
)
# The most nodes an unrolled Scan may hold (iterations times the body's nodes): a longer
# sequence stays a Scan.
MOST_UNROLLED_NODES = 4096


@rule("Scan", versions=(9, 11, 16, 19, 21, 23, 24, 25), emits=EMITS)
def scan_unrolled(
    b: Builder,
    *states_and_scanned: Value | None,
    body: onnx.GraphProto = None,
    num_scan_inputs: int = 0,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
) -> Value | tuple[Value, ...]:
    """Scan(s_1..s_N, x_1..x_M) unrolled over its T iterations: for t = 0 .. T-1,

        (s_1..s_N, y_1..y_K) <- body(s_1..s_N, Gather(x_1, t'_1, axis_1) .. Gather(x_M, t'_M, axis_M))

    with t'_j = t, or T-1-t where x_j is scanned in reverse; the final states are the first N
    outputs, and output N+k is Concat(Unsqueeze(y_k at each t, axis_k), axis_k), in the order of
    t, or reversed where that output is prepended. The body's nodes are copied once per
    iteration, each value given a fresh name, so every value is computed by the same op on the
    same inputs as in the Scan: bit for bit. Not lowered: T unknown (no scanned input's length
    along its axis known) or 0, iterations times the body's nodes over MOST_UNROLLED_NODES, a
    body node holding a graph (its names would need renaming inside it), strings scanned along
    another axis than the last below opset 11 or of unknown rank (they are gathered by
    GatherElements: :func:`gathering.gather_along`).
    """
    if body is None:
        raise NotLowered("Scan has no body")
    if any(holds_graphs(node) for node in body.node):
        raise NotLowered("its body holds a node holding a graph (an If, Loop or Scan inside it)")
    count = len(states_and_scanned) - num_scan_inputs
    states, scanned = list(states_and_scanned[:count]), list(states_and_scanned[count:])
    if len(body.input) != count + num_scan_inputs or len(body.output) < count:
        raise NotLowered("its body's inputs and outputs do not match its own")
    input_axes = list(scan_input_axes or [0] * num_scan_inputs)
    input_reversed = [bool(d) for d in scan_input_directions or [0] * num_scan_inputs]
    outputs_scanned = len(body.output) - count
    output_axes = list(scan_output_axes or [0] * outputs_scanned)
    output_prepended = [bool(d) for d in scan_output_directions or [0] * outputs_scanned]
    iterations = _iterations(b, scanned, input_axes)
    if iterations == 0:
        raise NotLowered("it scans 0 iterations (its outputs' shapes would be guessed)")
    if iterations * max(len(body.node), 1) > MOST_UNROLLED_NODES:
        raise NotLowered(f"{iterations} iterations of {len(body.node)} nodes: over {MOST_UNROLLED_NODES} unrolled")
    constants = {t.name: b.tensor(numpy_helper.to_array(t), "body_constant").name for t in body.initializer}
    current = [value.name for value in states]
    stacked: list[list[str]] = [[] for _ in range(outputs_scanned)]
    for t in range(iterations):
        named = dict(constants)
        named.update(zip((info.name for info in body.input[:count]), current, strict=True))
        for info, x, axis, reverse in zip(body.input[count:], scanned, input_axes, input_reversed, strict=True):
            index = b.tensor(np.array(iterations - 1 - t if reverse else t, np.int64), "index")
            shape = b.shape_of(x) if x.element_type == TensorProto.STRING else None  # (gathered another way)
            named[info.name] = gather_along(b, x, index, int(axis), None if shape is None else len(shape), 0).name
        for node in body.node:
            for name in node.output:
                if name:
                    named[name] = b.fresh(name)
            copy = b.moved(
                node,
                inputs=[named.get(name, name) if name else "" for name in node.input],
                outputs=[named[name] if name else "" for name in node.output],
            )
            copy.name = b.fresh(node.name or node.op_type)
        ends = [named.get(info.name, info.name) for info in body.output]  # (else a value from outside it)
        current = ends[:count]
        for k, name in enumerate(ends[count:]):
            stacked[k].append(name)
    finals = [Value(name, state.element_type) for name, state in zip(current, states, strict=True)]
    results = []
    for k, (names, axis, prepended) in enumerate(zip(stacked, output_axes, output_prepended, strict=True)):
        element_type = body.output[count + k].type.tensor_type.elem_type or None
        slices = [b.over_axes("Unsqueeze", Value(name, element_type), [int(axis)]) for name in names]
        if prepended:
            slices.reverse()
        results.append(b.Concat(*slices, axis=int(axis)) if len(slices) > 1 else slices[0])
    outputs = (*finals, *results)
    return outputs if len(outputs) > 1 else outputs[0]


def _iterations(b: Builder, scanned: list[Value | None], axes: list[int]) -> int:
    """T: the length of the first scanned input whose length along its axis is known."""
    if not scanned:
        raise NotLowered("it scans no input")
    for x, axis in zip(scanned, axes, strict=True):
        shape = b.shape_of(x) if x is not None else None
        if shape is None:
            continue
        if not -len(shape) <= axis < len(shape):
            raise NotLowered(f"scan axis {axis} is outside a rank-{len(shape)} input")
        length = shape[axis]
        if isinstance(length, int):
            return length
    raise NotLowered("the number of iterations is unknown (no scanned input's length along its axis is known)")
