"""The score ensemble's weights: the 0.1 grid summing to 1, the best validation MRR over both
directions (checked by brute force with an MRR computed here, from scratch), ties keep the
first weighting, and at most MAX_SELECTION_QUERIES sampled queries rank each weighting."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from formula_assets.evaluation import ensemble
from formula_assets.evaluation.ensemble import _weight_grid, _weighting_mrrs, choose_weights
from formula_assets.evaluation.ranking import GoldRanks, MatrixScorer, WeightedScorer, gold_ranks

# ---------------------------------------------------------------------------------------------
# An independent oracle: exact MRR with fair ties, every weighting in lexicographic order.


def oracle_mrr(scores: np.ndarray) -> Fraction:
    """Mean over queries of E[1/rank], the gold (i, i) placed uniformly among its ties."""
    n = len(scores)
    total = Fraction(0)
    for i in range(n):
        gold = scores[i][i]
        higher = sum(1 for j in range(n) if scores[i][j] > gold)
        ties = sum(1 for j in range(n) if j != i and scores[i][j] == gold)
        positions = range(higher + 1, higher + ties + 2)
        total += sum(Fraction(1, p) for p in positions) / (ties + 1)
    return total / n


def compositions(total: int, parts: int):
    """Non-negative integer tuples of length `parts` summing to `total`, lexicographically."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in compositions(total - first, parts - 1):
            yield (first, *rest)


def combine(tenths: tuple[int, ...], members: list[np.ndarray]) -> np.ndarray:
    out = np.zeros_like(members[0], dtype=np.float64)
    for k, matrix in zip(tenths, members, strict=True):
        if k:
            out = out + (k / 10) * matrix
    return out


def brute_force(forward: list[np.ndarray], backward: list[np.ndarray]) -> tuple[float, ...]:
    best, best_quality = None, None
    for tenths in compositions(10, len(forward)):
        quality = (oracle_mrr(combine(tenths, forward)) + oracle_mrr(combine(tenths, backward))) / 2
        if best_quality is None or quality > best_quality:  # ties keep the first
            best, best_quality = tenths, quality
    assert best is not None
    return tuple(k / 10 for k in best)


