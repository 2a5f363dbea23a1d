"""The machinery of version steps: known meaning changes, adapters, and looking them up.

A version step ``(op, version)`` is the change from the op's previous version to ``version``.
``onnx.defs`` gives each version's inputs, outputs, attributes with defaults and type lists;
:func:`lowering.conversion.version_steps.meaning_change` compares those. What it cannot see (a new meaning
under the same signature, a new allowed attribute value, an old default behaviour that a new
attribute's default does not keep) is stated once per step as a :class:`MeaningChange`, from the
ONNX changelog (``docs/Changelog.md``) and the schemas' own descriptions. A node such a step
affects is never re-versioned as it is: it goes through the adapter registered for that step,
else through onnx's version converter, else it is refused.

An adapter is a function ``(node, context) -> nodes``, registered with :func:`adapter` for one
step and one direction; it returns nodes valid at ``context.target_opset`` that mean what
``node`` means at ``context.source_opset``, or raises :class:`NotLowered` saying why it cannot
(the driver names where the node is).
A step that only adds types to the op's type lists changes no node's meaning (onnx.defs states
it, so it has no known change): its adapter, registered ``types_only``, serves the nodes of
the added types, which the older version cannot take as they are.

The adapters and the known changes themselves live in ``rules/versions/`` (installed as
``lowering.rules.versions``), one module per op family, each known change in the module of the
adapter that crosses its step (the others in ``known_changes.py``). They are imported on the
first lookup (:func:`adapter_for`, :func:`change_for`, :func:`all_adapters`,
:func:`known_changes`), as :mod:`lowering.registry` imports the rules.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from .. import floats, schemas
from ..builder import Builder, moved  # noqa: F401 (moved: re-exported for the adapters)
from ..errors import NotLowered
from ..naming import NameAllocator
from ..rules_package import load_rules_package
from ..targets import DEFAULT_TARGET

Predicate = Callable[[onnx.NodeProto], bool]


@dataclass(frozen=True)
class MeaningChange:
    """A version step whose meaning change ``onnx.defs`` cannot show.

    ``down_only``: only nodes going below ``version`` can change meaning (the step added
    something a node at the older version cannot use). ``affects``: the nodes it can change,
    where that can be told from the node alone; None for every node."""

    op_type: str
    version: int
    reason: str
    down_only: bool = False
    affects: Predicate | None = None

    def changes(self, node: onnx.NodeProto, going_down: bool) -> bool:
        if self.down_only and not going_down:
            return False
        return self.affects is None or self.affects(node)


# Filled by importing rules/versions; read through known_changes() / change_for(), which load it.
KNOWN_CHANGES: dict[tuple[str, int], MeaningChange] = {}


def known_change(
    op_types: Iterable[str], version: int, reason: str, *, down_only: bool = False, affects: Predicate | None = None
) -> None:
    """Declare the meaning change of step ``version`` of each of ``op_types`` (none where the
    installed onnx is older than the step)."""
    if version > schemas.newest_opset():
        return
    for op_type in op_types:
        key = (op_type, version)
        if key in KNOWN_CHANGES:
            raise ValueError(f"{op_type}-{version} has a known change already")
        KNOWN_CHANGES[key] = MeaningChange(op_type, version, reason, down_only, affects)


def known_changes() -> Mapping[tuple[str, int], MeaningChange]:
    """Every known change, by (op type, step version), read-only."""
    load_rules_package()
    return types.MappingProxyType(KNOWN_CHANGES)


def steps_between(op_type: str, version_a: int, version_b: int) -> list[int]:
    """The since-versions of ``op_type`` crossed going from version ``a`` to version ``b``."""
    low, high = sorted((version_a, version_b))
    return [v for v in schemas.op_versions(op_type) if low < v <= high]


def change_for(node: onnx.NodeProto, source_version: int, target_version: int) -> MeaningChange | None:
    """The first known change between the two versions that can change ``node``'s meaning."""
    going_down = target_version < source_version
    for change in changes_between(node.op_type, source_version, target_version):
        if change.changes(node, going_down):
            return change
    return None


def changes_between(op_type: str, source_version: int, target_version: int) -> list[MeaningChange]:
    """The known changes of the steps between the two versions of ``op_type``, in step order."""
    load_rules_package()
    steps = steps_between(op_type, source_version, target_version)
    return [KNOWN_CHANGES[(op_type, step)] for step in steps if (op_type, step) in KNOWN_CHANGES]


