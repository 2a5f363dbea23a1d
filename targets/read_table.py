"""Read a runtime's published operator support table (Markdown) into a target profile: per op
whether it is listed as supported, the element types and op versions the table names, and its
restrictions; nothing the table does not say. Writes ``lowering/target_profiles/NAME.json``
(``"kind": "table"``), which ``lowering.runtime_profiles`` reads. For runtimes that cannot run
here; a runtime that can is probed instead (``targets/probe.py``).

    python targets/read_table.py TABLE.md NAME --repo OWNER/REPO --path PATH --ref REF --commit SHA \\
        --runtime RUNTIME --runtime-version VERSION [--file-commit SHA] [--via NOTE] [--out FILE]

It reads only the file given; it needs no network. The shipped profiles were read from copies
kept in ``targets/tables/``, each taken from a clone of its repository with ``git show``:

    git clone https://github.com/onnx/onnx-tensorrt && cd onnx-tensorrt
    git show 96e781103cfc4adf4a6bb557e94bac8e693f6f4c:docs/operators.md > targets/tables/tensorrt-10.md
    git show ee0b139bc68567a89618c1d84dcd461cc144aad4:docs/operators.md > targets/tables/tensorrt-8.6.md
    # onnxruntime's main at 2a4cfab46a8e9159f35b2418ab401937dd8b6502 (read from a fork holding it)
    git show 2a4cfab46a8e9159f35b2418ab401937dd8b6502:js/web/docs/webgpu-operators.md > targets/tables/webgpu.md

and then (``targets/tables/README.md`` holds the three commands in full)::

    python targets/read_table.py targets/tables/tensorrt-10.md tensorrt-10 --repo onnx/onnx-tensorrt ...
    python -m lowering.docs

Two table forms are read, told apart by their header row. onnx-tensorrt's ``docs/operators.md``:
``| Operator | Supported | Supported Types | Restrictions |`` (Y or N; types as ``FP32, BF16,
INT64``), with the opsets it supports stated in a sentence above it. onnxruntime's
``js/web/docs/webgpu-operators.md``: ``| Operator | Opset | Comments |``, every row a supported op,
``ai.onnx(7-12,13+)`` the op versions its kernels take, no types, no opsets stated.

Type names are onnx's (``TensorProto.DataType``): a name onnx has is taken as it is (INT64,
BOOL); the tables' abbreviations FPnn and BFnn are onnx's type whose numpy dtype is
``floatnn`` / ``bfloatnn`` (FP32 is FLOAT, BF16 is BFLOAT16). A name that is neither (FP8: onnx
has four 8-bit float types; a typo such as INF64) is left out and listed under ``unread``, unless
the runtime's own documentation describes it, given with ``--type-described "FP8=<its words>"``
(its sign, exponent and mantissa bits and exponent bias): the onnx float type of that layout, as
ml_dtypes describes each (:func:`type_of_layout`), where exactly one fits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import sys
from pathlib import Path

from onnx import TensorProto, helper

HERE = Path(__file__).resolve().parent
PROFILES = HERE.parent / "lowering" / "target_profiles"
DEFAULT_DOMAIN = "ai.onnx"
ABBREVIATIONS = {"FP": "float", "BF": "bfloat"}  # the tables' spelling of numpy's dtype names


def onnx_type_name(token: str, described: dict[str, str] | None = None) -> str | None:
    """onnx's name for the table's type ``token`` ("FP16" -> "FLOAT16"; one ``described`` maps to
    the onnx type its layout fits), or None where onnx has no single type of that name."""
    token = token.strip().upper()
    if described and token in described:
        return type_of_layout(described[token])
    if token in TensorProto.DataType.keys() and token != "UNDEFINED":
        return token
    match = re.fullmatch(r"([A-Z]+?)(\d+)", token)
    if not match:
        return None
    dtype_name = ABBREVIATIONS.get(match.group(1), match.group(1).lower()) + match.group(2)
    found = [name for name, number in TensorProto.DataType.items() if number and _dtype_name(number) == dtype_name]
    return found[0] if len(found) == 1 else None


_LAYOUT = re.compile(
    r"(\d+)-bit floating point with 1 sign bit, (\d+) exponent bits, (\d+) mantissa bits, and exponent-bias (\d+)",
    re.IGNORECASE,
)


def type_of_layout(words: str) -> str | None:
    """The onnx float type whose layout ``words`` describe ("Signed 8-bit floating point with 1
    sign bit, 4 exponent bits, 3 mantissa bits, and exponent-bias 7": FLOAT8E4M3FN, the only one
    of bias 7; its -fnuz sibling has bias 8), from ml_dtypes' finfo of each (bias = 1 - minexp);
    None where the words are not such a layout or no single type fits."""
    import ml_dtypes

    match = _LAYOUT.search(words)
    if match is None:
        return None
    bits, exponent, mantissa, bias = map(int, match.groups())
    fitting = []
    for name, number in TensorProto.DataType.items():
        try:
            dtype = helper.tensor_dtype_to_np_dtype(number)
            info = ml_dtypes.finfo(dtype)
        except (KeyError, TypeError, ValueError):
            continue
        if (info.bits, info.nexp, info.nmant, 1 - info.minexp) == (bits, exponent, mantissa, bias):
            fitting.append(name)
    return fitting[0] if len(fitting) == 1 else None


def _dtype_name(number: int) -> str | None:
    try:
        return helper.tensor_dtype_to_np_dtype(number).name
    except (KeyError, TypeError, ValueError):
        return None


def table_rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and the rows of the first Markdown table in ``text`` whose header
    names an ``Operator`` column. Rows may lack their closing ``|`` or trailing cells."""
    header: list[str] = []
    rows: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            if header and rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if not header:
            if cells and cells[0] == "Operator":
                header = cells
            continue
        if all(re.fullmatch(r":?-+:?", cell) for cell in cells if cell):
            continue  # the rule under the header
        rows.append(cells + [""] * (len(header) - len(cells)))
    if not header:
        raise ValueError("no table with an 'Operator' column")
    return header, rows


