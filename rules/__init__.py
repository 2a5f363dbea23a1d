"""The rewrite rules, one module per op family; importing this package registers them all."""

from . import bitwise, cumprod, einsum, functions, gridsample, isinf, isnan, optional, tensorscatter, trilu, versions  # noqa: F401
