"""Fusion: weighted reciprocal ranks within each channel's depth, exact matches first."""

from __future__ import annotations

import numpy as np
import pytest

from formula_assets.search.fusion import ChannelScores, FusionWeights, fuse, top_rows

WEIGHTS = FusionWeights(k=10.0, depth=3, weights={"a": 1.0, "b": 0.5}, exact={"a": 1.0, "b": 0.0})


def scores(rows, values, exact=None) -> ChannelScores:
    return ChannelScores(
        np.array(rows), np.array(values, dtype=float), None if exact is None else np.array(exact)
    )


def test_each_item_sums_its_channels_weighted_reciprocal_ranks() -> None:
    fused = fuse(
        {"a": scores([0, 1, 2], [0.9, 0.5, 0.1]), "b": scores([2, 1], [0.8, 0.7])}, WEIGHTS
    )
    totals = {f.row: f.score for f in fused}
    assert totals[0] == pytest.approx(1 / 11)
    assert totals[1] == pytest.approx(1 / 12 + 0.5 / 12)
    assert totals[2] == pytest.approx(1 / 13 + 0.5 / 11)
    assert [f.row for f in fused] == [1, 2, 0]
    assert fused[0].channels["a"].rank == 2 and fused[0].channels["b"].rank == 2
    assert fused[0].channels["b"].score == pytest.approx(0.7)


def test_only_a_channels_first_depth_items_vote() -> None:
    fused = fuse({"a": scores([0, 1, 2, 3], [4, 3, 2, 1])}, WEIGHTS)
    assert [f.row for f in fused] == [0, 1, 2]  # row 3 is fourth: beyond the depth


def test_an_exact_match_comes_first_however_the_votes_fall() -> None:
    fused = fuse(
        {
            "a": scores([0, 1], [0.9, 0.2], exact=[0.0, 1.0]),
            "b": scores([0, 1], [0.9, 0.1], exact=[1.0, 0.0]),  # b's exact earns nothing
        },
        WEIGHTS,
    )
    assert [f.row for f in fused] == [1, 0]
    assert fused[0].channels["a"].exact and not fused[1].channels["a"].exact
    assert fused[0].score == pytest.approx(1.0 + 1 / 12 + 0.5 / 12)


def test_a_partial_exactness_earns_its_share_of_the_bonus() -> None:
    fused = fuse({"a": scores([0, 1], [0.9, 0.2], exact=[0.0, 0.3])}, WEIGHTS)
    assert fused[0].row == 1 and fused[0].score == pytest.approx(0.3 + 1 / 12)
    assert not fused[0].channels["a"].exact  # only a full match is called exact


def test_ties_keep_catalogue_order_and_empty_channels_are_ignored() -> None:
    fused = fuse({"a": scores([1, 0], [1.0, 1.0]), "b": scores([], [])}, WEIGHTS)
    assert [f.row for f in fused] == [1, 0]  # the channel's own order (stable)
    assert fuse({}, WEIGHTS) == []


def test_the_top_rows_are_a_stable_sorts_first_rows() -> None:
    rng = np.random.default_rng(0)
    for size in (3, 100, 1000):
        for _ in range(50):
            values = rng.integers(0, 5, size=size).astype(float)  # many ties
            for depth in (1, 3, 50):
                expected = np.argsort(-values, kind="stable")[:depth]
                assert list(top_rows(values, depth)) == list(expected)
    # over many items (the sampled floor): continuous scores, unread ones at -inf, and a
    # channel that scores most items 0
    continuous = rng.normal(size=20_000)
    continuous[rng.choice(20_000, 15_000, replace=False)] = -np.inf
    sparse = np.where(rng.random(20_000) < 0.003, rng.random(20_000), 0.0)
    for values in (continuous, sparse, np.zeros(20_000)):
        for depth in (1, 100):
            expected = np.argsort(-values, kind="stable")[:depth]
            assert list(top_rows(values, depth)) == list(expected)


def test_exact_matches_keep_the_order_of_the_channel_that_matched_them() -> None:
    """Two items with the very same formula: the exact channel's order, whatever the votes
    of another channel (the trained models favour the items they were trained on)."""
    fused = fuse(
        {
            "a": scores([0, 1, 2], [0.9, 0.8, 0.1], exact=[1.0, 1.0, 0.0]),
            "b": scores([1, 2, 0], [0.9, 0.8, 0.1]),  # b votes most for row 1
        },
        WEIGHTS,
    )
    assert [f.row for f in fused] == [0, 1, 2]
    assert fused[0].score == pytest.approx(1.0 + 1 / 11 + 0.5 / 13)


def test_a_channel_without_a_weight_or_a_bonus_lists_its_items_but_moves_nothing() -> None:
    fused = fuse(
        {"a": scores([0, 1], [0.9, 0.5]), "c": scores([1, 2], [0.9, 0.8], exact=[1.0, 1.0])},
        WEIGHTS,
    )
    assert [f.row for f in fused] == [0, 1, 2]  # "c" neither votes nor lifts its exact ones
    assert fused[2].score == 0.0 and fused[2].channels["c"].exact


def test_fusions_values_are_frozen() -> None:
    import dataclasses

    from formula_assets.search.fusion import ChannelRank, Fused

    for value, name in (
        (scores([0], [1.0]), "rows"),
        (ChannelRank(1, 1.0, False), "rank"),
        (Fused(0, 1.0), "row"),
        (WEIGHTS, "k"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, None)
