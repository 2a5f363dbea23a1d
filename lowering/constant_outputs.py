"""The graph outputs a runtime of static shapes finds constant when it builds the model: those
whose values follow from no graph input's values, given the inputs' shapes (which such a runtime
is told at its build), and those of no elements. rknn's builder folds them away: it refuses a model
of such outputs alone and drops one beside others (``lowering.runtime_profiles.CONSTANT_OUTPUT``).

A value *varies* where it follows from a fed value: the main graph's inputs (one an
initializer gives too: a feed overrides it), a random draw, a Dropout in training; and what a
node computes from a varying value read for its values. Read for its shape alone: the input of
Shape, Size and EyeLike, and Dropout's data for its mask outside training (all true), where that
shape follows from the inputs' shapes: a graph input's, or one whose every length, as inference
gives it, is a number or one of the inputs' named lengths (not a NonZero's, nor a Slice's to a
fed end; nor, missing a cheaper proof, one of a length inference leaves unnamed). Read for its
type alone: CastLike's target. A node holding graphs varies where it reads a varying value or
where an output of its graphs varies: their nodes are read as the main graph's are (a branch's
Shape of x reads no value, its random draw varies), their own inputs never the outer values of
their names, and a name two graphs give values of has no shape known (one flat map types
them). An output of a call of a local function varies where the body may draw (a random op, any
Dropout, a function that may), or where the body's output varies given which of the call's
inputs vary (a Shape of a parameter reads no value where the input's shape follows from the
inputs'; the body's own values have no shapes known).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

from . import schemas
from .graphs import constant_tensor, held_graphs, nested_graphs
from .schemas import RANDOM_OPS

# (op, the input positions it reads for their shape alone, and for their type alone, not their values)
READ_FOR_SHAPE = {"Shape": (0,), "Size": (0,), "EyeLike": (0,)}
READ_FOR_TYPE = {"CastLike": (1,)}
DROPOUT_TRAINING_INPUT = 2  # (Dropout-12 on: training_mode, false where not given)
DROPOUT_MASK = 1  # (Dropout's second output)
DROPOUT_INFERENCE_ONLY = 7  # (Dropout-7 and -10 run as inference; -1 and -6 are taken as drawing)
NO_ELEMENTS = "holds no elements"  # (why an output of no elements is constant)


@dataclass(frozen=True)
class ConstantOutput:
    """Why an output is constant, and the ops it follows from that read no fed value, or read one
    for its shape alone (``sources``: Shape, Dropout for its mask; Constant for an initializer;
    none for an output of no elements): a runtime may compute some of them (rknn computes
    EyeLike's at run time, and folds Shape's). An output of no elements may yet read a fed
    value's values (``reads_feeds``: a Slice of x to nothing), which OpenVINO 2024.6 computes,
    where it crashes on one from constants alone."""

    why: str
    sources: frozenset[str]
    reads_feeds: bool = False  # (an output of no elements: whether a fed value's values reach it)


def constant_outputs(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> dict[str, ConstantOutput]:
    """Per output of ``model``'s main graph that a runtime of static shapes finds constant (see
    the module's docstring), why and what from; ``types``: every value's (``inferred_types``)."""
    varying, sources = _walk(model, types)
    found = {}
    for info in model.graph.output:
        if _holds_no_elements(types.get(info.name) or info.type):
            found[info.name] = ConstantOutput(NO_ELEMENTS, frozenset(), info.name in varying)
        elif info.name not in varying:
            why = "follows from no input's values (given the inputs' shapes)"
            found[info.name] = ConstantOutput(why, sources.get(info.name, frozenset()))
    return found


def constant_cones(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> set[str]:
    """The values of ``model``'s main graph that its constant outputs follow from (the outputs
    too): what ``fold="inner"`` leaves for a runtime to compute, which computes some (rknn, a Size)
    and would lose a folded one."""
    varying, _ = _walk(model, types)
    producers = {name: node for node in model.graph.node for name in node.output if name}
    cone: set[str] = set()
    pending = [info.name for info in model.graph.output if info.name not in varying]
    while pending:
        name = pending.pop()
        if name in cone:
            continue
        cone.add(name)
        node = producers.get(name)
        if node is not None:
            pending.extend(n for n in node.input if n and n not in varying)
    return cone


def _walk(model: onnx.ModelProto, types: Mapping[str, onnx.TypeProto]) -> tuple[set[str], dict[str, frozenset[str]]]:
    """The main graph's values that vary, and per other value the ops it follows from (see
    :class:`ConstantOutput`)."""
    graph = model.graph
    inputs = frozenset(info.name for info in graph.input)
    named_lengths = {d.dim_param for info in graph.input for d in info.type.tensor_type.shape.dim if d.dim_param}
    reused = _names_reused(graph)  # (one flat map types them: the last graph's type stands)

    def shape_known(name: str) -> bool:
        """Whether the shape of ``name`` follows from the inputs' shapes alone."""
        if name in inputs:
            return True
        tensor = types[name].tensor_type if name in types and name not in reused else None
        return (
            tensor is not None
            and tensor.HasField("shape")
            and all(d.HasField("dim_value") or d.dim_param in named_lengths for d in tensor.shape.dim)
        )

    reading = _Reading(
        shape_known,
        _constant_values(graph),
        _functions_drawing(model),
        schemas.version_in_force("Dropout", schemas.default_opset(model.opset_import) or 1),
        {(function.domain, function.name): function for function in model.functions},
        {},
    )
    values = _Values()
    values.varying.update(inputs)
    values.sources.update((t.name, frozenset({"Constant"})) for t in graph.initializer if t.name not in inputs)
    _walk_nodes(graph.node, values, reading)
    return values.varying, values.sources


