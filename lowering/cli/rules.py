"""``onnx-lower --list-rules``: every pattern on one readable line, grouped by kind, its types
summarized; ``-v`` shows each in full (types per version, ops emitted, how it is checked, its
whole docstring); ``--json`` all of it as data."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sys
import textwrap

import onnx

from .. import function_bodies
from ..api import rules_table
from ..conversion import adapters
from ..patterns import ADAPTER, DECOMPOSITION, FUNCTION_BODY, all_patterns, first_paragraph, shorten
from ..registry import all_rules

HEADINGS = {
    DECOMPOSITION: "Decompositions into primitive ops (rules/, {count}; the seed ops by default, others with --ops)",
    ADAPTER: "Version adapters (rules/versions/, {count}; a node moved across one op version step, --target-opset)",
    FUNCTION_BODY: (
        "Function bodies (rules/function_bodies.py, {count}; with --ops, or where the target opset lacks the op)"
    ),
}


def pattern_records() -> list[dict]:
    """Every pattern as data: kind, ops, versions, name, formula (its docstring's first
    paragraph), description (the whole docstring), how it is checked; decompositions add their
    input types and the ops they emit, per op version."""
    objects = [*all_rules(), *adapters.all_adapters(), *function_bodies.all_expansions()]
    rows: dict[tuple[str, str], list[dict]] = {}
    for row in rules_table():
        rows.setdefault((row["op_type"], row["rule"]), []).append(row)
    records = []
    for entry, source in zip(all_patterns(), objects, strict=True):
        description = _docstring(source)
        record = {
            "kind": entry.kind,
            "ops": list(entry.op_types),
            "versions": entry.versions,
            "name": entry.name,
            "formula": first_paragraph(description),
            "description": description,
            "checked_by": entry.checked_by,
        }
        if entry.kind == DECOMPOSITION:
            found = rows.get((entry.op_types[0], entry.name), [])
            record["types"] = {str(row["version"]): list(row["types"]) for row in found}
            record["emits"] = {str(row["version"]): list(row["emits"]) for row in found}
        records.append(record)
    return records


def _docstring(source) -> str:
    if isinstance(source, adapters.RegisteredAdapter):
        return inspect.getdoc(source.function) or ""
    return source.formula


def print_rules(*, verbose: bool = False, as_json: bool = False) -> None:
    records = pattern_records()
    if as_json:
        print(json.dumps(records, indent=2, ensure_ascii=False))
        return
    width = _width()
    for number, kind in enumerate((DECOMPOSITION, ADAPTER, FUNCTION_BODY)):
        chosen = [record for record in records if record["kind"] == kind]
        if number:
            print()
        print(HEADINGS[kind].format(count=len(chosen)) + ":")
        for record in chosen:
            if verbose:
                for line in full_text(record, width):
                    print(line)
            else:
                print(one_line(record, width))


WIDTH = 120


def _width() -> int:
    """The terminal's width where stdout is one (at least 80), else WIDTH."""
    if sys.stdout.isatty():
        return max(80, shutil.get_terminal_size((WIDTH, 24)).columns)
    return WIDTH


def title(record: dict) -> str:
    """``IsNaN-9/13/20``, ``ReduceL1/L2/... down across 18``, ``Gelu-20``."""
    ops = _ops(record["ops"])
    if record["kind"] == ADAPTER:
        return f"{ops} {record['versions'].split(' (')[0]}"
    return f"{ops}-{record['versions'].replace(', ', '/')}"


def one_line(record: dict, width: int = WIDTH) -> str:
    """The pattern on one line of at most ``width`` characters: its ops and versions, its types
    summarized, its formula (cut at a clause, with " …", where it does not fit)."""
    head = f"  {title(record)}"
    if record.get("types"):
        every = sorted({t for types in record["types"].values() for t in types})
        head += f" [{summarize_types(every)}]"
    return f"{head}: {shorten(record['formula'], width - len(head) - 2)}"


