"""Rows of a matrix ranked by their inner product with a query, plus a per-row bias: exactly,
by one matrix–vector product, up to `EXACT_UP_TO` rows; approximately above, by an inverted
file, so a query over many items reads a few thousand short rows instead of all of them.

Above the threshold every row is also kept in its first `SCREEN_DIMS` principal directions
(of the rows' uncentred second moment, estimated on a sample): the ensemble's rows have
thousands of dimensions, and reading them was most of a query's time. The inverted file (IVF)
clusters the rows in that projection by a few rounds of k-means on a sample and stores them
cluster by cluster, so a probed cluster is one contiguous block for the matrix product
(gathering scattered rows, or keeping them in half precision, cost five times as much per
query on the 100× lake). A query scores the centroids and the rows of the `probes` best
clusters in the projection, then scores the `RESCORE` best of those exactly: the scores
returned are the exact ones. `RESCORE` exceeds the depth fusion reads of a channel (100).
The list's top is the exact top wherever the best rows survive both cuts:
`benchmarks.ann_recall` measures how often on the 100× lake.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_UP_TO = 20_000
SCREEN_DIMS = 128
RESCORE = 256
ROUNDS = 6
SAMPLE = 20_000


@dataclass(frozen=True)
class Ranked:
    rows: np.ndarray  # the rows scored exactly (all of them when exact)
    scores: np.ndarray


class InnerProductIndex:
    def __init__(
        self,
        matrix: np.ndarray,
        bias: np.ndarray | None = None,
        exact_up_to: int = EXACT_UP_TO,
        probes: int | None = None,
        seed: int = 0,
        screen_dims: int = SCREEN_DIMS,
        rescore: int = RESCORE,
    ) -> None:
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        n = len(self.matrix)
        self.bias = None if bias is None else np.asarray(bias, dtype=np.float32)
        self.exact = n <= exact_up_to
        if self.exact:
            return
        lists = int(4 * np.sqrt(n))
        self.probes = probes or max(8, lists // 24)
        self.rescore = rescore
        rng = np.random.default_rng(seed)
        sample_rows = rng.choice(n, size=min(n, SAMPLE), replace=False)
        self.basis = _principal_directions(self.matrix[sample_rows], screen_dims)
        screened = self.matrix @ self.basis
        sample = screened[sample_rows]
        centroids = sample[rng.choice(len(sample), size=lists, replace=False)]
        for _ in range(ROUNDS):
            nearest = _nearest(sample, centroids)
            for c in range(lists):
                members = sample[nearest == c]
                if len(members):
                    centroids[c] = members.mean(axis=0)
        assignment = _nearest(screened, centroids)
        order = np.argsort(assignment, kind="stable")
        self.members = order  # position in the stored matrix → the caller's row
        self.starts = np.searchsorted(assignment[order], np.arange(lists + 1))
        self.matrix = self.matrix[order]
        self.screened = np.ascontiguousarray(screened[order])
        self.bias = np.zeros(n, dtype=np.float32) if self.bias is None else self.bias[order]
        self.centroids = np.zeros((lists, self.screened.shape[1]), dtype=np.float32)
        for c in range(lists):
            block = self.screened[self.starts[c] : self.starts[c + 1]]
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
        short = query @ self.basis
        near = np.argpartition(-(self.centroids @ short), self.probes - 1)[: self.probes]
        blocks = [slice(self.starts[c], self.starts[c + 1]) for c in near]
        read = np.concatenate([np.arange(b.start, b.stop) for b in blocks])
        screen = np.concatenate([self.screened[b] @ short for b in blocks]) + self.bias[read]
        if len(read) > self.rescore:
            read = read[np.argpartition(-screen, self.rescore - 1)[: self.rescore]]
        read.sort()  # the exact rows read in storage order
        scores = self.matrix[read] @ query + self.bias[read]
        return Ranked(self.members[read], scores)

    def dense(self, query: np.ndarray, fill: float = -np.inf) -> np.ndarray:
        """Every row's score, `fill` for the rows an approximate search did not score."""
        found = self.search(query)
        if self.exact:
            return found.scores
        out = np.full(len(self.matrix), fill, dtype=np.float32)
        out[found.rows] = found.scores
        return out


def _principal_directions(sample: np.ndarray, dims: int) -> np.ndarray:
    """The `dims` directions that keep most of the rows' inner products (the top eigenvectors
    of their uncentred second moment), as columns; all of them when the rows are shorter."""
    if sample.shape[1] <= dims:
        return np.eye(sample.shape[1], dtype=np.float32)
    moment = sample.T.astype(np.float64) @ sample
    _, vectors = np.linalg.eigh(moment)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)


def _nearest(rows: np.ndarray, centroids: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """Each row's nearest centroid (Euclidean), in chunks."""
    squared = (centroids * centroids).sum(axis=1)
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), chunk):
        block = rows[start : start + chunk]
        out[start : start + chunk] = np.argmin(squared[None, :] - 2 * block @ centroids.T, axis=1)
    return out
