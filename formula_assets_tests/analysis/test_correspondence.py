"""Table 1 metrics: building blocks against closed forms written here, invariances, known
answers on constructed data, and every metric of `correspondence` against an independent
computation (same seed, same order of random draws)."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg, stats

from formula_assets.analysis import correspondence as correspondence_module
from formula_assets.analysis.correspondence import (
    METRICS_SCHEMA,
    PAPER_TABLE_1,
    CorrespondenceResult,
    CorrespondenceSettings,
    _pearson,
    _whitener,
    canonical_correlations,
    correspondence,
    heldout_canonical_correlations,
    linear_cka,
    pca_project,
    rsa,
    standardise,
)

FAST = CorrespondenceSettings(permutations=200, rsa_permutations=49, seed=1)
PROPERTY = settings(max_examples=15, deadline=None, derandomize=True)


def data(n: int = 300, d: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


# --- independent computations -----------------------------------------------------------------


def oracle_pca(x: np.ndarray, k: int) -> np.ndarray:
    """Projection on the top-k eigenvectors of the scatter matrix, each signed so that its
    largest-magnitude loading is positive."""
    c = x - x.mean(axis=0)
    values, vectors = np.linalg.eigh(c.T @ c)
    v = vectors[:, np.argsort(values)[::-1][:k]]
    biggest = np.abs(v).argmax(axis=0)
    return c @ (v * np.sign(v[biggest, np.arange(v.shape[1])]))


def unit_rows(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


def oracle_cca(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Canonical correlations = cosines of the principal angles between the centred column
    spaces (scaling columns does not change a span), largest first."""
    angles = linalg.subspace_angles(x - x.mean(axis=0), y - y.mean(axis=0))
    return np.sort(np.cos(angles))[::-1]


def oracle_heldout(x, y, k, fraction, order) -> np.ndarray:
    """Covariance-form CCA (Sxx^-1/2 Sxy Syy^-1/2) fitted on the training rows, Pearson on the
    held-out rows per component."""
    n_test = max(3, round(len(x) * fraction))
    test, train = order[:n_test], order[n_test:]
    mx, my = x[train].mean(axis=0), y[train].mean(axis=0)
    xc, yc = x[train] - mx, y[train] - my

    def inverse_sqrt(m: np.ndarray) -> np.ndarray:
        w, v = np.linalg.eigh(m)
        return v @ np.diag(w**-0.5) @ v.T

    ix, iy = inverse_sqrt(xc.T @ xc), inverse_sqrt(yc.T @ yc)
    p, s, qt = np.linalg.svd(ix @ (xc.T @ yc) @ iy)
    k = min(k, len(s))
    a = (x[test] - mx) @ ix @ p[:, :k]
    b = (y[test] - my) @ iy @ qt.T[:, :k]
    return np.array([np.corrcoef(a[:, j], b[:, j])[0, 1] for j in range(k)])


def oracle_cka(x: np.ndarray, y: np.ndarray) -> float:
    """HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) with n × n linear Gram matrices."""
    n = len(x)
    h = np.eye(n) - np.ones((n, n)) / n
    k, l_ = h @ (x @ x.T) @ h, h @ (y @ y.T) @ h
    return float((k * l_).sum() / np.sqrt((k * k).sum() * (l_ * l_).sum()))


def oracle_rsa(x, y, perms) -> tuple[float, float, float]:
    """Spearman ρ of the upper triangles of the cosine matrices; Mantel p over the given
    permutations of formulae (a tie with |ρ| counts as extreme); parametric p."""
    iu = np.triu_indices(len(x), k=1)
    sx, sy = unit_rows(x) @ unit_rows(x).T, unit_rows(y) @ unit_rows(y).T
    rho, parametric = stats.spearmanr(sx[iu], sy[iu])
    exceed = sum(
        abs(stats.spearmanr(sx[iu], sy[p][:, p][iu])[0]) >= abs(rho) - 1e-12 for p in perms
    )
    return float(rho), (exceed + 1) / (len(perms) + 1), float(parametric)


def oracle_disparity(a: np.ndarray, b: np.ndarray) -> float:
    """1 − (nuclear norm of AᵀB)² for centred, unit-Frobenius A and B."""
    a, b = a - a.mean(axis=0), b - b.mean(axis=0)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    return float(1 - np.linalg.svd(a.T @ b, compute_uv=False).sum() ** 2)


