"""Writes examples/isnan_isinf.onnx: a small model that sanitizes a float tensor with
IsNaN and IsInf, the shape exporters produce. Run: python examples/make_example.py"""

from pathlib import Path

import onnx
import onnx.parser

TEXT = """
<ir_version: 8, opset_import: ["" : 17], producer_name: "onnx-lower example">
sanitize (float[batch, 16] x) => (float[batch, 16] clean, bool[batch, 16] bad) {
    nan = IsNaN (x)
    inf = IsInf (x)
    positive_inf = IsInf <detect_negative = 0> (x)
    bad = Or (nan, inf)
    zero = Constant <value = float {0.0}> ()
    big = Constant <value = float {1e30}> ()
    capped = Where (positive_inf, big, x)
    clean = Where (bad, zero, capped)
}
"""

if __name__ == "__main__":
    model = onnx.parser.parse_model(TEXT)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, Path(__file__).with_name("isnan_isinf.onnx"))
