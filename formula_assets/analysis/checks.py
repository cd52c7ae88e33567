"""Rules behind the checks of `correspondence_metrics`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from formula_assets.core.checks import SAMPLE, Outcome


def every_formula_has_both_vectors(
    graphs: pa.Table, structural: pa.Table, semantic: pa.Table
) -> Outcome:
    accepted = set(graphs.column("qid").to_pylist())
    no_structural = sorted(accepted - set(structural.column("qid").to_pylist()))
    no_semantic = sorted(accepted - set(semantic.column("qid").to_pylist()))
    passed = not no_structural and not no_semantic
    return Outcome(
        passed,
        f"all {len(accepted):,} parsed formulae have both vectors"
        if passed
        else f"{len(no_structural)} lack a structural, {len(no_semantic)} a semantic vector",
        {
            "without_structural": len(no_structural),
            "without_semantic": len(no_semantic),
            "sample": (no_structural + no_semantic)[:SAMPLE],
        },
    )


# metric → (low, high), inclusive, the values each metric can take at all (a standard deviation
# of values in [−1, 1] is at most 1); a metric missing here only has to be finite.
METRIC_RANGES: dict[str, tuple[float, float]] = {
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


def metrics_in_range(metrics: pa.Table) -> Outcome:
    values = dict(
        zip(metrics.column("metric").to_pylist(), metrics.column("value").to_pylist(), strict=True)
    )
    problems = [
        f"{name} = {value}"
        for name, value in values.items()
        if value is None
        or not np.isfinite(value)
        or (name in METRIC_RANGES and not METRIC_RANGES[name][0] <= value <= METRIC_RANGES[name][1])
    ]
    missing = sorted(set(METRIC_RANGES) - set(values))
    recalls = [values.get(f"recall_at_{k}") for k in (1, 5, 10)]
    if None not in recalls and not recalls[0] <= recalls[1] <= recalls[2]:
        problems.append(
            f"recall not monotone: R@1 {recalls[0]}, R@5 {recalls[1]}, R@10 {recalls[2]}"
        )
    passed = not problems and not missing
    return Outcome(
        passed,
        "all metrics finite and in range"
        if passed
        else "; ".join(problems + [f"missing {m}" for m in missing]),
        {"out_of_range": problems[:SAMPLE], "missing": missing},
    )
