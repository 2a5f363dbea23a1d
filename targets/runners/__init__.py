"""One module per runtime probed by targets/probe.py: ``VERSION`` and ``run(model_bytes, feeds)``."""

from __future__ import annotations


def fed_names(graph_inputs, initializers, feeds: dict) -> list[str]:
    """The names of the graph inputs that are not initializers, in order, each with a feed;
    KeyError naming those without one."""
    initialized = {i.name for i in initializers}
    names = [i.name for i in graph_inputs if i.name not in initialized]
    missing = [name for name in names if name not in feeds]
    if missing:
        raise KeyError(f"no feed for inputs {missing}")
    return names
