"""Training and retrieval quality: all folds × methods of a profile, then Table 2 vs targets.

Reads the upstream assets from the data lake (`make run` first), trains every fold × method
in `--workers` parallel processes with one torch thread each (as `formula-assets refresh`
does), then scores the test folds. Targets (default profile, published folds):
graph_text_cl ≥ the paper (R@10 .574 / .580, MRR .345 / .355); the best method R@10 ≥ .75 and
MRR ≥ .50 in both directions; all training ≤ 10 minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import time
from collections.abc import Sequence

import pyarrow as pa
from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.core import lake
from formula_assets.core.profiles import Profile, get_profile
from formula_assets.core.protocol import DIRECTIONS, FOLDS
from formula_assets.core.settings import Settings
from formula_assets.evaluation.inputs import EvaluationInputs, evaluation_inputs
from formula_assets.evaluation.ranking import CosineScorer, gold_ranks
from formula_assets.evaluation.retrieval import PAPER_TABLE_2, evaluate, table_2
from formula_assets.methods import registry
from formula_assets.training.artifacts import TrainedModel
from formula_assets.training.data import AlignmentData, alignment_data
from formula_assets.training.fold import train_fold


def _tables() -> dict:
    root = UPath(Settings.from_environment().data_lake)
    names = (
        "cv_folds",
        "opt_graphs",
        "concept_annotations",
        "semantic_embeddings",
        "opt_text_embeddings",
        "opt_token_embeddings",
        "concept_symbols",
    )
    return {name: lake.read_parquet(root / f"{name}.parquet") for name in names}


def _capped(profile: str, threads: int, epochs: int | None) -> Profile:
    """The profile with `threads` torch threads and, if given, at most `epochs` epochs."""
    chosen = dataclasses.replace(get_profile(profile), torch_threads=threads)
    if epochs is None:
        return chosen
    # the methods the profile holds settings for (one fitted in closed form has no epochs)
    profiled = {f.name for f in dataclasses.fields(chosen)}
    capped = {
        m: dataclasses.replace(chosen.settings(m), epochs=min(chosen.settings(m).epochs, epochs))
        for m in registry.trained()
        if m in profiled
    }
    return dataclasses.replace(chosen, **capped)


def lake_alignment_data(tokens: pa.Table | None = None) -> AlignmentData:
    """What `fold_models` trains on, read from the data lake (`tokens`: another token table)."""
    t = _tables()
    return alignment_data(
        t["cv_folds"],
        t["opt_graphs"],
        t["semantic_embeddings"],
        t["opt_text_embeddings"],
        t["opt_token_embeddings"] if tokens is None else tokens,
        t["concept_annotations"],
        t["concept_symbols"],
    )


def held_out_scores(model: TrainedModel) -> dict[str, dict[str, float]]:
    """A trained model's test fold as Table 2 scores a trained method (plain cosine): R@10
    and MRR per direction."""
    _, structural, semantic = model.split_vectors("test")
    scorer = CosineScorer(structural, semantic)
    summaries = {
        DIRECTIONS[0]: gold_ranks(scorer).summary(),
        DIRECTIONS[1]: gold_ranks(scorer.reverse()).summary(),
    }
    return {d: {k: summaries[d][k] for k in ("recall_at_10", "mrr")} for d in DIRECTIONS}


def _train(job: tuple):
    method, fold, profile, threads, *rest = job
    epochs = rest[0] if rest else None
    os.environ["OMP_NUM_THREADS"] = str(threads)
    data = lake_alignment_data()
    started = time.perf_counter()
    chosen = _capped(profile, threads, epochs)
    model = train_fold(registry.trained_method(method), fold, data, chosen)
    return model, time.perf_counter() - started


def _indexed(item: tuple[int, tuple]) -> tuple[int, tuple]:
    index, job = item
    return index, _train(job)


def _timings(jobs: list[tuple], trained: list) -> dict:
    per_method: dict[str, dict[str, list[float]]] = {}
    for (method, *_), (model, seconds) in zip(jobs, trained, strict=True):
        entry = per_method.setdefault(method, {"fold_seconds": [], "epoch_seconds": []})
        entry["fold_seconds"].append(round(seconds, 1))
        entry["epoch_seconds"].append(
            round(sum(h["seconds"] for h in model.history) / max(len(model.history), 1), 3)
        )
    return per_method


def epochs_only(profile: str, epochs: int, folds: tuple[int, ...] = (1,), threads: int = 2) -> dict:
    """Seconds per epoch of a profile too big to train in full here (`paper` on a CPU).

    Trains each method for `epochs` epochs on `folds` in one process; no Table 2.
    """
    jobs = [(m, f, profile, threads, epochs) for m in registry.trained() for f in folds]
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        trained = pool.map(_train, jobs, chunksize=1)
    per_method = _timings(jobs, trained)
    settings = {
        m: dataclasses.asdict(registry.trained_method(m).settings(get_profile(profile)))
        for m in registry.trained()
    }
    full = {
        m: round(max(per_method[m]["epoch_seconds"]) * settings[m]["epochs"] * len(FOLDS))
        for m in registry.trained()
    }
    print_table(
        f"{profile} profile: {epochs} epoch(s) per method on fold(s) {list(folds)}, "
        f"1 process × {threads} thread(s)",
        ["method", "s / epoch", f"all {len(FOLDS)} folds × full epochs, projected"],
        [
            [m, f"{max(per_method[m]['epoch_seconds']):.2f}", f"{full[m]} s"]
            for m in registry.trained()
        ],
    )
    result = {
        "profile": profile,
        "epochs": epochs,
        "folds": list(folds),
        "threads": threads,
        "per_method": per_method,
        "settings": settings,
        "projected_full_training_s": full,
    }
    print(f"written {write_result(f'training_{profile}_epochs', result)}")
    return result


def lake_models(methods: list[str], folds: Sequence[int] = FOLDS) -> dict:
    """The lake's fold models of these methods (as `make run` trained them)."""
    from formula_assets.training.artifacts import model_directory

    root = UPath(Settings.from_environment().data_lake)
    return {
        (f, m): registry.trained_method(m).read_model(model_directory(root, f, m))
        for m in methods
        for f in folds
    }


