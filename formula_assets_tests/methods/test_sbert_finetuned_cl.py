"""The fine-tuned sentence encoder on 160 formulae: it learns, the frozen part stays the base
model, and a saved model reloads offline and encodes queries as it encoded the corpus."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from upath import UPath

from formula_assets.core.profiles import get_profile
from formula_assets.evaluation.ranking import CosineScorer, gold_ranks, normalise_rows
from formula_assets.methods import registry
from formula_assets.methods.base import TrainedMethod
from formula_assets.methods.sbert_finetuned_cl import (
    METHOD,
    PROFILE_SETTINGS,
    base_folder,
)
from formula_assets.semantics.bert import folder_weights
from formula_assets.semantics.texts import annotation_text
from formula_assets.training.artifacts import save_model
from formula_assets.training.data import alignment_data
from formula_assets.training.fold import train_fold
from formula_assets.training.sentence_encoder import SentenceTower, token_ids
from formula_assets.training.weights import kept_state

SMOKE = get_profile("smoke")
# three short epochs, the lowest three layers frozen: seconds, and enough to see learning
SETTINGS = dataclasses.replace(
    PROFILE_SETTINGS["smoke"], epochs=3, batch_size=32, learning_rate=1e-4, frozen_layers=3
)
PROFILE = dataclasses.replace(SMOKE, validation_fraction=0.2)


TUNED = METHOD.with_settings(SETTINGS)


@pytest.fixture(scope="module")
def data(small_corpus):
    c = small_corpus
    return alignment_data(
        c.folds, c.graphs, c.semantic, c.opt_text, c.tokens, c.annotations, c.symbols
    )


@pytest.fixture(scope="module")
def trained(data):
    return train_fold(TUNED, 1, data, PROFILE)


class Query:
    """A formula query of the corpus, as the searcher gives it (only what this method reads)."""

    def __init__(self, linearised: str) -> None:
        self.text = linearised

    def linearised(self) -> str:
        return self.text

    def vector(self) -> np.ndarray:
        raise AssertionError("the fine-tuned encoder reads the text, not the frozen vector")


def test_it_is_registered_trained_and_in_the_ensemble() -> None:
    assert registry.get("sbert_finetuned_cl") is METHOD
    assert "sbert_finetuned_cl" in registry.trained()
    assert METHOD in registry.ensemble_members()
    assert METHOD.training_cost > registry.get("sbert_dual_cl").training_cost


def test_it_learns_and_ranks_far_above_chance(trained) -> None:
    losses = [entry["loss"] for entry in trained.history]
    assert len(losses) == 3
    assert losses[-1] < losses[0]
    _, structural, semantic = trained.split_vectors("test")
    ranks = gold_ranks(CosineScorer(structural, semantic)).summary()
    n = len(structural)
    chance_mrr = sum(1 / r for r in range(1, n + 1)) / n  # the gold at a uniform rank
    assert ranks["mrr"] > 3 * chance_mrr


def test_only_the_layers_above_the_frozen_ones_move_and_are_stored(trained) -> None:
    """The frozen part is left to the base model's files; that it never moved in training is
    what the reloaded model's vectors (equal to those of training, below) rest on."""
    base = folder_weights(base_folder(trained.description))
    state = {k.removeprefix("bert."): v for k, v in trained.state.items()}
    frozen = ("embeddings.", *(f"encoder.layer.{i}." for i in range(3)))
    assert not any(k.startswith(frozen) for k in state)
    assert set(state) == {k for k in base if not k.startswith(frozen)} | {"temperature.log_scale"}
    moved = [k for k in state if k in base and not torch.equal(state[k], base[k])]
    assert moved, "nothing was fine-tuned"


def test_the_description_names_the_base_model_by_its_content(trained) -> None:
    description = trained.description
    assert len(description.base_model_identity) >= 16
    assert description.settings.max_seq_len == 16
    wrong = dataclasses.replace(description, base_model_identity="0" * 64)
    with pytest.raises(ValueError, match="retrain"):
        base_folder(wrong)


def reloaded_as_trained(trained, data, tmp_path, count: int):
    """`trained` saved and loaded back, checked to encode its first `count` formulae's queries
    as it encoded the corpus: each formula, each text alone and the texts at once (the audit's
    vocabulary). The loaded model, and those formulae's linearised OPTs and texts."""
    directory = UPath(tmp_path) / "model"
    save_model(trained, directory)
    loaded = METHOD.load(directory)
    qids, structural, semantic = trained.split_vectors(None)
    index = {q: i for i, q in enumerate(data.qids)}
    linearised = data.graphs.column("linearised_opt").to_pylist()
    rows = [index[q] for q in qids[:count]]
    formulae = [linearised[r] for r in rows]
    texts = [annotation_text(data.annotation_texts[r]) for r in rows]
    vectors = np.stack([METHOD.formula_vector(Query(f), loaded) for f in formulae])
    np.testing.assert_allclose(normalise_rows(vectors), structural[:count], atol=1e-5)
    alone = np.stack([METHOD.text_vector(Query(t), loaded) for t in texts])
    np.testing.assert_allclose(normalise_rows(alone), semantic[:count], atol=1e-5)
    batch = METHOD.text_vectors([Query(t) for t in texts], loaded)
    np.testing.assert_allclose(batch, alone, atol=1e-5)
    assert not np.allclose(batch[0], batch[1], atol=1e-3)
    return loaded, formulae, texts


