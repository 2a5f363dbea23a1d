"""Proving a lowered model means what its original means: inputs built to find wrong rewrites
(:mod:`.feeds`), both models run (:mod:`.runtime`: onnxruntime's CPU provider, or onnx's
reference evaluator), outputs compared bit for bit or within stated tolerances (:mod:`.compare`)."""

from .compare import OutputComparison, VerifyReport, check_tolerances, load_inputs, save_feeds, verify

__all__ = ["OutputComparison", "VerifyReport", "check_tolerances", "load_inputs", "save_feeds", "verify"]