class Recording:
    """A scorer that remembers which query rows it was asked for; gold strictly first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.seen: list[int] = []

    def block(self, rows: np.ndarray) -> np.ndarray:
        self.seen.extend(int(r) for r in rows)
        out = np.zeros((len(rows), self.size))
        out[np.arange(len(rows)), rows] = 1.0
        return out


# ---------------------------------------------------------------------------------------------
# The grid.


def test_three_members_have_66_weightings_on_the_tenth_grid() -> None:
    grid = _weight_grid(3)
    assert len(grid) == 66 == comb(10 + 2, 2)
    assert len(set(grid)) == 66
    for weights in grid:
        assert len(weights) == 3
        assert sum(weights) == pytest.approx(1.0)
        for w in weights:
            assert 0.0 <= w <= 1.0
            assert w == round(w * 10) / 10  # a multiple of 0.1, exactly as k / 10
    assert {tuple(round(w * 10) for w in weights) for weights in grid} == set(compositions(10, 3))
    assert (1.0, 0.0, 0.0) in grid and (0.0, 0.0, 1.0) in grid


def test_grid_order_is_lexicographic_from_the_last_member() -> None:
    assert _weight_grid(2) == [(k / 10, (10 - k) / 10) for k in range(11)]
    assert _weight_grid(3)[:3] == [(0.0, 0.0, 1.0), (0.0, 0.1, 0.9), (0.0, 0.2, 0.8)]
    assert _weight_grid(3)[-1] == (1.0, 0.0, 0.0)


def test_grid_sizes_and_steps() -> None:
    assert _weight_grid(1) == [(1.0,)]
    assert len(_weight_grid(4)) == comb(10 + 3, 3)
    assert _weight_grid(2, step=0.5) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert _weight_grid(2, step=0.25) == [
        (0.0, 1.0),
        (0.25, 0.75),
        (0.5, 0.5),
        (0.75, 0.25),
        (1.0, 0.0),
    ]


# ---------------------------------------------------------------------------------------------
# The selection criterion and the choice.


def test_weighting_mrr_ranks_with_expected_ties() -> None:
    forward = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    # query 0 first (1), query 1 one below and one tie: second or third (5/12),
    # query 2 tied with all three: first, second or third (11/18)
    forward_mrr = (1 + (1 / 2 + 1 / 3) / 2 + (1 + 1 / 2 + 1 / 3) / 3) / 3
    [quality] = _weighting_mrrs([MatrixScorer(forward)], [(1.0,)], np.arange(3))
    assert quality == pytest.approx(forward_mrr)
    [only_two] = _weighting_mrrs([MatrixScorer(forward)], [(1.0,)], np.array([1, 2]))
    assert only_two == pytest.approx((5 / 12 + 11 / 18) / 2)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    members=st.integers(min_value=1, max_value=4),
    n=st.integers(min_value=1, max_value=9),
    chunk=st.integers(min_value=1, max_value=4),
    discrete=st.booleans(),
    shuffled=st.booleans(),
)
def test_each_weighting_ranks_as_its_weighted_scorer(
    seed: int, members: int, n: int, chunk: int, discrete: bool, shuffled: bool
) -> None:
    """Members scored once per chunk, partial sums shared between weightings, give bit for
    bit the MRR of every weighting's own WeightedScorer (ties included: discrete scores tie
    often), in the grid's order or any other."""
    rng = np.random.default_rng(seed)
    scorers = [
        MatrixScorer(rng.integers(0, 3, (n, n)) if discrete else rng.normal(size=(n, n)))
        for _ in range(members)
    ]
    rows = np.sort(rng.choice(n, max(1, n - 1), replace=False))
    grid = _weight_grid(members, step=0.25)
    if shuffled:
        grid = [grid[i] for i in rng.permutation(len(grid))]
    expected = [
        gold_ranks(WeightedScorer(list(zip(w, scorers, strict=True))), rows).summary()["mrr"]
        for w in grid
    ]
    assert list(_weighting_mrrs(scorers, grid, rows, chunk=chunk)) == expected


def test_the_tenth_grid_over_hundreds_of_queries_ranks_as_each_weighted_scorer() -> None:
    """At the default's scale (four members, 286 weightings, 300 queries in chunks of 128):
    the same MRRs to the last bit, so the same weights are chosen."""
    rng = np.random.default_rng(7)
    n = 300
    scorers = [MatrixScorer(rng.normal(size=(n, n)) + 3 * np.eye(n)) for _ in range(4)]
    scorers.append(MatrixScorer(rng.integers(0, 4, (n, n))))  # many ties
    grid = _weight_grid(5, step=0.2)
    rows = np.arange(n)
    expected = [
        gold_ranks(WeightedScorer(list(zip(w, scorers, strict=True))), rows).summary()["mrr"]
        for w in grid
    ]
    assert list(_weighting_mrrs(scorers, grid, rows, chunk=128)) == expected


def test_every_weight_zero_ties_every_candidate() -> None:
    [quality] = _weighting_mrrs([MatrixScorer(np.eye(4))], [(0.0,)], np.arange(4))
    assert quality == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)


def test_a_weighting_needs_a_weight_per_member() -> None:
    with pytest.raises(ValueError, match="one weight per member"):
        _weighting_mrrs([MatrixScorer(np.eye(3))], [(0.5, 0.5)], np.arange(3))


