"""The search index: every fold and method over the same formulae, splits kept, serving fold
and weights chosen without the test fold, held-out search quality ranked like Table 2."""

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from formula_assets.core.arrow import embedding_matrix
from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE, FOLDS
from formula_assets.evaluation.ensemble import EnsembleChoice
from formula_assets.evaluation.hubness import SpaceHubness
from formula_assets.evaluation.inputs import evaluation_inputs
from formula_assets.evaluation.retrieval import chosen_ensembles, ensemble_table, evaluate
from formula_assets.methods import registry
from formula_assets.search.checks import index_complete
from formula_assets.search.index import build_search_index, held_out_quality, serving_fold
from formula_assets.search.layout import index_summary, serving_vectors
from formula_assets.training.artifacts import embeddings_table

TRAINED = registry.trained()
INDEXED = registry.indexed()


@pytest.fixture(scope="module")
def frozen(small_corpus):
    return (
        dict(zip(*embedding_matrix(small_corpus.opt_text), strict=True)),
        dict(zip(*embedding_matrix(small_corpus.semantic), strict=True)),
    )


@pytest.fixture(scope="module")
def models(small_fold_models):
    return small_fold_models


@pytest.fixture(scope="module")
def built(models, frozen):
    return build_search_index(models, *frozen, embedding_model="a-model")


def test_every_fold_indexes_every_method_with_the_models_own_vectors(built, models) -> None:
    table, summary = built
    assert index_complete(table).passed
    assert summary.items == models[(1, TRAINED[0])].embeddings.num_rows
    for fold in FOLDS:
        served = serving_vectors(table, fold)
        for method in TRAINED:
            stored = models[(fold, method)].embeddings
            assert served.qids == stored["qid"].to_pylist()
            assert served.splits == stored["split"].to_pylist()
            for side in ("structural", "semantic"):
                expected = np.stack(stored[side].to_numpy(zero_copy_only=False))
                got = served.spaces[method][0 if side == "structural" else 1]
                assert np.array_equal(got, expected)
    assert index_summary(table)["embedding_model"] == "a-model"


def test_frozen_rows_are_the_sentence_vectors(built, frozen) -> None:
    table, _ = built
    served = serving_vectors(table, FOLDS[0])
    opt, semantic = frozen
    structural, sem = served.spaces["sbert_no_cl"]
    assert np.array_equal(structural, np.stack([opt[q] for q in served.qids]))
    assert np.array_equal(sem, np.stack([semantic[q] for q in served.qids]))


def test_weights_equal_table_2s_and_serving_fold_follows_validation(
    built, models, small_corpus
) -> None:
    _, summary = built
    c = small_corpus
    inputs = evaluation_inputs(c.folds, c.graphs, c.annotations, c.semantic, c.opt_text)
    assert summary.ensemble_weights == evaluate(inputs, models, registry.lineup()).ensemble_weights
    best = max(
        FOLDS, key=lambda f: sum(models[(f, m)].description.best_validation_mrr for m in TRAINED)
    )
    assert summary.serving_fold == best == serving_fold(summary.validation_mrr)


def test_table_2s_choices_give_the_index_it_would_choose_itself(
    built, models, frozen, small_corpus
) -> None:
    """`search_index` reads `ensemble_choices` instead of choosing again: the same index."""
    c = small_corpus
    inputs = evaluation_inputs(c.folds, c.graphs, c.annotations, c.semantic, c.opt_text)
    table = ensemble_table(evaluate(inputs, models, registry.lineup()))
    given = build_search_index(
        models, *frozen, embedding_model="a-model", choices=chosen_ensembles(table)
    )
    assert given[0].equals(built[0]) and given[1] == built[1]
    # another choice is used as given: other weights, other held-out quality
    other = {
        fold: EnsembleChoice({m: float(m == "sbert_no_cl") for m in choice.weights}, 0)
        for fold, choice in chosen_ensembles(table).items()
    }
    changed = build_search_index(models, *frozen, choices=other)[1]
    assert changed.ensemble_weights == {f: c.weights for f, c in other.items()}
    assert set(changed.ensemble_hubness_k.values()) == {0}
    assert changed.held_out[ENSEMBLE] == changed.held_out["sbert_no_cl"]


