"""The rules of `wikidata_formulae`' checks and the guard against a broken pull, on
hand-made tables."""

import pyarrow as pa
import pytest

from formula_assets.ingest.checks import (
    has_concepts,
    mathml_present,
    row_count_floor,
    shrinkage_problem,
    unique_qids,
)

CONCEPT = pa.struct([("qid", pa.string())])


def items(qids, mathml=None, concepts=None) -> pa.Table:
    n = len(qids)
    return pa.table(
        {
            "qid": pa.array(qids, pa.string()),
            "mathml": pa.array(mathml or ["<math/>"] * n, pa.string()),
            "concepts": pa.array(concepts or [[{"qid": "Q9"}]] * n, pa.list_(CONCEPT)),
        }
    )


def test_every_qid_once() -> None:
    ok = unique_qids(items(["Q1", "Q2"]))
    assert ok.passed and ok.description == "every qid appears once"
    twice = unique_qids(items(["Q1", "Q2", "Q1", "Q2", "Q3"]))
    assert not twice.passed and twice.description == "2 duplicated, 0 null qids"
    assert twice.metadata == {"duplicates": 2, "null_qids": 0, "sample": ["Q1", "Q2"]}
    null = unique_qids(items(["Q1", None]))
    assert not null.passed and null.description == "0 duplicated, 1 null qids"


@pytest.mark.parametrize("bad", [None, "", "  \n "])
def test_an_item_without_mathml_is_named(bad: str | None) -> None:
    ok = mathml_present(items(["Q1"]))
    assert ok.passed and ok.description == "every item has MathML"
    result = mathml_present(items(["Q1", "Q2"], mathml=["<math/>", bad]))
    assert not result.passed and result.description == "1 items without MathML"
    assert result.metadata == {"missing": 1, "sample": ["Q2"]}


def test_an_item_without_concepts_is_counted_with_its_share() -> None:
    ok = has_concepts(items(["Q1"]))
    assert ok.passed and ok.description == "every item links at least one concept"
    result = has_concepts(
        items(["Q1", "Q2", "Q3", "Q4"], concepts=[[{"qid": "Q9"}], [], None, [{"qid": "Q8"}]])
    )
    assert not result.passed and result.description == "2 items (50.0%) link no concept"
    assert result.metadata == {"without_concepts": 2, "share": 0.5, "sample": ["Q2", "Q3"]}
    empty = has_concepts(items([]))
    assert empty.passed and empty.metadata["share"] == 0.0


def test_the_row_floor_is_inclusive() -> None:
    table = items(["Q1", "Q2", "Q3"])
    assert row_count_floor(table, 3).passed
    low = row_count_floor(table, 4)
    assert not low.passed and low.description == "3 rows (floor 4)"
    assert low.metadata == {"rows": 3, "floor": 4}


def test_a_pull_that_shrank_too_much_is_refused_with_the_reason() -> None:
    assert shrinkage_problem(500, 1000, 0.5) is None  # exactly half: kept
    assert shrinkage_problem(499, 1000, 0.5) == (
        "the source returned 499 items, under 50% of the last good pull's 1,000"
    )
    assert shrinkage_problem(10, None, 0.5) is None  # nothing to compare with
    assert shrinkage_problem(10, 0, 0.5) is None
    assert shrinkage_problem(0, None, 0.5) == "the source returned no items"
    assert shrinkage_problem(0, 1758, 0.5, what="formulae") == (
        "the source returned no formulae (the last good pull had 1,758)"
    )
