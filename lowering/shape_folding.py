"""Folding the values that shapes decide: every node of the main graph whose outputs follow from
constants and static shapes (or only static ranks) alone becomes a Constant, and the nodes that
only fed folded ones go.

What is known about a value:
- a full value: a Constant's or an initializer's (one no graph input overrides), a Shape or
  Size of a tensor of static shape, or the output of a node whose inputs are all known, where
  it is a small integer or bool tensor (evaluated by onnx.reference: integer arithmetic is
  exact) or a data-moving op's (ConstantOfShape, Reshape, Concat, ...: no arithmetic at all);
- a partial value: a 1-D integer vector of known length whose entries are known or not, as
  Shape gives it for a tensor of static rank. Ops that only move elements (Gather, Slice,
  Concat, Squeeze, Unsqueeze, Reshape, ...) move the known entries along, found by running the
  op on the entries' positions; Size and Shape of such a vector give its length.

Parts of no elements go: a Concat's input whose size along the axis is static and 0 is dropped
(one input left, an Identity), and a Split whose other parts are so and unread becomes an
Identity of its input (a RotaryEmbedding body turning the whole head splits off such a part).

Float arithmetic folds only where IEEE 754 decides every bit of the result (float32 and
float64, ops that round once, compare or select; no NaN involved): elsewhere onnxruntime may
compute it otherwise than numpy does (Sqrt, Exp, 16-bit floats, which NaN comes back).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from . import floats, schemas
from .folding import MAX_FOLDED_ELEMENTS, evaluated_small, shape_slice
from .graphs import held_graphs, holds_graphs, nested_graphs, without_unread
from .schemas import RANDOM_OPS

# Ops whose outputs hold their inputs' elements moved, repeated or dropped, never computed.
DATA_MOVING = frozenset(
    "Identity Reshape Squeeze Unsqueeze Flatten Concat Slice Gather Transpose Expand Tile Split".split()
)
Partial = tuple  # a 1-D int64 vector of known length: each entry an int, or None where unknown


@dataclass
class FoldedGraph:
    """What folding did to a graph: folded nodes per op type."""

    folded: Counter = field(default_factory=Counter)


def fold_shapes(
    model: onnx.ModelProto,
    foldable: Callable[[onnx.NodeProto], bool],
    types: dict[str, onnx.TypeProto],
    evaluable: Callable[[onnx.NodeProto], bool] | None = None,
) -> FoldedGraph:
    """Fold, in the main graph of ``model`` (in place), every node ``foldable`` accepts whose
    outputs are all known (see the module's docstring), and drop parts of no elements; then
    remove the nodes ``foldable`` accepts that nothing reads any more. Local functions are folded
    on their constants alone. ``types``: every value's type as inference gives it; ``evaluable``:
    nodes of the main graph whose values are computed for the nodes after them though they stay
    (default: those ``foldable`` accepts)."""
    graph = model.graph
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    fresh = _fresh_names({node.name for node in graph.node})
    # a name two graphs define (sibling branches may) has no one type, and a branch defining
    # one cannot be inlined beside the other
    duplicated = defined_more_than_once([info.name for info in graph.input], graph)
    types = _TypesHiding(types, duplicated)
    outputs = frozenset(info.name for info in graph.output)
    known = _constants(graph)
    nodes, folded = fold_nodes(
        list(graph.node), known, types, opset, foldable, fresh, duplicated=duplicated, outputs=outputs,
        evaluable=evaluable,
    )  # fmt: skip
    folded.update(splits_without_empty_parts(nodes, outputs, known, types, foldable))
    result = FoldedGraph(folded)
    if folded:
        kept = without_unread(nodes, [info.name for info in graph.output], _removable(foldable))
        del graph.node[:]
        graph.node.extend(kept)
    for function in model.functions:
        result.folded.update(_fold_function(function, opset, foldable))
    return result


def _fold_function(function: onnx.FunctionProto, model_opset: int | None, foldable) -> Counter:
    """Fold a local function's body (in place) on what its constants decide: its inputs' types
    are its callers', unknown here, and a value read from an attribute is the caller's too."""
    opset = next((o.version for o in function.opset_import if o.domain in ("", "ai.onnx")), model_opset)
    fresh = _fresh_names({node.name for node in function.node})
    duplicated = defined_more_than_once(list(function.input), function)
    known: dict[str, np.ndarray] = {}
    nodes, folded = fold_nodes(list(function.node), known, {}, opset, foldable, fresh, duplicated=duplicated)
    folded.update(splits_without_empty_parts(nodes, list(function.output), known, {}, foldable))
    if folded:
        kept = without_unread(nodes, list(function.output), _removable(foldable))
        del function.node[:]
        function.node.extend(kept)
    return folded


def defined_more_than_once(inputs: list[str], graph) -> frozenset[str]:
    """The value names that ``graph`` (a GraphProto or FunctionProto, with its ``inputs``) and
    the graphs its nodes hold, at any depth, define more than once (as inputs, initializers or
    node outputs)."""
    counts: Counter = Counter(inputs)
    counts.update(tensor.name for tensor in getattr(graph, "initializer", ()))
    counts.update(name for node in graph.node for name in node.output if name)
    for inner in nested_graphs(graph.node):
        counts.update(info.name for info in inner.input)
        counts.update(tensor.name for tensor in inner.initializer)
        counts.update(name for node in inner.node for name in node.output if name)
    return frozenset(name for name, count in counts.items() if count > 1)


def _fresh_names(taken: set[str]) -> Callable[[str], str]:
    """A namer: the hint, with ``_`` appended until it is not among ``taken`` (then taken)."""

    def fresh(hint: str) -> str:
        name = hint
        while name in taken:
            name += "_"
        taken.add(name)
        return name

    return fresh


def fold_nodes(
    nodes: list[onnx.NodeProto],
    known: dict[str, np.ndarray],
    types: dict[str, onnx.TypeProto],
    opset: int | None,
    foldable: Callable[[onnx.NodeProto], bool],
    fresh: Callable[[str], str],
    partial: dict[str, Partial] | None = None,
    duplicated: frozenset[str] = frozenset(),
    outputs: frozenset[str] = frozenset(),
    evaluable: Callable[[onnx.NodeProto], bool] | None = None,
) -> tuple[list[onnx.NodeProto], Counter]:
    """``nodes`` with each node ``foldable`` accepts whose outputs are all known replaced by
    Constant nodes writing the same names (named by ``fresh``), a Concat's inputs of no
    elements along its axis dropped (:func:`_concat_without_empty_inputs`), and the count per op
    type folded (not where a graph output, among ``outputs``, would be a constant of no elements:
    OpenVINO gives such an output back as a scalar); an If whose condition is known replaced by
    the branch it takes (its nodes, then an Identity from each branch output to the If's); the
    graphs an If, a Loop or a Scan holds folded alike (:func:`_fold_body`). ``known``: the values
    known at the start (constants), updated; ``evaluable``: nodes whose values are computed
    though they stay (default: those ``foldable`` accepts)."""
    partial = {} if partial is None else partial
    parts: dict[str, tuple[int, int, int]] = {}  # (each named part of a Split, as _split_part_sizes gives it)
    folded: Counter = Counter()
    result: list[onnx.NodeProto] = []
    pending = deque(nodes)
    while pending:
        node = pending.popleft()
        if node.op_type == "If" and node.domain in ("", "ai.onnx") and foldable(node):
            chosen_nodes = _chosen_branch(node, known, types, opset, fresh, duplicated)
            if chosen_nodes is not None:  # the branch's nodes take the If's place, and fold in turn
                folded["If"] += 1
                pending.extendleft(reversed(chosen_nodes))
                continue
        if node.op_type in ("If", "Loop", "Scan") and node.domain in ("", "ai.onnx"):
            for _, _, body in held_graphs(node):
                folded.update(_fold_body(body, node.op_type, known, partial, types, opset, foldable, fresh, duplicated))
        chosen = foldable(node)
        shortened = False
        if node.op_type == "Split" and node.domain in ("", "ai.onnx"):
            sizes = _split_part_sizes(node, known, types) or []
            parts.update((name, part) for name, part in zip(node.output, sizes, strict=False) if name)
        if chosen and node.op_type == "Concat" and node.domain in ("", "ai.onnx"):
            shorter = _concat_without_empty_inputs(node, known, types, parts)
            if shorter is not None:
                folded["Concat"] += 1  # (once, whether the shorter node then folds or not)
                node, shortened = shorter, True
        evaluate = chosen or (evaluable is not None and evaluable(node))
        values = _evaluated(node, known, partial, types, opset, evaluate=evaluate)
        if values is None or not chosen or node.op_type == "Constant":
            result.append(node)
            continue
        tensors = [floats.tensor(np.asarray(value), "") for value in values]
        if not all(_fits(tensor, types.get(name), opset) for name, tensor in zip(node.output, tensors, strict=True)):
            result.append(node)
            continue
        if any(name in outputs and np.size(value) == 0 for name, value in zip(node.output, values, strict=True)):
            result.append(node)
            continue
        constants = [
            helper.make_node("Constant", [], [name], name=f"{name}_folded", value=tensor)
            for name, tensor in zip(node.output, tensors, strict=True)
            if name
        ]
        if not all(_passes_node_check(constant, opset) for constant in constants):
            result.append(node)
            continue
        if not shortened:
            folded[node.op_type] += 1
        for constant in constants:
            constant.name = fresh(constant.name)
        result.extend(constants)
    return result, folded


def _chosen_branch(node, known, types, opset, fresh, duplicated=frozenset()) -> list[onnx.NodeProto] | None:
    """The nodes an If whose condition is known runs: its branch's, then ``If output =
    Identity(branch output)`` for each output; None where the condition is not known, an
    output's type is not one the opset's Identity takes (onnx.defs), the branch holds
    initializers, or it defines a name another graph defines too (``duplicated``: inlined, the
    name would be defined twice)."""
    condition = known.get(node.input[0]) if node.input else None
    if condition is None or condition.size != 1:
        return None
    if opset is None:
        return None
    takes = schemas.input_type_strings("Identity", opset)
    for name in node.output:
        declared = types.get(name)
        if name and (declared is None or schemas.type_string(declared) not in takes):
            return None
    wanted = "then_branch" if bool(condition.reshape(-1)[0]) else "else_branch"
    branch = next((a.g for a in node.attribute if a.name == wanted), None)
    if branch is None or len(branch.initializer) or len(branch.sparse_initializer):
        return None
    if not duplicated.isdisjoint(_defined_in(branch)):
        return None
    passes = [
        helper.make_node("Identity", [inner.name], [outer], name=fresh(f"{outer}_{wanted}"))
        for inner, outer in zip(branch.output, node.output, strict=True)
        if outer
    ]
    return [*branch.node, *passes]


def _defined_in(graph: onnx.GraphProto) -> set[str]:
    """Every value name ``graph`` and the graphs its nodes hold define."""
    names = {name for node in graph.node for name in node.output if name}
    for inner in nested_graphs(graph.node):
        names.update(info.name for info in inner.input)
        names.update(name for node in inner.node for name in node.output if name)
    return names


def _fold_body(body, op_type, known, partial, types, opset, foldable, fresh, duplicated=frozenset()) -> Counter:
    """Fold ``body`` (an If branch, a Loop's or a Scan's body) in place, seeing what is known
    outside it. A Loop's or Scan's body runs once per iteration on values that may change shape
    from one iteration to the next: its inputs, and every value computed from them, are taken as
    unknown (their types hidden); what it computes from outer values and constants alone is the
    same on every iteration, and folds."""
    if op_type != "If":
        varying = _varying_values(body)
        types = _TypesHiding(types, varying)
        known = {name: value for name, value in known.items() if name not in varying}
        partial = {name: value for name, value in partial.items() if name not in varying}
    inner_known = dict(known)
    inner, inner_folded = fold_nodes(
        list(body.node), inner_known, types, opset, foldable, fresh, dict(partial), duplicated=duplicated
    )
    outputs = [info.name for info in body.output]
    inner_folded.update(splits_without_empty_parts(inner, outputs, inner_known, types, foldable))
    if inner_folded:
        kept = without_unread(inner, [info.name for info in body.output], _removable(foldable))
        del body.node[:]
        body.node.extend(kept)
    return inner_folded


def _varying_values(body: onnx.GraphProto) -> set[str]:
    """A loop body's inputs and every value of it computed from them (a node holding a graph
    that reads one counts as reading it)."""
    varying = {info.name for info in body.input}
    for node in body.node:
        read = set(node.input)
        for inner in nested_graphs([node]):
            read.update(name for inner_node in inner.node for name in inner_node.input)
        if not varying.isdisjoint(read):
            varying.update(node.output)
    return varying


class _TypesHiding:
    """A view of a types mapping that knows nothing of ``hidden`` names (all :func:`fold_nodes` reads is ``get``)."""

    def __init__(self, types, hidden: set[str]):
        self.types, self.hidden = types, hidden

    def get(self, name: str, default=None):
        return default if name in self.hidden else self.types.get(name, default)


def _passes_node_check(node: onnx.NodeProto, opset: int) -> bool:
    """Whether onnx's node checker takes ``node`` at default-domain ``opset``."""
    context = onnx.checker.C.CheckerContext()
    context.ir_version = onnx.IR_VERSION
    context.opset_imports = {"": opset}
    try:
        onnx.checker.check_node(node, context, onnx.checker.C.LexicalScopeContext())
    except onnx.checker.ValidationError:
        return False
    return True


def _fits(tensor: onnx.TensorProto, inferred: onnx.TypeProto | None, opset: int | None) -> bool:
    """Whether a Constant may stand for the value: its element type and sizes those inference
    gives the value (so the folded model means and types the same), and a type the opset's
    Constant holds (no int64 or bool before opset 9)."""
    first = schemas.first_opset("Constant", tensor.data_type)
    if opset is None or first is None or first > opset:
        return False
    if inferred is None or inferred.WhichOneof("value") != "tensor_type":
        return True
    declared = inferred.tensor_type
    if declared.elem_type and declared.elem_type != tensor.data_type:
        return False
    dims = _dims(inferred)
    if dims is None:
        return True
    return len(dims) == len(tensor.dims) and all(d in (None, t) for d, t in zip(dims, tensor.dims, strict=True))


def _evaluated(node, known, partial, types, opset, evaluate: bool) -> list[np.ndarray] | None:
    """The node's outputs where they are all known (recording them, and partial values), else
    None. Without ``evaluate`` only what costs no run is recorded: constants and shape facts
    (a node that is not to be folded is not run through onnx.reference)."""
    if node.domain not in ("", "ai.onnx") or holds_graphs(node) or node.op_type in RANDOM_OPS or opset is None:
        return None
    if any(attribute.ref_attr_name for attribute in node.attribute):
        return None  # (in a function body: its value is the caller's)
    if node.op_type == "Constant":
        tensor = _constant_tensor(node)
        if tensor is not None:
            known[node.output[0]] = tensor
        return None
    direct = _shape_fact(node, known, partial, types)
    if direct is not None:
        known[node.output[0]] = direct
        return [direct]
    if not evaluate:
        return None
    inputs = [name for name in node.input if name]
    if node.op_type == "CastLike" and len(inputs) == 2 and inputs[0] in known and inputs[1] not in known:
        node = _as_cast(node, types.get(inputs[1]))  # (only the type of the second input counts)
        inputs = inputs[:1] if node.op_type == "Cast" else inputs
    if inputs and all(name in known for name in inputs):
        values = _computed(node, {name: known[name] for name in inputs}, opset)
        if values is not None:
            for name, value in zip(node.output, values, strict=True):
                known[name] = value
            return values
    if node.op_type in DATA_MOVING or node.op_type == "Cast":
        _move_partial(node, known, partial, opset)
        if all(name in known for name in node.output if name):
            return [known.get(name) for name in node.output]
    return None


def _concat_without_empty_inputs(node: onnx.NodeProto, known, types, parts) -> onnx.NodeProto | None:
    """Concat(a, e, b) = Concat(a, b) where e has no elements along the axis (its size there is
    static and 0), and Concat(a) = Identity(a): None where no input is empty so, or every one is."""
    if any(attribute.ref_attr_name for attribute in node.attribute):
        return None  # (in a function body: the axis is the caller's)
    axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), None)
    if axis is None:
        return None
    kept = [name for name in node.input if _size_along(name, axis, known, types, parts) != 0]
    if len(kept) in (0, len(node.input)):
        return None
    shorter = onnx.NodeProto()
    shorter.CopyFrom(node)
    del shorter.input[:]
    shorter.input.extend(kept)
    if len(kept) == 1:
        del shorter.attribute[:]
        shorter.op_type = "Identity"
    return shorter


