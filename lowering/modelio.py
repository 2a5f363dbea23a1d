"""Reading and writing model files: clear errors on bad input, external data streamed (never
held in memory), atomic output."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from . import protowire
from .errors import LoweringError

COPY_CHUNK = 16 << 20


@dataclass
class ModelFile:
    """A model read from disk; tensors stored as external data stay there, read from ``folder``."""

    model: onnx.ModelProto
    folder: Path

    @property
    def has_external_data(self) -> bool:
        return bool(external_tensors(self.model))


def load_model(path: str | os.PathLike) -> ModelFile:
    """Load a model file without its external data, checking every external reference first."""
    path = Path(path)
    if not path.exists():
        raise LoweringError(f"{path}: no such file")
    if path.is_dir():
        raise LoweringError(f"{path}: is a directory, not an ONNX model file")
    if not path.is_file():
        raise LoweringError(f"{path}: not a regular file")
    if path.stat().st_size == 0:
        raise LoweringError(f"{path}: the file is empty")
    try:
        model = onnx.load(os.fspath(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError, TypeError) as error:
        raise LoweringError(f"{path}: not an ONNX model ({_first_line(error)})") from None
    if not model.HasField("graph") or model.ir_version == 0:
        raise LoweringError(f"{path}: not an ONNX model (no graph or no IR version)")
    folder = path.resolve().parent
    for tensor in external_tensors(model):
        external_file(tensor, folder, model_path=path)
    return ModelFile(model, folder)


def external_file(tensor: onnx.TensorProto, folder: Path, model_path: Path | None = None) -> tuple[Path, int, int]:
    """(file, offset, length) of a tensor's external data, refused unless it lies inside
    ``folder``: no absolute paths, no ``..``, no symbolic link leading out, within the file."""
    where = model_path or folder
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    name = tensor.name or "(unnamed tensor)"
    if not location:
        raise LoweringError(f"{where}: tensor '{name}' has external data with no location")
    relative = Path(location)
    if relative.is_absolute() or location.startswith(("/", "\\")) or ":" in relative.parts[0]:
        raise LoweringError(f"{where}: tensor '{name}' points at the absolute path {location!r}; refused")
    if ".." in relative.parts:
        raise LoweringError(f"{where}: tensor '{name}' points outside the model's folder ({location!r}); refused")
    candidate = folder / relative
    resolved = candidate.resolve()
    if folder.resolve() not in resolved.parents:
        raise LoweringError(f"{where}: tensor '{name}' leads outside the model's folder through a link ({location!r})")
    if not resolved.is_file():
        raise LoweringError(f"{where}: tensor '{name}' needs external data file {location!r}, which is missing")
    try:
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else resolved.stat().st_size - offset
    except ValueError:
        raise LoweringError(f"{where}: tensor '{name}' has a malformed external data offset or length") from None
    if offset < 0 or length < 0 or offset + length > resolved.stat().st_size:
        raise LoweringError(f"{where}: tensor '{name}' reads past the end of {location!r}")
    return resolved, offset, length


def with_external_data(model_file: ModelFile, model: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """A copy of ``model`` (default: the file's) with its external data read into memory."""
    loaded = onnx.ModelProto()
    loaded.CopyFrom(model if model is not None else model_file.model)
    for tensor in external_tensors(loaded):
        if external_data_helper.uses_external_data(tensor):
            source, offset, length = external_file(tensor, model_file.folder)
            with open(source, "rb") as handle:
                handle.seek(offset)
                tensor.raw_data = handle.read(length)
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]
    return loaded


