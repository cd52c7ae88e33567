"""Ranking rows by inner product: exact below the threshold, an inverted file above it that
finds what the exact product finds on data with structure, and reads far fewer rows."""

from __future__ import annotations

import numpy as np

from formula_assets.search.ann import InnerProductIndex


def clustered(n: int, d: int = 32, groups: int = 200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, d))
    rows = centres[rng.integers(0, groups, size=n)] + 0.3 * rng.normal(size=(n, d))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_small_matrices_are_ranked_exactly_with_the_bias() -> None:
    matrix = clustered(500)
    bias = np.linspace(-0.1, 0.1, 500).astype(np.float32)
    index = InnerProductIndex(matrix, bias)
    query = matrix[7]
    found = index.search(query)
    assert index.exact and np.array_equal(found.rows, np.arange(500))
    assert np.allclose(found.scores, matrix @ query + bias, atol=1e-6)
    assert np.allclose(index.dense(query), matrix @ query + bias, atol=1e-6)


def test_the_inverted_file_finds_the_top_of_the_exact_ranking() -> None:
    matrix = clustered(30_000)
    index = InnerProductIndex(matrix, exact_up_to=10_000)
    assert not index.exact
    rng = np.random.default_rng(1)
    recalls, read = [], []
    for query in matrix[rng.choice(len(matrix), size=50, replace=False)]:
        exact = set(np.argsort(-(matrix @ query))[:10])
        found = index.search(query)
        read.append(len(found.rows))
        top = set(found.rows[np.argsort(-found.scores)[:10]])
        recalls.append(len(exact & top) / 10)
    assert np.mean(recalls) >= 0.95
    assert np.mean(read) < len(matrix) / 5  # far fewer rows than all of them
    dense = index.dense(matrix[0])
    assert np.isneginf(dense).sum() == len(matrix) - len(index.search(matrix[0]).rows)
