"""A value's element type followed from the op schemas alone (``lowering.scopes``, no onnx
inference) is the type the ONNX backend node cases declare for it, on every case."""

from __future__ import annotations

import onnx
from version_cases import node_cases

from lowering.naming import NameAllocator
from lowering.scopes import Scope


def followed_and_declared(model: onnx.ModelProto) -> list[tuple[str, int | None, int]]:
    """(output, the element type followed without the output's declared type (None: not
    followed), the declared one) for each tensor output of the case's graph."""
    graph = onnx.GraphProto()
    graph.CopyFrom(model.graph)
    for info in graph.output:
        info.ClearField("type")
    opset = next((entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), 1)
    scope = Scope(graph, opset=opset, location="case", names=NameAllocator(), twin=lambda: None)
    found = []
    for info in model.graph.output:
        if info.type.WhichOneof("value") != "tensor_type" or not info.type.tensor_type.elem_type:
            continue
        followed = scope.type_of(info.name)
        element = followed.tensor_type.elem_type if followed is not None else None
        found.append((info.name, element, info.type.tensor_type.elem_type))
    return found


def test_types_followed_from_the_schemas_are_the_types_the_cases_declare():
    followed, wrong = 0, []
    for case in node_cases():
        for name, element, declared in followed_and_declared(case.model):
            if element is None:
                continue
            followed += 1
            if element != declared:
                wrong.append(f"{case.name}: {name} followed as {element}, declared {declared}")
    assert not wrong, "\n".join(wrong[:20])
    assert followed > 2000  # most outputs are followed without inference, later outputs of
    # multi-output ops (LSTM, TopK, Split, Dropout, ...) too