def test_a_saved_model_reloads_and_encodes_queries_as_it_encoded_the_corpus(
    trained, data, tmp_path
) -> None:
    _, formulae, _ = reloaded_as_trained(trained, data, tmp_path, 5)
    # the reloaded tower is the trained one, not the base model it was built over
    base = SentenceTower(base_folder(trained.description)).eval()
    ids = token_ids(base_folder(trained.description), 16, formulae[:1])
    with torch.no_grad():
        frozen = normalise_rows(base.encode(ids).numpy())[0]
    assert not np.allclose(frozen, trained.split_vectors(None)[1][0], atol=1e-3)


def test_it_needs_the_annotation_texts(small_corpus) -> None:
    c = small_corpus
    without = alignment_data(c.folds, c.graphs, c.semantic, c.opt_text, c.tokens)
    with pytest.raises(ValueError, match="concept_annotations"):
        train_fold(TUNED, 1, without, PROFILE)


# ------------------------------------------------------------ several base models, one run each


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    from formula_assets_tests.support.models import tiny_bert

    root = tmp_path_factory.mktemp("bases")
    mpnet = tiny_bert(root / "mpnet", seed=1, architecture="mpnet")
    # a tokenizer of its own (the word pieces' ids reversed), as a real second base has: each
    # run must read its own token ids
    tokenizer = json.loads((mpnet / "tokenizer.json").read_text("utf-8"))
    vocab = tokenizer["model"]["vocab"]
    top = max(vocab.values())
    tokenizer["model"]["vocab"] = {w: i if i < 1000 else 1000 + top - i for w, i in vocab.items()}
    (mpnet / "tokenizer.json").write_text(json.dumps(tokenizer), "utf-8")
    return tiny_bert(root / "bert"), mpnet


def based_on(base_model: str, frozen_layers) -> TrainedMethod:
    """The method over other base models (two epochs)."""
    return METHOD.with_settings(
        dataclasses.replace(SETTINGS, base_model=base_model, frozen_layers=frozen_layers, epochs=2)
    )


@pytest.fixture(scope="module")
def joined(data, bases):
    bert, mpnet = bases
    return train_fold(based_on(f"{bert}+{mpnet}", (1, 2)), 1, data, PROFILE)


def test_each_base_model_trains_its_own_run_as_it_would_alone(joined, data, bases) -> None:
    from formula_assets.training.fold import RUN_SEED_STRIDE

    bert, mpnet = bases
    alone = train_fold(based_on(str(bert), 1), 1, data, PROFILE)
    first = {k.removeprefix("runs.0."): v for k, v in joined.state.items() if "runs.0." in k}
    assert first.keys() == alone.state.keys()
    assert all(torch.equal(first[k], alone.state[k]) for k in first)
    runs = joined.description.runs
    assert [r.seed for r in runs] == [runs[0].seed, runs[0].seed + RUN_SEED_STRIDE]
    assert runs[0].best_validation_mrr == alone.description.best_validation_mrr
    second = {k for k in joined.state if k.startswith("runs.1.")}
    # the MPNet's tower, its frozen part (position bias included) left to the base's files
    frozen = joined.description.settings.frozen_layers[1]
    assert second == {f"runs.1.{k}" for k in kept_state(SentenceTower(mpnet, frozen))}
    ids = [token_ids(base, 16, ["power x 2"]) for base in bases]
    assert ids[0] != ids[1]


def test_a_model_of_several_bases_reloads_and_encodes_queries_as_the_corpus(
    joined, data, tmp_path
) -> None:
    from formula_assets.training.models import joined_runs

    loaded, _, texts = reloaded_as_trained(joined, data, tmp_path, 4)
    assert loaded.description.settings == joined.description.settings  # (1, 2) read back
    vectors = METHOD.text_vectors([Query(t) for t in texts], loaded)
    # each run's tower alone, their vectors joined: the cosine is the mean of the runs'
    per_run = []
    for run, part in zip(loaded.module.runs, METHOD.parts(loaded.description), strict=True):
        ids = token_ids(base_folder(part), 16, texts)
        with torch.no_grad():
            per_run.append(run.encode_semantic(ids))
    np.testing.assert_allclose(joined_runs(per_run).numpy(), vectors, atol=1e-5)
    cosines = [normalise_rows(v.numpy()) @ normalise_rows(v.numpy()).T for v in per_run]
    np.testing.assert_allclose(vectors @ vectors.T, (cosines[0] + cosines[1]) / 2, atol=1e-5)


def test_several_base_models_train_one_run_each_with_their_own_frozen_layers() -> None:
    finetuned = PROFILE_SETTINGS["medium"]
    assert finetuned.base_models() == [(None, 4)]
    assert dataclasses.replace(finetuned, base_model="/m").base_models() == [("/m", 4)]
    both = dataclasses.replace(finetuned, base_model="all-MiniLM-L6-v2 + /m", frozen_layers=(4, 11))
    assert both.base_models() == [("all-MiniLM-L6-v2", 4), ("/m", 11)]
    two = dataclasses.replace(both, frozen_layers=2)
    assert two.base_models() == [("all-MiniLM-L6-v2", 2), ("/m", 2)]
    with pytest.raises(ValueError, match=r"names 3 base models' layers, base_model .* has 2"):
        dataclasses.replace(both, frozen_layers=(1, 2, 3))
    with pytest.raises(ValueError, match="one run each"):
        dataclasses.replace(both, runs=2)
    with pytest.raises(ValueError, match="one run each"):
        dataclasses.replace(both, base_model="/m+")
    with pytest.raises(ValueError, match="a model needs at least one run"):  # the base's check
        dataclasses.replace(finetuned, runs=0)
