"""Score matrices that are never materialized whole: query rows are scored a chunk at a time.

A test fold of 35,000 formulae would need a 9.8 GB dense score matrix per method and
direction; a scorer produces `chunk` × candidates blocks instead, so memory stays bounded
(≈ 1024 × candidates floats) and ranks come out the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import sparse

from formula_assets.retrieval_metrics import CHUNK, GoldRanks, normalise_rows


class Scorer(Protocol):
    """scores[i, j] of query row i against every candidate j; the gold of query i is j = i."""

    size: int

    def block(self, rows: np.ndarray) -> np.ndarray: ...


@dataclass
class CosineScorer:
    queries: np.ndarray
    candidates: np.ndarray

    def __post_init__(self) -> None:
        self.queries = normalise_rows(np.asarray(self.queries, dtype=np.float64))
        self.candidates = normalise_rows(np.asarray(self.candidates, dtype=np.float64))
        self.size = len(self.queries)

    def block(self, rows: np.ndarray) -> np.ndarray:
        return self.queries[rows] @ self.candidates.T

    def reverse(self) -> CosineScorer:
        return CosineScorer(self.candidates, self.queries)


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
    members: Sequence[tuple[float, Scorer]]

    def __post_init__(self) -> None:
        self.size = self.members[0][1].size

    def block(self, rows: np.ndarray) -> np.ndarray:
        total = None
        for weight, scorer in self.members:
            if weight == 0:
                continue
            part = weight * scorer.block(rows)
            total = part if total is None else total + part
        return total if total is not None else np.zeros((len(rows), self.size))


def ranks(scorer: Scorer, rows: np.ndarray | None = None, chunk: int = CHUNK) -> GoldRanks:
    """Gold ranks of the given query rows (default: all), a chunk of queries at a time."""
    rows = np.arange(scorer.size) if rows is None else np.asarray(rows)
    higher = np.empty(len(rows), dtype=np.int64)
    ties = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        block = scorer.block(part)
        gold = block[np.arange(len(part)), part][:, None]
        higher[start : start + chunk] = (block > gold).sum(axis=1)
        ties[start : start + chunk] = (block == gold).sum(axis=1) - 1
    return GoldRanks(higher, ties)
