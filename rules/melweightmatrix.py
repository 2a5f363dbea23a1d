"""MelWeightMatrix (version 17, no function body) whose inputs are all constants, computed once."""

from __future__ import annotations

import numpy as np
from onnx import helper

from lowering.registry import Builder, NotLowered, Value, rule

# The most values the computed matrix may hold (as DFT's coefficient matrix).
LARGEST_MATRIX = 2**22

INPUTS = ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz")


def mel_weight_matrix_values(*inputs: np.ndarray, output_datatype: int = 1) -> np.ndarray:
    """The matrix onnx.reference computes from the five inputs (the spec's algorithm in numpy)."""
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("MelWeightMatrix", list(INPUTS), ["matrix"], output_datatype=output_datatype)
    return ReferenceEvaluator(node).run(None, dict(zip(INPUTS, inputs, strict=True)))[0]


@rule("MelWeightMatrix", versions=(17,), emits=("Constant",))
def mel_weight_matrix_computed(
    b: Builder,
    num_mel_bins: Value,
    dft_length: Value,
    sample_rate: Value,
    lower_edge_hertz: Value,
    upper_edge_hertz: Value,
    *,
    output_datatype: int = 1,
) -> Value:
    """MelWeightMatrix(n, l, r, lo, hi) of constant inputs = Constant(the matrix onnx.reference computes).

    The spec's algorithm (onnx.reference's op: the mel scale by log1p and expm1 in the inputs'
    types, the bins floored to integers, triangles of exact ratios of integers) run once on the
    constants; bit for bit with onnx.reference and with onnxruntime's MelWeightMatrix-17 on the
    configurations tested. Not lowered where an input is computed at run time (ONNX has no
    log1p or expm1, and a bin within a rounding of an integer would floor otherwise), or where
    the matrix would hold more than 2^22 values, or the algorithm fails on the constants.
    """
    values = [b.constant_value(v) for v in (num_mel_bins, dft_length, sample_rate, lower_edge_hertz, upper_edge_hertz)]
    given_at_run_time = [name for name, value in zip(INPUTS, values, strict=True) if value is None]
    if given_at_run_time:
        which = (
            f"input {given_at_run_time[0]} is"
            if len(given_at_run_time) == 1
            else "inputs " + ", ".join(given_at_run_time) + " are"
        )
        raise NotLowered(
            f"its {which} given at run time: the mel bins are floored from log1p and expm1, which ONNX "
            "lacks, so only constant inputs are computed (once)"
        )
    bins, length = int(np.asarray(values[0]).reshape(-1)[0]), int(np.asarray(values[1]).reshape(-1)[0])
    if bins < 0 or length < 0 or bins * (length // 2 + 1) > LARGEST_MATRIX:
        raise NotLowered(f"the matrix of {length // 2 + 1} x {bins} values is not one of at most 2^22 values")
    try:
        with np.errstate(all="ignore"):
            matrix = mel_weight_matrix_values(*values, output_datatype=output_datatype)
    except Exception as error:  # inputs the op fails on (onnxruntime's kernel fails on them too)
        raise NotLowered(
            f"the matrix cannot be computed from its constant inputs ({type(error).__name__}: {error})"
        ) from None
    return b.tensor(matrix, "mel_weight_matrix")