def oracle_hits(zx: np.ndarray, zy: np.ndarray, rows: np.ndarray, k: int) -> np.ndarray:
    """P(gold in the top k) when ties with the gold are broken uniformly at random."""
    scores = zx[rows] @ zy.T
    gold = scores[np.arange(len(rows)), rows]
    higher = (scores > gold[:, None]).sum(axis=1)
    ties = (scores == gold[:, None]).sum(axis=1) - 1
    return np.array(
        [min(1.0, max(0.0, (k - h) / (t + 1))) for h, t in zip(higher, ties, strict=True)]
    )


def oracle_correspondence(x: np.ndarray, y: np.ndarray, s: CorrespondenceSettings):
    """Every metric and detail, computed independently; the random draws in the documented
    order: cosine null, one null pairing, query sample, RSA subset, Mantel permutations, CCA
    re-pairing, held-out split."""
    n = len(x)
    rng = np.random.default_rng(s.seed)
    k = min(s.pca_dimensions, x.shape[1], y.shape[1], n - 1)
    px, py = oracle_pca(x, k), oracle_pca(y, k)
    zx, zy = unit_rows(px), unit_rows(py)
    cosines = (zx * zy).sum(axis=1)
    null = np.array(
        [(zx * zy[rng.permutation(n)]).sum(axis=1).mean() for _ in range(s.permutations)]
    )
    centre = null.mean()
    extreme = int((np.abs(null - centre) >= abs(cosines.mean() - centre)).sum())
    null_cosines = (zx * zy[rng.permutation(n)]).sum(axis=1)
    if n > s.recall_max_queries:
        queries = np.sort(rng.choice(n, s.recall_max_queries, replace=False))
    else:
        queries = np.arange(n)
    if n > s.rsa_max_formulae:
        subset = np.sort(rng.choice(n, s.rsa_max_formulae, replace=False))
    else:
        subset = np.arange(n)
    perms = [rng.permutation(len(subset)) for _ in range(s.rsa_permutations)]
    rho, mantel, parametric = oracle_rsa(x[subset], y[subset], perms)
    kc = min(s.cca_components, x.shape[1], y.shape[1], n - 2)
    in_sample = oracle_cca(x, y)[:kc]
    shuffled = oracle_cca(x, y[rng.permutation(n)])[:kc]
    heldout = oracle_heldout(x, y, kc, s.heldout_fraction, rng.permutation(n))
    pca = {"pca_dimensions": k, "formulae": n}
    rsa_detail = {
        "formulae": len(subset),
        "pairs": len(subset) * (len(subset) - 1) // 2,
        "mantel_permutations": s.rsa_permutations,
        "parametric_p_value": parametric,
    }
    metrics = {
        "mean_cosine": (cosines.mean(), pca),
        "median_cosine": (np.median(cosines), pca),
        "std_cosine": (cosines.std(), pca),
        "permutation_p_value": (
            (1 + extreme) / (1 + s.permutations),
            {
                "observed_mean_cosine": cosines.mean(),
                "test": "two-sided: |null − null mean| ≥ |observed − null mean|",
                "null_mean": null.mean(),
                "null_std": null.std(),
                "permutations": s.permutations,
                "seed": s.seed,
            },
        ),
        "permutation_null_mean": (null.mean(), None),
        "permutation_null_std": (null.std(), None),
    }
    for kk in (1, 5, 10):
        hits = oracle_hits(zx, zy, queries, kk)
        metrics[f"recall_at_{kk}"] = (
            hits.mean(),
            {
                "direction": "structural_to_semantic",
                "semantic_to_structural": oracle_hits(zy, zx, queries, kk).mean(),
                "chance": min(kk, n) / n,
                "queries": len(queries),
                "standard_error": hits.std(ddof=1) / np.sqrt(len(queries)),
            },
        )
    metrics |= {
        "rsa_spearman": (rho, rsa_detail),
        "rsa_p_value": (mantel, {"test": "Mantel permutation test, two-sided", **rsa_detail}),
        "procrustes_error": (
            oracle_disparity(px, py),
            {"pca_dimensions": k, "measure": "scipy disparity"},
        ),
        "linear_cka": (oracle_cka(x, y), None),
        "cca_mean": (in_sample.mean(), {"components": kc, "inputs": "standardised"}),
        "cca_top10": (
            in_sample[:10].mean(),
            {
                "minimum": in_sample[:10].min(),
                "maximum": in_sample[:10].max(),
                "components": len(in_sample[:10]),
            },
        ),
        "cca_mean_shuffled": (
            shuffled.mean(),
            {
                "components": kc,
                "meaning": "in-sample CCA of randomly re-paired rows: the overfitting floor",
            },
        ),
        "cca_mean_heldout": (
            heldout.mean(),
            {
                "components": len(heldout),
                "fit_fraction": 1 - s.heldout_fraction,
                "seed": s.seed,
            },
        ),
    }
    arrays = {
        "cosines": cosines,
        "null_means": null,
        "null_cosines": null_cosines,
        "cca_in_sample": in_sample,
        "cca_shuffled": shuffled,
        "cca_heldout": heldout,
    }
    return metrics, arrays


