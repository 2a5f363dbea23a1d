"""Deciding optionals: where the graph fixes whether an optional holds a value.

An optional is decided when it comes from ``Optional(x)`` (present: x), ``Optional()``
(empty), a plain tensor or sequence (present: itself), an ``Identity`` of a decided optional,
or an ``If`` whose branches each decide it. Such an If output is split in two: the If also
yields a bool flag and the plain value (a placeholder where the optional is empty, whose
contents never matter: reading an empty optional is an error in the original model).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import cleanup, floats
from .naming import NameAllocator
from .scopes import Scope

BRANCHES = ("then_branch", "else_branch")


@dataclass(frozen=True)
class Decided:
    """What an optional holds where it is read.

    ``has_element``: True, False, or the name of a bool flag computed at run time.
    ``element``: the name of the wrapped value (None when the optional is always empty).
    ``element_type``: the wrapped value's type, where known.
    """

    has_element: bool | str
    element: str | None
    element_type: onnx.TypeProto | None


class OptionalResolver:
    """Decides optionals across graphs, splitting If outputs on first need (once each)."""

    def __init__(self, names: NameAllocator) -> None:
        self._names = names
        # By the If node itself (kept, so its id is never reused): sibling branches may hold
        # Ifs whose outputs share a name.
        self._splits: dict[tuple[int, str], tuple[onnx.NodeProto, Decided | str]] = {}
        self.marked = False  # whether a node carries a cleanup mark (see lowering.cleanup)

    def decide(self, name: str, scope: Scope) -> Decided | str:
        """How ``name`` (an optional, tensor or sequence visible in ``scope``) is decided, or why not."""
        type_proto = scope.type_of(name)
        kind = type_proto.WhichOneof("value") if type_proto is not None else None
        if kind in ("tensor_type", "sequence_type"):
            return Decided(True, name, type_proto)
        found = scope.producer(name)
        if found is None:
            owner_of_input = scope.input_owner(name)
            if owner_of_input is not None:
                return f"'{name}' is an optional input of {owner_of_input}: only its caller decides it, at run time"
            return f"'{name}' has no producer in scope"
        node, node_index, output_index, owner = found
        if node.domain not in ("", "ai.onnx"):
            return f"'{name}' comes from {node.domain}.{node.op_type}, which does not decide it"
        if node.op_type == "Optional":
            self._mark(node)
            return _decide_optional_node(node, owner)
        if node.op_type == "Identity":
            self._mark(node)
            return self.decide(node.input[0], owner)
        if node.op_type == "If":
            return self._split_if(node, node_index, name, owner)
        if node.op_type in ("Loop", "Scan"):
            return (
                f"'{name}' is carried by a {node.op_type}: whether it holds a value can change from one "
                "iteration to the next, which a bool flag beside it would have to carry through the loop; "
                "not done yet"
            )
        return f"'{name}' comes from {node.op_type}, which does not decide it"

    def _mark(self, node: onnx.NodeProto, outputs: tuple[str, ...] = cleanup.WHOLE_NODE) -> None:
        """Let cleanup remove ``node`` (or those of its ``outputs``) once nobody reads it: the
        pass is rewriting a reader of what it yields."""
        cleanup.mark(node, outputs)
        self.marked = True

    def _split_if(self, if_node: onnx.NodeProto, node_index: int, output: str, owner: Scope) -> Decided | str:
        key = (id(if_node), output)
        if key not in self._splits:
            self._splits[key] = (if_node, self._make_split(if_node, node_index, output, owner))
        return self._splits[key][1]

    def _make_split(self, if_node: onnx.NodeProto, node_index: int, output: str, owner: Scope) -> Decided | str:
        output_index = list(if_node.output).index(output)
        branches = {a.name: a.g for a in if_node.attribute if a.name in BRANCHES}
        decided_branches = []
        for branch_name in BRANCHES:
            graph = branches[branch_name]
            branch_scope = owner.subgraph(graph, node_index, branch_name, None, f"{owner.location} > If {branch_name}")
            decided = self.decide(graph.output[output_index].name, branch_scope)
            if isinstance(decided, str):
                return f"the If producing '{output}' does not decide it in its {branch_name}: {decided}"
            decided_branches.append((graph, decided))
        element_type = _element_type(owner.type_of(output), [g.output[output_index].type for g, _ in decided_branches])
        if element_type is None:
            return f"the element type of the optional '{output}' is unknown"

        flags = {d.has_element for _, d in decided_branches}
        constant_flag = next(iter(flags)) if len(flags) == 1 and isinstance(next(iter(flags)), bool) else None
        any_element = any(d.element for _, d in decided_branches)
        flag_name = None if constant_flag is not None else self._names.fresh(f"{output}_has_element")
        element_name = self._names.fresh(f"{output}_element") if any_element else None
        for graph, decided in decided_branches:
            self._add_branch_outputs(graph, decided, bool(flag_name), bool(element_name), element_type)
        if flag_name:
            if_node.output.append(flag_name)
        if element_name:
            if_node.output.append(element_name)
        self._mark(if_node, tuple(name for name in (output, flag_name, element_name) if name))
        has_element = constant_flag if constant_flag is not None else flag_name
        return Decided(has_element, element_name, element_type)

    def _add_branch_outputs(
        self,
        graph: onnx.GraphProto,
        decided: Decided,
        with_flag: bool,
        with_element: bool,
        element_type: onnx.TypeProto,
    ) -> None:
        """Make a branch yield its flag and its plain value beside the optional (the nodes made
        marked for cleanup)."""
        base = graph.name or "branch"
        node_count = len(graph.node)
        if with_flag:
            flag = self._names.fresh(f"{base}_has_element")
            if isinstance(decided.has_element, bool):
                value = numpy_helper.from_array(np.array(decided.has_element), name=flag)
                graph.node.append(helper.make_node("Constant", [], [flag], name=flag, value=value))
            else:
                graph.node.append(helper.make_node("Identity", [decided.has_element], [flag], name=flag))
            graph.output.append(helper.make_tensor_value_info(flag, onnx.TensorProto.BOOL, []))
        if with_element:
            element = self._names.fresh(f"{base}_element")
            if decided.element:
                graph.node.append(helper.make_node("Identity", [decided.element], [element], name=element))
            else:
                graph.node.append(_placeholder(element, element_type))
            info = onnx.ValueInfoProto(name=element)
            info.type.CopyFrom(_without_dimensions(element_type))
            graph.output.append(info)
        for node in graph.node[node_count:]:
            self._mark(node)


def _decide_optional_node(node: onnx.NodeProto, owner: Scope) -> Decided:
    """``Optional(x)`` holds x; ``Optional()`` (only a ``type`` attribute) is empty."""
    declared = next((a.tp for a in node.attribute if a.name == "type"), None)
    if node.input and node.input[0]:
        return Decided(True, node.input[0], owner.type_of(node.input[0]) or declared)
    return Decided(False, None, declared)


def _element_type(optional_type: onnx.TypeProto | None, branch_types: list[onnx.TypeProto]) -> onnx.TypeProto | None:
    for candidate in [optional_type, *branch_types]:
        if candidate is not None and candidate.WhichOneof("value") == "optional_type":
            return candidate.optional_type.elem_type
    return None


def _without_dimensions(type_proto: onnx.TypeProto) -> onnx.TypeProto:
    """The same type with every dimension unknown (the rank kept): a branch's real value and
    its empty placeholder differ in size."""
    result = onnx.TypeProto()
    result.CopyFrom(type_proto)
    tensor_type = result.tensor_type if result.WhichOneof("value") == "tensor_type" else None
    if tensor_type is not None and tensor_type.HasField("shape"):
        for dim in tensor_type.shape.dim:
            dim.Clear()
    return result


def _placeholder(name: str, element_type: onnx.TypeProto) -> onnx.NodeProto:
    """An empty value of ``element_type``: a zero-size tensor of the same rank, or an empty sequence."""
    kind = element_type.WhichOneof("value")
    if kind == "sequence_type":
        inner = element_type.sequence_type.elem_type.tensor_type.elem_type or onnx.TensorProto.FLOAT
        return helper.make_node("SequenceEmpty", [], [name], name=name, dtype=inner)
    tensor_type = element_type.tensor_type
    rank = len(tensor_type.shape.dim) if tensor_type.HasField("shape") else 1
    if rank == 0:  # a scalar cannot be empty: any one value does
        dtype = (
            object if tensor_type.elem_type == onnx.TensorProto.STRING else floats.numpy_dtype(tensor_type.elem_type)
        )
        empty = numpy_helper.from_array(
            np.zeros((), dtype=dtype) if dtype is not object else np.array("", dtype=object)
        )
        empty.name = name
    else:
        empty = onnx.TensorProto(name=name, data_type=tensor_type.elem_type, dims=[0] * rank)
    return helper.make_node("Constant", [], [name], name=name, value=empty)
