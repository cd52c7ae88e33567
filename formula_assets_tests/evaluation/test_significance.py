"""The significance family of Table 2: which pairs are tested, Holm's adjustment, the tests."""

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.protocol import DIRECTIONS, ENSEMBLE
from formula_assets.evaluation.lineup import Lineup
from formula_assets.evaluation.retrieval import Evaluation
from formula_assets.evaluation.significance import (
    Comparison,
    best_method,
    comparison_pairs,
    comparisons,
    holm,
    significance,
    significance_table,
)
from formula_assets.methods import registry

LINEUP = registry.lineup()


def test_holm_by_hand() -> None:
    # sorted: 0.01·4 = 0.04, 0.03·3 = 0.09, 0.04·2 = 0.08 → 0.09 (monotone), 0.20·1 = 0.20
    assert holm([0.01, 0.04, 0.03, 0.20]) == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == []


def test_the_family_when_the_ensemble_is_best() -> None:
    pairs = comparison_pairs(ENSEMBLE, LINEUP)
    assert len(pairs) == len(set(pairs))
    assert LINEUP.baselines == ("bm25", "sbert_no_cl")
    for method in ("graph_text_cl", "sbert_dual_cl", ENSEMBLE):
        for baseline in LINEUP.baselines:
            assert (method, baseline) in pairs
    assert {(ENSEMBLE, "graph_text_cl"), (ENSEMBLE, "sbert_dual_cl")} <= set(pairs)
    assert ("graph_text_cl", "sbert_dual_cl") in pairs
    # each trained method and the ensemble meet both baselines; the ensemble meets every
    # trained method, and each trained method those before it
    trained, baselines = len(LINEUP.trained), len(LINEUP.baselines)
    assert len(pairs) == (trained + 1) * baselines + trained + trained * (trained - 1) // 2


def test_the_family_when_a_single_method_is_best() -> None:
    pairs = comparison_pairs("sbert_dual_cl", LINEUP)
    assert {("sbert_dual_cl", m) for m in LINEUP.names if m != "sbert_dual_cl"} <= set(pairs)


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def test_another_trained_method_is_compared_with_the_trained_ones_before_it() -> None:
    """The family follows the lineup: a third trained method meets both baselines and each
    trained method before it."""
    lineup = Lineup(
        methods=(*LINEUP.methods, Named("toy")),
        trained=(*LINEUP.trained, "toy"),
        members=LINEUP.members,
    )
    pairs = comparison_pairs(ENSEMBLE, lineup)
    added = set(pairs) - set(comparison_pairs(ENSEMBLE, LINEUP))
    assert added == {("toy", "bm25"), ("toy", "sbert_no_cl")} | {(t, "toy") for t in LINEUP.trained}
    assert {("graph_text_cl", "toy"), ("sbert_dual_cl", "toy")} <= added


def evaluation_with(means: dict[str, float], n: int = 40, folds: int = 5) -> Evaluation:
    rng = np.random.default_rng(0)
    ranks = {}
    for fold in range(1, folds + 1):
        for method in LINEUP.names:
            for direction in DIRECTIONS:
                noise = rng.uniform(-0.05, 0.05, size=n)
                ranks[(fold, method, direction)] = np.clip(means[method] + noise, 0, 1)
    return Evaluation(scores=pa.table({}), reciprocal_ranks=ranks)


MEANS = {
    "bm25": 0.05, "sbert_no_cl": 0.2, "graph_text_cl": 0.4, "sbert_dual_cl": 0.5,
    "sbert_finetuned_cl": 0.3, "bag_dual_cl": 0.25, "symbol_lexicon": 0.35,
}  # fmt: skip


def test_best_method_is_the_highest_mean_reciprocal_rank() -> None:
    assert best_method(evaluation_with({**MEANS, ENSEMBLE: 0.6}), LINEUP) == ENSEMBLE
    assert best_method(evaluation_with({**MEANS, ENSEMBLE: 0.45}), LINEUP) == "sbert_dual_cl"


def test_significance_of_clear_and_absent_differences() -> None:
    evaluation = evaluation_with({**MEANS, ENSEMBLE: 0.6})
    tests = significance(evaluation, LINEUP)
    assert len(tests) == 2 * len(comparison_pairs(ENSEMBLE, LINEUP))
    by_pair = {(c.method, c.baseline, c.direction): c for c in tests}
    clear = by_pair[(ENSEMBLE, "graph_text_cl", DIRECTIONS[0])]
    assert clear.mean_rr_difference == pytest.approx(0.2, abs=0.01)
    assert clear.holm_p < 1e-10 and clear.fold_t_p < 1e-3
    assert all(c.wilcoxon_p <= c.holm_p for c in tests)
    same = evaluation_with({**MEANS, ENSEMBLE: 0.6})
    for key in list(same.reciprocal_ranks):
        if key[1] == "sbert_dual_cl":
            same.reciprocal_ranks[key] = same.reciprocal_ranks[(key[0], "graph_text_cl", key[2])]
    tie = {(c.method, c.baseline): c for c in significance(same, LINEUP)}[
        ("graph_text_cl", "sbert_dual_cl")
    ]
    assert tie.wilcoxon_p == 1.0 and tie.mean_rr_difference == 0.0