@pytest.mark.parametrize("drop", ["a fold", "a member"])
def test_choices_for_other_members_or_folds_are_refused(
    models, frozen, small_corpus, drop: str
) -> None:
    c = small_corpus
    inputs = evaluation_inputs(c.folds, c.graphs, c.annotations, c.semantic, c.opt_text)
    choices = chosen_ensembles(ensemble_table(evaluate(inputs, models, registry.lineup())))
    if drop == "a fold":
        del choices[FOLDS[-1]]
    else:
        weights = dict(choices[FOLDS[0]].weights)
        weights.pop("symbol_lexicon")
        choices[FOLDS[0]] = EnsembleChoice(weights, choices[FOLDS[0]].hubness_k)
    with pytest.raises(ValueError, match="rebuild retrieval_scores"):
        build_search_index(models, *frozen, choices=choices)


def test_test_fold_vectors_never_choose_the_fold_or_the_weights(built, models, frozen) -> None:
    """Scrambling every test-split vector changes the held-out quality, nothing chosen."""
    _, summary = built
    rng = np.random.default_rng(0)
    scrambled = {}
    for key, model in models.items():
        t = model.embeddings
        splits = t["split"].to_pylist()
        structural, semantic = (np.stack(t[c].to_numpy(zero_copy_only=False)) for c in
                                ("structural", "semantic"))  # fmt: skip
        test = np.array([s == "test" for s in splits])
        structural[test] = rng.normal(size=structural[test].shape)
        semantic[test] = rng.normal(size=semantic[test].shape)
        scrambled[key] = dataclasses.replace(
            model,
            embeddings=embeddings_table(t["qid"].to_pylist(), splits, structural, semantic),
        )
    _, again = build_search_index(scrambled, *frozen)
    assert again.serving_fold == summary.serving_fold
    assert again.ensemble_weights == summary.ensemble_weights
    assert again.held_out["graph_text_cl"] != summary.held_out["graph_text_cl"]


def test_held_out_quality_is_the_rank_of_the_own_item_among_all() -> None:
    """Checked against a brute-force ranking: every held-out row against every item."""
    rng = np.random.default_rng(1)
    n, width = 40, 8
    spaces = {m: (rng.normal(size=(n, width)), rng.normal(size=(n, width))) for m in INDEXED}
    spaces["graph_text_cl"][1][:10] = spaces["graph_text_cl"][0][:10]  # ten easy items
    held_out = np.zeros(n, dtype=bool)
    held_out[::3] = True
    weights = {"graph_text_cl": 0.5, "sbert_dual_cl": 0.5, "sbert_no_cl": 0.0}
    hubs = {m: SpaceHubness(rng.uniform(size=n), rng.uniform(size=n)) for m in INDEXED}
    quality = held_out_quality(spaces, hubs, EnsembleChoice(weights, 5), held_out)

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    # the ensemble: weighted cosines, each less half its candidate's hubness
    ensemble = sum(
        w * (unit(spaces[m][0]) @ unit(spaces[m][1]).T - 0.5 * hubs[m].semantic[None, :])
        for m, w in weights.items()
    )
    ranks = [1 + int((ensemble[i] > ensemble[i, i]).sum()) for i in np.flatnonzero(held_out)]
    assert quality[ENSEMBLE][DIRECTIONS[0]]["mrr"] == pytest.approx(np.mean([1 / r for r in ranks]))

    s, m = spaces["graph_text_cl"]
    scores = unit(s) @ unit(m).T
    ranks = [1 + int((scores[i] > scores[i, i]).sum()) for i in np.flatnonzero(held_out)]
    got = quality["graph_text_cl"][DIRECTIONS[0]]
    assert got["mrr"] == pytest.approx(np.mean([1 / r for r in ranks]))
    assert got["recall_at_10"] == pytest.approx(np.mean([r <= 10 for r in ranks]))
    reverse = scores.T
    ranks = [1 + int((reverse[i] > reverse[i, i]).sum()) for i in np.flatnonzero(held_out)]
    assert quality["graph_text_cl"][DIRECTIONS[1]]["mrr"] == pytest.approx(
        np.mean([1 / r for r in ranks])
    )
    assert set(quality) == {ENSEMBLE, *INDEXED}


