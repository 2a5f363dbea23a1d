"""Constant across version 12 (value_float, value_ints, ... attributes), down as a `value` tensor."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from lowering import schemas
from lowering.conversion.adapters import AdapterContext, HeldAttributes, adapter, known_change
from lowering.errors import NotLowered

# What a scalar or list attribute of Constant holds, as a tensor: floats are float32 and ints
# int64 (AttributeProto's own types), strings strings; a list is 1-D, a scalar 0-D.
ATTRIBUTE_TENSORS = {
    onnx.AttributeProto.FLOAT: (onnx.TensorProto.FLOAT, False),
    onnx.AttributeProto.FLOATS: (onnx.TensorProto.FLOAT, True),
    onnx.AttributeProto.INT: (onnx.TensorProto.INT64, False),
    onnx.AttributeProto.INTS: (onnx.TensorProto.INT64, True),
    onnx.AttributeProto.STRING: (onnx.TensorProto.STRING, False),
    onnx.AttributeProto.STRINGS: (onnx.TensorProto.STRING, True),
}
# The attributes Constant-12 added (onnx.defs: those Constant-11 lacks), and the tensor of each.
VALUE_ATTRIBUTES = {
    name: ATTRIBUTE_TENSORS[int(attribute.type.value)]
    for name, attribute in schemas.schema_in_force("Constant", 12).attributes.items()
    if name not in schemas.schema_in_force("Constant", 11).attributes
}
CONSTANT_12 = "version 12 adds value_float(s), value_int(s) and value_string(s), which older versions lack"
known_change(
    ("Constant",),
    12,
    CONSTANT_12,
    down_only=True,
    affects=HeldAttributes.added_at(12, "Constant"),
)


# Cases: the explicit cases: the backend's Constant cases set value only
@adapter(("Constant",), 12, "down", "value as a tensor", versions=(1, 25), changed_only=True, cases=4)
def value_attribute_as_tensor(node: onnx.NodeProto, context: AdapterContext):
    """Constant-12+(value_float=f) = Constant-1/11(value=tensor(f)); value_int(s), value_float(s)
    and value_string(s) likewise: a scalar for the singular ones, a 1-D tensor for the lists.

    The tensor's type must be one the target's Constant takes (int64 from 9, strings from 9):
    else refused. ``sparse_value`` (from 11) has no form before 11 and is left to the converter,
    which refuses it."""
    found = [attribute for attribute in node.attribute if attribute.name in VALUE_ATTRIBUTES]
    if not found:
        return None
    (attribute,) = found
    element_type, is_list = VALUE_ATTRIBUTES[attribute.name]
    value = helper.get_attribute_value(attribute)
    if element_type == onnx.TensorProto.STRING:
        array = np.array(value if is_list else value, dtype=object)
    else:
        array = np.array(value, dtype=np.float32 if element_type == onnx.TensorProto.FLOAT else np.int64)
    accepted = schemas.output_element_types("Constant", context.target_opset)
    if element_type not in accepted:
        raise NotLowered(
            f"Constant with {attribute.name} holds {schemas.type_name(element_type)}, which "
            f"Constant at opset {context.target_opset} cannot hold, so it cannot go to opset {context.target_opset}"
        )
    tensor = numpy_helper.from_array(array, name="")
    if element_type == onnx.TensorProto.STRING:
        tensor = helper.make_tensor("", onnx.TensorProto.STRING, list(array.shape), list(value if is_list else [value]))
    copy = onnx.NodeProto()
    copy.CopyFrom(node)
    del copy.attribute[:]
    copy.attribute.extend([helper.make_attribute("value", tensor)])
    return [copy]