def full_text(record: dict, width: int = WIDTH) -> list[str]:
    lines = [f"{title(record)}  ({record['name']})"]
    wrap = textwrap.TextWrapper(width=width, initial_indent="  ", subsequent_indent="      ")
    for version, types in record.get("types", {}).items():
        lines += wrap.wrap(f"the op takes at {version}: {', '.join(types)}")
    for version, emits in record.get("emits", {}).items():
        lines += wrap.wrap(f"emits at {version}: {', '.join(emits)}")
    if record["kind"] == ADAPTER:
        lines += wrap.wrap(f"op versions: {record['versions'].split('(op versions ')[-1].rstrip(')')}")
    lines += wrap.wrap(f"checked: {record['checked_by']}")
    lines += ["  " + line if line else "" for line in record["description"].splitlines()]
    return lines + [""]


def _ops(op_types: list[str]) -> str:
    """``ReduceL1/L2/LogSum``: several ops sharing a prefix, written once."""
    if len(op_types) == 1:
        return op_types[0]
    prefix = os.path.commonprefix(op_types)
    prefix = re.match(r"[A-Z][a-z]*(?:[A-Z][a-z]+)*", prefix)
    shared = prefix.group(0) if prefix else ""
    if not shared or any(op == shared for op in op_types) or len(op_types) < 3:
        return "/".join(op_types)
    return shared + "/".join(op[len(shared) :] for op in op_types)


_NARROW = re.compile(r"^(float8|float6|float4|int4|uint4|int2|uint2)")
_EVERY = {name.lower() for name, value in onnx.TensorProto.DataType.items() if value}
_FIRST = ("float", "double", "float16", "bfloat16")
_KINDS = (
    ("optional(seq(tensor(", "optional"),
    ("optional(tensor(", "optional"),
    ("seq(tensor(", "sequence"),
    ("tensor(", "tensor"),
)


def summarize_types(type_strings: list[str]) -> str:
    """Input types in a few words: ``float, double, float16``, ``every type but float8*, int4,
    ...``, ``every tensor, sequence or optional type``."""
    kinds: dict[str, set[str]] = {}
    for type_string in type_strings:
        for prefix, kind in _KINDS:
            if type_string.startswith(prefix):
                kinds.setdefault(kind, set()).add(type_string[len(prefix) :].rstrip(")"))
                break
        else:
            kinds.setdefault("tensor", set()).add(type_string)
    order = [kind for kind in ("tensor", "sequence", "optional") if kind in kinds]
    elements = [kinds[kind] for kind in order]
    if all(element == elements[0] for element in elements):
        summary = _elements(elements[0])
        if order == ["tensor"]:
            return summary
        wrappers = order[0] if len(order) == 1 else f"{', '.join(order[:-1])} or {order[-1]}"
        if summary == "every type":
            return f"every {wrappers} type"
        return f"{wrappers} of {summary}"
    return "; ".join(f"{kind}: {_elements(kinds[kind])}" for kind in order)


def _elements(names: set[str]) -> str:
    if names >= _EVERY:
        return "every type"
    if len(names) > 10:  # (the shorter of what it takes and what it does not)
        return min(f"every type but {_compact(sorted(_EVERY - names))}", _compact(sorted(names)), key=len)
    ordered = [n for n in _FIRST if n in names] + sorted(n for n in names if n not in _FIRST)
    eights = [n for n in ordered if n.startswith("float8")]
    if len(eights) > 1:
        ordered = [n for n in ordered if not n.startswith("float8")] + [f"float8 ×{len(eights)}"]
    return ", ".join(ordered)


def _compact(names: list[str]) -> str:
    """``float8/6/4, int4/2, uint4/2``: type names sharing a stem, their widths joined."""
    widths: dict[str, list[str]] = {}
    for name in names:
        stem, width = re.match(r"([a-z]+?)(\d*)(?:e\d.*)?$", name).groups()
        if width not in widths.setdefault(stem, []):
            widths[stem].append(width)
    parts = []
    for stem, found in widths.items():
        found.sort(key=lambda w: -int(w) if w else -1000)  # (the bare stem first: float/16)
        parts.append(stem + "/".join(found))
    return ", ".join(parts)
