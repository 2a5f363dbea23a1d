"""Model files for the command line in the format their extension names, as ``onnx.save_model``
infers it: binary protobuf (``.onnx``, ``.pb`` and any other name), text protobuf
(``.textproto``, ``.txtpb``, ``.prototxt``, ``.pbtxt``), JSON (``.json``, ``.onnxjson``) and
the ONNX text syntax (``.onnxtxt``, ``.onnxtext``)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import onnx
from onnx import serialization

from ..errors import LoweringError
from ..modelio import (
    ModelFile,
    external_file,
    external_tensors,
    load_model,
    save_model,
    weights_fit_in_a_copy,
    with_external_data,
    write_file,
)

PROTOBUF = "protobuf"
FORMAT_NAMES = {"protobuf": "binary protobuf", "textproto": "text protobuf", "json": "JSON", "onnxtxt": "ONNX text"}


def file_format(path: str | os.PathLike) -> str:
    """The format onnx infers from the path's extension (``protobuf`` where it names none)."""
    return serialization.registry.get_format_from_file_extension(Path(path).suffix) or PROTOBUF


def read_model(path: str | os.PathLike) -> ModelFile:
    """:func:`lowering.modelio.load_model`, for every format onnx reads, with no warning leaking
    (onnx calls its text syntax experimental on every read) and a text that does not parse
    refused in one line."""
    fmt = file_format(path)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The onnxtxt format is experimental")
        if fmt == PROTOBUF:
            return load_model(path)
        try:
            return load_model(path)
        except LoweringError:
            raise
        except Exception as error:  # a text that does not parse: the file's fault
            raise LoweringError(
                f"{path}: not an ONNX model in {FORMAT_NAMES[fmt]} (its extension says so): {_first_line(error)}"
            ) from None


def stored_size(model_file: ModelFile, path: str | os.PathLike) -> int:
    """Bytes the model takes on disk: its file and the external data its tensors read."""
    size = Path(path).stat().st_size
    return size + external_size(model_file.model, model_file.folder) if model_file.has_external_data else size


def external_size(model: onnx.ModelProto, folder: Path) -> int:
    return sum(external_file(tensor, folder)[2] for tensor in external_tensors(model))


def serialized(model: onnx.ModelProto, fmt: str, model_file: ModelFile) -> bytes:
    """The model's bytes in ``fmt``; a text format holds every weight inline (external data read)."""
    if fmt == PROTOBUF:
        return model.SerializeToString()
    if external_tensors(model):
        model = with_external_data(model_file, model)
    if fmt == "json":
        model = _floats_as_raw_data(model)
    try:
        return serialization.registry.get(fmt).serialize_proto(model)
    except Exception as error:
        raise LoweringError(
            f"the lowered model cannot be written as {FORMAT_NAMES[fmt]} ({_first_line(error)}); "
            "give an output ending in .onnx"
        ) from None


def _floats_as_raw_data(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy whose float tensors hold their values as raw bytes: protobuf's JSON writes float
    3.4028235e38 for float32's largest value, which its own reader refuses as too large."""
    import numpy as np
    from onnx import external_data_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in external_data_helper._get_all_tensors(copy):
        if tensor.float_data:
            tensor.raw_data = np.asarray(tensor.float_data, dtype="<f4").tobytes()
            tensor.ClearField("float_data")
    return copy


def prepared(model: onnx.ModelProto, fmt: str, model_file: ModelFile) -> tuple[int, bytes | None]:
    """The bytes :func:`write_model` writes for ``model`` in ``fmt`` (external data included),
    and the model's own bytes (made once, for the size and the write; protobuf only where its
    weights fit in a copy: else it is serialized as it is written)."""
    if fmt == PROTOBUF:
        data = None
        if weights_fit_in_a_copy(model):
            try:
                data = model.SerializeToString()
            except ValueError:  # over protobuf's 2 GiB: refused with its reason where it is written
                data = None
        size = len(data) if data is not None else model.ByteSize()
        if not model_file.has_external_data:  # a pass makes no external tensor: none to find
            return size, data
        return size + sum(external_file(tensor, model_file.folder)[2] for tensor in external_tensors(model, data)), data
    data = serialized(model, fmt, model_file)
    return len(data), data


def write_model(
    model: onnx.ModelProto,
    path: str | os.PathLike,
    model_file: ModelFile,
    *,
    in_place: bool,
    input_path: str,
    data: bytes | None = None,
) -> None:
    """Write ``model`` to ``path`` in the format its extension names (atomically, as
    :func:`lowering.modelio.save_model` writes); ``data``: its bytes, where :func:`prepared` made them."""
    fmt = file_format(path)
    if fmt == PROTOBUF:
        save_model(
            model,
            path,
            model_file.folder,
            replacing_input=in_place,
            input_model=input_path,
            serialized=data,
            external=None if model_file.has_external_data else [],
        )
        return
    if data is None:
        data = serialized(model, fmt, model_file)
    write_file(path, lambda handle: handle.write(data))


def human_size(size: int) -> str:
    """``812 B``, ``1.5 KiB``, ``3.2 MiB``, ``1.1 GiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
