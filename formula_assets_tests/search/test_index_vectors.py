"""The search index on hand-made fold models (no training, no sentence model): rows, splits,
summary, serving fold and stored hubness stated against values computed here. The tests that
train real smoke models are in test_index.py."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.lake import ROW_GROUP_ROWS_KEY
from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.hubness import SpaceHubness
from formula_assets.methods import registry
from formula_assets.search.index import (
    _mean_over_folds,
    _rows,
    build_search_index,
    held_out_quality,
    serving_fold,
)
from formula_assets.search.layout import METADATA_KEY, index_summary, serving_vectors
from formula_assets.training.artifacts import (
    ModelDescription,
    SplitSizes,
    TrainedModel,
    embeddings_table,
)
from formula_assets.training.settings import MethodSettings

TRAINED = registry.trained()
INDEXED = registry.indexed()
FOLDS = (1, 2)
N, WIDTH = 48, 6
SPLITS = [("train", "train", "selection", "test")[i % 4] for i in range(N)]
QIDS = [f"Q{i}" for i in range(N)]
SETTINGS = MethodSettings(
    hidden=8, out_dim=WIDTH, dropout=0.0, epochs=1, batch_size=4, learning_rate=1e-3,
    weight_decay=0.0, intra_weight=0.0, patience=1,
)  # fmt: skip


def _hub_rich(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Paired vectors where every third semantic vector shares a component with all
    structural vectors: hubs, so that the ensemble's hubness correction is worth choosing."""
    shared = np.zeros(WIDTH)
    shared[0] = 3.0
    latent = rng.normal(size=(N, WIDTH))
    hubs = (np.arange(N) % 3 == 0)[:, None]
    return (
        latent + 0.5 * rng.normal(size=(N, WIDTH)) + shared,
        latent + 0.5 * rng.normal(size=(N, WIDTH)) + np.where(hubs, shared, 0.0),
    )


def _model(fold: int, method: str, mrr: float, rng: np.random.Generator) -> TrainedModel:
    description = ModelDescription(
        method=method,
        fold=fold,
        profile="test",
        settings=SETTINGS,
        seed=0,
        semantic_dim=WIDTH,
        structural_dim=WIDTH,
        split_sizes=SplitSizes(24, 0, 12, 12),
        validation_fraction=0.0,
        best_validation_mrr=mrr,
    )
    structural, semantic = _hub_rich(rng)
    return TrainedModel(
        description, {}, embeddings=embeddings_table(QIDS, SPLITS, structural, semantic)
    )


# validation MRR per fold: fold 2's members did better on the whole
VALIDATION = {1: (0.3, 0.2, 0.1, 0.1, 0.2), 2: (0.1, 0.3, 0.4, 0.2, 0.3)}


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(7)
    models = {
        (f, m): _model(f, m, VALIDATION[f][i], rng) for f in FOLDS for i, m in enumerate(TRAINED)
    }
    opt, sem = (side.astype(np.float32) for side in _hub_rich(rng))  # as the assets store
    return models, dict(zip(QIDS, opt, strict=True)), dict(zip(QIDS, sem, strict=True))


@pytest.fixture(scope="module")
def built(inputs):
    return build_search_index(*inputs, embedding_model="m", embedding_model_identity="abc")


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_every_fold_and_method_keeps_its_rows_splits_and_vectors(inputs, built) -> None:
    models, opt, sem = inputs
    table, summary = built
    assert table.num_rows == len(FOLDS) * len(INDEXED) * N
    assert summary.items == N
    for fold in FOLDS:
        served = serving_vectors(table, fold)
        assert served.qids == QIDS and served.splits == SPLITS
        assert set(served.spaces) == set(INDEXED)
        for method in TRAINED:
            stored = models[(fold, method)].embeddings
            for side, column in enumerate(("structural", "semantic")):
                expected = np.stack(stored[column].to_numpy(zero_copy_only=False))
                np.testing.assert_array_equal(served.spaces[method][side], expected)
        frozen = served.spaces["sbert_no_cl"]
        np.testing.assert_array_equal(frozen[0], np.stack([opt[q] for q in QIDS]))
        np.testing.assert_array_equal(frozen[1], np.stack([sem[q] for q in QIDS]))


