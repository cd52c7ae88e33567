"""Hubness correction (CSLS against the training split): the penalty is the mean cosine to the
k nearest references, a member's corrected ranking is CSLS's, a hub loses its place, each query
is ranked on its own, and the ensemble chooses k with its weights on the selection split."""

from __future__ import annotations

import numpy as np
import pytest

from formula_assets.evaluation.ensemble import (
    EnsembleChoice,
    choose_ensemble,
    ensemble_scorers,
    member_hubness,
)
from formula_assets.evaluation.hubness import (
    HUBNESS_DECIMALS,
    HUBNESS_KS,
    HubnessScorer,
    corrected_scorers,
    hubness,
    space_hubness,
)
from formula_assets.evaluation.ranking import CosineScorer, gold_ranks
from formula_assets.methods import registry

MEMBERS = tuple(m.name for m in registry.ensemble_members())


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_hubness_is_the_mean_cosine_to_the_k_nearest_references() -> None:
    rng = np.random.default_rng(0)
    vectors, references = rng.normal(size=(7, 5)), rng.normal(size=(30, 5))
    cosines = unit(vectors) @ unit(references).T
    for k in (1, 3, 30):
        expected = [np.mean(sorted(row)[-k:]) for row in cosines]
        got = hubness(vectors, references, k)
        assert got == pytest.approx(expected, abs=0.51e-6)
        # rounded to 6 decimals, so that a BLAS that sums in another order gives the same
        assert got.tolist() == np.round(got, HUBNESS_DECIMALS).tolist() != list(expected)
    assert hubness(vectors, references, 0).tolist() == [0.0] * 7
    with pytest.raises(ValueError, match="31 neighbours"):
        hubness(vectors, references, 31)


def test_a_corrected_member_ranks_as_csls() -> None:
    """cos − ½ r(candidate) orders every query's candidates as 2 cos − r(query) − r(candidate)."""
    rng = np.random.default_rng(1)
    space = (rng.normal(size=(25, 6)), rng.normal(size=(25, 6)))
    reference = (rng.normal(size=(40, 6)), rng.normal(size=(40, 6)))
    hub = space_hubness(space, reference, 4)
    forward, backward = corrected_scorers(space, hub)
    s, m = unit(space[0]), unit(space[1])
    csls = 2 * s @ m.T - hub.structural[:, None] - hub.semantic[None, :]
    rows = np.arange(25)
    assert np.array_equal(np.argsort(forward.block(rows), 1), np.argsort(csls, 1))
    assert np.array_equal(np.argsort(backward.block(rows), 1), np.argsort(csls.T, 1))
    assert hub.semantic == pytest.approx(hubness(space[1], reference[0], 4))
    assert hub.structural == pytest.approx(hubness(space[0], reference[1], 4))


def test_a_hub_loses_the_queries_it_crowds() -> None:
    """A candidate near every reference query outranks the gold by cosine, not after CSLS."""
    hub_direction = np.array([1.0, 0.0, 0.0])
    references = np.array([[1.0, 0.1 * i, 0.0] for i in range(-5, 6)])
    query = np.array([[0.8, 0.0, 0.6]])
    candidates = np.array([[0.0, 0.0, 1.0], hub_direction])  # gold, then the hub
    plain = CosineScorer(query, candidates)
    assert gold_ranks(plain).higher.tolist() == [1]
    corrected = HubnessScorer(plain, hubness(candidates, references, 3))
    assert gold_ranks(corrected).higher.tolist() == [0]


def _members(rng: np.random.Generator, n: int, noise: float) -> dict:
    shared = rng.normal(size=(n, 8))
    return {
        m: (shared + noise * rng.normal(size=(n, 8)), shared + noise * rng.normal(size=(n, 8)))
        for m in MEMBERS
    }


def test_each_test_query_is_ranked_on_its_own() -> None:
    """The correction looks at the candidates and the training split, never at other queries:
    changing the other queries leaves a query's scores as they were."""
    rng = np.random.default_rng(2)
    spaces, reference = _members(rng, 20, 1.0), _members(rng, 50, 1.0)
    choice = EnsembleChoice({m: (i + 1) / len(MEMBERS) for i, m in enumerate(MEMBERS)}, 5)
    forward, backward = ensemble_scorers(choice, spaces, member_hubness(spaces, reference, 5))
    other = {m: (s.copy(), t.copy()) for m, (s, t) in spaces.items()}
    for structural, semantic in other.values():
        structural[1:] = rng.normal(size=structural[1:].shape)  # other formula queries
        semantic[1:] = rng.normal(size=semantic[1:].shape)  # and other text queries
    forward2, backward2 = ensemble_scorers(choice, other, member_hubness(other, reference, 5))
    first = np.array([0])
    # the candidates changed, but query 0's score of itself and of unchanged candidates did not
    assert forward2.block(first)[0, 0] == pytest.approx(forward.block(first)[0, 0])
    assert backward2.block(first)[0, 0] == pytest.approx(backward.block(first)[0, 0])


def test_the_ensemble_corrects_hubness_when_the_selection_split_says_so() -> None:
    """Hub candidates on the selection split make k > 0 win; without hubs, k = 0 ties the
    corrections and the smaller k is kept."""
    rng = np.random.default_rng(3)
    n = 60
    reference, selection = _members(rng, 200, 0.8), _members(rng, n, 0.8)
    lean = np.zeros(8)
    lean[0] = 3.0
    for space in (*reference.values(), *selection.values()):
        space[0][:] += lean  # formulae (queries of one direction) share a direction
    for _, semantic in selection.values():
        semantic[: n // 2] += lean  # half the candidates lie along it: hubs to every query
    chosen = choose_ensemble(selection, reference)
    assert chosen.hubness_k > 0
    assert sum(chosen.weights.values()) == pytest.approx(1.0)
    assert choose_ensemble(selection, reference, ks=(0,)).hubness_k == 0
    tiny = {m: (s[:3], t[:3]) for m, (s, t) in reference.items()}
    assert choose_ensemble(selection, tiny).hubness_k == 0  # k = 5 and 10 do not fit 3 formulae
    with pytest.raises(ValueError, match="no hubness k"):
        choose_ensemble(selection, tiny, ks=(5,))


def test_the_declared_grid_and_its_ties() -> None:
    """k comes from the grid the docs declare; where every k ranks the selection split
    alike, the first in grid order is kept (0: no correction), and a k equal to the number of
    training formulae still fits."""
    assert HUBNESS_KS == (0, 5, 10)
    eye = np.eye(12)
    perfect = {m: (eye.copy(), eye.copy()) for m in MEMBERS}  # MRR 1 for every k
    rng = np.random.default_rng(4)
    reference = {m: (rng.normal(size=(10, 12)), rng.normal(size=(10, 12))) for m in MEMBERS}
    assert choose_ensemble(perfect, reference).hubness_k == 0
    assert choose_ensemble(perfect, reference, ks=(5, 10, 0)).hubness_k == 5
    five = {m: (s[:5], t[:5]) for m, (s, t) in reference.items()}
    assert choose_ensemble(perfect, five, ks=(5,)).hubness_k == 5