def test_a_non_finite_member_score_is_an_error() -> None:
    bad = np.eye(3)
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite score for query row 2"):
        _weighting_mrrs([MatrixScorer(np.eye(3)), MatrixScorer(bad)], [(0.5, 0.5)], np.arange(3))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    members=st.integers(min_value=1, max_value=3),
    n=st.integers(min_value=2, max_value=7),
    explicit_reverse=st.booleans(),
    discrete=st.booleans(),
)
def test_chosen_weights_maximise_validation_mrr(
    seed: int, members: int, n: int, explicit_reverse: bool, discrete: bool
) -> None:
    rng = np.random.default_rng(seed)

    def draw() -> np.ndarray:
        if discrete:  # many ties
            return rng.integers(0, 3, size=(n, n)).astype(np.float64)
        return rng.normal(size=(n, n)) + rng.uniform(0, 2) * np.eye(n)

    forward = [draw() for _ in range(members)]
    if explicit_reverse:
        backward = [draw() for _ in range(members)]
        chosen = choose_weights(forward, backward)
    else:
        backward = [m.T for m in forward]
        chosen = choose_weights(forward)
    assert chosen == brute_force(forward, backward)


def test_ties_keep_the_first_weighting() -> None:
    # Identical members: every weighting ranks the same, so the grid's first one stays.
    same = np.eye(5)
    assert choose_weights([same, same]) == (0.0, 1.0)
    assert choose_weights([same, same, same]) == (0.0, 0.0, 1.0)
    flat = np.zeros((4, 4))
    assert choose_weights([flat, flat, flat]) == (0.0, 0.0, 1.0)


@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_useless_member_gets_no_weight_when_another_is_perfect(position: int) -> None:
    n = 30
    rng = np.random.default_rng(1)
    members = [1000 * rng.normal(size=(n, n)) for _ in range(3)]
    members[position] = np.eye(n)
    expected = tuple(1.0 if i == position else 0.0 for i in range(3))
    assert choose_weights(members) == expected
    assert choose_weights(members[:2] if position < 2 else members[1:]) == tuple(
        1.0 if i == min(position, 1) else 0.0 for i in range(2)
    )


def test_choose_weights_prefers_the_informative_member() -> None:
    """Unscaled noise beside a perfect member: all the weight goes to the perfect one."""
    n = 30
    perfect = np.eye(n)
    noise = np.random.default_rng(1).normal(size=(n, n))
    assert choose_weights([noise, perfect]) == (0.0, 1.0)


def test_explicit_reverse_scorers_are_used() -> None:
    # Forward, every weighting ties; only the given reverse scorers can decide.
    n = 12
    flat = np.zeros((n, n))
    noise = 1000 * np.random.default_rng(2).normal(size=(n, n))
    assert choose_weights([flat, flat], [np.eye(n), noise]) == (1.0, 0.0)
    assert choose_weights([flat, flat], [MatrixScorer(np.eye(n)), MatrixScorer(noise)]) == (
        1.0,
        0.0,
    )
    # By default the reverse direction is the transposed matrix: the flat one ties everywhere.
    assert choose_weights([flat, flat]) == (0.0, 1.0)


def test_reverse_must_have_one_scorer_per_member() -> None:
    a = np.eye(3)
    with pytest.raises(ValueError):
        choose_weights([a, a], [a])


def test_members_may_be_scorers() -> None:
    n = 10
    noise = 1000 * np.random.default_rng(3).normal(size=(n, n))
    chosen = choose_weights(
        [MatrixScorer(np.eye(n)), MatrixScorer(noise)],
        [MatrixScorer(np.eye(n)), MatrixScorer(noise.T)],
    )
    assert chosen == (1.0, 0.0)


class Near:
    """A pool of `size` where the gold scores 0, most candidates 1, and the `near` ones right
    after the gold (cyclically) score `value`: one query row at a time, as big as needed."""

    def __init__(self, size: int, near: int, value: float) -> None:
        self.size, self.near, self.value = size, near, value

    def block(self, rows: np.ndarray) -> np.ndarray:
        out = np.ones((len(rows), self.size))
        out[np.arange(len(rows)), rows] = 0.0
        for step in range(1, self.near + 1):
            out[np.arange(len(rows)), (rows + step) % self.size] = self.value
        return out


