"""Training with the smoke profile on 160 formulae: real learning, honest splits, safe weights."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch
from upath import UPath

from formula_assets.methods import graph_text_cl, registry
from formula_assets.methods.graph_text_cl import graph_inputs
from formula_assets.training.artifacts import (
    WEIGHTS,
    ModelDescription,
    current_version,
    save_model,
)
from formula_assets.training.fold import RUN_SEED_STRIDE
from formula_assets.training.fold import train_fold as train_method
from formula_assets.training.trainer import encode
from formula_assets.training.weights import load_kept_state
from formula_assets_tests.support.small import SMALL_PROFILE, small_data

PROFILE = SMALL_PROFILE  # the profile `data` and `trained` were made with
METHODS = registry.trained()
# the methods trained by gradient (the others are fitted in closed form: no epochs)
GRADIENT = [m for m in METHODS if registry.trained_method(m).settings(PROFILE).epochs > 0]


def train_fold(method: str, fold: int, data, profile, settings=None):
    """The method's fold model (with `settings` instead of its own, when given)."""
    trainable = registry.trained_method(method)
    if settings is not None:
        trainable = trainable.with_settings(settings)
    return train_method(trainable, fold, data, profile)


def build_model(description: ModelDescription):
    return registry.trained_method(description.method).build(description)


@pytest.fixture(scope="module")
def data(small_corpus):
    return small_data(small_corpus)


@pytest.fixture(scope="module")
def trained(small_fold_models):
    """Fold 1's model of each method (trained with `data`'s content and PROFILE)."""
    return {method: small_fold_models[(1, method)] for method in METHODS}


def data_inputs(data, description: ModelDescription, formula_vectors: np.ndarray | None = None):
    """The structural inputs a description reads from the data (`formula_vectors`: other
    formula contexts for a graph_text_cl model that reads them)."""
    if formula_vectors is not None:
        return graph_inputs(description, data.graphs, "cpu", data.token_texts, formula_vectors)
    return registry.trained_method(description.method).inputs(description, data, "cpu")


def semantic_inputs(data, description: ModelDescription):
    return registry.trained_method(description.method).semantic_inputs(description, data, "cpu")


