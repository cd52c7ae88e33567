"""The accuracy cost of the bounds on Table 1's quadratic steps, measured at 10× the snapshot.

* RSA runs on a random subset of at most 3,000 formulae: ρ over 5 different subsets shows
  the spread that sampling adds.
* Recall@k over all formulae samples 20,000 queries above that size: at 10× (17,580
  formulae, all queries affordable) the exact value is compared with query samples of 2,000.
"""

from __future__ import annotations

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.growth import _semantic
from benchmarks.synthetic import synthetic_records
from formula_assets.analysis.correspondence import pca_project, rsa
from formula_assets.core.settings import Settings
from formula_assets.evaluation.ranking import DotScorer, gold_ranks, normalise_rows
from formula_assets.graphs.training_free import structural_embeddings
from formula_assets.syntax.opt import build_opt_graphs, parse_options

# the parser as the pipeline runs it (FORMULA_ASSETS_STYLED_LETTERS)
OPTIONS = parse_options(Settings.from_environment().styled_letters)


def run(scale: int = 10, subsets: int = 5, subset_size: int = 3000, queries: int = 2000) -> dict:
    records, parents = synthetic_records(scale)
    graphs = build_opt_graphs(((r.qid, r.mathml) for r in records), OPTIONS).graphs
    x = structural_embeddings(graphs).astype(np.float64)
    y = _semantic(parents).astype(np.float64)
    n = len(x)
    rng = np.random.default_rng(0)
    rhos = []
    for _ in range(subsets):
        subset = np.sort(rng.choice(n, subset_size, replace=False))
        rho, _, _ = rsa(x[subset], y[subset], permutations=0, rng=rng)
        rhos.append(rho)
    k = min(64, x.shape[1], y.shape[1])
    zx, zy = normalise_rows(pca_project(x, k)), normalise_rows(pca_project(y, k))
    exact = gold_ranks(DotScorer(zx, zy)).recall_at(10).mean()
    estimates = []
    for _ in range(subsets):
        sample = np.sort(rng.choice(n, queries, replace=False))
        estimates.append(gold_ranks(DotScorer(zx, zy), rows=sample).recall_at(10).mean())
    result = {
        "formulae": n,
        "rsa_subset_size": subset_size,
        "rsa_rho_per_subset": [round(r, 4) for r in rhos],
        "rsa_rho_std": float(np.std(rhos, ddof=1)),
        "recall_at_10_exact": float(exact),
        "recall_query_sample": queries,
        "recall_at_10_estimates": [round(e, 4) for e in estimates],
        "recall_at_10_max_abs_error": float(np.max(np.abs(np.array(estimates) - exact))),
    }
    print_table(
        f"Sampling error at {scale}× ({n:,} formulae)",
        ["quantity", "value"],
        [
            [
                f"RSA ρ over {subsets} subsets of {subset_size:,}",
                ", ".join(f"{r:.4f}" for r in rhos),
            ],
            ["RSA ρ std across subsets", f"{result['rsa_rho_std']:.4f}"],
            ["recall@10, all queries", f"{exact:.4f}"],
            [
                f"recall@10, {subsets} samples of {queries:,} queries",
                ", ".join(f"{e:.4f}" for e in estimates),
            ],
        ],
    )
    print(f"written {write_result('sampling', result)}")
    return result


if __name__ == "__main__":
    run()
