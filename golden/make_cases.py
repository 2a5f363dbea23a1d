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


def optional_cases() -> dict[str, str]:
    """OptionalHasElement / OptionalGetElement cases, at opsets 15 (16 where If yields an
    optional), 18, 21 and 28."""
    cases = {}
    for opset in (15, 18, 21, 28):
        cases[f"optional/from_value_opset{opset}"] = f"""{header(opset)}
main (float[N] x) => (bool has, float[N] y) {{
    o = Optional (x)
    has = OptionalHasElement (o)
    v = OptionalGetElement (o)
    y = Add (v, x)
}}"""
        cases[f"optional/empty_opset{opset}"] = f"""{header(opset)}
main (float[N] x) => (bool has, float[N] y) {{
    e = Optional <type = float[N]> ()
    has = OptionalHasElement (e)
    y = Identity (x)
}}"""
        cases[f"optional/outer_scope_in_subgraphs_opset{opset}"] = f"""{header(opset)}
main (float[N] x, bool c) => (float[N] y, float[N] z, float[N] s) {{
    o = Optional (x)
    y = If (c) <
        then_branch = then_graph () => (float[N] t) {{
            present = OptionalHasElement (o)
            value = OptionalGetElement (o)
            zero = Constant <value = float {{0.0}}> ()
            t = Where (present, value, zero)
        }},
        else_branch = else_graph () => (float[N] e) {{ e = Neg (x) }}
    >
    trips = Constant <value = int64 {{2}}> ()
    z = Loop (trips, c, x) <body = body (int64 i, bool cond, float[N] acc) => (bool cond_out, float[N] acc_out) {{
        cond_out = Identity (cond)
        inner = Optional (acc)
        got = OptionalGetElement (inner)
        outer = OptionalGetElement (o)
        acc_out = Add (got, outer)
    }}>
    s = Scan (x) <num_scan_inputs = 1, body = scan_body (float element) => (float doubled) {{
        wrapped = Optional (element)
        unwrapped = OptionalGetElement (wrapped)
        doubled = Add (unwrapped, unwrapped)
    }}>
}}"""
        cases[f"optional/local_function_opset{opset}"] = f"""{header(opset, ', "local" : 1')}
main (float[N] x) => (float[N] y, bool has) {{
    y, has = local.Wrap (x)
}}
<domain: "local", opset_import: ["" : {opset}]>
Wrap (v) => (out, present) {{
    o = Optional (v)
    present = OptionalHasElement (o)
    out = OptionalGetElement (o)
}}"""
    for opset in (18, 21, 28):
        cases[f"optional/plain_and_absent_opset{opset}"] = f"""{header(opset)}
main (float[N] x) => (bool tensor_has, bool sequence_has, bool absent, bool empty_name, float[N] y, int64 n) {{
    tensor_has = OptionalHasElement (x)
    s = SequenceConstruct (x, x)
    sequence_has = OptionalHasElement (s)
    absent = OptionalHasElement ()
    empty_name = OptionalHasElement ("")
    y = OptionalGetElement (x)
    items = OptionalGetElement (s)
    n = SequenceLength (items)
}}"""
    for opset in (16, 18, 21, 28):
        cases[f"optional/if_split_opset{opset}"] = f"""{header(opset)}
main (float[N] x, float[N] y, bool keep) => (float[N] out, bool kept) {{
    maybe = If (keep) <
        then_branch = then_graph () => (optional(float[N]) some) {{
            two = Constant <value = float {{2.0}}> ()
            doubled = Mul (x, two)
            some = Optional (doubled)
        }},
        else_branch = else_graph () => (optional(float[N]) none) {{
            none = Optional <type = float[N]> ()
        }}
    >
    kept = OptionalHasElement (maybe)
    out = If (kept) <
        then_branch = add_graph () => (float[N] sum) {{
            value = OptionalGetElement (maybe)
            sum = Add (y, value)
        }},
        else_branch = sub_graph () => (float[N] difference) {{
            one = Constant <value = float {{1.0}}> ()
            difference = Sub (y, one)
        }}
    >
}}"""
        cases[f"optional/if_split_nested_sequence_opset{opset}"] = f"""{header(opset)}
main (float[N] x, bool outer, bool inner) => (bool has, int64 count) {{
    maybe = If (outer) <
        then_branch = outer_then () => (optional(seq(float[N])) from_inner) {{
            from_inner = If (inner) <
                then_branch = inner_then () => (optional(seq(float[N])) some) {{
                    items = SequenceConstruct (x, x, x)
                    some = Optional (items)
                }},
                else_branch = inner_else () => (optional(seq(float[N])) none) {{
                    none = Optional <type = seq(float[N])> ()
                }}
            >
        }},
        else_branch = outer_else () => (optional(seq(float[N])) none_outer) {{
            none_outer = Optional <type = seq(float[N])> ()
        }}
    >
    has = OptionalHasElement (maybe)
    count = If (has) <
        then_branch = count_graph () => (int64 n) {{
            got = OptionalGetElement (maybe)
            n = SequenceLength (got)
        }},
        else_branch = zero_graph () => (int64 zero) {{
            zero = Constant <value = int64 {{0}}> ()
        }}
    >
}}"""
    return cases


