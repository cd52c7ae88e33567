"""The method interface's defaults and shared hooks: what a method that says nothing is, how
a trained method is built, loaded, read for Table 2 and asked to encode queries."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from upath import UPath

from formula_assets.core.profiles import get_profile
from formula_assets.evaluation.lineup import FoldData
from formula_assets.methods import sbert_dual_cl
from formula_assets.methods.base import LoadedModel, Method, TrainedMethod
from formula_assets.training.artifacts import TrainedModel, embeddings_table, save_model
from formula_assets.training.data import AlignmentData
from formula_assets.training.models import DualEncoder, RunAverage
from formula_assets_tests.training.descriptions import described

SETTINGS = dataclasses.replace(
    sbert_dual_cl.PROFILE_SETTINGS["smoke"], hidden=6, out_dim=3, dropout=0.5, runs=1
)
DESCRIPTION = dataclasses.replace(described(), settings=SETTINGS)  # 4-wide inputs


class Dual(TrainedMethod):
    name = "sbert_dual_cl"

    def inputs(self, description, data, device):
        from formula_assets.training.inputs import MatrixInputs

        return MatrixInputs(torch.from_numpy(data.opt_text))

    def network(self, description):
        return DualEncoder(4, 4, description.settings.hidden, description.settings.out_dim, 0.5)

    def query_input(self, description, query):
        return torch.from_numpy(query.linearised_vector()[None, :])


class Query:
    text = "q"

    def __init__(self, vector) -> None:
        self._vector = np.asarray(vector, np.float32)

    def linearised_vector(self) -> np.ndarray:
        return self._vector

    def vector(self) -> np.ndarray:
        return self._vector


def stored(model: torch.nn.Module, qids: list[str], splits: list[str]) -> TrainedModel:
    torch.manual_seed(0)
    zs, zm = torch.randn(len(qids), 3).numpy(), torch.randn(len(qids), 3).numpy()
    return TrainedModel(DESCRIPTION, model.state_dict(), [], embeddings_table(qids, splits, zs, zm))


def test_a_method_that_says_nothing_is_untrained_indexed_and_free() -> None:
    class Bare(Method):
        name = "bare"

    assert (Bare.trained, Bare.ensemble_member, Bare.indexed, Bare.training_cost) == (
        False,
        False,
        True,
        0.0,
    )
    assert repr(Bare()) == "<method bare>"
    assert (Dual.trained, Dual.training_cost) == (True, 1.0)  # costs are relative to this one


def test_text_vectors_stack_each_text_vector() -> None:
    class Echo(Method):
        name = "echo"

        def text_vector(self, query, model):
            return query.vector() * 2

    vectors = Echo().text_vectors([Query([1, 2]), Query([3, 4])], None)
    assert vectors.tolist() == [[2, 4], [6, 8]]


def test_loaded_models_cannot_be_reassigned() -> None:
    loaded = LoadedModel(DESCRIPTION, torch.nn.Linear(1, 1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.module = torch.nn.Linear(1, 1)  # type: ignore[misc]


def test_default_training_hooks() -> None:
    profile = get_profile("smoke")
    with pytest.raises(ValueError, match=r"no settings for the profile 'smoke' \(it has none\)"):
        Dual().settings(profile)  # a method's settings are its own: none given, none read

    class Tabled(Dual):
        profile_settings = {"smoke": SETTINGS}  # noqa: RUF012

    assert Tabled().settings(profile) is SETTINGS
    varied = dataclasses.replace(SETTINGS, epochs=1)
    assert Tabled().with_settings(varied).settings(profile) is varied
    assert Tabled().settings(profile) is SETTINGS  # the method itself is left alone
    with pytest.raises(TypeError, match="sbert_dual_cl takes MethodSettings, not str"):
        Dual().with_settings("epochs=1")  # type: ignore[arg-type]
    data = AlignmentData(
        qids=["Q1", "Q2"],
        graphs=None,  # type: ignore[arg-type]
        semantic=np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32),
        opt_text=np.array([[0, 0, 0, 1], [0, 0, 1, 0]], np.float32),
        folds={"Q1": 1, "Q2": 2},
    )
    prepared = Dual().prepare(data, None, DESCRIPTION, "cpu")  # type: ignore[arg-type]
    assert prepared.description == DESCRIPTION  # nothing fitted by default
    assert prepared.structural.batch([1]).tolist() == [[0, 0, 1, 0]]
    semantic = Dual().semantic_inputs(DESCRIPTION, data, "cpu")
    assert semantic.batch([1, 0]).tolist() == [[5, 6, 7, 8], [1, 2, 3, 4]]
    semantic.matrix[0, 0] = 99  # a copy: the data stays as it was
    assert data.semantic[0, 0] == 1
    assert Dual().base_models(profile) == []  # starts from no pretrained model of its own
    assert Dual().base_identities(profile) == []


def test_build_gives_one_network_or_the_average_of_its_runs() -> None:
    one = Dual().build(DESCRIPTION)
    assert isinstance(one, DualEncoder)
    two = dataclasses.replace(DESCRIPTION, settings=dataclasses.replace(SETTINGS, runs=2))
    average = Dual().build(two)
    assert isinstance(average, RunAverage) and len(average.runs) == 2
    three = dataclasses.replace(DESCRIPTION, settings=dataclasses.replace(SETTINGS, runs=3))
    assert len(Dual().build(three).runs) == 3


def test_load_gives_the_stored_weights_in_eval_mode(tmp_path: Path) -> None:
    torch.manual_seed(5)
    network = Dual().network(DESCRIPTION)
    save_model(stored(network, ["Q1"], ["test"]), UPath(tmp_path) / "m")
    loaded = Dual().load(UPath(tmp_path) / "m")
    assert loaded.description == DESCRIPTION
    assert not loaded.module.training
    state = loaded.module.state_dict()
    assert all(torch.equal(state[k], v) for k, v in network.state_dict().items())


def test_a_trained_model_encodes_with_its_weights_the_same_every_time() -> None:
    """`loaded` (what the search and the audit encode with) gives the network the trained
    weights, not a fresh initialisation, in eval mode: with dropout 0.5, a query gets one
    vector however often it is asked."""
    torch.manual_seed(5)
    network = Dual().network(DESCRIPTION).eval()
    model = stored(network, ["Q1"], ["test"])
    torch.manual_seed(6)
    loaded = Dual().loaded(model)
    fresh = Dual().network(DESCRIPTION).eval()
    queries = [Query(v) for v in torch.randn(8, 4).numpy()]
    vectors = Dual().text_vectors(queries, loaded)
    assert np.array_equal(vectors, Dual().text_vectors(queries, loaded))
    assert np.allclose(vectors, Dual().text_vectors(queries, LoadedModel(DESCRIPTION, network)))
    assert not np.allclose(vectors, Dual().text_vectors(queries, LoadedModel(DESCRIPTION, fresh)))
    formula = Dual().formula_vector(queries[0], loaded)
    assert np.array_equal(formula, Dual().formula_vector(queries[0], loaded))
    assert loaded.description == DESCRIPTION and not loaded.module.training


def test_the_space_is_the_stored_vectors_of_the_split() -> None:
    model = stored(Dual().network(DESCRIPTION), ["Q1", "Q2", "Q3"], ["test", "train", "test"])
    data = FoldData(models={"sbert_dual_cl": model}, opt_vectors={}, semantic_vectors={})
    structural, semantic = Dual().space(data, "test", ["Q1", "Q3"])
    _, zs, zm = model.split_vectors("test")
    assert np.array_equal(structural, zs) and np.array_equal(semantic, zm)
    assert structural.shape == (2, 3)
    with pytest.raises(ValueError, match="sbert_dual_cl used another test split"):
        Dual().space(data, "test", ["Q3", "Q1"])
    with pytest.raises(ValueError, match="used another formulae"):
        Dual().space(data, None, ["Q1"])


def test_queries_are_encoded_by_the_trained_network() -> None:
    torch.manual_seed(0)
    network = Dual().network(DESCRIPTION).eval()
    loaded = LoadedModel(DESCRIPTION, network)
    query, other = Query([1, 0, 2, 0]), Query([0, 3, 0, 1])
    with torch.no_grad():
        expected_s = network.encode_structural(torch.tensor([[1.0, 0, 2, 0]]))[0].numpy()
        expected_m = network.encode_semantic(torch.tensor([[1.0, 0, 2, 0], [0, 3, 0, 1]])).numpy()
    assert np.allclose(Dual().formula_vector(query, loaded), expected_s)
    assert np.allclose(Dual().text_vector(query, loaded), expected_m[0])
    assert np.allclose(Dual().text_vectors([query, other], loaded), expected_m)
    for encode in (Dual().formula_vector, Dual().text_vector):
        with pytest.raises(ValueError, match="encodes queries with its trained model"):
            encode(query, None)