def evaluation_tables() -> EvaluationInputs:
    """What `retrieval_scores` scores the fold models against, read from the data lake."""
    t = _tables()
    return evaluation_inputs(
        t["cv_folds"],
        t["opt_graphs"],
        t["concept_annotations"],
        t["semantic_embeddings"],
        t["opt_text_embeddings"],
    )


def run(
    profile: str = "default", workers: int = 2, threads: int = 1, methods: list[str] | None = None
) -> dict:
    """`workers` processes with `threads` torch threads each (2 × 1: parallel; 1 × 2: serial).
    `methods`: train only these; the other trained methods' models are read from the lake."""
    chosen = list(methods or registry.trained())
    # Longest first, so the pool's processes finish together.
    chosen.sort(key=lambda m: -registry.get(m).training_cost)
    jobs = [(m, f, profile, threads) for m in chosen for f in FOLDS]
    started = time.perf_counter()
    trained: list = [None] * len(jobs)
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        # each model reported as it finishes: a run stopped early still says what it trained
        for index, (model, seconds) in pool.imap_unordered(_indexed, enumerate(jobs)):
            trained[index] = (model, seconds)
            test = ", ".join(
                f"{d} {v['recall_at_10']:.3f} / {v['mrr']:.3f}"
                for d, v in held_out_scores(model).items()
            )
            print(
                f"[{time.perf_counter() - started:7.1f} s] {model.method} fold {model.fold}: "
                f"{seconds:.1f} s, {len(model.history)} epochs; test R@10 / MRR {test}",
                flush=True,
            )
    wall = time.perf_counter() - started
    models = lake_models([m for m in registry.trained() if m not in chosen])
    models |= {(m.fold, m.method): m for m, _ in trained}
    summary = table_2(evaluate(evaluation_tables(), models, registry.lineup()).scores)
    per_method = _timings(jobs, trained)
    rows = []
    for r in summary:
        paper = PAPER_TABLE_2.get((r["method"], r["direction"]))
        rows.append(
            [
                r["direction"],
                r["method"],
                f"{r['recall_at_10']:.3f}",
                f"{r['mrr']:.3f}",
                f"{paper[0][2]:.3f}" if paper else "—",
                f"{paper[0][3]:.3f}" if paper else "—",
            ]
        )
    header = ["direction", "method", "R@10", "MRR", "paper R@10", "paper MRR"]
    print_table(f"Table 2 ({profile} profile)", header, rows)
    by_direction = {d: [r for r in summary if r["direction"] == d] for d in DIRECTIONS}
    best = {d: max(rs, key=lambda r: r["mrr"]) for d, rs in by_direction.items()}
    graph = {
        d: next(r for r in rs if r["method"] == "graph_text_cl") for d, rs in by_direction.items()
    }
    targets = {
        "graph_text_cl_beats_paper": all(
            graph[d]["recall_at_10"] >= PAPER_TABLE_2[("graph_text_cl", d)][0][2]
            and graph[d]["mrr"] >= PAPER_TABLE_2[("graph_text_cl", d)][0][3]
            for d in DIRECTIONS
        ),
        "best_method_r10_075_mrr_050": all(
            best[d]["recall_at_10"] >= 0.75 and best[d]["mrr"] >= 0.50 for d in DIRECTIONS
        ),
        "training_within_10_minutes": wall <= 600,
    }
    print(
        f"training wall time, {len(jobs)} models in {workers} process(es) × {threads} "
        f"thread(s): {wall:.1f} s"
    )
    print("targets:", targets)
    result = {
        "profile": profile,
        "workers": workers,
        "threads_per_worker": threads,
        "trained": chosen,
        "from_the_lake": [m for m in registry.trained() if m not in chosen],
        "training_wall_s": round(wall, 1),
        "per_method": per_method,
        "table_2": summary,
        "best_method": {d: best[d]["method"] for d in DIRECTIONS},
        "targets_met": targets,
    }
    name = f"training_{profile}_{workers}x{threads}" + (f"_{'_'.join(chosen)}" if methods else "")
    print(f"written {write_result(name, result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="default")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    parser.add_argument(
        "--methods",
        nargs="+",
        help="train only these methods; the others' models are read from the data lake",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        help="only time this many epochs per method on fold 1 (for `paper` on a CPU)",
    )
    args = parser.parse_args()
    if args.epochs:
        epochs_only(args.profile, args.epochs, threads=args.threads)
    else:
        run(args.profile, args.workers, args.threads, args.methods)
