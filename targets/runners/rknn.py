"""Rockchip's RKNN-Toolkit2 (PyPI ``rknn-toolkit2``) running the model on its NPU simulator.

Per model: ``RKNN(verbose=False)``, ``config(target_platform="rk3588")`` (float_dtype left at
its only value, float16), ``load_onnx`` of the model written to a temporary file,
``build(do_quantization=False)``, ``init_runtime()`` with no target (on x86 that is the
simulator), ``inference(inputs=..., data_format="nchw")``, ``release()``, in a temporary
folder (the toolkit leaves some outputs there as .npy files). ``load_onnx``,
``build`` and ``init_runtime`` answer 0 or not, or raise; either way a refusal is raised here in
the toolkit's words (its error lines, which it prints; everything it prints is captured, at the
file-descriptor level since its compiler prints from C, and kept out of the probe's output).

The toolkit reads the model with its own onnx (1.18 here): a model of an IR version newer than
that onnx reads gets the newest it reads (``onnx.IR_VERSION``; the toolkit refuses
default-domain opsets above 19 whatever the IR version, and those up to 19 need IR 9 at most).
Inputs must be of static shape: where the model's are not, each input's shape is stated from
its feed (``load_onnx(inputs=..., input_size_list=...)``), as one deploying to the NPU states it.
It refuses inputs with no elements (a 0 in the shape) and fails on 0-d ones at inference
(IndexError in its reading of the inputs, fed as they are or as one-element vectors; it drops a
0-d input nothing it keeps reads, Dropout's ratio outside training): that failure, where the
built model keeps a 0-d input, is raised here as :class:`Unfed`, which says nothing of its ops.
Likewise an output computed from no input's values (given the inputs' shapes: Shape, Size,
Dropout's mask outside training) or of no elements: the builder refuses a model of such outputs
alone ("All outputs [...] of model are constants") and drops one beside others (the built
model's ``ir.outputs`` lacks it), raised here as :class:`Unfed` of a constant output (it says
the same of a window of a fed size and drops LayerNormalization's Mean: targets/probe.py keeps
the verdict only where the outputs named are constant).

Layouts: the NPU holds 4-D tensors as NHWC, but ``data_format="nchw"`` has the simulator take
each 4-D feed in the model's own layout (NCHW: it transposes; its default, NHWC, refuses an
NCHW feed of the model's shape), and it gives 4-D outputs back in the model's own layout too,
so feeds and outputs are as the ONNX model states them (checked on Relu and on a 4-D
Transpose). Feeds of other ranks are taken as they are. An output may come back with its
lengths of 1 dropped or moved (a Squeeze's [1, 3, 5] as [3, 1, 5], a scalar as [1]): where the
model states the output's shape and the two differ by lengths of 1 alone, the output is read in
the stated shape (the same elements in the same order). The built model takes the inputs the toolkit kept
(:func:`_kept_inputs`), in its order, as one deploying it queries them.

Element types, as the toolkit treats them: float16 and float64 in the model are made float32
when it loads it (it says so), so a float16 model gives float32 outputs (their values are
float16's: read here as the float16 the model declares, as one deploying it would; a float64
output, read as float64, holds float32's values, within the tolerance below) and a float64
feed is refused
("Unsupport inputs[0].dtype: float64"); int64, int32, int8 and bool feeds and outputs keep
their types (int64 values beyond int32 kept: Neg of 5000015 gives -5000015); int16, uint16,
uint32 and uint64 inputs are refused at build; a uint8 input can abort the process in its
compiler ("Not Support Dtype: 2", a crash to the probe). Feeds go in as numpy arrays of their
own dtype; a feed that is no array (a sequence, a map, an optional) or holds strings is refused
here.

Arithmetic: the NPU computes floats in float16 (an Add whose sum is 1.00563 gives 1.0058594),
so outputs are compared within :data:`TOLERANCE`, the looser of it and the case's own
(``targets/probe.py``).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from rknn.api import RKNN

from . import CONSTANT_OUTPUT, RANK_0_INPUT, Unfed, fed_names

VERSION = importlib.metadata.version("rknn-toolkit2")

# float16 has 11 significant bits: a unit roundoff of 2**-11 (about 4.9e-4). A single op on the
# NPU rounds each float input to float16, computes, and rounds its result: allowed here, four
# roundings, 4 * 2**-11 = 2**-9 (about 1.95e-3), relative, and the same absolute (results near
# zero, from operands of order one, as the backend cases' are, keep their operands' error).
TOLERANCE = (2.0**-9, 2.0**-9)
ARITHMETIC = "float16"  # (a whole model's error gathers over its ops: targets/run_sweep.py compares it so)
TOLERANCE_WHY = (
    "the NPU computes floats in float16 (unit roundoff 2**-11): four roundings, 4 * 2**-11 = 2**-9, "
    "relative and absolute (operands of order one)"
)

# The toolkit's compiler takes about a minute to build a model of a thousand nodes on two cores
# (an LSTM tagger of 8 steps unrolled: 54 s idle, past a minute beside another job): a model
# with no answer in this long hangs (targets/probe.py's Worker; its own default is a minute).
SECONDS = 180
PLATFORM = "rk3588"
# (the element types the toolkit makes float32 when it loads a model, read back as declared)
_WIDENED_AT_LOAD = {onnx.TensorProto.FLOAT16: np.float16, onnx.TensorProto.DOUBLE: np.float64}
ALL_CONSTANT = "of model are constants"  # (the builder's words for a model of constant outputs alone)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STAMP = re.compile(r"^RKNN: \[[0-9:.]+\] ")
_NOISE = ("Unkown op target", "rknn-toolkit2 version", "Traceback", "=====")
_LIBC = ctypes.CDLL(None)


def _flush() -> None:
    """Python's buffered output and C's (the compiler's printf, which a file holds back until exit)."""
    sys.stdout.flush()
    sys.stderr.flush()
    _LIBC.fflush(None)


@contextlib.contextmanager
def _captured(log: list[str]):
    """Everything printed to stdout and stderr (Python's and C's) while inside, appended to ``log``."""
    _flush()
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            _flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sink.seek(0)
            log.append(sink.read().decode("utf-8", "replace"))


def _said(log: list[str], error: BaseException | None = None) -> str:
    """The toolkit's words: its error lines (``E step: ...``), or the last line of its exception."""
    lines = []
    for line in _ANSI.sub("", "".join(log)).splitlines():
        if line.startswith("E ") and not any(noise in line for noise in _NOISE):
            words = _STAMP.sub("", line[2:].strip())
            if words and words not in lines:
                lines.append(words)
    if not lines and error is not None:
        told = [line.strip() for line in str(error).splitlines() if line.strip()]
        lines = told[-1:] or [type(error).__name__]
    return " | ".join(lines) or "no words"


def _step(name: str, call):
    """Run one of the toolkit's steps, raising in its words (what it printed then) where it fails."""
    error, log = None, []
    try:
        with _captured(log):
            result = call()
    except Exception as raised:  # (the toolkit raises ValueError with its traceback as the text)
        error, result = raised, None
    if error is not None or (name != "inference" and result != 0) or (name == "inference" and result is None):
        words = _said(log, error)
        raise RuntimeError(words if words.startswith(f"{name}: ") else f"{name}: {words}") from None
    return result


def _to_feed(name: str, value) -> np.ndarray:
    if value is None or isinstance(value, (list, tuple, dict)):
        raise TypeError(f"input {name!r} is a {type(value).__name__}: no RKNN input for a sequence, map or optional")
    array = np.asarray(value)
    if array.dtype.kind in "OUS":
        raise TypeError(f"input {name!r} holds strings: RKNN inputs take none")
    return np.ascontiguousarray(array).reshape(array.shape)


def _static(model: onnx.ModelProto, names: list[str]) -> bool:
    infos = {info.name: info for info in model.graph.input}
    return all(
        infos[name].type.tensor_type.HasField("shape")
        and all(d.HasField("dim_value") for d in infos[name].type.tensor_type.shape.dim)
        for name in names
    )


def _kept_inputs(rknn: RKNN, names: list[str]) -> list[str]:
    """The graph inputs the built model still takes, in its order (its ``ir.inputs``, as the
    device's ``rknn_query`` of its inputs gives them): the toolkit drops an input whose every use
    its folding removes (a GRU's R times the zero initial state) and takes the feeds by position;
    ``names`` where it says none of them."""
    kept = getattr(getattr(getattr(rknn, "rknn_base", None), "ir", None), "inputs", None)
    if not isinstance(kept, list) or not kept or not set(kept) <= set(names):
        return names
    return list(kept)


def _dropped_outputs(rknn: RKNN, names: list[str]) -> list[str]:
    """The graph outputs the built model does not give (its ``ir.outputs``): the toolkit folds
    away an output computed from no input's values (Dropout's mask outside training) or of no
    elements, and drops some others too (LayerNormalization's Mean and InvStdDev: targets/probe.py
    tells them apart); none where it says nothing of its outputs or names others."""
    kept = getattr(getattr(getattr(rknn, "rknn_base", None), "ir", None), "outputs", None)
    if not isinstance(kept, list) or not kept or not set(kept) <= set(names):
        return []
    return [name for name in names if name not in kept]


def run(model_bytes: bytes, feeds: dict) -> list:
    model = onnx.load_from_string(model_bytes)
    names = fed_names(model.graph.input, model.graph.initializer, feeds)
    inputs = [_to_feed(name, feeds[name]) for name in names]
    if model.ir_version > onnx.IR_VERSION:
        model.ir_version = onnx.IR_VERSION
    stated = {} if _static(model, names) else {"inputs": names, "input_size_list": [list(a.shape) for a in inputs]}
    # (in a folder of its own: the toolkit writes some outputs to files in the working directory)
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        path = Path(folder) / "model.onnx"
        path.write_bytes(model.SerializeToString())
        with _captured([]):
            rknn = RKNN(verbose=False)
        try:
            _step("config", lambda: rknn.config(target_platform=PLATFORM))
            _step("load_onnx", lambda: rknn.load_onnx(str(path), **stated))
            try:
                _step("build", lambda: rknn.build(do_quantization=False))
            except RuntimeError as refused:
                if ALL_CONSTANT in str(refused):
                    why = f"the builder refuses a model of no other outputs ({refused})"
                    raise Unfed(CONSTANT_OUTPUT, why) from None
                raise
            dropped = _dropped_outputs(rknn, [info.name for info in model.graph.output])
            if dropped:
                raise Unfed(CONSTANT_OUTPUT, f"outputs {dropped}: the built model gives none of them (they fold away)")
            _step("init_runtime", lambda: rknn.init_runtime())
            kept = {name: inputs[names.index(name)] for name in _kept_inputs(rknn, names)}
            try:
                outputs = _step("inference", lambda: rknn.inference(inputs=list(kept.values()), data_format="nchw"))
            except RuntimeError as refused:  # (its reading of a 0-d input fails; a float64 one it refuses first)
                rank_0 = [name for name, array in kept.items() if array.ndim == 0]
                if rank_0 and "IndexError" in str(refused):
                    raise Unfed(RANK_0_INPUT, f"inputs {rank_0}: the simulator takes none ({refused})") from None
                raise
        finally:
            with _captured([]):
                rknn.release()
    outputs = list(outputs)
    if len(outputs) != len(model.graph.output):
        raise RuntimeError(f"RKNN gave {len(outputs)} outputs, not the graph's {len(model.graph.output)}")
    return [_as_declared(np.asarray(output), info) for output, info in zip(outputs, model.graph.output, strict=True)]


def _as_declared(output: np.ndarray, info: onnx.ValueInfoProto) -> np.ndarray:
    """``output`` in the element type the graph declares for it where that is float16 or float64
    and the output came back float32 (the toolkit makes both float32 at load: a float16 output's
    values come back exactly, float64's are float32's), and in the shape the graph declares where
    that shape is static and differs from the output's by lengths of 1 alone (the same elements
    in the same order): the simulator drops and moves lengths of 1 (a Squeeze's [1, 3, 5] comes
    back [3, 1, 5], a scalar as [1]), as one deploying the model reads its outputs in the types
    and shapes the model states."""
    tensor = info.type.tensor_type
    if not info.type.HasField("tensor_type"):
        return output
    declared_type = _WIDENED_AT_LOAD.get(tensor.elem_type)
    if declared_type is not None and output.dtype == np.float32:
        output = output.astype(declared_type)
    if not tensor.HasField("shape"):
        return output
    if not all(d.HasField("dim_value") for d in tensor.shape.dim):
        return output
    declared = tuple(d.dim_value for d in tensor.shape.dim)
    if output.shape != declared and [n for n in output.shape if n != 1] == [n for n in declared if n != 1]:
        return output.reshape(declared)
    return output
