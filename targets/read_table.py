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

Three table forms are read, told apart by their header row. onnx-tensorrt's ``docs/operators.md``:
``| Operator | Supported | Supported Types | Restrictions |`` (Y or N; types as ``FP32, BF16,
INT64``), with the opsets it supports stated in a sentence above it. onnxruntime's
``js/web/docs/webgpu-operators.md``: ``| Operator | Opset | Comments |``, every row a supported op,
``ai.onnx(7-12,13+)`` the op versions its kernels take (``13+``: 13 alone), no types, no opsets stated. onnxruntime's
``docs/OperatorKernels.md``, one section per execution provider (``--section
CUDAExecutionProvider``): ``| Op Name | Parameters | OpSet Version | Types Supported |``, a row per
kernel (``[7, 12]``: the op versions it takes; ``13+``: version 13 alone, as onnxruntime matches a
kernel of no end version; a row with no op name is another kernel of
the op above), each kernel's types per type constraint (``**T** = tensor(float), ...``); a node's
element type is its first input's, so a kernel's types are those of the constraint its first
input (its first output where it has none) is bound to. No opsets are stated. An op onnxruntime
runs with no kernel at all (a Constant node: the graph loader makes it an initializer) is in
neither of its tables; ``--without-kernel "Constant=<onnxruntime's words>"`` names it, with where
the words are (``--without-kernel-source``), and the profile takes it as supported on every type.

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


def opsets_of_release(sentence: str, onnx_release: str) -> tuple[list[int], str, int]:
    """The opsets a runtime loads where its table states none: from the oldest its ``sentence``
    names ("... back to (and including) opset version 7.", onnxruntime's ``docs/Versioning.md``)
    to the newest default-domain opset of the ``onnx_release`` it is built with (onnx's
    ``helper.VERSION_TABLE``: 1.18.0 defines opsets up to 23); what is stated, in words; and the
    newest IR version it loads, that release's (1.18.0: 11; onnxruntime refuses a newer one:
    "Unsupported model IR version")."""
    found = re.search(r"back to \(and including\) opset version (\d+)", sentence, re.IGNORECASE)
    if found is None:
        raise ValueError(f"the sentence names no oldest opset: {sentence!r}")
    rows = [row for row in helper.VERSION_TABLE if row[0] == onnx_release]
    if not rows:
        raise ValueError(f"onnx's VERSION_TABLE has no release {onnx_release!r}")
    oldest, (_, ir_version, newest, *_) = int(found.group(1)), rows[0]
    stated = f"{sentence.strip()} Built with onnx {onnx_release} (opsets to {newest}, IR version {ir_version})."
    return list(range(oldest, newest + 1)), stated, ir_version


ONLY_ITS_OWN = (  # (onnxruntime/core/framework/kernel_registry.cc, VerifyVersion)
    "onnxruntime matches a kernel registered with no end version only to nodes of its own version: "
    '"all we know is that the kernel supported the start version when it was created"'
)


def version_ranges(text: str) -> list[list[int]]:
    """``7-12,13,14+`` as [[7, 12], [13, 13], [14, 14]]: onnxruntime's tables write a kernel of no
    end version ``14+``, and onnxruntime takes it for version 14 alone (:data:`ONLY_ITS_OWN`)."""
    ranges: list[list[int | None]] = []
    for part in text.split(","):
        part = part.strip()
        if found := re.fullmatch(r"(\d+)-(\d+)", part):
            ranges.append([int(found.group(1)), int(found.group(2))])
        elif found := re.fullmatch(r"(\d+)\+", part):
            ranges.append([int(found.group(1)), int(found.group(1))])
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


KERNEL_SECTION = re.compile(r"^## Operators implemented by (\w+)[ \t]*$", re.MULTILINE)
_DOMAIN_ROW = re.compile(r"\*\*Operator Domain:\*\*\s*\*([\w.]+)\*")
_ALTERNATIVES = re.compile(r"<br>\s*<br>\s*or\s*<br>\s*<br>")  # (the signatures of an op's versions)
_FIRST_VALUE = re.compile(r"\*(?:in|out)\*\s*[\w.]+:\*\*([^*]+)\*\*")


