"""The form of a node, as far as a runtime's verdict on it can depend on it: which inputs are
fed at run time (graph inputs) and which are constants, which outputs are asked for, and the
attributes it sets. A probe case of a runtime profile has a form (the cases' forms ship in
``probe_case_forms.json``, written by ``targets/prepare_cases.py``); a node's verdict is read
from the probed cases nearest its form (:func:`nearest_cases`), so that tract's Reshape with
its shape fed at run time is refused ("shape input is variable") while with a constant shape
it runs, and tract's Attention with ``softcap`` set is refused while without it runs.

Each attribute has a class: an int or string attribute its value (the schema's default where
the node leaves it out: ``allowzero`` 0, ``mode`` 'nearest'); any other attribute ``set`` or
``default`` (a float, a list, a tensor: whether the node gives it a value other than the
schema's default, ``softcap`` 0.0 or not).
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import onnx

from . import schemas
from .graphs import held_graphs
from .schemas import RANDOM_OPS

CASE_FORMS = Path(__file__).resolve().parent / "probe_case_forms.json"

SET, DEFAULT, ABSENT = "set", "default", "absent"
UNEVEN = "uneven"  # pads that pad some axis more at one end than at the other
WIDE = "wide"  # a pooling's pads that pad some axis by more than half its window
POOLS = frozenset({"AveragePool", "MaxPool", "LpPool"})
OTHER_SHAPES = "other shapes"  # an If's branches, where they give some output in shapes that differ


@dataclass(frozen=True)
class NodeForm:
    """The positions of the ``inputs`` given (optional ones left out are not), of those ``fed``
    at run time (graph inputs) and ``constant`` (initializers, Constant nodes); the positions of
    the ``outputs`` asked for; per attribute the node sets, its class (the module's docstring);
    the rank of each input where known ((position, rank) pairs), the positions of inputs known
    to hold no element (a dimension 0: a fed axes input that is empty), the element type of
    each input where known ((position, onnx's type number) pairs: a bool mask or a float one),
    the positions of constant inputs a node gives (a Constant, an Identity of a weight), not
    an initializer (onnx2torch takes a Conv's bias from initializers only), and the length of
    each 1-D input fed at run time that sets the node's parameters, where known ((position,
    length) pairs: rknn runs an Unsqueeze fed one axis and fails one fed two)."""

    inputs: frozenset[int]
    fed: frozenset[int]
    constant: frozenset[int]
    outputs: frozenset[int]
    attributes: tuple[tuple[str, str], ...]
    ranks: tuple[tuple[int, int], ...] = ()
    empty: frozenset[int] = frozenset()
    types: tuple[tuple[int, int], ...] = ()
    from_nodes: frozenset[int] = frozenset()
    lengths: tuple[tuple[int, int], ...] = ()

    def as_data(self) -> list:
        sets = [sorted(self.inputs), sorted(self.fed), sorted(self.constant), sorted(self.outputs)]
        pairs = [[list(pair) for pair in self.ranks], sorted(self.empty), [list(pair) for pair in self.types]]
        return [*sets, dict(self.attributes), *pairs, sorted(self.from_nodes), [list(pair) for pair in self.lengths]]

    @classmethod
    def from_data(cls, data: list) -> NodeForm:
        inputs, fed, constant, outputs, attributes, ranks, empty, types, from_nodes, *lengths = data
        lengths = lengths[0] if lengths else []  # (a retired case's form, written before lengths were)
        sets = map(frozenset, (inputs, fed, constant, outputs))
        pairs = tuple(tuple(pair) for pair in ranks), frozenset(empty), tuple(tuple(pair) for pair in types)
        given = frozenset(from_nodes), tuple(tuple(pair) for pair in lengths)
        return cls(*sets, tuple(sorted(attributes.items())), *pairs, *given)

    def attribute_class(self, schema: onnx.defs.OpSchema | None, name: str) -> str:
        """The class of attribute ``name``: the node's own, else the schema's default."""
        own = dict(self.attributes).get(name)
        if own is not None:
            return own
        return _default_class(schema, name)

    def with_defaults_stated(self, schema: onnx.defs.OpSchema | None) -> NodeForm:
        """This form with each int and string attribute it leaves out that ``schema`` defaults
        stated at that default (the same node, as far as the op's meaning goes)."""
        own = dict(self.attributes)
        stated = {name: class_of_attribute(schema, default) for name, default in valued_defaults(schema).items()}
        return dataclasses.replace(self, attributes=tuple(sorted({**stated, **own}.items())))

    def states(self, name: str) -> bool:
        """Whether the node sets attribute ``name`` itself (at its default or not)."""
        return any(own == name for own, _ in self.attributes)

    def describe(self) -> str:
        parts = []
        if self.fed:
            parts.append(f"input{'s' if len(self.fed) > 1 else ''} {', '.join(map(str, sorted(self.fed)))} fed")
        if self.constant:
            parts.append(f"input{'s' if len(self.constant) > 1 else ''} "
                         f"{', '.join(map(str, sorted(self.constant)))} constant")  # fmt: skip
        parts += [f"{name}={value}" for name, value in self.attributes]
        first = dict(self.types).get(0)
        others = [(p, t) for p, t in self.types if p and t != first]
        if others:
            parts.append(", ".join(f"input {p} {onnx.helper.tensor_dtype_to_string(t).removeprefix('TensorProto.')}"
                                   for p, t in others))  # fmt: skip
        if self.ranks:
            parts.append("ranks " + ", ".join(f"{rank} (input {position})" for position, rank in self.ranks))
        if self.lengths:
            parts.append("lengths " + ", ".join(f"{length} (input {position})" for position, length in self.lengths))
        if self.from_nodes:
            parts.append(f"input{'s' if len(self.from_nodes) > 1 else ''} "
                         f"{', '.join(map(str, sorted(self.from_nodes)))} given by a node")  # fmt: skip
        return ", ".join(parts)


def node_form(
    node: onnx.NodeProto,
    opset: int,
    fed_names: Container[str],
    constant_names: Container[str],
    shapes: Mapping[str, tuple[int | None, ...]] | None = None,
    element_types: Mapping[str, int] | None = None,
    node_constants: Container[str] = (),
) -> NodeForm:
    """The form of ``node`` (default domain) at ``opset``, given the value names fed at run
    time, those that are constants where it is, the shapes of values where known (their
    dimensions, None where not a number), their element types, and the constants nodes give,
    not initializers (:func:`constants_given_by_nodes`)."""
    shapes, element_types = shapes or {}, element_types or {}
    schema = schemas.schema_in_force(node.op_type, opset)
    attributes = {a.name: class_of_attribute(schema, a) for a in node.attribute}
    if "pads" in attributes and node.op_type in POOLS and pads_over_half_the_window(node):
        attributes["pads"] = WIDE
    if node.op_type == "If" and branches_differ_in_shape(node, shapes):
        attributes["then_branch"] = attributes["else_branch"] = OTHER_SHAPES
    return NodeForm(
        inputs=frozenset(i for i, name in enumerate(node.input) if name),
        fed=frozenset(i for i, name in enumerate(node.input) if name and name in fed_names),
        constant=frozenset(i for i, name in enumerate(node.input) if name and name in constant_names),
        outputs=frozenset(i for i, name in enumerate(node.output) if name),
        attributes=tuple(sorted(attributes.items())),
        ranks=tuple((i, len(shapes[name])) for i, name in enumerate(node.input) if name and name in shapes),
        empty=frozenset(i for i, name in enumerate(node.input) if name and 0 in shapes.get(name, ())),
        types=tuple((i, element_types[name]) for i, name in enumerate(node.input) if element_types.get(name)),
        from_nodes=frozenset(i for i, name in enumerate(node.input) if name and name in node_constants),
        lengths=tuple(
            (i, shapes[name][0])
            for i, name in enumerate(node.input)
            if name in fed_names
            and len(shapes.get(name, ())) == 1
            and isinstance(shapes[name][0], int)
            and schema is not None
            and schemas.sets_parameters(schema, i)
        ),
    )


def pads_over_half_the_window(node: onnx.NodeProto) -> bool:
    """Whether a pooling's ``pads`` pad some axis, at either end, by more than half its window,
    ⌊((k − 1)·d + 1) / 2⌋ of kernel k and dilation d (PyTorch, so onnx2torch, pools no such pads:
    "pad should be at most half of effective kernel size"). Such pads are a form of their own
    (:data:`WIDE`), before :data:`UNEVEN`."""
    given = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if not a.ref_attr_name}
    kernel, pads = given.get("kernel_shape"), given.get("pads")
    if not isinstance(kernel, list) or not isinstance(pads, list) or len(pads) != 2 * len(kernel):
        return False
    dilations = given.get("dilations") or [1] * len(kernel)
    if not isinstance(dilations, list) or len(dilations) != len(kernel):
        return False
    halves = [((k - 1) * d + 1) // 2 for k, d in zip(kernel, dilations, strict=True)] * 2
    return any(pad > half for pad, half in zip(pads, halves, strict=True))


def branches_differ_in_shape(node: onnx.NodeProto, shapes: Mapping[str, tuple[int | None, ...]]) -> bool:
    """Whether an If's branches give some output in shapes known to differ: of other ranks, or
    with a length both know as a number and that differs (a DFT's rule branches so on an axis
    fed at run time: the transform along axis 1 or along axis 2). Each branch output's shape is
    read from ``shapes`` (shape inference's), else from the branch's own declaration. tract
    analyses no such If: it unifies the facts of its branches (probed)."""
    branches = {a.name: a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH}
    if "then_branch" not in branches or "else_branch" not in branches:
        return False
    for then, otherwise in zip(branches["then_branch"].output, branches["else_branch"].output, strict=False):
        first, second = _shape_of(then, shapes), _shape_of(otherwise, shapes)
        if first is None or second is None:
            continue
        if len(first) != len(second) or any(
            a is not None and b is not None and a != b for a, b in zip(first, second, strict=True)
        ):
            return True
    return False


def _shape_of(info: onnx.ValueInfoProto, shapes: Mapping[str, tuple[int | None, ...]]) -> tuple[int | None, ...] | None:
    """A graph output's shape (None: a length not a number), as ``shapes`` gives it or as declared;
    None where neither knows its rank."""
    if info.name in shapes:
        return shapes[info.name]
    tensor_type = info.type.tensor_type if info.type.HasField("tensor_type") else None
    if tensor_type is None or not tensor_type.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim)


VALUED_KINDS = (onnx.AttributeProto.INT, onnx.AttributeProto.STRING)  # (the kinds a form classes by value)


def valued_defaults(schema: onnx.defs.OpSchema | None) -> dict[str, onnx.AttributeProto]:
    """The int and string attributes ``schema`` gives a default, each at that default, by name."""
    known = schema.attributes if schema is not None else {}
    return {
        name: attribute.default_value
        for name, attribute in sorted(known.items())
        if attribute.default_value.name and attribute.default_value.type in VALUED_KINDS
    }


def class_of_attribute(schema: onnx.defs.OpSchema | None, attribute: onnx.AttributeProto) -> str:
    """An int or string attribute's value; ``pads`` (every op's begins, then ends) UNEVEN where
    some axis is padded more at one end than at the other (runtimes take such pads otherwise:
    onnx2torch pools no AveragePool-7 to -11 so); DEFAULT where the schema's default; else SET."""
    if attribute.ref_attr_name:  # (a local function's attribute its caller gives: no value here)
        return SET
    if attribute.name == "pads" and attribute.type == onnx.AttributeProto.INTS:
        pads = list(attribute.ints)
        if len(pads) % 2 == 0 and pads[: len(pads) // 2] != pads[len(pads) // 2 :]:
            return UNEVEN
    if attribute.type == onnx.AttributeProto.INT:
        return str(attribute.i)
    if attribute.type == onnx.AttributeProto.STRING:
        return repr(attribute.s.decode("utf-8", "replace"))
    known = schema.attributes.get(attribute.name) if schema is not None else None
    if known is not None and known.default_value.name and known.default_value == attribute:
        return DEFAULT
    if known is not None and known.default_value.name:
        default = onnx.helper.get_attribute_value(known.default_value)
        if attribute.type == known.default_value.type and onnx.helper.get_attribute_value(attribute) == default:
            return DEFAULT
    return SET


def _default_class(schema: onnx.defs.OpSchema | None, name: str) -> str:
    known = schema.attributes.get(name) if schema is not None else None
    if known is None or not known.default_value.name:
        return ABSENT
    default = known.default_value
    if default.type == onnx.AttributeProto.INT:
        return str(default.i)
    if default.type == onnx.AttributeProto.STRING:
        return repr(default.s.decode("utf-8", "replace"))
    return DEFAULT


def nearest_cases(
    outcomes: list[tuple[str, str, str]], form: NodeForm, schema: onnx.defs.OpSchema | None
) -> list[tuple[str, str, str]]:
    """The probed ``outcomes`` (case name, verdict, detail) whose cases are nearest ``form``:
    those that give every input the node gives, feed at run time every input the node is fed (a
    runtime that takes a constant shape may refuse a fed one) and ask for every output it asks
    for; of those, the ones whose inputs, constant inputs and outputs differ least from the
    node's (an optional input the node leaves out, an input it holds constant and the case
    feeds, an output it does not ask for: one each); then, constant input by constant input,
    those alike in its emptiness (OpenVINO 2024.6 refuses a Reshape to the empty shape, a
    scalar) and then in whether a node gives it (onnx2torch takes a Conv's weights and bias from
    initializers only, whatever its attributes); then, attribute by attribute
    (by name), those of the node's class where any case has it (a value no case has says
    nothing: that attribute is passed over), and input by input those of the node's rank where
    any case has it (tract's MatMul of two vectors), of its length where it is a fed parameter
    (rknn's Unsqueeze fed two axes; where no case has it, of the nearest length a case has, the
    longer of two), of its element type where any case has it
    (tract's Attention takes a float mask, not a bool one), and of the emptiness of each input
    it is fed (a fed empty axes input is as good as a constant one); last, attribute by
    attribute, those that state it where the node states it, or leave it out where it does,
    where any case does so (onnx2torch reads a CumSum's ``reverse`` left out as 1, stated 0 as
    0; a rank no case leaving it out has outweighs it: OpenVINO 2024.6 fails a 5-D GridSample
    whether its mode is stated or not, and runs 4-D ones with it left out). Where no case is
    alike in both whether a node gives a constant and the attributes, ranks and types, the
    evidence is split: whether a node gives it is weighed after those too, and where that finds
    a case not right and the first order none, the worse stands (rknn computes the dilated 3-D
    Conv with uneven pads AveragePool's rule writes wrong, its weight an initializer, and runs
    2-D Convs of a Constant's weight right: the rule's Conv, its weight a Constant, is judged by
    the first). Cases of unknown form count as near; an empty list where no case feeds what
    the node is fed."""
    forms = case_forms()
    known = [(o, forms[o[0]]) for o in outcomes if o[0] in forms]
    unknown = [o for o in outcomes if o[0] not in forms]
    near = [(o, f) for o, f in known if form.inputs <= f.inputs and form.fed <= f.fed and form.outputs <= f.outputs]
    if not near:
        return unknown
    distance = {
        o[0]: len(f.inputs - form.inputs) + len(form.constant & f.fed) + len(f.outputs - form.outputs) for o, f in near
    }
    least = min(distance.values())
    near = [(o, f) for o, f in near if distance[o[0]] == least]
    given_first = _narrowed(near, form, schema, given_first=True)
    alike = all(  # (every case gives each constant as the node does: the two orders are one)
        (position in f.from_nodes) == (position in form.from_nodes) for _, f in near for position in form.constant
    )
    if alike or any(o[1] != "right" for o, _ in given_first):
        return [o for o, _ in given_first] + unknown
    given_last = _narrowed(near, form, schema, given_first=False)
    if any(o[1] != "right" for o, _ in given_last):
        given_first = given_last  # (the evidence split: the worse of the two orders stands)
    return [o for o, _ in given_first] + unknown


def _narrowed(
    near: list[tuple[tuple[str, str, str], NodeForm]], form: NodeForm, schema: onnx.defs.OpSchema | None,
    given_first: bool,
) -> list[tuple[tuple[str, str, str], NodeForm]]:  # fmt: skip
    """:func:`nearest_cases`' narrowing, whether a node gives a constant weighed before the
    attributes (``given_first``) or after the input types and emptiness."""
    for position in sorted(form.constant):
        same = [(o, f) for o, f in near if (position in f.empty) == (position in form.empty)]
        if same:
            near = same
    if given_first:
        near = _alike_in_giving(near, form)
    names = sorted({name for _, f in near for name, _ in f.attributes} | {name for name, _ in form.attributes})
    for name in names:
        wanted = form.attribute_class(schema, name)
        same = [(o, f) for o, f in near if f.attribute_class(schema, name) == wanted]
        if same:
            near = same
    for position, rank in form.ranks:
        same = [(o, f) for o, f in near if dict(f.ranks).get(position) == rank]
        if same:
            near = same
    for position, length in form.lengths:
        had = {dict(f.lengths).get(position) for _, f in near} - {None}
        if had:  # (the cases of its length, else of the nearest, the longer where two are: rknn
            # fails an Unsqueeze fed two axes and three, so four too)
            nearest = min(had, key=lambda other: (abs(other - length), -other))
            near = [(o, f) for o, f in near if dict(f.lengths).get(position) == nearest]
    for position, element_type in form.types:
        same = [(o, f) for o, f in near if dict(f.types).get(position) == element_type]
        if same:
            near = same
    for position in sorted(form.inputs - form.constant):
        same = [(o, f) for o, f in near if (position in f.empty) == (position in form.empty)]
        if same:
            near = same
    if not given_first:
        near = _alike_in_giving(near, form)
    for name in names:
        stated = [(o, f) for o, f in near if f.states(name) == form.states(name)]
        if stated:
            near = stated
    return near


def _alike_in_giving(
    near: list[tuple[tuple[str, str, str], NodeForm]], form: NodeForm
) -> list[tuple[tuple[str, str, str], NodeForm]]:
    """Constant input by constant input, the cases alike in whether a node gives it, where any is."""
    for position in sorted(form.constant):
        same = [(o, f) for o, f in near if (position in f.from_nodes) == (position in form.from_nodes)]
        if same:
            near = same
    return near


def unmatched(outcomes: list[tuple[str, str, str]], form: NodeForm, schema: onnx.defs.OpSchema | None) -> list[str]:
    """What of ``form`` no case of ``outcomes`` (those :func:`nearest_cases` gave) shares: each
    attribute whose class in the node no case has (``to=7``: no case casts to int64), each
    input element type no case has (``input 1 BOOL``). Empty where a case of unknown form is
    among them."""
    forms = case_forms()
    if any(o[0] not in forms for o in outcomes) or not outcomes:
        return []
    near = [forms[o[0]] for o in outcomes]
    names = sorted({name for f in near for name, _ in f.attributes} | {name for name, _ in form.attributes})
    found = [
        f"{name}={form.attribute_class(schema, name)}"
        for name in names
        if all(f.attribute_class(schema, name) != form.attribute_class(schema, name) for f in near)
    ]
    for position, element_type in form.types:
        if all(dict(f.types).get(position) != element_type for f in near):
            found.append(
                f"input {position} {onnx.helper.tensor_dtype_to_string(element_type).removeprefix('TensorProto.')}"
            )
    return found


@functools.cache
def case_forms() -> dict[str, NodeForm]:
    """The form of each probe case, by case name (``targets/prepare_cases.py`` writes them)."""
    if not CASE_FORMS.exists():
        return {}
    return {name: NodeForm.from_data(data) for name, data in json.loads(CASE_FORMS.read_text()).items()}


def parameters_fed(form: NodeForm, schema: onnx.defs.OpSchema | None) -> list[int]:
    """The positions of the inputs a node of ``form`` is fed at run time that set its parameters
    (:func:`schemas.sets_parameters`: axes, a shape, scales, indices), in their order."""
    if schema is None:
        return []
    return sorted(position for position in form.fed if schemas.sets_parameters(schema, position))


# ops whose outputs depend on their inputs' shapes only, not on their values
SHAPE_ONLY_OPS = frozenset({"Shape", "Size"})


def value_sources(model: onnx.ModelProto) -> tuple[set[str], set[str]]:
    """(fed, constant): the value names whose values depend on values fed at run time (the
    inputs of the main graph and of the graphs nodes hold, and what is computed from them,
    except through Shape and Size, whose outputs a runtime knows from shapes alone), and those
    computed from constants only (initializers, Constant nodes, what is computed from them alone),
    in every graph of ``model``. A local function's inputs are neither (each call's own); a value
    computed from shapes of fed values is neither: whether the runtime folds it is its own."""
    fed: set[str] = set()
    constant: set[str] = set()

    def walk(graph: onnx.GraphProto) -> None:
        initialized = {t.name for t in graph.initializer}
        fed.update(info.name for info in graph.input if info.name not in initialized)
        constant.update(initialized)
        for node in graph.node:
            inner = [g for _, _, g in held_graphs(node)]
            for body in inner:
                walk(body)
            source = source_of_outputs(node, fed, constant, inner)
            if source is not None:
                (fed if source == "fed" else constant).update(name for name in node.output if name)

    walk(model.graph)
    for function in model.functions:
        for node in function.node:
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                constant.update(node.output)
    return fed, constant


def constants_given_by_nodes(model: onnx.ModelProto, constant: set[str]) -> set[str]:
    """Of the ``constant`` values (:func:`value_sources`), those a node gives, not an initializer:
    Constant nodes' and what nodes compute from constants alone (an Identity of a weight), in every
    graph of ``model``."""
    initialized: set[str] = set()

    def walk(graph: onnx.GraphProto) -> None:
        initialized.update(t.name for t in graph.initializer)
        for node in graph.node:
            for _, _, inner in held_graphs(node):
                walk(inner)

    walk(model.graph)
    return constant - initialized


def source_of_outputs(
    node: onnx.NodeProto, fed: Container[str], constant: Container[str], inner: Sequence[onnx.GraphProto] = ()
) -> str | None:
    """What the values ``node`` writes are, given the ``fed`` and ``constant`` values it may read
    (``inner``: the graphs it holds): "fed" where computed from a fed value (a held graph's read
    counts), "constant" where from constants alone (Shape and Size: where their input is a
    constant), None where neither (a random op's draw; a shape of a fed value)."""
    given = [name for name in node.input if name]
    if node.op_type in RANDOM_OPS:
        return None
    if node.op_type in SHAPE_ONLY_OPS and node.domain in ("", "ai.onnx"):
        return "constant" if given and given[0] in constant else None
    if any(name in fed for name in given) or (inner and any(_reads_fed(body, fed) for body in inner)):
        return "fed"
    if all(name in constant for name in given) and not inner:
        return "constant"
    return None


def _reads_fed(graph: onnx.GraphProto, fed: Container[str]) -> bool:
    """Whether a graph's nodes read a value fed at run time (its own inputs, or the outer scope's)."""
    return any(name in fed for node in graph.node for name in node.input) or any(
        _reads_fed(inner, fed) for node in graph.node for _, _, inner in held_graphs(node)
    )
