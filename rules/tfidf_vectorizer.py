"""TfIdfVectorizer (version 9, no function body) lowered to Equal comparisons of the input's
windows with the pool's n-grams, counted per n-gram by ReduceSum and gathered to the output's
coordinates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from lowering import schemas
from lowering.function_bodies import Tolerance
from lowering.registry import Builder, NotLowered, Value, rule

MODES = ("TF", "IDF", "TFIDF")
INT64_MAX = np.iinfo(np.int64).max
# onnxruntime's kernel adds an n-gram's weight once per hit (h float additions), the spec and
# this rule multiply its count by it once: for weights of one sign the two part by about
# (h + j)·2^-24 of the answer, h the hits and j the n-grams summed at a coordinate. The rule
# lowers TFIDF with weights only where h + j stays within MOST_WEIGHTED_HITS (the row's length
# known), so within TFIDF_TOLERANCE.
MOST_WEIGHTED_HITS = 1024
TFIDF_TOLERANCE = Tolerance(rtol=2**-14, atol=0.0)
# The kernel counts in float, one hit at a time: a count stops growing at 2^24.
MOST_HITS = 2**24
EMITS = (
    "Slice", "Unsqueeze", "Equal", "And", "Cast", "ReduceSum", "Add", "Concat", "Mul", "Pad", "Gather", "Greater",
    "Where", "Constant",
)  # fmt: skip


@dataclass(frozen=True)
class Ngram:
    """One n-gram of the pool that is counted: its id (its place among the pool's n-grams, those of
    the lengths left out counted too), its tokens (bytes for strings, as the pool holds them), and
    the output coordinate it is counted at."""

    id: int
    tokens: tuple
    coordinate: int


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def pool_ngrams(
    *,
    max_gram_length: int,
    max_skip_count: int,
    min_gram_length: int,
    mode: str | bytes,
    ngram_counts: Sequence[int],
    ngram_indexes: Sequence[int],
    pool_int64s: Sequence[int] = (),
    pool_strings: Sequence[str | bytes] = (),
    weights: Sequence[float] = (),
) -> list[Ngram]:
    """The n-grams counted, of lengths ``min_gram_length`` to ``max_gram_length``, in the pool's
    order; ValueError where the attributes are ones onnxruntime's kernel refuses (or reads past
    their end): a mode none of TF, IDF, TFIDF, lengths below 1 or past ``ngram_counts``, a
    negative skip count or coordinate, weights not one per coordinate, both pools or none, a
    length's items not whole n-grams, an n-gram of a counted length twice, an n-gram with no
    coordinate."""
    if _text(mode) not in MODES:
        raise ValueError(f"mode '{_text(mode)}' is none of {', '.join(MODES)}")
    if min_gram_length < 1 or max_gram_length < min_gram_length:
        raise ValueError(f"the n-gram lengths {min_gram_length} to {max_gram_length} are not 1 <= min <= max")
    if max_skip_count < 0:
        raise ValueError(f"max_skip_count {max_skip_count} is negative")
    if not ngram_counts or max_gram_length > len(ngram_counts):
        raise ValueError(f"ngram_counts names {len(ngram_counts)} lengths, below max_gram_length {max_gram_length}")
    if not ngram_indexes or min(ngram_indexes) < 0:
        raise ValueError("ngram_indexes is empty or holds a negative coordinate")
    if weights and len(weights) != len(ngram_indexes):
        raise ValueError(f"{len(weights)} weights for {len(ngram_indexes)} coordinates")
    if bool(pool_int64s) == bool(pool_strings):
        raise ValueError("exactly one of pool_int64s and pool_strings must hold n-grams")
    pool = [t.encode() if isinstance(t, str) else t for t in pool_strings] or list(pool_int64s)
    counted: list[Ngram] = []
    next_id = 0
    for length, start in enumerate(ngram_counts, start=1):
        end = ngram_counts[length] if length < len(ngram_counts) else len(pool)
        if not 0 <= start <= end <= len(pool) or (end - start) % length:
            raise ValueError(f"ngram_counts gives the {length}-grams items {start} to {end} of {len(pool)}")
        grams = [tuple(pool[i : i + length]) for i in range(start, end, length)]
        if min_gram_length <= length <= max_gram_length:
            if len(set(grams)) != len(grams):
                raise ValueError(f"the pool holds a {length}-gram twice")
            for offset, tokens in enumerate(grams):
                if next_id + offset >= len(ngram_indexes):
                    raise ValueError(f"the n-gram {next_id + offset} has no coordinate in ngram_indexes")
                counted.append(Ngram(next_id + offset, tokens, ngram_indexes[next_id + offset]))
        next_id += len(grams)
    return counted


def _skip_distances(length: int, max_skip_count: int) -> range:
    """A 1-gram is counted once; a longer one at each distance 1 to max_skip_count + 1 between its
    tokens."""
    return range(1, 2) if length == 1 else range(1, max_skip_count + 2)


def _most_hits(length: int, row: int, max_skip_count: int) -> int:
    """The most hits an n-gram of ``length`` tokens has in a row of ``row`` tokens: one per start
    and distance that fit."""
    return sum(max(0, row - (length - 1) * d) for d in _skip_distances(length, max_skip_count))


def tfidf_reference(x: np.ndarray, **attributes) -> np.ndarray:
    """The spec in numpy, row by row: an n-gram's count is the number of starts i and distances d
    (1 for a 1-gram, else 1 to max_skip_count + 1) with ``x[i + m·d] = tokens[m]`` for every m;
    at each coordinate, TF: the sum of its n-grams' counts; IDF: 1 where that sum is not 0
    without weights, else the weight of an n-gram of it counted (the kernel's is the last hit's:
    the rule lowers only n-grams of one weight at a coordinate); TFIDF: the sum of each count
    (not 0) times its weight (the count without weights)."""
    ngrams = pool_ngrams(**attributes)
    mode, weights = _text(attributes["mode"]), attributes.get("weights")
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    y = np.zeros([len(rows), max(attributes["ngram_indexes"]) + 1], np.float32)
    for r, row in enumerate(rows.tolist()):
        row = [t.encode() if isinstance(t, str) else t for t in row]
        for gram in ngrams:
            n = len(gram.tokens)
            count = sum(
                all(row[i + m * d] == gram.tokens[m] for m in range(n))
                for d in _skip_distances(n, attributes["max_skip_count"])
                for i in range(len(row) - (n - 1) * d)
            )
            if mode == "TF" or not weights:
                y[r, gram.coordinate] += np.float32(count)
            elif count and mode == "IDF":
                y[r, gram.coordinate] = np.float32(weights[gram.id])
            elif count:
                y[r, gram.coordinate] += np.float32(count) * np.float32(weights[gram.id])
    if mode == "IDF" and not weights:
        y = (y > 0).astype(np.float32)
    return y.reshape(list(x.shape[:-1]) + [y.shape[-1]])


@rule(
    "TfIdfVectorizer",
    versions=(9,),
    emits=EMITS,
    reference=tfidf_reference,
    tolerance=dict.fromkeys(schemas.input_element_types("TfIdfVectorizer", 9), TFIDF_TOLERANCE),
)
def tfidf_by_window_matches(
    b: Builder,
    x: Value,
    *,
    max_gram_length: int,
    max_skip_count: int,
    min_gram_length: int,
    mode: str,
    ngram_counts: Sequence[int],
    ngram_indexes: Sequence[int],
    pool_int64s: Sequence[int] = (),
    pool_strings: Sequence[str] = (),
    weights: Sequence[float] = (),
) -> Value:
    """TfIdfVectorizer(x) = W(Gather(Pad(Concat(c_1, ..., c_N)), g)).

    ``c_n[..., j] = Σ_d ReduceSum(Cast(And_m(Equal(x[..., m·d : m·d + L], t_j[m])), float))``
    counts the n-grams of length n over the windows of x's last axis: their tokens ``t_j``
    against the L = C - (n-1)·d starts, at each distance d between tokens (1 for a 1-gram, 1 to
    max_skip_count + 1 otherwise), as the spec and onnxruntime's kernel count them. The window
    at token m is a Slice from m·d to m·d - (n-1)·d (counted from the end; to the end for the
    last token), so C need not be known, and a row shorter than an n-gram counts none. Pad
    appends a 0, and Gather (then ReduceSum, where coordinates are shared) puts each count at
    its coordinate, 0 where none is. W is the mode: TF the count, IDF ``Where(count > 0, w, 0)``
    (1 for w without weights), TFIDF ``Where(count > 0, count · w, 0)`` per n-gram before it is
    gathered (so a weight of no hit, infinite or negative, gives +0, as in the kernel, and a
    weight of -0 is taken as +0, which the kernel's sum from +0 gives). TF and
    IDF are exact while a coordinate's count stays below 2^24 (the kernel's float count stops
    there; declined where the row's length allows it). TFIDF with weights is the spec's
    product, where the kernel adds the weight once per hit: within TFIDF_TOLERANCE, and lowered
    only where the row's length is known and bounds each coordinate's hits (MOST_WEIGHTED_HITS)
    and its weights are of one sign. An int32 x is compared with the pool as int32, its n-grams
    holding a token outside int32's range counted 0 (none can match). Needs x's rank (1 or 2);
    strings need Equal-19. Not lowered: attributes the kernel refuses, and IDF with weights where
    n-grams of unequal weights share a coordinate (the kernel gives the weight of the last hit).
    """
    attributes = dict(
        max_gram_length=max_gram_length,
        max_skip_count=max_skip_count,
        min_gram_length=min_gram_length,
        mode=mode,
        ngram_counts=list(ngram_counts),
        ngram_indexes=list(ngram_indexes),
        pool_int64s=list(pool_int64s),
        pool_strings=list(pool_strings),
        weights=list(weights),
    )
    try:
        ngrams = pool_ngrams(**attributes)
    except ValueError as error:
        raise NotLowered(f"{error}: onnxruntime's kernel refuses such a node") from None
    shape = b.shape_of(x)
    if shape is None or len(shape) not in (1, 2):
        raise NotLowered("the input's rank is unknown or not 1 or 2")
    is_string = x.element_type == TensorProto.STRING
    if is_string != bool(pool_strings):
        raise NotLowered("the input is not of the pool's kind (strings or integers)")
    if is_string and not b.accepts("Equal", x):
        raise NotLowered(f"Equal takes no strings at opset {b.opset} (from 19)")
    if x.element_type == TensorProto.INT32:  # (a token outside int32 matches no int32 input)
        bounds = np.iinfo(np.int32)
        ngrams = [g for g in ngrams if all(bounds.min <= t <= bounds.max for t in g.tokens)]
    mode, weights = _text(mode), list(weights)
    _check_exact_or_within_tolerance(mode, ngrams, weights, shape[-1], max_skip_count)
    axis = len(shape) - 1
    counts = _counts(b, x, ngrams, axis, max_skip_count)
    if mode == "TFIDF" and weights and ngrams:
        per_ngram = np.array([weights[g.id] for g in ngrams], np.float32) + np.float32(0)  # (-0 + 0 = +0)
        products = b.Mul(counts, b.tensor(per_ngram, "weights"))
        counts = b.Where(_hits(b, counts), products, b.scalar(0, TensorProto.FLOAT, "zero"))
    found = _at_coordinates(b, _with_a_zero_after(b, counts, axis), ngrams, max(ngram_indexes) + 1, axis)
    if mode != "IDF":
        return found
    if not weights:
        return b.Cast(_hits(b, found), to=TensorProto.FLOAT)
    chosen = np.zeros([max(ngram_indexes) + 1], np.float32)
    for gram in ngrams:
        chosen[gram.coordinate] = weights[gram.id]
    return b.Where(_hits(b, found), b.tensor(chosen, "weights"), b.scalar(0, TensorProto.FLOAT, "zero"))


def _hits(b: Builder, counts: Value) -> Value:
    """Where a count is not 0."""
    return b.Greater(counts, b.scalar(0, TensorProto.FLOAT, "zero"))


def _check_exact_or_within_tolerance(
    mode: str, ngrams: list[Ngram], weights: list[float], row: int | None, max_skip_count: int
) -> None:
    """NotLowered where the rule would not give the kernel's answer (within TFIDF_TOLERANCE for
    TFIDF with weights): n-grams of unequal weights at one coordinate in IDF; in TFIDF with
    weights, a row of unknown length, a coordinate whose hits and n-grams may pass
    MOST_WEIGHTED_HITS, or weights of both signs at one coordinate; a coordinate whose count may
    reach 2^24, where the kernel's float count stops."""
    at: dict[int, list[Ngram]] = {}
    for gram in ngrams:
        at.setdefault(gram.coordinate, []).append(gram)
    for coordinate, grams in at.items():
        shared = [weights[g.id] for g in grams] if weights else []
        if mode == "IDF" and len(set(shared)) > 1:
            raise NotLowered(f"n-grams of unequal weights share coordinate {coordinate} in mode IDF")
        hits = None if row is None else sum(_most_hits(len(g.tokens), row, max_skip_count) for g in grams)
        if hits is not None and hits >= MOST_HITS:
            raise NotLowered(
                f"coordinate {coordinate} may count {hits} hits, past 2^24, where the kernel's count stops"
            )
        if mode != "TFIDF" or not weights:
            continue
        if hits is None:
            raise NotLowered(
                "the row's length is unknown: TFIDF with weights is lowered where it bounds the hits "
                "(the kernel adds a weight per hit, which strays from count · weight as the hits grow); "
                "give it with --input-shape"
            )
        if hits + len(grams) > MOST_WEIGHTED_HITS:
            raise NotLowered(
                f"coordinate {coordinate} may sum {hits} weighted hits, past {MOST_WEIGHTED_HITS}: the kernel's "
                "sum of a weight per hit may stray from count · weight past the stated tolerance"
            )
        if min(shared) < 0 < max(shared):
            raise NotLowered(f"weights of both signs share coordinate {coordinate} in mode TFIDF")