def splits_without_empty_parts(nodes: list[onnx.NodeProto], outputs, known, types, foldable) -> Counter:
    """In place: Split(x) -> (y, e, ...) = Identity(x) -> y where every part but y has no
    elements along the axis (its size there static and 0) and nothing reads it (``outputs``, the
    graph's, aside); the count per op type. ``known``: the values known (a Split's lengths)."""
    if not any(node.op_type == "Split" for node in nodes):
        return Counter()
    read = set(outputs)
    for node in nodes:
        read.update(node.input)
    for graph in nested_graphs(nodes):
        read.update(name for inner in graph.node for name in inner.input)
    dropped: Counter = Counter()
    for index, node in enumerate(nodes):
        if node.op_type != "Split" or node.domain not in ("", "ai.onnx") or not foldable(node):
            continue
        if any(attribute.ref_attr_name for attribute in node.attribute):
            continue  # (in a function body: the axis or the lengths are the caller's)
        parts = _split_part_sizes(node, known, types)
        if parts is not None:
            sizes = [part[1] for part in parts]
        else:  # (its lengths not known: its parts' inferred types)
            axis = next((attribute.i for attribute in node.attribute if attribute.name == "axis"), 0)
            sizes = [_size_along(name, axis, {}, types, {}) for name in node.output]
        kept = [name for name, size in zip(node.output, sizes, strict=True) if (name and name in read) or size != 0]
        if len(kept) == 1 and kept[0] and len(node.output) > 1:
            nodes[index] = helper.make_node("Identity", node.input[:1], kept, name=node.name)
            dropped["Split"] += 1
    return dropped