def opsets_stated(text: str) -> tuple[list[int], str]:
    """The default-domain opsets the text above the table states, and the sentence saying so
    (([], "") where it states none). "up to Opset 17" states no lower end: opsets from 1."""
    for sentence in re.split(r"(?<=\.)\s+|\n", text):
        if found := re.search(r"inclusive range of opset (\d+) to opset (\d+)", sentence, re.I):
            return list(range(int(found.group(1)), int(found.group(2)) + 1)), sentence.strip()
        if found := re.search(r"up to opset (\d+)", sentence, re.I):
            return list(range(1, int(found.group(1)) + 1)), sentence.strip()
    return [], ""


def version_ranges(text: str) -> list[list[int | None]]:
    """``7-12,13,14+`` as [[7, 12], [13, 13], [14, None]] (None: no upper end)."""
    ranges: list[list[int | None]] = []
    for part in text.split(","):
        part = part.strip()
        if found := re.fullmatch(r"(\d+)-(\d+)", part):
            ranges.append([int(found.group(1)), int(found.group(2))])
        elif found := re.fullmatch(r"(\d+)\+", part):
            ranges.append([int(found.group(1)), None])
        elif part.isdigit():
            ranges.append([int(part), int(part)])
        else:
            raise ValueError(f"not an opset range: {part!r}")
    return ranges


def clean(text: str) -> str:
    """A restriction cell as plain text: ``<br />`` as a space, runs of spaces as one."""
    return re.sub(r"\s+", " ", re.sub(r"<br\s*/?>", " ", text)).strip()


def read_table(text: str, described: dict[str, str] | None = None) -> dict:
    """What the table says: ``ops`` (per default-domain op: ``listed`` Y or N, ``types`` onnx's
    names or None where the table names none, ``versions`` ranges or None, ``restriction``),
    ``other_domains`` (ops listed only for another domain, with the cell), ``opsets`` and
    ``opsets_stated`` (the sentence), and ``unread`` (each cell part not understood)."""
    header, rows = table_rows(text)
    column = {name.lower(): index for index, name in enumerate(header)}
    ops: dict[str, dict] = {}
    other_domains: dict[str, str] = {}
    unread: list[str] = []
    for cells in rows:
        op = cells[0].strip("` ")
        if not op:
            continue
        entry: dict = {"listed": "Y", "types": None, "versions": None, "restriction": ""}
        if "supported" in column:
            entry["listed"] = cells[column["supported"]].strip().upper()
            if entry["listed"] not in ("Y", "N"):
                unread.append(f"{op}: 'Supported' is {entry['listed']!r}, not Y or N")
                continue
        if "supported types" in column and (cell := cells[column["supported types"]]):
            entry["table_types"] = cell
            types = []
            for token in re.findall(r"[A-Za-z0-9_]+", cell):
                name = onnx_type_name(token, described)
                if name is None:
                    unread.append(f"{op}: {token!r} names no single onnx element type")
                elif name not in types:
                    types.append(name)
            entry["types"] = types
        if "opset" in column:
            domains = dict(re.findall(r"([\w.]+)\(([^)]*)\)", cells[column["opset"]]))
            if DEFAULT_DOMAIN not in domains:
                other_domains[op] = cells[column["opset"]]
                continue
            entry["versions"] = version_ranges(domains[DEFAULT_DOMAIN])
            entry["table_versions"] = domains[DEFAULT_DOMAIN]
        for name in ("restrictions", "comments"):
            if name in column:
                entry["restriction"] = clean(cells[column[name]])
        if op in ops:
            unread.append(f"{op}: listed twice; the first row is read")
            continue
        ops[op] = entry
    opsets, sentence = opsets_stated(text.split("|", 1)[0])
    return {
        "columns": header,
        "ops": ops,
        "other_domains": other_domains,
        "opsets": opsets,
        "opsets_stated": sentence,
        "unread": unread,
    }