# -- reading a node, and predicates used by several steps ------------------------------------------


def attribute_of(node: onnx.NodeProto, name: str):
    """The value of the node's attribute ``name``, None where it is not set."""
    for attribute in node.attribute:
        if attribute.name == name:
            return helper.get_attribute_value(attribute)
    return None


def as_text(value) -> str | None:
    """A string attribute's value as text (onnx gives bytes; a rule's default is a str)."""
    return value.decode() if isinstance(value, bytes) else value


def text_attribute(node: onnx.NodeProto, name: str, opset: int) -> str | None:
    """The node's string attribute ``name``; where it is not set, its default at the op's
    version in force at ``opset`` (``onnx.defs``); None where the op declares none."""
    value = attribute_of(node, name)
    if value is not None:
        return as_text(value)
    schema = schemas.schema_in_force(node.op_type, opset, node.domain)
    declared = schema.attributes.get(name) if schema is not None else None
    if declared is None or declared.default_value.type != onnx.AttributeProto.STRING:
        return None
    return declared.default_value.s.decode()


def negative_axis(node: onnx.NodeProto) -> bool:
    """An ``axis``/``axes``/``*_axes`` attribute holds a negative value."""
    for attribute in node.attribute:
        if attribute.name in ("axis", "axes") or attribute.name.endswith("_axes"):
            value = helper.get_attribute_value(attribute)
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, int) and v < 0 for v in values):
                return True
    return False


def auto_pad_set(node: onnx.NodeProto) -> bool:
    """``auto_pad`` is set to something but NOTSET."""
    return as_text(attribute_of(node, "auto_pad")) not in (None, "NOTSET")


def auto_pad_or_ceil_mode(node: onnx.NodeProto) -> bool:
    """``auto_pad`` is set to something but NOTSET, or ``ceil_mode`` is on."""
    return auto_pad_set(node) or bool(attribute_of(node, "ceil_mode"))


class HeldAttributes:
    """A predicate: the node holds an attribute named one of ``names`` (whatever its value).
    Declared so rather than as a function, a change of this kind can be seen not to affect a
    node that holds only attributes of other names (:mod:`lowering.fast.unchanged_ops`)."""

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)
        self.__doc__ = f"holds {' or '.join(sorted(self.names))}"

    @classmethod
    def added_at(cls, version: int, *op_types: str) -> HeldAttributes:
        """Holding an attribute that step ``version`` of each of ``op_types`` added (onnx.defs:
        the attributes its schema has and the version before lacks); none where the installed
        onnx is older than the step (which no node then crosses)."""
        if version > schemas.newest_opset():
            return cls()
        added: set[str] = set()
        for op_type in op_types:
            if version not in schemas.op_versions(op_type):
                raise ValueError(f"{op_type} has no version {version}")
            before = schemas.schema_in_force(op_type, version - 1)
            earlier = before.attributes if before is not None else {}
            added.update(name for name in schemas.schema_in_force(op_type, version).attributes if name not in earlier)
        if not added:
            raise ValueError(f"step {version} of {', '.join(op_types)} adds no attribute")
        return cls(*added)

    def __call__(self, node: onnx.NodeProto) -> bool:
        names = self.names
        return any(attribute.name in names for attribute in node.attribute)

    def __repr__(self) -> str:
        return f"HeldAttributes({', '.join(map(repr, sorted(self.names)))})"


def attribute_in(name: str, values: frozenset[str]) -> Predicate:
    """A predicate: the node's string attribute ``name`` is one of ``values``."""

    def uses(node: onnx.NodeProto) -> bool:
        return as_text(attribute_of(node, name)) in values

    uses.__doc__ = f"``{name}`` is one of {sorted(values)}"
    return uses


# -- adapters --------------------------------------------------------------------------------------


