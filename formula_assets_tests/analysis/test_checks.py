"""The range rule of `correspondence_metrics`: each metric within the values it can take."""

import math

import pyarrow as pa
import pytest

from formula_assets.analysis.checks import metrics_in_range

# what each metric can be, from its definition (cosines and correlations in [−1, 1]; shares,
# p-values, CKA, canonical correlations and Procrustes disparity in [0, 1]; the standard
# deviation of values in [−1, 1] at most 1)
DOMAINS = {
    "mean_cosine": (-1, 1),
    "median_cosine": (-1, 1),
    "std_cosine": (0, 1),
    "rsa_spearman": (-1, 1),
    "rsa_p_value": (0, 1),
    "procrustes_error": (0, 1),
    "linear_cka": (0, 1),
    "cca_mean": (0, 1),
    "cca_top10": (0, 1),
    "cca_mean_shuffled": (0, 1),
    "cca_mean_heldout": (-1, 1),
    "recall_at_1": (0, 1),
    "recall_at_5": (0, 1),
    "recall_at_10": (0, 1),
    "permutation_p_value": (0, 1),
    "permutation_null_mean": (-1, 1),
    "permutation_null_std": (0, 1),
}
INSIDE = {name: (low + high) / 2 for name, (low, high) in DOMAINS.items()}


def table(values: dict[str, float | None]) -> pa.Table:
    return pa.table(
        {"metric": list(values), "value": pa.array(list(values.values()), pa.float64())}
    )


def test_values_inside_their_domain_pass() -> None:
    result = metrics_in_range(table(INSIDE))
    assert result.passed, result.description
    assert result.description == "all metrics finite and in range"
    assert result.metadata == {"out_of_range": [], "missing": []}


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_each_bound_is_inclusive_and_nothing_beyond_it_passes(name: str) -> None:
    low, high = DOMAINS[name]
    recalls = name.startswith("recall_at_")
    for edge in (low, high):
        values = {**INSIDE, name: float(edge)}
        if recalls:  # keep R@1 ≤ R@5 ≤ R@10 while one of them sits on a bound
            values |= {f"recall_at_{k}": float(edge) for k in (1, 5, 10)}
        assert metrics_in_range(table(values)).passed, (name, edge)
    for beyond in (low - 0.25, high + 0.25):
        result = metrics_in_range(table({**INSIDE, name: beyond}))
        assert not result.passed, (name, beyond)
        assert f"{name} = {beyond}" in result.metadata["out_of_range"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, None])
def test_a_metric_without_a_range_only_has_to_be_finite(bad: float | None) -> None:
    assert metrics_in_range(table({**INSIDE, "some_new_metric": 123.0})).passed
    assert not metrics_in_range(table({**INSIDE, "some_new_metric": bad})).passed


def test_recall_must_not_fall_with_k() -> None:
    level = {**INSIDE, "recall_at_1": 0.3, "recall_at_5": 0.3, "recall_at_10": 0.3}
    assert metrics_in_range(table(level)).passed
    for r1, r5, r10 in ((0.4, 0.3, 0.5), (0.1, 0.6, 0.5), (0.4, 0.5, 0.35)):
        values = {**INSIDE, "recall_at_1": r1, "recall_at_5": r5, "recall_at_10": r10}
        result = metrics_in_range(table(values))
        assert not result.passed
        assert result.description == f"recall not monotone: R@1 {r1}, R@5 {r5}, R@10 {r10}"


def test_a_missing_metric_is_named() -> None:
    values = dict(INSIDE)
    del values["cca_top10"]
    result = metrics_in_range(table(values))
    assert not result.passed and result.metadata["missing"] == ["cca_top10"]
    assert result.description == "missing cca_top10"