class _Values:
    """The values of one scope that vary, and per other value the ops it follows from; a graph a
    node holds sees its holder's through ``outer``, less the names its own inputs take."""

    def __init__(
        self, outer: _Values | None = None, own: frozenset[str] = frozenset(), given: frozenset[str] = frozenset()
    ) -> None:
        self.varying: set[str] = set()
        self.sources: dict[str, frozenset[str]] = dict.fromkeys(own, given)  # (what the holder gives them from)
        self.outer = outer

    def varies(self, name: str) -> bool:
        if name in self.varying:
            return True
        if name in self.sources or self.outer is None:
            return False
        return self.outer.varies(name)

    def sources_of(self, name: str) -> frozenset[str]:
        if name in self.sources:
            return self.sources[name]
        if name in self.varying or self.outer is None:
            return frozenset()
        return self.outer.sources_of(name)


@dataclass(frozen=True)
class _Reading:
    """What a walk of one scope knows: whether a value's shape follows from the inputs' shapes,
    the constant values, the local functions that may draw, the version of Dropout in force, the
    local functions by (domain, name) and their walks found so far (:func:`_call_outputs`)."""

    shape_known: Callable[[str], bool]
    values: Mapping[str, np.ndarray]
    drawing: set[tuple[str, str]]
    dropout: int | None
    functions: Mapping[tuple[str, str], onnx.FunctionProto]
    walked: dict[tuple, list[frozenset[str] | None] | None]


def _walk_nodes(nodes: Iterable[onnx.NodeProto], values: _Values, reading: _Reading) -> None:
    """Walk ``nodes`` in order, adding to ``values`` what each output holds: varying, or the ops
    it follows from."""
    for node in nodes:
        for name, sources in zip(node.output, _node_outputs(node, values, reading), strict=True):
            if not name:
                continue
            if sources is None:
                values.varying.add(name)
            else:
                values.sources[name] = sources


def _node_outputs(node: onnx.NodeProto, values: _Values, reading: _Reading) -> list[frozenset[str] | None]:
    """Per output of ``node``, None where it varies (see the module's docstring), else the ops
    it follows from: those its inputs do, and its own where it reads a fed value (for its shape)
    or nothing at all."""
    every = [None] * len(node.output)
    dropout_node = node.op_type == "Dropout" and node.domain in schemas.DEFAULT_DOMAINS
    if _may_draw(node, reading.drawing) and (not dropout_node or _in_training(node, reading.dropout, reading.values)):
        return every
    function = None if node.domain in schemas.DEFAULT_DOMAINS else reading.functions.get((node.domain, node.op_type))
    if function is not None:
        return _call_outputs(node, function, values, reading)
    default_domain = node.domain in schemas.DEFAULT_DOMAINS
    shape_read = READ_FOR_SHAPE.get(node.op_type, ()) if default_domain else ()
    type_read = READ_FOR_TYPE.get(node.op_type, ()) if default_domain else ()
    read_for_value = [
        name
        for position, name in enumerate(node.input)
        if position not in type_read and (position not in shape_read or not reading.shape_known(name))
    ]  # (a shape that varies is read as a value)
    mask_only = dropout_node and reading.shape_known(node.input[0])  # (outside training its mask is all true)
    if any(values.varies(name) for name in read_for_value) and not mask_only:
        return every
    found = frozenset().union(*(values.sources_of(name) for name in node.input if name))
    for _, _, graph in held_graphs(node):  # (a body's inputs follow from what the node is given: a Loop's)
        inner = _Values(values, frozenset(info.name for info in graph.input), found or frozenset({node.op_type}))
        _walk_nodes(graph.node, inner, reading)
        if any(inner.varies(info.name) for info in graph.output):
            return every
        found = found.union(*(inner.sources_of(info.name) for info in graph.output))
    if any(values.varies(name) for name in node.input) or not found:  # (a fed value's shape; no input at all)
        found |= {node.op_type}
    if mask_only and any(values.varies(name) for name in read_for_value):
        return [found if position == DROPOUT_MASK else None for position in range(len(node.output))]
    return [found] * len(node.output)


