"""The version adapters, one module per op family, and the known meaning changes of version
steps; importing this package registers them all (lowering.adapters does on its first lookup)."""

from . import (  # noqa: F401
    argmax,
    bitshift,
    cast,
    constant,
    dropout,
    gathernd,
    grid_sample,
    known_changes,
    normalization,
    pad,
    prelu,
    quantize,
    recurrent,
    reduce,
    reshape,
    resize,
    roialign,
    scatter,
    shape,
    softmax,
    split,
    squeeze,
    type_lists,
    upsample,
)