# --- constants and containers -----------------------------------------------------------------


def test_paper_table_1_as_published() -> None:
    assert PAPER_TABLE_1 == {
        "mean_cosine": 0.0847,
        "median_cosine": 0.0939,
        "std_cosine": 0.2114,
        "rsa_spearman": 0.1215,
        "procrustes_error": 0.8299,
        "linear_cka": 0.1566,
        "cca_top10": ".85–.91",
        "cca_mean": 0.8161,
        "recall_at_1": 0.0006,
        "recall_at_5": 0.0068,
        "recall_at_10": 0.0125,
        "permutation_p_value": 0.0847,
    }


def test_default_settings_are_the_assets_defaults_and_the_paper_protocol() -> None:
    from formula_assets.defs.analysis.correspondence_metrics import CorrespondenceConfig

    defaults = dataclasses.asdict(CorrespondenceSettings())
    assert defaults == CorrespondenceConfig().model_dump()
    # The docs: PCA to ≤ 128, CCA k = min(50, dims), held out 20 %, RSA above 3,000 on a subset,
    # recall sampled above 20,000 queries.
    assert defaults["pca_dimensions"] == 128 and defaults["cca_components"] == 50
    assert defaults["heldout_fraction"] == 0.2 and defaults["rsa_max_formulae"] == 3000
    assert defaults["recall_max_queries"] == 20_000
    assert (defaults["permutations"], defaults["rsa_permutations"], defaults["seed"]) == (
        1000,
        199,
        0,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        CorrespondenceSettings().seed = 3  # type: ignore[misc]


def test_empty_result_and_its_table() -> None:
    empty = CorrespondenceResult()
    for name in ("cosines", "null_cosines", "null_means", "cca_in_sample", "cca_shuffled"):
        assert getattr(empty, name).shape == (0,)
    assert empty.cca_heldout.shape == (0,)
    assert empty.table().equals(METRICS_SCHEMA.empty_table())


def test_result_table_rows_in_insertion_order_with_sorted_json_details() -> None:
    result = CorrespondenceResult()
    result.add("b_metric", np.float32(0.5), zeta=1, alpha="x")
    result.add("a_metric", 2)
    result.add("c_metric", np.int64(3), nested={"y": 1, "x": [1, 2]})
    assert result.metrics == {"b_metric": 0.5, "a_metric": 2.0, "c_metric": 3.0}
    assert all(type(v) is float for v in result.metrics.values())
    assert set(result.details) == {"b_metric", "c_metric"}
    table = result.table()
    assert table.schema == METRICS_SCHEMA
    assert table.to_pylist() == [
        {"metric": "b_metric", "value": 0.5, "detail": '{"alpha": "x", "zeta": 1}'},
        {"metric": "a_metric", "value": 2.0, "detail": None},
        {"metric": "c_metric", "value": 3.0, "detail": '{"nested": {"x": [1, 2], "y": 1}}'},
    ]
    assert isinstance(table, pa.Table)


# --- PCA, standardisation, whitening ----------------------------------------------------------


def test_pca_matches_the_eigenvectors_of_the_scatter_matrix_with_the_sign_convention() -> None:
    x = data(80, 6, seed=11) * np.array([5.0, 3.0, 2.0, 1.5, 1.0, 0.5])
    for k in (1, 3, 6):
        projected = pca_project(x, k)
        assert projected.shape == (80, k)
        np.testing.assert_allclose(projected, oracle_pca(x, k), atol=1e-9)
    # the loadings, recovered from the projection: orthonormal, largest entry positive
    centred = x - x.mean(axis=0)
    loadings, *_ = np.linalg.lstsq(centred, pca_project(x, 4), rcond=None)
    np.testing.assert_allclose(loadings.T @ loadings, np.eye(4), atol=1e-9)
    assert all(loadings[np.abs(loadings[:, j]).argmax(), j] > 0 for j in range(4))


def test_pca_of_a_wide_matrix_keeps_at_most_n_axes() -> None:
    x = data(7, 20, seed=2)
    assert pca_project(x, 6).shape == (7, 6)
    np.testing.assert_allclose(pca_project(x, 6), oracle_pca(x, 6), atol=1e-9)


@PROPERTY
@given(seed=st.integers(0, 10_000), shift=st.floats(-100, 100), sign=st.sampled_from([-1, 1]))
def test_pca_ignores_a_shift_and_flips_with_the_data(seed: int, shift: float, sign: int) -> None:
    x = data(30, 5, seed=seed)
    shifted = x + shift * np.arange(1, 6)
    np.testing.assert_allclose(pca_project(shifted, 3), pca_project(x, 3), atol=1e-8)
    # −x has the same axes (same convention), so its projection is the negation
    np.testing.assert_allclose(pca_project(sign * x, 3), sign * pca_project(x, 3), atol=1e-8)


def test_standardise_gives_z_scores_and_drops_constant_features() -> None:
    x = np.array([[1.0, 5.0, 10.0], [3.0, 5.0, 20.0], [5.0, 5.0, 60.0]])
    z, mean, std = standardise(x)
    np.testing.assert_allclose(mean, [3.0, 5.0, 30.0])
    np.testing.assert_allclose(std, [np.sqrt(8 / 3), 0.0, np.sqrt(1400 / 3)])
    assert z.shape == (3, 2)
    np.testing.assert_allclose(z[:, 0], [-2 / np.sqrt(8 / 3), 0.0, 2 / np.sqrt(8 / 3)])
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=0), 1.0)