@dataclass
class AdapterContext:
    """What an adapter may use: the opsets, fresh names, constants, and the type of a value in
    the vocabulary of :class:`lowering.scopes.Scope`: :meth:`type_of` as the model states it (or
    the op schemas give its element type), ``inferred_type_of`` with the shapes onnx inference
    adds, :meth:`judged_type_of` where only its schema string is read (None when unknown)."""

    source_opset: int
    target_opset: int
    names: NameAllocator
    inferred_type_of: Callable[[str], onnx.TypeProto | None]
    constant_of: Callable[[str], onnx.TensorProto | None] = lambda name: None
    # How judged_type_of reads a type (what a version step's type lists judge): the fast path
    # then matches later nodes by its schema string, not by their shapes. None: inferred_type_of.
    judged_types: Callable[[str], onnx.TypeProto | None] | None = None
    # How type_of reads a type, without asking onnx inference for the whole graph. None: inferred_type_of.
    stated_types: Callable[[str], onnx.TypeProto | None] | None = None

    def type_of(self, name: str) -> onnx.TypeProto | None:
        """The type of ``name`` as the model states it: for what only tidies a result."""
        return (self.stated_types or self.inferred_type_of)(name)

    def judged_type_of(self, name: str) -> onnx.TypeProto | None:
        """The type of ``name``, of which only the schema string (:func:`schemas.type_string`) is read."""
        return (self.judged_types or self.inferred_type_of)(name)

    def shape_of(self, name: str) -> list[int | str | None] | None:
        """The dimensions of a tensor (an int, a symbol or None each), None where the rank is unknown."""
        return self._shape_in(self.inferred_type_of, name)

    def stated_rank_of(self, name: str) -> int | None:
        """The rank of a tensor where the model states it (or it is a constant); None else, where
        :meth:`rank_of` may still know it from onnx inference of the whole graph. For a form that
        only tidies a result that holds without it."""
        shape = self._shape_in(self.type_of, name)
        return None if shape is None else len(shape)

    def _shape_in(self, type_of: Callable[[str], onnx.TypeProto | None], name: str) -> list | None:
        constant = self.constant_of(name)
        if constant is not None:
            return list(constant.dims)
        type_proto = type_of(name)
        if type_proto is None or type_proto.WhichOneof("value") != "tensor_type":
            return None
        tensor = type_proto.tensor_type
        if not tensor.HasField("shape"):
            return None
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]

    def rank_of(self, name: str) -> int | None:
        shape = self.shape_of(name)
        return None if shape is None else len(shape)

    def builder(self, node: onnx.NodeProto, hint: str | None = None) -> Builder:
        """The builder an adapter writes ``node``'s replacement with, at the target opset: each
        value and node named after ``hint`` where given (the nodes of a subgraph), else the
        node's name, else its first output; constants made per node."""
        return Builder(
            opset=self.target_opset,
            target=DEFAULT_TARGET,
            names=self.names,
            constants=None,
            name_hint=hint or node.name or node.output[0],
        )


Adapter = Callable[[onnx.NodeProto, AdapterContext], "list[onnx.NodeProto] | None"]


@dataclass(frozen=True)
class RegisteredAdapter:
    """One adapter as registered: the function, how the report names it, the op versions it
    moves nodes between, and the step (``op_types``, ``version``) and ``direction`` it crosses."""

    function: Adapter
    label: str  # how the report names it: "Softmax-13→11 via <label>"
    versions: tuple[int, int]  # the op versions it moves nodes between, both ways across its step
    op_types: tuple[str, ...] = ()
    version: int = 0  # the step: the op version whose change it crosses
    direction: str = ""  # "down" or "up"
    types_only: bool = False  # the step only adds types to the op's type lists (no known change)
    changed_only: bool = False  # it leaves (None) every node no known change across its steps affects
    cases: tuple[tuple[str, int], ...] = ()  # (op type, the fewest cases it must be exact on), each op
    replaced_by: tuple[str, ...] = ()  # the ops it writes in place of a deprecated op (Upsample: Resize)

    @property
    def name(self) -> str:
        return self.function.__name__

    @property
    def formula(self) -> str:
        """The first line of the function's docstring: what it rewrites into what."""
        doc = inspect.getdoc(self.function) or ""
        return doc.splitlines()[0] if doc else ""

    def minimum_cases(self, op_type: str) -> int:
        """The fewest (case, opset pair) combinations it must fire on and be exact on for
        ``op_type`` (``tests/rules/versions/test_adapter_registry.py``), as registered."""
        for served, count in self.cases:
            if served == op_type:
                return count
        raise KeyError(f"{self.name} does not serve {op_type}")


# The key of a ``cases`` mapping that counts every op type the mapping does not name.
OTHER_OPS = "*"