def save_model(
    model: onnx.ModelProto, path: str | os.PathLike, source_folder: Path | None = None, replacing_input: bool = False
) -> None:
    """Write ``model`` to ``path`` atomically: a temporary folder beside it, then renames.

    A missing output folder is created. Tensors stored as external data are copied, in chunks,
    from their files under
    ``source_folder`` into one file named after the output (``OUTPUT.data``); inline tensors
    stay inline. The source files are only read; with ``replacing_input`` (``--in-place``) the
    data file may be one of them: it is read whole into the staged copy before being replaced.
    """
    path = Path(path)
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise LoweringError(f"{path}: {folder} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LoweringError(f"{path}: cannot create the folder {folder} ({error.strerror or error})") from None
    if path.is_dir():
        raise LoweringError(f"{path}: is a directory; give a file name for the output")
    external = external_tensors(model)
    data_name = f"{path.name}.data"
    data_path = folder / data_name
    sources = [external_file(t, source_folder or folder) for t in external]
    overwrites_source = external and any(data_path.exists() and os.path.samefile(data_path, s) for s, _, _ in sources)
    if overwrites_source and not replacing_input:
        raise LoweringError(f"{data_path}: writing it would overwrite the input's external data; choose another output")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=folder))
    except OSError as error:
        raise LoweringError(f"{path}: cannot write in {folder} ({error.strerror or error})") from None
    try:
        if external:
            model = _copy(model)
            external = external_tensors(model)
            with open(staging / data_name, "wb") as target:
                for tensor, (source, offset, length) in zip(external, sources, strict=True):
                    start = target.tell()
                    _copy_range(source, offset, length, target)
                    _point_at(tensor, data_name, start, length)
        with open(staging / path.name, "wb") as handle:
            handle.write(model.SerializeToString())
        if external:
            os.replace(staging / data_name, data_path)
        os.replace(staging / path.name, path)
    except OSError as error:
        raise LoweringError(f"{path}: cannot write ({error.strerror or error})") from None
    except ValueError as error:
        raise LoweringError(f"{path}: cannot write ({_first_line(error)})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _copy_range(source: Path, offset: int, length: int, target) -> None:
    """Copy ``length`` bytes at ``offset`` of ``source`` to the end of ``target``, in chunks."""
    target.flush()
    with open(source, "rb") as handle:
        handle.seek(offset)
        remaining = length
        while remaining:
            chunk = handle.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise LoweringError(f"{source}: ended before the external data it should hold")
            target.write(chunk)
            remaining -= len(chunk)


def _point_at(tensor: onnx.TensorProto, location: str, offset: int, length: int) -> None:
    kept = [e for e in tensor.external_data if e.key not in ("location", "offset", "length", "checksum")]
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
        tensor.external_data.add(key=key, value=value)
    tensor.external_data.extend(kept)
    tensor.data_location = onnx.TensorProto.EXTERNAL


def checkable(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as onnx's checker can read it without its external data: each main-graph
    initializer held outside becomes a graph input of the same type (the data is not needed)."""
    if not any(external_data_helper.uses_external_data(t) for t in model.graph.initializer):
        return model
    view = onnx.ModelProto()
    view.CopyFrom(model)
    inputs = {i.name for i in view.graph.input}
    kept = []
    for tensor in view.graph.initializer:
        if not external_data_helper.uses_external_data(tensor):
            kept.append(tensor)
        elif tensor.name not in inputs:
            view.graph.input.append(
                onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
            )
    del view.graph.initializer[:]
    view.graph.initializer.extend(kept)
    return view


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return copy


def external_tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    """Every tensor of the model held in external data: initializers and attribute tensors, in
    the main graph, its subgraphs and functions. A model whose bytes hold no
    ``data_location: EXTERNAL`` field has none, and is not walked tensor by tensor."""
    if model.ByteSize() <= protowire.WHOLE_MODEL_LIMIT_BYTES and _EXTERNAL_LOCATION not in model.SerializeToString():
        return []
    return [t for t in external_data_helper._get_all_tensors(model) if external_data_helper.uses_external_data(t)]


# TensorProto's data_location (field 14, a varint) set to EXTERNAL (1), as it is serialized.
_EXTERNAL_LOCATION = bytes([14 << 3, onnx.TensorProto.EXTERNAL])


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
