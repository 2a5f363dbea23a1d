"""Values computed ahead: each node of a model's main graph whose inputs are all constants (the
cos and sin tables of a rotary embedding, from the positions a fixed input shape gives) written
as an initializer holding what onnxruntime's CPU kernels give for it, run as verification runs a
model (node by node, graph optimizations off). In onnxruntime the model made so gives, bit for
bit, what it gave; a runtime no longer computes those values itself (rknn's simulator hangs on
models that compute such tables at run time, and runs them right given the tables).

Unlike folding (:mod:`lowering.shape_folding`), which folds only what IEEE 754 or integer
arithmetic decides to the bit, this takes onnxruntime's own answer for every op (Cos, Exp), so
it is a form a target takes where whole models ran better with it, never a default. A value is
computed only where its shape is static and it holds at most :data:`MOST_ELEMENTS` (a table,
not a tensor a few constants blow up); not the outputs of random ops or Dropout, of nodes
holding graphs, of other domains, of strings, nor of the graph itself; only values of float32,
float64, integers and bool (:func:`_computed_as_typed`); not a value a matrix product or
recurrence reads (:func:`nodes_to_compute`); before IR version 4, only types the Constant in
force takes. Where the model made would fail onnx's checker or onnxruntime's loading, nothing
is computed. The values are onnxruntime's on the machine that lowers the model: another build
or instruction set may compute Cos otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx
from google.protobuf.message import EncodeError
from onnx import external_data_helper, helper

from . import floats, schemas
from .graphs import constant_tensor, holds_graphs, nested_graphs
from .ir_versions import unlisted_initializers_ir
from .modelio import checkable
from .schemas import RANDOM_OPS

MOST_ELEMENTS = 1 << 22  # 16 MiB of float32
# onnxruntime's CPU kernels that may pack a constant input ahead of the run (the matrix products'
# and recurrences' weights), summing it in another order than the same value computed at run time
PACKED_AHEAD = frozenset(
    "MatMul Gemm Conv ConvTranspose MatMulInteger ConvInteger QLinearMatMul QLinearConv LSTM GRU RNN".split()
)


def computable_nodes(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> list[onnx.NodeProto]:
    """The nodes of the main graph whose values follow from constants alone (initializers no
    graph input overrides, held in the model; Constant nodes; other such nodes' outputs) and
    that :func:`computed_ahead` may compute (see the module's docstring), in graph order."""
    graph = model.graph
    fed = {info.name for info in graph.input}
    known = {
        tensor.name
        for tensor in graph.initializer
        if tensor.name not in fed and tensor.data_location != onnx.TensorProto.EXTERNAL
    }
    graph_outputs = {info.name for info in graph.output}
    writable = _writable_types(model)
    computable = []
    for node in graph.node:
        if node.domain not in schemas.DEFAULT_DOMAINS:
            continue
        if node.op_type == "Constant":
            tensor = constant_tensor(node)
            if tensor is not None and tensor.data_location != onnx.TensorProto.EXTERNAL:
                known.update(node.output)
            continue
        inputs = [name for name in node.input if name]
        if (
            node.op_type in RANDOM_OPS
            or node.op_type == "Dropout"  # (random where its training_mode is true)
            or holds_graphs(node)
            or not inputs
            or not all(name in known for name in inputs)
            or graph_outputs.intersection(node.output)
            or not all(_small_tensor(types.get(name)) for name in node.output if name)
            or not all(_computed_as_typed(types.get(name)) for name in [*inputs, *node.output] if name)
            or (writable is not None and any(types[n].tensor_type.elem_type not in writable for n in node.output if n))
        ):
            continue
        computable.append(node)
        known.update(name for name in node.output if name)
    return computable


def _writable_types(model: onnx.ModelProto) -> frozenset[int] | None:
    """The element types a computed value may be written as: any (None), as an initializer;
    before IR version 4, those the Constant in force takes (Constant-1: the float types only)."""
    if model.ir_version >= unlisted_initializers_ir():
        return None
    return schemas.output_element_types("Constant", schemas.default_opset(model.opset_import) or 1)


def _computed_as_typed(type_proto: onnx.TypeProto | None) -> bool:
    """Whether onnxruntime computes a value of this type in that type: float32, float64, an
    integer or bool. A chain of 16-bit float nodes its CPU provider has no kernels for runs in
    float32, rounding once where the chain ends, so such a value computed alone would round where
    the model did not."""
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return False
    element_type = type_proto.tensor_type.elem_type
    exact = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.BOOL)
    return element_type in exact or floats.is_integer(element_type)


def _small_tensor(type_proto: onnx.TypeProto | None) -> bool:
    """Whether a value's inferred type is a tensor (not of strings) of static shape holding at
    most :data:`MOST_ELEMENTS`."""
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return False
    tensor_type = type_proto.tensor_type
    if tensor_type.elem_type in (onnx.TensorProto.UNDEFINED, onnx.TensorProto.STRING):
        return False
    if not tensor_type.HasField("shape") or not all(d.HasField("dim_value") for d in tensor_type.shape.dim):
        return False
    return int(np.prod([d.dim_value for d in tensor_type.shape.dim], dtype=np.int64)) <= MOST_ELEMENTS


def computed_ahead(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> int:
    """``model`` (in place) with each value of :func:`computable_nodes` that another node reads
    an initializer (a Constant node before IR version 4), onnxruntime's answer; the nodes
    computed, and the Constants and initializers only they read, gone (:func:`nodes_to_compute`:
    not a value a kernel packs ahead, nor one only unread nodes read). ``types``: every value's
    type as onnx's inference gives it. Returns how many nodes were computed (0 where
    onnxruntime cannot run them, or the model made would fail onnx's checker or onnxruntime's
    loading, :func:`_still_runs`: the model is left as it was)."""
    from .errors import LoweringError
    from .verification.runtime import run_onnxruntime

    graph = model.graph
    computed = nodes_to_compute(model, computable_nodes(model, types))
    if not computed:
        return 0
    computed_ids = {id(node) for node in computed}
    kept = [node for node in graph.node if id(node) not in computed_ids]
    read_by_kept = _names_read(kept) | {info.name for info in graph.output}
    written = [name for node in computed for name in node.output if name]
    wanted = [name for name in written if name in read_by_kept]
    if not wanted:
        return 0
    read_by_computed = _names_read(computed)
    constants = [node for node in kept if node.op_type == "Constant" and read_by_computed.intersection(node.output)]
    sources = [tensor for tensor in graph.initializer if tensor.name in read_by_computed]
    evaluated = helper.make_model(
        helper.make_graph(
            [*constants, *computed],
            "computed_ahead",
            [],
            [helper.make_value_info(name, types[name]) for name in wanted],
            initializer=sources,
        ),
        opset_imports=list(model.opset_import),
        ir_version=model.ir_version,
    )
    try:
        values = run_onnxruntime(evaluated, {})
    except (LoweringError, ValueError, EncodeError, *_onnxruntime_refusals()):  # (no kernel; over 2 GiB)
        return 0
    before = onnx.ModelProto()
    before.CopyFrom(model)
    unread = {id(node) for node in constants if not read_by_kept.intersection(node.output)}
    del graph.node[:]
    graph.node.extend(node for node in kept if id(node) not in unread)
    fed = {info.name for info in graph.input}
    dropped = {t.name for t in graph.initializer if t.name in read_by_computed and t.name not in read_by_kept | fed}
    left = [t for t in graph.initializer if t.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(left)
    tables = [floats.tensor(np.asarray(value), name) for name, value in zip(wanted, values, strict=True)]
    if model.ir_version >= unlisted_initializers_ir():
        graph.initializer.extend(tables)
    else:  # (an initializer is a graph input too there, which a runtime would ask to be fed)
        made = [helper.make_node("Constant", [], [table.name], value=table) for table in tables]
        nodes = [*made, *graph.node]
        del graph.node[:]
        graph.node.extend(nodes)
    gone = (
        (set(written) - set(wanted))
        | dropped
        | {name for node in constants if id(node) in unread for name in node.output}
    )
    infos = [info for info in graph.value_info if info.name not in gone]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    if not _still_runs(model):
        model.CopyFrom(before)
        return 0
    return len(computed)


def _still_runs(model: onnx.ModelProto) -> bool:
    """Whether the model made passes onnx's full checker and onnxruntime makes a session of it
    (where its data is all in it): shape inference reads a constant where it read none before,
    and may find lengths onnxruntime's kernels do not give (a Resize's constant scales, a
    Range's bounds), and onnxruntime checks a constant Resize's scales as it loads the model,
    in a branch never taken too."""
    from .verification.runtime import onnxruntime_session

    try:
        onnx.checker.check_model(checkable(model), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError):
        return False
    if any(external_data_helper.uses_external_data(t) for t in model.graph.initializer):
        return True
    try:
        onnxruntime_session(model)
    except (ValueError, EncodeError, *_onnxruntime_refusals()):
        return False
    return True


def _onnxruntime_refusals() -> tuple[type[Exception], ...]:
    """onnxruntime's exceptions for a model it cannot run (none derives from another)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as errors

    return (errors.Fail, errors.InvalidArgument, errors.NotImplemented, errors.InvalidGraph, errors.RuntimeException)


def nodes_to_compute(model: onnx.ModelProto, computable: list[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """Those of ``computable`` whose values :func:`computed_ahead` writes: not a node whose value
    a node left (or a node inside a graph it holds) reads into a kernel that may pack a constant
    input ahead (:data:`PACKED_AHEAD`), nor into a node of another domain (a local function's
    body, onnxruntime's contrib kernels): onnxruntime's MatMul sums a packed weight in another
    order than one computed at run time, so the made model would round apart; nor a node whose
    values nothing reads (left as it was), nor one reading a value so left. Repeated until no
    more goes."""
    chosen = list(computable)
    read = _names_read(model.graph.node) | {info.name for info in model.graph.output}
    while True:
        chosen_ids = {id(node) for node in chosen}
        outside = [node for node in model.graph.node if id(node) not in chosen_ids]
        computed_outside = {name for node in outside if node.op_type != "Constant" for name in node.output}
        readers = [*outside, *(inner for graph in nested_graphs(outside) for inner in graph.node)]
        packing = {
            name
            for node in readers
            if node.domain not in schemas.DEFAULT_DOMAINS or node.op_type in PACKED_AHEAD
            for name in node.input
        }
        keep = [
            node
            for node in chosen
            if not packing.intersection(node.output)
            and read.intersection(node.output)
            and not computed_outside.intersection(node.input)
        ]
        if len(keep) == len(chosen):
            return chosen
        chosen = keep


def _names_read(nodes: list[onnx.NodeProto]) -> set[str]:
    """The names ``nodes`` read, and the nodes of the graphs they hold."""
    read = {name for node in nodes for name in node.input if name}
    read.update(name for graph in nested_graphs(nodes) for inner in graph.node for name in inner.input if name)
    return read
