"""Conv and the pools across version 11, which restates auto_pad SAME: before 11 it pads "so that
the output spatial size match the input", from 11 so that the output holds ceil(size / stride)
values. Where every stride is 1 the two say the same padding; VALID pads nothing in both."""

from __future__ import annotations

import onnx

from lowering import schemas
from lowering.conversion.adapters import (
    KNOWN_CHANGES,
    AdapterContext,
    adapter,
    attribute_of,
    auto_pad_set,
    known_change,
    moved,
    require_types_taken,
    steps_between,
    text_attribute,
)
from lowering.errors import NotLowered

from .pool import pool_windows_proved_same

AUTO_PAD_11 = "version 11 restates the output shape under auto_pad"
POOLS = ("AveragePool", "MaxPool", "LpPool")
known_change(("Conv", *POOLS), 11, AUTO_PAD_11, affects=auto_pad_set)
LABEL = "auto_pad stated alike"


def _refused(node: onnx.NodeProto, context: AdapterContext, why: str) -> NotLowered:
    source = schemas.version_in_force(node.op_type, context.source_opset)
    target = schemas.version_in_force(node.op_type, context.target_opset)
    return NotLowered(
        f"{node.op_type}-{source} {why}, so it cannot go to opset {context.target_opset} "
        f"({node.op_type}-{target}: {AUTO_PAD_11})"
    )


def _says_its_absence(node: onnx.NodeProto, name: str, context: AdapterContext) -> bool:
    """Whether the node's attribute ``name`` holds what leaving it out says: the source schema's
    default (ceil_mode, storage_order, count_include_pad: 0), or dilations of 1, which the schemas
    state in words only ("defaults is 1 along each spatial axis")."""
    value = attribute_of(node, name)
    if name == "dilations":
        return all(d == 1 for d in value)
    declared = schemas.schema_in_force(node.op_type, context.source_opset).attributes.get(name)
    return (
        declared is not None
        and declared.default_value.type != 0
        and value == (onnx.helper.get_attribute_value(declared.default_value))
    )


def _moved_to_target(node: onnx.NodeProto, context: AdapterContext) -> onnx.NodeProto:
    """The node as it is at the target's version: an attribute the target lacks dropped where it
    says what its absence says (:func:`_says_its_absence`), else refused."""
    require_types_taken(node, context)
    taken = schemas.schema_in_force(node.op_type, context.target_opset).attributes
    dropped = []
    for attribute in node.attribute:
        if attribute.name in taken:
            continue
        if not _says_its_absence(node, attribute.name, context):
            value = attribute_of(node, attribute.name)
            raise _refused(node, context, f"sets {attribute.name}={value}, which the target's version cannot state")
        dropped.append(attribute.name)
    return moved(node, dropped=tuple(dropped))


# From the versions that take every attribute the pools' windows read but ceil_mode and dilations
# (MaxPool-8 storage_order, AveragePool-7 count_include_pad, LpPool-2 an integer p)
# Cases: backend pool cases to 7/8 and 10 and back (SAME with strides 2 refused), the explicit Conv cases
@adapter(("Conv",), 11, "up", LABEL, versions=(1, 22), cases=6)
@adapter(("MaxPool",), 11, "up", LABEL, versions=(8, 22), cases=6)
@adapter(("AveragePool",), 11, "up", LABEL, versions=(7, 22), cases=5)
@adapter(("LpPool",), 11, "up", LABEL, versions=(2, 22), cases=4)
@adapter(("Conv",), 11, "down", LABEL, versions=(1, 22), cases=6)
@adapter(("MaxPool",), 11, "down", LABEL, versions=(8, 22), cases=6)
@adapter(("AveragePool",), 11, "down", LABEL, versions=(7, 22), cases=5)
@adapter(("LpPool",), 11, "down", LABEL, versions=(2, 22), cases=4)
def auto_pad_stated_alike(node: onnx.NodeProto, context: AdapterContext) -> list[onnx.NodeProto] | None:
    """op-1..10(x, auto_pad=a) = op-11+(x, auto_pad=a) where a is VALID, or SAME with every stride 1; both ways.

    SAME before 11 pads so that the output is as long as the input; from 11 so that it holds
    ``ceil(size / stride)`` values: with every stride 1 both are ``size``, padded by
    ``(kernel - 1) * dilation`` in all, the odd one at the end (SAME_UPPER) or the start
    (SAME_LOWER) in both. VALID pads nothing in both. A pool that also crosses 12, 18, 19 or 22,
    or whose ceil_mode=1 the target cannot state, goes on as :func:`pool_windows_proved_same`
    proves its windows (attributes the older version lacks at their defaults dropped, 8-bit
    MaxPools in float). SAME with a stride above 1 is refused: the older versions' output cannot
    be as long as the input then, so they do not say which padding they mean. Any other node
    goes as it is, attributes the target lacks dropped where they say what their absence says."""
    auto_pad = text_attribute(node, "auto_pad", context.source_opset)
    strides = list(attribute_of(node, "strides") or [])
    if auto_pad in ("SAME_UPPER", "SAME_LOWER") and any(stride != 1 for stride in strides):
        raise _refused(
            node,
            context,
            f"pads by auto_pad {auto_pad} with strides {strides}: before version 11 SAME pads so that the output is "
            "as long as the input, which a stride above 1 cannot give",
        )
    source = schemas.version_in_force(node.op_type, context.source_opset)
    target = schemas.version_in_force(node.op_type, context.target_opset)
    crosses_later = any(
        step > 11 and (node.op_type, step) in KNOWN_CHANGES for step in steps_between(node.op_type, source, target)
    )
    target_attributes = schemas.schema_in_force(node.op_type, context.target_opset).attributes
    ceil_dropped = bool(attribute_of(node, "ceil_mode")) and "ceil_mode" not in target_attributes
    if node.op_type in POOLS and (crosses_later or ceil_dropped):
        return pool_windows_proved_same(node, context)
    return [_moved_to_target(node, context)]
