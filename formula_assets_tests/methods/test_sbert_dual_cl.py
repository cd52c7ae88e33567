"""`sbert_dual_cl`: projection heads over both sides' frozen sentence vectors, the network
built from the description, a query its linearised OPT's sentence vector."""

import dataclasses

import numpy as np
import torch

from formula_assets.methods import registry, sbert_dual_cl
from formula_assets.methods.base import LoadedModel
from formula_assets.methods.sbert_dual_cl import METHOD
from formula_assets.training.data import AlignmentData
from formula_assets_tests.training.descriptions import described

SETTINGS = dataclasses.replace(
    sbert_dual_cl.PROFILE_SETTINGS["smoke"], hidden=6, out_dim=4, dropout=0.3
)
DESCRIPTION = dataclasses.replace(described(), settings=SETTINGS, structural_dim=3, semantic_dim=5)
DATA = AlignmentData(
    qids=["Q1", "Q2"],
    graphs=None,  # type: ignore[arg-type]
    semantic=np.arange(10, dtype=np.float32).reshape(2, 5),
    opt_text=np.array([[1, 2, 3], [4, 5, 6]], np.float32),
    folds={"Q1": 1, "Q2": 2},
)


class Query:
    def linearised_vector(self) -> np.ndarray:
        return np.array([0.5, -1.0, 2.0], np.float32)


def test_the_structural_inputs_are_the_linearised_opt_vectors() -> None:
    inputs = METHOD.inputs(DESCRIPTION, DATA, "cpu")
    assert inputs.batch(np.array([1, 0])).tolist() == [[4, 5, 6], [1, 2, 3]]
    inputs.matrix[0, 0] = 99  # a copy: the data stays as it was
    assert DATA.opt_text[0, 0] == 1
    assert METHOD.semantic_inputs(DESCRIPTION, DATA, "cpu").batch([0]).tolist() == [[0, 1, 2, 3, 4]]


def test_the_network_has_the_described_sizes() -> None:
    network = METHOD.network(DESCRIPTION)
    assert network.structural.net[0].in_features == 3
    assert network.semantic.net[0].in_features == 5
    assert network.structural.net[0].out_features == network.semantic.net[0].out_features == 6
    assert network.structural.net[3].out_features == 4
    assert network.semantic.net[2].p == 0.3
    assert network.encode_structural(torch.ones(2, 3)).shape == (2, 4)


def test_a_formula_query_is_encoded_from_its_linearised_opt_vector() -> None:
    torch.manual_seed(0)
    network = METHOD.network(DESCRIPTION).eval()
    assert METHOD.query_input(DESCRIPTION, Query()).tolist() == [[0.5, -1.0, 2.0]]
    vector = METHOD.formula_vector(Query(), LoadedModel(DESCRIPTION, network))
    expected = network.encode_structural(torch.tensor([[0.5, -1.0, 2.0]]))[0]
    assert np.allclose(vector, expected.detach().numpy())


def test_the_dual_encoder_is_an_ensemble_member() -> None:
    assert METHOD in registry.ensemble_members()
    assert "sbert_dual_cl" in registry.trained()
