"""Paired significance tests between methods of Table 2, per query and per fold.

The family: every trained method and the ensemble against each baseline, the best method
(highest MRR over both directions) against each of the others it is claimed to beat — for
the ensemble, its members — and each trained method against every trained method after it
in the lineup (`graph_text_cl` against `sbert_dual_cl`), in both directions.
Each pair gets a Wilcoxon signed-rank test over all test queries of all folds (paired by
query) and a paired t-test over the five fold MRRs; the Wilcoxon p-values are adjusted for
the whole family with Holm's step-down method, so a claim can rest on the adjusted value.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.lineup import Lineup
from formula_assets.evaluation.retrieval import Evaluation


@dataclass(frozen=True)
class Comparison:
    method: str
    baseline: str  # the method it is compared with
    direction: str
    mean_rr_difference: float
    wilcoxon_p: float  # paired over all test queries of all folds
    fold_t_p: float  # paired t-test over the folds' MRR
    holm_p: float = float("nan")  # wilcoxon_p adjusted for the whole family (Holm)


# `significance_tests`: one row per comparison, the fields of `Comparison`.
SIGNIFICANCE_SCHEMA = pa.schema(
    [
        ("method", pa.string()),
        ("baseline", pa.string()),
        ("direction", pa.string()),
        ("mean_rr_difference", pa.float64()),
        ("wilcoxon_p", pa.float64()),
        ("fold_t_p", pa.float64()),
        ("holm_p", pa.float64()),
    ]
)


def significance_table(comparisons: list[Comparison]) -> pa.Table:
    return pa.Table.from_pylist([asdict(c) for c in comparisons], SIGNIFICANCE_SCHEMA)


def comparisons(table: pa.Table) -> list[Comparison]:
    """The comparisons of a `significance_table`."""
    return [Comparison(**row) for row in table.to_pylist()]


def best_method(evaluation: Evaluation, lineup: Lineup) -> str:
    """The method with the highest mean reciprocal rank over both directions and all folds."""
    means = {}
    for method in lineup.names:
        ranks = [rr for (_, m, _), rr in evaluation.reciprocal_ranks.items() if m == method]
        if ranks:
            means[method] = float(np.concatenate(ranks).mean())
    return max(means, key=lambda m: means[m])


def comparison_pairs(best: str, lineup: Lineup) -> list[tuple[str, str]]:
    pairs = [(method, baseline) for method in lineup.judged for baseline in lineup.baselines]
    members = [m.name for m in lineup.members]
    rivals = members if best == ENSEMBLE else [m for m in lineup.names if m != best]
    pairs += [(best, rival) for rival in rivals]
    trained = lineup.trained
    pairs += [(a, b) for i, a in enumerate(trained) for b in trained[i + 1 :]]
    return list(dict.fromkeys(pairs))


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment: p_(i) · (m − i + 1), made monotone, capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def significance(evaluation: Evaluation, lineup: Lineup) -> list[Comparison]:
    from scipy import stats

    folds = sorted({fold for fold, _, _ in evaluation.reciprocal_ranks})
    out = []
    for method, other in comparison_pairs(best_method(evaluation, lineup), lineup):
        for direction in DIRECTIONS:
            per_fold_a = [evaluation.reciprocal_ranks[(f, method, direction)] for f in folds]
            per_fold_b = [evaluation.reciprocal_ranks[(f, other, direction)] for f in folds]
            a, b = np.concatenate(per_fold_a), np.concatenate(per_fold_b)
            fold_a, fold_b = [x.mean() for x in per_fold_a], [x.mean() for x in per_fold_b]
            difference = a - b
            wilcoxon_p = float(stats.wilcoxon(a, b).pvalue) if np.any(difference != 0) else 1.0
            t_p = (
                float(stats.ttest_rel(fold_a, fold_b).pvalue)
                if len(folds) > 1 and np.std(np.subtract(fold_a, fold_b)) > 0
                else float("nan")
            )
            out.append(
                Comparison(method, other, direction, float(difference.mean()), wilcoxon_p, t_p)
            )
    adjusted = holm([c.wilcoxon_p for c in out])
    return [
        Comparison(
            c.method, c.baseline, c.direction, c.mean_rr_difference, c.wilcoxon_p, c.fold_t_p, p
        )
        for c, p in zip(out, adjusted, strict=True)
    ]