def _split_part_sizes(node: onnx.NodeProto, known, types) -> list[tuple[int, int, int]] | None:
    """Each part of Split ``node``, in order: (the axis, counted from the front; the part's size
    there; the rank), where its lengths (its ``split`` input or attribute) and its input's rank
    are known; else None."""
    attributes = {attribute.name: attribute for attribute in node.attribute}
    if any(attribute.ref_attr_name for attribute in node.attribute):
        return None  # (in a function body: the axis or the lengths are the caller's)
    if len(node.input) > 1 and node.input[1]:
        lengths = known.get(node.input[1])
    else:
        lengths = list(attributes["split"].ints) if "split" in attributes else None
    dims = list(known[node.input[0]].shape) if node.input[0] in known else _dims(types.get(node.input[0]))
    if lengths is None or dims is None or len(lengths) != len(node.output):
        return None
    axis = attributes["axis"].i if "axis" in attributes else 0
    if not -len(dims) <= axis < len(dims):
        return None
    return [(axis % len(dims), int(size), len(dims)) for size in lengths]


def _size_along(name: str, axis: int, known, types, parts) -> int | None:
    """The static size of value ``name`` along ``axis`` (negative counts from the end), or None."""
    dims = list(known[name].shape) if name in known else _dims(types.get(name))
    if dims is not None and -len(dims) <= axis < len(dims) and dims[axis] is not None:
        return dims[axis]
    part = parts.get(name)  # (a Split's part: its size along the Split's axis)
    if part is None or not -part[2] <= axis < part[2]:
        return None
    return part[1] if axis % part[2] == part[0] else None


