"""The rewrite rules, one module per op family; importing this package registers them all."""

from . import bitwise, cumprod, dft, einsum, functions, isinf, isnan, optional, tensorscatter, trilu, versions  # noqa: F401
