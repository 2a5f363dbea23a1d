"""OpenVINO's CPU plugin, reading the ONNX model through its ONNX frontend, with the inference
precision hint at f32 (so the plugin does not run float32 models in bf16 or f16 where the machine
supports them). Inputs of dynamic shape are reshaped to the feeds' shapes before compiling."""

import ml_dtypes
import numpy as np
import onnx
import openvino as ov

VERSION = ov.__version__.split("-")[0]

CORE = ov.Core()
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}

# element types numpy has no dtype of its own for: their ml_dtypes counterparts, by OpenVINO type name
_ML_DTYPES = {
    "bf16": ml_dtypes.bfloat16,
    "f8e4m3": ml_dtypes.float8_e4m3fn,
    "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e8m0": getattr(ml_dtypes, "float8_e8m0fnu", None),
}
# four-bit types, two to a byte (low nibble first, as in ONNX)
_NIBBLES = {
    "i4": getattr(ml_dtypes, "int4", None),
    "u4": getattr(ml_dtypes, "uint4", None),
    "f4e2m1": getattr(ml_dtypes, "float4_e2m1fn", None),
}
_OV_TYPE_OF = {np.dtype(t).name: name for name, t in {**_ML_DTYPES, **_NIBBLES}.items() if t is not None}


def _type_name(element_type) -> str:
    return element_type.get_type_name()


def _own(shared: ov.Tensor) -> ov.Tensor:
    """A copy of a tensor that shares a numpy array's memory, holding its own."""
    tensor = ov.Tensor(shared.get_element_type(), shared.get_shape())
    shared.copy_to(tensor)
    return tensor


def _to_tensor(value) -> ov.Tensor:
    if value is None or isinstance(value, (list, dict)):
        raise TypeError(f"no OpenVINO tensor for a feed of type {type(value).__name__} (sequence, map or optional)")
    array = np.asarray(value)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        array = array.copy(order="C")
    name = _OV_TYPE_OF.get(array.dtype.name)
    if name is not None and array.size == 0:
        return ov.Tensor(getattr(ov.Type, name), ov.Shape(list(array.shape)))
    if name in _NIBBLES:
        codes = array.reshape(-1).view(np.uint8) & 0x0F
        if codes.size % 2:
            codes = np.append(codes, np.uint8(0))
        packed = np.ascontiguousarray(codes[0::2] | (codes[1::2] << 4))
        return _own(ov.Tensor(packed, ov.Shape(list(array.shape)), getattr(ov.Type, name)))
    if name is not None:
        return _own(ov.Tensor(array.reshape(-1).view(np.uint8), ov.Shape(list(array.shape)), getattr(ov.Type, name)))
    if array.dtype.kind in "OU":  # strings
        array = array.astype(str)
    return ov.Tensor(array)


def _from_tensor(tensor: ov.Tensor) -> np.ndarray:
    name = _type_name(tensor.get_element_type())
    shape = tuple(tensor.get_shape())
    if name == "string":
        return np.array(tensor.str_data, dtype=object).reshape(shape)
    if name in _NIBBLES and _NIBBLES[name] is not None:
        packed = np.array(tensor.data, copy=True).reshape(-1).view(np.uint8)
        codes = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(-1)[: int(np.prod(shape, dtype=np.int64))]
        if name == "i4":
            values = codes.astype(np.int8)
            values[values >= 8] -= 16
            return values.astype(_NIBBLES[name]).reshape(shape)
        return codes.view(_NIBBLES[name]).reshape(shape)
    if name in _ML_DTYPES and _ML_DTYPES[name] is not None:
        return np.array(tensor.data, copy=True).reshape(-1).view(np.uint8).view(_ML_DTYPES[name]).reshape(shape)
    return np.array(tensor.data, copy=True)


def _fits(port, value) -> bool:
    if not isinstance(value, np.ndarray):
        return False
    tensor = _to_tensor(value)
    return port.get_element_type() == tensor.get_element_type() and port.get_partial_shape().compatible(
        ov.PartialShape(list(tensor.get_shape()))
    )


def run(model_bytes: bytes, feeds: dict) -> list:
    proto = onnx.load_from_string(model_bytes)
    initialized = {i.name for i in proto.graph.initializer}
    input_names = [i.name for i in proto.graph.input if i.name not in initialized]
    output_names = [o.name for o in proto.graph.output]
    model = CORE.read_model(model=model_bytes)

    # the graph input each OpenVINO parameter stands for: by tensor name, and where one has lost its
    # name (an input passed straight to an output carries the output's name) the first graph input
    # left of its element type and shape, in order (OpenVINO keeps the graph's input order but drops
    # inputs that nothing uses)
    names = [next((n for n in input_names if n in port.get_names()), None) for port in model.inputs]
    unused = [n for n in input_names if n not in names]
    for index, port in enumerate(model.inputs):
        if names[index] is None:
            names[index] = next((n for n in unused if _fits(port, feeds.get(n))), None)
            if names[index] is None:
                raise RuntimeError(
                    f"cannot pair OpenVINO input {port.get_names()} with the graph's inputs {input_names}"
                )
            unused.remove(names[index])
    missing = [name for name in names if name not in feeds]
    if missing:
        raise KeyError(f"no feed for inputs {missing}")
    tensors = [_to_tensor(feeds[name]) for name in names]

    if any(port.get_partial_shape().is_dynamic for port in model.inputs):
        try:
            shapes = zip(model.inputs, tensors, strict=False)
            model.reshape({port: ov.PartialShape(list(t.get_shape())) for port, t in shapes})
        except Exception:  # keep it dynamic: the CPU plugin runs dynamic shapes too
            model = CORE.read_model(model=model_bytes)

    compiled = CORE.compile_model(model, "CPU", CONFIG)
    request = compiled.create_infer_request()
    for port, tensor in zip(compiled.inputs, tensors, strict=False):
        request.set_tensor(port, tensor)
    request.infer()

    outputs = list(compiled.outputs)
    ports = []
    for index, name in enumerate(output_names):
        port = next((p for p in outputs if name in p.get_names()), None)
        if port is None:
            if len(outputs) != len(output_names):
                raise RuntimeError(f"OpenVINO model has no output named {name!r}")
            port = outputs[index]
        ports.append(port)
    return [_from_tensor(request.get_tensor(port)) for port in ports]