def test_standardise_with_given_statistics_and_the_constant_threshold() -> None:
    x = np.array([[2.0, 4.0, 6.0, 8.0], [4.0, 8.0, 12.0, 16.0]])
    mean = np.array([1.0, 2.0, 3.0, 4.0])
    std = np.array([2.0, 1e-12, 1.5e-12, 4.0])  # ≤ 1e-12 counts as constant
    z, m, s = standardise(x, mean, std)
    assert m is mean and s is std
    np.testing.assert_allclose(z, [[0.5, 3.0 / 1.5e-12, 1.0], [1.5, 9.0 / 1.5e-12, 3.0]])


def test_whitener_is_an_orthonormal_basis_and_its_map() -> None:
    x = data(40, 5, seed=3) @ np.diag([1.0, 10.0, 0.1, 3.0, 1.0])
    u, a = _whitener(x)
    assert u.shape == (40, 5) and a.shape == (5, 5)
    np.testing.assert_allclose(u.T @ u, np.eye(5), atol=1e-12)
    np.testing.assert_allclose(x @ a, u, atol=1e-10)
    collinear = np.column_stack([x, x[:, 0] - 2 * x[:, 1]])
    u, a = _whitener(collinear)
    assert u.shape == (40, 5)
    np.testing.assert_allclose(collinear @ a, u, atol=1e-9)


@pytest.mark.parametrize(
    ("diagonal", "rank"),
    [
        ([1.0, 1e-10], 1),  # at the relative tolerance: dropped
        ([1.0, 1.5e-10], 2),  # above it: kept
        ([1.0, 1e-3, 1e-12], 2),  # relative to the largest singular value
        ([4.0, 3e-10, 5e-10], 2),
    ],
)
def test_whitener_rank_uses_a_relative_tolerance_of_1e_10(diagonal, rank: int) -> None:
    x = np.diag(diagonal)
    u, a = _whitener(x)
    assert u.shape == (len(diagonal), rank) and a.shape == (len(diagonal), rank)
    np.testing.assert_allclose(x @ a, u, atol=1e-12)


def test_whitener_of_no_columns_is_empty() -> None:
    u, a = _whitener(np.zeros((5, 0)))
    assert u.shape == (5, 0) and a.shape == (0, 0)


def test_pca_and_cca_memory_is_linear_in_rows() -> None:
    """The docs: Table 1 is linear in n. A full SVD of a tall matrix would hold an n × n factor
    (72 MB here)."""
    x, y = data(3000, 4, seed=1), data(3000, 3, seed=2)
    for compute in (
        lambda: pca_project(x, 4),
        lambda: canonical_correlations(x, y, 3),
        lambda: heldout_canonical_correlations(x, y, 3, 0.2, np.random.default_rng(0)),
    ):
        tracemalloc.start()
        try:
            compute()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8_000_000


# --- CCA --------------------------------------------------------------------------------------


@PROPERTY
@given(seed=st.integers(0, 10_000), n=st.integers(12, 60))
def test_canonical_correlations_are_cosines_of_principal_angles(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)) + rng.normal(size=4) * 10
    y = np.column_stack([x[:, 0] + rng.normal(size=n), rng.normal(size=(n, 2))]) * 3 - 7
    expected = oracle_cca(x, y)
    np.testing.assert_allclose(canonical_correlations(x, y, 3), expected[:3], atol=1e-9)
    np.testing.assert_allclose(canonical_correlations(x, y, 2), expected[:2], atol=1e-9)