def _as_cast(node: onnx.NodeProto, like: onnx.TypeProto | None) -> onnx.NodeProto:
    """CastLike(x, y) as Cast(x, to=y's element type) where that type is known, else itself."""
    if like is None or like.WhichOneof("value") != "tensor_type" or not like.tensor_type.elem_type:
        return node
    saturate = [attribute for attribute in node.attribute if attribute.name == "saturate"]
    cast = helper.make_node("Cast", node.input[:1], node.output, to=like.tensor_type.elem_type)
    cast.attribute.extend(saturate)
    return cast


def _shape_fact(node, known, partial, types) -> np.ndarray | None:
    """Shape or Size read from a static shape, a static rank (Size of a Shape), or a partial vector."""
    if node.op_type not in ("Shape", "Size") or not node.input:
        return None
    source = node.input[0]
    if source in partial:  # a 1-D vector of known length
        length = len(partial[source])
        return (
            np.array(shape_slice(node, [length]), np.int64) if node.op_type == "Shape" else np.array(length, np.int64)
        )
    dims = _dims(types.get(source))
    if dims is None:
        return None
    if node.op_type == "Size":
        return np.array(int(np.prod(dims, dtype=np.int64)), np.int64) if None not in dims else None
    taken = shape_slice(node, dims)
    if None in taken:
        partial[node.output[0]] = tuple(taken)
        return None
    return np.array(taken, np.int64)


