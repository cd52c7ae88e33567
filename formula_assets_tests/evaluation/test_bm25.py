"""BM25 baseline: shared tokens score, others do not; ties are left to the fair ranker."""

import numpy as np

from formula_assets.evaluation.bm25 import bm25_scores, tokenize
from formula_assets.evaluation.ranking import MatrixScorer, gold_ranks


def test_tokenizer_splits_words_and_symbols() -> None:
    assert tokenize("power E = m c 2") == ["power", "e", "=", "m", "c", "2"]
    assert tokenize("Speed of LIGHT") == ["speed", "of", "light"]


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


def test_vectorised_scores_equal_rank_bm25() -> None:
    from formula_assets.evaluation.bm25 import reference_scores
    from formula_assets.ingest.snapshot import read_snapshot_items

    items = read_snapshot_items()[:150]
    documents = [" ".join(filter(None, [i["itemLabel"], i["itemDescription"]])) for i in items]
    queries = [" ".join(i["conceptLabels"]) or "x" for i in items] + ["energy energy", "??"]
    assert np.allclose(bm25_scores(queries, documents), reference_scores(queries, documents))