@PROPERTY
@given(seed=st.integers(0, 10_000))
def test_cca_is_invariant_to_invertible_maps_and_shifts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(50, 4))
    y = x[:, :3] @ rng.normal(size=(3, 3)) + rng.normal(size=(50, 3))
    a = rng.normal(size=(4, 4)) + 4 * np.eye(4)
    b = rng.normal(size=(3, 3)) + 4 * np.eye(3)
    base = canonical_correlations(x, y, 3)
    moved = canonical_correlations(x @ a + rng.normal(size=4), y @ b - 5.0, 3)
    np.testing.assert_allclose(moved, base, atol=1e-9)


def test_canonical_correlations_of_identical_and_related_spaces() -> None:
    for seed in range(12):
        x = data(25 + seed, 6, seed=seed)
        same = canonical_correlations(x, x @ data(6, 6, seed=100 + seed), 6)
        assert np.all(same <= 1.0) and np.all(same >= 0.0)
        np.testing.assert_allclose(same, 1.0, atol=1e-9)
    x = data(200, 3, seed=4)
    y = np.column_stack([x[:, 0], data(200, 2, seed=5)])
    rho = canonical_correlations(x, y, 3)
    assert rho[0] == pytest.approx(1.0)
    assert np.all(rho[1:] < 0.3)


def test_canonical_correlations_drop_constant_columns() -> None:
    x = data(30, 3, seed=6)
    y = data(30, 2, seed=7)
    padded = np.column_stack([x, np.full(30, 4.0)])
    np.testing.assert_allclose(
        canonical_correlations(padded, y, 2), canonical_correlations(x, y, 2), atol=1e-12
    )
    assert canonical_correlations(np.ones((30, 2)), y, 2).shape == (0,)


def test_heldout_cca_matches_a_covariance_form_fit() -> None:
    x = data(80, 4, seed=8)
    y = np.column_stack([x[:, 0] + 0.5 * data(80, 1, seed=9)[:, 0], data(80, 2, seed=10)])
    got = heldout_canonical_correlations(x, y, 3, 0.25, np.random.default_rng(3))
    order = np.random.default_rng(3).permutation(80)
    np.testing.assert_allclose(got, oracle_heldout(x, y, 3, 0.25, order), atol=1e-8)
    assert got[0] > 0.7


def test_heldout_cca_holds_out_at_least_three_rows() -> None:
    x = data(20, 3, seed=12)
    y = x @ data(3, 3, seed=13) + data(20, 3, seed=14)
    got = heldout_canonical_correlations(x, y, 2, 0.1, np.random.default_rng(5))
    order = np.random.default_rng(5).permutation(20)
    np.testing.assert_allclose(got, oracle_heldout(x, y, 2, 0.1, order), atol=1e-8)


def test_heldout_cca_components_are_capped_by_the_rank() -> None:
    x = data(60, 5, seed=15)
    base = np.column_stack([x[:, :2] + 0.3 * data(60, 2, seed=16), data(60, 2, seed=17)])
    y = np.column_stack([base, base[:, 0]])  # five columns, rank four
    got = heldout_canonical_correlations(x, y, 5, 0.2, np.random.default_rng(1))
    order = np.random.default_rng(1).permutation(60)
    np.testing.assert_allclose(got, oracle_heldout(x, base, 5, 0.2, order), atol=1e-8)
    assert got.shape == (4,)


def test_pearson_against_numpy_and_at_zero_variance() -> None:
    a, b = data(30, 2, seed=18).T
    assert _pearson(a + 5, 3 * b - 2) == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert _pearson(a, 2 * a + 1) == pytest.approx(1.0)
    assert _pearson(np.full(30, 2.0), b) == 0.0
    assert _pearson(a, np.zeros(30)) == 0.0


# --- CKA --------------------------------------------------------------------------------------


@PROPERTY
@given(seed=st.integers(0, 10_000), scale=st.floats(0.01, 100))
def test_linear_cka_is_the_gram_matrix_formula_and_invariant(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(25, 4)) + 3.0
    y = np.column_stack([x[:, 0] ** 2, rng.normal(size=(25, 5))])
    expected = oracle_cka(x, y)
    assert linear_cka(x, y) == pytest.approx(expected, rel=1e-9)
    # isotropic scaling of both spaces, down to where every Gram norm is far below 1
    assert linear_cka(1e-4 * x, 1e-3 * y) == pytest.approx(expected, rel=1e-9)
    rotation, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    moved = scale * x @ rotation + rng.normal(size=4) * 50
    assert linear_cka(moved, y) == pytest.approx(expected, rel=1e-7)
    assert linear_cka(y, x) == pytest.approx(expected, rel=1e-9)