def table_profile(
    text: str, name: str, *, runtime: str, runtime_version: str, source: dict, described: dict[str, str] | None = None
) -> dict:
    """The profile JSON of table ``text`` (``source``: repo, path, ref, commit, ...; ``described``:
    the runtime's words on type names onnx lacks)."""
    table = read_table(text, described)
    columns = ", ".join(table["columns"])
    return {
        "kind": "table",
        "name": name,
        "runtime": runtime,
        "runtime_version": runtime_version,
        "source": {
            "kind": "table",
            **source,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "read": f"the table of columns {columns}"
            + ("; the opsets from the sentence above it" if table["opsets_stated"] else "; it states no opsets"),
            "opsets_stated": table["opsets_stated"],
        },
        "opsets": table["opsets"],
        "ops": table["ops"],
        "other_domains": table["other_domains"],
        "unread": table["unread"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", type=Path, help="the Markdown file, as the repository holds it")
    parser.add_argument("name", help="the target's name (lowering/target_profiles/NAME.json)")
    parser.add_argument("--repo", required=True, help="OWNER/REPO on GitHub")
    parser.add_argument("--path", required=True, help="the file's path in the repository")
    parser.add_argument("--ref", required=True, help="the branch or tag read")
    parser.add_argument("--commit", required=True, help="the commit read (40 hex digits)")
    parser.add_argument("--file-commit", help="the last commit that changed the file, where known")
    parser.add_argument("--via", help="how the commit was had, where not from the repository itself")
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--runtime-version", required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--type-described",
        action="append",
        default=[],
        metavar="NAME=WORDS",
        help="a type name of the table as the runtime's documentation describes its layout",
    )
    parser.add_argument("--type-source", help="where those words are (an address)")
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.type_described):
        parser.error("--type-described takes NAME=WORDS")
    described = {token.strip().upper(): words for token, words in (item.split("=", 1) for item in args.type_described)}
    for token, words in described.items():
        if type_of_layout(words) is None:
            parser.error(f"--type-described {token}: no single onnx element type has the layout {words!r}")
    if not re.fullmatch(r"[0-9a-f]{40}", args.commit):
        parser.error("--commit takes a full commit hash (40 hex digits)")
    source = {"repo": args.repo, "path": args.path, "ref": args.ref, "commit": args.commit}
    if args.file_commit:
        source["file_commit"] = args.file_commit
    if args.via:
        source["via"] = args.via
    if described:
        source["types_described"] = {token: {"words": words, "onnx": type_of_layout(words), "where": args.type_source}
                                     for token, words in described.items()}  # fmt: skip
    source["how"] = " ".join(
        ["python targets/read_table.py", *map(shlex.quote, sys.argv[1:] if argv is None else argv)]
    )
    profile = table_profile(
        args.table.read_text(),
        args.name,
        runtime=args.runtime,
        runtime_version=args.runtime_version,
        source=source,
        described=described,
    )
    out = args.out or PROFILES / f"{args.name}.json"
    out.write_text(json.dumps(profile, indent=1, sort_keys=True) + "\n")
    listed = [entry for entry in profile["ops"].values() if entry["listed"] == "Y"]
    partly = sum(1 for entry in listed if entry["restriction"])
    print(
        f"wrote {out}: {len(listed) - partly} ops supported, {partly} with restrictions, "
        f"{len(profile['ops']) - len(listed)} marked N; {len(profile['unread'])} cells unread"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
