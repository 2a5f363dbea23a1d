"""The version adapters, one module per op family, and the known meaning changes of version
steps; importing this package registers them all (lowering.adapters does on its first lookup)."""

from . import (  # noqa: F401
    cast,
    constant,
    grid_sample,
    known_changes,
    normalization,
    pad,
    prelu,
    quantize,
    reduce,
    reshape,
    resize,
    shape,
    softmax,
    split,
    squeeze,
    upsample,
)