def case_minimums(op_types: tuple[str, ...], cases: int | Mapping[str, int] | None) -> tuple[tuple[str, int], ...]:
    """``cases`` as registered for an adapter serving ``op_types``: (op type, count) for each.
    ``cases`` is one count for every op type, or a mapping op type -> count where they differ,
    with :data:`OTHER_OPS` for the op types it does not name. Raises ValueError where it is
    missing, where an op type has no count or a count that is not a non-negative int, or where
    the mapping names an op type the adapter does not serve."""
    served = ", ".join(op_types)
    if cases is None:
        raise ValueError(
            f"an adapter for {served} needs cases=: the fewest (case, opset pair) combinations "
            "it must fire on and be exact on, per op type (tests/rules/versions/test_adapter_registry.py)"
        )
    by_op = dict(cases) if isinstance(cases, Mapping) else dict.fromkeys(op_types, cases)
    unserved = sorted(set(by_op) - set(op_types) - {OTHER_OPS})
    if unserved:
        raise ValueError(f"cases= names {', '.join(unserved)}, which an adapter for {served} does not serve")
    minimums = []
    for op_type in op_types:
        count = by_op.get(op_type, by_op.get(OTHER_OPS))
        if count is None:
            raise ValueError(f"cases= gives no count for {op_type} (name it, or give {OTHER_OPS!r})")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"cases= for {op_type} must be a count of 0 or more, not {count!r}")
        minimums.append((op_type, count))
    return tuple(minimums)


ADAPTERS: dict[tuple[str, int, str], RegisteredAdapter] = {}


def adapter(
    op_types: Iterable[str],
    version: int,
    direction: str,
    label: str,
    *,
    versions: tuple[int, int],
    cases: int | Mapping[str, int] | None = None,
    reason: str | None = None,
    types_only: bool = False,
    changed_only: bool = False,
    replaced_by: tuple[str, ...] = (),
):
    """Register the decorated function as the adapter across step ``version`` of ``op_types``
    going ``direction`` ("down" or "up"), for nodes moving between op versions in ``versions``
    (inclusive): it handles every other step in that range too. ``reason`` declares the step's
    known change; ``types_only`` says the step has none, as it only adds types to the op's type
    lists (checked against onnx.defs). The function returns None for a node it leaves to be
    judged as any (re-versioned where it means the same, else onnx's converter); ``changed_only``
    says it leaves so every node no known change across its steps affects (:func:`change_for`).
    ``replaced_by`` names the ops it writes where the op is deprecated at the target opset
    (Upsample from 10: Resize), whose versions choose the opset as the op's own would.
    ``cases`` (required) is the fewest (case, opset pair) combinations it must fire on and be
    exact on, per op type it serves, in ``tests/rules/versions/test_adapter_registry.py``: one int, or a
    mapping op type -> int (:data:`OTHER_OPS` for the rest) where the op types differ
    (:func:`case_minimums`); a comment beside the registration says where the cases come from
    (the ONNX backend node cases of the op, the explicit ones built in that test)."""
    if direction not in ("down", "up"):
        raise ValueError(direction)
    if types_only and reason is not None:
        raise ValueError("a step that only adds types has no known change")
    op_types = tuple(op_types)
    minimums = case_minimums(op_types, cases)

    def register(function: Adapter) -> Adapter:
        if not inspect.getdoc(function):
            raise ValueError(f"adapter {function.__name__} needs a docstring stating its formula")
        if version > schemas.newest_opset():  # a step newer than the installed onnx: nothing crosses it
            return function
        if reason is not None:
            known_change(op_types, version, reason)
        for op_type in op_types if replaced_by else ():
            schema = schemas.schema_in_force(op_type, version)
            if schema is None or not schema.deprecated or not all(map(schemas.first_opset, replaced_by)):
                raise ValueError(
                    f"{op_type} is not deprecated at {version} for {', '.join(replaced_by)}, onnx.defs says"
                )
        registered = RegisteredAdapter(
            function,
            label,
            versions,
            op_types,
            version,
            direction,
            types_only,
            changed_only,
            minimums,
            tuple(replaced_by),
        )
        for op_type in op_types:
            if types_only:
                if not schemas.only_types_change(op_type, version):
                    raise ValueError(f"step {version} of {op_type} changes more than the types it takes")
            elif (op_type, version) not in KNOWN_CHANGES:
                raise ValueError(f"an adapter for {op_type}-{version} needs that step's known change")
            if (op_type, version, direction) in ADAPTERS:
                raise ValueError(f"{op_type}-{version} has an adapter going {direction} already")
            ADAPTERS[(op_type, version, direction)] = registered
        return function

    return register


