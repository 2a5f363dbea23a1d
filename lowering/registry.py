"""The rule registry: rules register themselves by decorator, the engine looks them up by op."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from . import schemas
from .builder import Builder, Value
from .errors import NotLowered
from .function_bodies import Tolerance
from .rules_package import load_rules_package

RuleBody = Callable[..., "Value | tuple[Value, ...]"]


@dataclass(frozen=True)
class Rule:
    """Lowers one op, at the versions listed, into primitive ops.

    ``body(b, *inputs, **attributes)`` emits the replacement through the builder ``b`` and
    returns the value(s) standing for the op's outputs, or raises :class:`NotLowered` with a reason.
    Its docstring states the formula. Accepted input types come from the op's schema.

    ``rounding_invariant``: whether the op answers a wider, unrounded value as it answers
    that value rounded to the input's type (IsNaN does; IsInf does not: 65519 and 65520 both
    round into float16's range, one to 65504 and one to inf). Where it does not, a node kept at
    a target opset whose op lacks the input's type is lowered, not fed through a widening
    Cast: onnxruntime runs float16 arithmetic in float32 and drops such a Cast, so the op
    would see the unrounded value.

    ``reference(*inputs, **attributes)``: how the rule's meaning is checked, numpy on the op's
    inputs answering as the op does; the lowered graph must match it bit for bit on every
    sample of every type the rule serves (tests/rules/test_rules_exhaustive.py runs every rule that
    has one). None for rules whose answer depends on the surrounding graph (the Optional ops),
    which the golden and optional tests check.

    ``tolerance``: per input type, how far the lowered graph may stray from the op (and from
    ``reference``) where it is not bit for bit: a sum whose terms the rule adds in another
    order than the op's kernel (Einsum). None: bit for bit.

    ``constant_inputs``: the positions of the inputs the rule reads as constants, declining a
    node fed one at run time (Pad's pads and axes); ``empty_input_only``: the rule lowers only a
    node whose first input is known to hold no element (ReduceMax over an empty set);
    ``most_inputs``: the rule lowers only a node given at most that many inputs (Max of one
    operand). ``check`` and ``--target`` name the rule as the fix of no other node, so that
    another opset is weighed for it (:meth:`takes_form`).
    """

    op_type: str
    domain: str
    since_versions: tuple[int, ...]
    body: RuleBody
    emits: tuple[str, ...] | None = None
    rounding_invariant: bool = True
    reference: Callable[..., np.ndarray] | None = None
    tolerance: Mapping[int, Tolerance] | None = None
    constant_inputs: tuple[int, ...] = ()
    empty_input_only: bool = False
    most_inputs: int | None = None

    def takes_form(self, fed: frozenset[int], empty: frozenset[int], given: frozenset[int]) -> bool:
        """Whether the rule may lower a node fed at run time the inputs at ``fed``, whose inputs
        at ``empty`` are known to hold no element and that is given the inputs at ``given`` (a
        node form's ``fed``, ``empty`` and ``inputs``): an empty-input rule takes only nodes whose
        first input is known to hold none, a rule of ``most_inputs`` none given more."""
        if set(self.constant_inputs) & fed:
            return False
        if self.most_inputs is not None and len(given) > self.most_inputs:
            return False
        return not self.empty_input_only or 0 in empty

    @property
    def name(self) -> str:
        return self.body.__name__

    @property
    def formula(self) -> str:
        return inspect.getdoc(self.body) or ""

    @property
    def attribute_defaults(self) -> dict[str, object]:
        """The attributes the rule reads and their defaults (from the body's signature)."""
        return _keyword_defaults(self.body)

    def attribute_combinations(self) -> list[dict[str, int]]:
        """Every combination of 1/0 for the int attributes the rule reads (IsInf's two flags)."""
        combinations: list[dict[str, int]] = [{}]
        for name, default in self.attribute_defaults.items():
            if isinstance(default, int):
                combinations = [{**c, name: flag} for c in combinations for flag in (1, 0)]
        return combinations

    def serves(self, version: int) -> bool:
        return version in self.since_versions

    def input_types(self, version: int) -> frozenset[int]:
        """Element types of the first input the op accepts at ``version`` (onnx.defs)."""
        return schemas.input_element_types(self.op_type, version, 0, self.domain)


@functools.cache
def _keyword_defaults(body: RuleBody) -> dict[str, object]:
    return {
        parameter.name: parameter.default
        for parameter in inspect.signature(body).parameters.values()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    }


_RULES: dict[tuple[str, str], Rule] = {}


def rule(
    op_type: str,
    *,
    versions: tuple[int, ...],
    domain: str = "",
    emits: tuple[str, ...] | None = None,
    rounding_invariant: bool = True,
    reference: Callable[..., np.ndarray] | None = None,
    tolerance: Mapping[int, Tolerance] | None = None,
    constant_inputs: tuple[int, ...] = (),
    empty_input_only: bool = False,
    most_inputs: int | None = None,
) -> Callable[[RuleBody], RuleBody]:
    """Register the decorated function as the rule lowering ``op_type`` at ``versions``.

    ``emits`` names what a rule whose output depends on the surrounding graph produces;
    for the others it is found by expanding the rule (see ``rules_table``).
    ``rounding_invariant``, ``reference``, ``tolerance``, ``constant_inputs``, ``empty_input_only``,
    ``most_inputs``: see :class:`Rule`."""

    def register(body: RuleBody) -> RuleBody:
        key = (schemas.canonical_domain(domain), op_type)
        if key in _RULES:
            raise ValueError(f"a rule for {op_type} is registered already")
        defined = schemas.defined_versions(op_type, versions, domain)
        if not defined:  # an op newer than the installed onnx: nothing to lower
            return body
        stated = MappingProxyType(dict(tolerance)) if tolerance is not None else None
        _RULES[key] = Rule(
            op_type, key[0], tuple(sorted(defined)), body, emits, rounding_invariant, reference, stated,
            constant_inputs, empty_input_only, most_inputs,
        )  # fmt: skip
        return body

    return register


def rule_for(domain: str, op_type: str) -> Rule | None:
    """The rule for an op, by (domain, op type): one dictionary lookup."""
    load_rules_package()
    return _RULES.get(("" if domain in schemas.DEFAULT_DOMAINS else domain, op_type))


def default_domain_rule(op_type: str) -> Rule | None:
    """The rule for a default-domain op: how a :class:`Builder` lowers in turn an op the
    target lowers that a rule emits."""
    return rule_for("", op_type)


@contextlib.contextmanager
def body_replaced(op_type: str, body: RuleBody, domain: str = "") -> Iterator[Rule]:
    """Within the block, the rule for ``op_type`` runs ``body`` instead of its own (a probe or
    an injected fault, for tests); the rule is restored on leaving. Yields the original rule."""
    load_rules_package()
    key = (schemas.canonical_domain(domain), op_type)
    original = _RULES[key]
    _RULES[key] = dataclasses.replace(original, body=body)
    try:
        yield original
    finally:
        _RULES[key] = original


def all_rules() -> list[Rule]:
    """Every registered rule, ordered by op type."""
    load_rules_package()
    return sorted(_RULES.values(), key=lambda r: (r.domain, r.op_type))


__all__ = [
    "Builder",
    "NotLowered",
    "Rule",
    "Value",
    "all_rules",
    "body_replaced",
    "default_domain_rule",
    "rule",
    "rule_for",
]