def _counts(b: Builder, x: Value, ngrams: list[Ngram], axis: int, max_skip_count: int) -> Value:
    """``[..., P]`` float: each counted n-gram's hits in its row, in the order of ``ngrams``; where
    none is counted, ``[..., 0]`` (the Equal of x with no tokens, summed)."""
    dtype = {TensorProto.INT32: np.int32, TensorProto.STRING: object}.get(x.element_type, np.int64)
    by_length: dict[int, list[Ngram]] = {}
    for gram in ngrams:
        by_length.setdefault(len(gram.tokens), []).append(gram)
    if not by_length:
        by_length = {1: []}
    windows: dict[tuple[int, int], Value] = {}  # (start, end) -> the window, unsqueezed
    parts = []
    for length, grams in by_length.items():
        tokens = np.array([g.tokens for g in grams], dtype=dtype).reshape(len(grams), length)
        per_distance = []
        for d in _skip_distances(length, max_skip_count):
            match = None
            for m in range(length):
                place = (m * d, m * d - (length - 1) * d)
                if place not in windows:
                    windows[place] = b.over_axes("Unsqueeze", _window(b, x, axis, *place), [axis + 1])
                hit = b.Equal(windows[place], b.tensor(tokens[:, m], f"tokens_{m}"))
                match = hit if match is None else b.And(match, hit)
            summed = b.over_axes("ReduceSum", b.Cast(match, to=TensorProto.FLOAT), [axis], keepdims=0)
            per_distance.append(summed)
        count = per_distance[0]
        for more in per_distance[1:]:
            count = b.Add(count, more)
        parts.append(count)
    return parts[0] if len(parts) == 1 else b.Concat(*parts, axis=axis)


