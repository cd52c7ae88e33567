"""Rows of a matrix ranked by their inner product with a query, plus a per-row bias: exactly,
by one matrix–vector product, up to `EXACT_UP_TO` rows; approximately above, by an inverted
file, so a query over many items reads a few thousand rows instead of all of them.

The inverted file (IVF) clusters the rows and stores them cluster by cluster, so a probed
cluster is one contiguous block for the matrix product (gathering scattered rows, or keeping
them in half precision, cost five times as much per query on the 100× lake). Centroids are
drawn from the rows and refined by a few rounds of k-means on a sample, in a random
projection to `PROJECTED` dimensions (the clustering only needs to put alike rows together);
every row goes to its nearest centroid. A query scores the centroids (their means in the
full space), reads the rows of the `probes` best clusters and scores those exactly. The
list's top is the exact top wherever the best rows sit in the probed clusters:
`benchmarks.ann_recall` measures how often on the 100× lake.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_UP_TO = 20_000
PROJECTED = 64
ROUNDS = 6
SAMPLE = 20_000


@dataclass(frozen=True)
class Ranked:
    rows: np.ndarray  # the rows scored (all of them when exact)
    scores: np.ndarray


class InnerProductIndex:
    def __init__(
        self,
        matrix: np.ndarray,
        bias: np.ndarray | None = None,
        exact_up_to: int = EXACT_UP_TO,
        probes: int | None = None,
        seed: int = 0,
    ) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        n = len(self.matrix)
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float32)
        self.exact = n <= exact_up_to
        if self.exact:
            return
        lists = int(4 * np.sqrt(n))
        self.probes = probes or max(8, lists // 48)
        rng = np.random.default_rng(seed)
        projection = rng.normal(size=(self.matrix.shape[1], PROJECTED)).astype(np.float32)
        projected = self.matrix @ projection
        sample = projected[rng.choice(n, size=min(n, SAMPLE), replace=False)]
        centroids = sample[rng.choice(len(sample), size=lists, replace=False)]
        for _ in range(ROUNDS):
            nearest = _nearest(sample, centroids)
            for c in range(lists):
                members = sample[nearest == c]
                if len(members):
                    centroids[c] = members.mean(axis=0)
        assignment = _nearest(projected, centroids)
        order = np.argsort(assignment, kind="stable")
        self.members = order  # position in the stored matrix → the caller's row
        self.starts = np.searchsorted(assignment[order], np.arange(lists + 1))
        self.matrix = self.matrix[order]
        if self.bias is not None:
            self.bias = self.bias[order]
        self.centroids = np.zeros((lists, self.matrix.shape[1]), dtype=np.float32)
        for c in range(lists):
            block = self.matrix[self.starts[c] : self.starts[c + 1]]
            if len(block):
                self.centroids[c] = block.mean(axis=0)

    def __len__(self) -> int:
        return len(self.matrix)

    def search(self, query: np.ndarray) -> Ranked:
        query = np.asarray(query, dtype=np.float32)
        if self.exact:
            scores = self.matrix @ query
            if self.bias is not None:
                scores = scores + self.bias
            return Ranked(np.arange(len(self.matrix)), scores)
        near = np.argpartition(-(self.centroids @ query), self.probes - 1)[: self.probes]
        blocks = [slice(self.starts[c], self.starts[c + 1]) for c in near]
        scores = np.concatenate([self.matrix[b] @ query for b in blocks])
        if self.bias is not None:
            scores = scores + np.concatenate([self.bias[b] for b in blocks])
        return Ranked(np.concatenate([self.members[b] for b in blocks]), scores)

    def dense(self, query: np.ndarray, fill: float = -np.inf) -> np.ndarray:
        """Every row's score, `fill` for the rows an approximate search did not read."""
        found = self.search(query)
        if self.exact:
            return found.scores
        out = np.full(len(self.matrix), fill, dtype=np.float32)
        out[found.rows] = found.scores
        return out


def _nearest(rows: np.ndarray, centroids: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Each row's nearest centroid (Euclidean), in chunks."""
    squared = (centroids * centroids).sum(axis=1)
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), chunk):
        block = rows[start : start + chunk]
        out[start : start + chunk] = np.argmin(squared[None, :] - 2 * block @ centroids.T, axis=1)
    return out
