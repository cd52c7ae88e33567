"""Paired significance tests between methods of Table 2, per query and per fold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formula_assets.core.protocol import BASELINES, DIRECTIONS, ENSEMBLE, TRAINED
from formula_assets.evaluation.table2 import Evaluation


@dataclass(frozen=True)
class Comparison:
    method: str
    baseline: str
    direction: str
    mean_rr_difference: float
    wilcoxon_p: float  # paired over all test queries of all folds
    fold_t_p: float  # paired t-test over the folds' MRR


def significance(evaluation: Evaluation) -> list[Comparison]:
    """Each trained method (and the ensemble) against each baseline, paired per query."""
    from scipy import stats

    folds = sorted({fold for fold, _, _ in evaluation.reciprocal_ranks})
    out = []
    for method in (*TRAINED, ENSEMBLE):
        for baseline in BASELINES:
            for direction in DIRECTIONS:
                a = np.concatenate(
                    [evaluation.reciprocal_ranks[(f, method, direction)] for f in folds]
                )
                b = np.concatenate(
                    [evaluation.reciprocal_ranks[(f, baseline, direction)] for f in folds]
                )
                fold_a = [evaluation.reciprocal_ranks[(f, method, direction)].mean() for f in folds]
                fold_b = [
                    evaluation.reciprocal_ranks[(f, baseline, direction)].mean() for f in folds
                ]
                difference = a - b
                wilcoxon_p = float(stats.wilcoxon(a, b).pvalue) if np.any(difference != 0) else 1.0
                t_p = (
                    float(stats.ttest_rel(fold_a, fold_b).pvalue)
                    if len(folds) > 1 and np.std(np.subtract(fold_a, fold_b)) > 0
                    else float("nan")
                )
                out.append(
                    Comparison(
                        method, baseline, direction, float(difference.mean()), wilcoxon_p, t_p
                    )
                )
    return out
