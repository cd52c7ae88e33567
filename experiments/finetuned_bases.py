"""A second fine-tuned encoder from another base model, scored in the ensemble: in place of
the fine-tuned member, beside it, or averaged with it; and with one run of the graph encoder.

On the upstream assets and stored models of the data lake (`make run` with `--profile` first;
FORMULA_ASSETS_DATA_LAKE picks the lake), each fold's `sbert_finetuned_cl` is trained from
`--base-model` (a local sentence-transformers folder, BERT or MPNet) with `--frozen-layers`,
everything else the profile's, and `graph_text_cl` with one run instead of the profile's —
both by `fold_models`' own `train_fold`, in `--workers` processes × one torch thread, the
frozen layers' pass shared through a store in a temporary folder. The ensemble's variants
are then scored as `retrieval_scores` scores the ensemble (weights and hubness k chosen on
each fold's selection split, then the test fold), every other member the lake's model:

* `lake`: the lake's models, as Table 2 has them;
* `replace`: the new fine-tuned encoder in place of the lake's;
* `add`: the new one as one more member, with its own weight;
* `average`: one member, the lake's and the new encoder's vectors joined as a model's runs
  are (`joined_runs`: the cosine is the mean of the two);
* each of `lake` and `average` again with the one-run graph encoder.

Choose by the selection MRR (and the validation MRR, which also early-stopped the members);
the test columns are for the record. Measured on a lake of `large` as it was before it
averaged the two fine-tuned encoders (docs/research-record.md); on a lake of today's `large`,
the lake's member is already that average.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from upath import UPath

from benchmarks.common import print_table, write_result
from benchmarks.training import lake_alignment_data
from experiments.ensemble import _summary
from formula_assets.core import lake
from formula_assets.core.arrow import embedding_matrix
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import FOLDS
from formula_assets.core.settings import Settings
from formula_assets.evaluation.ensemble import choose_ensemble, ensemble_scorers, member_hubness
from formula_assets.evaluation.lineup import FoldData
from formula_assets.evaluation.retrieval import REFERENCE_SPLIT, WEIGHT_SPLIT, member_spaces
from formula_assets.methods import registry
from formula_assets.training.artifacts import TrainedModel, model_directory
from formula_assets.training.fold import train_fold
from formula_assets.training.models import joined_runs
from formula_assets.training.sentence_encoder import frozen_store

FINETUNED, GRAPH = "sbert_finetuned_cl", "graph_text_cl"
ADDED = "sbert_finetuned_other_cl"  # the new encoder as a member of its own (`add`)
SPLITS = (WEIGHT_SPLIT, "validation", "test")


def _train(job: tuple) -> tuple[dict, TrainedModel]:
    method, fold, profile_name, base_model, frozen_layers, store = job
    os.environ["OMP_NUM_THREADS"] = "1"
    profile = dataclasses.replace(get_profile(profile_name), torch_threads=1)
    trainable = registry.trained_method(method)
    own = trainable.settings(profile)
    if method == FINETUNED:
        changed = dataclasses.replace(own, base_model=base_model, frozen_layers=frozen_layers)
    else:
        changed = dataclasses.replace(own, runs=1)
    started = time.perf_counter()
    with frozen_store(Path(store)):
        model = train_fold(trainable.with_settings(changed), fold, lake_alignment_data(), profile)
    summary = {
        "method": method,
        "fold": fold,
        "validation_mrr": model.description.best_validation_mrr,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return summary, dataclasses.replace(model, state={})  # the vectors are what is scored


class _Joined:
    """Two fold models' stored vectors as one model's (`joined_runs`)."""

    def __init__(self, first: TrainedModel, second: TrainedModel) -> None:
        self.first, self.second = first, second

    def split_vectors(self, split: str | None) -> tuple[list[str], np.ndarray, np.ndarray]:
        qids, *a = self.first.split_vectors(split)
        other, *b = self.second.split_vectors(split)
        if other != qids:
            raise ValueError("the two models hold different formulae")
        return qids, *(
            joined_runs([torch.tensor(x), torch.tensor(y)]).numpy()
            for x, y in zip(a, b, strict=True)
        )


def _variants(lake_models: dict, new: dict) -> dict[str, tuple[list, dict]]:
    """name → (ensemble members, their models): the lake's, with some replaced."""
    members = list(registry.ensemble_members())
    added = copy.copy(registry.get(FINETUNED))
    added.name = ADDED
    average = _Joined(lake_models[FINETUNED], new[FINETUNED])
    return {
        "lake": (members, lake_models),
        "replace": (members, lake_models | {FINETUNED: new[FINETUNED]}),
        "add": ([*members, added], lake_models | {ADDED: new[FINETUNED]}),
        "average": (members, lake_models | {FINETUNED: average}),
        "lake, graph 1 run": (members, lake_models | {GRAPH: new[GRAPH]}),
        "average, graph 1 run": (members, lake_models | {FINETUNED: average, GRAPH: new[GRAPH]}),
    }


