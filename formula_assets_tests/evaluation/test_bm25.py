"""BM25 baseline: shared tokens score, others do not; ties are left to the fair ranker.

Okapi BM25 with k1 = 1.5 and b = 0.75 and Lucene's IDF log(1 + (N - n + 1/2) / (n + 1/2)),
checked against numbers worked out by hand and against a from-scratch implementation here.
"""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formula_assets.evaluation.bm25 import (
    Bm25Index,
    LuceneBM25,
    bm25_scorer,
    bm25_scores,
    reference_scores,
    tokenize,
)
from formula_assets.evaluation.ranking import MatrixScorer, SparseScorer, gold_ranks

K1, B = 1.5, 0.75

# Three documents of 3, 2 and 4 tokens (average length 3): "a" in all three, "x" in two,
# "y" and "z" in one.
DOCUMENTS = ["a x y", "A x", "a z z z"]


def test_tokenizer_splits_words_and_symbols() -> None:
    assert tokenize("power E = m c 2") == ["power", "e", "=", "m", "c", "2"]
    assert tokenize("Speed of LIGHT") == ["speed", "of", "light"]
    assert tokenize("a+b=(c)") == ["a", "+", "b", "=", "(", "c", ")"]
    assert tokenize("  ") == []


def test_lucene_idf_by_hand() -> None:
    index = LuceneBM25([tokenize(d) for d in DOCUMENTS])
    # N = 3: log(1 + (3 - n + 0.5) / (n + 0.5))
    assert index.idf["a"] == pytest.approx(math.log(1 + 0.5 / 3.5))  # n = 3: log(8/7)
    assert index.idf["x"] == pytest.approx(math.log(1 + 1.5 / 2.5))  # n = 2: log(1.6)
    assert index.idf["y"] == pytest.approx(math.log(8 / 3))  # n = 1: log(1 + 2.5 / 1.5)
    assert index.idf["z"] == pytest.approx(math.log(8 / 3))
    assert all(v > 0 for v in index.idf.values())  # even a term found in every document


def test_scores_by_hand() -> None:
    queries = ["x", "z", "a a", "x unknown", "", "y x"]
    scores = bm25_scores(queries, DOCUMENTS)
    idf_a, idf_x, idf_y, idf_z = math.log(8 / 7), math.log(1.6), math.log(8 / 3), math.log(8 / 3)
    # term weight f (k1 + 1) / (f + k1 (1 - b + b |d| / 3)): the length norms are 1.5, 1.125
    # and 1.875 for documents of 3, 2 and 4 tokens.
    one = [1.0, 2.5 / 2.125, 2.5 / 2.875]  # a term found once, per document
    expected = [
        [idf_x * one[0], idf_x * one[1], 0.0],
        [0.0, 0.0, idf_z * 3 * 2.5 / (3 + 1.875)],
        [2 * idf_a * one[0], 2 * idf_a * one[1], 2 * idf_a * one[2]],  # a repeat counts again
        [idf_x * one[0], idf_x * one[1], 0.0],  # a term no document has adds nothing
        [0.0, 0.0, 0.0],
        [(idf_y + idf_x) * one[0], idf_x * one[1], 0.0],
    ]
    for row, want in zip(scores.tolist(), expected, strict=True):
        assert row == pytest.approx(want)
    assert reference_scores(queries, DOCUMENTS) == pytest.approx(np.array(expected))


def test_an_empty_document_is_a_document_without_matches() -> None:
    # N = 2 and both documents one token long: "x" scores log(1 + 1.5 / 1.5) × 1.
    scores = bm25_scores(["x", "y"], ["", "x"])
    assert scores.tolist() == [[0.0, pytest.approx(math.log(2))], [0.0, 0.0]]
    assert reference_scores(["x", "y"], ["", "x"]).tolist() == scores.tolist()


def test_no_queries_score_an_empty_matrix() -> None:
    assert reference_scores([], DOCUMENTS).shape == (0, 3)
    assert bm25_scores([], DOCUMENTS).shape == (0, 3)


def test_the_scorer_is_sparse_and_chunked() -> None:
    scorer = bm25_scorer(["x", "z", "a a", "y x"], [*DOCUMENTS, "x x"])
    assert isinstance(scorer, SparseScorer) and scorer.size == 4
    dense = scorer.block(np.arange(4))
    assert scorer.block(np.array([3, 1])) == pytest.approx(dense[[3, 1]])
    for chunk in (1, 2, 10):
        ranks = gold_ranks(scorer, chunk=chunk)
        full = gold_ranks(MatrixScorer(dense))
        assert ranks.higher.tolist() == full.higher.tolist()
        assert ranks.ties.tolist() == full.ties.tolist()


