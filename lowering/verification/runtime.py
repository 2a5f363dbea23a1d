"""Running models: onnxruntime's CPU provider for any tensor type (bfloat16 and float8 fed as
their bits, the sub-byte types (int4, int2, float4, float6) packed as onnx stores them, read back
through IOBinding), and onnx's reference evaluator."""

from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np
import onnx

from .. import floats, schemas
from ..errors import LoweringError

if TYPE_CHECKING:
    import onnxruntime as ort


def _onnxruntime():
    """onnxruntime, imported where a model is first run (a conversion alone loads it only where a
    nearest Resize's points are computed ahead: rules/nearest_points.py)."""
    import onnxruntime

    return onnxruntime


def _is_numpy_native(dtype: np.dtype) -> bool:
    """numpy's own dtypes; ml_dtypes' bfloat16 and float8 types live in another module."""
    return dtype.type.__module__ == "numpy"


def bits_per_element(dtype: np.dtype) -> int:
    """The width of one element: 8·itemsize, or ml_dtypes' own width for its sub-byte types
    (int4, uint4, int2, uint2, float4_e2m1fn take a byte each in numpy, their code in the low bits)."""
    if _is_numpy_native(dtype):
        return 8 * dtype.itemsize
    try:
        return int(ml_dtypes.iinfo(dtype).bits)
    except ValueError:
        return int(ml_dtypes.finfo(dtype).bits)


def packed(array: np.ndarray, bits: int) -> np.ndarray:
    """The bytes onnx (and onnxruntime) store ``bits``-wide codes in: one stream of bits, each
    code's lowest bit first and the first code first, the last byte padded with zeros (int4: two
    codes a byte, the first in the low nibble; float6: four codes in three bytes)."""
    codes = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    stream = np.unpackbits(codes[:, None], axis=1, bitorder="little")[:, :bits]
    return np.packbits(stream.reshape(-1), bitorder="little")


