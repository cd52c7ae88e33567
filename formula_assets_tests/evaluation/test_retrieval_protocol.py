"""Retrieval (Table 2) on hand-made vectors: the ensemble's test scores against an oracle,
with hubness measured on the training split only (never on the test fold)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.inputs import EvaluationInputs
from formula_assets.evaluation.lineup import Lineup
from formula_assets.evaluation.retrieval import evaluate
from formula_assets.methods.base import TrainedMethod

SPLITS = {"train": 40, "selection": 30, "test": 25}
DIM = 8


@dataclass
class Vectors:
    """A fold model's vectors per split (the `SplitVectors` protocol)."""

    splits: dict[str, tuple[list[str], np.ndarray, np.ndarray]]

    def split_vectors(self, split):
        return self.splits[split]


class Member(TrainedMethod):
    ensemble_member = True

    def __init__(self, name: str) -> None:
        self.name = name  # type: ignore[misc]


MEMBERS = (Member("alpha"), Member("beta"))
LINEUP = Lineup(methods=MEMBERS, trained=("alpha", "beta"), members=MEMBERS)
INPUTS = EvaluationInputs({}, {}, {}, {}, {})


def _space(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Paired vectors where a third of the semantic side are hubs: they carry a component
    every structural vector shares, so they crowd the top of every ranking."""
    shared = np.zeros(DIM)
    shared[0] = 3.0
    latent = rng.normal(size=(n, DIM))
    structural = latent + 0.5 * rng.normal(size=(n, DIM)) + shared
    hubs = (np.arange(n) % 3 == 0)[:, None]
    semantic = latent + 0.5 * rng.normal(size=(n, DIM)) + np.where(hubs, shared, 0.0)
    return structural, semantic


def _models(seed: int = 0) -> dict[tuple[int, str], Vectors]:
    rng = np.random.default_rng(seed)
    out = {}
    for member in ("alpha", "beta"):
        splits = {}
        for split, n in SPLITS.items():
            qids = [f"Q{split}{i}" for i in range(n)]
            splits[split] = (qids, *_space(rng, n))
        out[(0, member)] = Vectors(splits)
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _hubness(candidates: np.ndarray, references: np.ndarray, k: int) -> np.ndarray:
    """Mean cosine of each candidate to its k most similar references (0 for k = 0)."""
    if k == 0:
        return np.zeros(len(candidates))
    cos = _unit(candidates) @ _unit(references).T
    return np.round(np.sort(cos, axis=1)[:, ::-1][:, :k].mean(axis=1), 6)


def _oracle_reciprocal_ranks(models, weights, k, direction) -> np.ndarray:
    """Σ weight × (cosine − ½ hubness of the candidate against the training split), then the
    gold's reciprocal rank (the scores here have no ties)."""
    total = 0.0
    for member, weight in weights.items():
        vectors = models[(0, member)].splits
        _, test_x, test_y = vectors["test"]
        _, train_x, train_y = vectors["train"]
        if direction == DIRECTIONS[0]:  # structural queries, semantic candidates
            queries, candidates, reference = test_x, test_y, train_x
        else:
            queries, candidates, reference = test_y, test_x, train_y
        cos = _unit(queries) @ _unit(candidates).T
        total = total + weight * (cos - 0.5 * _hubness(candidates, reference, k)[None, :])
    gold = np.diag(total)[:, None]
    return 1.0 / (1 + (total > gold).sum(axis=1))


@pytest.fixture(scope="module")
def models():
    return _models()


@pytest.fixture(scope="module")
def evaluation(models):
    return evaluate(INPUTS, models, LINEUP)


def test_the_fixture_makes_hubness_matter(evaluation) -> None:
    """Without a k > 0 the tests below could not tell where hubness is measured."""
    assert evaluation.ensemble_hubness_k[0] > 0


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_ensemble_scores_match_an_oracle_with_training_side_hubness(
    models, evaluation, direction
) -> None:
    weights = evaluation.ensemble_weights[0]
    k = evaluation.ensemble_hubness_k[0]
    expected = _oracle_reciprocal_ranks(models, weights, k, direction)
    np.testing.assert_allclose(evaluation.reciprocal_ranks[(0, ENSEMBLE, direction)], expected)
    # and the correction changes ranks here: the same weights without it rank otherwise
    plain = _oracle_reciprocal_ranks(models, weights, 0, direction)
    assert not np.allclose(plain, expected)


def test_scrambling_the_test_fold_leaves_the_training_side_hubness_alone(models) -> None:
    """One test formula replaced by noise: every other test query's ranking among the other
    candidates is what the training-side hubness says it is, unchanged, and the choice too."""
    rng = np.random.default_rng(7)
    scrambled = {}
    for key, model in models.items():
        splits = dict(model.splits)
        qids, x, y = splits["test"]
        x, y = x.copy(), y.copy()
        x[:5], y[:5] = 10 * rng.normal(size=(5, DIM)), 10 * rng.normal(size=(5, DIM))
        splits["test"] = (qids, x, y)
        scrambled[key] = Vectors(splits)
    before, after = evaluate(INPUTS, models, LINEUP), evaluate(INPUTS, scrambled, LINEUP)
    assert after.ensemble_weights == before.ensemble_weights
    assert after.ensemble_hubness_k == before.ensemble_hubness_k
    for direction in DIRECTIONS:
        expected = _oracle_reciprocal_ranks(
            scrambled, after.ensemble_weights[0], after.ensemble_hubness_k[0], direction
        )
        np.testing.assert_allclose(after.reciprocal_ranks[(0, ENSEMBLE, direction)], expected)


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_members_are_scored_by_plain_cosine(models, evaluation, direction) -> None:
    for member in ("alpha", "beta"):
        expected = _oracle_reciprocal_ranks(models, {member: 1.0}, 0, direction)
        np.testing.assert_allclose(evaluation.reciprocal_ranks[(0, member, direction)], expected)
