"""`sbert_no_cl`: the frozen sentence vectors compared directly; a query is its own sentence
vector; an ensemble member."""

from dataclasses import dataclass

import numpy as np

from formula_assets.evaluation.lineup import FoldData
from formula_assets.methods import registry
from formula_assets.methods.sbert_no_cl import METHOD

DATA = FoldData(
    models={},
    opt_vectors={"Q1": np.array([1.0, 0.0]), "Q2": np.array([0.0, 2.0])},
    semantic_vectors={"Q1": np.array([3.0, 3.0]), "Q2": np.array([-1.0, 4.0])},
)


@dataclass
class Query:
    text: str = "force"

    def linearised_vector(self) -> np.ndarray:
        return np.array([0.5, 0.25])

    def vector(self) -> np.ndarray:
        return np.array([0.75, -1.0])


def test_the_space_is_the_frozen_vectors_in_the_order_asked_for() -> None:
    structural, semantic = METHOD.space(DATA, "test", ["Q2", "Q1"])
    assert structural.tolist() == [[0, 2], [1, 0]]
    assert semantic.tolist() == [[-1, 4], [3, 3]]


def test_a_query_is_its_own_sentence_vector() -> None:
    assert METHOD.formula_vector(Query(), None).tolist() == [0.5, 0.25]
    assert METHOD.text_vector(Query(), None).tolist() == [0.75, -1.0]
    assert METHOD.text_vectors([Query(), Query()], None).tolist() == [[0.75, -1.0]] * 2


def test_the_frozen_vectors_are_searched_and_weighed_by_the_ensemble() -> None:
    assert METHOD in registry.ensemble_members()
    assert "sbert_no_cl" in registry.indexed()
