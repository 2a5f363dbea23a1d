"""onnx's checker on the input in a child process, beside the pass.

The plain path checks the input first and legalizes after. Here a forked child runs the same
check (``onnx.checker.check_model`` on the model's bytes) while the parent legalizes, and the
parent waits for the child's verdict before it returns or raises anything: a model the checker
refuses is refused with the checker's own message, even where the pass itself stopped first
on it, so both paths decide alike. The child shares the parent's memory copy-on-write and
writes its verdict to a pipe: ``0`` (valid), ``1`` and the message (refused), or ``2`` (the
checker raised something else: the parent then runs it itself, to raise what the plain path
raises).

A child is started only where it is safe and worth it: ``os.fork`` exists, no other Python
thread runs (a fork copies only the calling thread), the model's bytes are at hand (a model too
large to copy is checked in place, as the plain path does), and its main graph holds at least
``FROM_NODES`` nodes: a fork costs milliseconds that grow with the process' memory (about 24 ms
from a process of 800 MB here), while the checker takes about 12 µs a node.
"""

from __future__ import annotations

import os
import threading
import warnings

import onnx

from ..nodecheck import checker_message

_VALID, _REFUSED, _OTHER = 0, 1, 2
FROM_NODES = 10_000  # the checker's ~0.1 s from here on outweighs a fork's cost


class CheckBeside:
    """A running check of ``data`` in a child process; :meth:`verdict` waits for it."""

    def __init__(self, pid: int, reader: int, data: bytes) -> None:
        self._pid = pid
        self._reader = reader
        self._data = data
        self._verdict: tuple[int, str] | None = None

    def verdict(self) -> str | None:
        """None where the model is valid, else the checker's message on one line."""
        if self._verdict is None:
            self._verdict = self._wait()
        outcome, message = self._verdict
        if outcome == _VALID:
            return None
        if outcome == _REFUSED:
            return message
        return check_here(self._data)  # the child could not tell: the plain path's own check

    def stop(self) -> None:
        """End the child without waiting for its verdict (the pass was interrupted)."""
        if self._verdict is None:
            try:
                os.kill(self._pid, 9)
            except ProcessLookupError:
                pass
            self._verdict = self._wait()

    def _wait(self) -> tuple[int, str]:
        chunks = []
        try:
            while chunk := os.read(self._reader, 1 << 16):
                chunks.append(chunk)
        finally:
            os.close(self._reader)
            os.waitpid(self._pid, 0)
        answer = b"".join(chunks)
        if not answer or answer[0] not in (_VALID, _REFUSED):
            return _OTHER, ""
        return answer[0], answer[1:].decode("utf-8", "replace")


def check_here(data: bytes) -> str | None:
    """onnx's checker on ``data`` in this process: None, or its message on one line."""
    try:
        onnx.checker.check_model(data)
    except onnx.checker.ValidationError as error:
        return checker_message(error)
    return None


def start(data: bytes, nodes: int = FROM_NODES) -> CheckBeside | None:
    """The check of ``data`` (a model whose main graph holds ``nodes`` nodes) started in a child,
    or None where no child can be forked safely or the model is too small to be worth one."""
    if nodes < FROM_NODES or not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    reader, writer = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a fork beside native threads
        pid = os.fork()
    if pid == 0:  # the child: check, say the verdict, leave without running the parent's exits
        try:
            os.close(reader)
            try:
                onnx.checker.check_model(data)
                answer = bytes([_VALID])
            except onnx.checker.ValidationError as error:
                answer = bytes([_REFUSED]) + checker_message(error).encode("utf-8", "replace")
            while answer:
                answer = answer[os.write(writer, answer) :]
        finally:
            os._exit(0)
    os.close(writer)
    return CheckBeside(pid, reader, data)


__all__ = ["CheckBeside", "check_here", "start"]
