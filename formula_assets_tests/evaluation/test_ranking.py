"""The one gold-rank implementation behind Table 2, tested directly.

Every scorer type is checked against hand-computed rankings with ties, at several chunk sizes
and on sampled query rows; the expected metrics are the exact expectations over random
tie-breaking, checked against an exhaustive average over every tie order; a score that is not
finite is an error in every scorer and in every chunk, never a rank.
"""

from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

from formula_assets.evaluation.ranking import (
    CosineScorer,
    DotScorer,
    GoldRanks,
    MatrixScorer,
    SparseScorer,
    WeightedScorer,
    gold_ranks,
    harmonic,
    normalise_rows,
    retrieval_summary,
)

# ---------------------------------------------------------------------------------------------
# A hand-ranked pool: 4 queries, 4 candidates, the gold of query i is candidate i.
#
#   row 0: [2, 2, 1, 3]  gold 2: one higher (3), one tie (col 1)  -> rank 2 or 3
#   row 1: [0, 5, 5, 5]  gold 5: none higher, two ties             -> rank 1, 2 or 3
#   row 2: [1, 1, 1, 1]  gold 1: none higher, three ties           -> rank 1 … 4
#   row 3: [4, 3, 3, 0]  gold 0: three higher, no tie              -> rank 4
S = np.array(
    [
        [2.0, 2.0, 1.0, 3.0],
        [0.0, 5.0, 5.0, 5.0],
        [1.0, 1.0, 1.0, 1.0],
        [4.0, 3.0, 3.0, 0.0],
    ]
)
HIGHER = [1, 0, 0, 3]
TIES = [1, 2, 3, 0]
RECALL = {  # P(rank <= k), by hand from the rank ranges above
    1: [0, Fraction(1, 3), Fraction(1, 4), 0],
    2: [Fraction(1, 2), Fraction(2, 3), Fraction(1, 2), 0],
    3: [1, 1, Fraction(3, 4), 0],
    4: [1, 1, 1, 1],
    10: [1, 1, 1, 1],
}
RR = [  # E[1/rank]: the mean of 1/p over the gold's equally likely positions p
    (Fraction(1, 2) + Fraction(1, 3)) / 2,  # 5/12
    (1 + Fraction(1, 2) + Fraction(1, 3)) / 3,  # 11/18
    (1 + Fraction(1, 2) + Fraction(1, 3) + Fraction(1, 4)) / 4,  # 25/48
    Fraction(1, 4),
]
# Integer offsets for the weighted scorer: 0.25 (S + 3D) + 0.75 (S - D) = S exactly, while a
# wrong combination (a difference, a quotient, equal weights) ranks differently.
D = np.array(
    [
        [1.0, -2.0, 0.0, 3.0],
        [2.0, 0.0, -1.0, 1.0],
        [0.0, 4.0, -3.0, 2.0],
        [1.0, -1.0, 2.0, 0.0],
    ]
)
# Row scales of the queries and very different lengths of the candidates: cosine ranks as S,
# plain dot products of the same vectors would not.
ROW_SCALE = np.array([[2.0], [0.5], [3.0], [1.0]])
CANDIDATE_LENGTHS = np.array([1.0, 10.0, 0.1, 5.0])