def _computed(node: onnx.NodeProto, feeds: dict[str, np.ndarray], opset: int) -> list[np.ndarray] | None:
    """The node's outputs from known inputs, where they are small and exact: integer or bool
    results of integer or bool inputs; any values a data-moving op (or ConstantOfShape) gives,
    moving floats only from a few (parameters, such as scales, not weights); or float32/float64
    results of an op IEEE 754 rounds once, as onnxruntime and numpy both do (IEEE_EXACT)."""
    if any(value.size > MAX_FOLDED_ELEMENTS for value in feeds.values()):
        return None
    kinds = {_kind(value.dtype) for value in feeds.values()}
    if node.op_type == "ConstantOfShape":
        pass  # it fills with its attribute's value
    elif node.op_type in DATA_MOVING:
        if "other" in kinds or any(_kind(v.dtype) == "float" and v.size > FEW_MOVED_FLOATS for v in feeds.values()):
            return None
    elif node.op_type in IEEE_EXACT:
        if "other" in kinds:
            return None
    elif kinds != {"integer"} and kinds != set():
        return None
    with np.errstate(all="ignore"):
        arrays = evaluated_small(node, feeds, opset)
    arithmetic = node.op_type not in DATA_MOVING and node.op_type != "ConstantOfShape"
    if arrays is None or arithmetic and any(_kind(a.dtype) == "other" for a in arrays):
        return None  # (a fill or a move copies bits: of any type)
    if arithmetic and node.op_type not in IEEE_EXACT and any(_kind(a.dtype) != "integer" for a in arrays):
        return None
    if node.op_type in ("Cast", "CastLike") and not _cast_exact(feeds[node.input[0]], arrays[0]):
        return None
    if arithmetic and not _floats_ieee_decides(node, [*feeds.values(), *arrays]):
        return None
    return arrays


