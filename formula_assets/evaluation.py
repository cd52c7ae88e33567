"""Cross-modal retrieval on each test fold: the paper's Table 2 (§4.3), with significance.

Candidates are the test fold's formulae, as in the paper. Directions: syntactic → semantic
(a formula's structure retrieves its semantics) and semantic → syntactic. Methods: `bm25`,
`sbert_no_cl` (cosine of the frozen sentence vectors), the trained `sbert_dual_cl` and
`graph_text_cl`, and `score_ensemble`: a weighted sum of the cosine scores of those three
whose weights are chosen on the fold's validation split — before the test fold is looked at.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from scipy import stats

from formula_assets.bm25 import bm25_scorer
from formula_assets.retrieval_metrics import GoldRanks
from formula_assets.scorers import CosineScorer, MatrixScorer, Scorer, WeightedScorer, ranks
from formula_assets.training.artifacts import TrainedModel

DIRECTIONS = ("syntactic_to_semantic", "semantic_to_syntactic")
TRAINED = ("graph_text_cl", "sbert_dual_cl")
BASELINES = ("bm25", "sbert_no_cl")
ENSEMBLE = "score_ensemble"
ENSEMBLE_MEMBERS = ("graph_text_cl", "sbert_dual_cl", "sbert_no_cl")
ALL_METHODS = (*BASELINES, *TRAINED, ENSEMBLE)
WEIGHT_STEP = 0.1

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


@dataclass
class EvaluationInputs:
    """Per formula: fold, linearised OPT, annotation text, frozen sentence vectors."""

    folds: Mapping[str, int]
    opt_text: Mapping[str, str]
    semantic_text: Mapping[str, str]
    opt_vectors: Mapping[str, np.ndarray]
    semantic_vectors: Mapping[str, np.ndarray]


@dataclass
class Evaluation:
    scores: pa.Table
    # (fold, method, direction) → per-query reciprocal ranks, in the fold's test order
    reciprocal_ranks: dict[tuple[int, str, str], np.ndarray] = field(default_factory=dict)
    ensemble_weights: dict[int, dict[str, float]] = field(default_factory=dict)


# Weight selection ranks at most this many validation queries per combination (all
# validation formulae stay candidates): enough to choose among 66 weightings, bounded at scale.
MAX_SELECTION_QUERIES = 3000


def _mean_mrr(scorer: Scorer, reverse: Scorer, rows: np.ndarray) -> float:
    """Mean MRR over both directions: the ensemble's selection criterion."""
    forward = ranks(scorer, rows).summary()["mrr"]
    backward = ranks(reverse, rows).summary()["mrr"]
    return (forward + backward) / 2


def _weight_grid(members: int, step: float = WEIGHT_STEP) -> list[tuple[float, ...]]:
    ticks = round(1 / step)
    return [
        tuple(c / ticks for c in combo)
        for combo in itertools.product(range(ticks + 1), repeat=members)
        if sum(combo) == ticks
    ]


