"""Table 1 metrics on cases with known answers."""

import numpy as np
import pytest

from formula_assets.analysis.correspondence import (
    CorrespondenceSettings,
    canonical_correlations,
    correspondence,
    linear_cka,
)

FAST = CorrespondenceSettings(permutations=200, rsa_permutations=49, seed=1)


def data(n: int = 300, d: int = 16, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def test_identical_spaces_correspond_perfectly() -> None:
    x = data()
    result = correspondence(x, x.copy(), FAST).metrics
    assert result["mean_cosine"] == pytest.approx(1.0)
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


def test_cka_and_cca_helpers() -> None:
    x = data()
    assert linear_cka(x, 3 * x) == pytest.approx(1.0)
    assert canonical_correlations(x, x, 5) == pytest.approx(np.ones(5))


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="row counts differ"):
        correspondence(data(20), data(21), FAST)
    with pytest.raises(ValueError, match="at least 10"):
        correspondence(data(5), data(5), FAST)


def test_deterministic_for_a_seed() -> None:
    x, y = data(seed=3), data(seed=4)
    assert correspondence(x, y, FAST).metrics == correspondence(x, y, FAST).metrics


def test_recall_is_sampled_above_the_query_cap() -> None:
    x = data(400)
    capped = CorrespondenceSettings(permutations=20, rsa_permutations=9, recall_max_queries=50)
    result = correspondence(x, x.copy(), capped)
    assert result.metrics["recall_at_1"] == pytest.approx(1.0)
    assert result.details["recall_at_1"]["queries"] == 50
    assert result.details["recall_at_1"]["standard_error"] == pytest.approx(0.0)
