"""Reading and writing model files: clear errors on bad input, external data streamed (never
held in memory), atomic output."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import external_data_helper

from .errors import LoweringError

COPY_CHUNK = 16 << 20
# Above this size of weights a model is not copied whole to bytes (memory first): names are
# listed and nodes serialized one by one instead.
WHOLE_MODEL_LIMIT_BYTES = 64 * 1024 * 1024


def weights_fit_in_a_copy(model: onnx.ModelProto) -> bool:
    """Whether the main graph's initializers take at most ``WHOLE_MODEL_LIMIT_BYTES``: then the
    model may be copied whole to bytes (its nodes and names are not what takes memory; sizing
    the whole model would cost about as much as serializing it)."""
    size = 0
    for tensor in model.graph.initializer:
        size += tensor.ByteSize()
        if size > WHOLE_MODEL_LIMIT_BYTES:
            return False
    return size + sum(sparse.ByteSize() for sparse in model.graph.sparse_initializer) <= WHOLE_MODEL_LIMIT_BYTES


class ModelBytes:
    """A model's serialized bytes, made once, where first needed: as given (a file as read),
    else serialized here."""

    def __init__(self, model: onnx.ModelProto, data: bytes | None = None) -> None:
        self._model = model
        self._data = data

    @property
    def given(self) -> bytes | None:
        """The bytes as given or made so far (None where none are yet)."""
        return self._data

    def get(self) -> bytes:
        """The bytes, serialized here where they were not given."""
        if self._data is None:
            self._data = self._model.SerializeToString()
        return self._data


@dataclass
class ModelFile:
    """A model read from disk; tensors stored as external data stay there, read from ``folder``."""

    model: onnx.ModelProto
    folder: Path
    # The file's bytes as read, where the model is protobuf holding no external data and its
    # weights fit in a copy (:func:`weights_fit_in_a_copy`): the pass reads them instead of
    # serializing the model again.
    data: bytes | None = None
    _external: bool | None = None  # whether a tensor is held in external data (found once)

    @property
    def has_external_data(self) -> bool:
        if self._external is None:
            self._external = bool(external_tensors(self.model, self.data))
        return self._external


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
    data = None
    try:
        if _is_protobuf(path):
            data = path.read_bytes()
            model = onnx.load_model_from_string(data)
        else:
            model = onnx.load(os.fspath(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError, TypeError) as error:
        raise LoweringError(f"{path}: not an ONNX model ({_first_line(error)})") from None
    if not model.HasField("graph") or model.ir_version == 0:
        raise LoweringError(f"{path}: not an ONNX model (no graph or no IR version)")
    folder = path.resolve().parent
    external = external_tensors(model, data)
    for tensor in external:
        external_file(tensor, folder, model_path=path)
    keep = data is not None and not external and weights_fit_in_a_copy(model)
    return ModelFile(model, folder, data if keep else None, bool(external))


def _is_protobuf(path: Path) -> bool:
    """Whether onnx reads the file as protobuf (as :func:`onnx.load` decides, by its extension)."""
    found = onnx.serialization.registry.get_format_from_file_extension(path.suffix)
    return (found or "protobuf") == "protobuf"


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
    model: onnx.ModelProto,
    path: str | os.PathLike,
    source_folder: Path | None = None,
    replacing_input: bool = False,
    input_model: str | os.PathLike | None = None,
    serialized: bytes | None = None,
    external: list[onnx.TensorProto] | None = None,
) -> None:
    """Write ``model`` to what ``path`` names.

    A regular file (or a missing one) is written atomically: a temporary folder beside it,
    then renames; a file that is replaced keeps its permission bits. A symbolic link is
    followed: its target is written (atomically, beside the target) and the link stays. A FIFO
    or a device is opened and the bytes are streamed into it, with no temporary file. A missing
    output folder is created.

    Tensors stored as external data are copied, in chunks, from their files under
    ``source_folder`` into one file named after the file written (``OUTPUT.data``, beside it;
    for a link, beside the link's target and named after it); inline tensors stay inline.
    External data cannot go with a FIFO or device output, nor where ``OUTPUT.data`` is a
    symbolic link (onnx refuses data read through one): refused. The source files are only
    read; with ``replacing_input`` (``--in-place``) the data file may be one of them: it is
    read whole into the staged copy before being replaced. ``input_model``: the file the model
    was read from, which the data file must not replace. ``serialized``: the model's bytes,
    where the caller made them already; ``external``: its tensors held in external data,
    where the caller knows them (``[]``: a model lowered from one holding none).
    """
    shown = Path(path)
    target, kind = _writable(shown)
    if external is None:
        external = external_tensors(model, serialized)
    if kind == "stream":
        if external:
            raise LoweringError(
                f"{shown}: is a FIFO or a device, but the model keeps weights as external data, which must go to "
                "a regular file beside the model (OUTPUT.data); give a regular file as the output"
            )
        data = serialized if serialized is not None else model.SerializeToString()
        write_file(shown, lambda handle: handle.write(data))
        return
    folder = target.parent
    if folder.exists() and not folder.is_dir():
        raise LoweringError(f"{shown}: {folder} is not a folder")
    data_name = f"{target.name}.data"
    data_path = folder / data_name
    if external and data_path.is_symlink():  # onnx and onnxruntime refuse external data read through a link
        raise LoweringError(
            f"{data_path}: the external data file would go where a symbolic link is, and onnx refuses data read "
            "through a link; remove the link or choose another output"
        )
    if external and _node_kind(data_path) not in ("missing", "file"):
        raise LoweringError(
            f"{data_path}: the external data file would replace a {_node_kind(data_path)}; move it away or choose "
            "another output"
        )
    sources = [external_file(t, source_folder or folder) for t in external]
    overwrites_source = external and any(data_path.exists() and os.path.samefile(data_path, s) for s, _, _ in sources)
    if overwrites_source and not replacing_input:
        raise LoweringError(f"{data_path}: writing it would overwrite the input's external data; choose another output")
    if external and input_model is not None and same_file(data_path, input_model):
        raise LoweringError(
            f"{data_path}: the external data file would overwrite the input model {input_model}; choose another output"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LoweringError(f"{shown}: cannot create the folder {folder} ({error.strerror or error})") from None
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=folder))
    except OSError as error:
        raise LoweringError(f"{shown}: cannot write in {folder} ({error.strerror or error})") from None
    try:
        staged_model = staging / target.name
        if external:
            model = _copy(model)
            external = external_tensors(model)
            staged_data = staging / data_name
            with open(staged_data, "wb") as handle:
                for tensor, (source, offset, length) in zip(external, sources, strict=True):
                    start = handle.tell()
                    _copy_range(source, offset, length, handle)
                    _point_at(tensor, data_name, start, length)
            _keep_mode(data_path, staged_data)
        with open(staged_model, "wb") as handle:
            handle.write(serialized if serialized is not None and not external else model.SerializeToString())
        _keep_mode(target, staged_model)
        if external:
            os.replace(staged_data, data_path)
        os.replace(staged_model, target)
    except OSError as error:
        raise LoweringError(f"{shown}: cannot write ({error.strerror or error})") from None
    except ValueError as error:
        raise LoweringError(f"{shown}: cannot write ({_first_line(error)})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file (through links), or would once written."""
    first, second = Path(a), Path(b)
    try:
        if first.exists() and second.exists():
            return os.path.samefile(first, second)
        return first.resolve() == second.resolve()
    except (RuntimeError, OSError):  # a loop of symbolic links: refused where it is written
        return False


def write_file(path: str | os.PathLike, write) -> None:
    """Write a file as save_model writes a model without external data: ``write(handle)``
    fills it; atomic for a regular file, through a symbolic link, streamed into a FIFO or device."""
    shown = Path(path)
    target, kind = _writable(shown)
    try:
        if kind == "stream":
            with open(os.open(target, os.O_WRONLY), "wb") as handle:
                write(handle)
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            with open(staging / target.name, "wb") as handle:
                write(handle)
            _keep_mode(target, staging / target.name)
            os.replace(staging / target.name, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    except OSError as error:
        raise LoweringError(f"{shown}: cannot write ({error.strerror or error})") from None


def _writable(shown: Path) -> tuple[Path, str]:
    """What a write to ``shown`` reaches and its kind ('missing', 'file' or 'stream'); a
    directory, socket or other node is refused."""
    target = _resolve_output(shown)
    kind = _node_kind(target)
    if kind == "directory":
        raise LoweringError(f"{shown}: is a directory; give a file name for the output")
    if kind == "other":
        raise LoweringError(f"{shown}: is a socket or another node that cannot be written; give a file name")
    return target, kind


def _resolve_output(path: Path) -> Path:
    """What a write to ``path`` reaches: symbolic links followed (a dangling one to the file it names)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as error:  # a loop of links
        raise LoweringError(f"{path}: cannot follow its symbolic links ({_first_line(error)})") from None


def _node_kind(path: Path) -> str:
    """'missing', 'file', 'directory', 'stream' (FIFO, character or block device) or 'other'."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "stream"
    return "other"


def _keep_mode(replaced: Path, staged: Path) -> None:
    """Give the staged file the permission bits of the regular file it is about to replace."""
    try:
        mode = os.stat(replaced).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode):
        os.chmod(staged, stat.S_IMODE(mode))


def _copy_range(source: Path, offset: int, length: int, target) -> None:
    """Copy ``length`` bytes at ``offset`` of ``source`` to the end of ``target``: by the kernel
    where it can (:func:`_copied_in_kernel`), the rest in chunks."""
    target.flush()
    at = target.tell()
    with open(source, "rb") as handle:
        copied = _copied_in_kernel(handle.fileno(), target.fileno(), offset, at, length)
        target.seek(at + copied)
        handle.seek(offset + copied)
        remaining = length - copied
        while remaining:
            chunk = handle.read(min(COPY_CHUNK, remaining))
            if not chunk:
                raise LoweringError(f"{source}: ended before the external data it should hold")
            target.write(chunk)
            remaining -= len(chunk)


def _copied_in_kernel(source: int, target: int, offset: int, at: int, length: int) -> int:
    """How many of ``length`` bytes at ``offset`` of file descriptor ``source`` were written at
    ``at`` of ``target`` without this process reading them: the data regions by
    os.copy_file_range, the holes of a sparse file left as holes (the target extended past
    them); 0 where the kernel cannot (another file system, a kernel without it). A source that
    ends early stops it: the chunks then say so."""
    copy = getattr(os, "copy_file_range", None)
    if copy is None:
        return 0
    size, done = os.fstat(source).st_size, 0
    while done < length and offset + done < size:
        position = offset + done
        data = _next_data(source, position, size)
        if data > position:  # a hole, read as zeros: skipped, the target made as long
            done = min(data, offset + length) - offset
            os.ftruncate(target, max(os.fstat(target).st_size, at + done))
            continue
        region_end = min(_data_end(source, position, size), offset + length)
        try:
            step = copy(source, target, region_end - position, position, at + done)
        except OSError:  # another file system, or no such call: the chunks do the rest
            break
        if step == 0:
            break
        done += step
    return done


def _next_data(handle: int, position: int, size: int) -> int:
    """Where the next data region at or after ``position`` starts: ``size`` where only a hole
    is left; ``position`` itself where the system cannot tell holes."""
    try:
        return os.lseek(handle, position, os.SEEK_DATA)
    except AttributeError:  # no SEEK_DATA here
        return position
    except OSError as error:
        return size if error.errno == errno.ENXIO else position


def _data_end(handle: int, position: int, size: int) -> int:
    """Where the data region holding ``position`` ends (the next hole, or the file's end)."""
    try:
        return os.lseek(handle, position, os.SEEK_HOLE)
    except (AttributeError, OSError):
        return size


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


def external_tensors(model: onnx.ModelProto, serialized: bytes | None = None) -> list[onnx.TensorProto]:
    """Every tensor of the model held in external data: initializers and attribute tensors, in
    the main graph, its subgraphs and functions. A model whose bytes hold no
    ``data_location: EXTERNAL`` field has none, and is not walked tensor by tensor (its bytes:
    ``serialized`` where given, else made where its weights fit in a copy)."""
    if serialized is None and weights_fit_in_a_copy(model):
        try:
            serialized = model.SerializeToString()
        except ValueError:  # over protobuf's 2 GiB (weights in Constant nodes): walked instead
            serialized = None
    if serialized is not None and not holds_external_location(serialized):
        return []
    return [t for t in external_data_helper._get_all_tensors(model) if external_data_helper.uses_external_data(t)]


# TensorProto's data_location (field 14, a varint) set to EXTERNAL (1), in every encoding a
# parser takes: protobuf writes the key 0x70 and the value 0x01, but a file's bytes as read may
# pad either varint (0x70 0x81 0x00 parses alike).
assert onnx.TensorProto.EXTERNAL == 1
_EXTERNAL_LOCATION = re.compile(rb"(?:\x70|\xf0\x80{0,8}\x00)(?:\x01|\x81\x80{0,8}\x00)")
_SCAN_CHUNK = 1 << 23  # bytes looked at together (bounds the scan's temporary arrays)


def holds_external_location(data: bytes) -> bool:
    """Whether ``data`` holds ``_EXTERNAL_LOCATION`` anywhere, as its search says, in a
    fraction of its time: every match starts with a byte b0 whose low 7 bits are 0x70 (the key
    0x70, or its padded first byte 0xf0), followed by a byte b1 in {0x00, 0x01, 0x80, 0x81}
    (padding, or the value 1 plain or padded), i.e. ``b1 & 0x7e == 0``. Those pairs are found
    with numpy, and the pattern is matched at them alone."""
    view = np.frombuffer(data, dtype=np.uint8)
    for start in range(0, max(len(view) - 1, 0), _SCAN_CHUNK):
        chunk = view[start : start + _SCAN_CHUNK + 1]  # one byte past the chunk: a pair may cross it
        candidates = np.flatnonzero(((chunk[:-1] & 0x7F) == 0x70) & ((chunk[1:] & 0x7E) == 0))
        for offset in candidates.tolist():
            if _EXTERNAL_LOCATION.match(data, start + offset):
                return True
    return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
