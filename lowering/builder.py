"""The vocabulary rules are written in: typed values and ONNX ops that emit nodes."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import defs, helper

from . import floats, schemas
from .errors import NotLowered
from .graphs import branch_graph
from .naming import NameAllocator
from .targets import Target


@dataclass(frozen=True)
class Value:
    """A value in the graph being lowered: its name, its element type if it is a tensor,
    and its full type where known (sequences and optionals carry only that)."""

    name: str
    element_type: int | None
    type: onnx.TypeProto | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class DecidedOptional:
    """An optional as the graph decides it: whether it holds an element (a constant, or a
    bool value computed at run time), and the element (None when it is always empty)."""

    has_element: bool | Value
    element: Value | None


@functools.cache
def _output_type_rule(op_type: str, opset: int) -> tuple[str, int]:
    """How op_type's first output type follows from its inputs, read from its schema.

    ("same", i): the type of input i; ("fixed", t): always t; ("attribute", 0): Cast's ``to``.
    """
    if op_type == "Cast":
        return ("attribute", 0)
    if op_type == "ConstantOfShape":
        return ("value", onnx.TensorProto.FLOAT)
    schema = schemas.schema_in_force(op_type, opset)
    if schema is None or not schema.outputs:
        raise ValueError(f"{op_type} does not exist at opset {opset}")
    output_param = schema.outputs[0].type_str
    for index, formal in enumerate(schema.inputs):
        if formal.type_str == output_param:
            return ("same", index)
    allowed = schemas._tensor_element_types(
        next(
            (c.allowed_type_strs for c in schema.type_constraints if c.type_param_str == output_param),
            [output_param],
        )
    )
    if len(allowed) == 1:
        return ("fixed", next(iter(allowed)))
    raise ValueError(f"cannot tell the output type of {op_type}-{schema.since_version}")


@functools.cache
def same_typed_inputs(op_type: str, opset: int) -> tuple[tuple[int, ...], int | None]:
    """The inputs typed like op_type's first output by its schema: the formal positions, and
    the position from which every further input is (a variadic last parameter), or None."""
    schema = schemas.schema_in_force(op_type, opset)
    if schema is None or not schema.outputs:
        return ((), None)
    output_param = schema.outputs[0].type_str
    positions = tuple(k for k, formal in enumerate(schema.inputs) if formal.type_str == output_param)
    variadic = defs.OpSchema.FormalParameterOption.Variadic
    last = len(schema.inputs) - 1
    from_position = last if positions and positions[-1] == last and schema.inputs[last].option == variadic else None
    return (positions, from_position)


def schema_output_rule(op_type: str, opset: int) -> tuple[str, int] | None:
    """The part of :func:`output_type_rule` an op's schema decides alone: ("same", i),
    ("type", t), ("attribute", 0) or ("value", default) where a node's attribute decides;
    None for control flow, Constant, and ops whose schema leaves it open."""
    if op_type in schemas.ops_with_subgraphs():  # outputs typed by their bodies
        return None
    try:
        kind, detail = _output_type_rule(op_type, opset)
    except ValueError:
        return None
    return ("type", detail) if kind == "fixed" else (kind, detail)


@functools.cache
def later_output_rule(op_type: str, opset: int, output_index: int) -> tuple[str, int] | None:
    """How output ``output_index`` (1 or more) of op_type follows from its schema: the first
    output's :func:`schema_output_rule` where it shares the first output's type parameter,
    ("type", t) where its type can only be t; None otherwise (control flow, a variadic output
    of several types, a parameter of several types)."""
    if op_type in schemas.ops_with_subgraphs():  # outputs typed by their bodies
        return None
    schema = schemas.schema_in_force(op_type, opset)
    if schema is None or not schema.outputs:
        return None
    formals = schema.outputs
    variadic = defs.OpSchema.FormalParameterOption.Variadic
    formal = formals[min(output_index, len(formals) - 1)]
    if output_index >= len(formals) and formal.option != variadic:
        return None
    if formal.option == variadic and not formal.is_homogeneous:
        return None
    if formal.type_str == formals[0].type_str:
        first = schema_output_rule(op_type, opset)
        return first if first is not None and first[0] in ("same", "type") else None
    constraint = next((c for c in schema.type_constraints if c.type_param_str == formal.type_str), None)
    allowed = schemas._tensor_element_types(constraint.allowed_type_strs if constraint else [formal.type_str])
    return ("type", next(iter(allowed))) if len(allowed) == 1 else None


def output_type_rule(node: onnx.NodeProto, opset: int) -> tuple[str, int] | None:
    """How a node's first output's element type follows from its schema: ("same", i) typed
    like input i, ("type", t) always t (0: unknown); None for multi-output ops, control flow,
    other domains, or anything the schema leaves open."""
    if len(node.output) != 1 or node.op_type == "Constant" or node.op_type in schemas.ops_with_subgraphs():
        return None
    if node.domain not in ("", "ai.onnx"):
        return None
    try:
        kind, detail = _output_type_rule(node.op_type, opset)
    except ValueError:
        return None
    if kind == "same":
        return ("same", detail)
    if kind == "fixed":
        return ("type", detail)
    for attribute in node.attribute:
        if kind == "attribute" and attribute.name == "to":
            return ("type", attribute.i)
        if kind == "value" and attribute.name == "value":
            return ("type", attribute.t.data_type)
    return ("type", detail if kind == "value" else 0)


def moved(node: onnx.NodeProto, *, dropped: tuple[str, ...] = (), **attributes) -> onnx.NodeProto:
    """A copy of ``node`` without the attributes named in ``dropped``, with ``attributes`` set
    (replacing any of the same name)."""
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    kept = [a for a in copy.attribute if a.name not in attributes and a.name not in dropped]
    del copy.attribute[:]
    copy.attribute.extend(kept)
    copy.attribute.extend(helper.make_attribute(name, value) for name, value in attributes.items())
    return copy


def constant_key(value: float, element_type: int) -> tuple[int, bytes]:
    """What makes two scalar constants the same: their element type and bits."""
    return (element_type, np.array(value, dtype=floats.numpy_dtype(element_type)).tobytes())


class ConstantPool:
    """Constants shared by every rewrite in one graph, emitted as Constant nodes up front."""

    def __init__(self, names: NameAllocator) -> None:
        self._names = names
        self._by_key: dict[tuple[int, bytes], Value] = {}
        self.nodes: list[onnx.NodeProto] = []
        self._by_name: dict[str, onnx.NodeProto] = {}

    def node_making(self, name: str) -> onnx.NodeProto | None:
        """The Constant node this pool made for ``name``, if any."""
        return self._by_name.get(name)

    def scalar(self, value: float, element_type: int, hint: str) -> Value:
        """A shared scalar constant of ``element_type`` holding exactly ``value``."""
        return self.scalar_for_key(constant_key(value, element_type), value, element_type, hint)

    def existing(self, key: tuple[int, bytes]) -> Value | None:
        """The constant already made for ``key`` (see :func:`constant_key`), if any."""
        return self._by_key.get(key)

    def scalar_for_key(self, key: tuple[int, bytes], value: float, element_type: int, hint: str) -> Value:
        """:meth:`scalar` with its :func:`constant_key` computed already."""
        found = self._by_key.get(key)
        if found is not None:
            return found
        array = np.array(value, dtype=floats.numpy_dtype(element_type))
        name = self._names.fresh(hint, tail=hint)
        tensor = floats.tensor(array, name)
        if tensor.data_type != element_type:
            raise AssertionError(f"constant {name} has the wrong element type")
        made = self._by_name[name] = helper.make_node("Constant", [], [name], name=name, value=tensor)
        self.nodes.append(made)
        found = self._by_key[key] = Value(name, element_type)
        return found

    def rollback(self, count: int) -> None:
        """Forget the constants made after the first ``count`` (a rule that gave up)."""
        for node in self.nodes[count:]:
            self._by_key = {k: v for k, v in self._by_key.items() if v.name != node.output[0]}
            self._by_name.pop(node.output[0], None)
        del self.nodes[count:]


# How many rules deep an expansion may lower the ops it emits in turn (a rule emitting an op
# whose rule emits it back would otherwise never end).
MOST_RULES_IN_TURN = 4


class Builder:
    """Emits the nodes that replace one node: the one way every pattern writes nodes. A rule
    or a version adapter calls ops on it: ``b.Abs(x)``, ``b.op("Softmax", x, axis=1)``.

    Each op returns a typed :class:`Value`; output types come from the op's schema.
    ``constants``: the pool of scalars shared across the graph (rules); None for a builder whose
    constants are made per node (a version adapter's, :meth:`lowering.conversion.adapters.AdapterContext.builder`).
    ``rule_for``: where given, an op the target lowers (``target.lowered_ops``) that a rule emits
    is lowered in turn by the rule it gives (Trilu's Range, where Range is to be lowered too).
    """

    def __init__(
        self,
        *,
        opset: int,
        target: Target,
        names: NameAllocator,
        constants: ConstantPool | None,
        name_hint: str,
        scope=None,
        optionals=None,
        rule_for: Callable[[str], object] | None = None,
        depth: int = 0,
    ) -> None:
        self.opset = opset
        self._rule_for = rule_for
        self._depth = depth
        self._scope = scope
        self._optionals = optionals
        self.read_context = False  # set when the expansion depends on the surrounding graph
        self.target = target
        self._names = names
        self._constants = constants
        self._hint = name_hint
        self.nodes: list[onnx.NodeProto] = []
        # The types onnx infers for values an outer rule's expansion made, where a rule lowers an
        # op of that expansion in turn (its inputs are not the original model's values).
        self._made_types: dict[str, onnx.TypeProto] = {}
        # The values of the Constant nodes an outer rule's expansion made that it hands to the
        # rule lowering an op of that expansion in turn (Col2Im's pads for Pad's rule).
        self._made_constants: dict[str, onnx.TensorProto] = {}

    # -- facts a rule may ask -------------------------------------------------------
    def accepts(self, op_type: str, value: Value) -> bool:
        """Whether ``op_type`` at this opset takes values of ``value``'s type."""
        return schemas.accepts(op_type, self.opset, value.element_type)

    def runs(self, op_type: str, value: Value, input_index: int = 0) -> bool:
        """Whether ``op_type`` exists at this opset taking ``value``'s type at ``input_index``
        (Where's second) and the target has its kernel."""
        version = schemas.version_in_force(op_type, self.opset)
        return (
            version is not None
            and schemas.accepts(op_type, self.opset, value.element_type, input_index=input_index)
            and not self.target.lacks_kernel(op_type, version, value.element_type)
        )

    def constant_value(self, value: Value) -> np.ndarray | None:
        """``value``'s tensor where it is an initializer or a Constant's value, else None. A rule
        that asks depends on the graph around the node, so its expansion is made per node."""
        self.read_context = True
        tensor = self._made_constants.get(value.name)
        if tensor is None and self._scope is not None:
            tensor = self._scope.constant_value(value.name)
        if tensor is None:
            return None
        try:
            return floats.array_of(tensor)
        except Exception:  # external data, or a tensor onnx cannot read: not a constant here
            return None

    def shape_of(self, value: Value) -> list[int | None] | None:
        """``value``'s dimensions as far as they are known (an int, None where unknown), None
        where its rank is unknown: declared, or as onnx's inference gives it in the original
        model. As :meth:`constant_value`, the expansion is then made per node."""
        self.read_context = True
        if self._scope is None:
            return None
        constant = self._scope.constant_value(value.name)
        if constant is not None:
            return list(constant.dims)
        type_proto = self._made_types.get(value.name) or self._scope.inferred_type_of(value.name)
        if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
            return None
        tensor = type_proto.tensor_type
        if not tensor.HasField("shape"):
            return None
        return [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]

    def source_version(self, op_type: str) -> int | None:
        """The version of ``op_type`` in force where the node being lowered was written (the
        graph's own opset, not the target's); None outside a graph. A rule whose versions
        differ in their defaults asks; as :meth:`constant_value`, its expansion is then made
        per node."""
        self.read_context = True
        if self._scope is None:
            return None
        return schemas.version_in_force(op_type, self._scope.source_opset)

    @staticmethod
    def scalar_tensor(value) -> onnx.TensorProto:
        """A one-element tensor for attributes such as ConstantOfShape's ``value``."""
        return onnx.numpy_helper.from_array(np.array([value]))

    # -- values ----------------------------------------------------------------------
    def constant(self, value: float, like: Value, hint: str) -> Value:
        """A scalar of ``like``'s element type (:meth:`scalar`)."""
        return self.scalar(value, like.element_type, hint)

    def ints(self, values, hint: str) -> Value:
        """A 1-D int64 constant holding ``values`` (axes, starts, a shape), made for this node."""
        name = self._names.fresh(f"{self._hint}_{hint}", tail=f"_{hint}")
        tensor = helper.make_tensor(name, onnx.TensorProto.INT64, [len(values)], [int(v) for v in values])
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return Value(name, onnx.TensorProto.INT64)

    def tensor(self, array: np.ndarray, hint: str) -> Value:
        """A constant holding ``array`` (its numpy type: a matrix of coefficients), made for this node."""
        name = self._names.fresh(f"{self._hint}_{hint}", tail=f"_{hint}")
        tensor = floats.tensor(np.asarray(array), name)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return Value(name, tensor.data_type)

    def scalar(self, value, element_type: int, hint: str) -> Value:
        """A 0-D constant of ``element_type`` holding exactly ``value``: shared across the graph
        where the builder has a pool of constants, else made for this node."""
        if self._constants is not None:
            return self._constants.scalar(value, element_type, f"{schemas.type_name(element_type)}_{hint}")
        name = self._names.fresh(f"{self._hint}_{hint}", tail=f"_{hint}")
        tensor = floats.tensor(np.array(value, dtype=floats.numpy_dtype(element_type)), name)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return Value(name, element_type)

    def constant_bool(self, value: bool | Value) -> Value:
        """A shared scalar bool constant (a Value is returned as it is)."""
        if isinstance(value, Value):
            return value
        return self._constants.scalar(value, onnx.TensorProto.BOOL, f"bool_{str(value).lower()}")

    def decide_optional(self, optional: Value) -> DecidedOptional:
        """Whether ``optional`` holds an element and which, as the graph decides it (see
        :mod:`lowering.optionals`), or why the graph leaves it to run time."""
        self.read_context = True
        if self._optionals is None or self._scope is None:
            raise NotLowered("optionals can only be decided inside a model")
        decided = self._optionals.decide(optional.name, self._scope)
        if isinstance(decided, str):
            raise NotLowered(decided)
        has_element = decided.has_element
        if not isinstance(has_element, bool):
            has_element = Value(has_element, onnx.TensorProto.BOOL)
        element = None
        if decided.element is not None:
            element_type = decided.element_type
            tensor_type = element_type.tensor_type.elem_type if element_type is not None else None
            element = Value(decided.element, tensor_type or None, element_type)
        return DecidedOptional(has_element, element)

    def computable(self, x: Value, emit: bool = True) -> Value:
        """``x`` in a type the target computes with: itself, or cast exactly to a wider type.
        With ``emit=False`` nothing is emitted: the result only tells whether a cast is needed."""
        compute_type = self.target.compute_type(x.element_type)
        if compute_type == x.element_type:
            return x
        if not emit:
            return Value(x.name, compute_type)
        return self.Cast(x, to=compute_type)

    def nested(self, hint: str) -> Builder:
        """A builder for the nodes of a subgraph the rule makes (a Loop's body, an If's branch): names from the
        same allocator, the same shared scalar constants (values of the outer graph, which the
        body reads from its scope)."""
        return Builder(
            opset=self.opset,
            target=self.target,
            names=self._names,
            constants=self._constants,
            name_hint=f"{self._hint}_{hint}",
            scope=self._scope,
            optionals=self._optionals,
            rule_for=self._rule_for,
            depth=self._depth,
        )

    def fresh_value(self, hint: str, element_type: int) -> Value:
        """A value of a fresh name that no node writes yet (a subgraph's input, which the rule
        declares itself)."""
        return Value(self._names.fresh(f"{self._hint}_{hint}"), element_type)

    # -- ops -------------------------------------------------------------------------
    def op(self, op_type: str, *inputs: Value | str, outputs: Sequence[str] | None = None, **attributes) -> Value:
        """Emit ``op_type(*inputs, **attributes)`` and return its (first) output: a fresh value,
        or ``outputs[0]`` where ``outputs`` names them (the outputs of the node being replaced).
        An input given by name is of unknown type; "" is a missing optional input. The output's
        element type follows from the op's schema (None where that leaves it open). An op the
        target lowers is lowered in turn; one written to outputs it names cannot be: NotLowered
        (an LSTM of dynamic length is a Scan, which a target lowering Scan too cannot take)."""
        inputs = tuple(Value(value, None) if isinstance(value, str) else value for value in inputs)
        if op_type in self.target.lowered_ops and self._rule_for is not None:
            if outputs is not None:  # (a rule's expansion cannot write them: Scan's, Loop's, TopK's outputs)
                rule = self._rule_for(op_type)
                version = schemas.version_in_force(op_type, self.opset)
                if rule is None or version is None or not rule.serves(version):
                    raise NotLowered(f"its expansion holds {op_type}, which is to be lowered too, and no rule lowers "
                                     f"{op_type}-{version}")  # fmt: skip
                written = "written to outputs it names (not lowered in turn)"
                raise NotLowered(f"its expansion holds {op_type}, which is to be lowered too, {written}")
            return self._lowered_in_turn(op_type, inputs, attributes)
        element_type = self._output_element_type(op_type, inputs, attributes)
        if outputs is None:
            outputs = [self._names.fresh(f"{self._hint}_{op_type.lower()}", tail=f"_{op_type.lower()}")]
        node = onnx.NodeProto(
            op_type=op_type,
            input=[value.name for value in inputs],
            output=list(outputs),
            name=self._names.fresh(f"{self._hint}_{op_type}", tail=f"_{op_type}"),
        )
        if attributes:
            node.attribute.extend(helper.make_attribute(key, value) for key, value in sorted(attributes.items()))
        self.nodes.append(node)
        return Value(node.output[0], element_type)

    def _lowered_in_turn(self, op_type: str, inputs: tuple[Value, ...], attributes) -> Value:
        """``op_type(*inputs)`` where the target lowers that op too: its rule's expansion, made
        by a builder of its own (named after the op) whose nodes join these; NotLowered where
        no rule serves the op's version here or it declines (the node then stays, reported)."""
        why = f"its expansion holds {op_type}, which is to be lowered too"
        rule = self._rule_for(op_type)
        version = schemas.version_in_force(op_type, self.opset)
        if rule is None or version is None or not rule.serves(version):
            raise NotLowered(f"{why}, and no rule lowers {op_type}-{version}")
        if self._depth >= MOST_RULES_IN_TURN:
            raise NotLowered(f"{why}, {MOST_RULES_IN_TURN} rules deep")
        inner = self.nested(op_type.lower())
        inner._depth = self._depth + 1
        inner._made_types = {**self._made_types, **self._types_made(inputs)}
        inner._made_constants = {**self._made_constants, **self._constants_made(inputs)}
        try:
            result = rule.body(inner, *inputs, **attributes)
        except NotLowered as declined:
            raise NotLowered(f"{why}, and its rule does not apply: {declined.reason}") from None
        finally:
            self.read_context |= inner.read_context
        self.nodes += inner.nodes
        return result

    def _pooled_node(self, name: str) -> onnx.NodeProto | None:
        """The Constant node the pool of scalars made for ``name`` (a recording pool makes none)."""
        making = getattr(self._constants, "node_making", None)
        return making(name) if making is not None else None

    def _constants_made(self, wanted: tuple[Value, ...]) -> dict[str, onnx.TensorProto]:
        """The tensors of the values of ``wanted`` that a Constant node of this builder (or its
        pool of scalars) makes."""
        made = {node.output[0]: node for node in self.nodes if node.op_type == "Constant" and node.output}
        found = {}
        for value in wanted:
            node = made.get(value.name) or self._pooled_node(value.name)
            held = [a.t for a in node.attribute if a.name == "value"] if node is not None else []
            if held:
                found[value.name] = held[0]
        return found

    def _types_made(self, wanted: tuple[Value, ...]) -> dict[str, onnx.TypeProto]:
        """The types onnx's shape inference gives the values of ``wanted`` that this builder's
        nodes make, from the types of what they read (the scope's, constants'); {} where it
        cannot say."""
        made = {name for node in self.nodes for name in node.output}
        names = [value.name for value in wanted if value.name in made]
        if not names or self._scope is None:
            return {}
        read = dict.fromkeys(name for node in self.nodes for name in node.input if name and name not in made)
        inputs, constants = [], []
        for name in read:
            pooled = self._pooled_node(name)
            if pooled is not None:
                constants.append(pooled)
                continue
            tensor = self._scope.constant_value(name)
            type_proto = self._made_types.get(name) or self._scope.inferred_type_of(name)
            if tensor is not None:
                type_proto = helper.make_tensor_type_proto(tensor.data_type, list(tensor.dims))
            if type_proto is not None:
                inputs.append(helper.make_value_info(name, type_proto))
        outputs = [helper.make_value_info(name, onnx.TypeProto()) for name in names]
        graph = helper.make_graph([*constants, *self.nodes], "made", inputs, outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except Exception:  # (onnx cannot infer them: their shapes stay unknown)
            return {}
        found = {info.name: info.type for info in [*inferred.graph.value_info, *inferred.graph.output]}
        return {name: found[name] for name in names if name in found and found[name].HasField("tensor_type")}

    def _output_element_type(self, op_type: str, inputs: tuple[Value, ...], attributes) -> int | None:
        try:
            kind, detail = _output_type_rule(op_type, self.opset)
        except ValueError:  # the schema leaves it open (the node's types decide)
            return None
        if kind == "same":
            return inputs[detail].element_type if detail < len(inputs) else None
        if kind == "fixed":
            return detail
        if kind == "value":
            return attributes["value"].data_type if "value" in attributes else detail
        return attributes["to"]

    def moved(
        self,
        node: onnx.NodeProto,
        *,
        inputs: Sequence[str] | None = None,
        outputs: Sequence[str] | None = None,
        dropped: tuple[str, ...] = (),
        **attributes,
    ) -> onnx.NodeProto:
        """Emit the replaced ``node`` itself (its op, name, domain, doc string), reading ``inputs``
        and writing ``outputs`` where given, without the attributes in ``dropped``, with
        ``attributes`` set (:func:`moved`)."""
        copy = moved(node, dropped=dropped, **attributes)
        if inputs is not None:
            copy.input[:] = list(inputs)
        if outputs is not None:
            copy.output[:] = list(outputs)
        self.nodes.append(copy)
        return copy

    def fresh(self, hint: str) -> str:
        """A fresh name ``{hint of the builder}_{hint}`` for a value no op of the builder names
        itself (the output of a :meth:`moved` node)."""
        return self._names.fresh(f"{self._hint}_{hint}")

    def If(self, condition: Value | str, then_branch, else_branch, *, outputs=None) -> Value:  # noqa: N802 (the op's name)
        """``If(condition)`` of two branches, each a function that emits its nodes through a
        Builder of its own (sharing this one's names and constants, which sit outside the
        branch) and returns its one output Value (or raises NotLowered); written to
        ``outputs[0]`` where given, as :meth:`op` writes."""
        graphs = {}
        for label, body in (("then_branch", then_branch), ("else_branch", else_branch)):
            branch = self.nested(label[:4])
            result = body(branch)
            self.read_context |= branch.read_context
            if not any(result.name in node.output for node in branch.nodes):
                result = branch.Identity(result)
            name = self._names.fresh(f"{self._hint}_{label}")
            graphs[label] = branch_graph(branch.nodes, name, result.name, result.element_type)
        element_type = graphs["then_branch"].output[0].type.tensor_type.elem_type
        output = outputs[0] if outputs else self._names.fresh(f"{self._hint}_if", tail="_if")
        name = self._names.fresh(f"{self._hint}_If", tail="_If")
        condition = condition if isinstance(condition, str) else condition.name
        self.nodes.append(helper.make_node("If", [condition], [output], name=name, **graphs))
        return Value(output, element_type)

    def over_axes(self, op_type: str, x: Value, axes, **attributes) -> Value:
        """``op_type(x)`` over ``axes`` (Unsqueeze, Squeeze, a Reduce op): an attribute where the
        op's version in force takes it so, else a 1-D int64 input."""
        schema = schemas.schema_in_force(op_type, self.opset)
        if schema is not None and "axes" in schema.attributes:
            return self.op(op_type, x, axes=[int(a) for a in axes], **attributes)
        return self.op(op_type, x, self.ints(axes, "axes"), **attributes)

    def __getattr__(self, op_type: str):
        if not op_type[:1].isupper():
            raise AttributeError(op_type)
        return functools.partial(self.op, op_type)