def _scored(members: list, models: dict, frozen: dict) -> dict:
    data = FoldData(models, frozen["opt_text_embeddings"], frozen["semantic_embeddings"])
    spaces = {}
    for split in (*SPLITS, REFERENCE_SPLIT):
        qids = models[FINETUNED].split_vectors(split)[0]
        spaces[split] = member_spaces(data, members, split, qids)
    choice = choose_ensemble(spaces[WEIGHT_SPLIT], spaces[REFERENCE_SPLIT])
    row: dict = {"hubness_k": choice.hubness_k, "weights": choice.weights}
    for split in SPLITS:
        hubs = member_hubness(spaces[split], spaces[REFERENCE_SPLIT], choice.hubness_k)
        row[split] = _summary(*ensemble_scorers(choice, spaces[split], hubs))
    return row


def run(profile: str, base_model: str, frozen_layers: int, workers: int) -> dict:
    root = UPath(Settings.from_environment().data_lake)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="frozen-layers-") as store:
        jobs = [
            (method, fold, profile, base_model, frozen_layers, store)
            for method in (FINETUNED, GRAPH)
            for fold in FOLDS
        ]
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            trained = pool.map(_train, jobs, chunksize=1)
    wall = time.perf_counter() - started
    frozen = {
        name: dict(zip(*embedding_matrix(lake.read_parquet(root / f"{name}.parquet")), strict=True))
        for name in ("opt_text_embeddings", "semantic_embeddings")
    }
    per_variant: dict[str, list[dict]] = {}
    for fold in FOLDS:
        lake_models = {
            m: registry.trained_method(m).read_model(model_directory(root, fold, m))
            for m in registry.trained()
        }
        new = {m.method: m for _, m in trained if m.fold == fold}
        for name, (members, models) in _variants(lake_models, new).items():
            per_variant.setdefault(name, []).append(_scored(members, models, frozen))
    payload, table = {}, []
    for name, rows in per_variant.items():
        mean = {s: np.mean([r[s] for r in rows], axis=0) for s in SPLITS}
        t = mean["test"]
        payload[name] = {
            "hubness_k_per_fold": [r["hubness_k"] for r in rows],
            "weights_per_fold": [r["weights"] for r in rows],
            "selection_mrr": float(mean[WEIGHT_SPLIT][[1, 3]].mean()),
            "validation_mrr": float(mean["validation"][[1, 3]].mean()),
            "test": [float(x) for x in t],
        }
        table.append([
            name, f"{payload[name]['selection_mrr']:.4f}", f"{payload[name]['validation_mrr']:.4f}",
            f"{t[0]:.3f} / {t[2]:.3f}", f"{t[1]:.3f} / {t[3]:.3f}",
        ])  # fmt: skip
    models = [summary for summary, _ in trained]
    for method in (FINETUNED, GRAPH):
        mrr = np.mean([m["validation_mrr"] for m in models if m["method"] == method])
        print(f"{method} (new): mean validation MRR {mrr:.4f}")
    print_table(
        f"the ensemble on {root} with {base_model} fine-tuned ({frozen_layers} layers frozen)",
        ["variant", "selection MRR", "validation MRR", "test R@10 s→m / m→s",
         "test MRR s→m / m→s"],
        table,
    )  # fmt: skip
    print(f"{len(jobs)} models in {workers} process(es) × 1 thread: {wall:.0f} s")
    result = {
        "lake": str(root),
        "profile": profile,
        "base_model": base_model,
        "frozen_layers": frozen_layers,
        "workers": workers,
        "wall_s": round(wall, 1),
        "models": models,
        "variants": payload,
    }
    print(f"written {write_result('finetuned_bases', result)}")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--profile", default="large")
    parser.add_argument(
        "--base-model", required=True, help="a local sentence-transformers folder (BERT or MPNet)"
    )
    parser.add_argument("--frozen-layers", type=int, default=11)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    run(args.profile, args.base_model, args.frozen_layers, args.workers)
