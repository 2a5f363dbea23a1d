"""One module per runtime probed by targets/probe.py: ``VERSION`` and ``run(model_bytes, feeds)``."""

from __future__ import annotations

# what a runner's Unfed says the runtime takes none of (lowering.runtime_profiles names them alike)
RANK_0_INPUT = "0-d input"
CONSTANT_OUTPUT = "constant output"


class Unfed(TypeError):
    """A feed the runtime takes no value of that kind for, at its interface (rknn's simulator: a
    0-d input): the case fails whatever its op, so its verdict (``"unfed"``) says nothing of the
    op, and a model with such an input cannot run there (``lowering.runtime_profiles`` reads
    ``what`` from its words, which begin with it: "0-d input: ...")."""

    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


def fed_names(graph_inputs, initializers, feeds: dict) -> list[str]:
    """The names of the graph inputs that are not initializers, in order, each with a feed;
    KeyError naming those without one."""
    initialized = {i.name for i in initializers}
    names = [i.name for i in graph_inputs if i.name not in initialized]
    missing = [name for name in names if name not in feeds]
    if missing:
        raise KeyError(f"no feed for inputs {missing}")
    return names
