"""The search index: every formula's vectors in each method's shared space, per fold.

A query then encodes only itself. Each row says which split of that fold the item was in, so
a hit can say whether the serving models trained on it (`train`, `selection`, `validation`:
the training folds) or never saw it (`test`). The ensemble's weights and hubness k are those of
Table 2 (chosen on each fold's selection split); each row keeps its hubness as a candidate, so
a query is corrected as in Table 2 without the training split's vectors. The held-out search
quality is measured here: each test formula of a fold queries the whole index with that fold's
models, and the rank of its own item is scored by the same ranking code as Table 2.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pyarrow as pa

from formula_assets.core.lake import ROW_GROUP_ROWS_KEY
from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.ensemble import EnsembleChoice, ensemble_scorers, member_hubness
from formula_assets.evaluation.hubness import Space, SpaceHubness
from formula_assets.evaluation.lineup import FoldData, SplitVectors
from formula_assets.evaluation.ranking import CosineScorer, Scorer, gold_ranks
from formula_assets.evaluation.retrieval import FoldEnsemble, fold_ensemble, fold_reference
from formula_assets.methods import registry
from formula_assets.search.layout import HELD_OUT, INDEX_SCHEMA, METADATA_KEY

if TYPE_CHECKING:
    from formula_assets.training.artifacts import ModelDescription


class IndexedModel(SplitVectors, Protocol):
    """A trained fold model that also knows its vectors and split of every formula."""

    fold: int
    method: str
    description: ModelDescription
    embeddings: pa.Table | None


@dataclass
class IndexSummary:
    serving_fold: int
    validation_mrr: dict[int, dict[str, float]]
    ensemble_weights: dict[int, dict[str, float]]
    ensemble_hubness_k: dict[int, int]
    # method → direction → metric → mean over folds of held-out items searching everything
    held_out: dict[str, dict[str, dict[str, float]]]
    items: int
    embedding_model: str | None = None
    # the model's files' content hash: a query must be embedded by the same model
    embedding_model_identity: str | None = None

    def to_json(self) -> dict:
        return {
            "serving_fold": self.serving_fold,
            "validation_mrr": {str(k): v for k, v in self.validation_mrr.items()},
            "ensemble_weights": {str(k): v for k, v in self.ensemble_weights.items()},
            "ensemble_hubness_k": {str(k): v for k, v in self.ensemble_hubness_k.items()},
            "held_out": self.held_out,
            "items": self.items,
            "embedding_model": self.embedding_model,
            "embedding_model_identity": self.embedding_model_identity,
        }


def serving_fold(validation_mrr: Mapping[int, Mapping[str, float]]) -> int:
    """The fold whose trained members did best on their validation split (never the test)."""
    return max(sorted(validation_mrr), key=lambda f: sum(validation_mrr[f].values()))


def build_search_index(
    models: Mapping[tuple[int, str], IndexedModel],
    opt_vectors: Mapping[str, np.ndarray],
    semantic_vectors: Mapping[str, np.ndarray],
    embedding_model: str | None = None,
    embedding_model_identity: str | None = None,
    choices: Mapping[int, EnsembleChoice] | None = None,
) -> tuple[pa.Table, IndexSummary]:
    """The index rows of every fold, and what the searcher and the metadata need to know.
    `choices`: each fold's ensemble as Table 2 chose it (`ensemble_choices`), so that search
    weighs the members as Table 2 did without choosing again (None: chosen here, the same
    way, on each fold's selection split)."""
    trained = registry.trained()
    members = registry.ensemble_members()
    folds = sorted({fold for fold, _ in models})
    missing = [(f, m) for f in folds for m in trained if (f, m) not in models]
    if missing:
        raise ValueError(f"the search index needs every trained model; missing {missing}")
    parts: list[pa.Table] = []
    weights: dict[int, dict[str, float]] = {}
    hubness_k: dict[int, int] = {}
    validation: dict[int, dict[str, float]] = {}
    per_fold: dict[int, dict[str, dict[str, dict[str, float]]]] = {}
    items = 0
    for fold in folds:
        fold_models = {m: models[(fold, m)] for m in trained}
        data = FoldData(fold_models, opt_vectors, semantic_vectors)
        ensemble = (
            fold_ensemble(data, members)
            if choices is None
            else FoldEnsemble(_chosen(choices, fold, members), fold_reference(data, members))
        )
        weights[fold], hubness_k[fold] = ensemble.choice.weights, ensemble.choice.hubness_k
        validation[fold] = {m: fold_models[m].description.best_validation_mrr for m in trained}
        qids, splits, spaces = _fold_vectors(fold_models, data)
        items = len(qids)
        hubs = member_hubness(
            {m.name: spaces[m.name] for m in members},
            ensemble.reference,
            ensemble.choice.hubness_k,
        )
        for method, (structural, semantic) in spaces.items():
            parts.append(_rows(fold, method, qids, splits, structural, semantic, hubs.get(method)))
        per_fold[fold] = held_out_quality(
            spaces, hubs, ensemble.choice, np.asarray(splits) == HELD_OUT
        )
    table = pa.concat_tables(parts) if parts else INDEX_SCHEMA.empty_table()
    summary = IndexSummary(
        serving_fold=serving_fold(validation),
        validation_mrr=validation,
        ensemble_weights=weights,
        ensemble_hubness_k=hubness_k,
        held_out=_mean_over_folds(per_fold),
        items=items,
        embedding_model=embedding_model,
        embedding_model_identity=embedding_model_identity,
    )
    metadata = {METADATA_KEY: json.dumps(summary.to_json())}
    if items:  # one row group per fold × method: a search reads its fold's only
        metadata[ROW_GROUP_ROWS_KEY] = str(items)
    table = table.replace_schema_metadata(metadata)
    return table, summary


def _chosen(choices: Mapping[int, EnsembleChoice], fold: int, members) -> EnsembleChoice:
    """The given choice of one fold, if it weighs the registry's members in their order."""
    names = tuple(m.name for m in members)
    choice = choices.get(fold)
    if choice is None or choice.members != names:
        found = None if choice is None else choice.members
        raise ValueError(
            f"fold {fold}: the ensemble's choice weighs {found}, not the members {names}: "
            "rebuild retrieval_scores"
        )
    return choice


def _fold_vectors(
    models: Mapping[str, IndexedModel], data: FoldData
) -> tuple[list[str], list[str], dict[str, Space]]:
    """Every indexed method's vectors of all the fold's formulae, in one qid order (the
    trained models' own, which must agree)."""
    reference: tuple[list[str], list[str]] | None = None
    for method, model in models.items():
        if model.embeddings is None:
            raise ValueError(f"{method} fold {model.fold}: no embeddings stored")
        table = model.embeddings
        qids, splits = table.column("qid").to_pylist(), table.column("split").to_pylist()
        if reference is None:
            reference = (qids, splits)
        elif (qids, splits) != reference:
            raise ValueError(f"{method} fold {model.fold}: other formulae or splits than its peers")
    qids, splits = reference or ([], [])
    spaces: dict[str, Space] = {}
    for name in registry.indexed():
        space = registry.get(name).space(data, None, qids)
        if space is None:
            raise ValueError(f"{name} is indexed for search but has no vectors")
        spaces[name] = space
    return qids, splits, spaces


def held_out_quality(
    spaces: Mapping[str, tuple[np.ndarray, np.ndarray]],
    hubs: Mapping[str, SpaceHubness],
    choice: EnsembleChoice,
    held_out: np.ndarray,
) -> dict[str, dict[str, dict[str, float]]]:
    """R@k and MRR of the held-out items' own formula (and own texts) against every item:
    each method by cosine, the ensemble as in Table 2 (hubness-corrected members)."""
    rows = np.flatnonzero(held_out)
    scorers: dict[tuple[str, str], Scorer] = {}
    for method, (structural, semantic) in spaces.items():
        forward = CosineScorer(structural, semantic)
        scorers[(method, DIRECTIONS[0])], scorers[(method, DIRECTIONS[1])] = (
            forward,
            forward.reverse(),
        )
    scorers[(ENSEMBLE, DIRECTIONS[0])], scorers[(ENSEMBLE, DIRECTIONS[1])] = ensemble_scorers(
        choice, spaces, hubs
    )
    return {
        method: {d: gold_ranks(scorers[(method, d)], rows).summary() for d in DIRECTIONS}
        for method in registry.search_methods()
    }


def _mean_over_folds(
    per_fold: Mapping[int, Mapping[str, Mapping[str, Mapping[str, float]]]],
) -> dict[str, dict[str, dict[str, float]]]:
    if not per_fold:
        return {}
    first = next(iter(per_fold.values()))
    return {
        method: {
            direction: {
                metric: float(np.mean([per_fold[f][method][direction][metric] for f in per_fold]))
                for metric in first[method][direction]
            }
            for direction in first[method]
        }
        for method in first
    }


def _rows(
    fold: int,
    method: str,
    qids: list[str],
    splits: list[str],
    structural: np.ndarray,
    semantic: np.ndarray,
    hub: SpaceHubness | None,
) -> pa.Table:
    """One fold × method's rows; a method outside the ensemble has no hubness (zeros)."""
    n = len(qids)
    if hub is None:
        hub = SpaceHubness(np.zeros(n), np.zeros(n))
    return pa.table(
        {
            "fold": pa.array([fold] * n, pa.int8()),
            "method": pa.array([method] * n, pa.string()),
            "qid": pa.array(qids, pa.string()),
            "split": pa.array(splits, pa.string()),
            "structural": _list_column(structural),
            "semantic": _list_column(semantic),
            "structural_hubness": pa.array(hub.structural, pa.float64()),
            "semantic_hubness": pa.array(hub.semantic, pa.float64()),
        },
        schema=INDEX_SCHEMA,
    )


def _list_column(matrix: np.ndarray) -> pa.Array:
    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    offsets = pa.array(np.arange(len(matrix) + 1, dtype=np.int32) * matrix.shape[1])
    return pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)))
