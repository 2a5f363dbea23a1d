"""What the benchmarks share: wall and CPU time of a piece of work, the machine they ran on, and
writing their section of ``docs/performance.md``.

CPU time is this process's (``time.process_time``: user and system) plus that of its children
waited for (``os.times``: the command-line runs), so work moved to another process is counted;
goals are judged on CPU time."""

from __future__ import annotations

import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import NamedTuple

PAGE = Path(__file__).resolve().parents[1] / "docs" / "performance.md"

HEADER = """# Performance

This page is written by the benchmark scripts from the numbers they measured; nothing in it is
typed by hand. Each section says which command wrote it, on what machine, and at what size.
Regenerate a section with its command, or every section with
`python benchmarks/run_all.py --write docs/performance.md`, which also runs the benchmarks that
print their figures without writing them here: `bench_vs_onnxscript.py` (onnxscript's rewriter
on the same rewrite), `bench_function_bodies.py` (bodies made ready once per kind of node against
once per node), `bench_runtime.py` (the lowered graph's run time against the native op in
onnxruntime) and `bench_memory.py` (the peak memory of `onnx-lower` on models with large
external weights).

Wall time is elapsed time; CPU time is the process's user and system time plus that of the child
processes it waited for (the command line's runs). On a shared, loaded machine wall time drifts
from run to run; CPU time drifts less.
"""


class Timing(NamedTuple):
    """Seconds of one piece of work: elapsed (wall) and CPU (this process and its children)."""

    wall: float
    cpu: float


def cpu_seconds() -> float:
    """CPU seconds used so far by this process and by the children it has waited for."""
    times = os.times()
    return time.process_time() + times.children_user + times.children_system


def timed(work) -> Timing:
    """Run ``work()`` once; its wall and CPU seconds."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    work()
    return Timing(time.perf_counter() - wall, cpu_seconds() - cpu)


def best_of(runs: int, work) -> Timing:
    """The least wall and the least CPU time of ``runs`` runs of ``work()`` (each its own minimum)."""
    times = [timed(work) for _ in range(runs)]
    return Timing(min(t.wall for t in times), min(t.cpu for t in times))


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


START_LOAD = load_average()  # (this module is imported as a benchmark starts)


def machine() -> str:
    """The machine and software the numbers were measured on, as a Markdown list."""
    cpus = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cpus
    return "\n".join(
        [
            f"- machine: {platform.machine()}, {platform.system()} {platform.release()}, "
            f"{cpus} logical CPUs ({usable} usable by this process), {platform.processor() or 'processor unnamed'}",
            f"- load average (1, 5, 15 min): {START_LOAD} as the run began, {load_average()} as it ended "
            f"(the benchmark itself runs one process at a time)",
            f"- Python {platform.python_version()} ({platform.python_implementation()}), "
            f"onnx {version('onnx')}, onnxruntime {version('onnxruntime')}, numpy {version('numpy')}, "
            f"onnx-lower {version('onnx-lower')}",
        ]
    )


def write_section(page: Path, name: str, markdown: str) -> None:
    """Put ``markdown`` between ``name``'s markers in ``page``, replacing what was there (or
    appending it, or making the page with its header)."""
    begin, end = f"<!-- benchmark: {name} -->", f"<!-- end benchmark: {name} -->"
    block = f"{begin}\n{markdown.strip()}\n{end}"
    text = page.read_text() if page.exists() else HEADER
    if begin in text:
        start, stop = text.index(begin), text.index(end) + len(end)
        text = text[:start] + block + text[stop:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    print(f"wrote {name}'s section of {page}", file=sys.stderr)


def command(argv: list[str]) -> str:
    """The command that was run, as one would type it (paths relative to the repository)."""
    script = Path(sys.argv[0])
    try:
        script = script.resolve().relative_to(PAGE.parents[1])
    except ValueError:
        pass
    return " ".join(["python", str(script), *argv])
