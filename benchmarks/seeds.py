"""How much Table 2 moves with the seed: the trained methods retrained with seed offsets.

Each (seed offset, method, fold) is trained as `fold_models` trains it — the profile with
`seed` set to the offset (a model's seed is `seed × 1000 + fold`), on the upstream assets of
the data lake (`make run` first; FORMULA_ASSETS_DATA_LAKE chooses which) — in `--workers`
processes with one torch thread each, and scored as Table 2 scores a trained method: plain
cosine over its test fold's vectors, both directions. Reported per method and direction: the
mean over seeds of the fold mean, its spread over seeds (std and max − min of the fold means)
beside the std over folds (the mean of each seed's). A difference between two methods that
is not larger than these spreads is not a result. The ensemble is not rescored here: it needs
every member on every fold.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import time

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.training import held_out_scores, lake_alignment_data
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import DIRECTIONS, FOLDS
from formula_assets.methods import registry
from formula_assets.training.fold import train_fold


def _train(job: tuple[str, str, int, int]) -> dict:
    profile_name, method, fold, offset = job
    os.environ["OMP_NUM_THREADS"] = "1"
    data = lake_alignment_data()
    profile = dataclasses.replace(get_profile(profile_name), seed=offset, torch_threads=1)
    started = time.perf_counter()
    model = train_fold(registry.trained_method(method), fold, data, profile)
    return {
        "method": method,
        "fold": fold,
        "offset": offset,
        "seed": model.description.seed,
        "validation_mrr": model.description.best_validation_mrr,
        "seconds": round(time.perf_counter() - started, 1),
        "test": held_out_scores(model),
    }


def _spread(results: list[dict], method: str, direction: str, metric: str) -> dict:
    offsets = sorted({r["offset"] for r in results if r["method"] == method})
    per_seed = []  # one array of fold values per seed offset
    for offset in offsets:
        rows = [r for r in results if r["method"] == method and r["offset"] == offset]
        per_seed.append(np.array([r["test"][direction][metric] for r in rows]))
    means = np.array([values.mean() for values in per_seed])
    return {
        "mean": float(means.mean()),
        "seed_std": float(means.std(ddof=1)) if len(means) > 1 else 0.0,
        "seed_range": float(means.max() - means.min()),
        "fold_std": float(np.mean([v.std(ddof=1) if len(v) > 1 else 0.0 for v in per_seed])),
    }


def run(
    profile: str, offsets: list[int], methods: list[str], folds: list[int], workers: int
) -> dict:
    jobs = [(profile, m, f, o) for o in offsets for m in methods for f in folds]
    # the longest first, so that the processes finish together
    jobs.sort(key=lambda j: -registry.get(j[1]).training_cost)
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        results = pool.map(_train, jobs, chunksize=1)
    wall = time.perf_counter() - started
    rows, spreads = [], {}
    for method in methods:
        for direction in DIRECTIONS:
            r10 = _spread(results, method, direction, "recall_at_10")
            mrr = _spread(results, method, direction, "mrr")
            spreads[f"{method} {direction}"] = {"recall_at_10": r10, "mrr": mrr}
            rows.append(
                [
                    direction,
                    method,
                    f"{r10['mean']:.3f} ± {r10['seed_std']:.3f} ({r10['seed_range']:.3f})",
                    f"{r10['fold_std']:.3f}",
                    f"{mrr['mean']:.3f} ± {mrr['seed_std']:.3f} ({mrr['seed_range']:.3f})",
                    f"{mrr['fold_std']:.3f}",
                ]
            )
    print_table(
        f"{profile} profile, seed offsets {offsets}, folds {folds}: mean ± std over seeds "
        "(max − min), and the std over folds",
        ["direction", "method", "R@10", "fold std", "MRR", "fold std"],
        rows,
    )
    print(f"{len(jobs)} models in {workers} process(es) × 1 thread: {wall:.0f} s")
    result = {
        "profile": profile,
        "offsets": offsets,
        "methods": methods,
        "folds": folds,
        "workers": workers,
        "wall_s": round(wall, 1),
        "spread": spreads,
        "models": results,
    }
    print(f"written {write_result(f'seeds_{profile}', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--offsets", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(registry.trained()))
    parser.add_argument("--folds", type=int, nargs="+", default=list(FOLDS))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    run(args.profile, args.offsets, args.methods, args.folds, args.workers)
