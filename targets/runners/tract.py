"""Sonos tract through its Python bindings (PyPI ``tract``), default CPU runtime, optimized.

The model is loaded from a temporary file as an ``InferenceModel``; each input's fact (element
type and concrete shape) is set from its feed, so every case is fully typed; then the model is
optimized and made runnable the way each bindings version documents (0.21: ``into_optimized``;
0.22 and later: ``into_model`` then the default runtime's ``prepare``, which optimizes).

Tensors cross the boundary through the C API directly rather than through the bindings'
``from_numpy``/``to_numpy``: the 0.21 bindings read every output as float32 and turn rank-0
inputs into rank 1, which would be the bindings' artefacts rather than the runtime's behaviour.
Element types tract has no datum type for (strings, bfloat16, float8, int4, ...) are refused here.

tract computes shapes as symbolic dimensions (datum type TDim), and an output folded from a shape
(Shape, Size, ...) can come out as a TDim tensor, which the C API does not export. Such an output
is converted to int64 (what the ONNX graph declares): with ``tract_tensor_convert_to`` where the
bindings have it (0.22+); in 0.21, which lacks it, by running the model again with a ``Cast``
appended to that output (to int32: 0.21 folds a Cast of a TDim to int64 away, leaving the TDim),
then widening the int32 result to int64.
"""

import ctypes
import math
import os
import tempfile

os.environ["RUST_BACKTRACE"] = "0"  # tract's error messages, without a Rust backtrace appended
os.environ["RUST_LIB_BACKTRACE"] = "0"

import numpy as np
import onnx
import tract
from tract.bindings import lib

VERSION = tract.version()

_NEW_API = hasattr(tract, "Tensor")  # 0.22+: Tensor, Onnx.load, InferenceModel.into_model
_Box = tract.Tensor if _NEW_API else tract.Value
_from_bytes = lib.tract_tensor_from_bytes if _NEW_API else lib.tract_value_from_bytes
_as_bytes = lib.tract_tensor_as_bytes if _NEW_API else lib.tract_value_as_bytes

# numpy dtype -> (tract datum type code, fact mnemonic)
_TYPES = {
    np.dtype(np.bool_): (0x01, "bool"),
    np.dtype(np.uint8): (0x11, "u8"),
    np.dtype(np.uint16): (0x12, "u16"),
    np.dtype(np.uint32): (0x14, "u32"),
    np.dtype(np.uint64): (0x18, "u64"),
    np.dtype(np.int8): (0x21, "i8"),
    np.dtype(np.int16): (0x22, "i16"),
    np.dtype(np.int32): (0x24, "i32"),
    np.dtype(np.int64): (0x28, "i64"),
    np.dtype(np.float16): (0x32, "f16"),
    np.dtype(np.float32): (0x34, "f32"),
    np.dtype(np.float64): (0x38, "f64"),
}
_DTYPES = {code: dtype for dtype, (code, _) in _TYPES.items()}


def _check(err: int) -> None:
    if err != 0:
        raise tract.TractError(str(lib.tract_get_last_error(), "utf-8"))


def _type_of(array: np.ndarray) -> tuple[int, str]:
    if array.dtype not in _TYPES:
        raise TypeError(f"tract's bindings have no datum type for numpy {array.dtype}")
    return _TYPES[array.dtype]


def _to_tract(array: np.ndarray):
    code, _ = _type_of(array)
    array = np.ascontiguousarray(array).reshape(array.shape)  # keep rank 0 as rank 0
    shape = (ctypes.c_size_t * max(array.ndim, 1))(*array.shape)
    data = ctypes.c_void_p(array.__array_interface__["data"][0])
    ptr = ctypes.c_void_p()
    _check(_from_bytes(ctypes.c_uint32(code), ctypes.c_size_t(array.ndim), shape, data, ctypes.byref(ptr)))
    return _Box(ptr)


class _TDimOutput(Exception):
    """An output came out as symbolic dimensions (TDim), which the C API cannot export."""


