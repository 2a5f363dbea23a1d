"""onnx-lower: rewrite ONNX operators a runtime lacks into primitive ONNX operators."""

from .api import LoweringResult, lower, lower_model, rules_table
from .errors import ConversionRefused, IncompleteLowering, InternalError, LoweringError
from .patterns import PatternEntry, all_patterns
from .report import LoweringReport, RemainingOp
from .retyping import RetypeRefused, RetypeReport
from .targets import DEFAULT_TARGET, ONNXRUNTIME_CPU, Target
from .verification import OutputComparison, VerifyReport, verify

__all__ = [
    "RetypeRefused",
    "RetypeReport",
    "DEFAULT_TARGET",
    "ConversionRefused",
    "IncompleteLowering",
    "InternalError",
    "ONNXRUNTIME_CPU",
    "LoweringError",
    "LoweringReport",
    "LoweringResult",
    "OutputComparison",
    "PatternEntry",
    "RemainingOp",
    "Target",
    "all_patterns",
    "lower",
    "lower_model",
    "rules_table",
    "verify",
    "VerifyReport",
]
__version__ = "0.1.0"