def rebuilt_test_vectors(
    model,
    data,
    formula_vectors: np.ndarray | None = None,
    description: ModelDescription | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The test rows' (structural, semantic) vectors of the model rebuilt from its description
    and weights (loaded strictly); `description` replaces the one its inputs are read with."""
    rebuilt = build_model(model.description)
    load_kept_state(rebuilt, model.state)
    semantic = semantic_inputs(data, model.description)
    inputs = data_inputs(data, description or model.description, formula_vectors)
    zs, zm = encode(rebuilt, inputs, semantic, np.arange(len(data.qids)))
    test = [i for i, s in enumerate(model.embeddings["split"].to_pylist()) if s == "test"]
    return zs[test], zm[test]


def roles(model) -> dict[str, str]:
    """qid → split the model used it in."""
    return dict(
        zip(model.embeddings["qid"].to_pylist(), model.embeddings["split"].to_pylist(), strict=True)
    )


def chance_mrr(candidates: int) -> float:
    return float(np.mean(1 / np.arange(1, candidates + 1)))


@pytest.mark.parametrize("method", METHODS)
def test_validation_mrr_rises_well_above_chance(trained, method: str) -> None:
    model = trained[method]
    described = model.description
    chance = chance_mrr(described.split_sizes.validation)
    assert described.best_validation_mrr > 1.5 * chance
    assert len(described.runs) == registry.trained_method(method).settings(PROFILE).runs
    if method not in GRADIENT:  # fitted, not trained: measured once, no epochs
        assert model.history == [] and described.epochs_run == 0
        assert [r.best_epoch for r in described.runs] == [0]
        assert described.runs[0].best_validation_mrr == pytest.approx(described.best_validation_mrr)
        return
    for run, summary in enumerate(described.runs):  # each run stopped on its own best
        history = [h for h in model.history if h["run"] == run]
        assert summary.epochs_run == len(history)
        best = max(h["validation_mrr"] for h in history)
        assert summary.best_validation_mrr == pytest.approx(best)
        assert best > history[0]["validation_mrr"]
        assert history[summary.best_epoch - 1]["validation_mrr"] == pytest.approx(best)
    if len(described.runs) == 1:  # the model is its one run
        assert described.best_validation_mrr == pytest.approx(best)


@pytest.mark.parametrize("method", METHODS)
def test_no_test_formula_in_train_or_validation(trained, data, method: str) -> None:
    model = trained[method]
    splits = roles(model)
    assert set(splits) == set(data.qids)
    test = {q for q, s in splits.items() if s == "test"}
    assert test == {q for q in data.qids if data.folds[q] == 1}
    assert all(data.folds[q] != 1 for q, s in splits.items() if s in ("train", "validation"))
    sizes = model.description.split_sizes
    assert sizes.test == len(test)
    assert sizes.train + sizes.validation + sizes.selection + len(test) == len(data.qids)
    assert sizes.selection > 0 and sizes.selection == list(splits.values()).count("selection")


def scrambled(data, qids: set[str]):
    """The same data, except that the given formulae have other tokens, texts and random
    sentence vectors: whatever training may see of them now differs."""
    rng = np.random.default_rng(5)
    rows = np.array([i for i, q in enumerate(data.qids) if q in qids])
    graphs = data.graphs.to_pylist()
    texts = [list(t) for t in data.annotation_texts]
    for i in rows:
        graphs[i]["node_tokens"] = [f"leak{i}-{t}" for t in graphs[i]["node_tokens"]]
        graphs[i]["linearised_opt"] = f"leak {i} {graphs[i]['linearised_opt']}"
        texts[i] = [f"leak {i}", *texts[i][::-1]]
    semantic, opt_text = data.semantic.copy(), data.opt_text.copy()
    semantic[rows] = rng.normal(size=(len(rows), semantic.shape[1])).astype(np.float32)
    opt_text[rows] = rng.normal(size=(len(rows), opt_text.shape[1])).astype(np.float32)
    table = pa.Table.from_pylist(graphs, schema=data.graphs.schema)
    return dataclasses.replace(
        data, graphs=table, semantic=semantic, opt_text=opt_text, annotation_texts=texts
    )


def without_timings(history: list[dict[str, float]]) -> list[dict[str, float]]:
    return [{k: v for k, v in h.items() if k != "seconds"} for h in history]


@pytest.mark.parametrize("method", METHODS)
def test_the_test_fold_never_reaches_the_optimiser(trained, data, method: str) -> None:
    """Training on data whose test fold and selection split were scrambled gives the very
    same weights and history: nothing of them influenced a gradient, an early stop or the
    vocabulary (the selection split chooses the ensemble's weights afterwards)."""
    unseen = {q for q, split in roles(trained[method]).items() if split in ("test", "selection")}
    again = train_fold(method, 1, scrambled(data, unseen), PROFILE)
    original = trained[method]
    assert set(again.state) == set(original.state)
    assert all(torch.equal(again.state[k], original.state[k]) for k in original.state)
    assert without_timings(again.history) == without_timings(original.history)
    assert again.description.vocabulary == original.description.vocabulary
    test_rows = [i for i, q in enumerate(data.qids) if data.folds[q] == 1]
    _, original_test, _ = original.split_vectors("test")
    _, again_test, _ = again.split_vectors("test")
    assert len(test_rows) == len(original_test)
    assert not np.allclose(original_test, again_test)  # the scrambled inputs did change


def test_graph_vocabulary_comes_from_training_formulae_only(trained, data) -> None:
    model = trained["graph_text_cl"]
    train_qids = [q for q, split in roles(model).items() if split == "train"]
    rows = [data.qids.index(q) for q in train_qids]
    train_tokens = {t for r in rows for t in data.graphs["node_tokens"][r].as_py()}
    assert set(model.description.vocabulary[2:]) == train_tokens


@pytest.mark.parametrize("method", METHODS)
def test_safetensors_round_trip_reproduces_the_model(
    trained, data, tmp_path: Path, method: str
) -> None:
    model = trained[method]
    directory = UPath(tmp_path) / "fold_models" / "1" / method
    save_model(model, directory)
    weights = current_version(directory) / WEIGHTS
    assert weights.read_bytes()[8:9] == b"{"  # safetensors: 8-byte length, then a JSON header
    loaded = registry.trained_method(method).read_model(directory)
    assert loaded.description == model.description
    assert json.loads((current_version(directory) / "config.json").read_text()) == json.loads(
        json.dumps(model.description.to_json())
    )
    assert set(loaded.state) == set(model.state)
    assert all(torch.equal(loaded.state[k], model.state[k]) for k in model.state)
    assert loaded.embeddings.equals(model.embeddings)
    rebuilt = build_model(loaded.description)
    load_kept_state(rebuilt, loaded.state)
    rows = np.arange(len(data.qids))
    semantic = semantic_inputs(data, loaded.description)
    structural = data_inputs(data, loaded.description)
    zs, zm = encode(rebuilt, structural, semantic, rows)
    _, stored_s, stored_m = loaded.split_vectors("test")
    test_rows = [i for i, s in enumerate(loaded.embeddings["split"].to_pylist()) if s == "test"]
    assert np.allclose(zs[test_rows], stored_s, atol=1e-5)
    assert np.allclose(zm[test_rows], stored_m, atol=1e-5)


def test_new_versions_replace_old_ones_atomically(trained, tmp_path: Path) -> None:
    directory = UPath(tmp_path) / "m"
    for _ in range(4):
        save_model(trained["sbert_dual_cl"], directory)
    versions = sorted(p.name for p in directory.iterdir() if p.name.startswith("v-"))
    assert len(versions) == 2
    assert current_version(directory).name == versions[-1]


def test_training_is_deterministic(data) -> None:
    a = train_fold("sbert_dual_cl", 2, data, PROFILE)
    b = train_fold("sbert_dual_cl", 2, data, PROFILE)
    assert all(torch.equal(a.state[k], b.state[k]) for k in a.state)
    assert a.description.seed == b.description.seed == PROFILE.seed * 1000 + 2


def test_unknown_method_and_tiny_folds(data) -> None:
    with pytest.raises(ValueError, match="unknown method"):
        train_fold("magic", 1, data, PROFILE)
    tiny = dataclasses.replace(data, qids=data.qids[:3], folds={q: 1 for q in data.qids[:3]})
    with pytest.raises(ValueError, match="need at least 2"):
        train_fold("sbert_dual_cl", 1, tiny, PROFILE)


@pytest.mark.parametrize("method", GRADIENT)
@pytest.mark.parametrize(("epochs", "batch_size"), [(1, 4096), (2, 4096), (3, 64), (10, 4096)])
def test_few_optimiser_steps_train_without_error(data, method: str, epochs: int, batch_size: int):
    """A one-cycle schedule over 1–30 steps (a capped epoch count, a tiny fold) still trains."""
    settings = dataclasses.replace(
        registry.trained_method(method).settings(PROFILE),
        epochs=epochs,
        batch_size=batch_size,
        patience=epochs,
    )
    model = train_fold(method, 1, data, PROFILE, settings)
    assert len(model.history) == epochs * settings.runs
    assert all(np.isfinite(h["loss"]) for h in model.history)
    assert all(1 <= r.best_epoch <= epochs for r in model.description.runs)


def test_a_formula_context_model_is_rebuilt_from_its_config(trained, data) -> None:
    """With `formula_text` (the smoke profile has it, as the default does), each graph also
    reads its linearised OPT's sentence vector: the config records its width, the stored
    vectors depend on it, and a model that needs it refuses to run without it."""
    model = trained["graph_text_cl"]
    assert graph_text_cl.METHOD.settings(PROFILE).formula_text
    assert model.description.formula_text_dim == data.opt_text.shape[1]
    assert any(k.startswith("graph.formula.") for k in model.state)
    zs, _ = rebuilt_test_vectors(model, data)
    _, stored, _ = model.split_vectors("test")
    assert np.allclose(zs, stored, atol=1e-5)
    zs_shuffled, _ = rebuilt_test_vectors(model, data, data.opt_text[::-1].copy())
    assert not np.allclose(zs, zs_shuffled, atol=1e-3)
    with pytest.raises(ValueError, match="formula context"):
        without = dataclasses.replace(model.description, formula_text_dim=0)
        rebuilt_test_vectors(model, data, description=without)


def test_a_formula_head_model_is_rebuilt_from_its_config(data) -> None:
    """The `large` profile's graph settings (the `mean+formula` readout, a semantic head of its
    own size), at the smoke profile's scale: the config rebuilds the same architecture, whose
    weights load strictly and reproduce the stored vectors."""
    large = graph_text_cl.PROFILE_SETTINGS["large"]
    settings = dataclasses.replace(
        graph_text_cl.PROFILE_SETTINGS["smoke"],
        epochs=2,
        readout=large.readout,
        head_hidden=32,
        semantic_hidden=48,
        semantic_dropout=large.semantic_dropout,
    )
    model = train_fold("graph_text_cl", 1, data, PROFILE, settings)
    rebuilt = build_model(model.description)
    assert rebuilt.graph.formula_head[0].out_features == 32
    assert rebuilt.semantic.net[0].out_features == 48
    assert rebuilt.semantic.net[2].p == large.semantic_dropout
    zs, zm = rebuilt_test_vectors(model, data)  # loads the weights strictly
    _, structural, semantic = model.split_vectors("test")
    assert np.allclose(zs, structural, atol=1e-5)
    assert np.allclose(zm, semantic, atol=1e-5)


@pytest.mark.parametrize("method", GRADIENT)
def test_a_model_of_several_runs_averages_independent_seeds(data, method: str) -> None:
    """With `runs: 2` the model holds two networks trained as two separate seeds (run 0 is the
    one-run model, bit for bit), and its vectors' cosines are the mean of the runs' cosines."""
    settings = dataclasses.replace(
        registry.trained_method(method).settings(PROFILE), epochs=3, patience=3, runs=1
    )
    single = train_fold(method, 1, data, PROFILE, settings)
    twice = dataclasses.replace(settings, runs=2)
    model = train_fold(method, 1, data, PROFILE, twice)
    runs = model.description.runs
    assert [r.seed for r in runs] == [single.description.seed, single.description.seed + 100_000]
    assert all(torch.equal(model.state[f"runs.0.{k}"], v) for k, v in single.state.items())
    # run 1 is a one-run model of its own seed, bit for bit: initialised, shuffled and
    # dropped out with that seed, not run 0's
    assert RUN_SEED_STRIDE % 1000 == 0  # a model's seed is profile.seed × 1000 + fold
    reseeded = dataclasses.replace(PROFILE, seed=PROFILE.seed + RUN_SEED_STRIDE // 1000)
    second = train_fold(method, 1, data, reseeded, settings)
    assert second.description.seed == runs[1].seed
    assert all(torch.equal(model.state[f"runs.1.{k}"], v) for k, v in second.state.items())
    trained_names = {  # a method may keep some weights frozen (the fine-tuned encoder's)
        n for n, p in build_model(single.description).named_parameters() if p.requires_grad
    }
    assert not any(  # another seed: other initial weights, other trained ones
        torch.equal(model.state[f"runs.0.{k}"], model.state[f"runs.1.{k}"])
        for k, v in single.state.items()
        if v.dim() == 2 and k in trained_names
    )
    assert sorted({h["run"] for h in model.history}) == [0, 1]
    assert model.description.epochs_run == sum(r.epochs_run for r in runs)
    rebuilt = build_model(model.description)
    load_kept_state(rebuilt, model.state)  # the two networks, strictly
    _, structural, semantic = model.split_vectors("test")
    assert structural.shape[1] == 2 * settings.out_dim
    assert rebuilt_cosines(rebuilt, data, model.description, model) == pytest.approx(
        structural @ semantic.T, abs=1e-5
    )
    per_run = []
    method = registry.trained_method(method)
    for run in range(2):
        network = method.network(model.description)
        load_kept_state(
            network,
            {
                k.removeprefix(f"runs.{run}."): v
                for k, v in model.state.items()
                if k.startswith(f"runs.{run}.")
            },
        )
        one = dataclasses.replace(model.description.settings, runs=1)
        described = dataclasses.replace(model.description, settings=one)
        per_run.append(rebuilt_cosines(network, data, described, model))
    assert structural @ semantic.T == pytest.approx((per_run[0] + per_run[1]) / 2, abs=1e-5)


def rebuilt_cosines(network, data, description: ModelDescription, model) -> np.ndarray:
    """The test rows' cosine matrix of one network."""
    semantic = semantic_inputs(data, description)
    structural = data_inputs(data, description)
    zs, zm = encode(network, structural, semantic, np.arange(len(data.qids)))
    test = [i for i, s in enumerate(model.embeddings["split"].to_pylist()) if s == "test"]
    return zs[test] @ zm[test].T
