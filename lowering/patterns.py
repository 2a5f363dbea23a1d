"""The three kinds of patterns that make an illegal node legal, listed the same way:
decompositions into primitive ops (``rules/*.py``), version adapters across one op version
step (``rules/versions/``), and expansion by the op's own ONNX function body
(``rules/functions.py``). Each states its formula and how its meaning is checked."""

from __future__ import annotations

from dataclasses import dataclass

from . import adapters, functions, schemas
from .registry import all_rules

DECOMPOSITION, ADAPTER, FUNCTION_BODY = "decomposition", "version adapter", "function body"


@dataclass(frozen=True)
class PatternEntry:
    """One registered pattern: its kind, the ops and versions it serves, its name and formula,
    and how its meaning is checked."""

    kind: str
    op_types: tuple[str, ...]
    versions: str
    name: str
    formula: str
    checked_by: str


def all_patterns() -> list[PatternEntry]:
    """Every registered pattern: decompositions, then version adapters, then function bodies."""
    entries = [
        PatternEntry(
            DECOMPOSITION,
            (rule.op_type,),
            ", ".join(map(str, rule.since_versions)),
            rule.name,
            first_paragraph(rule.formula),
            f"{tolerance_text(rule.tolerance)}, other types bit for bit, against the op (onnxruntime's kernel, "
            f"{rule.reference.__name__} in numpy), on the ONNX backend cases and random inputs"
            if rule.reference is not None and rule.tolerance is not None
            else f"bit for bit against {rule.reference.__name__} (numpy), every sample of every type"
            if rule.reference is not None
            else "bit for bit in the golden and optional tests (the answer depends on the graph)",
        )
        for rule in all_rules()
    ]
    entries += [
        PatternEntry(
            ADAPTER,
            found.op_types,
            f"{found.direction} across {found.version} (op versions {found.versions[0]}–{found.versions[1]})",
            found.name,
            found.formula,
            "bit for bit against the op before the step, on backend cases and edge values",
        )
        for found in adapters.all_adapters()
    ]
    entries += [
        PatternEntry(
            FUNCTION_BODY,
            (expansion.op_type,),
            ", ".join(map(str, expansion.versions)),
            expansion.name,
            first_paragraph(expansion.formula),
            tolerance_text(expansion.tolerance) + " against the op's expected outputs, on the ONNX backend cases",
        )
        for expansion in functions.all_expansions()
    ]
    return entries


def first_paragraph(text: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(text.split("\n\n")[0].split())


def markdown_table(kind: str) -> str:
    """The patterns of one kind as a Markdown table (README's lists are this, generated)."""
    lines = ["| ops | versions | pattern | formula |", "| --- | --- | --- | --- |"]
    for entry in all_patterns():
        if entry.kind == kind:
            formula = entry.formula.replace("|", "\\|")
            lines.append(f"| {', '.join(entry.op_types)} | {entry.versions} | `{entry.name}` | {formula} |")
    return "\n".join(lines)


def readme_section(kind: str) -> str:
    """The README block listing one kind of pattern, between its generated-content markers."""
    marker = kind.replace(" ", "-")
    return f"<!-- generated: {marker} -->\n{markdown_table(kind)}\n<!-- end: {marker} -->"


def tolerance_text(tolerance) -> str:
    """``float, double: rtol 0.001, atol 1e-07; bfloat16: ...``: the element types that share a
    tolerance, together."""
    types_by_tolerance: dict[object, list[str]] = {}
    for element_type, stated in sorted(tolerance.items()):
        types_by_tolerance.setdefault(stated, []).append(schemas.type_name(element_type))
    return "; ".join(
        f"{', '.join(names)}: rtol {stated.rtol:.2g}, atol {stated.atol:.2g}"
        for stated, names in types_by_tolerance.items()
    )


def function_body_table() -> str:
    """The README's table of function-body ops, from the registry (tests/test_function_bodies.py
    checks that the README holds exactly this)."""
    lines = ["| op | versions | formula | tolerance (per input type) |", "| --- | --- | --- | --- |"]
    for entry in all_patterns():
        if entry.kind == FUNCTION_BODY:
            expansion = functions.expansion_for("", entry.op_types[0])
            cell = entry.formula.replace("|", "\\|")
            lines.append(f"| {entry.op_types[0]} | {entry.versions} | {cell} | {tolerance_text(expansion.tolerance)} |")
    return "\n".join(lines)