# Ops whose float32/float64 result IEEE 754 defines to the bit (one correctly rounded operation,
# a comparison or a selection) where no NaN is involved (:func:`_floats_ieee_decides`):
# onnxruntime and numpy give the same bits.
IEEE_EXACT = frozenset(
    "Add Sub Mul Div Neg Abs Floor Ceil Round Max Min Equal Less Greater LessOrEqual GreaterOrEqual Not And Or Xor "
    "Where Cast CastLike".split()
)
FEW_MOVED_FLOATS = 16  # a data-moving op folds float values this few (scales, a step), never weights


def _kind(dtype: np.dtype) -> str:
    """'integer' (integers and bool), 'float' (float32, float64) or 'other' (16- and 8-bit floats,
    strings, ...: not folded)."""
    if dtype.kind in "iub":
        return "integer"
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return "float"
    return "other"


def _floats_ieee_decides(node: onnx.NodeProto, arrays: list[np.ndarray]) -> bool:
    """Whether IEEE 754 decides every bit of the node's float results: no NaN among its inputs
    or outputs (which NaN, of what sign and payload, comes back is the kernel's and the
    machine's: onnxruntime returns another operand's NaN than numpy, keeps a signalling NaN numpy
    quiets), and no -0 where one is selected (onnxruntime's Where gives +0 for it, measured;
    which zero Max(-0, +0) gives is the kernel's)."""
    floats_among = [a for a in arrays if a.dtype.kind == "f"]
    if any(np.isnan(a).any() for a in floats_among):
        return False
    if node.op_type in ("Where", "Max", "Min") and any(np.signbit(a[a == 0]).any() for a in floats_among):
        return False
    return True