def _window(b: Builder, x: Value, axis: int, start: int, end: int) -> Value:
    """x[..., start:end] along ``axis`` (end counted from the end where negative; 0 means to the
    end); x itself where that is all of it. Slice takes attributes below opset 10."""
    if start == 0 and end == 0:
        return x
    end = end if end < 0 else INT64_MAX
    if b.opset < 10:
        return b.Slice(x, starts=[start], ends=[end], axes=[axis])
    return b.Slice(x, b.ints([start], "starts"), b.ints([end], "ends"), b.ints([axis], "axes"))


def _with_a_zero_after(b: Builder, counts: Value, axis: int) -> Value:
    """The counts and one 0 after them along ``axis`` (where a coordinate no n-gram has reads)."""
    pads = [0] * (2 * axis + 1) + [1]
    schema = schemas.schema_in_force("Pad", b.opset)
    if schema is not None and "pads" in schema.attributes:
        return b.Pad(counts, pads=pads)
    return b.Pad(counts, b.ints(pads, "pads"))


def _at_coordinates(b: Builder, padded: Value, ngrams: list[Ngram], coordinates: int, axis: int) -> Value:
    """``Y[..., k]``: the sum of the counts of the n-grams at coordinate k (Gather of their places,
    the padding's 0 where k has none; ReduceSum where some k has several)."""
    places: list[list[int]] = [[] for _ in range(coordinates)]
    for place, gram in enumerate(ngrams):
        places[gram.coordinate].append(place)
    width = max(1, *(len(p) for p in places))
    table = np.full([coordinates, width], len(ngrams), np.int64)
    for k, found in enumerate(places):
        table[k, : len(found)] = found
    if width == 1:
        return b.Gather(padded, b.tensor(table[:, 0], "places"), axis=axis)
    gathered = b.Gather(padded, b.tensor(table, "places"), axis=axis)
    return b.over_axes("ReduceSum", gathered, [axis + 1], keepdims=0)