def test_comparisons_round_trip_through_json_metadata() -> None:
    from dataclasses import asdict

    c = Comparison("a", "b", DIRECTIONS[0], 0.1, 0.01, 0.02, 0.03)
    assert Comparison(**asdict(c)) == c


def test_comparisons_round_trip_through_their_table() -> None:
    """`significance_tests` holds every field, NaN (a t-test over one fold) included."""
    tests = [
        Comparison("a", "b", DIRECTIONS[0], 0.1, 0.01, float("nan"), 0.03),
        Comparison("c", "d", DIRECTIONS[1], -0.2, 0.5, 0.25, 1.0),
    ]
    table = significance_table(tests)
    assert table.column_names == [
        "method",
        "baseline",
        "direction",
        "mean_rr_difference",
        "wilcoxon_p",
        "fold_t_p",
        "holm_p",
    ]
    back = comparisons(table)
    assert back[1] == tests[1]
    assert np.isnan(back[0].fold_t_p) and back[0].holm_p == 0.03
    assert comparisons(significance_table([])) == []


def test_holm_caps_products_above_one() -> None:
    # 0.6·2 = 1.2 → 1, then max(1, 0.7·1) = 1
    assert holm([0.6, 0.7]) == [1.0, 1.0]
    assert holm([0.3, 0.7]) == pytest.approx([0.6, 0.7])


def two_method_evaluation(a: list[list[float]], b: list[list[float]]) -> Evaluation:
    """Every method scores `b`'s reciprocal ranks, except graph_text_cl, which scores `a`'s
    (one list of query values per fold), in both directions."""
    ranks = {}
    for fold, (fa, fb) in enumerate(zip(a, b, strict=True), start=1):
        for method in LINEUP.names:
            for direction in DIRECTIONS:
                values = fa if method == "graph_text_cl" else fb
                ranks[(fold, method, direction)] = np.array(values)
    return Evaluation(scores=pa.table({}), reciprocal_ranks=ranks)


def pair(evaluation: Evaluation) -> Comparison:
    found = {(c.method, c.baseline, c.direction): c for c in significance(evaluation, LINEUP)}
    return found[("graph_text_cl", "sbert_dual_cl", DIRECTIONS[0])]


def test_the_fold_t_test_needs_two_folds_whose_differences_vary() -> None:
    from scipy import stats

    # two folds, differences 0.25 and 0.5: the paired t-test over the fold means
    two = pair(two_method_evaluation([[0.5, 1.0], [1.0, 1.0]], [[0.25, 0.75], [0.5, 0.5]]))
    expected = stats.ttest_rel([0.75, 1.0], [0.5, 0.5]).pvalue
    assert two.fold_t_p == pytest.approx(expected) and 0 < two.fold_t_p < 1
    assert two.mean_rr_difference == pytest.approx((0.25 + 0.25 + 0.5 + 0.5) / 4)
    # three folds all better by exactly 0.25: no variance, no t-test (not p = 0)
    same = [[0.5, 0.75], [0.25, 0.5], [1.0, 0.75]]
    shifted = [[x - 0.25 for x in fold] for fold in same]
    assert np.isnan(pair(two_method_evaluation(same, shifted)).fold_t_p)
    # one fold: nothing to pair over
    assert np.isnan(pair(two_method_evaluation([[0.5, 1.0]], [[0.25, 0.5]])).fold_t_p)


def test_holm_values_follow_their_comparisons() -> None:
    """Each comparison's adjusted p is Holm's value of its own Wilcoxon p in the family."""
    tests = significance(evaluation_with({**MEANS, ENSEMBLE: 0.6}), LINEUP)
    assert [c.holm_p for c in tests] == holm([c.wilcoxon_p for c in tests])


def test_a_best_method_named_after_the_ensemble_meets_every_other_method() -> None:
    """Only the ensemble is compared with its members alone; any other best method, whatever
    its name sorts like, is compared with every other row."""
    lineup = Lineup(
        methods=(*LINEUP.methods, Named("zeta")),
        trained=(*LINEUP.trained, "zeta"),
        members=LINEUP.members,
    )
    pairs = comparison_pairs("zeta", lineup)
    assert {("zeta", m) for m in lineup.names if m != "zeta"} <= set(pairs)
    assert ("zeta", "zeta") not in pairs


def test_a_method_worse_on_every_query_is_tested_not_tied() -> None:
    worse = pair(two_method_evaluation([[0.25] * 10, [0.25] * 10], [[0.5] * 10, [0.75] * 10]))
    assert worse.mean_rr_difference < 0 and worse.wilcoxon_p < 0.01