def _cast_exact(source: np.ndarray, result: np.ndarray) -> bool:
    """Whether a Cast's result is the one value IEEE 754 and C give: a float made an integer only
    where every value is finite and in the integer's range (elsewhere undefined)."""
    if _kind(source.dtype) != "float" or result.dtype.kind not in "iu":
        return True
    limits = np.iinfo(result.dtype)
    # (the bounds as floats, one past each end: truncation toward zero lands inside)
    inside = (source > float(limits.min) - 1) & (source < float(limits.max) + 1)
    return bool(np.isfinite(source).all() and inside.all())


def _move_partial(node, known, partial, opset) -> None:
    """A data-moving op on partial vectors: run on the entries' positions (every other input
    known), its output's entries are the inputs' entries at the positions it gives."""
    entries: list = []
    feeds = {}
    for index, name in enumerate(node.input):
        if not name or name in feeds:
            continue
        if name in partial and index > 0 and node.op_type != "Concat":
            return  # a partial vector as indices, a shape or axes: not followed
        if name in partial:
            feeds[name] = np.arange(len(entries), len(entries) + len(partial[name]), dtype=np.int64)
            entries.extend(partial[name])
        elif name in known:
            value = known[name]
            if node.op_type == "Concat" and value.ndim == 1 and value.dtype.kind in "iu":
                feeds[name] = np.arange(len(entries), len(entries) + len(value), dtype=np.int64)
                entries.extend(int(v) for v in value)
            else:
                feeds[name] = value
        else:
            return
    if not entries or node.op_type == "Cast" and _cast_type(node) not in _INTEGER_CASTS:
        return
    if node.op_type == "Cast":
        positions = [feeds[node.input[0]]]
    else:
        from onnx.reference import ReferenceEvaluator

        try:
            positions = ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds)
        except Exception:
            return
    for name, where in zip(node.output, positions, strict=True):
        where = np.asarray(where)
        if not name or where.ndim > 1 or where.dtype.kind not in "iu":
            continue
        values = [entries[int(k)] for k in where.reshape(-1)]
        if None not in values:
            known[name] = np.array(values if where.ndim else values[0], _result_dtype(node))
        elif where.ndim == 1:
            partial[name] = tuple(values)


_INTEGER_CASTS = {onnx.TensorProto.INT64, onnx.TensorProto.INT32}


def _cast_type(node: onnx.NodeProto) -> int | None:
    return next((a.i for a in node.attribute if a.name == "to"), None)


def _result_dtype(node: onnx.NodeProto) -> np.dtype:
    if node.op_type == "Cast":
        return floats.numpy_dtype(_cast_type(node))
    return np.dtype(np.int64)


def _dims(type_proto: onnx.TypeProto | None) -> list | None:
    """A tensor type's sizes (None for each unknown one), or None where its rank is unknown."""
    if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
        return None
    if not type_proto.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else None for d in type_proto.tensor_type.shape.dim]


