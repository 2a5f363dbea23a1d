"""onnx's checker on the input in a child process, beside the pass.

The plain path checks the input first and legalizes after. Here a forked child runs the same
check (``onnx.checker.check_model`` on the model's bytes) while the parent legalizes, and the
parent waits for the child's verdict before it returns or raises anything: a model the checker
refuses is refused with the checker's own message, even where the pass itself stopped first
on it, so both paths decide alike. The child shares the parent's memory copy-on-write and
writes its verdict to a pipe: ``0`` (valid), ``1`` and the message (refused), ``2`` (the
checker raised something else: the parent then runs it itself, to raise what the plain path
raises), or ``3`` and a message: the checker passed the model and the check asked to follow
it (``then``: on the plain path the next check of the input, before the pass) refused it.
The verdict is followed by its message's length (4 bytes) and message. Where asked
(``names_of``) and the model passed, the child then lists every name the model holds and waits:
the pass takes names as free meanwhile (:class:`lowering.naming.NameAllocator`), and once it is
done the parent sends those names (UTF-8, a NUL between: where a name holds a NUL none is sent)
on a second pipe, their length first, or writes them to a memory file made before the fork and
says so on that pipe; the child answers one byte, whether the model holds any of them (``2``:
it could not list its names). The names taken (94k for a 100k-node conversion) go one way in a
few ms, where the model's (200k) pickled the other way cost about 0.1 s; and where the pass
knows its names are final before it is done (:meth:`CheckBeside.ask`: before the main graph's
node list is spliced), the child's answer (some 0.03 s) is made while the pass ends.

The pass thus runs on a model the checker may refuse (its progress reported, its time spent)
before the refusal comes; it never returns or writes anything from it. Where no child can be
made (no descriptors, no memory for a fork) or its verdict does not come in time (the child
killed), the check runs in this process, as on the plain path.

A child is started only where it is safe and worth it: ``os.fork`` exists, no other Python
thread runs (a fork copies only the calling thread), the model's bytes are at hand (a model too
large to copy is checked in place, as the plain path does), and its main graph holds at least
``FROM_NODES`` nodes: a fork costs milliseconds that grow with the process' memory (about 24 ms
from a process of 800 MB here), while the checker takes about 12 µs a node.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
import warnings
from collections.abc import Callable

import onnx

from ..nodecheck import checker_message

_VALID, _REFUSED, _OTHER, _THEN_REFUSED = 0, 1, 2, 3
_CHECKED_HERE = 4  # (never sent) the child could not tell, and the checker here passed the model
_NONE_HELD, _ONE_HELD, _UNLISTED = 0, 1, 2  # the child's answer to the names taken as free
_NAMES_HERE, _NAMES_IN_MEMORY = b"\x00", b"\x01"  # how the names taken as free come: after, or in the memory file
FollowUp = Callable[[], "str | None"]  # a check after the checker's: None, or its refusal
NamesOf = Callable[[], "set[str]"]  # every name the model holds
FROM_NODES = 10_000  # the checker's ~0.1 s from here on outweighs a fork's cost
PATIENCE_S, PATIENCE_PER_NODE_S = 60.0, 1e-3  # then the child is killed and the check run here


class CheckBeside:
    """A running check of ``data`` in a child process; :meth:`verdict` waits for it."""

    def __init__(
        self,
        pid: int,
        reader: int,
        data: bytes | Callable[[], bytes],
        nodes: int = FROM_NODES,
        then: FollowUp | None = None,
        serialized: tuple[int, int] | None = None,
        asking: tuple[int, int | None] | None = None,
    ) -> None:
        self._pid = pid
        self._reader = reader
        # Where the child lists names: the pipe the names taken as free are sent on, and the
        # memory file they may be written to (None where there is none).
        self._asking = asking
        self._asked: list[str] | None = None  # the names written to the memory file, as they were
        self._data = data  # the model's bytes, or how to get them (where the child serializes it)
        # Where the child serializes the model: (the memory file it writes the bytes to, the
        # pipe it then closes), until the bytes are read or no longer wanted.
        self._serialized = serialized
        self._then = then
        # The longest wait for the verdict before the child is given up on (a lock a native
        # thread held at the fork, which the child then waits on forever): generous, as the
        # check itself takes about 12 µs a node.
        self._deadline = time.monotonic() + PATIENCE_S + nodes * PATIENCE_PER_NODE_S
        self._verdict: tuple[int, str] | None = None
        self._answer = bytearray()  # what the child wrote so far
        self._open = True  # the pipe not yet closed, the child not yet waited for
        self._ended = False  # the child closed its end of the pipe (it exited)
        self._message_end = 0  # where the answer to the names sent starts, once the verdict is read

    @property
    def pid(self) -> int:
        """The child's process id."""
        return self._pid

    @property
    def reaped(self) -> bool:
        """Whether the child's verdict was read and the child waited for (or killed)."""
        return self._verdict is not None and not self._open

    def verdict(self) -> str | None:
        """None where the model is valid, else the checker's message on one line."""
        if self._verdict is None:
            self._verdict = self._read_verdict()
        outcome, message = self._verdict
        if outcome in (_VALID, _THEN_REFUSED):
            return None
        if outcome == _REFUSED:
            return message
        if outcome == _OTHER:  # the child could not tell: the plain path's own check, once
            message = check_here(self._data if isinstance(self._data, bytes) else self._data())
            self._verdict = (_REFUSED, message) if message is not None else (_CHECKED_HERE, "")
            return message
        return None

    def then_refusal(self) -> str | None:
        """Where the checker passed the model: the refusal of the check that follows it (None
        where it passed too, or none was asked for); run here where the child could not tell."""
        if self.verdict() is not None:
            return None
        outcome, message = self._verdict
        if outcome == _THEN_REFUSED:
            return message
        if outcome == _CHECKED_HERE and self._then is not None:
            return self._then()
        return None

    def ask(self, names: list[str]) -> None:
        """Send ``names`` (the names taken as free, where no more will be) at once, where they
        can go without waiting for the child: written to the memory file, the child told on its
        pipe. :meth:`holds_any` then reads the answer (if no name was taken since)."""
        if self._asking is None or self._asked is not None or not names:
            return
        asking, memory = self._asking
        text = _names_text(names)
        if memory is None or text is None:
            return
        try:
            _write_file(memory, text)
            os.write(asking, _NAMES_IN_MEMORY)  # (one byte: the pipe is empty, it never waits)
        except OSError:
            return  # (the child gone: holds_any finds it)
        self._asked = list(names)
        self._close_asking()

    def holds_any(self, names: list[str]) -> bool | None:
        """Whether the model holds any of ``names``, as the child finds among the names it
        listed after its verdict (None where it did not: the model refused, the child killed or
        failing, asked for no names, or names taken after :meth:`ask`); the child is then done
        with."""
        held = None if names else False
        if self.verdict() is None and self._verdict[0] == _VALID and names:
            sent = False
            if self._asked is not None:
                sent = self._asked == names  # (else a name was taken, or given back and another taken, since)
            elif self._asking is not None:
                text = _names_text(names)
                try:
                    if text is not None:
                        request = _NAMES_HERE + len(text).to_bytes(8, "little") + text
                        sent = _write_within(self._asking[0], request, self._deadline)
                finally:
                    self._close_asking()
            if sent and self._read_to(self._message_end + 1):
                answer = self._answer[self._message_end]
                held = None if answer == _UNLISTED else answer == _ONE_HELD
        self.finish()
        return held

    def _close_asking(self) -> None:
        if self._asking is not None:
            for descriptor in self._asking:
                if descriptor is not None:
                    os.close(descriptor)
            self._asking = None

    def model_bytes(self) -> bytes | None:
        """The model's bytes where the child serialized it and has written them all by now
        (never waited for), or where they were given (or made here) for the check; else None."""
        if self._serialized is None:
            return self._data if isinstance(self._data, bytes) else None
        memory, ready = self._serialized
        if not _ready(ready, 0):
            return None
        done = os.read(ready, 1) == b"\x01"  # (the pipe closed without it: the child failed)
        data = _read_file(memory) if done else None
        self._close_serialized()
        return data

    def _close_serialized(self) -> None:
        if self._serialized is not None:
            for descriptor in self._serialized:
                os.close(descriptor)
            self._serialized = None

    def finish(self) -> None:
        """End the child (killed where it still runs: what it would still say is not wanted)."""
        self._close_serialized()
        self._close_asking()
        if self._open:
            self._open = False
            if not self._ended:  # (once it closed the pipe it is gone, maybe reaped already)
                self._kill()
            os.close(self._reader)
            try:
                os.waitpid(self._pid, 0)
            except ChildProcessError:  # reaped already (SIGCHLD ignored): the pipe told all
                pass

    def stop(self) -> None:
        """End the child without waiting for its verdict (the pass was interrupted)."""
        if self._verdict is None:
            if not self._ended:
                self._kill()
            self._verdict = self._read_verdict()
        self.finish()

    def _kill(self) -> None:
        try:
            os.kill(self._pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _read_verdict(self) -> tuple[int, str]:
        """The verdict byte and message the child writes first; (_OTHER, "") where none came."""
        answer = self._answer
        if not self._read_to(5) or answer[0] not in (_VALID, _REFUSED, _THEN_REFUSED):
            self.finish()
            return _OTHER, ""
        end = 5 + int.from_bytes(answer[1:5], "little")
        if not self._read_to(end):
            self.finish()
            return _OTHER, ""
        self._message_end = end
        return answer[0], bytes(answer[5:end]).decode("utf-8", "replace")

    def _read_to(self, size: int | None) -> bool:
        """Read the child's answer until it holds ``size`` bytes (None: until the child closes
        the pipe); False where it ends first, or the deadline passes (the child is then killed)."""
        while size is None or len(self._answer) < size:
            if not self._open:
                return False
            left = self._deadline - time.monotonic()
            if not _ready(self._reader, left):  # no answer in time: given up on
                self.finish()
                return False
            chunk = os.read(self._reader, 1 << 20)
            if not chunk:
                self._ended = True
                self.finish()
                return False
            self._answer += chunk
        return True


def check_here(data: bytes) -> str | None:
    """onnx's checker on ``data`` in this process: None, or its message on one line."""
    try:
        onnx.checker.check_model(data)
    except onnx.checker.ValidationError as error:
        return checker_message(error)
    return None


def start(
    data: bytes | None,
    nodes: int = FROM_NODES,
    then: FollowUp | None = None,
    names_of: NamesOf | None = None,
    serialize: Callable[[], bytes] | None = None,
) -> CheckBeside | None:
    """The check of ``data`` (a model whose main graph holds ``nodes`` nodes) started in a child,
    or None where no child can be forked safely or the model is too small to be worth one.
    ``then``: a check run in the child after the checker passes the model (it sees the
    parent's memory as it was at the fork), its refusal told by :meth:`CheckBeside.then_refusal`;
    ``names_of``: the model's names, listed in the child where the model passed and asked of
    by :meth:`CheckBeside.holds_any`. ``data`` None: the child serializes the model
    (``serialize``, which the parent calls itself where it needs the bytes before the child
    has them: :meth:`CheckBeside.model_bytes`)."""
    if nodes < FROM_NODES or not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    if data is None and serialize is None:
        return None
    if data is None and not hasattr(os, "memfd_create"):  # no memory file to hand them over: made here
        data = serialize()
    try:
        reader, writer = os.pipe()
    except OSError:  # no descriptors left: checked here
        return None
    serialized = None
    if data is None:
        try:
            memory = os.memfd_create("onnx-lower-model", os.MFD_CLOEXEC)
        except OSError:
            os.close(reader)
            os.close(writer)
            return None
        try:
            ready, told = os.pipe()
        except OSError:
            for descriptor in (reader, writer, memory):
                os.close(descriptor)
            return None
        serialized = (memory, ready)
    # (made last: nothing below returns before the fork's own failure, which closes them)
    asked = None  # (the child's end, the parent's) of the pipe the names taken as free go on
    names_memory = None  # the memory file they may be written to
    if names_of is not None:
        try:
            asked = os.pipe()
        except OSError:
            asked = None  # the names are then listed here
        if asked is not None and hasattr(os, "memfd_create"):
            try:
                names_memory = os.memfd_create("onnx-lower-names", os.MFD_CLOEXEC)
            except OSError:
                names_memory = None  # (they go on the pipe)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # a fork beside native threads
            pid = os.fork()
    except OSError:  # no memory or processes for a child: checked here
        os.close(reader)
        os.close(writer)
        if serialized is not None:
            for descriptor in (*serialized, told):
                os.close(descriptor)
        for descriptor in (*(asked or ()), names_memory):
            if descriptor is not None:
                os.close(descriptor)
        return None
    if pid == 0:  # the child: check, say the verdict, leave without running the parent's exits
        try:
            os.close(reader)
            if asked is not None:
                os.close(asked[1])
            if serialized is not None:  # the model's bytes for the parent first, then the check
                os.close(serialized[1])
                data = serialize()
                _write_file(serialized[0], data)
                os.write(told, b"\x01")
                os.close(told)
            try:
                onnx.checker.check_model(data)
                refusal = then() if then is not None else None
                outcome, message = (_VALID, "") if refusal is None else (_THEN_REFUSED, refusal)
            except onnx.checker.ValidationError as error:
                outcome, message = _REFUSED, checker_message(error)
            said = message.encode("utf-8", "replace")
            _write_all(writer, bytes([outcome]) + len(said).to_bytes(4, "little") + said)
            if outcome == _VALID and asked is not None:  # after the verdict: the parent may not ask
                _answer_names_asked(names_of, asked[0], names_memory, writer)
        finally:
            os._exit(0)
    os.close(writer)
    if serialized is not None:
        os.close(told)
    if asked is not None:
        os.close(asked[0])
    asking = (asked[1], names_memory) if asked is not None else None
    return CheckBeside(pid, reader, data if data is not None else serialize, nodes, then, serialized, asking)


def _ready(descriptor: int, timeout: float, writing: bool = False) -> bool:
    """Whether ``descriptor`` can be read (or is closed) within ``timeout`` seconds; where
    ``writing``, whether it can be written to (or its reader is gone). By poll where there is
    one (select takes no descriptor numbered past 1023)."""
    if hasattr(select, "poll"):
        poller = select.poll()
        events = select.POLLOUT if writing else select.POLLIN | select.POLLHUP
        poller.register(descriptor, events | select.POLLERR)
        return bool(poller.poll(max(0, int(timeout * 1000))))
    waited = ([], [descriptor]) if writing else ([descriptor], [])
    return any(select.select(*waited, [], max(timeout, 0))[:2])


def _write_file(descriptor: int, data: bytes) -> None:
    view, offset = memoryview(data), 0
    while offset < len(view):
        offset += os.pwrite(descriptor, view[offset:], offset)


def _read_file(descriptor: int) -> bytes | None:
    """A memory file's whole content (None where it cannot be read)."""
    try:
        size = os.fstat(descriptor).st_size
        chunks, offset = [], 0
        while offset < size:
            chunk = os.pread(descriptor, size - offset, offset)
            if not chunk:
                return None
            chunks.append(chunk)
            offset += len(chunk)
    except OSError:
        return None
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _write_all(writer: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(writer, view) :]


def _answer_names_asked(names_of: NamesOf, asked: int, memory: int | None, writer: int) -> None:
    """In the child: the model's names listed, then the names the parent sends answered
    (:meth:`CheckBeside.holds_any`): whether the model holds any. On ``asked`` comes a byte
    saying where they are: in ``memory`` (written before the byte), or after it on the pipe,
    their length first (8 bytes; read to that length, not to the pipe's end, which a process
    forked from the parent meanwhile would hold open). Nothing is answered where the parent
    closes the pipe first (it did not ask)."""
    try:
        names = names_of()
    except Exception:  # noqa: BLE001 - no list: the parent makes its own
        names = None
    where = _read_exactly(asked, 1)
    if where is None:
        return
    if where == _NAMES_IN_MEMORY:
        request = _read_file(memory) if memory is not None else None
    else:
        length = _read_exactly(asked, 8)
        request = _read_exactly(asked, int.from_bytes(length, "little")) if length is not None else None
        if request is None:
            return  # (the parent gone mid-way)
    if not isinstance(names, set) or request is None:
        answer = _UNLISTED
    else:
        sent = request.decode("utf-8", "surrogatepass").split("\0")
        answer = _NONE_HELD if names.isdisjoint(sent) else _ONE_HELD
    _write_all(writer, bytes([answer]))


def _read_exactly(descriptor: int, size: int) -> bytes | None:
    """``size`` bytes read from a pipe; None where it ends first."""
    chunks, left = [], size
    while left:
        chunk = os.read(descriptor, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _names_text(names: list[str]) -> bytes | None:
    """``names`` as sent to the child: UTF-8, a NUL between two (None where a name holds a NUL)."""
    text = "\0".join(names)
    if text.count("\0") != len(names) - 1:
        return None
    return text.encode("utf-8", "surrogatepass")


def _write_within(descriptor: int, data: bytes, deadline: float) -> bool:
    """``data`` written to a pipe whose reader may be gone or stuck: False where it is gone
    (closed) or has not taken it all by ``deadline`` (time.monotonic)."""
    os.set_blocking(descriptor, False)
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(descriptor, view) :]
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0 or not _ready(descriptor, left, writing=True):
                return False
        except OSError:  # the child closed its end (it exited)
            return False
    return True


__all__ = ["CheckBeside", "check_here", "start"]
