"""Sample inputs per element type: every bit pattern for 8/16-bit floats, edge values plus
random bit patterns for float32/float64. One generator serves every rule's tests."""

from __future__ import annotations

import numpy as np

from . import floats


def _unsigned(itemsize: int) -> np.dtype:
    return np.dtype(f"u{itemsize}")


def every_bit_pattern(element_type: int) -> np.ndarray:
    """All 2**bits values of an 8- or 16-bit float type, NaNs of every payload included."""
    dtype = floats.numpy_dtype(element_type)
    if dtype.itemsize > 2:
        raise ValueError(f"{dtype} has too many bit patterns to enumerate")
    return np.arange(2 ** (8 * dtype.itemsize), dtype=_unsigned(dtype.itemsize)).view(dtype)


def edge_values(element_type: int) -> np.ndarray:
    """NaN of both signs with quiet and signalling payloads, ±inf, ±0, the smallest and
    largest subnormals, the smallest normal, ±1 and the largest finite values."""
    dtype = floats.numpy_dtype(element_type)
    if dtype.itemsize <= 2:
        return every_bit_pattern(element_type)
    info = np.finfo(dtype)
    bits = 8 * dtype.itemsize
    mantissa = info.nmant
    unsigned = _unsigned(dtype.itemsize)
    sign = 1 << (bits - 1)
    exponent_all_ones = ((1 << (bits - 1 - mantissa)) - 1) << mantissa
    quiet = 1 << (mantissa - 1)
    patterns = [
        exponent_all_ones | quiet,  # the canonical quiet NaN
        exponent_all_ones | 1,  # a signalling NaN
        exponent_all_ones | quiet | 0x5A5,  # a NaN with a payload
        exponent_all_ones | ((1 << mantissa) - 1),  # the NaN with every mantissa bit set
        exponent_all_ones,  # +inf
        0,  # +0
        1,  # the smallest subnormal
        (1 << mantissa) - 1,  # the largest subnormal
        1 << mantissa,  # the smallest normal
        exponent_all_ones - 1,  # the largest finite value
    ]
    patterns += [p | sign for p in patterns]
    values = np.array(patterns, dtype=unsigned).view(dtype)
    extra = np.array([1.0, -1.0, 0.5, 3.0, info.max, -info.max, info.tiny], dtype=dtype)
    return np.concatenate([values, extra])


def random_bit_patterns(element_type: int, count: int, seed: int = 0) -> np.ndarray:
    """``count`` uniformly random bit patterns: NaNs, subnormals and both signs all occur."""
    dtype = floats.numpy_dtype(element_type)
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype)


def sample_values(element_type: int, random_count: int = 20_000, seed: int = 0) -> np.ndarray:
    """Every pattern for 8/16-bit types; edge values and random patterns for wider ones."""
    dtype = floats.numpy_dtype(element_type)
    if dtype.itemsize <= 2:
        return every_bit_pattern(element_type)
    return np.concatenate([edge_values(element_type), random_bit_patterns(element_type, random_count, seed)])