def test_the_summary_and_metadata(built) -> None:
    table, summary = built
    stored = index_summary(table)
    assert stored == json.loads(json.dumps(summary.to_json()))
    assert stored["embedding_model"] == "m" and stored["embedding_model_identity"] == "abc"
    assert stored["items"] == N
    assert stored["validation_mrr"] == {
        str(f): dict(zip(TRAINED, VALIDATION[f], strict=True)) for f in FOLDS
    }
    assert set(stored["ensemble_weights"]) == set(stored["ensemble_hubness_k"]) == {"1", "2"}
    assert table.schema.metadata[ROW_GROUP_ROWS_KEY] == str(N).encode()
    assert METADATA_KEY in table.schema.metadata
    assert summary.serving_fold == 2  # 1.0 > 0.7


def test_serving_fold_is_the_best_validation_sum_and_the_lowest_on_a_tie() -> None:
    assert serving_fold({1: {"a": 0.2, "b": 0.3}, 2: {"a": 0.4, "b": 0.0}, 3: {"a": 0.1}}) == 1
    assert serving_fold({3: {"a": 0.5}, 1: {"a": 0.1}, 2: {"a": 0.5}}) == 2
    assert serving_fold({1: {"a": 0.1, "b": 0.1}, 2: {"a": 0.15}}) == 1  # the sum, not the max


def test_stored_hubness_is_each_side_against_the_training_split_only(built) -> None:
    """Each member row's structural hubness: the mean cosine of its structural vector to the
    k most similar training-split semantic vectors; its semantic hubness the reverse."""
    table, summary = built
    train = np.array([s == "train" for s in SPLITS])
    for fold in FOLDS:
        k = summary.ensemble_hubness_k[fold]
        assert k > 0, "the fixture must make the correction worth choosing"

        def oracle(candidates, references, k=k):
            cosines = _unit(candidates) @ _unit(references).T
            return np.sort(cosines, axis=1)[:, -k:].mean(axis=1)

        served = serving_vectors(table, fold)
        for method in INDEXED:
            structural, semantic = served.spaces[method]
            stored_structural, stored_semantic = served.hubness[method]
            np.testing.assert_allclose(
                stored_structural, oracle(structural, semantic[train]), atol=1e-6
            )
            np.testing.assert_allclose(
                stored_semantic, oracle(semantic, structural[train]), atol=1e-6
            )
            assert not np.allclose(stored_structural, stored_semantic, atol=1e-3)
            assert not np.allclose(stored_structural, oracle(structural, semantic), atol=1e-6)


def test_held_out_quality_is_the_mean_over_folds_of_each_folds(inputs, built) -> None:
    """The summary's held-out numbers: per fold, every test row's own item ranked among all
    items by the fold's stored vectors and hubness (held_out_quality), then the fold mean."""
    from formula_assets.evaluation.ensemble import EnsembleChoice

    table, summary = built
    per_fold = []
    for fold in FOLDS:
        served = serving_vectors(table, fold)
        hubs = {m: SpaceHubness(*served.hubness[m]) for m in INDEXED}
        choice = EnsembleChoice(summary.ensemble_weights[fold], summary.ensemble_hubness_k[fold])
        per_fold.append(held_out_quality(served.spaces, hubs, choice, np.array(SPLITS) == "test"))
    for method in (ENSEMBLE, *INDEXED):
        for direction in DIRECTIONS:
            for metric, value in summary.held_out[method][direction].items():
                folds = [q[method][direction][metric] for q in per_fold]
                assert value == pytest.approx(np.mean(folds))
    # and one by hand: graph_text_cl's MRR, structural → semantic, in fold 1
    structural, semantic = serving_vectors(table, 1).spaces["graph_text_cl"]
    scores = _unit(structural) @ _unit(semantic).T
    rows = np.flatnonzero(np.array(SPLITS) == "test")
    ranks = [1 + int((scores[i] > scores[i, i]).sum()) for i in rows]
    assert per_fold[0]["graph_text_cl"][DIRECTIONS[0]]["mrr"] == pytest.approx(
        np.mean([1 / r for r in ranks])
    )