def version_cases() -> dict[str, str]:
    """Target-opset cases: ``NAME_to{N}`` lowers to opset N, ``NAME_to{N}_keep`` converts
    with ``ops=[]`` (keep what exists at N)."""
    cases = {
        "versions/isnan_opset20_float_to9": unary_case("IsNaN", 20, "float"),
        "versions/isnan_opset20_float_to11_keep": unary_case("IsNaN", 20, "float"),
        "versions/isnan_opset13_bfloat16_to13_keep": unary_case("IsNaN", 13, "bfloat16"),
        "versions/isnan_opset13_bfloat16_to20_keep": unary_case("IsNaN", 13, "bfloat16"),
        "versions/isnan_opset20_float8e4m3fn_to19_keep": unary_case("IsNaN", 20, "float8e4m3fn"),
        "versions/isinf_opset20_float16_to13_keep": unary_case("IsInf", 20, "float16", ISINF_FLAGS["positive"]),
        "versions/isinf_opset20_double_to9_keep": unary_case("IsInf", 20, "double"),
        "versions/isinf_opset10_float_to20_keep": unary_case("IsInf", 10, "float", ISINF_FLAGS["negative"]),
    }
    cases["versions/optional_has_element_tensor_opset18_to15_keep"] = f"""{header(18)}
main (float[N] x) => (bool has) {{
    has = OptionalHasElement (x)
}}"""
    mixed = f"""{header(13)}
main (float[N, 1] x, bool c) => (float[N] clean, float total) {{
    axes = Constant <value = int64[1] {{1}}> ()
    flat = Squeeze (x, axes)
    nan = IsNaN (flat)
    zero = Constant <value = float {{0.0}}> ()
    clean = Where (nan, zero, flat)
    total = If (c) <
        then_branch = sum_graph () => (float s) {{ s = ReduceSum <keepdims = 0> (clean) }},
        else_branch = neg_graph () => (float n) {{
            negated = Neg (clean)
            n = ReduceSum <keepdims = 0> (negated)
        }}
    >
}}"""
    cases["versions/mixed_opset13_to11"] = mixed
    cases["versions/mixed_opset13_to18_keep"] = mixed
    return cases


def rule_cases() -> dict[str, str]:
    """Ops without a function body that their own rules lower (``_lower-Op``) or that a target
    opset lacks (``_to{N}``): CumProd (an axis of 8, every float16 bit pattern along it),
    Einsum (attention scores; a contraction that sums indices of each operand first) and Resize
    upsampling by 2 (at static shapes its lengths are constants: no Shape, no Range left; with
    a dynamic batch only that axis's length is read at run time)."""
    return {
        "rules/cumprod_opset26_float16_exclusive_lower-CumProd": f"""{header(26)}
main (float16[N, 8] x) => (float16[N, 8] y) {{
    axis = Constant <value = int64 {{1}}> ()
    y = CumProd <exclusive = 1> (x, axis)
}}""",
        "rules/cumprod_opset26_float_reverse_to17": f"""{header(26)}
main (float[N, 5] x) => (float[N, 5] y) {{
    axis = Constant <value = int64 {{-1}}> ()
    y = CumProd <reverse = 1> (x, axis)
}}""",
        "rules/einsum_opset12_float_attention_to11": f"""{header(12)}
main (float[2, 4, 7, 16] q, float[2, 4, 9, 16] k) => (float[2, 4, 7, 9] scores) {{
    scores = Einsum <equation = "bhqd,bhkd->bhqk"> (q, k)
}}""",
        "rules/einsum_opset12_float_sums_lower-Einsum": f"""{header(12)}
main (float[3, 4, 5] a, float[6, 5, 7] b) => (float[4, 6] y) {{
    y = Einsum <equation = "ijk,lkm->jl"> (a, b)
}}""",
        "rules/resize_opset19_float_nearest_lower-Resize": f"""{header(19)}
main (float[1, 2, 3, 4] x) => (float[1, 2, 6, 8] y) {{
    scales = Constant <value = float[4] {{1.0, 1.0, 2.0, 2.0}}> ()
    y = Resize <mode = "nearest"> (x, "", scales)
}}""",
        "rules/resize_opset19_float_nearest_batch_lower-Resize": f"""{header(19)}
main (float[N, 2, 3, 4] x) => (float[N, 2, 6, 8] y) {{
    scales = Constant <value = float[4] {{1.0, 1.0, 2.0, 2.0}}> ()
    y = Resize <mode = "nearest"> (x, "", scales)
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
    cases.update(optional_cases())
    cases.update(version_cases())
    cases.update(rule_cases())
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