def kernel_section(text: str, provider: str) -> str:
    """The section of onnxruntime's ``OperatorKernels.md`` headed "Operators implemented by
    ``provider``" (up to the next such heading)."""
    parts = KERNEL_SECTION.split(text)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))
    if provider not in sections:
        raise ValueError(f"no section 'Operators implemented by {provider}' (the file has: {', '.join(sections)})")
    return sections[provider]


def kernel_versions(cell: str) -> list[int]:
    """A kernel's op versions, as :func:`version_ranges` reads one range: ``[7, 12]`` (written
    ``7-12`` there) as [7, 12], ``13`` as [13, 13], ``13+`` as [13, 13] too."""
    (versions,) = version_ranges(re.sub(r"^\[(\d+),\s*(\d+)\]$", r"\1-\2", cell.strip()))
    return versions


def constraint_types(cell: str) -> dict[str, list[str]]:
    """Each type constraint of a ``Types Supported`` cell with the tensor types it lists, as
    written (``**T** = tensor(float), seq(tensor(float))`` gives {"T": ["float"]}: sequences and
    optionals are not a tensor's element type)."""
    found: dict[str, list[str]] = {}
    for part in re.split(r"<br\s*/?>", cell):
        if match := re.fullmatch(r"\s*\*\*(\w+)\*\*\s*=\s*(.*?)\s*", part):
            items = [item.strip() for item in match.group(2).split(",")]
            found[match.group(1)] = [m.group(1) for item in items if (m := re.fullmatch(r"tensor\((\w+)\)", item))]
    return found


def first_value_types(parameters: str, constraints: dict[str, list[str]]) -> list[str] | None:
    """The tensor types a kernel takes on the op's first input (its first output where it has
    none): of the first of the signatures in ``parameters`` whose first value's constraint the
    kernel lists, or names as a type (``**tensor(int64)**``); None where none does."""
    for signature in _ALTERNATIVES.split(parameters):
        found = _FIRST_VALUE.search(signature)
        if found is None:
            continue
        constraint = found.group(1).strip()
        if literal := re.fullmatch(r"tensor\((\w+)\)", constraint):
            return [literal.group(1)]
        if constraint in constraints:
            return constraints[constraint]
    return None


def read_kernel_table(text: str, provider: str) -> dict:
    """What onnxruntime's ``OperatorKernels.md`` says of ``provider``'s kernels, in the form
    :func:`read_table` gives: per default-domain op its ``kernels`` (each one's op ``versions``
    and the ``types`` its first input takes, onnx's names, or None where the table names none)."""
    ops: dict[str, dict] = {}
    other_domains: dict[str, str] = {}
    unread: list[str] = []
    domain, op, parameters = "", "", ""
    for line in kernel_section(text, provider).splitlines():
        line = line.strip()
        if not line.startswith("|"):
            continue
        cells = [
            cell.strip() for cell in line.removeprefix("|").removesuffix("|").split("|")
        ]  # (leading empty cells kept)
        if found := _DOMAIN_ROW.search(cells[0]):
            domain = found.group(1)
            continue
        if cells[0] == "Op Name" or all(re.fullmatch(r":?-*:?", cell) for cell in cells):
            continue  # (the header, the rule under it)
        if len(cells) != 4:
            unread.append(f"{line[:80]}: not 4 cells")
            continue
        if cells[0]:
            op, parameters = cells[0], cells[1]
        if domain != DEFAULT_DOMAIN:
            other_domains.setdefault(op, domain)
            continue
        types = first_value_types(cells[1] or parameters, constraint_types(cells[3]))
        names = None
        if types is not None:
            names = [onnx_type_name(token) for token in types]
            unread += [
                f"{op}: {token!r} names no single onnx element type"
                for token, name in zip(types, names, strict=True)
                if not name
            ]
            names = [name for name in names if name]
        entry = ops.setdefault(op, {"listed": "Y", "types": None, "table_versions": "", "restriction": "",
                                    "kernels": []})  # fmt: skip
        entry["kernels"].append({"versions": kernel_versions(cells[2]), "types": names})
        entry["table_versions"] = ", ".join(filter(None, [entry["table_versions"], cells[2]]))
    return {
        "columns": ["Op Name", "Parameters", "OpSet Version", "Types Supported"],
        "ops": ops,
        "other_domains": {op: domain for op, domain in other_domains.items() if op not in ops},
        "opsets": [],
        "opsets_stated": "",
        "unread": unread,
    }