def _constants(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """The small initializers no graph input overrides, as arrays (external data is not read)."""
    overridable = {info.name for info in graph.input}
    found = {}
    for tensor in graph.initializer:
        if tensor.name in overridable or tensor.data_location == onnx.TensorProto.EXTERNAL:
            continue
        if int(np.prod(tensor.dims, dtype=np.int64)) <= MAX_FOLDED_ELEMENTS:
            found[tensor.name] = floats.array_of(tensor)
    return found


def _constant_tensor(node: onnx.NodeProto) -> np.ndarray | None:
    from .graphs import constant_tensor

    tensor = constant_tensor(node)
    if tensor is None or int(np.prod(tensor.dims, dtype=np.int64)) > MAX_FOLDED_ELEMENTS:
        return None
    return floats.array_of(tensor)


def _removable(foldable: Callable[[onnx.NodeProto], bool]) -> Callable[[onnx.NodeProto], bool]:
    """A node folding may remove once unread: one ``foldable`` accepts, holding no graph."""
    return lambda node: foldable(node) and not holds_graphs(node)


def types_written(nodes: list[onnx.NodeProto], types: Mapping[str, onnx.TypeProto], opset: int) -> dict:
    """The types of the values ``nodes`` write, as onnx's inference gives them from the types
    of the values they read (``types``); none where it cannot follow them."""
    written = {name for node in nodes for name in node.output if name}
    read = list(dict.fromkeys(name for node in nodes for name in node.input if name and name not in written))
    if any(name not in types for name in read):
        return {}
    graph = onnx.helper.make_graph(
        nodes, "replacement", [onnx.helper.make_value_info(name, types[name]) for name in read], []
    )
    try:
        inferred = onnx.shape_inference.infer_shapes(
            onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        )
    except Exception:  # (inference cannot follow them: their types stay unknown)
        return {}
    return {info.name: info.type for info in inferred.graph.value_info if info.name in written}


def inferred_types(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Every value's type in the main graph and the graphs its nodes hold, as onnx's shape
    inference gives it (with data propagation), run on a copy whose large initializers are
    declared, not held. A name that held graphs give tensors of one element type in other
    shapes, each its own value of it (sibling branches may reuse a name: onnx's checker takes
    it), is given that element type and no shape (of other element types, the last graph's
    type stands: what reads it must read what writes it)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(light_copy(model), data_prop=True)
    except Exception:  # a model onnx's inference cannot follow: only what it declares is known
        inferred = model
    graph = inferred.graph
    found = {info.name: info.type for info in [*graph.input, *graph.value_info, *graph.output]}
    held: dict[str, tuple[int, onnx.TypeProto]] = {}  # (per name, the first held graph typing it)
    reshaped = set()
    for number, inner in enumerate(nested_graphs(graph.node)):
        for info in [*inner.input, *inner.value_info, *inner.output]:
            found[info.name] = info.type
            first, typed = held.setdefault(info.name, (number, info.type))
            element_type = _element_type(info.type)
            if first != number and typed != info.type and element_type and _element_type(typed) == element_type:
                reshaped.add(info.name)
    for name in reshaped:
        found[name] = helper.make_tensor_type_proto(_element_type(found[name]), None)
    for tensor in model.graph.initializer:
        found.setdefault(tensor.name, helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims)))
    return found


def _element_type(type_proto: onnx.TypeProto) -> int | None:
    """A tensor type's element type; None for any other type."""
    return type_proto.tensor_type.elem_type if type_proto.WhichOneof("value") == "tensor_type" else None


def light_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with each large initializer (or one held in external data) declared as a graph
    input of its type instead, and none a graph input overrides (its value is no constant): what
    shape inference needs, without copying weights."""
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    graph, source = light.graph, model.graph
    graph.node.extend(source.node)
    graph.input.extend(source.input)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    declared = {info.name for info in source.input}
    for tensor in source.initializer:
        if tensor.name in declared:
            continue  # (a default a graph input overrides: not a constant, its input declares it)
        small = int(np.prod(tensor.dims, dtype=np.int64)) <= MAX_FOLDED_ELEMENTS
        if small and tensor.data_location != onnx.TensorProto.EXTERNAL:
            graph.initializer.append(tensor)
        elif tensor.name not in declared:
            graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
    return light
