"""Local functions (FunctionProtos in the model): how calls name them, the order to lower them
in, and the types inside a body as one call site gives them."""

from __future__ import annotations

from collections.abc import Iterable

import onnx
from onnx import helper

from . import schemas
from .declared_types import element_type_of
from .graphs import held_graphs

FunctionKey = tuple[str, str, str]


def function_key(function: onnx.FunctionProto) -> FunctionKey:
    return (function.domain, function.name, getattr(function, "overload", ""))


def call_key(node: onnx.NodeProto) -> FunctionKey:
    return (node.domain, node.op_type, getattr(node, "overload", ""))


def callers_first(functions: dict[FunctionKey, onnx.FunctionProto]) -> list[FunctionKey]:
    """The functions ordered so that each comes before the functions it calls."""
    callees = {key: set(_calls_in(f.node, functions)) for key, f in functions.items()}
    ordered: list[FunctionKey] = []
    visiting: set[FunctionKey] = set()
    done: set[FunctionKey] = set()

    def visit(key: FunctionKey) -> None:
        if key in done or key in visiting:
            return
        visiting.add(key)
        for callee in sorted(callees[key]):
            visit(callee)
        visiting.discard(key)
        done.add(key)
        ordered.append(key)

    for key in functions:
        visit(key)
    return list(reversed(ordered))


def _calls_in(nodes: Iterable[onnx.NodeProto], functions: dict) -> Iterable[FunctionKey]:
    for node in nodes:
        if call_key(node) in functions:
            yield call_key(node)
        for _, _, graph in held_graphs(node):
            yield from _calls_in(graph.node, functions)


def signature_text(types: list[onnx.TypeProto | None]) -> str:
    """``(float, ?)``: the element types of a call's inputs."""
    names = []
    for type_proto in types:
        element_type = element_type_of(type_proto)
        names.append(schemas.type_name(element_type) if element_type else "?")
    return "(" + ", ".join(names) + ")"


def infer(model: onnx.ModelProto | bytes) -> onnx.ModelProto | None:
    """onnx type inference on a model (or its bytes, not serialized again), or None when
    inference itself fails. With data propagation: a shape computed from other tensors' shapes
    (``Concat(Shape(x)[0:1], ...)``, as dynamic exports compute their views' sizes) gives the
    result its sizes, symbols included."""
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception:  # inference is best effort: an unknown type is reported, not fatal
        return None


def infer_function(
    function: onnx.FunctionProto, input_types: dict[str, onnx.TypeProto], model: onnx.ModelProto
) -> onnx.GraphProto | None:
    """Infer the types inside a function body called with ``input_types``."""
    inputs = []
    for name in function.input:
        info = onnx.ValueInfoProto(name=name)
        if name in input_types:
            info.type.CopyFrom(input_types[name])
        inputs.append(info)
    graph = helper.make_graph(
        list(function.node), f"{function.name}_body", inputs, [onnx.ValueInfoProto(name=o) for o in function.output]
    )
    imports = {entry.domain: entry.version for entry in model.opset_import}
    imports.update({entry.domain: entry.version for entry in function.opset_import})
    body_model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid(domain, version) for domain, version in imports.items()],
        functions=list(model.functions),
        ir_version=model.ir_version,
    )
    inferred = infer(body_model)
    return inferred.graph if inferred is not None else None
