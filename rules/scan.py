"""Scan (versions 8 to 25) unrolled, where its number of iterations is known."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from lowering import schemas
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
# The first opset whose Constant holds the int64 indices the rule gathers by.
INDEX_OPSET = schemas.first_opset_writing(("Gather", "Concat", "Unsqueeze"), int64_constants=True)
# The most nodes an unrolled Scan may hold (iterations times the body's nodes): a longer
# sequence stays a Scan.
MOST_UNROLLED_NODES = 4096


@rule("Scan", versions=(8, 9, 11, 16, 19, 21, 23, 24, 25), emits=EMITS)
def scan_unrolled(
    b: Builder,
    *states_and_scanned: Value | None,
    body: onnx.GraphProto = None,
    num_scan_inputs: int = 0,
    directions=None,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
) -> Value | tuple[Value, ...]:
    """Scan(s_1..s_N, x_1..x_M) unrolled over its T iterations; Scan-8's batch of sequences one by one.

    (:func:`_unrolled`, :func:`_batches_unrolled`.)"""
    if (b.source_version("Scan") or schemas.version_in_force("Scan", b.opset)) == 8:
        return _batches_unrolled(b, *states_and_scanned, body=body, num_scan_inputs=num_scan_inputs,
                                 directions=directions)  # fmt: skip
    return _unrolled(
        b, *states_and_scanned, body=body, num_scan_inputs=num_scan_inputs, scan_input_axes=scan_input_axes,
        scan_input_directions=scan_input_directions, scan_output_axes=scan_output_axes,
        scan_output_directions=scan_output_directions,
    )  # fmt: skip


def _batches_unrolled(
    b: Builder,
    sequence_lens: Value | None,
    *states_and_scanned: Value | None,
    body: onnx.GraphProto | None,
    num_scan_inputs: int,
    directions,
) -> Value | tuple[Value, ...]:
    """Scan-8(s_1..s_N, x_1..x_M) over a batch of B sequences (axis 0 of every input and output;
    the sequences along axis 1 of each x_j): for each batch i, Scan(Gather(s_1, i)..Gather(x_M, i))
    unrolled (:func:`_unrolled`, x_j reversed where ``directions`` says so), and each output
    Concat(Unsqueeze(its batch i, 0) for i = 0 .. B-1, axis 0). Not lowered where
    ``sequence_lens`` is given (each sequence's own length), B is unknown or 0, or below opset 9
    (no int64 Constant: Scan-8 itself is lowered on the way to a later opset)."""
    if b.opset < INDEX_OPSET:
        raise NotLowered(f"the rule gathers by int64 constants, which Constant holds from opset {INDEX_OPSET}")
    if sequence_lens is not None:
        raise NotLowered("Scan-8 is given sequence_lens (each sequence's own length)")
    if body is None:
        raise NotLowered("Scan has no body")
    shapes = [b.shape_of(value) for value in states_and_scanned if value is not None]
    batch = next((shape[0] for shape in shapes if shape and isinstance(shape[0], int)), None)
    if not batch:
        raise NotLowered("the batch size of Scan-8's inputs is unknown" if batch is None else "its batch is empty")
    scanned = states_and_scanned[len(states_and_scanned) - num_scan_inputs :]
    iterations = _iterations(b, list(scanned), [1] * num_scan_inputs)  # (each sequence along axis 1)
    if batch * max(len(body.node), 1) > MOST_UNROLLED_NODES:
        raise NotLowered(f"{batch} batches of {len(body.node)} nodes: over {MOST_UNROLLED_NODES} unrolled")
    outputs: list[list[Value]] = []
    ranks = [_rank(b, value) for value in states_and_scanned]
    for i in range(batch):
        index = b.tensor(np.array(i, np.int64), "batch")
        # (strings by GatherElements: onnxruntime's Gather of strings along a leading axis keeps each slice's first)
        sliced = [gather_along(b, value, index, 0, rank, 0)
                  for value, rank in zip(states_and_scanned, ranks, strict=True)]  # fmt: skip
        known = {each.name: rank - 1 for each, rank in zip(sliced, ranks, strict=True) if rank is not None}
        unrolled = _unrolled(b, *sliced, body=body, num_scan_inputs=num_scan_inputs,
                             scan_input_directions=directions, iterations=iterations, ranks=known,
                             most_nodes=MOST_UNROLLED_NODES // batch)  # fmt: skip
        outputs.append(list(unrolled) if isinstance(unrolled, tuple) else [unrolled])
    stacked = tuple(
        b.Concat(*[b.over_axes("Unsqueeze", each[k], [0]) for each in outputs], axis=0)
        if batch > 1 else b.over_axes("Unsqueeze", outputs[0][k], [0])
        for k in range(len(outputs[0]))
    )  # fmt: skip
    return stacked if len(stacked) > 1 else stacked[0]


def _rank(b: Builder, value: Value | None) -> int | None:
    """The rank of ``value`` where its shape is known (None for an input left out)."""
    shape = b.shape_of(value) if value is not None else None
    return len(shape) if shape is not None else None


def _unrolled(
    b: Builder,
    *states_and_scanned: Value | None,
    body: onnx.GraphProto = None,
    num_scan_inputs: int = 0,
    scan_input_axes=None,
    scan_input_directions=None,
    scan_output_axes=None,
    scan_output_directions=None,
    iterations: int | None = None,
    ranks: dict[str, int] | None = None,
    most_nodes: int = MOST_UNROLLED_NODES,
) -> Value | tuple[Value, ...]:
    """Scan(s_1..s_N, x_1..x_M) unrolled over its T iterations: for t = 0 .. T-1,

        (s_1..s_N, y_1..y_K) <- body(s_1..s_N, Gather(x_1, t'_1, axis_1) .. Gather(x_M, t'_M, axis_M))

    with t'_j = t, or T-1-t where x_j is scanned in reverse; the final states are the first N
    outputs, and output N+k is Concat(Unsqueeze(y_k at each t, axis_k), axis_k), in the order of
    t, or reversed where that output is prepended. The body's nodes are copied once per
    iteration, each value given a fresh name, so every value is computed by the same op on the
    same inputs as in the Scan: bit for bit. T is ``iterations`` where given, and ``ranks`` the
    ranks of scanned values whose shapes are not known here. Not lowered: T
    unknown (no scanned input's length
    along its axis known) or 0, iterations times the body's nodes over ``most_nodes``, a
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
    iterations = _iterations(b, scanned, input_axes) if iterations is None else iterations
    scanned_ranks = dict(ranks or {})
    for x in scanned:
        shape = b.shape_of(x) if x.name not in scanned_ranks else None
        if shape is not None:
            scanned_ranks[x.name] = len(shape)
    if iterations == 0:
        raise NotLowered("it scans 0 iterations (its outputs' shapes would be guessed)")
    if iterations * max(len(body.node), 1) > most_nodes:
        raise NotLowered(f"{iterations} iterations of {len(body.node)} nodes: over {most_nodes} unrolled")
    constants = {t.name: b.tensor(numpy_helper.to_array(t), "body_constant").name for t in body.initializer}
    current = [value.name for value in states]
    stacked: list[list[str]] = [[] for _ in range(outputs_scanned)]
    for t in range(iterations):
        named = dict(constants)
        named.update(zip((info.name for info in body.input[:count]), current, strict=True))
        for info, x, axis, reverse in zip(body.input[count:], scanned, input_axes, input_reversed, strict=True):
            index = b.tensor(np.array(iterations - 1 - t if reverse else t, np.int64), "index")
            rank = scanned_ranks.get(x.name) if x.element_type == TensorProto.STRING else None  # (gathered otherwise)
            named[info.name] = gather_along(b, x, index, int(axis), rank, 0).name
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
