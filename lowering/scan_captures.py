"""The values a Scan's body reads from the graphs around it, passed in: a constant written inside
the body, any other value carried as a state variable the body gives back unchanged.

ONNX lets a body read the outer scope's values by name; OpenVINO's ONNX frontend counts each
such value as one more body input and then refuses the Scan ("Number of Scan node inputs (4) is
less than required (5) based on body graph parameters"), and ONNX's own LinearAttention body
reads its scale and axes so. A state variable s whose body output is Identity(s) holds its
initial value in every iteration, and a Constant holds its tensor, so the body reads the same
values and the Scan computes what it did; the state's final value is one more Scan output,
which nothing reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import onnx
from onnx import helper

from . import schemas
from .folding import MAX_FOLDED_ELEMENTS
from .graphs import held_graphs, nested_graphs
from .naming import NameAllocator


def scan_captures_passed_in(
    model: onnx.ModelProto,
    opset: int,
    constants_at: Callable[[onnx.NodeProto], Mapping[str, onnx.TensorProto]],
    types: Mapping[str, onnx.TypeProto],
) -> int:
    """Each Scan (version 9 on, in the main graph and the graphs its nodes hold) whose body reads
    values from outside, given them (in place): a small constant (``constants_at(scan)``: those
    in scope at the Scan, by name) as a Constant inside the body, another tensor as a state
    variable (typed as ``types`` has it; a value of a type not known here, or not a tensor's, a
    sequence, is left read from outside); how many were."""
    if schemas.version_in_force("Scan", opset) is None or schemas.version_in_force("Scan", opset) < 9:
        return 0
    graphs = [model.graph, *nested_graphs(model.graph.node)]
    scans = [
        node for graph in graphs for node in graph.node if node.op_type == "Scan" and node.domain in ("", "ai.onnx")
    ]
    if not scans:
        return 0
    names = NameAllocator(model=model)
    passed = 0
    for scan in reversed(scans):  # (inner first: a body's node list rebuilt copies the Scans it holds)
        body = next(attribute.g for attribute in scan.attribute if attribute.name == "body")
        constants = constants_at(scan)
        captured = [
            name for name in _read_from_outside(body) if _small(constants.get(name)) or _tensor(types.get(name))
        ]
        if not captured:
            continue
        renamed = {name: names.fresh(f"{name}_inside") for name in captured}
        _rename_reads(body, renamed, names)
        states = len(scan.input) - next(a.i for a in scan.attribute if a.name == "num_scan_inputs")
        written = []
        for name in captured:
            if _small(constants.get(name)):
                written.append(helper.make_node("Constant", [], [renamed[name]], value=_named(constants[name], name)))
                continue
            carried = names.fresh(f"{name}_carried")
            body.input.insert(states, helper.make_value_info(renamed[name], types[name]))
            body.output.insert(states, helper.make_value_info(carried, types[name]))
            written.append(helper.make_node("Identity", [renamed[name]], [carried]))
            scan.input.insert(states, name)
            scan.output.insert(states, names.fresh(f"{name}_final"))
            states += 1
        nodes = [*written, *body.node]
        del body.node[:]
        body.node.extend(nodes)
        passed += len(captured)
    return passed


def _read_from_outside(body: onnx.GraphProto) -> list[str]:
    """The names the body (or a graph it holds) reads that it does not define, first read first."""
    defined = {info.name for graph in [body, *nested_graphs(body.node)] for info in graph.input}
    defined |= {t.name for graph in [body, *nested_graphs(body.node)] for t in graph.initializer}
    defined |= {name for graph in [body, *nested_graphs(body.node)] for node in graph.node for name in node.output}
    found: dict[str, None] = {}
    for graph in [body, *nested_graphs(body.node)]:
        for node in graph.node:
            found.update((name, None) for name in node.input if name and name not in defined)
        found.update((info.name, None) for info in graph.output if info.name not in defined)
    return list(found)


def _rename_reads(graph: onnx.GraphProto, renamed: Mapping[str, str], names: NameAllocator) -> None:
    """Every read of a name in ``renamed`` in ``graph`` and the graphs its nodes hold, renamed; a
    graph output that is such a name given by an Identity of the renamed value, to a fresh name
    (an output is the graph's own: renaming it would make it the new input)."""
    for node in graph.node:
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
        for _, _, inner in held_graphs(node):
            _rename_reads(inner, renamed, names)
    for info in graph.output:
        if info.name in renamed:
            given = names.fresh(f"{info.name}_given")
            graph.node.append(helper.make_node("Identity", [renamed[info.name]], [given]))
            info.name = given


def _tensor(type_proto: onnx.TypeProto | None) -> bool:
    """Whether ``type_proto`` is a tensor's of a known element type (what a Scan state may be)."""
    return (
        type_proto is not None
        and type_proto.WhichOneof("value") == "tensor_type"
        and bool(type_proto.tensor_type.elem_type)
    )


def _small(tensor: onnx.TensorProto | None) -> bool:
    """Whether ``tensor`` is a constant worth a copy inside the body (held here, at most
    :data:`lowering.folding.MAX_FOLDED_ELEMENTS` elements): a weight is carried instead."""
    if tensor is None or tensor.data_location == onnx.TensorProto.EXTERNAL:
        return False
    elements = 1
    for dim in tensor.dims:
        elements *= dim
    return elements <= MAX_FOLDED_ELEMENTS


def _named(tensor: onnx.TensorProto, name: str) -> onnx.TensorProto:
    copy = onnx.TensorProto()
    copy.CopyFrom(tensor)
    copy.name = name
    return copy
