"""Cross-modal retrieval on each test fold: the paper's Table 2 (§4.3).

Candidates are the test fold's formulae, as in the paper. Directions: syntactic → semantic
(a formula's structure retrieves its semantics) and semantic → syntactic. Methods: `bm25`,
`sbert_no_cl` (cosine of the frozen sentence vectors), the trained `sbert_dual_cl` and
`graph_text_cl`, and `score_ensemble`: a weighted sum of the hubness-corrected cosine scores
of those three (`evaluation.hubness`), whose weights and hubness k are chosen on the fold's
selection split — formulae of the training folds that no member was trained or early-stopped
on — before the test fold is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa

from formula_assets.core.protocol import ALL_METHODS, DIRECTIONS, ENSEMBLE, TRAINED
from formula_assets.evaluation.bm25 import bm25_scorer
from formula_assets.evaluation.ensemble import (
    EnsembleChoice,
    choose_ensemble,
    ensemble_scorers,
    member_hubness,
)
from formula_assets.evaluation.hubness import Space
from formula_assets.evaluation.inputs import EvaluationInputs
from formula_assets.evaluation.ranking import (
    CosineScorer,
    GoldRanks,
    Scorer,
    gold_ranks,
)

SCORE_SCHEMA = pa.schema(
    [
        ("fold", pa.int8()),
        ("method", pa.string()),
        ("direction", pa.string()),
        ("recall_at_1", pa.float64()),
        ("recall_at_5", pa.float64()),
        ("recall_at_10", pa.float64()),
        ("mrr", pa.float64()),
        ("candidates", pa.int32()),
    ]
)

# The paper's Table 2: (R@1, R@5, R@10, MRR) means and standard deviations over 5 folds.
_S2M, _M2S = "syntactic_to_semantic", "semantic_to_syntactic"
PAPER_TABLE_2: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {
    ("bm25", _S2M): ((0.011, 0.030, 0.052, 0.033), (0.003, 0.005, 0.010, 0.003)),
    ("sbert_no_cl", _S2M): ((0.020, 0.061, 0.100, 0.052), (0.008, 0.005, 0.009, 0.006)),
    ("sbert_dual_cl", _S2M): ((0.224, 0.450, 0.556, 0.334), (0.016, 0.028, 0.028, 0.015)),
    ("graph_text_cl", _S2M): ((0.238, 0.444, 0.574, 0.345), (0.014, 0.014, 0.014, 0.011)),
    ("bm25", _M2S): ((0.017, 0.047, 0.072, 0.041), (0.006, 0.009, 0.008, 0.006)),
    ("sbert_no_cl", _M2S): ((0.082, 0.201, 0.280, 0.149), (0.016, 0.028, 0.028, 0.015)),
    ("sbert_dual_cl", _M2S): ((0.230, 0.454, 0.557, 0.340), (0.010, 0.014, 0.012, 0.009)),
    ("graph_text_cl", _M2S): ((0.250, 0.458, 0.580, 0.355), (0.019, 0.019, 0.017, 0.018)),
}


class SplitVectors(Protocol):
    """A trained model's vectors of one split's formulae in the shared space."""

    def split_vectors(self, split: str) -> tuple[list[str], np.ndarray, np.ndarray]: ...


@dataclass
class Evaluation:
    scores: pa.Table
    # (fold, method, direction) → per-query reciprocal ranks, in the fold's test order
    reciprocal_ranks: dict[tuple[int, str, str], np.ndarray] = field(default_factory=dict)
    ensemble_weights: dict[int, dict[str, float]] = field(default_factory=dict)
    ensemble_hubness_k: dict[int, int] = field(default_factory=dict)


def member_spaces(
    models: Mapping[str, SplitVectors],
    opt_vectors: Mapping[str, np.ndarray],
    semantic_vectors: Mapping[str, np.ndarray],
    split: str,
    qids: list[str],
) -> dict[str, Space]:
    """method → (structural, semantic) vectors of the split's formulae, for the trained models
    and `sbert_no_cl` (the frozen sentence vectors)."""
    out: dict[str, Space] = {}
    for method, model in models.items():
        model_qids, structural, semantic = model.split_vectors(split)
        if model_qids != qids:
            raise ValueError(f"{method} used another {split} split than the other methods")
        out[method] = (structural, semantic)
    out["sbert_no_cl"] = (
        np.stack([opt_vectors[q] for q in qids]),
        np.stack([semantic_vectors[q] for q in qids]),
    )
    return out


def cosine_scorers(spaces: Mapping[str, Space]) -> dict[tuple[str, str], Scorer]:
    """(method, direction) → cosine scorer over a split's formulae (candidates: the same)."""
    out: dict[tuple[str, str], Scorer] = {}
    for method, (structural, semantic) in spaces.items():
        forward = CosineScorer(structural, semantic)
        out[(method, DIRECTIONS[0])], out[(method, DIRECTIONS[1])] = forward, forward.reverse()
    return out