def test_linear_cka_known_answers() -> None:
    x = data(40, 3, seed=19)
    assert linear_cka(x, 3 * x) == pytest.approx(1.0)
    assert linear_cka(np.full((40, 3), 7.0), x) == 0.0
    assert linear_cka(x, np.zeros((40, 2))) == 0.0
    # orthogonal centred columns: no shared structure at all
    a = np.array([[1.0], [-1.0], [1.0], [-1.0]])
    b = np.array([[1.0], [1.0], [-1.0], [-1.0]])
    assert linear_cka(a, b) == pytest.approx(0.0, abs=1e-15)


# --- RSA --------------------------------------------------------------------------------------


def test_rsa_matches_spearman_and_an_exact_mantel_count() -> None:
    x, y = data(15, 4, seed=20), data(15, 3, seed=21)
    y = y + 0.8 * x[:, :3]
    rho, mantel, parametric = rsa(x, y, 30, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    perms = [rng.permutation(15) for _ in range(30)]
    expected = oracle_rsa(x, y, perms)
    assert rho == pytest.approx(expected[0], abs=1e-12)
    assert mantel == expected[1]
    assert parametric == pytest.approx(expected[2], rel=1e-6)


def test_rsa_mantel_counts_ties_with_rho() -> None:
    # four formulae: six pairs, 24 permutations, so the identity and other ties recur
    x, y = data(4, 3, seed=22), data(4, 3, seed=23)
    for target in (x, y):
        rng = np.random.default_rng(7)
        rho, mantel, _ = rsa(x, target, 40, rng)
        check = np.random.default_rng(7)
        expected = oracle_rsa(x, target, [check.permutation(4) for _ in range(40)])
        assert rho == pytest.approx(expected[0], abs=1e-12)
        assert mantel == expected[1]


def test_rsa_of_identical_spaces_and_of_noise() -> None:
    x = data(30, 5, seed=24)
    rho, mantel, parametric = rsa(x, 2.5 * x, 9, np.random.default_rng(0))
    assert rho == pytest.approx(1.0) and mantel == pytest.approx(1 / 10)
    assert parametric < 1e-10
    rho, mantel, _ = rsa(data(40, 5, seed=25), data(40, 5, seed=26), 99, np.random.default_rng(1))
    assert abs(rho) < 0.1 and mantel > 0.05


def test_rsa_without_variation_is_not_significant() -> None:
    """Every formula at one cosine (rows on one ray): ρ is 0 and nothing is significant."""
    y = data(8, 3, seed=27)
    on_a_ray = np.outer(np.arange(1.0, 9.0), [1.0, 2.0, 3.0])
    for x, other in ((on_a_ray, y), (y, on_a_ray)):
        with np.errstate(all="raise"):
            rho, mantel, parametric = rsa(x, other, 9, np.random.default_rng(0))
        assert (rho, mantel, parametric) == (0.0, 1.0, 1.0)


@PROPERTY
@given(seed=st.integers(0, 10_000), scale=st.floats(0.1, 10))
def test_rsa_is_invariant_to_rotation_and_row_scaling(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(12, 3)), rng.normal(size=(12, 4))
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    rows = rng.uniform(0.5, 2.0, size=(12, 1))
    base = rsa(x, y, 5, np.random.default_rng(0))
    moved = rsa(scale * rows * (x @ rotation), y, 5, np.random.default_rng(0))
    assert moved[0] == pytest.approx(base[0], abs=1e-12)


# --- correspondence: the whole table -----------------------------------------------------------


def related(n: int, dx: int, dy: int, seed: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, dx)) * np.linspace(3.0, 0.5, dx)
    y = x[:, :dy] + noise * rng.normal(size=(n, dy))
    return x, y


def assert_matches_oracle(
    x: np.ndarray, y: np.ndarray, s: CorrespondenceSettings
) -> CorrespondenceResult:
    result = correspondence(x, y, s)
    metrics, arrays = oracle_correspondence(x, y, s)
    assert list(result.metrics) == list(metrics)
    for name, (value, detail) in metrics.items():
        assert result.metrics[name] == pytest.approx(value, abs=1e-8), name
        if detail is None:
            assert name not in result.details, name
        else:
            assert result.details[name] == pytest.approx(detail, abs=1e-8), name
    for name, expected in arrays.items():
        np.testing.assert_allclose(getattr(result, name), expected, atol=1e-8, err_msg=name)
    return result


