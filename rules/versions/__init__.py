"""The version adapters, one module per op family, and the known meaning changes of version
steps; importing this package registers them all (lowering.adapters does on its first lookup)."""

from . import known_changes, normalization, prelu, quantize, reduce, reshape, softmax, split  # noqa: F401