class Untouchable:
    """A member that must never be computed (weight 0)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def block(self, rows: np.ndarray) -> np.ndarray:
        raise AssertionError("a member with weight 0 was computed")


def matrix_scorer(scores: np.ndarray) -> MatrixScorer:
    return MatrixScorer(scores.copy())


def dot_scorer(scores: np.ndarray) -> DotScorer:
    return DotScorer(scores.copy(), np.eye(len(scores)))


def cosine_scorer(scores: np.ndarray) -> CosineScorer:
    return CosineScorer(scores * ROW_SCALE, np.diag(CANDIDATE_LENGTHS))


def sparse_scorer(scores: np.ndarray) -> SparseScorer:
    # 5 terms for 4 queries: the last term has weight 1 for every candidate, no query uses it.
    counts = np.hstack([scores, np.zeros((len(scores), 1))])
    weights = np.vstack([np.eye(len(scores)), np.ones((1, len(scores)))])
    return SparseScorer(sparse.csr_matrix(counts), sparse.csr_matrix(weights))


def weighted_scorer(scores: np.ndarray) -> WeightedScorer:
    return WeightedScorer(
        [
            (0.25, MatrixScorer(scores + 3 * D)),
            (0.0, Untouchable(len(scores))),
            (0.75, MatrixScorer(scores - D)),
        ]
    )


SCORERS = {
    "dot": dot_scorer,
    "cosine": cosine_scorer,
    "matrix": matrix_scorer,
    "sparse": sparse_scorer,
    "weighted": weighted_scorer,
}
CHUNKS = (1, 2, 3, 4, 10)  # 10: larger than the pool


def _approx(values) -> object:
    return pytest.approx([float(v) for v in values], abs=1e-12)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("kind", SCORERS)
def test_every_scorer_ranks_the_hand_computed_pool(kind: str, chunk: int) -> None:
    ranks = gold_ranks(SCORERS[kind](S), chunk=chunk)
    assert ranks.higher.tolist() == HIGHER
    assert ranks.ties.tolist() == TIES
    for k, expected in RECALL.items():
        assert ranks.recall_at(k).tolist() == _approx(expected)
    assert ranks.reciprocal_rank().tolist() == _approx(RR)
    summary = ranks.summary(ks=(1, 2, 3))
    assert summary == {
        "recall_at_1": pytest.approx(float(sum(RECALL[1]) / 4)),
        "recall_at_2": pytest.approx(float(sum(RECALL[2]) / 4)),
        "recall_at_3": pytest.approx(float(sum(RECALL[3]) / 4)),
        "mrr": pytest.approx(float(sum(RR) / 4)),
    }


@pytest.mark.parametrize("rows", [[3, 0, 2], [1], [2, 2, 1], [0, 1, 2, 3]])
@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("kind", SCORERS)
def test_sampled_rows_keep_their_gold(kind: str, chunk: int, rows: list[int]) -> None:
    ranks = gold_ranks(SCORERS[kind](S), rows=np.array(rows), chunk=chunk)
    assert ranks.higher.tolist() == [HIGHER[r] for r in rows]
    assert ranks.ties.tolist() == [TIES[r] for r in rows]
    assert ranks.recall_at(2).tolist() == _approx([RECALL[2][r] for r in rows])
    assert ranks.reciprocal_rank().tolist() == _approx([RR[r] for r in rows])


def test_rows_may_be_a_plain_list() -> None:
    ranks = gold_ranks(MatrixScorer(S), rows=[3, 1])
    assert ranks.higher.tolist() == [3, 0] and ranks.ties.tolist() == [0, 2]


def test_a_tie_is_never_a_win() -> None:
    """The fair-tie rule: a candidate equal to the gold is a tie, not ranked below it."""
    scores = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 3.0, 2.0]])
    ranks = gold_ranks(MatrixScorer(scores))
    assert ranks.higher.tolist() == [0, 0, 1]
    assert ranks.ties.tolist() == [1, 2, 0]
    assert ranks.recall_at(1).tolist() == _approx([Fraction(1, 2), Fraction(1, 3), 0])


def test_default_summary_reports_recall_at_1_5_10_and_mrr() -> None:
    # (higher, ties) per query in a pool of 12; recall and MRR written out by hand.
    ranks = GoldRanks(higher=np.array([0, 3, 7, 11]), ties=np.array([0, 2, 4, 0]))
    summary = ranks.summary()
    assert list(summary) == ["recall_at_1", "recall_at_5", "recall_at_10", "mrr"]
    # R@1: only query 0 (rank 1). R@5: query 1 lands on 4, 5 or 6 -> 2/3.
    # R@10: query 1 surely, query 2 on 8 … 12 -> 3/5, query 3 on 12 -> 0.
    assert summary["recall_at_1"] == pytest.approx(1 / 4)
    assert summary["recall_at_5"] == pytest.approx((1 + 2 / 3) / 4)
    assert summary["recall_at_10"] == pytest.approx((1 + 1 + 3 / 5) / 4)
    rr = [1, (1 / 4 + 1 / 5 + 1 / 6) / 3, sum(1 / p for p in range(8, 13)) / 5, 1 / 12]
    assert summary["mrr"] == pytest.approx(sum(rr) / 4)


def test_recall_is_clipped_to_the_unit_interval() -> None:
    ranks = GoldRanks(higher=np.array([0, 2, 5]), ties=np.array([0, 1, 3]))
    assert ranks.recall_at(0).tolist() == [0.0, 0.0, 0.0]  # (0 - g) / (t + 1) <= 0
    assert ranks.recall_at(1).tolist() == [1.0, 0.0, 0.0]
    assert ranks.recall_at(3).tolist() == [1.0, 0.5, 0.0]
    assert ranks.recall_at(7).tolist() == [1.0, 1.0, 0.5]
    assert ranks.recall_at(100).tolist() == [1.0, 1.0, 1.0]  # (100 - 0) / 1 is not a chance


def test_reciprocal_rank_by_hand() -> None:
    ranks = GoldRanks(higher=np.array([0, 0, 1, 4, 2]), ties=np.array([0, 1, 0, 0, 2]))
    expected = [1, (1 + 1 / 2) / 2, 1 / 2, 1 / 5, (1 / 3 + 1 / 4 + 1 / 5) / 3]
    assert ranks.reciprocal_rank() == pytest.approx(expected, abs=1e-12)


def test_gold_ranks_are_immutable() -> None:
    ranks = gold_ranks(MatrixScorer(S))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ranks.higher = np.zeros(4, dtype=np.int64)  # type: ignore[misc]


def test_harmonic_numbers() -> None:
    assert harmonic(np.array([0.0]))[0] == pytest.approx(0.0, abs=1e-12)
    n = np.arange(0, 60, dtype=np.float64)
    expected = [sum(Fraction(1, i) for i in range(1, int(m) + 1)) for m in n]
    assert harmonic(n) == pytest.approx([float(e) for e in expected], abs=1e-12)
    assert harmonic(np.array([4.0]))[0] == pytest.approx(25 / 12)


def test_normalise_rows() -> None:
    matrix = np.array([[3.0, 4.0], [0.0, 0.0], [-1.0, 0.0]])
    out = normalise_rows(matrix)
    expected = [[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]]
    assert out.tolist() == [pytest.approx(r) for r in expected]
    assert not np.isnan(out).any()
    square = np.array([[0.0, 2.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    expected = [[0.0, 1.0, 0.0], [3**-0.5] * 3, [0.0, 0.0, 0.0]]
    assert normalise_rows(square).tolist() == [pytest.approx(r) for r in expected]


def test_cosine_ignores_vector_lengths_where_dot_does_not() -> None:
    q, c = S * ROW_SCALE, np.diag(CANDIDATE_LENGTHS)
    cosine = CosineScorer(q, c).block(np.arange(4))
    by_hand = S / np.linalg.norm(S, axis=1, keepdims=True)
    assert cosine == pytest.approx(by_hand)
    assert gold_ranks(DotScorer(q, c)).higher.tolist() != HIGHER


def test_reverse_scores_the_other_direction() -> None:
    rng = np.random.default_rng(7)
    q, c = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    forward = DotScorer(q, c)
    backward = forward.reverse()
    assert isinstance(backward, DotScorer) and backward.size == 5
    assert backward.block(np.arange(5)) == pytest.approx(forward.block(np.arange(5)).T)
    cosine = CosineScorer(q, c)
    cosine_back = cosine.reverse()
    assert isinstance(cosine_back, CosineScorer)
    assert cosine_back.block(np.arange(5)) == pytest.approx(cosine.block(np.arange(5)).T)


def test_scorer_sizes_count_queries() -> None:
    counts = sparse.csr_matrix(np.ones((3, 7)))
    weights = sparse.csr_matrix(np.ones((7, 3)))
    assert SparseScorer(counts, weights).size == 3
    assert DotScorer(np.ones((3, 2)), np.ones((3, 2))).size == 3
    assert CosineScorer(np.ones((3, 2)), np.ones((3, 2))).size == 3
    assert MatrixScorer(np.ones((3, 3))).size == 3
    assert WeightedScorer([(1.0, MatrixScorer(np.ones((3, 3))))]).size == 3


def test_weighted_scorer_sums_weighted_members() -> None:
    a, b = np.arange(9.0).reshape(3, 3), np.ones((3, 3))
    rows = np.arange(3)
    two = WeightedScorer([(0.25, MatrixScorer(a)), (0.75, MatrixScorer(b))])
    assert two.block(rows) == pytest.approx(0.25 * a + 0.75 * b)
    three = WeightedScorer(
        [(0.5, MatrixScorer(a)), (0.25, MatrixScorer(b)), (0.25, MatrixScorer(a))]
    )
    assert three.block(rows) == pytest.approx(0.75 * a + 0.25 * b)
    one = WeightedScorer([(1.0, MatrixScorer(a))])
    assert one.block(np.array([2, 0])) == pytest.approx(a[[2, 0]])
    skipped = WeightedScorer([(0.0, Untouchable(3)), (1.0, MatrixScorer(b))])
    assert skipped.block(rows) == pytest.approx(b)


def test_weighted_scorer_with_no_weight_scores_all_zero() -> None:
    nothing = WeightedScorer([(0.0, Untouchable(4)), (0.0, Untouchable(4))])
    assert nothing.block(np.array([1, 3])).tolist() == [[0.0] * 4] * 2
    ranks = gold_ranks(nothing)
    assert ranks.higher.tolist() == [0] * 4 and ranks.ties.tolist() == [3] * 4


def test_retrieval_summary_is_dot_product_retrieval() -> None:
    summary = retrieval_summary(S, np.eye(4))
    assert summary == {
        "recall_at_1": pytest.approx(float(sum(RECALL[1]) / 4)),
        "recall_at_5": pytest.approx(1.0),
        "recall_at_10": pytest.approx(1.0),
        "mrr": pytest.approx(float(sum(RR) / 4)),
    }


# ---------------------------------------------------------------------------------------------
# Property: the exact expectations equal an exhaustive average over every tie order.


def _exhaustive(scores: list[list[int]], i: int, ks: tuple[int, ...]):
    """Higher, ties, P(rank <= k) and E[1/rank] of query i by enumerating all orders."""
    n = len(scores[i])
    row = scores[i]
    higher = sum(1 for j in range(n) if row[j] > row[i])
    ties = sum(1 for j in range(n) if j != i and row[j] == row[i])
    hits = dict.fromkeys(ks, Fraction(0))
    rr = Fraction(0)
    orders = list(itertools.permutations(range(n)))
    for order in orders:  # `order` breaks ties: earlier in it ranks higher
        position = {j: p for p, j in enumerate(order)}
        ranking = sorted(range(n), key=lambda j: (-row[j], position[j]))
        rank = ranking.index(i) + 1
        rr += Fraction(1, rank)
        for k in ks:
            hits[k] += rank <= k
    count = len(orders)
    return higher, ties, {k: h / count for k, h in hits.items()}, rr / count


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(min_value=1, max_value=5),
    chunk=st.integers(min_value=1, max_value=6),
    kind=st.sampled_from(sorted(SCORERS)),
)
def test_metrics_equal_the_average_over_all_tie_orders(data, n, chunk, kind) -> None:
    scores = data.draw(
        st.lists(
            st.lists(st.integers(min_value=0, max_value=2), min_size=n, max_size=n),
            min_size=n,
            max_size=n,
        )
    )
    matrix = np.array(scores, dtype=np.float64)
    if kind == "weighted":
        scorer = WeightedScorer(
            [
                (0.25, MatrixScorer(matrix + 3 * np.eye(n))),
                (0.75, MatrixScorer(matrix - np.eye(n))),
            ]
        )
    elif kind == "cosine":
        # Unit candidates: cosine is each row over its norm, a positive scale keeping its ties.
        scorer = CosineScorer(matrix, np.eye(n))
    else:
        scorer = SCORERS[kind](matrix)
    ks = (1, 2, 3)
    ranks = gold_ranks(scorer, chunk=chunk)
    for i in range(n):
        higher, ties, recall, rr = _exhaustive(scores, i, ks)
        assert (ranks.higher[i], ranks.ties[i]) == (higher, ties)
        for k in ks:
            assert ranks.recall_at(k)[i] == pytest.approx(float(recall[k]), abs=1e-12)
        assert ranks.reciprocal_rank()[i] == pytest.approx(float(rr), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(g=st.integers(min_value=0, max_value=30), t=st.integers(min_value=0, max_value=5))
def test_expected_reciprocal_rank_averages_every_tie_order(g: int, t: int) -> None:
    """E[1/rank] with g higher and t ties, against all (t+1)! orders of the tied group."""
    orders = list(itertools.permutations(range(t + 1)))  # 0 is the gold
    expected = sum(Fraction(1, g + 1 + order.index(0)) for order in orders) / len(orders)
    ranks = GoldRanks(higher=np.array([g]), ties=np.array([t]))
    assert ranks.reciprocal_rank()[0] == pytest.approx(float(expected), abs=1e-12)
    for k in (1, 3, 10, 40):
        hits = sum(g + 1 + order.index(0) <= k for order in orders)
        assert ranks.recall_at(k)[0] == pytest.approx(hits / len(orders), abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), chunk=st.integers(min_value=1, max_value=40))
def test_chunking_and_sampling_never_change_a_rank(seed: int, chunk: int) -> None:
    rng = np.random.default_rng(seed)
    q, c = rng.integers(-2, 3, size=(30, 4)), rng.integers(-2, 3, size=(30, 4))
    scores = (q @ c.T).astype(np.float64)
    higher = [(scores[i] > scores[i, i]).sum() for i in range(30)]
    ties = [(scores[i] == scores[i, i]).sum() - 1 for i in range(30)]
    rows = rng.choice(30, size=12, replace=False)
    whole = gold_ranks(DotScorer(q.astype(float), c.astype(float)), chunk=chunk)
    assert whole.higher.tolist() == higher and whole.ties.tolist() == ties
    some = gold_ranks(MatrixScorer(scores), rows=rows, chunk=chunk)
    assert some.higher.tolist() == [higher[r] for r in rows]
    assert some.ties.tolist() == [ties[r] for r in rows]


# ---------------------------------------------------------------------------------------------
# A score that is not finite is an error, whichever scorer made it and in whichever chunk.

quiet = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")


def _bad_scorer(kind: str, bad: float, row: int, column: int):
    """A scorer of the hand-ranked pool whose query `row` gets a non-finite score."""
    if kind == "matrix":
        scores = S.copy()
        scores[row, column] = bad
        return MatrixScorer(scores)
    if kind == "dot":
        queries = S.copy()
        queries[row, column] = bad
        return DotScorer(queries, np.eye(4))
    if kind == "cosine":
        queries = S * ROW_SCALE
        queries[row, column] = bad  # a NaN or infinite norm: the whole row is NaN
        return CosineScorer(queries, np.diag(CANDIDATE_LENGTHS))
    if kind == "sparse":
        counts = np.hstack([S, np.zeros((4, 1))])
        weights = np.vstack([np.eye(4), np.ones((1, 4))])
        counts[:, row] = 0  # term `row` is used by query `row` alone …
        counts[row, row] = 1
        weights[row, column] = bad  # … and scores one candidate non-finite
        return SparseScorer(sparse.csr_matrix(counts), sparse.csr_matrix(weights))
    if kind == "weighted":
        member = S - D
        member[row, column] = bad
        return WeightedScorer(
            [
                (0.25, MatrixScorer(S + 3 * D)),
                (0.0, Untouchable(4)),
                (0.75, MatrixScorer(member)),
            ]
        )
    raise AssertionError(kind)


@quiet
@pytest.mark.parametrize("chunk", [1, 3, 10])
@pytest.mark.parametrize("row", [0, 3])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "+inf", "-inf"])
@pytest.mark.parametrize("kind", SCORERS)
def test_non_finite_scores_raise(kind: str, bad: float, row: int, chunk: int) -> None:
    for column in (row, 2):  # at the gold itself (a NaN gold once counted as a hit) and not
        scorer = _bad_scorer(kind, bad, row, column)
        with pytest.raises(ValueError, match=f"non-finite score for query row {row}:"):
            gold_ranks(scorer, chunk=chunk)


@quiet
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "+inf", "-inf"])
def test_a_non_finite_gold_is_not_a_hit(bad: float) -> None:
    scores = np.zeros((3, 3)) - 1.0
    scores[1, 1] = bad
    with pytest.raises(ValueError, match="non-finite score for query row 1:"):
        gold_ranks(MatrixScorer(scores))


@quiet
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_overflow_is_non_finite(sign: float) -> None:
    queries = np.array([[1.0], [sign * 1e200]])
    candidates = np.array([[1.0], [1e200]])
    with pytest.raises(ValueError, match="non-finite score for query row 1:"):
        gold_ranks(DotScorer(queries, candidates))


@quiet
def test_members_of_opposite_infinite_scores_sum_to_nan() -> None:
    up, down = np.eye(3), np.eye(3)
    up[2, 0], down[2, 0] = np.inf, -np.inf
    scorer = WeightedScorer([(0.5, MatrixScorer(up)), (0.5, MatrixScorer(down))])
    assert np.isnan(scorer.block(np.array([2]))[0, 0])
    with pytest.raises(ValueError, match="non-finite score for query row 2:"):
        gold_ranks(scorer)


def test_a_non_finite_member_with_weight_zero_is_harmless() -> None:
    bad = np.full((4, 4), np.nan)
    scorer = WeightedScorer([(0.0, MatrixScorer(bad)), (1.0, MatrixScorer(S))])
    assert gold_ranks(scorer).higher.tolist() == HIGHER


@pytest.mark.parametrize("chunk", [1, 2, 10])
def test_the_first_bad_query_row_is_reported(chunk: int) -> None:
    scores = S.copy()
    scores[3, 0] = np.nan
    scores[1, 2] = np.inf
    with pytest.raises(ValueError, match="non-finite score for query row 1:"):
        gold_ranks(MatrixScorer(scores), chunk=chunk)


@pytest.mark.parametrize("chunk", [1, 2, 10])
def test_sampled_rows_report_the_query_row_and_skip_unsampled_rows(chunk: int) -> None:
    scores = S.copy()
    scores[3, 1] = np.nan
    ranks = gold_ranks(MatrixScorer(scores), rows=np.array([2, 0, 1]), chunk=chunk)
    assert ranks.higher.tolist() == [0, 1, 0]  # row 3 is not asked about
    with pytest.raises(ValueError, match="non-finite score for query row 3:"):
        gold_ranks(MatrixScorer(scores), rows=np.array([2, 0, 3, 1]), chunk=chunk)