def test_check_fails_on_a_missing_method_and_on_non_finite_vectors(built) -> None:
    table, _ = built
    without = table.filter(pc.invert(pc.equal(table["method"], "sbert_dual_cl")))
    without = without.replace_schema_metadata(table.schema.metadata)
    assert not index_complete(without).passed
    rows = table.to_pylist()
    rows[0]["semantic"] = [float("nan")] * len(rows[0]["semantic"])
    broken = pa.Table.from_pylist(rows, schema=table.schema)
    outcome = index_complete(broken)
    assert not outcome.passed and "non-finite" in outcome.description
    assert not index_complete(table.slice(0, 0)).passed


def test_a_model_without_stored_vectors_is_refused(models, frozen) -> None:
    broken = dict(models)
    broken[(1, "graph_text_cl")] = dataclasses.replace(
        models[(1, "graph_text_cl")], embeddings=None
    )
    with pytest.raises(ValueError, match="no embeddings"):
        build_search_index(broken, *frozen)
    del broken[(1, "graph_text_cl")]
    with pytest.raises(ValueError, match="missing"):
        build_search_index(broken, *frozen)


def _hub_rich(rng: np.random.Generator, n: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired vectors where every third semantic vector shares a component with all
    structural ones: hubs that a hubness correction (k > 0) pays to discount."""
    shared = np.zeros(width)
    shared[0] = 3.0
    latent = rng.normal(size=(n, width))
    hubs = (np.arange(n) % 3 == 0)[:, None]
    return (
        latent + 0.5 * rng.normal(size=(n, width)) + shared,
        latent + 0.5 * rng.normal(size=(n, width)) + np.where(hubs, shared, 0.0),
    )


def test_stored_hubness_is_each_side_against_the_training_split(models) -> None:
    """Every member row's stored hubness, recomputed from scratch: its structural vector's
    mean cosine to the k nearest training-split semantic vectors (and the reverse), with the
    fold's chosen k; rows of methods outside the ensemble carry zeros."""
    rng = np.random.default_rng(3)
    fold = FOLDS[0]
    qids = models[(fold, TRAINED[0])].embeddings["qid"].to_pylist()
    # splits of our own, with a selection split large enough to choose k on
    splits = [("train", "train", "selection", "test")[i % 4] for i in range(len(qids))]
    width = 8
    hub_models = {}
    for method in TRAINED:
        structural, semantic = _hub_rich(rng, len(qids), width)
        hub_models[(fold, method)] = dataclasses.replace(
            models[(fold, method)], embeddings=embeddings_table(qids, splits, structural, semantic)
        )
    opt, sem = _hub_rich(rng, len(qids), width)
    table, summary = build_search_index(
        hub_models, dict(zip(qids, opt, strict=True)), dict(zip(qids, sem, strict=True))
    )
    k = summary.ensemble_hubness_k[fold]
    assert k > 0, "the fixture must make the correction worth choosing"
    train = np.array([s == "train" for s in splits])

    def unit(x):
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    def oracle(candidates, references):
        cosines = unit(candidates) @ unit(references).T
        return np.sort(cosines, axis=1)[:, -k:].mean(axis=1)

    members = {m.name for m in registry.ensemble_members()}
    served = serving_vectors(table, fold)
    for method in INDEXED:
        rows = table.filter(pc.equal(table["method"], method))
        assert rows["qid"].to_pylist() == served.qids
        stored_structural = rows["structural_hubness"].to_numpy()
        stored_semantic = rows["semantic_hubness"].to_numpy()
        if method not in members:
            assert not stored_structural.any() and not stored_semantic.any()
            continue
        structural, semantic = served.spaces[method]
        np.testing.assert_allclose(
            stored_structural, oracle(structural, semantic[train]), atol=1e-6
        )
        np.testing.assert_allclose(stored_semantic, oracle(semantic, structural[train]), atol=1e-6)
        # against the whole index instead, the numbers differ: the test can tell
        assert not np.allclose(stored_structural, oracle(structural, semantic), atol=1e-6)
