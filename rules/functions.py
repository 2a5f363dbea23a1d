"""Ops expanded into their own ONNX function body (LayerNormalization)."""

from __future__ import annotations

import onnx

from lowering.functions import Tolerance, function_expansion

TensorProto = onnx.TensorProto

# Measured against onnxruntime's fused kernel and a float64 numpy computation (tests/
# test_function_expansion.py), on the ONNX backend cases and on rows whose mean is at most 3
# standard deviations from 0. The body's Var = Mean(X²) − Mean(X)² loses about
# eps · (1 + Mean²/Var) to cancellation: rows further off-centre stray further.
# |got − want| <= atol + rtol·|want|, with atol = rtol:
#   float32: 2^-18 (about 32 float32 epsilons); worst seen 2.5e-6 on mean = 3·std rows, 9.5e-7
#     on the backend cases.
#   double: as float32 — stash_type 1 asks for the first stage in float32 (onnxruntime's kernel
#     computes it in double; the body follows the spec).
#   float16: 2^-10, one float16 epsilon; worst seen 4.5e-4 (about one output rounding).
#   bfloat16: 2^-7, one bfloat16 epsilon; worst seen 5.9e-3 (onnx.reference, which rounds
#     the body's Mul and Add each to bfloat16; onnxruntime has no bfloat16 Mul).
LAYER_NORMALIZATION_TOLERANCE = {
    TensorProto.FLOAT: Tolerance(rtol=2**-18, atol=2**-18),
    TensorProto.DOUBLE: Tolerance(rtol=2**-18, atol=2**-18),
    TensorProto.FLOAT16: Tolerance(rtol=2**-10, atol=2**-10),
    TensorProto.BFLOAT16: Tolerance(rtol=2**-7, atol=2**-7),
}


@function_expansion("LayerNormalization", versions=(17,), tolerance=LAYER_NORMALIZATION_TOLERANCE)
def layer_normalization_body(node: onnx.NodeProto) -> str | None:
    """LayerNormalization(X, Scale, B) = (X − Mean(X)) / Sqrt(Var(X) + epsilon) · Scale + B over
    the axes from `axis` on, computed in float32 (stash_type 1), with Var(X) = Mean(X²) − Mean(X)²
    (ONNX's own function body); Mean and InvStdDev, where the node names them, likewise.

    Within the stated tolerance for rows whose mean is within 3 standard deviations of 0: the
    cancellation in Mean(X²) − Mean(X)² grows with Mean²/Var (a constant float16 row of 60000
    gives Var below −epsilon, so NaN, where a two-pass kernel gives B).
    Holds while X² and the row sums stay finite in float32 (|X| below about 1.8e19): beyond, the
    body answers NaN or B where a kernel summing in double does not.
    Only stash_type 1: in bfloat16 the cancellation in Mean(X²) − Mean(X)² leaves no tolerance.
    """
    for attribute in node.attribute:
        if attribute.name == "stash_type" and attribute.i != TensorProto.FLOAT:
            name = (
                TensorProto.DataType.Name(attribute.i).lower()
                if attribute.i in TensorProto.DataType.values()
                else attribute.i
            )
            return f"stash_type {attribute.i} ({name}): the body's Mean(X²) − Mean(X)² is only accurate in float32"
    return None
