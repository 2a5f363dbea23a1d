"""Max, Min, Sum and Mean of one operand lowered to an Identity of it."""

from __future__ import annotations

from lowering import schemas
from lowering.registry import Builder, NotLowered, Value, rule

OPS = ("Max", "Min", "Sum", "Mean")
EMITS = ("Identity",)
LEGACY_ATTRIBUTE = "consumed_inputs"  # (version 1's, an optimisation hint of no meaning: not taken)


def operand_itself(b: Builder, *operands: Value) -> Value:
    """Max(x) = Min(x) = Sum(x) = Mean(x) = Identity(x).

    The one operand is the answer, every bit of it (NaN payloads, -0; onnxruntime's float16 Sum
    and float Mean of one operand quiet a signalling NaN, which the Identity keeps, NaN for NaN):
    rknn's simulator crashes on a Max of one input and runs an Identity. Two operands or more
    are the op's own work: declined."""
    if len(operands) != 1:
        raise NotLowered(f"{len(operands)} operands are the op's own work: one alone is its answer")
    return b.Identity(operands[0])


for op_type in OPS:
    versions = tuple(
        version
        for version in schemas.op_versions(op_type)
        if LEGACY_ATTRIBUTE not in schemas.schema_in_force(op_type, version).attributes
    )
    rule(op_type, versions=versions, emits=EMITS, most_inputs=1)(operand_itself)
