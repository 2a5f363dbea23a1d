"""Writes the original side of every golden case (``*.onnxtxt``) in ONNX text syntax.

The expected side (``*.lowered.onnxtxt``) is written by the golden runner:
``pytest tests/test_golden.py --update-golden``. Run this file to add or change cases:
``python golden/make_cases.py``.
"""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import onnx.printer
from onnx import helper

HERE = Path(__file__).parent

ISINF_FLAGS = {
    "both": "",
    "positive": " <detect_negative = 0>",
    "negative": " <detect_positive = 0>",
    "neither": " <detect_positive = 0, detect_negative = 0>",
}

ISNAN_CASES = [
    (9, "float"), (9, "double"), (9, "float16"), (10, "float"),
    (11, "float"), (11, "float16"), (12, "double"),
    (13, "float"), (13, "bfloat16"), (19, "float16"),
    (20, "float"), (20, "double"), (20, "float16"), (20, "bfloat16"),
    (20, "float8e4m3fn"), (20, "float8e4m3fnuz"), (20, "float8e5m2"), (20, "float8e5m2fnuz"),
    (28, "float"), (28, "bfloat16"),
]  # fmt: skip

ISINF_CASES = (
    [(10, "float", flags) for flags in ISINF_FLAGS]
    + [(10, "double", "both"), (11, "float", "both"), (12, "double", "positive"), (13, "float", "negative")]
    + [(19, "double", "both")]
    + [(20, t, flags) for t in ("float", "float16", "bfloat16", "float8e5m2") for flags in ISINF_FLAGS]
    + [(20, t, "both") for t in ("double", "float8e4m3fn", "float8e4m3fnuz", "float8e5m2fnuz")]
    + [(28, "float16", "both")]
)


def header(opset: int, extra: str = "") -> str:
    ir_version = helper.find_min_ir_version_for([helper.make_opsetid("", opset)])
    return f'<ir_version: {max(ir_version, 8)}, opset_import: ["" : {opset}{extra}]>'


def unary_case(op_type: str, opset: int, element_type: str, attributes: str = "") -> str:
    return f"""{header(opset)}
main ({element_type}[N] x) => (bool[N] y) {{
    y = {op_type}{attributes} (x)
}}"""


SPECIAL_CASES = {
    "subgraphs/if_branch_outer_scope_opset16": f"""{header(16)}
main (float[N] x, double[M] h, bool c) => (bool[N] y, bool[M] z) {{
    y = If (c) <
        then_branch = then_graph () => (bool[N] t) {{ t = IsNaN (x) }},
        else_branch = else_graph () => (bool[N] e) {{ e = IsInf (x) }}
    >
    z = If (c) <
        then_branch = then_half () => (bool[M] th) {{ th = IsInf <detect_negative = 0> (h) }},
        else_branch = else_half () => (bool[M] eh) {{ eh = IsNaN (h) }}
    >
}}""",
    "functions/local_function_bfloat16_opset20": f"""{header(20, ', "local" : 1')}
main (bfloat16[N] x) => (bool[N] y) {{
    y = local.NonFinite (x)
}}
<domain: "local", opset_import: ["" : 20]>
NonFinite (v) => (flag) {{
    nan = IsNaN (v)
    inf = IsInf (v)
    flag = Or (nan, inf)
}}""",
    "mixed/shared_constants_opset13": f"""{header(13)}
main (float[N] x, double[M] d) => (bool[N] any_inf, bool[N] pos_inf, bool[M] nan_or_neg) {{
    any_inf = IsInf (x)
    pos_inf = IsInf <detect_negative = 0> (x)
    nan = IsNaN (d)
    neg = IsInf <detect_positive = 0> (d)
    nan_or_neg = Or (nan, neg)
}}""",
}


def all_cases() -> dict[str, str]:
    cases = {}
    for opset, element_type in ISNAN_CASES:
        cases[f"isnan/opset{opset}_{element_type}"] = unary_case("IsNaN", opset, element_type)
    for opset, element_type, flags in ISINF_CASES:
        cases[f"isinf/opset{opset}_{element_type}_{flags}"] = unary_case(
            "IsInf", opset, element_type, ISINF_FLAGS[flags]
        )
    cases.update(SPECIAL_CASES)
    return cases


def main() -> None:
    for name, text in all_cases().items():
        model = onnx.parser.parse_model(text)
        onnx.checker.check_model(model, full_check=True)
        path = HERE / f"{name}.onnxtxt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(onnx.printer.to_text(model) + "\n")


if __name__ == "__main__":
    main()