def choose_weights(
    validation: Sequence[Scorer | np.ndarray],
    reverse: Sequence[Scorer | np.ndarray] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[float, ...]:
    """Weights (summing to 1, step 0.1) maximising validation MRR; ties keep the first.

    Members are scorers (or plain score matrices); `reverse` scores the other direction
    (default: the transposed matrices).
    """
    forward = [_as_scorer(m) for m in validation]
    backward = (
        [_as_scorer(m) for m in reverse]
        if reverse is not None
        else [_as_scorer(np.asarray(m).T) for m in validation]
    )
    n = forward[0].size
    rows = np.arange(n)
    if n > MAX_SELECTION_QUERIES:
        rng = rng or np.random.default_rng(0)
        rows = np.sort(rng.choice(n, MAX_SELECTION_QUERIES, replace=False))
    best, best_quality = None, -1.0
    for weights in _weight_grid(len(forward)):
        quality = _mean_mrr(
            WeightedScorer(list(zip(weights, forward, strict=True))),
            WeightedScorer(list(zip(weights, backward, strict=True))),
            rows,
        )
        if quality > best_quality + 1e-12:
            best, best_quality = weights, quality
    assert best is not None
    return best


def _as_scorer(member: Scorer | np.ndarray) -> Scorer:
    return MatrixScorer(member) if isinstance(member, np.ndarray) else member


def _scorers(
    inputs: EvaluationInputs, models: Mapping[str, TrainedModel], split: str, qids: list[str]
) -> dict[tuple[str, str], Scorer]:
    """(method, direction) → scorer over the split's formulae (candidates = the same split)."""
    out: dict[tuple[str, str], Scorer] = {}
    for method, model in models.items():
        model_qids, structural, semantic = model.split_vectors(split)
        assert model_qids == qids
        forward = CosineScorer(structural, semantic)
        out[(method, DIRECTIONS[0])], out[(method, DIRECTIONS[1])] = forward, forward.reverse()
    opt = np.stack([inputs.opt_vectors[q] for q in qids])
    sem = np.stack([inputs.semantic_vectors[q] for q in qids])
    frozen = CosineScorer(opt, sem)
    out[("sbert_no_cl", DIRECTIONS[0])], out[("sbert_no_cl", DIRECTIONS[1])] = (
        frozen,
        frozen.reverse(),
    )
    opt_docs = [inputs.opt_text[q] for q in qids]
    sem_docs = [inputs.semantic_text[q] for q in qids]
    out[("bm25", DIRECTIONS[0])] = bm25_scorer(opt_docs, sem_docs)
    out[("bm25", DIRECTIONS[1])] = bm25_scorer(sem_docs, opt_docs)
    return out


def evaluate(
    inputs: EvaluationInputs, models: Mapping[tuple[int, str], TrainedModel]
) -> Evaluation:
    rows: dict[str, list] = {name: [] for name in SCORE_SCHEMA.names}
    result = Evaluation(scores=pa.table({}))
    for fold in sorted({fold for fold, _ in models}):
        fold_models = {method: models[(fold, method)] for method in TRAINED}
        test_qids = _agreed_qids(fold_models, "test")
        validation_qids = _agreed_qids(fold_models, "validation")
        test = _scorers(inputs, fold_models, "test", test_qids)
        validation = _scorers(inputs, fold_models, "validation", validation_qids)
        weights = choose_weights(
            [validation[(m, DIRECTIONS[0])] for m in ENSEMBLE_MEMBERS],
            [validation[(m, DIRECTIONS[1])] for m in ENSEMBLE_MEMBERS],
        )
        result.ensemble_weights[fold] = dict(zip(ENSEMBLE_MEMBERS, weights, strict=True))
        for direction in DIRECTIONS:
            test[(ENSEMBLE, direction)] = WeightedScorer(
                [(w, test[(m, direction)]) for w, m in zip(weights, ENSEMBLE_MEMBERS, strict=True)]
            )
        for method in ALL_METHODS:
            for direction in DIRECTIONS:
                gold = ranks(test[(method, direction)])
                _add_row(rows, fold, method, direction, gold, len(test_qids))
                result.reciprocal_ranks[(fold, method, direction)] = gold.reciprocal_rank()
    result.scores = pa.Table.from_pydict(rows, schema=SCORE_SCHEMA)
    return result


def _agreed_qids(models: Mapping[str, TrainedModel], split: str) -> list[str]:
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


@dataclass(frozen=True)
class Comparison:
    method: str
    baseline: str
    direction: str
    mean_rr_difference: float
    wilcoxon_p: float  # paired over all test queries of all folds
    fold_t_p: float  # paired t-test over the folds' MRR


def significance(evaluation: Evaluation) -> list[Comparison]:
    """Each trained method (and the ensemble) against each baseline, paired per query."""
    folds = sorted({fold for fold, _, _ in evaluation.reciprocal_ranks})
    out = []
    for method in (*TRAINED, ENSEMBLE):
        for baseline in BASELINES:
            for direction in DIRECTIONS:
                a = np.concatenate(
                    [evaluation.reciprocal_ranks[(f, method, direction)] for f in folds]
                )
                b = np.concatenate(
                    [evaluation.reciprocal_ranks[(f, baseline, direction)] for f in folds]
                )
                fold_a = [evaluation.reciprocal_ranks[(f, method, direction)].mean() for f in folds]
                fold_b = [
                    evaluation.reciprocal_ranks[(f, baseline, direction)].mean() for f in folds
                ]
                difference = a - b
                wilcoxon_p = float(stats.wilcoxon(a, b).pvalue) if np.any(difference != 0) else 1.0
                t_p = (
                    float(stats.ttest_rel(fold_a, fold_b).pvalue)
                    if len(folds) > 1 and np.std(np.subtract(fold_a, fold_b)) > 0
                    else float("nan")
                )
                out.append(
                    Comparison(
                        method, baseline, direction, float(difference.mean()), wilcoxon_p, t_p
                    )
                )
    return out