def test_every_metric_matches_an_independent_computation_with_sampling() -> None:
    x, y = related(60, 14, 12, seed=30, noise=1.5)
    s = CorrespondenceSettings(
        pca_dimensions=5,
        cca_components=50,
        permutations=9,
        rsa_permutations=7,
        rsa_max_formulae=25,
        recall_max_queries=45,
        heldout_fraction=0.25,
        seed=3,
    )
    result = assert_matches_oracle(x, y, s)
    recall = result.details["recall_at_5"]
    assert 0 < result.metrics["recall_at_1"] < 1 and recall["standard_error"] > 0
    assert recall["queries"] == 45 and result.details["rsa_spearman"]["pairs"] == 300
    assert type(result.details["rsa_spearman"]["pairs"]) is int
    assert result.details["cca_mean"]["components"] == 12
    assert result.details["cca_top10"]["components"] == 10
    row = {r["metric"]: r for r in result.table().to_pylist()}["rsa_p_value"]
    assert '"formulae": 25' in row["detail"] and '"pairs": 300' in row["detail"]


def test_every_metric_matches_an_independent_computation_without_sampling() -> None:
    x, y = related(40, 6, 5, seed=31, noise=8.0)
    s = CorrespondenceSettings(pca_dimensions=4, permutations=11, rsa_permutations=5, seed=8)
    assert_matches_oracle(x, y, s)


def test_the_smallest_table_uses_n_minus_1_pca_and_n_minus_2_cca_dimensions() -> None:
    x, y = related(10, 12, 12, seed=32, noise=1.0)
    result = correspondence(x, y, CorrespondenceSettings(permutations=5, rsa_permutations=3))
    assert result.details["mean_cosine"] == {"pca_dimensions": 9, "formulae": 10}
    assert result.details["procrustes_error"]["pca_dimensions"] == 9
    assert result.details["cca_mean"]["components"] == 8
    assert result.cca_in_sample.shape == (8,)
    with pytest.raises(ValueError, match="got 9"):
        correspondence(x[:9], y[:9], FAST)


def test_caps_at_n_sample_nothing() -> None:
    x, y = related(30, 5, 5, seed=33, noise=1.0)
    base = CorrespondenceSettings(pca_dimensions=3, permutations=7, rsa_permutations=5)
    free = correspondence(x, y, base)
    capped = correspondence(
        x, y, dataclasses.replace(base, recall_max_queries=30, rsa_max_formulae=30)
    )
    assert capped.metrics == free.metrics
    np.testing.assert_array_equal(capped.cca_heldout, free.cca_heldout)


def test_recall_standard_error_with_one_and_two_queries() -> None:
    x, y = related(30, 5, 5, seed=39, noise=0.3)
    one = correspondence(x, y, CorrespondenceSettings(permutations=3, recall_max_queries=1))
    assert one.details["recall_at_1"]["queries"] == 1
    assert one.details["recall_at_1"]["standard_error"] == 0.0
    for cap in (2, 7):
        s = CorrespondenceSettings(permutations=3, rsa_permutations=3, recall_max_queries=cap)
        result = assert_matches_oracle(x, y, s)
    two = correspondence(x, y, dataclasses.replace(s, recall_max_queries=2))
    # one hit and one miss: the sample standard deviation is √½, over √2 queries
    assert two.metrics["recall_at_1"] == 0.5
    assert two.details["recall_at_1"]["standard_error"] == pytest.approx(0.5)
    assert result.details["recall_at_1"]["queries"] == 7


def test_permutation_p_value_counts_ties_with_the_observed_mean() -> None:
    # one PCA axis: every cosine is ±1, so null means repeat the observed one exactly
    x, y = related(12, 3, 3, seed=41, noise=2.5)
    s = CorrespondenceSettings(pca_dimensions=1, permutations=40, rsa_permutations=3, seed=2)
    result = assert_matches_oracle(x, y, s)
    assert set(np.abs(result.cosines)) == {1.0}
    assert np.any(result.null_means == result.metrics["mean_cosine"])


