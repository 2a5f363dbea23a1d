"""A progress line on stderr for passes that take more than about a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Counts nodes and graphs done; draws ``lowering: 120000/300000 nodes, 3 graphs`` on one
    line, first after ``delay`` seconds, then at most once every ``interval`` seconds (ten
    times a second); ``close`` clears it."""

    def __init__(
        self, total_nodes: int, stream: TextIO | None = None, delay: float = 1.0, interval: float = 0.1
    ) -> None:
        self.total_nodes = total_nodes
        self.stream = stream or sys.stderr
        self.delay = delay
        self.interval = interval
        self.nodes = 0
        self.graphs = 0
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._drawn = False

    def advance(self, nodes: int = 0, graphs: int = 0) -> None:
        self.nodes += nodes
        self.graphs += graphs
        now = time.monotonic()
        if now - self._started >= self.delay and now - self._last_draw >= self.interval:
            self._last_draw = now
            self._drawn = True
            graphs = f"{self.graphs} graph{'s' if self.graphs != 1 else ''}"
            self.stream.write(f"\rlowering: {self.nodes}/{self.total_nodes} nodes, {graphs}")
            self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
