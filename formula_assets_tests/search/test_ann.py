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


def test_long_rows_are_screened_short_and_the_best_of_them_scored_exactly() -> None:
    # rows of 96 dimensions whose structure lies in 24: the screen keeps those 24
    rng = np.random.default_rng(2)
    short = clustered(30_000, d=24)
    matrix = (short @ np.linalg.qr(rng.normal(size=(96, 24)))[0].T).astype(np.float32)
    matrix += 0.01 * rng.normal(size=matrix.shape).astype(np.float32)
    bias = rng.normal(scale=0.05, size=len(matrix)).astype(np.float32)
    index = InnerProductIndex(matrix, bias, exact_up_to=10_000, screen_dims=24, rescore=50)
    assert index.basis.shape == (96, 24)
    recalls = []
    for query in matrix[rng.choice(len(matrix), size=50, replace=False)]:
        truth = matrix @ query + bias
        found = index.search(query)
        assert len(found.rows) == 50  # only the best of the screen are scored exactly
        assert np.allclose(found.scores, truth[found.rows], atol=1e-5)
        top = set(found.rows[np.argsort(-found.scores)[:10]])
        recalls.append(len(set(np.argsort(-truth)[:10]) & top) / 10)
    assert np.mean(recalls) >= 0.95


def test_the_screen_keeps_the_directions_the_rows_vary_in() -> None:
    rng = np.random.default_rng(3)
    plane = np.linalg.qr(rng.normal(size=(40, 3)))[0]  # 3 orthonormal columns
    rows = (rng.normal(size=(25_000, 3)) @ plane.T).astype(np.float32)
    index = InnerProductIndex(rows, exact_up_to=10_000, screen_dims=3)
    # the screen spans the plane: projecting onto it loses nothing
    kept = plane.T @ index.basis
    assert np.allclose(np.abs(np.linalg.svd(kept, compute_uv=False)), 1.0, atol=1e-4)


def test_the_threshold_is_inclusive_and_the_probes_a_24th_of_the_lists() -> None:
    matrix = clustered(10_000)
    assert InnerProductIndex(matrix, exact_up_to=10_000).exact
    index = InnerProductIndex(matrix, exact_up_to=9_999)
    assert not index.exact and len(index) == 10_000
    lists = int(4 * np.sqrt(10_000))
    assert len(index.starts) == lists + 1 and index.probes == lists // 24


def test_each_list_holds_one_group_of_well_separated_rows() -> None:
    rng = np.random.default_rng(4)
    groups = 40
    centres = 10 * rng.normal(size=(groups, 16))
    group = rng.integers(0, groups, size=25_000)
    rows = (centres[group] + 0.1 * rng.normal(size=(25_000, 16))).astype(np.float32)
    index = InnerProductIndex(rows, exact_up_to=10_000)
    stored = group[index.members]
    for c in range(len(index.starts) - 1):
        block = stored[index.starts[c] : index.starts[c + 1]]
        assert len(set(block.tolist())) <= 1, c


def test_nearest_centroids_are_found_in_chunks_as_by_brute_force() -> None:
    from formula_assets.search.ann import _nearest

    rng = np.random.default_rng(5)
    rows, centroids = rng.normal(size=(50, 6)), rng.normal(size=(9, 6))
    distances = ((rows[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=2)
    assert np.array_equal(_nearest(rows, centroids, chunk=7), distances.argmin(axis=1))


def test_a_query_reads_the_best_clusters_and_rescores_the_best_of_their_screen() -> None:
    matrix = clustered(30_000, d=48)
    wide = InnerProductIndex(matrix, exact_up_to=10_000, screen_dims=16, rescore=30_000)
    assert wide.probes == int(4 * np.sqrt(30_000)) // 24  # 28, where a 25th would be 27
    query = matrix[11]
    short = query @ wide.basis
    best = np.argsort(-(wide.centroids @ short))[: wide.probes]
    probed = {int(wide.members[r]) for c in best for r in range(wide.starts[c], wide.starts[c + 1])}
    assert set(wide.search(query).rows.tolist()) == probed  # every probed row, nothing else

    narrow = InnerProductIndex(matrix, exact_up_to=10_000, screen_dims=16, rescore=5)
    stored = np.concatenate([np.arange(narrow.starts[c], narrow.starts[c + 1]) for c in best])
    screen = narrow.screened[stored] @ short
    expected = set(narrow.members[stored[np.argsort(-screen)[:5]]].tolist())
    assert set(narrow.search(query).rows.tolist()) == expected