def _opsets_read(table: dict, from_release: bool) -> str:
    if from_release:
        return "; the opsets from the runtime's words and its onnx release"
    return "; the opsets from the sentence above it" if table["opsets_stated"] else "; it states no opsets"


def _words_by_name(parser: argparse.ArgumentParser, items: list[str], option: str) -> dict[str, str]:
    """``NAME=WORDS`` items of an option given again and again, by name."""
    if any("=" not in item for item in items):
        parser.error(f"{option} takes NAME=WORDS")
    return dict(item.split("=", 1) for item in items)


def table_profile(
    text: str,
    name: str,
    *,
    runtime: str,
    runtime_version: str,
    source: dict,
    described: dict[str, str] | None = None,
    section: str | None = None,
    without_kernel: dict[str, str] | None = None,
    opsets: tuple[list[int], str, int] | None = None,
) -> dict:
    """The profile JSON of table ``text`` (``source``: repo, path, ref, commit, ...; ``described``:
    the runtime's words on type names onnx lacks; ``section``: the execution provider whose
    kernels onnxruntime's ``OperatorKernels.md`` lists; ``without_kernel``: ops the runtime runs
    with no kernel, in its words)."""
    if section is not None:
        table = read_kernel_table(text, section)
        source = {**source, "section": section}
    else:
        table = read_table(text, described)
    for op, words in (without_kernel or {}).items():  # (supported on every type, in the runtime's words)
        if op in table["ops"]:
            raise ValueError(f"{op} is in the table: it is not run without a kernel")
        table["ops"][op] = {"listed": "Y", "types": None, "versions": None, "restriction": "", "without_kernel": words}
    if opsets is not None:  # (stated elsewhere than above the table: :func:`opsets_of_release`)
        table["opsets"], table["opsets_stated"], table["ir_version"] = opsets
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
            "read": f"the table of columns {columns}" + _opsets_read(table, opsets is not None),
            "opsets_stated": table["opsets_stated"],
        },
        "opsets": table["opsets"],
        "ops": table["ops"],
        "other_domains": table["other_domains"],
        "unread": table["unread"],
        **({"ir_version": table["ir_version"]} if "ir_version" in table else {}),
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

    def words_option(option: str, helped: str) -> None:
        parser.add_argument(option, action="append", default=[], metavar="NAME=WORDS", help=helped)

    words_option("--type-described", "a type name of the table as the runtime's documentation describes its layout")
    parser.add_argument("--type-source", help="where those words are (an address)")
    parser.add_argument(
        "--section", metavar="PROVIDER", help="onnxruntime's OperatorKernels.md: the execution provider read"
    )
    words_option("--without-kernel", "an op the runtime runs with no kernel, in the runtime's own words")
    parser.add_argument("--without-kernel-source", help="where those words are")
    parser.add_argument(
        "--opsets-sentence",
        help="the runtime's sentence naming the oldest opset it loads ('... back to (and including) opset version 7')",
    )
    parser.add_argument("--opsets-sentence-source", help="where that sentence is")
    parser.add_argument(
        "--onnx-release", help="the onnx release the runtime is built with: its newest opset is the newest loaded"
    )
    parser.add_argument("--onnx-release-source", help="where that release is named")
    args = parser.parse_args(argv)
    without_kernel = _words_by_name(parser, args.without_kernel, "--without-kernel")
    if bool(args.opsets_sentence) != bool(args.onnx_release):
        parser.error("--opsets-sentence and --onnx-release are given together (the oldest and the newest opset)")
    stated = None
    if args.onnx_release:
        try:
            stated = opsets_of_release(args.opsets_sentence, args.onnx_release)
        except ValueError as error:
            parser.error(str(error))
    given = _words_by_name(parser, args.type_described, "--type-described")
    described = {token.strip().upper(): words for token, words in given.items()}
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
    if stated is not None:
        source["opsets_from"] = {
            "sentence": args.opsets_sentence,
            "where": args.opsets_sentence_source,
            "onnx_release": args.onnx_release,
            "onnx_release_where": args.onnx_release_source,
        }
    if without_kernel:
        source["without_kernel"] = {op: {"words": words, "where": args.without_kernel_source}
                                    for op, words in without_kernel.items()}  # fmt: skip
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
        section=args.section,
        without_kernel=without_kernel,
        opsets=stated,
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
