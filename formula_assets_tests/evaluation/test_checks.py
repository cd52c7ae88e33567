"""The rules behind `retrieval_scores`' checks, on hand-made score tables."""

import pyarrow as pa
import pytest

from formula_assets.core.protocol import DIRECTIONS
from formula_assets.evaluation.checks import (
    required_recall_at_10,
    scores_beat_chance,
    scores_complete,
    scores_consistent,
)


def row(fold=1, method="m", direction=DIRECTIONS[0], **values) -> dict:
    base = {"recall_at_1": 0.2, "recall_at_5": 0.4, "recall_at_10": 0.5, "mrr": 0.3}
    return {"fold": fold, "method": method, "direction": direction, "candidates": 352} | {
        **base,
        **values,
    }


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows)


def full(methods=("a", "b"), folds=(1, 2, 3)) -> list[dict]:
    return [row(f, m, d) for f in folds for m in methods for d in DIRECTIONS]


def test_complete_means_every_fold_method_and_direction_once() -> None:
    result = scores_complete(table(full()), ["a", "b"], folds=(1, 2, 3))
    assert result.passed and result.description == "12 fold × method × direction rows"
    assert result.metadata == {"missing": [], "doubled": []}
    short = full()[1:]
    result = scores_complete(table(short), ["a", "b"], folds=(1, 2, 3))
    assert not result.passed and result.description == "1 rows missing, 0 doubled"
    assert result.metadata["missing"] == [str((1, "a", DIRECTIONS[0]))]
    doubled = full() + full()[:1]
    result = scores_complete(table(doubled), ["a", "b"], folds=(1, 2, 3))
    assert not result.passed and result.metadata["doubled"] == [str((1, "a", DIRECTIONS[0]))]
    # a method of the lineup with no row at all, and the published five folds by default
    assert not scores_complete(table(full()), ["a", "b", "c"], folds=(1, 2, 3)).passed
    assert not scores_complete(table(full()), ["a", "b"]).passed
    assert scores_complete(table(full(folds=(1, 2, 3, 4, 5))), ["a", "b"]).passed


@pytest.mark.parametrize(
    "values",
    [
        {"recall_at_1": 0.0, "recall_at_5": 0.0, "recall_at_10": 0.0, "mrr": 0.0},
        {"recall_at_1": 1.0, "recall_at_5": 1.0, "recall_at_10": 1.0, "mrr": 1.0},
        {"recall_at_1": 0.3, "recall_at_5": 0.3, "recall_at_10": 0.3},
    ],
)
def test_consistent_rows_at_the_bounds_pass(values: dict) -> None:
    result = scores_consistent(table([row(**values)]))
    assert result.passed and result.description == "R@1 ≤ R@5 ≤ R@10 ≤ 1 everywhere"


@pytest.mark.parametrize(
    "values",
    [
        {"recall_at_1": -0.1},
        {"recall_at_1": 0.45},  # above R@5
        {"recall_at_5": 0.6},  # above R@10
        {"recall_at_10": 1.1},
        {"mrr": -0.01},
        {"mrr": 1.01},
    ],
)
def test_inconsistent_rows_are_named(values: dict) -> None:
    result = scores_consistent(table([row(), row(fold=2, method="x", **values)]))
    assert not result.passed and result.description == "1 inconsistent rows"
    assert result.metadata["sample"] == [f"fold 2 x {DIRECTIONS[0]}"]


def test_the_required_recall_is_three_times_chance_capped_for_small_pools() -> None:
    assert required_recall_at_10(352) == pytest.approx(3 * 10 / 352)
    assert required_recall_at_10(352, margin=2.0) == pytest.approx(2 * 10 / 352)
    # 15 candidates: chance 2/3; 3× would be 2, capped halfway to 1: 5/6
    assert required_recall_at_10(15) == pytest.approx(5 / 6)
    # ten candidates or fewer: chance is 1, and so is the requirement
    assert required_recall_at_10(10) == 1.0
    assert required_recall_at_10(0) == 1.0


def test_beating_chance_is_judged_for_the_judged_methods_only() -> None:
    need = required_recall_at_10(352)
    at = row(method="trained", recall_at_1=0.0, recall_at_5=0.0, recall_at_10=need)
    below = row(method="trained", recall_at_1=0.0, recall_at_5=0.0, recall_at_10=need - 1e-6)
    baseline = row(method="bm25", recall_at_1=0.0, recall_at_5=0.0, recall_at_10=0.0)
    result = scores_beat_chance(table([at, baseline]), ["trained"])
    assert result.passed and result.description == "every trained method ≥ 3× chance R@10"
    result = scores_beat_chance(table([below, baseline]), ["trained"])
    assert not result.passed and result.description == "1 rows within 3× of chance"
    assert result.metadata["weak"] == [
        f"fold 1 trained {DIRECTIONS[0]}: R@10 {need - 1e-6:.3f} < {need:.3f} (chance 0.028)"
    ]
    assert not scores_beat_chance(table([baseline]), ["bm25"]).passed
    assert scores_beat_chance(table([below]), ["trained"], margin=2.0).passed