def unpacked(data: np.ndarray, bits: int, size: int) -> np.ndarray:
    """The first ``size`` codes of packed bytes (the inverse of :func:`packed`), one a byte."""
    stream = np.unpackbits(data, bitorder="little")[: size * bits].reshape(size, bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(-1)


def _to_ort_value(array: np.ndarray, element_type: int) -> ort.OrtValue:
    """An OrtValue of ``element_type`` holding ``array`` (of that type's numpy dtype); bfloat16
    and float8 arrays are passed as their bits, the sub-byte types packed."""
    ort = _onnxruntime()
    array = np.asarray(array, order="C")  # (not ascontiguousarray, which makes a 0-d array 1-d)
    if _is_numpy_native(array.dtype):
        return ort.OrtValue.ortvalue_from_numpy(array)
    bits = bits_per_element(array.dtype)
    if bits >= 8:
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(array.view(f"u{array.dtype.itemsize}"), element_type)
    data = packed(array, bits)
    value = ort.OrtValue.ortvalue_from_shape_and_type(list(array.shape), element_type)
    stored = _bytes_of(value, bits)
    if stored != data.nbytes:
        raise LoweringError(f"onnxruntime stores a {array.dtype} {array.shape} in {stored} bytes, not {data.nbytes}")
    if data.nbytes:
        ctypes.memmove(value.data_ptr(), data.ctypes.data, data.nbytes)
    return value


def _bytes_of(value: ort.OrtValue, bits: int) -> int:
    """The bytes an OrtValue's tensor holds: onnxruntime's count where it gives one, else
    ⌈elements · bits / 8⌉, as it packs them."""
    counted = getattr(value, "tensor_size_in_bytes", None)  # (onnxruntime 1.20 has none)
    if counted is not None:
        return counted()
    return (int(np.prod(value.shape(), dtype=np.int64)) * bits + 7) // 8


def _from_ort_value(value: ort.OrtValue) -> np.ndarray:
    """A numpy array (ml_dtypes for bfloat16, float8 and the sub-byte types, one element a byte)
    holding an output tensor's values."""
    element_type = schemas.tensor_element_type(value.data_type())
    dtype = floats.numpy_dtype(element_type) if element_type else None
    if dtype is None or _is_numpy_native(dtype):
        return value.numpy()
    shape = value.shape()
    bits = bits_per_element(dtype)
    size = _bytes_of(value, bits)
    raw = (ctypes.c_uint8 * size).from_address(value.data_ptr()) if size else b""
    data = np.frombuffer(bytes(raw), dtype=np.uint8)
    if bits < 8:
        data = unpacked(data, bits, int(np.prod(shape, dtype=np.int64)))
    return data.view(dtype).reshape(shape).copy()


# onnxruntime's own log lines (coloured, on stderr) would repeat what its exceptions say, and
# its warnings (old opsets, optimizers skipped) are noise to a user of the command line: only
# FATAL (4) ever reaches the log; every failure still arrives as an exception.
LOG_SEVERITY_SILENT = 4


def session_options(optimized: bool = False) -> ort.SessionOptions:
    """Options of every session here: silent, threads that sleep while idle (a session left open
    spins its idle threads otherwise, taking a core from whatever runs next), and unless
    ``optimized`` no graph optimizations, each node run by its own kernel. A comparison run with
    them can prove nothing: a fusion may turn a lowered model back into the original (a Pad
    merged into the pool after it, comparing the pool's kernel with itself), or fuse one side
    and not the other (a Conv with a Mul by a constant second, not first), so that two models
    meaning the same round apart."""
    ort = _onnxruntime()
    options = ort.SessionOptions()
    options.log_severity_level = LOG_SEVERITY_SILENT
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if not optimized:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def onnxruntime_session(model: onnx.ModelProto, optimized: bool = False) -> ort.InferenceSession:
    """A CPU session for ``model`` that writes nothing to the terminal, its graph optimized only
    where asked (:func:`session_options`)."""
    ort = _onnxruntime()
    options = session_options(optimized)
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def _quiet_run_options() -> ort.RunOptions:
    options = _onnxruntime().RunOptions()
    options.log_severity_level = LOG_SEVERITY_SILENT
    return options


class OnnxruntimeRunner:
    """One onnxruntime session for ``model``, run on any number of feeds (see run_onnxruntime)."""

    def __init__(self, model: onnx.ModelProto, optimized: bool = False) -> None:
        self.session = onnxruntime_session(model, optimized)

    def __call__(self, feeds: dict[str, object]) -> list:
        session = self.session
        exotic_inputs = any(isinstance(v, np.ndarray) and not _is_numpy_native(v.dtype) for v in feeds.values())
        output_types = [o.type for o in session.get_outputs()]
        exotic_outputs = any(
            (t := schemas.tensor_element_type(s)) is not None and not _is_numpy_native(floats.numpy_dtype(t))
            for s in output_types
        )
        if not exotic_inputs and not exotic_outputs:
            return session.run(None, feeds, _quiet_run_options())
        declared = {i.name: i.type for i in session.get_inputs()}
        binding = session.io_binding()
        for name, value in feeds.items():
            element_type = schemas.tensor_element_type(declared.get(name, ""))
            if element_type is None or not isinstance(value, np.ndarray):
                raise LoweringError(
                    f"input '{name}' ({declared.get(name)}): sequences and optionals cannot be fed beside bfloat16, "
                    "float8 or 4- and 2-bit tensors from Python"
                )
            if value.dtype != floats.numpy_dtype(element_type) and element_type != onnx.TensorProto.STRING:
                raise LoweringError(
                    f"input '{name}' ({declared[name]}) cannot be fed a {value.dtype} array: give it "
                    f"{floats.numpy_dtype(element_type)} values"
                )
            binding.bind_ortvalue_input(name, _to_ort_value(value, element_type))
        for output in session.get_outputs():
            if schemas.tensor_element_type(output.type) is None:
                raise LoweringError(
                    f"output '{output.name}' ({output.type}) cannot be read beside bfloat16, float8 or 4- and "
                    "2-bit tensors"
                )
            binding.bind_output(output.name, "cpu")
        session.run_with_iobinding(binding, _quiet_run_options())
        return [_from_ort_value(value) for value in binding.get_outputs()]


def run_onnxruntime(model: onnx.ModelProto, feeds: dict[str, object], optimized: bool = False) -> list:
    """Run ``model`` in onnxruntime's CPU provider, each node by its own kernel unless
    ``optimized`` (onnxruntime as deployed: its fusions on). Tensors of any element type;
    sequences go in as lists and empty optionals as None (for numpy's own element types)."""
    return OnnxruntimeRunner(model, optimized)(feeds)


class ReferenceRunner:
    """``onnx.reference`` for ``model``, run on any number of feeds."""

    def __init__(self, model: onnx.ModelProto) -> None:
        from onnx.reference import ReferenceEvaluator

        self.evaluator = ReferenceEvaluator(model)

    def __call__(self, feeds: dict[str, object]) -> list:
        with np.errstate(all="ignore"):
            return list(self.evaluator.run(None, feeds))


def run_reference(model: onnx.ModelProto, feeds: dict[str, object]) -> list:
    """Run ``model`` with ``onnx.reference`` (an independent implementation of every op)."""
    return ReferenceRunner(model)(feeds)
