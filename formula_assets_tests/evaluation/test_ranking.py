"""Retrieval metrics against hand-computed rankings, ties never favouring the gold."""

import numpy as np
import pytest

from formula_assets.evaluation.ranking import DotScorer, MatrixScorer, gold_ranks


def test_hand_computed_ranks() -> None:
    scores = np.array(
        [
            [0.9, 0.1, 0.2],  # gold first
            [0.5, 0.4, 0.6],  # gold third
            [0.1, 0.8, 0.3],  # gold second
        ]
    )
    ranks = gold_ranks(MatrixScorer(scores))
    assert ranks.higher.tolist() == [0, 2, 1]
    assert ranks.ties.tolist() == [0, 0, 0]
    summary = ranks.summary(ks=(1, 2))
    assert summary["recall_at_1"] == pytest.approx(1 / 3)
    assert summary["recall_at_2"] == pytest.approx(2 / 3)
    assert summary["mrr"] == pytest.approx((1 + 1 / 3 + 1 / 2) / 3)


def test_ties_are_broken_fairly() -> None:
    # Every candidate scores the same: the gold is anywhere among 4 with equal chance.
    ranks = gold_ranks(MatrixScorer(np.zeros((4, 4))))
    assert ranks.higher.tolist() == [0, 0, 0, 0] and ranks.ties.tolist() == [3, 3, 3, 3]
    assert ranks.recall_at(1).tolist() == [0.25] * 4
    assert ranks.recall_at(2).tolist() == [0.5] * 4
    assert ranks.reciprocal_rank() == pytest.approx([(1 + 1 / 2 + 1 / 3 + 1 / 4) / 4] * 4)


def test_chunked_matches_dense() -> None:
    rng = np.random.default_rng(3)
    q, c = rng.normal(size=(50, 8)), rng.normal(size=(50, 8))
    dense = gold_ranks(MatrixScorer(q @ c.T))
    chunked = gold_ranks(DotScorer(q, c), chunk=7)
    assert chunked.higher.tolist() == dense.higher.tolist()
    assert chunked.summary() == dense.summary()


def test_sampled_query_rows_keep_their_gold() -> None:
    rng = np.random.default_rng(4)
    q, c = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    full = gold_ranks(DotScorer(q, c))
    rows = np.array([3, 17, 42])
    sampled = gold_ranks(DotScorer(q, c), rows=rows)
    assert sampled.higher.tolist() == full.higher[rows].tolist()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_raise(bad: float) -> None:
    scores = np.eye(3)
    scores[1, 2] = bad
    with pytest.raises(ValueError, match="non-finite score for query row 1"):
        gold_ranks(MatrixScorer(scores))
