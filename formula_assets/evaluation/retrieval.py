"""Cross-modal retrieval on each test fold: the paper's Table 2 (§4.3).

Candidates are the test fold's formulae, as in the paper. Directions: syntactic → semantic
(a formula's structure retrieves its semantics) and semantic → syntactic. Methods: those of
the caller's `Lineup` (the method registry's: `bm25`, `sbert_no_cl`, the trained
`graph_text_cl` and `sbert_dual_cl`), each scored by cosine of its vectors or by its own
scorers, and `score_ensemble`: a weighted sum of the hubness-corrected cosine scores of the
lineup's members (`evaluation.hubness`), whose weights and hubness k are chosen on the fold's
selection split — formulae of the training folds that no member was trained or early-stopped
on — before the test fold is looked at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.ensemble import (
    EnsembleChoice,
    choose_ensemble,
    ensemble_scorers,
    member_hubness,
)
from formula_assets.evaluation.hubness import Space
from formula_assets.evaluation.inputs import EvaluationInputs
from formula_assets.evaluation.lineup import FoldData, Lineup, Scored, SplitVectors
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

# `ensemble_choices`: per fold, each member's weight and the hubness k chosen with them.
ENSEMBLE_SCHEMA = pa.schema(
    [
        ("fold", pa.int8()),
        ("method", pa.string()),
        ("weight", pa.float64()),
        ("hubness_k", pa.int32()),
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


@dataclass
class Evaluation:
    scores: pa.Table
    # (fold, method, direction) → per-query reciprocal ranks, in the fold's test order
    reciprocal_ranks: dict[tuple[int, str, str], np.ndarray] = field(default_factory=dict)
    ensemble_weights: dict[int, dict[str, float]] = field(default_factory=dict)
    ensemble_hubness_k: dict[int, int] = field(default_factory=dict)


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


def member_spaces(
    data: FoldData, members: Sequence[Scored], split: str, qids: list[str]
) -> dict[str, Space]:
    """member → (structural, semantic) vectors of the split's formulae."""
    spaces: dict[str, Space] = {}
    for member in members:
        space = member.space(data, split, qids)
        if space is None:
            raise ValueError(f"{member.name} has no vectors: it cannot be an ensemble member")
        spaces[member.name] = space
    return spaces


def fold_ensemble(data: FoldData, members: Sequence[Scored]) -> FoldEnsemble:
    """The ensemble of one fold, chosen on that fold's selection split only."""
    qids = _agreed_qids(data.models, WEIGHT_SPLIT)
    if len(qids) < 2:
        raise ValueError(
            f"the models have {len(qids)} {WEIGHT_SPLIT} formulae: the ensemble's weights need "
            "a selection split (profile selection_fraction > 0); retrain the fold models"
        )
    selection = member_spaces(data, members, WEIGHT_SPLIT, qids)
    reference = fold_reference(data, members)
    return FoldEnsemble(choose_ensemble(selection, reference), reference)


def fold_reference(data: FoldData, members: Sequence[Scored]) -> dict[str, Space]:
    """The members' spaces of the fold's reference split (what hubness is measured against)."""
    return member_spaces(data, members, REFERENCE_SPLIT, _agreed_qids(data.models, REFERENCE_SPLIT))


def evaluate(
    inputs: EvaluationInputs, models: Mapping[tuple[int, str], SplitVectors], lineup: Lineup
) -> Evaluation:
    """Every method of the lineup and the ensemble of its members on each fold's test
    formulae, in both directions."""
    rows: dict[str, list] = {name: [] for name in SCORE_SCHEMA.names}
    result = Evaluation(scores=pa.table({}))
    for fold in sorted({fold for fold, _ in models}):
        data = FoldData(
            {method: models[(fold, method)] for method in lineup.trained},
            inputs.opt_vectors,
            inputs.semantic_vectors,
            inputs.opt_text,
            inputs.semantic_text,
        )
        test_qids = _agreed_qids(data.models, "test")
        ensemble = fold_ensemble(data, lineup.members)
        result.ensemble_weights[fold] = ensemble.choice.weights
        result.ensemble_hubness_k[fold] = ensemble.choice.hubness_k
        spaces: dict[str, Space] = {}
        test: dict[tuple[str, str], Scorer] = {}
        for method in lineup.methods:
            space = method.space(data, "test", test_qids)
            if space is None:
                forward, backward = method.scorers(data, "test", test_qids)
            else:
                spaces[method.name] = space
                forward = CosineScorer(*space)
                backward = forward.reverse()
            test[(method.name, DIRECTIONS[0])], test[(method.name, DIRECTIONS[1])] = (
                forward,
                backward,
            )
        members = {m.name: spaces[m.name] for m in lineup.members}
        hubs = member_hubness(members, ensemble.reference, ensemble.choice.hubness_k)
        test[(ENSEMBLE, DIRECTIONS[0])], test[(ENSEMBLE, DIRECTIONS[1])] = ensemble_scorers(
            ensemble.choice, members, hubs
        )
        for method_name in lineup.names:
            for direction in DIRECTIONS:
                gold = gold_ranks(test[(method_name, direction)])
                _add_row(rows, fold, method_name, direction, gold, len(test_qids))
                result.reciprocal_ranks[(fold, method_name, direction)] = gold.reciprocal_rank()
    result.scores = pa.Table.from_pydict(rows, schema=SCORE_SCHEMA)
    return result


def ensemble_table(evaluation: Evaluation) -> pa.Table:
    """The ensemble's choices as a table: one row per fold × member, members in order."""
    rows = [
        {
            "fold": fold,
            "method": method,
            "weight": weight,
            "hubness_k": evaluation.ensemble_hubness_k[fold],
        }
        for fold, weights in sorted(evaluation.ensemble_weights.items())
        for method, weight in weights.items()
    ]
    return pa.Table.from_pylist(rows, ENSEMBLE_SCHEMA)


def ensemble_choices(table: pa.Table) -> tuple[dict[int, dict[str, float]], dict[int, int]]:
    """(fold → member → weight, fold → hubness k) of an `ensemble_table`."""
    weights: dict[int, dict[str, float]] = {}
    hubness_k: dict[int, int] = {}
    for row in table.to_pylist():
        weights.setdefault(row["fold"], {})[row["method"]] = row["weight"]
        hubness_k[row["fold"]] = row["hubness_k"]
    return weights, hubness_k


def chosen_ensembles(table: pa.Table) -> dict[int, EnsembleChoice]:
    """fold → the ensemble `retrieval_scores` chose (an `ensemble_table`), members in the
    order they were weighed."""
    weights, hubness_k = ensemble_choices(table)
    return {fold: EnsembleChoice(weights[fold], hubness_k[fold]) for fold in weights}


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
    """Mean and std over folds per method and direction, with the paper's values beside;
    methods in the scores' row order."""
    out = []
    records = scores.to_pylist()
    methods = list(dict.fromkeys(r["method"] for r in records))
    for direction in DIRECTIONS:
        for method in methods:
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