def adapter_for(op_type: str, source_version: int, target_version: int) -> RegisteredAdapter | None:
    """The adapter for a step crossed in this direction whose range holds both versions: it
    moves the node all the way to the target opset."""
    load_rules_package()
    direction = "down" if target_version < source_version else "up"
    for step in steps_between(op_type, source_version, target_version):
        found = ADAPTERS.get((op_type, step, direction))
        if found is not None and all(
            found.versions[0] <= v <= found.versions[1] for v in (source_version, target_version)
        ):
            return found
    return None


def replacing_ops(op_type: str) -> frozenset[str]:
    """The ops the adapters of ``op_type`` write in its place where it is deprecated (its
    adapters going up' ``replaced_by``): Resize for Upsample."""
    load_rules_package()
    return frozenset(
        op for key, found in ADAPTERS.items() if key[0] == op_type and key[2] == "up" for op in found.replaced_by
    )


def all_adapters() -> list[RegisteredAdapter]:
    """Every registered adapter once, ordered by its first op type, step and direction."""
    load_rules_package()
    distinct = {id(found): found for found in ADAPTERS.values()}
    return sorted(distinct.values(), key=lambda found: (found.op_types, found.version, found.direction))


# -- helpers for adapter bodies --------------------------------------------------------------------


def constant_array(context: AdapterContext, name: str) -> np.ndarray | None:
    """The constant ``name`` (an initializer or a Constant's value) as a flat array; None where it
    is not a constant, or not one this adapter can read (external data)."""
    tensor = context.constant_of(name) if name else None
    if tensor is None:
        return None
    try:
        return floats.array_of(tensor).reshape(-1)
    except Exception:  # external data, a tensor onnx cannot read: not a constant here
        return None


def constant_ints(node: onnx.NodeProto, context: AdapterContext, index: int = 1) -> list[int] | None:
    """The node's input ``index`` (by default the second: Reduce axes, a Reshape shape) as
    integers, [] when absent or empty; None when it is not a constant of numbers."""
    if len(node.input) <= index or not node.input[index]:
        return []
    values = constant_array(context, node.input[index])
    if values is None:
        return None
    try:
        return [int(v) for v in values]
    except Exception:  # NaN, infinities, text: not integers
        return None


def require_types_taken(node: onnx.NodeProto, context: AdapterContext, *, unknown_refused: bool = False) -> None:
    """Raise NotLowered where the op's version in force at the target opset cannot take
    ``node``'s inputs as typed: one whose known type it does not take, or two bound to one type
    parameter there with different types. Inputs of unknown type are left to the full check of
    the result, unless ``unknown_refused``: then one is refused where the target's version takes
    fewer types there than the source's."""
    source = f"{node.op_type}-{schemas.version_in_force(node.op_type, context.source_opset)}"
    schema = schemas.schema_in_force(node.op_type, context.target_opset)
    if schema is None:
        raise NotLowered(f"{source} cannot go to opset {context.target_opset}, which lacks it")
    target = f"{node.op_type}-{schema.since_version}"
    bound: dict[str, tuple[str, str]] = {}
    for index, name in enumerate(node.input):
        type_proto = context.judged_type_of(name) if name else None
        if index >= len(schema.inputs):
            continue
        if type_proto is None:
            if name and unknown_refused and _takes_fewer(node.op_type, context, index):
                why = f"its input '{name}' is of unknown type, and {target} takes fewer types there than {source}"
                raise NotLowered(f"{source} cannot go to opset {context.target_opset}: {why}")
            continue
        typed = schemas.type_string(type_proto)
        why = None
        taken = schemas.input_type_strings(node.op_type, context.target_opset, index)
        if typed not in taken:
            why = f"its input '{name}' is {typed}, which {target} does not take"
            why += f" (it takes {schemas.describe_types(taken)})"
        first = bound.setdefault(schema.inputs[index].type_str, (name, typed))
        if why is None and first[1] != typed:
            why = f"{target} takes one type for its inputs '{first[0]}' ({first[1]}) and '{name}' ({typed})"
        if why:
            raise NotLowered(f"{source} cannot go to opset {context.target_opset}: {why}")


def _takes_fewer(op_type: str, context: AdapterContext, index: int) -> bool:
    """Input ``index`` of the op's version at the target lacks a type its version at the source takes."""
    taken = schemas.input_type_strings(op_type, context.target_opset, index)
    return not schemas.input_type_strings(op_type, context.source_opset, index) <= taken