def test_mean_over_folds_by_hand() -> None:
    per_fold = {
        1: {"a": {"d": {"mrr": 0.2, "recall_at_1": 0.0}}},
        2: {"a": {"d": {"mrr": 0.6, "recall_at_1": 1.0}}},
    }
    assert _mean_over_folds(per_fold) == {"a": {"d": {"mrr": 0.4, "recall_at_1": 0.5}}}
    assert _mean_over_folds({}) == {}


def test_rows_without_hubness_carry_zeros() -> None:
    structural = np.arange(6, dtype=np.float32).reshape(3, 2)
    rows = _rows(3, "x", ["a", "b", "c"], ["train", "test", "train"], structural, -structural, None)
    assert rows["fold"].to_pylist() == [3, 3, 3] and rows["method"].to_pylist() == ["x"] * 3
    assert rows["structural"].to_pylist() == structural.tolist()
    assert rows["semantic"].to_pylist() == (-structural).tolist()
    assert rows["structural_hubness"].to_pylist() == [0.0] * 3
    assert rows["semantic_hubness"].to_pylist() == [0.0] * 3
    hub = SpaceHubness(np.array([0.1, 0.2, 0.3]), np.array([0.4, 0.5, 0.6]))
    rows = _rows(3, "x", ["a", "b", "c"], ["train"] * 3, structural, structural, hub)
    assert rows["structural_hubness"].to_pylist() == [0.1, 0.2, 0.3]
    assert rows["semantic_hubness"].to_pylist() == [0.4, 0.5, 0.6]


def test_models_with_other_formulae_or_splits_are_refused(inputs) -> None:
    import dataclasses

    models, opt, sem = inputs
    broken = dict(models)
    table = models[(1, TRAINED[1])].embeddings
    qids = table["qid"].to_pylist()
    qids[3], qids[7] = qids[7], qids[3]  # two test formulae in another order
    broken[(1, TRAINED[1])] = dataclasses.replace(
        models[(1, TRAINED[1])], embeddings=table.set_column(0, "qid", pa.array(qids))
    )
    with pytest.raises(ValueError, match="other formulae or splits"):
        build_search_index(broken, opt, sem)


def test_given_choices_are_used_as_given(inputs, built) -> None:
    """The choices `retrieval_scores` made (here: those this index chose itself) give the same
    index; other given choices are what the summary and the held-out ensemble then use."""
    from formula_assets.evaluation.ensemble import EnsembleChoice

    _, summary = built
    same = {
        f: EnsembleChoice(summary.ensemble_weights[f], summary.ensemble_hubness_k[f]) for f in FOLDS
    }
    table, again = build_search_index(
        *inputs, embedding_model="m", embedding_model_identity="abc", choices=same
    )
    assert table.equals(built[0]) and again == summary
    members = [m.name for m in registry.ensemble_members()]
    only_frozen = {
        f: EnsembleChoice({m: float(m == "sbert_no_cl") for m in members}, 0) for f in FOLDS
    }
    _, other = build_search_index(*inputs, choices=only_frozen)
    assert other.ensemble_weights == {f: c.weights for f, c in only_frozen.items()}
    assert other.ensemble_hubness_k == dict.fromkeys(FOLDS, 0)
    assert other.held_out[ENSEMBLE] == other.held_out["sbert_no_cl"]


@pytest.mark.parametrize("wrong", ["missing fold", "other members", "other order"])
def test_choices_for_other_folds_or_members_are_refused(inputs, wrong: str) -> None:
    from formula_assets.evaluation.ensemble import EnsembleChoice

    members = [m.name for m in registry.ensemble_members()]
    weights = {m: 1 / len(members) for m in members}
    choices = {f: EnsembleChoice(dict(weights), 5) for f in FOLDS}
    if wrong == "missing fold":
        del choices[FOLDS[-1]]
    elif wrong == "other members":
        choices[FOLDS[0]] = EnsembleChoice(dict(list(weights.items())[:-1]), 5)
    else:
        choices[FOLDS[0]] = EnsembleChoice(dict(reversed(list(weights.items()))), 5)
    with pytest.raises(ValueError, match=r"fold \d: the ensemble's choice weighs .* rebuild"):
        build_search_index(*inputs, choices=choices)
