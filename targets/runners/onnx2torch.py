"""onnx2torch (PyPI ``onnx2torch``): the ONNX model converted to a PyTorch module, run by PyTorch
on the CPU.

The model is converted by ``onnx2torch.convert(model)`` (onnx's shape inference first, then one
torch module per node, the converter chosen by the op and the model's opset, in a
``torch.fx.GraphModule``); the module is put in eval mode and called under ``torch.no_grad()``
with one torch tensor per graph input that is not an initializer, in the graph's order.

Feeds become tensors of the same element type (``torch.from_numpy``; ml_dtypes' bfloat16 and
float8 through their bits, as torch's own bfloat16 and float8 types). A feed that is no tensor
(a sequence, a map, an optional), strings, and the 4-bit types (torch has no unpacked tensor of
them) are refused here. The module gives one result per ONNX node that makes a graph output
(that node's output where it has one, a tuple of its outputs where it has several), one value
alone or a tuple of them; each graph output is picked out of that as onnx2torch's own graph
picks a node's output. Outputs come back as numpy arrays of the dtype torch gives (bfloat16 and
float8 as ml_dtypes' types), never cast: where torch computes another type than the ONNX graph
declares, the case is not right. A list (a sequence) comes back as a list of arrays.

onnx2torch imports torchvision (for NonMaxSuppression and RoiAlign); beside torch +cpu, PyPI's
torchvision does not load, and ``PYTHONPATH=targets/stand_ins`` puts a stand-in first whose ops
fail, saying so (docs/targets.md).
"""

from importlib.metadata import version

import ml_dtypes
import numpy as np
import onnx
import onnx2torch
import torch

from . import fed_names

VERSION = version("onnx2torch")

# ml_dtypes' types and torch's, moved as raw bits of the same width
_BITS = {
    np.dtype(ml_dtypes.bfloat16): (torch.bfloat16, np.uint16, torch.int16),
    np.dtype(ml_dtypes.float8_e4m3fn): (torch.float8_e4m3fn, np.uint8, torch.uint8),
    np.dtype(ml_dtypes.float8_e5m2): (torch.float8_e5m2, np.uint8, torch.uint8),
    np.dtype(ml_dtypes.float8_e4m3fnuz): (torch.float8_e4m3fnuz, np.uint8, torch.uint8),
    np.dtype(ml_dtypes.float8_e5m2fnuz): (torch.float8_e5m2fnuz, np.uint8, torch.uint8),
}
if hasattr(torch, "float8_e8m0fnu") and hasattr(ml_dtypes, "float8_e8m0fnu"):
    _BITS[np.dtype(ml_dtypes.float8_e8m0fnu)] = (torch.float8_e8m0fnu, np.uint8, torch.uint8)
_BACK = {torch_type: (dtype, raw) for dtype, (torch_type, _, raw) in _BITS.items()}


def _to_torch(name: str, value) -> torch.Tensor:
    if value is None or isinstance(value, (list, tuple, dict)):
        raise TypeError(f"input {name!r} is a {type(value).__name__}: no torch tensor for a sequence, map or optional")
    array = np.array(value, copy=True)  # (writable and contiguous, its own memory)
    if array.dtype.kind in "OUS":
        raise TypeError(f"input {name!r} holds strings: torch's tensors take none")
    if array.dtype in _BITS:
        torch_type, bits, _ = _BITS[array.dtype]
        return torch.from_numpy(array.view(bits)).view(torch_type)
    if array.dtype.type.__module__ == "ml_dtypes":
        raise TypeError(f"input {name!r} is {array.dtype}: torch has no tensor of that type unpacked")
    return torch.from_numpy(array)


def _to_numpy(value):
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype in _BACK:
            dtype, raw = _BACK[value.dtype]
            return value.view(raw).numpy().view(dtype)
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return [_to_numpy(item) for item in value]
    if isinstance(value, (bool, int, float)):
        return np.asarray(value)
    raise TypeError(f"onnx2torch output of type {type(value).__name__} has no numpy equivalent here")


def run(model_bytes: bytes, feeds: dict) -> list:
    model = onnx.load_from_string(model_bytes)
    names = fed_names(model.graph.input, model.graph.initializer, feeds)
    tensors = [_to_torch(name, feeds[name]) for name in names]
    module = onnx2torch.convert(model)
    module.eval()
    with torch.no_grad():
        result = module(*tensors)

    # (the graph's outputs by the node making each, the nodes in order of first use, as convert() lists them)
    made_by = {name: (index, position) for index, node in enumerate(model.graph.node)
               for position, name in enumerate(node.output) if name}  # fmt: skip
    producers = [made_by[o.name] for o in model.graph.output]
    nodes = list(dict.fromkeys(index for index, _ in producers))
    if len(nodes) == 1:
        per_node = {nodes[0]: result}
    elif isinstance(result, (tuple, list)) and len(result) == len(nodes):
        per_node = dict(zip(nodes, result, strict=True))
    else:
        given = type(result).__name__
        raise RuntimeError(f"onnx2torch's module gave {given}, not one result for each of {len(nodes)} nodes")
    outputs = []
    for index, position in producers:
        value = per_node[index]
        if len(model.graph.node[index].output) > 1:
            if not isinstance(value, (tuple, list)):
                op = model.graph.node[index].op_type
                raise RuntimeError(f"onnx2torch's {op} gave one {type(value).__name__} for its "
                                   f"{len(model.graph.node[index].output)} outputs")  # fmt: skip
            value = value[position]
        outputs.append(_to_numpy(value))
    return outputs
