"""How well the annotation audit finds annotations corrupted on purpose (docs/audit.md).

A fold's models never saw its test fold, so test-fold annotations can be corrupted without
retraining: each corrupted item's annotation vector is rebuilt from its edited concepts (the
real text builder and the table's aggregation of the cached sentence vectors), mapped by the
fold's models and put back in the fold's index with its hubness recomputed, then every test
item of the fold is scored as the `annotation_audit` asset scores it.

* swap: the concept sets of `--rate` of the fold's test items are swapped pairwise;
* wrong: one concept of `--rate` of them is replaced by another concept of the vocabulary;
* missing: one concept of `--rate` of them is removed (one the corpus uses on another item
  too: a concept found nowhere else is in no vocabulary to suggest from).

Swap and wrong: ROC AUC and precision@(number corrupted) of the suspicion score separating
corrupted from clean test items: `score_ensemble` as the audit computes it, each indexed method
alone in its place (its own association of formulae with concepts), and BM25 (the linearised
OPT against the concepts' texts). Missing: how often the removed concept is among the
audit's top 10 suggestions, against the corpus's most frequent concepts. Means over the
folds and `--seeds` corruption seeds. Needs the `default` lake of `make run`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from scipy.stats import rankdata
from upath import UPath

from benchmarks.common import write_result
from formula_assets.audit.concepts import (
    SUGGESTED,
    AnnotationQuery,
    ConceptSuggester,
    concept_entry,
    concept_texts,
    corpus_texts,
    semantic_side,
    suspicion,
    vocabulary,
    with_concepts,
)
from formula_assets.audit.scores import with_semantic
from formula_assets.core import lake
from formula_assets.core.arrow import recorded_aggregation, recorded_identity
from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import Settings, embedding_model_origin
from formula_assets.evaluation.bm25 import bm25_scorer
from formula_assets.methods import registry
from formula_assets.methods.base import LoadedModel
from formula_assets.search.layout import HELD_OUT, ServingVectors, serving_vectors
from formula_assets.semantics.annotations import annotation_texts

CORRUPTIONS = ("swap", "wrong", "missing")
MOST_FREQUENT = "most_frequent"
LEXICAL = "bm25"  # the lexical baseline (no vectors: its own association below)
TARGETS = {
    "swap": {"auc": 0.95, "precision": 0.80},
    "wrong": {"auc": 0.80},
    "missing": {"recall": 0.5},
}


def _read(root: UPath, name: str) -> pa.Table:
    return lake.read_parquet(root / f"{name}.parquet")


def text_vectors(root: UPath, texts: Sequence[str], semantic: pa.Table) -> dict[str, np.ndarray]:
    """The sentence vectors of `texts` from the embedding cache (the model embeds misses)."""
    from formula_assets.semantics.cache import EmbeddingCache, embed_texts
    from formula_assets.semantics.models import TextEmbedder, downloaded, resolve_model

    settings = Settings.from_environment()
    spec = resolve_model(
        settings.embedding_model, embedding_model_origin(settings), settings.model_dir
    )
    spec = downloaded(spec, None, settings.model_dir, settings.hf_hub_offline)
    if recorded_identity(semantic) and spec.identity != recorded_identity(semantic):
        raise SystemExit("the configured sentence model did not build semantic_embeddings")
    embedder = TextEmbedder(spec, None, 64, settings.hf_hub_offline)
    cache = (
        EmbeddingCache(
            settings.embedding_cache, embedder.cache_identity, "semantic_embeddings", print
        )
        if settings.embedding_cache
        else None
    )
    matrix, stats = embed_texts(list(texts), embedder, cache)
    print(f"{stats.cached:,} of {stats.distinct:,} texts from the embedding cache")
    return dict(zip(texts, matrix, strict=True))


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """ROC AUC (Mann–Whitney; ties count half)."""
    ranks = rankdata(scores)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def precision_at_k(scores: np.ndarray, positive: np.ndarray) -> float:
    """Of the k = number corrupted highest scores, the share that are corrupted (ties keep
    the item order, which is not the corruption's)."""
    k = int(positive.sum())
    top = np.argsort(-scores, kind="stable")[:k]
    return float(positive[top].mean())


def corrupt(
    kind: str,
    rows: np.ndarray,
    items: Sequence[Mapping[str, Any]],
    concepts: Mapping[str, Any],
    rate: float,
    rng: np.random.Generator,
) -> tuple[dict[int, list[dict]], dict[int, str]]:
    """row → its corrupted concept list, and (missing) row → the concept removed."""
    eligible = [i for i, item in enumerate(items) if item.get("concepts")]
    if kind == "missing":
        eligible = [
            i for i in eligible if any(concepts[c["qid"]].uses > 1 for c in items[i]["concepts"])
        ]
    n = max(2, round(rate * len(rows)))
    if kind == "swap":
        n -= n % 2
    chosen = rng.choice(eligible, size=min(n, len(eligible)), replace=False)
    edited: dict[int, list[dict]] = {}
    removed: dict[int, str] = {}
    vocabulary_qids = list(concepts)
    if kind == "swap":
        for a, b in zip(chosen[0::2], chosen[1::2], strict=True):
            edited[rows[a]] = list(items[b]["concepts"])
            edited[rows[b]] = list(items[a]["concepts"])
    for i in chosen if kind != "swap" else []:
        own = list(items[i]["concepts"])
        present = {c["qid"] for c in own}
        if kind == "wrong":
            at = int(rng.integers(len(own)))
            other = vocabulary_qids[int(rng.integers(len(vocabulary_qids)))]
            while other in present:
                other = vocabulary_qids[int(rng.integers(len(vocabulary_qids)))]
            own[at] = concept_entry(concepts[other])
        else:
            shared = [j for j, c in enumerate(own) if concepts[c["qid"]].uses > 1]
            at = shared[int(rng.integers(len(shared)))]
            removed[rows[i]] = own.pop(at)["qid"]
        edited[rows[i]] = own
    return edited, removed


def fold_run(
    vectors: ServingVectors,
    models: Mapping[str, LoadedModel | None],
    by_qid: Mapping[str, Mapping[str, Any]],
    opt_text: Mapping[str, str],
    texts: Mapping[str, np.ndarray],
    aggregation: str,
    kind: str,
    rate: float,
    seed: int,
    split: str = HELD_OUT,
) -> dict[str, float]:
    """One fold, one corruption, one seed: each method's metric, over the fold's `split`."""
    rows = np.flatnonzero(np.asarray(vectors.splits) == split)
    rows = np.array([r for r in rows if vectors.qids[r] in by_qid], dtype=np.int64)
    items = [by_qid[vectors.qids[r]] for r in rows]
    corpus = dict(by_qid)
    rng = np.random.default_rng([seed, vectors.fold, CORRUPTIONS.index(kind)])
    concepts = vocabulary(list(by_qid.values()))
    edited, removed = corrupt(kind, rows, items, concepts, rate, rng)
    for r, changed_concepts in edited.items():
        corpus[vectors.qids[r]] = with_concepts(corpus[vectors.qids[r]], changed_concepts)
    changed = np.array(sorted(edited), dtype=np.int64)
    queries = [
        AnnotationQuery(tuple(annotation_texts(corpus[vectors.qids[r]])), texts, aggregation)
        for r in changed
    ]
    corrupted = with_semantic(
        vectors, changed, semantic_side(queries, models, list(vectors.spaces))
    )
    if kind == "missing":
        concepts = vocabulary(list(corpus.values()))
        suggester = ConceptSuggester(corrupted, models, concepts, texts, aggregation)
        got = suggester.suggest(list(changed), [corpus[vectors.qids[r]] for r in changed])
        frequent = sorted(concepts, key=lambda q: -concepts[q].uses)
        hits, baseline = [], []
        for r, suggestions in zip(changed, got, strict=True):
            hits.append(removed[r] in [s.qid for s in suggestions[:SUGGESTED]])
            present = {c["qid"] for c in corpus[vectors.qids[r]]["concepts"]}
            top = [q for q in frequent if q not in present][:SUGGESTED]
            baseline.append(removed[r] in top)
        return {ENSEMBLE: float(np.mean(hits)), MOST_FREQUENT: float(np.mean(baseline))}
    positive = np.isin(rows, changed)
    corrupted_items = [corpus[vectors.qids[r]] for r in rows]
    suggesters = {ENSEMBLE: ConceptSuggester(corrupted, models, concepts, texts, aggregation)}
    for name in corrupted.spaces:
        suggesters[name] = ConceptSuggester(
            corrupted, models, concepts, texts, aggregation, weights={name: 1.0}
        )
    suggesters[LEXICAL] = LexicalSuggester(
        corrupted, models, concepts, texts, aggregation, opt_text=opt_text
    )
    out = {}
    for name, suggester in suggesters.items():
        scores = np.array(
            [suspicion(f) or 0.0 for f in suggester.concept_fit(list(rows), corrupted_items)]
        )
        out[f"{name} auc"] = auc(scores, positive)
        out[f"{name} precision"] = precision_at_k(scores, positive)
    return out


class LexicalSuggester(ConceptSuggester):
    """The BM25 baseline's association: the formula's linearised OPT against each concept's
    label and description (`evaluation.bm25`, Table 2's lexical baseline)."""

    def __init__(self, *args: Any, opt_text: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, weights={}, **kwargs)
        self.opt_text = opt_text

    def association(self, rows: Sequence[int]) -> np.ndarray:
        documents = [" ".join(concept_texts(self.concepts[q])) for q in self.order]
        queries = [self.opt_text.get(self.vectors.qids[r], "") for r in rows]
        scorer = bm25_scorer(queries, documents)
        return np.asarray(scorer.block(np.arange(len(queries))), dtype=np.float64)


@dataclass
class Inputs:
    """What every fold's runs read from the lake."""

    by_qid: dict[str, dict[str, Any]]
    opt_text: dict[str, str]
    texts: dict[str, np.ndarray]
    aggregation: str
    index: pa.Table

    def fold(self, root: UPath, fold: int) -> tuple[ServingVectors, dict[str, LoadedModel]]:
        from formula_assets.training.artifacts import model_directory

        models = {
            m: registry.trained_method(m).load(model_directory(root, fold, m))
            for m in registry.trained()
        }
        return serving_vectors(self.index, fold), models

    def run(
        self,
        vectors: ServingVectors,
        models: Mapping[str, LoadedModel],
        kind: str,
        rate: float,
        seed: int,
        split: str = HELD_OUT,
    ) -> dict[str, float]:
        return fold_run(
            vectors, models, self.by_qid, self.opt_text, self.texts, self.aggregation, kind,
            rate, seed, split,
        )  # fmt: skip


def load(root: UPath) -> Inputs:
    formulae = _read(root, "wikidata_formulae").to_pylist()
    semantic = _read(root, "semantic_embeddings")
    graphs = _read(root, "opt_graphs")
    return Inputs(
        {row["qid"]: row for row in formulae},
        dict(zip(graphs["qid"].to_pylist(), graphs["linearised_opt"].to_pylist(), strict=True)),
        text_vectors(root, corpus_texts(formulae, vocabulary(formulae)), semantic),
        recorded_aggregation(semantic) or "sum",
        _read(root, "search_index"),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="corruption seeds (3)")
    parser.add_argument("--rate", type=float, default=0.05, help="share corrupted (0.05)")
    parser.add_argument("--folds", type=int, nargs="*", help="default: every fold")
    parser.add_argument(
        "--split",
        default=HELD_OUT,
        help="whose annotations to corrupt: test (the measurement) or validation (where the "
        "scores were chosen)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    lake_root = UPath(Settings.from_environment().data_lake)
    inputs = load(lake_root)
    folds = args.folds or sorted(set(inputs.index.column("fold").to_pylist()))
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in CORRUPTIONS}
    for fold in folds:
        vectors, models = inputs.fold(lake_root, fold)
        for seed in range(args.seeds):
            for kind in CORRUPTIONS:
                results[kind].append(inputs.run(vectors, models, kind, args.rate, seed, args.split))
    means = {
        kind: {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        for kind, runs in results.items()
    }
    for kind in ("swap", "wrong"):
        for name in [ENSEMBLE, LEXICAL, *registry.indexed()]:
            if f"{name} auc" in means[kind]:
                print(
                    f"{kind} {name}: AUC {means[kind][f'{name} auc']:.2f}, "
                    f"precision@k {means[kind][f'{name} precision']:.2f}"
                )
    for name in (ENSEMBLE, MOST_FREQUENT):
        print(f"missing {name}: recall@{SUGGESTED} {means['missing'][name]:.2f}")
    seconds = time.perf_counter() - started
    print(
        f"({len(folds)} folds × {args.seeds} seeds, {args.rate:.0%} of each {args.split} split "
        f"corrupted, {seconds:.0f} s)"
    )
    path = write_result(
        "audit" if args.split == HELD_OUT else f"audit_{args.split}",
        {
            "folds": folds,
            "seeds": args.seeds,
            "rate": args.rate,
            "split": args.split,
            "targets": TARGETS,
            "means": means,
            "per_run": results,
            "seconds": round(seconds, 1),
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
