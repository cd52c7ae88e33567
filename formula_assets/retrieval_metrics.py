"""Cross-modal retrieval metrics with fair tie handling, computed in bounded-memory chunks.

Query i's gold candidate is candidate i. A tie with the gold is broken at random, and the
metrics are the exact expectations over that randomness: with g candidates scoring higher and
t others scoring the same, the gold lands uniformly on positions g+1 … g+t+1, so
P(rank ≤ k) = clip((k − g) / (t + 1), 0, 1) and E[1/rank] = (H(g+t+1) − H(g)) / (t + 1).
Ties are therefore never resolved in the gold item's favour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

KS = (1, 5, 10)
CHUNK = 1024


@dataclass(frozen=True)
class GoldRanks:
    """Per query: candidates scoring strictly higher than the gold, and those tying with it."""

    higher: np.ndarray
    ties: np.ndarray

    def recall_at(self, k: int) -> np.ndarray:
        return np.clip((k - self.higher) / (self.ties + 1), 0.0, 1.0)

    def reciprocal_rank(self) -> np.ndarray:
        g, t = self.higher.astype(np.float64), self.ties.astype(np.float64)
        return (_harmonic(g + t + 1) - _harmonic(g)) / (t + 1)

    def summary(self, ks: tuple[int, ...] = KS) -> dict[str, float]:
        out = {f"recall_at_{k}": float(self.recall_at(k).mean()) for k in ks}
        out["mrr"] = float(self.reciprocal_rank().mean())
        return out


def _harmonic(n: np.ndarray) -> np.ndarray:
    """H(n) for non-negative reals, H(0) = 0."""
    return digamma(n + 1) - digamma(1)


def gold_ranks_from_scores(scores: np.ndarray) -> GoldRanks:
    """scores[i, j]: how well candidate j matches query i; candidate i is the gold."""
    gold = np.diagonal(scores)[:, None]
    higher = (scores > gold).sum(axis=1)
    ties = (scores == gold).sum(axis=1) - 1
    return GoldRanks(higher.astype(np.int64), ties.astype(np.int64))


def gold_ranks(
    queries: np.ndarray,
    candidates: np.ndarray,
    score: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    chunk: int = CHUNK,
    gold: np.ndarray | None = None,
) -> GoldRanks:
    """Ranks of each query's gold among all candidates, `chunk` queries at a time.

    The gold of query i is candidate `gold[i]` (default: candidate i). Memory is bounded by
    `chunk` × candidates whatever the number of queries. `score(q, c)` defaults to the dot
    product (cosine for unit vectors).
    """
    score = score or (lambda q, c: q @ c.T)
    n = len(queries)
    gold_index = np.arange(n) if gold is None else np.asarray(gold)
    higher = np.empty(n, dtype=np.int64)
    ties = np.empty(n, dtype=np.int64)
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        block = np.asarray(score(queries[start:stop], candidates), dtype=np.float64)
        gold = block[np.arange(stop - start), gold_index[start:stop]][:, None]
        higher[start:stop] = (block > gold).sum(axis=1)
        ties[start:stop] = (block == gold).sum(axis=1) - 1
    return GoldRanks(higher, ties)


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)