class GoldFirst:
    def __init__(self, size: int) -> None:
        self.size = size

    def block(self, rows: np.ndarray) -> np.ndarray:
        out = np.zeros((len(rows), self.size))
        out[np.arange(len(rows)), rows] = 1.0
        return out


def _one_query_choice(monkeypatch, size: int, near: int, value: float) -> tuple[float, ...]:
    """Weights for one sampled query: with weights (0, 1) the `near` candidates score `value`
    against the gold's 0; with any weight on the first member they drop below the gold. The
    reverse direction ranks the gold first under every weighting."""
    monkeypatch.setattr(ensemble, "MAX_SELECTION_QUERIES", 1)
    members = [Near(size, near, -1.0), Near(size, near, value)]
    return choose_weights(members, [GoldFirst(size), GoldFirst(size)])


def test_a_tiny_real_gain_is_not_mistaken_for_noise(monkeypatch) -> None:
    """Weightings tie only within float noise: a gain of 1.4e-12 in mean MRR still wins.

    In a pool of 600,000 the gold ranks last (n) under weights (0, 1) and one higher (n - 1)
    under every other weighting, so (0.1, 0.9) is the first best.
    """
    n = 600_000
    gain = (1 / (n - 1) - 1 / n) / 2
    assert 1.3e-12 < gain < 1.5e-12
    assert _one_query_choice(monkeypatch, n, near=1, value=1e-9) == (0.1, 0.9)


def test_a_gain_of_exactly_the_tolerance_is_a_tie(monkeypatch) -> None:
    """Ties are qualities within 1e-12: a later weighting must beat the kept one by more.

    Under weights (0, 1) the gold ties with six candidates behind n - 7 higher ones; under
    any other weighting the six drop below it, a gain of about 3 / (2 (n - 7)²) in mean MRR.
    Among pools of about 1.2 million there are sizes where, in floating point, that gain is
    exactly 1e-12: the first weighting then stays.
    """
    near = 6
    sizes = np.arange(1_224_000, 1_226_000)
    higher = sizes - 1 - near
    backward = GoldRanks(np.array([0]), np.array([0])).summary()["mrr"]
    tied = (GoldRanks(higher, np.full_like(sizes, near)).reciprocal_rank() + backward) / 2
    clear = (GoldRanks(higher, np.zeros_like(sizes)).reciprocal_rank() + backward) / 2
    exact = sizes[clear == tied + 1e-12]
    assert len(exact) > 0
    assert _one_query_choice(monkeypatch, int(exact[0]), near=near, value=0.0) == (0.0, 1.0)
    # At a nearby size the gain is just above the tolerance: the better weighting wins.
    above = sizes[clear > tied + 1e-12]
    assert _one_query_choice(monkeypatch, int(above[-1]), near=near, value=0.0) == (0.1, 0.9)


# ---------------------------------------------------------------------------------------------
# Sampling the selection queries.


def _rows_seen(n: int, rng: np.random.Generator | None = None) -> tuple[list[int], list[int]]:
    forward, backward = Recording(n), Recording(n)
    assert choose_weights([forward], [backward], rng=rng) == (1.0,)
    return forward.seen, backward.seen


def test_selection_samples_above_the_limit(monkeypatch) -> None:
    monkeypatch.setattr(ensemble, "MAX_SELECTION_QUERIES", 5)
    forward, backward = _rows_seen(12)
    assert len(forward) == 5 and len(set(forward)) == 5
    assert forward == sorted(forward) and set(forward) <= set(range(12))
    assert backward == forward  # both directions rank the same queries
    assert forward != list(range(5))  # a sample, not the first five
    assert _rows_seen(12)[0] == forward  # reproducible by default
    assert _rows_seen(12, np.random.default_rng(0))[0] == forward  # the default seed is 0
    with_seed = {seed: _rows_seen(12, np.random.default_rng(seed))[0] for seed in (1, 2, 3)}
    assert with_seed[1] == _rows_seen(12, np.random.default_rng(1))[0]
    assert len({tuple(rows) for rows in with_seed.values()}) > 1  # the given rng is used


