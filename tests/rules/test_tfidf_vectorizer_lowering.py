"""TfIdfVectorizer lowered to Equal comparisons of the input's windows with the pool's n-grams
(rules/tfidf_vectorizer.py): random pools of 1- to 3-grams, skips, coordinates shared and left
empty, every mode with and without weights, int32 and int64 rows of one and two axes (short
and empty ones too) and strings, at opsets 9 to the newest, against onnxruntime's kernel (bit for
bit, but TFIDF with weights within its stated tolerance) and the rule's numpy reference; what is
declined and why. The backend cases are checked against their expected outputs by
tests/test_backend_node_cases.py."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from support import (
    assert_same_bits,
    assert_same_values,
    lowered_wholly,
    make_model,
    nested_forms,
    runs_in_onnxruntime,
    slow_but_a_sample,
)

import lowering
from lowering import schemas
from lowering.registry import rule_for

RULE = rule_for("", "TfIdfVectorizer")
TOLERANCE = RULE.tolerance[TensorProto.INT64]
OPSETS = [9, 10, 11, 13, 18, 19, 21, schemas.newest_opset()]


def tfidf_model(element_type: int, shape, opset: int, **attributes):
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attributes)
    inputs = [helper.make_tensor_value_info("x", element_type, shape)]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))]
    return make_model([node], inputs, outputs, opset=opset)


def ngram_attributes(lengths: tuple[int, int], skips: int, mode: str, counts: list, indexes: list, **pool) -> dict:
    """TfIdfVectorizer's attributes: n-grams of ``lengths`` (min, max) tokens, at most ``skips``
    skipped between two, ``counts`` where each length starts in the pool, ``indexes`` their
    coordinates; ``pool``: pool_int64s or pool_strings, and weights."""
    return {
        "min_gram_length": lengths[0],
        "max_gram_length": lengths[1],
        "max_skip_count": skips,
        "mode": mode,
        "ngram_counts": counts,
        "ngram_indexes": indexes,
        **pool,
    }


def random_attributes(rng: np.random.Generator, *, vocabulary: int, mode: str, weighted: bool, shared: bool):
    """A pool of distinct 1- to 3-grams of tokens below ``vocabulary`` (some lengths empty), their
    coordinates a permutation with gaps or (``shared``) drawn with repeats."""
    longest = int(rng.integers(1, 4))
    counts, pool = [], []
    for length in range(1, longest + 1):
        counts.append(len(pool))
        grams = {tuple(int(t) for t in rng.integers(0, vocabulary, length)) for _ in range(int(rng.integers(0, 5)))}
        pool.extend(token for gram in sorted(grams) for token in gram)
    grams = sum(
        ((counts[i + 1] if i + 1 < len(counts) else len(pool)) - start) // (i + 1) for i, start in enumerate(counts)
    )
    if grams == 0:
        counts, pool, grams = [0], [0], 1
        longest = 1
    width = grams + int(rng.integers(0, 3))
    coordinates = rng.integers(0, width, grams) if shared else rng.permutation(width)[:grams]
    attributes = ngram_attributes(
        (int(rng.integers(1, longest + 1)), longest),
        int(rng.integers(0, 4)),
        mode,
        counts,
        [int(k) for k in coordinates],
        pool_int64s=pool,
    )
    if weighted:
        attributes["weights"] = [float(w) for w in rng.uniform(0.1, 3.0, grams).astype(np.float32)]
    return attributes


def check_lowered(model, x: np.ndarray, attributes: dict, where: str) -> None:
    """The lowered model against onnxruntime's kernel and the reference: bit for bit, but TFIDF
    with weights, which is the spec's product, within the tolerance of the kernel's sums (and bit
    for bit with the reference where no coordinate is shared)."""
    lowered = lowered_wholly(model, "TfIdfVectorizer")
    (got,) = runs_in_onnxruntime(lowered, {"x": x})
    (kernel,) = runs_in_onnxruntime(model, {"x": x})
    want = RULE.reference(x, **attributes)
    products = attributes["mode"] == "TFIDF" and attributes.get("weights")
    shared = len(set(attributes["ngram_indexes"])) < len(attributes["ngram_indexes"])
    if products:
        assert not TOLERANCE.mismatches(got, kernel).any(), f"{where}: {got} against the kernel's {kernel}"
        assert not TOLERANCE.mismatches(want, kernel).any(), f"{where}: the reference strays from the kernel"
        if not shared:
            assert_same_bits(got, want, where)
    else:
        assert_same_bits(got, kernel, where)
        assert_same_bits(want, kernel, f"{where} (reference)")


@slow_but_a_sample(keep=3)
@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("element_type", [TensorProto.INT32, TensorProto.INT64], ids=["int32", "int64"])
def test_random_pools_and_rows_match_onnxruntime(mode, weighted, element_type):
    rng = np.random.default_rng([len(mode), weighted, element_type])
    dtype = np.int32 if element_type == TensorProto.INT32 else np.int64
    for trial in range(12):
        shared = trial % 3 == 2 and not (mode == "IDF" and weighted)
        attributes = random_attributes(rng, vocabulary=4, mode=mode, weighted=weighted, shared=shared)
        length = int(rng.integers(0, 12))
        shape = [length] if trial % 2 else [int(rng.integers(1, 4)), length]
        x = rng.integers(0, 4, shape).astype(dtype)
        opset = OPSETS[trial % len(OPSETS)]
        check_lowered(tfidf_model(element_type, shape, opset, **attributes), x, attributes, f"trial {trial} at {opset}")


def test_a_row_of_unknown_length_and_rows_shorter_than_the_ngrams():
    attributes = ngram_attributes((1, 3), 3, "TF", [0, 1, 3], [2, 1, 0], pool_int64s=[1, 1, 2, 1, 2, 3])
    model = tfidf_model(TensorProto.INT64, [None, None], 13, **attributes)
    for shape in ([3, 0], [3, 1], [3, 2], [2, 3], [1, 30]):
        x = np.random.default_rng(shape).integers(0, 4, shape)
        check_lowered(model, x, attributes, f"rows {shape}")


def test_a_weighted_count_drifts_from_the_kernels_sum_within_the_tolerance():
    """Ten hits of weight 0.1: onnxruntime adds it ten times (1.0000001), the rule multiplies (1.0)."""
    attributes = ngram_attributes((1, 1), 0, "TFIDF", [0], [0], pool_int64s=[7], weights=[0.1])
    model = tfidf_model(TensorProto.INT64, [10], 13, **attributes)
    x = np.full([10], 7, np.int64)
    (got,) = runs_in_onnxruntime(lowered_wholly(model, "TfIdfVectorizer"), {"x": x})
    (kernel,) = runs_in_onnxruntime(model, {"x": x})
    assert got[0] == np.float32(10) * np.float32(0.1) and got[0] != kernel[0]
    assert not TOLERANCE.mismatches(got, kernel).any()
    check_lowered(model, x, attributes, "ten hits")


@pytest.mark.parametrize("opset", [19, schemas.newest_opset()])
def test_string_pools_from_opset_19(opset):
    attributes = ngram_attributes(
        (1, 2),
        2,
        "IDF",
        [0, 3],
        [0, 4, 1, 3, 2],
        pool_strings=["a", "c", "", "a", "c", "b", "b"],
        weights=[0.5, 1.5, 2.5, 3.5, 4.5],
    )
    model = tfidf_model(TensorProto.STRING, [2, 6], opset, **attributes)
    x = np.array([["a", "b", "a", "c", "", "é"], ["c", "a", "b", "b", "a", "c"]], object)
    check_lowered(model, x, attributes, f"strings at {opset}")


def test_int32_rows_never_match_a_token_outside_int32():
    attributes = ngram_attributes(
        (1, 2), 0, "TF", [0, 3], [0, 1, 2, 3], pool_int64s=[1, 2**32 + 1, -(2**40), 1, 2**32 + 1]
    )
    model = tfidf_model(TensorProto.INT32, [6], 11, **attributes)
    x = np.array([1, 1, -1, 0, 1, 1], np.int32)  # (2^32 + 1 wraps to 1 in int32)
    check_lowered(model, x, attributes, "int32")
    constants = [node for node in lowered_wholly(model, "TfIdfVectorizer").graph.node if node.op_type == "Constant"]
    assert all(node.attribute[0].t.data_type != TensorProto.INT64 or "tokens" not in node.name for node in constants)


def test_no_ngram_counted_gives_zeros():
    attributes = ngram_attributes((1, 1), 0, "IDF", [0], [0, 1], pool_int64s=[2**32 + 1, -(2**40)])
    model = tfidf_model(TensorProto.INT32, [2, 5], 9, **attributes)
    check_lowered(model, np.arange(10, dtype=np.int32).reshape(2, 5), attributes, "none counted")


def test_inside_if_branches_and_local_functions():
    model = tfidf_model(
        TensorProto.INT64, [5], 13, **ngram_attributes((1, 2), 1, "TF", [0, 1], [0, 1], pool_int64s=[1, 1, 2])
    )
    for label, nested in nested_forms(model).items():
        lowered = lowered_wholly(nested, "TfIdfVectorizer")
        feeds = {"x": np.array([1, 2, 1, 1, 2]), "branch": np.array(True)}
        (got,) = runs_in_onnxruntime(lowered, feeds)
        (kernel,) = runs_in_onnxruntime(nested, feeds)
        assert got.tolist() == kernel.tolist() == [3.0, 3.0], label  # (1: 3; 1, 2: 2 at distance 1, 1 at 2)


BASE = ngram_attributes((1, 1), 0, "TF", [0], [0, 1], pool_int64s=[1, 2])


@pytest.mark.parametrize(
    ("changes", "shape", "opset", "why"),
    [
        ({"pool_int64s": [1, 1]}, [4], 13, "holds a 1-gram twice"),
        ({"mode": "BM25"}, [4], 13, "mode 'BM25' is none of"),
        ({"min_gram_length": 2}, [4], 13, "not 1 <= min <= max"),
        ({"max_gram_length": 2}, [4], 13, "lengths, below max_gram_length 2"),
        ({"ngram_indexes": [0]}, [4], 13, "has no coordinate"),
        ({"weights": [1.0, 2.0, 3.0]}, [4], 13, "3 weights for 2 coordinates"),
        ({"ngram_counts": [0], "pool_int64s": [1, 2, 3]}, [4], 13, "has no coordinate"),
        ({"mode": "IDF", "ngram_indexes": [0, 0], "weights": [1.0, 2.0]}, [4], 13, "unequal weights share"),
        ({"mode": "TFIDF", "weights": [1.0, 2.0]}, [None], 13, "the row's length is unknown"),
        ({"mode": "TFIDF", "weights": [1.0, 2.0]}, [1024], 13, "may sum 1024 weighted hits, past 1024"),
        ({"mode": "TFIDF", "ngram_indexes": [0, 0], "weights": [1.0, -2.0]}, [4], 13, "weights of both signs"),
        ({}, [2, 2**24], 13, "may count 16777216 hits, past 2^24"),
        ({}, [2, 2, 2], 13, "rank is unknown or not 1 or 2"),
        ({"pool_int64s": [], "pool_strings": ["a", "b"]}, [4], 18, "Equal takes no strings at opset 18"),
    ],
    ids=[
        "duplicate",
        "mode",
        "lengths",
        "lengths past ngram_counts",
        "no coordinate",
        "weights",
        "more n-grams than coordinates",
        "IDF shared",
        "TFIDF of unknown length",
        "TFIDF of long rows",
        "TFIDF of both signs",
        "TF past 2^24",
        "rank 3",
        "strings at 18",
    ],
)
def test_declined(changes, shape, opset, why):
    attributes = {**BASE, **changes}
    element_type = TensorProto.STRING if attributes.get("pool_strings") else TensorProto.INT64
    attributes = {k: v for k, v in attributes.items() if v != []}
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], name="tfidf", **attributes)
    model = make_model(
        [node],
        [helper.make_tensor_value_info("x", element_type, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * len(shape))],
        opset=opset,
    )
    result = lowering.lower_model(model, ops=["TfIdfVectorizer"])
    assert "TfIdfVectorizer" in {node.op_type for node in result.model.graph.node}
    assert why in " ".join(result.report.lines())


def test_weights_of_no_hit_infinite_negative_or_nan_give_the_kernels_bits():
    """Where(count > 0, count · w, 0): an n-gram with no hit gives +0 whatever its weight (0 · inf
    would be NaN, 0 · -2 would be -0), a weight of -0 gives +0 (the kernel's sum from +0)."""
    attributes = ngram_attributes(
        (1, 1),
        0,
        "TFIDF",
        [0],
        [0, 1, 2, 3, 4, 5],
        pool_int64s=[1, 2, 3, 4, 5, 6],
        weights=[float("inf"), -2.0, float("nan"), -0.0, float("-inf"), 0.5],
    )
    model = tfidf_model(TensorProto.INT64, [2, 4], 13, **attributes)
    lowered = lowered_wholly(model, "TfIdfVectorizer")
    for x in (np.full([2, 4], 9, np.int64), np.array([[1, 2, 3, 4], [4, 5, 6, 2]], np.int64)):
        (got,) = runs_in_onnxruntime(lowered, {"x": x})
        (kernel,) = runs_in_onnxruntime(model, {"x": x})
        assert_same_values(got, kernel, str(x.tolist()))
        assert_same_values(RULE.reference(x, **attributes), kernel, "reference")
    assert np.signbit(got).tolist() == [
        [False, True, False, False, False, False],
        [False, True, False, False, True, False],
    ]


def test_shared_coordinates_lowered_where_exact():
    """IDF with weights: n-grams of one weight at a coordinate (the last hit's weight is theirs), and
    one an int32 row never matches beside another of another weight."""
    equal = ngram_attributes(
        (1, 2), 1, "IDF", [0, 2], [0, 0, 1, 0], pool_int64s=[1, 2, 1, 2, 2, 1], weights=[1.5, 1.5, 3.0, 1.5]
    )
    x = np.array([[1, 1, 2], [3, 2, 3], [3, 3, 3]], np.int64)
    check_lowered(tfidf_model(TensorProto.INT64, [3, 3], 13, **equal), x, equal, "equal weights")
    unmatched = {**equal, "pool_int64s": [1, 2**40, 1, 2, 2, 1], "weights": [1.5, 9.0, 3.0, 1.5]}
    model = tfidf_model(TensorProto.INT32, [3, 3], 13, **unmatched)
    check_lowered(model, x.astype(np.int32), unmatched, "an n-gram no int32 matches")


def test_strings_not_utf8_and_rows_of_one_axis():
    """Pool strings that are not UTF-8 are compared as the bytes they are (a string input is UTF-8)."""
    attributes = ngram_attributes(
        (2, 3),
        1,
        "TF",
        [0, 2, 4],
        [3, 0, 1, 2, 4],
        pool_strings=[b"\xff", b"a", b"a", b"\xff", b"a", b"b", b"a", b"a", b"a", b"b"],
    )
    model = tfidf_model(TensorProto.STRING, [7], 19, **attributes)
    x = np.array(["a", "b", "a", "b", "a", "a", "\xff"], object)  # ("\xff" is b"\xc3\xbf" in UTF-8: no match)
    check_lowered(model, x, attributes, "bytes")


def test_a_repeated_ngram_of_a_length_not_counted_is_no_refusal():
    """onnxruntime's kernel loads only the lengths min_gram_length to max_gram_length."""
    attributes = ngram_attributes((2, 2), 0, "TF", [0, 2], [0, 1, 2], pool_int64s=[5, 5, 1, 2])
    model = tfidf_model(TensorProto.INT64, [5], 13, **attributes)
    check_lowered(model, np.array([1, 2, 5, 1, 2]), attributes, "1-grams repeated")


def test_tfidf_with_weights_on_rows_of_unknown_length_goes_once_the_length_is_given():
    """Declined for a row of unknown length (the reason says how), lowered with --input-shape's
    sizes (``input_shapes``), within the tolerance of the kernel."""
    attributes = {**BASE, "mode": "TFIDF", "weights": [0.5, 2.0]}
    model = tfidf_model(TensorProto.INT64, ["n"], 13, **attributes)
    declined = lowering.lower_model(model, ops=["TfIdfVectorizer"])
    assert "give it with --input-shape" in " ".join(declined.report.lines())
    lowered = lowering.lower_model(model, ops=["TfIdfVectorizer"], input_shapes={"x": [40]}).model
    assert "TfIdfVectorizer" not in {node.op_type for node in lowered.graph.node}
    x = np.random.default_rng(40).integers(0, 3, 40)
    (got,) = runs_in_onnxruntime(lowered, {"x": x})
    (kernel,) = runs_in_onnxruntime(model, {"x": x})
    assert not TOLERANCE.mismatches(got, kernel).any() and got[0] == np.float32(np.count_nonzero(x == 1) * 0.5)
