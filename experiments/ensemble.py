"""The score ensemble's variants on a lake's stored fold models: no hubness correction, a
fixed neighbourhood size k, and k chosen with the weights (what `retrieval_scores` does).

Per variant: the mean over folds of the selection split's MRR (where the weights and k are
chosen), the validation split's (which also early-stopped the members, so it flatters them),
and the test fold's R@10 and MRR per direction, scored as Table 2 scores them. Choose between
variants by the first two columns; the test columns are for the record. Needs a lake whose
`retrieval_scores` inputs exist (`make run`; `FORMULA_ASSETS_DATA_LAKE` picks the lake).
"""

from __future__ import annotations

import argparse

import numpy as np
from upath import UPath

from benchmarks.common import print_table, write_result
from formula_assets.core import lake
from formula_assets.core.arrow import embedding_matrix
from formula_assets.core.protocol import DIRECTIONS, FOLDS
from formula_assets.core.settings import Settings
from formula_assets.evaluation.ensemble import choose_ensemble, ensemble_scorers, member_hubness
from formula_assets.evaluation.hubness import HUBNESS_KS
from formula_assets.evaluation.lineup import FoldData
from formula_assets.evaluation.ranking import Scorer, gold_ranks
from formula_assets.evaluation.retrieval import REFERENCE_SPLIT, WEIGHT_SPLIT, member_spaces
from formula_assets.methods import registry
from formula_assets.training.artifacts import model_directory

VARIANTS: dict[str, tuple[int, ...]] = {
    "cosine (no correction)": (0,),
    "hubness k = 3": (3,),
    "hubness k = 5": (5,),
    "hubness k = 10": (10,),
    "hubness k chosen (adopted)": HUBNESS_KS,
}


def _summary(forward: Scorer, backward: Scorer) -> list[float]:
    out = []
    for scorer in (forward, backward):
        s = gold_ranks(scorer).summary()
        out += [s["recall_at_10"], s["mrr"]]
    return out


def run(root: UPath) -> dict:
    frozen = {
        name: dict(zip(*embedding_matrix(lake.read_parquet(root / f"{name}.parquet")), strict=True))
        for name in ("opt_text_embeddings", "semantic_embeddings")
    }
    per_variant: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for fold in FOLDS:
        trained = registry.trained()
        models = {
            m: registry.trained_method(m).read_model(model_directory(root, fold, m))
            for m in trained
        }
        data = FoldData(models, frozen["opt_text_embeddings"], frozen["semantic_embeddings"])
        spaces = {}
        for split in (WEIGHT_SPLIT, "validation", "test", REFERENCE_SPLIT):
            qids = models[trained[0]].split_vectors(split)[0]
            spaces[split] = member_spaces(data, registry.ensemble_members(), split, qids)
        reference = spaces[REFERENCE_SPLIT]
        for name, ks in VARIANTS.items():
            choice = choose_ensemble(spaces[WEIGHT_SPLIT], reference, ks)
            row = {"k": choice.hubness_k, "weights": choice.weights}
            for split in (WEIGHT_SPLIT, "validation", "test"):
                hubs = member_hubness(spaces[split], reference, choice.hubness_k)
                metrics = _summary(*ensemble_scorers(choice, spaces[split], hubs))
                row[split] = metrics
            per_variant[name].append(row)
    table = []
    payload = {}
    for name, rows in per_variant.items():
        mean = {
            s: np.mean([r[s] for r in rows], axis=0) for s in (WEIGHT_SPLIT, "validation", "test")
        }
        payload[name] = {
            "k_per_fold": [r["k"] for r in rows],
            "selection_mrr": float(mean[WEIGHT_SPLIT][[1, 3]].mean()),
            "validation_mrr": float(mean["validation"][[1, 3]].mean()),
            "test": dict(zip(
                [f"{d} {m}" for d in DIRECTIONS for m in ("recall_at_10", "mrr")],
                map(float, mean["test"]),
                strict=True,
            )),
        }  # fmt: skip
        t = mean["test"]
        table.append(
            [
                name,
                ",".join(map(str, payload[name]["k_per_fold"])),
                f"{payload[name]['selection_mrr']:.3f}",
                f"{payload[name]['validation_mrr']:.3f}",
                f"{t[0]:.3f} / {t[2]:.3f}",
                f"{t[1]:.3f} / {t[3]:.3f}",
            ]
        )
    print_table(
        f"score_ensemble variants on {root}",
        ["variant", "k per fold", "selection MRR", "validation MRR", "test R@10 s→m / m→s",
         "test MRR s→m / m→s"],
        table,
    )  # fmt: skip
    print(f"written {write_result('ensemble', {'lake': str(root), 'variants': payload})}")
    return payload


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", help="the data lake (default: FORMULA_ASSETS_DATA_LAKE)")
    args = parser.parse_args()
    try:
        run(UPath(args.lake or Settings.from_environment().data_lake))
    except FileNotFoundError as exc:  # a lake without the models or embeddings Table 2 needs
        raise SystemExit(f"experiments.ensemble: {exc}; run `make run` on that lake") from None