# The ensemble's weights and hubness k are chosen on formulae its members were neither
# trained nor early-stopped on (a member selected on the same split would look better there
# than the frozen baseline and win weight it has not earned).
WEIGHT_SPLIT = "selection"
# Hubness is measured against the formulae the members trained on: never the test fold.
REFERENCE_SPLIT = "train"


@dataclass
class FoldEnsemble:
    choice: EnsembleChoice
    reference: dict[str, Space]  # the members' spaces of the reference split


def fold_ensemble(
    models: Mapping[str, SplitVectors],
    opt_vectors: Mapping[str, np.ndarray],
    semantic_vectors: Mapping[str, np.ndarray],
) -> FoldEnsemble:
    """The ensemble of one fold, chosen on that fold's selection split only."""
    qids = _agreed_qids(models, WEIGHT_SPLIT)
    if len(qids) < 2:
        raise ValueError(
            f"the models have {len(qids)} {WEIGHT_SPLIT} formulae: the ensemble's weights need "
            "a selection split (profile selection_fraction > 0); retrain the fold models"
        )
    selection = member_spaces(models, opt_vectors, semantic_vectors, WEIGHT_SPLIT, qids)
    reference_qids = _agreed_qids(models, REFERENCE_SPLIT)
    reference = member_spaces(
        models, opt_vectors, semantic_vectors, REFERENCE_SPLIT, reference_qids
    )
    return FoldEnsemble(choose_ensemble(selection, reference), reference)


def evaluate(
    inputs: EvaluationInputs, models: Mapping[tuple[int, str], SplitVectors]
) -> Evaluation:
    rows: dict[str, list] = {name: [] for name in SCORE_SCHEMA.names}
    result = Evaluation(scores=pa.table({}))
    for fold in sorted({fold for fold, _ in models}):
        fold_models = {method: models[(fold, method)] for method in TRAINED}
        test_qids = _agreed_qids(fold_models, "test")
        ensemble = fold_ensemble(fold_models, inputs.opt_vectors, inputs.semantic_vectors)
        result.ensemble_weights[fold] = ensemble.choice.weights
        result.ensemble_hubness_k[fold] = ensemble.choice.hubness_k
        spaces = member_spaces(
            fold_models, inputs.opt_vectors, inputs.semantic_vectors, "test", test_qids
        )
        test = cosine_scorers(spaces)
        opt_docs = [inputs.opt_text[q] for q in test_qids]
        sem_docs = [inputs.semantic_text[q] for q in test_qids]
        test[("bm25", DIRECTIONS[0])] = bm25_scorer(opt_docs, sem_docs)
        test[("bm25", DIRECTIONS[1])] = bm25_scorer(sem_docs, opt_docs)
        hubs = member_hubness(spaces, ensemble.reference, ensemble.choice.hubness_k)
        test[(ENSEMBLE, DIRECTIONS[0])], test[(ENSEMBLE, DIRECTIONS[1])] = ensemble_scorers(
            ensemble.choice, spaces, hubs
        )
        for method in ALL_METHODS:
            for direction in DIRECTIONS:
                gold = gold_ranks(test[(method, direction)])
                _add_row(rows, fold, method, direction, gold, len(test_qids))
                result.reciprocal_ranks[(fold, method, direction)] = gold.reciprocal_rank()
    result.scores = pa.Table.from_pydict(rows, schema=SCORE_SCHEMA)
    return result


def _agreed_qids(models: Mapping[str, SplitVectors], split: str) -> list[str]:
    """The split's formulae; every method of a fold must have used the same ones."""
    qid_lists = {method: model.split_vectors(split)[0] for method, model in models.items()}
    first = next(iter(qid_lists.values()))
    for method, qids in qid_lists.items():
        if qids != first:
            raise ValueError(f"{method} used another {split} split than the other methods")
    return first


def _add_row(
    rows: dict[str, list], fold: int, method: str, direction: str, gold: GoldRanks, n: int
) -> None:
    summary = gold.summary()
    rows["fold"].append(fold)
    rows["method"].append(method)
    rows["direction"].append(direction)
    for key in ("recall_at_1", "recall_at_5", "recall_at_10", "mrr"):
        rows[key].append(summary[key])
    rows["candidates"].append(n)


# --- summaries -------------------------------------------------------------------------------

METRICS = ("recall_at_1", "recall_at_5", "recall_at_10", "mrr")


def table_2(scores: pa.Table) -> list[dict[str, object]]:
    """Mean and std over folds per method and direction, with the paper's values beside."""
    out = []
    records = scores.to_pylist()
    for direction in DIRECTIONS:
        for method in ALL_METHODS:
            chosen = [r for r in records if r["method"] == method and r["direction"] == direction]
            if not chosen:
                continue
            row: dict[str, object] = {"direction": direction, "method": method}
            for metric in METRICS:
                values = np.array([r[metric] for r in chosen])
                row[metric] = float(values.mean())
                row[f"{metric}_std"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
            row["folds"] = len(chosen)
            paper = PAPER_TABLE_2.get((method, direction))
            row["paper"] = paper[0] if paper else None
            out.append(row)
    return out
