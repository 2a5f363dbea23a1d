"""Forms a target chooses: a node rewritten into another form of the same op that means the
same on every input, where the runtime's probed verdict on the node's form is worse than on
the other form (:mod:`lowering.node_forms`). Each choice here is exact by the op's definition:

- ``Reshape`` (14+) with ``allowzero=1`` whose shape is a constant holding no 0: ``allowzero``
  only says what a 0 in the shape means (a zero dimension, not a copied one), so without it
  (``allowzero=0``, the default) the node means the same (OpenVINO 2024.6 gets the
  ``allowzero=1`` case wrong; PyTorch's dynamo exporter writes ``allowzero=1`` on every view).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import onnx
from onnx import numpy_helper

from . import schemas
from .graphs import constant_tensor, held_graphs
from .node_forms import NodeForm
from .runtime_profiles import DOUBTFUL, PARTLY, REFUSED, SUPPORTED, UNVERIFIED

# how good a verdict is for a node to keep: a form is chosen only where its verdict is better
_RANK = {REFUSED: 0, DOUBTFUL: 1, UNVERIFIED: 1, PARTLY: 2, SUPPORTED: 3}


@dataclass(frozen=True)
class FormChoice:
    """One choice: the op it applies to, whether it applies to a node (given the constants in
    scope by name), the node's form after it, the rewrite, and what the report says of it."""

    op_type: str
    applies: Callable[[onnx.NodeProto, dict[str, onnx.TensorProto], int], bool]
    form_after: Callable[[NodeForm], NodeForm]
    rewrite: Callable[[onnx.NodeProto], None]
    said: str


def _allowzero_changes_nothing(node: onnx.NodeProto, constants: dict[str, onnx.TensorProto], version: int) -> bool:
    """allowzero=1 on a Reshape whose shape is a constant holding no 0."""
    allowzero = next((a.i for a in node.attribute if a.name == "allowzero"), 0)
    if version < 14 or allowzero != 1 or len(node.input) < 2 or node.input[1] not in constants:
        return False
    shape = constants[node.input[1]]
    if shape.data_location == onnx.TensorProto.EXTERNAL:
        return False  # (not read here)
    return not (numpy_helper.to_array(shape) == 0).any()


def _without_allowzero(form: NodeForm) -> NodeForm:
    attributes = tuple((name, value) for name, value in form.attributes if name != "allowzero")
    return NodeForm(form.inputs, form.fed, form.constant, form.outputs, attributes, form.ranks, form.empty, form.types)


def _drop_allowzero(node: onnx.NodeProto) -> None:
    kept = [a for a in node.attribute if a.name != "allowzero"]
    del node.attribute[:]
    node.attribute.extend(kept)


FORM_CHOICES = (
    FormChoice(
        "Reshape",
        _allowzero_changes_nothing,
        _without_allowzero,
        _drop_allowzero,
        "Reshape allowzero=1 -> 0 (its constant shape holds no 0)",
    ),
)


def choose_forms(model: onnx.ModelProto, check_form, opset: int) -> tuple[onnx.ModelProto, Counter]:
    """``model`` with each node a choice of :data:`FORM_CHOICES` betters rewritten
    (:func:`better_form`); the model itself where there is none (else a copy), and what was
    chosen, counted."""
    chosen: Counter = Counter()
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for node, constants in nodes_with_constants(copy):
        choice = better_form(node, constants, opset, check_form)
        if choice is not None:
            choice.rewrite(node)
            chosen[choice.said] += 1
    return (copy, chosen) if chosen else (model, chosen)


def better_form(node: onnx.NodeProto, constants: dict[str, onnx.TensorProto], opset: int, check_form):
    """The first of :data:`FORM_CHOICES` that applies to ``node`` and whose form the runtime
    judges better than the node's own: ``check_form(node, form)`` gives the profile's verdict
    kind on the node in ``form`` (None: its own) at ``opset``, and that form. None where none."""
    if node.domain not in ("", "ai.onnx"):
        return None
    for choice in FORM_CHOICES:
        if node.op_type != choice.op_type:
            continue
        version = schemas.version_in_force(node.op_type, opset)
        if version is None or not choice.applies(node, constants, version):
            continue
        before, form = check_form(node, None)
        after, _ = check_form(node, choice.form_after(form))
        if _RANK[after] > _RANK[before]:
            return choice
    return None


def nodes_with_constants(model: onnx.ModelProto) -> Iterator[tuple[onnx.NodeProto, dict[str, onnx.TensorProto]]]:
    """Each node of the model's graphs (and its functions'), with the constants in scope there
    by name (initializers of its graph and the graphs around it, Constant nodes' tensors)."""

    def walk(nodes, initializers, outer: dict[str, onnx.TensorProto]):
        constants = {**outer, **{t.name: t for t in initializers}}
        for node in nodes:
            value = constant_tensor(node)
            if value is not None and node.output:
                constants[node.output[0]] = value
            yield node, constants
            for _, _, inner in held_graphs(node):
                yield from walk(inner.node, inner.initializer, constants)

    yield from walk(model.graph.node, model.graph.initializer, {})
    for function in model.functions:
        yield from walk(function.node, (), {})
