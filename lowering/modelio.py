"""Reading and writing model files: clear errors on bad input, atomic output."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from .errors import LoweringError


@dataclass
class ModelFile:
    """A model read from disk, and which of its tensors were stored as external data."""

    model: onnx.ModelProto
    external_tensor_names: frozenset[str] = field(default_factory=frozenset)


def load_model(path: str | os.PathLike) -> ModelFile:
    """Load a model file with its external data; a ``LoweringError`` for anything unreadable."""
    path = Path(path)
    if not path.exists():
        raise LoweringError(f"{path}: no such file")
    if path.is_dir():
        raise LoweringError(f"{path}: is a directory, not an ONNX model file")
    if path.stat().st_size == 0:
        raise LoweringError(f"{path}: the file is empty")
    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError) as error:
        raise LoweringError(f"{path}: not an ONNX model ({_first_line(error)})") from None
    if not model.HasField("graph") or model.ir_version == 0:
        raise LoweringError(f"{path}: not an ONNX model (no graph or no IR version)")
    external = frozenset(t.name for t in _all_tensors(model) if external_data_helper.uses_external_data(t))
    if external:
        try:
            external_data_helper.load_external_data_for_model(model, os.fspath(path.parent))
        except (OSError, ValueError, RuntimeError) as error:
            raise LoweringError(f"{path}: cannot read its external data ({_first_line(error)})") from None
    return ModelFile(model, external)


def save_model(model: onnx.ModelProto, path: str | os.PathLike, external_tensor_names=frozenset()) -> None:
    """Write ``model`` to ``path`` atomically: a temporary folder beside it, then renames.

    Tensors named in ``external_tensor_names`` are written as external data, into one file
    named after the output (``OUTPUT.data``); every other tensor stays inline.
    """
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise LoweringError(f"{path}: the folder {folder} does not exist")
    if path.is_dir():
        raise LoweringError(f"{path}: is a directory; give a file name for the output")
    data_name = f"{path.name}.data"
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=folder))
    except OSError as error:
        raise LoweringError(f"{path}: cannot write in {folder} ({error.strerror or error})") from None
    try:
        external = [t for t in _all_tensors(model) if t.name in external_tensor_names and t.HasField("raw_data")]
        if external:
            model = _copy(model)
            external = [t for t in _all_tensors(model) if t.name in external_tensor_names and t.HasField("raw_data")]
            for tensor in external:
                external_data_helper.set_external_data(tensor, data_name)
            external_data_helper.write_external_data_tensors(model, os.fspath(staging))
        with open(staging / path.name, "wb") as handle:
            handle.write(model.SerializeToString())
        if external:
            os.replace(staging / data_name, folder / data_name)
        os.replace(staging / path.name, path)
    except OSError as error:
        raise LoweringError(f"{path}: cannot write ({error.strerror or error})") from None
    except ValueError as error:
        raise LoweringError(f"{path}: cannot write ({_first_line(error)})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def _all_tensors(model: onnx.ModelProto):
    return external_data_helper._get_all_tensors(model)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