def _call_outputs(
    node: onnx.NodeProto, function: onnx.FunctionProto, values: _Values, reading: _Reading
) -> list[frozenset[str] | None]:
    """Per output of a call of a local ``function``, as :func:`_node_outputs` gives a node's:
    its body walked with each parameter varying where given a varying value, its shape known
    where the value's is (the body's own values' shapes are not known), each other parameter
    following from ``@POSITION`` (the body is walked once per such signature, those replaced by
    what the given value follows from). A call within its own body varies."""
    given = list(node.input) + [""] * max(0, len(function.input) - len(node.input))
    varies = tuple(bool(name) and values.varies(name) for name in given[: len(function.input)])
    known = tuple(bool(name) and reading.shape_known(name) for name in given[: len(function.input)])
    key = (function.domain, function.name, varies, known)
    if key not in reading.walked:
        reading.walked[key] = None  # (walking it: a call within it varies)
        body = _Values()
        for position, (parameter, varying) in enumerate(zip(function.input, varies, strict=True)):
            if varying:
                body.varying.add(parameter)
            else:
                body.sources[parameter] = frozenset({f"@{position}"})
        shapes = {parameter for parameter, shape_known in zip(function.input, known, strict=True) if shape_known}
        inner = dataclasses.replace(reading, shape_known=shapes.__contains__, values={})
        _walk_nodes(function.node, body, inner)
        reading.walked[key] = [None if body.varies(name) else body.sources_of(name) for name in function.output]
    walked = reading.walked[key]
    if walked is None:
        return [None] * len(node.output)
    found = []
    for sources in walked[: len(node.output)]:
        if sources is not None:
            parameters = {name for name in sources if name.startswith("@")}
            sources = (sources - parameters).union(*(values.sources_of(given[int(p[1:])]) for p in parameters))
        found.append(sources)
    return found + [None] * (len(node.output) - len(found))


def _names_reused(graph: onnx.GraphProto) -> set[str]:
    """The names more than one graph gives a value of (a graph's inputs and its nodes' outputs,
    the main graph's and those its nodes hold): sibling branches may reuse one."""
    seen: set[str] = set()
    reused: set[str] = set()
    for each in [graph, *nested_graphs(graph.node)]:
        names = {info.name for info in each.input} | {name for node in each.node for name in node.output if name}
        reused |= seen & names
        seen |= names
    return reused


def _may_draw(node: onnx.NodeProto, drawing: set[tuple[str, str]]) -> bool:
    """Whether ``node`` may give a random draw: a random op, a Dropout (whatever its mode), a call
    of a local function that may."""
    if node.domain in schemas.DEFAULT_DOMAINS:
        return node.op_type in RANDOM_OPS or node.op_type == "Dropout"
    return (node.domain, node.op_type) in drawing


def _in_training(node: onnx.NodeProto, version: int | None, values: Mapping[str, np.ndarray]) -> bool:
    """Whether a Dropout of ``version`` is taken to draw: always before version 7 (in test mode
    its mask is not filled: not a value to call constant); 7 and 10, never (they run as inference,
    as onnxruntime runs them); from 12 where its training_mode is given and not a constant false."""
    if version is None or version < DROPOUT_INFERENCE_ONLY:
        return True
    if len(node.input) <= DROPOUT_TRAINING_INPUT or not node.input[DROPOUT_TRAINING_INPUT]:
        return False
    value = values.get(node.input[DROPOUT_TRAINING_INPUT])
    return value is None or bool(np.asarray(value).any())


def _constant_values(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """The values the main graph's initializers (no input overrides) and Constant nodes hold."""
    fed = {info.name for info in graph.input}
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer if t.name not in fed and t.dims == []}
    for node in graph.node:
        tensor = constant_tensor(node) if node.op_type == "Constant" else None
        if tensor is not None and not tensor.dims:
            values[node.output[0]] = numpy_helper.to_array(tensor)
    return values


def _functions_drawing(model: onnx.ModelProto) -> set[tuple[str, str]]:
    """The local functions whose body (or a graph it holds, or a function it calls) may draw
    (:func:`_may_draw`), as (domain, name)."""
    drawing: set[tuple[str, str]] = set()
    changed = True
    while changed:  # (a function calling one found drawing draws too)
        changed = False
        for function in model.functions:
            key = (function.domain, function.name)
            nodes = [*function.node, *(n for g in nested_graphs(function.node) for n in g.node)]
            if key not in drawing and any(_may_draw(n, drawing) for n in nodes):
                drawing.add(key)
                changed = True
    return drawing


def _holds_no_elements(type_proto: onnx.TypeProto) -> bool:
    tensor = type_proto.tensor_type
    return (
        type_proto.HasField("tensor_type")
        and tensor.HasField("shape")
        and any(d.HasField("dim_value") and d.dim_value == 0 for d in tensor.shape.dim)
    )
