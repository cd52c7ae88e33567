"""Where each query's gold candidate ranks: the one implementation behind Table 1's recall,
Table 2, early stopping on validation and search.

A scorer gives the scores of some query rows against every candidate, a chunk of rows at a
time, so no score matrix is ever held whole (a 35,000-formula fold would need 9.8 GB per method
and direction); the gold of query row i is candidate i.

Ties with the gold are broken at random, and the metrics are the exact expectations over that
randomness: with g candidates scoring higher and t others scoring the same, the gold lands
uniformly on positions g+1 … g+t+1, so P(rank ≤ k) = clip((k − g) / (t + 1), 0, 1) and
E[1/rank] = (H(g+t+1) − H(g)) / (t + 1). A tie is never resolved in the gold's favour, and a
score that is not finite is an error, not a rank.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from scipy import sparse

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
        return (harmonic(g + t + 1) - harmonic(g)) / (t + 1)

    def summary(self, ks: tuple[int, ...] = KS) -> dict[str, float]:
        out = {f"recall_at_{k}": float(self.recall_at(k).mean()) for k in ks}
        out["mrr"] = float(self.reciprocal_rank().mean())
        return out


def harmonic(n: np.ndarray) -> np.ndarray:
    """H(n) for non-negative reals, H(0) = 0."""
    from scipy.special import digamma  # here: a search from a cold process never ranks ties

    return digamma(n + 1) - digamma(1)


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


class Scorer(Protocol):
    """scores[i, j] of query row i against every candidate j; the gold of query i is j = i."""

    size: int

    def block(self, rows: np.ndarray) -> np.ndarray: ...


@dataclass
class DotScorer:
    """Dot products of query and candidate rows, computed in the inputs' own precision."""

    queries: np.ndarray
    candidates: np.ndarray

    def __post_init__(self) -> None:
        self.size = len(self.queries)

    def block(self, rows: np.ndarray) -> np.ndarray:
        return self.queries[rows] @ self.candidates.T

    def reverse(self) -> DotScorer:
        return type(self)(self.candidates, self.queries)


@dataclass
class CosineScorer(DotScorer):
    """Cosine similarity: rows are L2-normalised (in float64) once, then dot products."""

    def __post_init__(self) -> None:
        self.queries = normalise_rows(np.asarray(self.queries, dtype=np.float64))
        self.candidates = normalise_rows(np.asarray(self.candidates, dtype=np.float64))
        super().__post_init__()


@dataclass
class MatrixScorer:
    """A small score matrix already in memory."""

    scores: np.ndarray

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        self.size = len(self.scores)

    def block(self, rows: np.ndarray) -> np.ndarray:
        return self.scores[rows]


@dataclass
class SparseScorer:
    """scores = query term counts (queries × terms) @ term weights (terms × candidates)."""

    counts: sparse.csr_matrix
    weights: sparse.csr_matrix

    def __post_init__(self) -> None:
        self.size = self.counts.shape[0]

    def block(self, rows: np.ndarray) -> np.ndarray:
        return (self.counts[rows] @ self.weights).toarray()


@dataclass
class WeightedScorer:
    """Σ weight × member scores; members with weight 0 are not computed."""

    members: Sequence[tuple[float, Scorer]]

    def __post_init__(self) -> None:
        self.size = self.members[0][1].size

    def block(self, rows: np.ndarray) -> np.ndarray:
        terms = ((weight, lambda s=scorer: s.block(rows)) for weight, scorer in self.members)
        return weighted_sum(terms, (len(rows), self.size))


def weighted_sum(
    terms: Iterable[tuple[float, Callable[[], np.ndarray]]], shape: tuple[int, int]
) -> np.ndarray:
    """Σ weight × block, in the terms' order; a block of weight 0 is neither computed nor
    added (zeros when every weight is 0)."""
    total = None
    for weight, block in terms:
        if weight == 0:
            continue
        part = weight * block()
        total = part if total is None else total + part
    return total if total is not None else np.zeros(shape)


def gold_ranks(scorer: Scorer, rows: np.ndarray | None = None, chunk: int = CHUNK) -> GoldRanks:
    """Gold ranks of the given query rows (default: all), `chunk` queries at a time."""
    rows = np.arange(scorer.size) if rows is None else np.asarray(rows)
    higher = np.empty(len(rows), dtype=np.int64)
    ties = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        block = np.asarray(scorer.block(part), dtype=np.float64)
        higher[start : start + chunk], ties[start : start + chunk] = block_ranks(block, part)
    return GoldRanks(higher, ties)


def block_ranks(block: np.ndarray, part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(higher, ties) of the gold of each query row of a block of scores (rows `part` of a
    scorer, every candidate)."""
    require_finite(block, part)
    gold = block[np.arange(len(part)), part][:, None]
    return (block > gold).sum(axis=1), (block == gold).sum(axis=1) - 1


def require_finite(block: np.ndarray, part: np.ndarray) -> None:
    """A non-finite score (rows `part` of a block) is an error naming its query row."""
    if not np.isfinite(block).all():
        bad = int(part[np.flatnonzero(~np.isfinite(block).all(axis=1))[0]])
        raise ValueError(f"non-finite score for query row {bad}: ranks would be meaningless")


def retrieval_summary(queries: np.ndarray, candidates: np.ndarray) -> dict[str, float]:
    """R@k and MRR of dot-product retrieval where query i's gold is candidate i."""
    return gold_ranks(DotScorer(queries, candidates)).summary()