def test_identical_spaces_correspond_perfectly() -> None:
    x = data()
    result = correspondence(x, x.copy(), FAST).metrics
    assert result["mean_cosine"] == pytest.approx(1.0)
    assert result["median_cosine"] == pytest.approx(1.0)
    assert result["std_cosine"] == pytest.approx(0.0, abs=1e-9)
    assert result["linear_cka"] == pytest.approx(1.0)
    assert result["cca_mean"] == pytest.approx(1.0)
    assert result["cca_top10"] == pytest.approx(1.0)
    assert result["recall_at_1"] == pytest.approx(1.0)
    assert result["rsa_spearman"] == pytest.approx(1.0)
    assert result["procrustes_error"] == pytest.approx(0.0, abs=1e-9)
    assert result["permutation_p_value"] == pytest.approx(1 / 201)
    assert result["rsa_p_value"] == pytest.approx(1 / 50)
    assert result["cca_mean_heldout"] > 0.99


def test_rotation_keeps_invariant_metrics_and_breaks_cosine() -> None:
    x = data()
    rotation, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(16, 16)))
    result = correspondence(x, x @ rotation, FAST).metrics
    assert result["linear_cka"] == pytest.approx(1.0)
    assert result["procrustes_error"] == pytest.approx(0.0, abs=1e-9)
    assert result["rsa_spearman"] == pytest.approx(1.0)
    assert result["cca_mean"] == pytest.approx(1.0)
    # The same points, rotated: the cosine metrics compare two separately fitted PCA spaces
    # whose axes nothing aligns (isotropic data has no preferred axes), so they miss it.
    assert result["mean_cosine"] < 0.5
    assert result["recall_at_1"] < 0.5


def test_independent_noise_is_near_chance() -> None:
    n = 400
    x, y = data(n, 16, seed=1), data(n, 24, seed=2)
    result = correspondence(x, y, FAST).metrics
    assert abs(result["mean_cosine"]) < 0.05
    assert abs(result["rsa_spearman"]) < 0.05
    assert result["linear_cka"] < 0.1
    assert result["recall_at_10"] < 5 * 10 / n
    assert result["permutation_p_value"] > 0.01
    assert result["rsa_p_value"] > 0.01
    assert abs(result["cca_mean_heldout"]) < 0.15
    # In-sample CCA of pure noise is far from 0: the reason for the held-out variant.
    assert result["cca_mean"] > 0.1 and result["cca_mean_shuffled"] > 0.1


def test_linear_relation_is_found_by_cca_not_by_cosine() -> None:
    x = data(500, 8)
    y = x @ np.random.default_rng(7).normal(size=(8, 20)) + 0.1 * data(500, 20, seed=8)
    result = correspondence(x, y, FAST).metrics
    assert result["cca_top10"] > 0.95
    assert result["cca_mean_heldout"] > 0.9


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="row counts differ"):
        correspondence(data(20), data(21), FAST)
    with pytest.raises(ValueError, match="at least 10"):
        correspondence(data(5), data(5), FAST)


def test_deterministic_for_a_seed() -> None:
    x, y = data(seed=3), data(seed=4)
    assert correspondence(x, y, FAST).metrics == correspondence(x, y, FAST).metrics
    other = dataclasses.replace(FAST, seed=2)
    assert correspondence(x, y, FAST).metrics != correspondence(x, y, other).metrics


def test_recall_is_sampled_above_the_query_cap() -> None:
    x = data(400)
    capped = CorrespondenceSettings(permutations=20, rsa_permutations=9, recall_max_queries=50)
    result = correspondence(x, x.copy(), capped)
    assert result.metrics["recall_at_1"] == pytest.approx(1.0)
    assert result.details["recall_at_1"]["queries"] == 50
    assert result.details["recall_at_1"]["standard_error"] == pytest.approx(0.0)


def test_metrics_table_round_trips_through_json() -> None:
    x, y = related(30, 5, 5, seed=36, noise=1.0)
    result = correspondence(x, y, CorrespondenceSettings(permutations=3, rsa_permutations=3))
    for row in result.table().to_pylist():
        assert row["value"] == result.metrics[row["metric"]]
        detail = None if row["detail"] is None else json.loads(row["detail"])
        assert detail == result.details.get(row["metric"])


def test_table_1_runs_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Thread counts change the last bits of BLAS sums: one thread, in every process."""
    from threadpoolctl import threadpool_info

    seen: list[list[int]] = []

    def spy(*args: object) -> str:
        seen.append([pool["num_threads"] for pool in threadpool_info()])
        return "result"

    monkeypatch.setattr(correspondence_module, "_correspondence", spy)
    assert correspondence_module.correspondence(np.zeros((12, 2)), np.zeros((12, 2))) == "result"
    assert seen and seen[0] and set(seen[0]) == {1}