def test_shared_tokens_rank_the_right_document_first() -> None:
    scores = bm25_scores(
        ["pressure p", "kinetic energy"], ["energy of motion", "pressure in fluids"]
    )
    assert scores.shape == (2, 2)
    assert scores[0, 1] > scores[0, 0] and scores[1, 0] > scores[1, 1]


def test_no_overlap_means_ties_not_a_free_hit() -> None:
    scores = bm25_scores(["x", "y", "z"], ["alpha", "beta", "gamma"])
    assert np.all(scores == 0)
    ranks = gold_ranks(MatrixScorer(scores))
    assert ranks.recall_at(1).tolist() == [1 / 3] * 3  # not 1.0: the gold does not win ties


def test_one_query_over_the_index_equals_the_scorer() -> None:
    """`Bm25Index.scores` (the names channel's, one query at a time) against the chunked
    scorer: repeated terms count again, unknown ones add nothing."""
    query = "x a x unknown"
    index = Bm25Index([tokenize(d) for d in DOCUMENTS])
    expected = bm25_scores([query], DOCUMENTS)[0]
    np.testing.assert_allclose(index.scores(tokenize(query)), expected)
    assert expected[2] > 0  # "a" alone still scores the third document
    assert not index.scores(["unknown"]).any()


def test_the_ceiling_is_every_term_at_its_best_and_an_unknown_one_as_the_rarest() -> None:
    index = Bm25Index([tokenize(d) for d in DOCUMENTS])
    everything = index.weights.toarray()
    best = dict(zip(index.vocabulary, everything.max(axis=1), strict=True))
    assert index.ceiling(["x", "z"]) == pytest.approx(best["x"] + best["z"])
    # no document holds both at their best: the ceiling is above every score
    assert index.scores(["x", "z"]).max() < index.ceiling(["x", "z"])
    assert index.ceiling(["a", "a"]) == pytest.approx(2 * best["a"])
    assert index.ceiling(["unknown"]) == pytest.approx(everything.max())
    assert index.ceiling([]) == 0.0


def test_an_index_of_no_documents_scores_nothing_and_covers_nothing() -> None:
    index = Bm25Index([])
    assert index.scores(["x"]).shape == (0,)
    assert index.ceiling(["x"]) == 0.0 and index.rarest() == 0.0
    assert index.best(["x"]) == [None]


def test_vectorised_scores_equal_rank_bm25() -> None:
    from formula_assets.ingest.snapshot import read_snapshot_items

    items = read_snapshot_items()[:150]
    documents = [" ".join(filter(None, [i["itemLabel"], i["itemDescription"]])) for i in items]
    queries = [" ".join(i["conceptLabels"]) or "x" for i in items] + ["energy energy", "??"]
    assert np.allclose(bm25_scores(queries, documents), reference_scores(queries, documents))


# ---------------------------------------------------------------------------------------------
# Property: both implementations equal BM25 written out here from its definition.


def oracle(queries: list[str], documents: list[str]) -> np.ndarray:
    docs = [tokenize(d) or ["∅"] for d in documents]
    n_docs = len(docs)
    average = sum(len(d) for d in docs) / n_docs
    containing = Counter(term for d in docs for term in set(d))
    out = np.zeros((len(queries), n_docs))
    for i, query in enumerate(queries):
        for j, doc in enumerate(docs):
            counts = Counter(doc)
            for term in tokenize(query):
                f = counts[term]
                if not f:
                    continue
                n = containing[term]
                idf = math.log(1 + (n_docs - n + 0.5) / (n + 0.5))
                length = K1 * (1 - B + B * len(doc) / average)
                out[i, j] += idf * f * (K1 + 1) / (f + length)
    return out


_WORDS = st.sampled_from(["a", "b", "c", "x", "y", "=", "+", "Q"])
_TEXT = st.lists(_WORDS, max_size=6).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    documents=st.lists(_TEXT, min_size=1, max_size=6),
    queries=st.lists(_TEXT, min_size=1, max_size=4),
)
def test_scores_equal_bm25_from_its_definition(documents, queries) -> None:
    expected = oracle(queries, documents)
    assert bm25_scores(queries, documents) == pytest.approx(expected, abs=1e-12)
    assert reference_scores(queries, documents) == pytest.approx(expected, abs=1e-12)
