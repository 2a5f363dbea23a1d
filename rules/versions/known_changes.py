"""The known meaning changes of version steps that no adapter crosses, oldest first.

A node one of them affects goes through onnx's version converter, or is refused with the reason.
"""

from __future__ import annotations

from lowering.conversion.adapters import auto_pad_set, known_change, negative_axis

BINARY_LIMITED_BROADCAST = ("Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less")
known_change(
    (*BINARY_LIMITED_BROADCAST, "Gemm"),
    7,
    "version 7 broadcasts numpy-style; earlier versions broadcast only with broadcast=1, from the right",
    down_only=True,
)
known_change(("BatchNormalization", "Dropout"), 7, "before version 7 the node runs in training mode unless is_test=1")
known_change(("LSTM", "GRU", "RNN"), 7, "version 7 restates the recurrence (R transposed)")
known_change(("Max", "Min", "Sum", "Mean"), 8, "version 8 broadcasts its inputs numpy-style", down_only=True)
known_change(
    ("ConvTranspose",),
    11,
    "version 11 restates how auto_pad (and an output_shape, which pads by it) splits the padding",
    affects=lambda node: auto_pad_set(node) or any(a.name == "output_shape" for a in node.attribute),
)
known_change(
    (
        "ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Hardmax", "LogSoftmax", "Softmax", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
        "ReduceSum", "ReduceSumSquare", "Split", "Squeeze", "Unsqueeze", "TopK", "Scan",
    ),
    11,
    "negative axes are accepted from version 11",
    down_only=True,
    affects=negative_axis,
)  # fmt: skip
known_change(("Gather", "OneHot"), 11, "negative indices are accepted from version 11", down_only=True)
known_change(("GroupNormalization",), 21, "version 21 takes scale and bias per channel, not per group")
known_change(("Attention",), 24, "version 24 changes causal alignment and adds nonpad_kv_seqlen")
known_change(("Attention",), 25, "version 25 adds sliding windows and restates masking")
known_change(("Range",), 27, "version 27 accumulates float16 and bfloat16 in float by default (stash_type)")
