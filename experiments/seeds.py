"""How much Table 2 moves with the seed: the trained methods retrained with seed offsets.

Each (seed offset, method, fold) is trained as `fold_models` trains it — the profile with
`seed` set to the offset (a model's seed is `seed × 1000 + fold`), on the upstream assets of
the data lake (`make run` first; FORMULA_ASSETS_DATA_LAKE chooses which) — in `--workers`
processes with one torch thread each, and scored as Table 2 scores a trained method: plain
cosine over its test fold's vectors, both directions. Reported per method and direction: the
mean over seeds of the fold mean, its spread over seeds (std and max − min of the fold means)
beside the std over folds (the mean of each seed's). A difference between two methods that
is not larger than these spreads is not a result.

The ensemble is rescored per offset as `retrieval_scores` scores it (`evaluate`: weights and
hubness chosen on each fold's selection split, then the test fold), from that offset's models
of the methods trained here and the lake's models of the others (`--methods` all trained
methods: every member retrained with the offset).

`--lake-offset-0` takes offset 0 from the lake's models instead of retraining it (they are
offset 0 when the lake was built with this profile: checked, model by model).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import time

import numpy as np

from benchmarks.common import print_table, write_result
from benchmarks.training import (
    evaluation_tables,
    held_out_scores,
    lake_alignment_data,
    lake_models,
)
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE, FOLDS
from formula_assets.evaluation.retrieval import evaluate
from formula_assets.methods import registry
from formula_assets.training.artifacts import TrainedModel
from formula_assets.training.fold import train_fold


def _train(job: tuple[str, str, int, int]) -> tuple[dict, TrainedModel]:
    profile_name, method, fold, offset = job
    os.environ["OMP_NUM_THREADS"] = "1"
    data = lake_alignment_data()
    profile = dataclasses.replace(get_profile(profile_name), seed=offset, torch_threads=1)
    started = time.perf_counter()
    model = train_fold(registry.trained_method(method), fold, data, profile)
    result = {
        "method": method,
        "fold": fold,
        "offset": offset,
        "seed": model.description.seed,
        "validation_mrr": model.description.best_validation_mrr,
        "seconds": round(time.perf_counter() - started, 1),
        "test": held_out_scores(model),
    }
    # the ensemble reads only the stored vectors: the weights need not travel back
    return result, dataclasses.replace(model, state={})


def _from_lake(profile_name: str, methods: list[str], folds: list[int]) -> list:
    """The lake's models as offset 0, refused unless `fold_models` trained them so."""
    profile = get_profile(profile_name)
    pairs = []
    for (fold, method), model in lake_models(methods, folds).items():
        d = model.description
        if (d.profile, d.settings, d.seed) != (
            profile.name,
            registry.trained_method(method).settings(profile),
            fold,
        ):
            raise SystemExit(
                f"the lake's {method} fold {fold} is not offset 0 of the {profile.name} profile "
                f"(profile {d.profile}, seed {d.seed}): retrain offset 0 instead"
            )
        result = {
            "method": method,
            "fold": fold,
            "offset": 0,
            "seed": d.seed,
            "validation_mrr": d.best_validation_mrr,
            "seconds": None,
            "test": held_out_scores(model),
        }
        pairs.append((result, model))
    return pairs


def _ensembles(
    trained: list[tuple[dict, TrainedModel]], offsets: list[int], folds: list[int]
) -> list[dict]:
    """The ensemble's test scores per offset and fold, as `retrieval_scores` gives them: the
    offset's models of the methods trained here, the lake's of the others."""
    inputs = evaluation_tables()
    retrained = {m.method for _, m in trained}
    others = lake_models([m for m in registry.trained() if m not in retrained], folds)
    rows = []
    for offset in offsets:
        models = others | {(m.fold, m.method): m for r, m in trained if r["offset"] == offset}
        scores = evaluate(inputs, models, registry.lineup()).scores.to_pylist()
        for fold in folds:
            test = {
                r["direction"]: {k: r[k] for k in ("recall_at_10", "mrr")}
                for r in scores
                if r["method"] == ENSEMBLE and r["fold"] == fold
            }
            rows.append({"method": ENSEMBLE, "fold": fold, "offset": offset, "test": test})
    return rows


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
    profile: str,
    offsets: list[int],
    methods: list[str],
    folds: list[int],
    workers: int,
    lake_offset_0: bool = False,
    tag: str = "",
) -> dict:
    retrain = [o for o in offsets if not (lake_offset_0 and o == 0)]
    jobs = [(profile, m, f, o) for o in retrain for m in methods for f in folds]
    # the longest first, so that the processes finish together
    jobs.sort(key=lambda j: -registry.get(j[1]).training_cost)
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        trained = pool.map(_train, jobs, chunksize=1)
    wall = time.perf_counter() - started
    if lake_offset_0 and 0 in offsets:
        trained += _from_lake(profile, methods, folds)
    results = [r for r, _ in trained]
    ensembles = _ensembles(trained, offsets, folds)
    rows, spreads = [], {}
    for method in [*methods, ENSEMBLE]:
        pool_rows = ensembles if method == ENSEMBLE else results
        for direction in DIRECTIONS:
            r10 = _spread(pool_rows, method, direction, "recall_at_10")
            mrr = _spread(pool_rows, method, direction, "mrr")
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
        "ensemble": ensembles,
    }
    result["tag"] = tag
    print(f"written {write_result(f'seeds_{profile}' + (f'_{tag}' if tag else ''), result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--offsets", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(registry.trained()))
    parser.add_argument("--folds", type=int, nargs="+", default=list(FOLDS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--lake-offset-0",
        action="store_true",
        help="offset 0: the lake's models (built with this profile), not retrained",
    )
    parser.add_argument(
        "--tag", default="", help="a suffix for the result file (e.g. the machine's kind)"
    )
    args = parser.parse_args()
    run(
        args.profile,
        args.offsets,
        args.methods,
        args.folds,
        args.workers,
        args.lake_offset_0,
        args.tag,
    )