def _to_numpy(box) -> np.ndarray:
    code, rank = ctypes.c_uint32(0), ctypes.c_size_t()
    shape, data = ctypes.POINTER(ctypes.c_size_t)(), ctypes.c_void_p()
    refs = [ctypes.byref(code), ctypes.byref(rank), ctypes.byref(shape), ctypes.byref(data)]
    if _as_bytes(box.ptr, *refs) != 0:
        error = str(lib.tract_get_last_error(), "utf-8")
        if "TDim" not in error:
            raise tract.TractError(error)
        if not _NEW_API:
            raise _TDimOutput(error)
        box = box.convert_to(tract.DatumType.I64)
        _check(_as_bytes(box.ptr, *refs))
    dims = tuple(int(shape[i]) for i in range(rank.value))
    if code.value not in _DTYPES:
        raise TypeError(f"tract output of datum type {code.value:#x} has no numpy equivalent here")
    dtype = _DTYPES[code.value]
    count = math.prod(dims)
    if count == 0:
        return np.zeros(dims, dtype)
    raw = ctypes.string_at(data.value, count * dtype.itemsize)
    return np.frombuffer(raw, dtype).reshape(dims).copy()


def _load(path: str):
    onnx = tract.onnx()
    return onnx.load(path) if _NEW_API else onnx.model_for_path(path)


def _runnable(model):
    if _NEW_API:
        return tract.runtime_for_name("default").prepare(model.into_model())
    return model.into_optimized().into_runnable()


def _cast_outputs(model_bytes: bytes, indices: list) -> bytes:
    """The model with an int32 Cast appended to each of the graph outputs at indices."""
    model = onnx.load_from_string(model_bytes)
    for index in indices:
        name = model.graph.output[index].name
        inner = f"{name}__tract_tdim"
        for node in model.graph.node:
            node.output[:] = [inner if o == name else o for o in node.output]
            node.input[:] = [inner if i == name else i for i in node.input]
        model.graph.node.append(onnx.helper.make_node("Cast", [inner], [name], to=onnx.TensorProto.INT32))
    return model.SerializeToString()


def run(model_bytes: bytes, feeds: dict) -> list:
    try:
        return _run(model_bytes, feeds)
    except _TDimOutput as error:
        outputs = _run(model_bytes, feeds, export=False)
        indices = [i for i, o in enumerate(outputs) if not _exportable(o)]
        if not indices:
            raise tract.TractError(str(error)) from None
        outputs = _run(_cast_outputs(model_bytes, indices), feeds)
        return [o.astype(np.int64) if i in indices else o for i, o in enumerate(outputs)]


def _exportable(box) -> bool:
    code, rank = ctypes.c_uint32(0), ctypes.c_size_t()
    shape, data = ctypes.POINTER(ctypes.c_size_t)(), ctypes.c_void_p()
    refs = [ctypes.byref(code), ctypes.byref(rank), ctypes.byref(shape), ctypes.byref(data)]
    return _as_bytes(box.ptr, *refs) == 0


def _run(model_bytes: bytes, feeds: dict, export: bool = True) -> list:
    handle, path = tempfile.mkstemp(suffix=".onnx")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(model_bytes)
        model = _load(path)
    finally:
        os.unlink(path)
    inputs = []
    for index in range(model.input_count()):
        name = model.input_name(index)
        if name not in feeds:
            raise KeyError(f"tract wants an input {name!r} that the case does not feed")
        value = feeds[name]
        if not isinstance(value, np.ndarray):
            raise TypeError(f"input {name!r} is a {type(value).__name__}, not a tensor")
        _, mnemonic = _type_of(value)
        model.set_input_fact(index, ",".join([*map(str, value.shape), mnemonic]))
        inputs.append(value)
    runnable = _runnable(model)
    state = runnable.spawn_state()
    tensors = [_to_tract(value) for value in inputs]
    input_ptrs = (ctypes.c_void_p * max(len(tensors), 1))(*[t.ptr for t in tensors])
    count = runnable.output_count()
    output_ptrs = (ctypes.c_void_p * max(count, 1))()
    _check(lib.tract_state_run(state.ptr, input_ptrs, output_ptrs))
    outputs = [_Box(ctypes.c_void_p(output_ptrs[i])) for i in range(count)]
    if not export:
        return outputs
    return [_to_numpy(output) for output in outputs]