def test_selection_uses_every_query_up_to_the_limit(monkeypatch) -> None:
    monkeypatch.setattr(ensemble, "MAX_SELECTION_QUERIES", 5)
    assert _rows_seen(4) == (list(range(4)), list(range(4)))
    rng = np.random.default_rng(9)
    assert _rows_seen(5, rng) == (list(range(5)), list(range(5)))
    # Nothing was drawn from the caller's generator when no sample was needed.
    assert rng.random() == np.random.default_rng(9).random()
    forward, _ = _rows_seen(6)
    assert len(forward) == len(set(forward)) == 5


def test_the_selection_limit_is_3000_queries() -> None:
    """The protocol: weight selection ranks at most 3000 validation queries per weighting."""
    assert _rows_seen(3000)[0] == list(range(3000))
    forward, backward = _rows_seen(3001)
    assert len(forward) == len(set(forward)) == 3000
    assert backward == forward == sorted(forward)


def test_the_ensemble_scores_are_the_weighted_sum_of_its_named_members() -> None:
    """The weights name the members: the scorers of other methods are never read, and a
    member without a scorer is an error."""
    rng = np.random.default_rng(0)
    members = {
        name: MatrixScorer(rng.normal(size=(4, 4)))
        for name in ("graph_text_cl", "sbert_dual_cl", "sbert_no_cl", "bm25")
    }
    weights = {"graph_text_cl": 0.2, "sbert_dual_cl": 0.5, "sbert_no_cl": 0.3}
    rows = np.array([0, 2, 3])
    got = ensemble.ensemble_scorer(weights, members).block(rows)
    expected = sum(weights[m] * members[m].block(rows) for m in weights)
    assert np.allclose(got, expected)  # bm25 is not a member: its scores are never read
    with pytest.raises(KeyError):
        ensemble.ensemble_scorer({**weights, "toy": 0.0}, members)


def test_the_inner_product_form_scores_as_the_ensemble_scorer() -> None:
    """Search scores one query by `ensemble_inner_product`; Table 2 by the scorers: equal."""
    from formula_assets.evaluation.ensemble import ensemble_inner_product, ensemble_scorer
    from formula_assets.evaluation.hubness import HubnessScorer
    from formula_assets.evaluation.ranking import CosineScorer

    rng = np.random.default_rng(3)
    widths = {"a": 5, "b": 7, "c": 3}
    candidates = {m: rng.normal(size=(40, d)) for m, d in widths.items()}
    queries = {m: rng.normal(size=d) for m, d in widths.items()}
    hubs = {m: rng.uniform(0, 0.3, size=40) for m in widths}
    weights = {"a": 0.6, "b": 0.0, "c": 0.4}  # b weighs nothing
    members = {
        m: HubnessScorer(CosineScorer(queries[m][None, :], candidates[m]), hubs[m]) for m in widths
    }
    expected = ensemble_scorer(weights, members).block(np.array([0]))[0]
    matrix, bias = ensemble_inner_product(weights, candidates, hubs)
    query = np.concatenate([queries[m] / np.linalg.norm(queries[m]) for m in ("a", "c")])
    assert matrix.shape == (40, 8)  # b left out
    assert np.allclose(matrix @ query + bias, expected, atol=1e-5)
    plain, none = ensemble_inner_product({"a": 1.0}, candidates)
    assert none is None
    cosines = CosineScorer(queries["a"][None, :], candidates["a"]).block(np.array([0]))[0]
    assert np.allclose(plain @ (queries["a"] / np.linalg.norm(queries["a"])), cosines, atol=1e-5)
