"""Pair ranks, margins and preferred items of the audit, and a fold with edited annotations,
on hand-made vectors whose cosines are read off by eye."""

import numpy as np
import pytest

from formula_assets.audit.scores import (
    TOP,
    PairScores,
    candidate_hubness,
    method_pair_scorers,
    pair_scores,
    training_structural,
    with_semantic,
)
from formula_assets.evaluation.hubness import hubness
from formula_assets.search.layout import ServingVectors


def unit(degrees: list[float]) -> np.ndarray:
    r = np.radians(degrees)
    return np.stack([np.cos(r), np.sin(r)], axis=1)


# formula i at angle a_i, annotation i at angle b_i: cosines are cos(a_i − b_j)
FORMULAE = unit([0, 90, 180, 270, 45])
ANNOTATIONS = unit([10, 90, 200, 0, 45])


def test_the_margin_is_the_two_directions_averaged() -> None:
    scores = PairScores(
        np.arange(2),
        np.array([1, 2]),
        np.array([3, 1]),
        np.array([0.2, -0.4]),
        np.array([0.6, 0.0]),
        np.zeros((2, TOP), np.int64),
        np.zeros((2, TOP), np.int64),
    )
    np.testing.assert_allclose(scores.margin, [0.4, -0.2])


def test_ranks_margins_and_preferred_items_of_one_method() -> None:
    forward, backward = method_pair_scorers(vectors_of({"m": (FORMULAE, ANNOTATIONS)}), "m")
    scores = pair_scores(forward, backward, np.arange(5))
    # formula 3 (270°): its own annotation (0°) has cosine 0, annotation 2 (200°) cos 70° = .34,
    # annotation 4 (45°) cos 225° < 0, annotation 0 (10°) cos 260° < 0, annotation 1 cos 180°
    assert scores.forward_rank[3] == 2
    assert scores.forward_margin[3] == pytest.approx(np.cos(np.radians(70)))
    # formula 1 (90°) has its own annotation at 90°: rank 1, margin below 0
    assert scores.forward_rank[1] == 1
    assert scores.forward_margin[1] == pytest.approx(np.cos(np.radians(45)) - 1)
    # annotation 3 (0°): formula 0 (0°) fits best, then formula 4 (45°); its own formula
    # (270°, cosine 0) ties with formula 1 (90°): rank 1 + 2 higher + 1 tie
    assert scores.backward_rank[3] == 4
    assert list(scores.preferred_formulae[3]) == [0, 4, 1]
    assert scores.backward_margin[3] == pytest.approx(1.0)
    assert scores.preferred_annotations.shape == (5, TOP) == (5, 3)


def test_a_tie_counts_against_the_own_pair() -> None:
    formulae = unit([0, 0, 90])
    annotations = unit([0, 0, 90])  # formulae 0 and 1, annotations 0 and 1 are the same
    forward, backward = method_pair_scorers(vectors_of({"m": (formulae, annotations)}), "m")
    scores = pair_scores(forward, backward, np.arange(3))
    assert list(scores.forward_rank) == [2, 2, 1]
    assert list(scores.backward_rank) == [2, 2, 1]
    assert scores.forward_margin[0] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="at least two items"):
        one = vectors_of({"m": (formulae[:1], annotations[:1])}, splits=["test"])
        pair_scores(*method_pair_scorers(one, "m"), np.arange(1))


def vectors_of(spaces, splits=None, weights=None, k: int = 1) -> ServingVectors:
    n = len(next(iter(spaces.values()))[0])
    splits = splits or ["train"] * (n - 2) + ["test"] * 2
    return ServingVectors(
        fold=1,
        qids=[f"Q{i}" for i in range(n)],
        splits=splits,
        spaces=dict(spaces),
        hubness={m: (np.zeros(n), np.zeros(n)) for m in spaces},
        summary={
            "ensemble_weights": {"1": weights or {m: 1.0 for m in spaces}},
            "ensemble_hubness_k": {"1": k},
        },
    )


def test_edited_annotations_replace_their_rows_and_their_hubness_for_members() -> None:
    rng = np.random.default_rng(3)
    member = (rng.normal(size=(6, 4)), rng.normal(size=(6, 4)))
    other = (rng.normal(size=(6, 4)), rng.normal(size=(6, 4)))
    fold = vectors_of({"member": member, "other": other}, weights={"member": 1.0}, k=2)
    new = {"member": rng.normal(size=(2, 4)), "other": rng.normal(size=(2, 4))}
    edited = with_semantic(fold, np.array([1, 4]), new)
    for name in ("member", "other"):
        np.testing.assert_array_equal(edited.spaces[name][0], fold.spaces[name][0])
        semantic = edited.spaces[name][1]
        np.testing.assert_array_equal(semantic[[1, 4]], new[name])
        np.testing.assert_array_equal(semantic[[0, 2, 3, 5]], fold.spaces[name][1][[0, 2, 3, 5]])
    # the member's new candidates' hubness: against the training split's formulae (rows 0–3)
    expected = hubness(new["member"], member[0][:4], 2)
    np.testing.assert_allclose(edited.hubness["member"][1][[1, 4]], expected)
    assert not np.allclose(expected, 0)
    np.testing.assert_array_equal(edited.hubness["member"][1][[0, 2, 3, 5]], 0)
    np.testing.assert_array_equal(edited.hubness["member"][0], 0)  # formulae unchanged
    np.testing.assert_array_equal(edited.hubness["other"][1], 0)  # not weighed: not needed
    np.testing.assert_array_equal(fold.spaces["member"][1], member[1])  # the fold is untouched
    np.testing.assert_array_equal(fold.hubness["member"][1], 0)


def test_no_rows_to_change_leave_the_fold_as_it_is() -> None:
    """A fold with no corruptible held-out item: the audit's semantic side of no annotations
    is a (0, 0) array, which must not meet the fold's rows."""
    member = (np.ones((3, 2)), np.ones((3, 2)))
    fold = vectors_of({"member": member}, weights={"member": 1.0}, k=1)
    edited = with_semantic(fold, np.array([], dtype=np.int64), {"member": np.zeros((0, 0))})
    assert edited is fold


def test_the_hubness_reference_is_the_training_split() -> None:
    structural = np.arange(12, dtype=float).reshape(6, 2)
    fold = vectors_of(
        {"m": (structural, structural)},
        splits=["train", "test", "train", "selection", "test", "train"],
    )
    np.testing.assert_array_equal(training_structural(fold, "m"), structural[[0, 2, 5]])
    queries = np.eye(2)
    np.testing.assert_allclose(
        candidate_hubness(queries, structural[[0, 2, 5]], 1),
        hubness(queries, structural[[0, 2, 5]], 1),
    )
