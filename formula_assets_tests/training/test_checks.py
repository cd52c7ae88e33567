"""The rule of `cv_folds`' check: every formula in exactly one of the published folds."""

import pyarrow as pa

from formula_assets.training.checks import folds_valid


def folds(pairs: list[tuple[str, int]]) -> pa.Table:
    return pa.table({"qid": [q for q, _ in pairs], "fold": [f for _, f in pairs]})


FORMULAE = pa.table({"qid": ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"]})
GOOD = [("Q1", 1), ("Q2", 2), ("Q3", 3), ("Q4", 4), ("Q5", 5), ("Q6", 1)]


def test_disjoint_folds_covering_every_formula_pass() -> None:
    result = folds_valid(folds(GOOD), FORMULAE)
    assert result.passed and result.description == "6 formulae in 5 disjoint folds"
    assert result.metadata == {
        "fold_sizes": {"1": 2, "2": 1, "3": 1, "4": 1, "5": 1},
        "sample": [],
    }


def test_a_formula_in_two_folds_or_in_none_is_named() -> None:
    twice = folds_valid(folds([*GOOD, ("Q2", 3)]), FORMULAE)
    assert not twice.passed and twice.description == "1 formulae in more than one fold"
    assert twice.metadata["sample"] == ["Q2"]
    lost = folds_valid(folds(GOOD[:-1]), FORMULAE)
    assert not lost.passed and lost.description == "1 formulae without a fold"
    assert lost.metadata["sample"] == ["Q6"]


def test_folds_are_the_published_ones_and_none_is_empty() -> None:
    outside = folds_valid(folds([*GOOD[:-1], ("Q6", 6)]), FORMULAE)
    assert not outside.passed and outside.description == "folds outside (1, 2, 3, 4, 5): [6]"
    empty = folds_valid(folds([(q, 1 if f == 5 else f) for q, f in GOOD]), FORMULAE)
    assert not empty.passed and empty.description == "empty folds: [5]"
    # another protocol's folds
    assert folds_valid(
        folds([(q, 1 + i % 2) for i, (q, _) in enumerate(GOOD)]), FORMULAE, (1, 2)
    ).passed


def test_every_problem_is_said_at_once() -> None:
    bad = folds([("Q1", 1), ("Q1", 2), ("Q2", 7), ("Q3", 3), ("Q4", 4)])
    result = folds_valid(bad, FORMULAE)
    assert result.description == (
        "1 formulae in more than one fold; 2 formulae without a fold; "
        "folds outside (1, 2, 3, 4, 5): [7]; empty folds: [5]"
    )
    assert result.metadata["sample"] == ["Q1", "Q5", "Q6"]
