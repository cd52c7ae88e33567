"""What each change to `graph_text_cl` gives: every variant trained on all five folds.

Each variant is the `default` profile's graph_text_cl sizes and schedule with some options
on; it is trained on the published folds (2 processes × 1 torch thread), on the vectors of
the sentence model the data lake was built with, and reported with its mean best validation
MRR — what a choice between variants may look at — and, for the record only, its test R@10
and MRR in both directions, computed as Table 2 does. Reads the upstream assets from the data
lake (`make run` first; FORMULA_ASSETS_DATA_LAKE chooses which).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import time

import numpy as np
from upath import UPath

from benchmarks.common import RESULTS, print_table, write_result
from benchmarks.training import held_out_scores, lake_alignment_data
from formula_assets.core import lake
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import DIRECTIONS, FOLDS
from formula_assets.core.settings import Settings
from formula_assets.methods import registry
from formula_assets.training.fold import train_fold

METHOD = "graph_text_cl"
# the settings every variant starts from: the default's sizes and schedule with every option
# off (the paper's encoder), so that a recorded variant means the same as the default moves
BASE = dataclasses.replace(
    registry.trained_method(METHOD).settings(get_profile("default")),
    token_text=False,
    token_dropout=0.0,
    formula_text=False,
    readout="mean",
    semantic_hidden=None,
    semantic_dropout=None,
)
# the default's node inputs since round 3: token texts, formula context, token dropout
TEXT_FORMULA_UNK = {"token_text": True, "formula_text": True, "token_dropout": 0.1}
VARIANTS: dict[str, dict] = {  # each relative to BASE
    "base": {"token_text": False},
    "text": {"token_text": True},
    "text+unk": {"token_text": True, "token_dropout": 0.1},
    # the root-state readout (text+root, text+root+unk, … 3 layers) is measured in
    # docs/research-record.md and no longer in the package
    "text+formula": {"token_text": True, "formula_text": True},
    "text+formula+unk": TEXT_FORMULA_UNK,
    "text+formula+unk, dropout 0.3": {**TEXT_FORMULA_UNK, "dropout": 0.3},
    "text+formula+unk, hidden 512": {**TEXT_FORMULA_UNK, "hidden": 512},
    "text+formula+unk, batch 512": {**TEXT_FORMULA_UNK, "batch_size": 512},
    # round 5: the formula head and sbert_dual_cl's semantic head, on the default's vectors
    "text+formula+unk, formula head, dual's semantic head": {
        **TEXT_FORMULA_UNK,
        "readout": "mean+formula",
        "semantic_hidden": 1024,
        "semantic_dropout": 0.3,
    },
    # and on a lake built with the `large` profile's two models side by side
    "text+formula+unk, hidden 512, formula head": {
        **TEXT_FORMULA_UNK,
        "hidden": 512,
        "readout": "mean+formula",
    },
    "text+formula+unk, hidden 512, formula head, dual's semantic head": {
        **TEXT_FORMULA_UNK,
        "hidden": 512,
        "readout": "mean+formula",
        "semantic_hidden": 1024,
        "semantic_dropout": 0.3,
    },
}


TOKENS = RESULTS / "opt_token_embeddings.parquet"  # made once, read by every process


def _token_table():
    path = UPath(Settings.from_environment().data_lake) / "opt_token_embeddings.parquet"
    if path.exists():
        return lake.read_parquet(path)
    if TOKENS.exists():
        return lake.read_parquet(UPath(TOKENS))
    from formula_assets.semantics.cache import EmbeddingCache
    from formula_assets.semantics.models import TextEmbedder, resolve_model
    from formula_assets.semantics.tables import token_vectors

    embedder = TextEmbedder(resolve_model(None, "the default"))
    cache = EmbeddingCache(
        Settings.from_environment().embedding_cache, embedder.cache_identity, "opt_token_embeddings"
    )
    table, _ = token_vectors(
        lake.read_parquet(UPath(Settings.from_environment().data_lake) / "opt_graphs.parquet"),
        embedder,
        cache,
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    lake.write_parquet_atomic(table, UPath(TOKENS))
    return table


def _train(job: tuple) -> dict:
    name, fold, overrides = job
    os.environ["OMP_NUM_THREADS"] = "1"
    data = lake_alignment_data(tokens=_token_table())
    trainable = registry.trained_method(METHOD).with_settings(
        dataclasses.replace(BASE, **overrides)
    )
    started = time.perf_counter()
    model = train_fold(trainable, fold, data, get_profile("default"))
    return {
        "variant": name,
        "fold": fold,
        "validation_mrr": model.description.best_validation_mrr,
        "best_epoch": model.description.best_epoch,
        "seconds": time.perf_counter() - started,
        "test": held_out_scores(model),
        "unseen_test_tokens": model.description.unseen_test_tokens,
    }


def run(names: list[str], workers: int = 2) -> dict:
    _token_table()  # embed the tokens once, before the processes start
    jobs = [(name, fold, VARIANTS[name]) for name in names for fold in FOLDS]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        results = pool.map(_train, jobs, chunksize=1)
    summary = {}
    for name in names:
        mine = [r for r in results if r["variant"] == name]
        summary[name] = {
            "validation_mrr": float(np.mean([r["validation_mrr"] for r in mine])),
            **{
                f"{d}_{m}": float(np.mean([r["test"][d][m] for r in mine]))
                for d in DIRECTIONS
                for m in ("recall_at_10", "mrr")
            },
            "fold_seconds": [round(r["seconds"], 1) for r in mine],
            "settings": VARIANTS[name],
        }
    print_table(
        f"{METHOD} variants on the default profile (mean over 5 folds)",
        ["variant", "validation MRR", "R@10 s→m", "MRR s→m", "R@10 m→s", "MRR m→s", "s/fold"],
        [
            [
                name,
                f"{r['validation_mrr']:.3f}",
                f"{r[f'{DIRECTIONS[0]}_recall_at_10']:.3f}",
                f"{r[f'{DIRECTIONS[0]}_mrr']:.3f}",
                f"{r[f'{DIRECTIONS[1]}_recall_at_10']:.3f}",
                f"{r[f'{DIRECTIONS[1]}_mrr']:.3f}",
                f"{np.mean(r['fold_seconds']):.0f}",
            ]
            for name, r in summary.items()
        ],
    )
    print(f"written {write_result('ablation', {'variants': summary, 'folds': results})}")
    return summary


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    run(args.variants, args.workers)
