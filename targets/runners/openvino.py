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


def _to_tensor(value) -> ov.Tensor:
    if value is None or isinstance(value, (list, dict)):
        raise TypeError(f"no OpenVINO tensor for a feed of type {type(value).__name__} (sequence, map or optional)")
    array = np.ascontiguousarray(np.asarray(value))
    name = _OV_TYPE_OF.get(array.dtype.name)
    if name in _NIBBLES:
        codes = array.reshape(-1).view(np.uint8) & 0x0F
        if codes.size % 2:
            codes = np.append(codes, np.uint8(0))
        packed = np.ascontiguousarray(codes[0::2] | (codes[1::2] << 4))
        return ov.Tensor(packed, ov.Shape(list(array.shape)), getattr(ov.Type, name))
    if name is not None:
        return ov.Tensor(array.reshape(-1).view(np.uint8), ov.Shape(list(array.shape)), getattr(ov.Type, name))
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


def run(model_bytes: bytes, feeds: dict) -> list:
    output_names = [o.name for o in onnx.load_from_string(model_bytes).graph.output]
    model = CORE.read_model(model=model_bytes)

    by_name = {}
    for port in model.inputs:
        for name in port.get_names():
            by_name[name] = port
    missing = [p.get_any_name() for p in model.inputs if not (p.get_names() & feeds.keys())]
    if missing:
        raise KeyError(f"no feed for model inputs {missing}")
    tensors = {name: _to_tensor(value) for name, value in feeds.items() if name in by_name}

    if any(port.get_partial_shape().is_dynamic for port in model.inputs):
        try:
            model.reshape({by_name[name]: ov.PartialShape(list(t.get_shape())) for name, t in tensors.items()})
        except Exception:  # keep it dynamic: the CPU plugin runs dynamic shapes too
            model = CORE.read_model(model=model_bytes)
            by_name = {n: port for port in model.inputs for n in port.get_names()}

    compiled = CORE.compile_model(model, "CPU", CONFIG)
    request = compiled.create_infer_request()
    compiled_inputs = {n: port for port in compiled.inputs for n in port.get_names()}
    for name, tensor in tensors.items():
        request.set_tensor(compiled_inputs[name], tensor)
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
