"""Retrieval evaluation: every row, the ensemble chosen on validation only, Table 2, tests."""

import dataclasses

import numpy as np
import pytest

from formula_assets.core.protocol import DIRECTIONS, FOLDS
from formula_assets.evaluation.hubness import HUBNESS_KS
from formula_assets.evaluation.inputs import evaluation_inputs
from formula_assets.evaluation.retrieval import ensemble_choices, ensemble_table, evaluate, table_2
from formula_assets.evaluation.significance import best_method, comparison_pairs, significance
from formula_assets.methods import registry
from formula_assets.training.artifacts import embeddings_table

LINEUP = registry.lineup()


@pytest.fixture(scope="module")
def inputs(small_corpus):
    c = small_corpus
    return evaluation_inputs(c.folds, c.graphs, c.annotations, c.semantic, c.opt_text)


@pytest.fixture(scope="module")
def models(small_fold_models):
    return small_fold_models


@pytest.fixture(scope="module")
def evaluation(inputs, models):
    return evaluate(inputs, models, LINEUP)


def test_every_fold_method_and_direction(evaluation, models) -> None:
    rows = evaluation.scores.to_pylist()
    assert len(rows) == len(FOLDS) * len(LINEUP.names) * len(DIRECTIONS)
    # the paper's row order: the baselines, the trained methods, the ensemble
    assert [r["method"] for r in rows[: 2 * len(LINEUP.names) : 2]] == [
        "bm25",
        "sbert_no_cl",
        "graph_text_cl",
        "sbert_dual_cl",
        "sbert_finetuned_cl",
        "bag_dual_cl",
        "symbol_lexicon",
        "score_ensemble",
    ]
    for row in rows:
        assert 0 <= row["recall_at_1"] <= row["recall_at_5"] <= row["recall_at_10"] <= 1
        test_size = models[(row["fold"], "sbert_dual_cl")].description.split_sizes.test
        assert row["candidates"] == test_size


def test_trained_methods_beat_bm25(evaluation) -> None:
    summary = {(r["method"], r["direction"]): r for r in table_2(evaluation.scores)}
    for direction in DIRECTIONS:
        assert summary[("score_ensemble", direction)]["mrr"] > summary[("bm25", direction)]["mrr"]
        assert summary[("sbert_dual_cl", direction)]["mrr"] > summary[("bm25", direction)]["mrr"]
    assert summary[("graph_text_cl", DIRECTIONS[0])]["paper"] == (0.238, 0.444, 0.574, 0.345)


def test_ensemble_weights_never_see_the_test_fold(inputs, models, evaluation) -> None:
    """Scrambling every test-fold vector leaves the chosen weights exactly as they were."""
    rng = np.random.default_rng(0)
    scrambled = {}
    for key, model in models.items():
        table = model.embeddings
        splits = table["split"].to_pylist()
        qids, structural, semantic = (
            table["qid"].to_pylist(),
            *(
                np.stack(table[c].to_numpy(zero_copy_only=False))
                for c in ("structural", "semantic")
            ),
        )
        test = np.array([s == "test" for s in splits])
        structural[test] = rng.normal(size=structural[test].shape)
        semantic[test] = rng.normal(size=semantic[test].shape)
        scrambled[key] = dataclasses.replace(
            model, embeddings=embeddings_table(qids, splits, structural, semantic)
        )
    again = evaluate(inputs, scrambled, LINEUP)
    assert again.ensemble_weights == evaluation.ensemble_weights
    assert again.ensemble_hubness_k == evaluation.ensemble_hubness_k
    assert set(evaluation.ensemble_hubness_k) == set(FOLDS)
    assert set(evaluation.ensemble_hubness_k.values()) <= set(HUBNESS_KS)
    assert set(evaluation.ensemble_weights) == set(FOLDS)
    for weights in evaluation.ensemble_weights.values():
        assert list(weights) == [
            "graph_text_cl",
            "sbert_dual_cl",
            "sbert_no_cl",
            "sbert_finetuned_cl",
            "bag_dual_cl",
            "symbol_lexicon",
        ]
        assert sum(weights.values()) == pytest.approx(1.0)


def test_the_ensembles_choices_round_trip_through_their_table(evaluation) -> None:
    table = ensemble_table(evaluation)
    assert table.column_names == ["fold", "method", "weight", "hubness_k"]
    assert table.num_rows == len(FOLDS) * len(LINEUP.members)
    weights, hubness_k = ensemble_choices(table)
    assert weights == evaluation.ensemble_weights and hubness_k == evaluation.ensemble_hubness_k
    assert [list(w) for w in weights.values()] == [
        list(w) for w in evaluation.ensemble_weights.values()
    ]


def test_significance_covers_the_family_on_real_models(evaluation) -> None:
    comparisons = significance(evaluation, LINEUP)
    pairs = comparison_pairs(best_method(evaluation, LINEUP), LINEUP)
    assert [(c.method, c.baseline) for c in comparisons][::2] == pairs
    for c in comparisons:
        assert 0 <= c.wilcoxon_p <= c.holm_p <= 1
    dual_vs_bm25 = [c for c in comparisons if (c.method, c.baseline) == ("sbert_dual_cl", "bm25")]
    assert all(c.mean_rr_difference > 0 for c in dual_vs_bm25)
