"""`audit.table`'s words and rules on hand-made rows: the finding an editor reads, the
suggested concepts, the editors' tab-separated line and the two checks' verdicts."""

from typing import Any

import pyarrow as pa
import pytest

from formula_assets.audit.table import (
    AUDIT_SCHEMA,
    finding,
    one_row_per_item,
    ranks_in_range,
    review_queue,
    suggested,
    tsv_rows,
)
from formula_assets_tests.support.audit_rows import lead

LABELS = {"Q2": "mass", "Q3": None}


def row(**changes: Any) -> dict[str, Any]:
    """A scored item whose annotation fits: nothing to say about it."""
    base: dict[str, Any] = {
        "qid": "Q1",
        "label": "energy",
        "url": "https://www.wikidata.org/wiki/Q1",
        "fold": 1,
        "scored": True,
        "remark": None,
        "num_concepts": 2,
        "pool": 20,
        "rank_formula_to_annotation": 1,
        "rank_annotation_to_formula": 2,
        "margin_formula_to_annotation": -0.1,
        "margin_annotation_to_formula": -0.2,
        "suspicion": 0.25,
        "concept_fit": [
            {"qid": "Q7", "label": "speed", "percentile": 0.4},
            {"qid": "Q8", "label": "time", "percentile": 0.1},
        ],
        "preferred_annotations": ["Q2"],
        "preferred_formulae": [],
        "missing_concepts": [],
        "unannotated_symbols": [],
        "finding": "",
        "priority": 0.0,
        "kind": None,
        "leads": [],
    }
    return base | changes


def fit(qid: str, label: str | None, percentile: float) -> dict[str, Any]:
    return {"qid": qid, "label": label, "percentile": percentile}


def suggestion(qid: str, label: str | None, symbol: str | None) -> dict[str, Any]:
    return {"qid": qid, "label": label, "score": 0.5, "symbol": symbol}


def table(*rows: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=AUDIT_SCHEMA)


# ---------------------------------------------------------------- finding


def test_a_consistent_item_looks_consistent() -> None:
    assert finding(row(), LABELS) == "looks consistent"


def test_an_unscored_item_says_why() -> None:
    assert finding(row(scored=False, remark="no formula"), LABELS) == "not audited: no formula"


def test_an_item_without_concepts_says_so() -> None:
    assert finding(row(num_concepts=0, concept_fit=[]), LABELS) == "no concepts annotated"
    assert finding(row(num_concepts=0, concept_fit=None), LABELS) == "no concepts annotated"


def test_concepts_from_the_worse_half_are_named_worst_first_three_at_most() -> None:
    fits = [fit("Q4", "a", 0.9), fit("Q5", None, 0.5), fit("Q6", "c", 0.7), fit("Q9", "d", 0.6)]
    assert finding(row(concept_fit=fits), LABELS) == (
        "concepts its formula relates to less than most of the vocabulary: "
        "a (Q4, 90%), Q5 (Q5, 50%), c (Q6, 70%)"
    )
    assert finding(row(concept_fit=[fit("Q4", "a", 0.49)]), LABELS) == "looks consistent"


@pytest.mark.parametrize(
    ("margin", "rank", "said"),
    [(0.1, 11, True), (0.1, 10, False), (0.0, 11, False), (-0.1, 50, False), (0.1, 12, True)],
)
def test_another_annotation_fitting_better_is_said_when_it_wins_and_ours_is_past_ten(
    margin: float, rank: int, said: bool
) -> None:
    words = finding(
        row(margin_formula_to_annotation=margin, rank_formula_to_annotation=rank), LABELS
    )
    expected = f"its formula fits the annotation of mass (Q2) better (own annotation ranks {rank})"
    assert words == (expected if said else "looks consistent")


def test_an_unlabelled_preferred_item_is_named_by_its_qid() -> None:
    words = finding(
        row(
            margin_formula_to_annotation=0.2,
            rank_formula_to_annotation=15,
            preferred_annotations=["Q3"],
        ),
        LABELS,
    )
    assert words.startswith("its formula fits the annotation of (no label) (Q3) better")


def test_the_finding_joins_every_part_in_order() -> None:
    missing = [suggestion(f"Q{20 + i}", f"c{i}", None) for i in range(4)]
    words = finding(
        row(
            num_concepts=0,
            concept_fit=[fit("Q4", "a", 0.8)],
            margin_formula_to_annotation=0.3,
            rank_formula_to_annotation=12,
            missing_concepts=missing,
        ),
        LABELS,
    )
    assert words.split("; ") == [
        "no concepts annotated",
        "concepts its formula relates to less than most of the vocabulary: a (Q4, 80%)",
        "its formula fits the annotation of mass (Q2) better (own annotation ranks 12)",
        "may lack: c0 (Q20), c1 (Q21), c2 (Q22)",  # the first three
    ]


# ---------------------------------------------------------------- suggested


def test_suggested_names_label_qid_and_symbol_up_to_top() -> None:
    missing = [
        suggestion("Q10", "force", "F"),
        suggestion("Q11", None, None),
        suggestion("Q12", "area", "A"),
    ]
    assert suggested(row(missing_concepts=missing), 2) == "force (Q10) for F, Q11 (Q11)"
    assert suggested(row(missing_concepts=missing), 5) == (
        "force (Q10) for F, Q11 (Q11), area (Q12) for A"
    )
    assert suggested(row(missing_concepts=None), 3) == ""


# ---------------------------------------------------------------- the editors' lines


def test_tsv_rows_list_the_most_suspicious_scored_rows_in_stored_order() -> None:
    missing = [suggestion(f"Q{30 + i}", f"s{i}", None) for i in range(6)]
    stored = table(
        row(qid="Q1", suspicion=0.9, missing_concepts=missing, finding="bad"),
        row(qid="Q2", label=None, suspicion=0.123456, finding="so-so"),
        row(qid="Q3", suspicion=None, num_concepts=0, concept_fit=[]),
        row(qid="Q4", suspicion=0.1),
    )
    lines = tsv_rows(stored, 2)
    assert [line[0] for line in lines] == ["Q1", "Q2"]
    assert lines[0] == [
        "Q1", "energy", "https://www.wikidata.org/wiki/Q1", "", "bad",
        "s0 (Q30), s1 (Q31), s2 (Q32), s3 (Q33), s4 (Q34)",  # five at most
        "", "", "0.9000", "1", "2",
    ]  # fmt: skip
    assert lines[1][1] == "" and lines[1][8] == "0.1235"
    assert [line[0] for line in tsv_rows(stored, 10)] == ["Q1", "Q2", "Q4"]


def test_tsv_rows_give_each_lead_a_line_with_its_kind_and_quickstatements() -> None:
    addition = 'Q5\tP527\tQ11\tP7235\t"m"'
    leads = [
        lead("unannotated_symbol", "m has no concept", 0.8, suggestion="Q11",
             suggestion_label="mass", quickstatements=addition),
        lead("two_concepts_on_symbol", "E carries two concepts", 0.2),
    ]  # fmt: skip
    stored = table(
        row(qid="Q5", suspicion=None, num_concepts=0, concept_fit=[], leads=leads, priority=0.8),
        row(qid="Q6", suspicion=0.7, finding="doubted"),
    )
    lines = tsv_rows(stored, 1)  # the first item: its two leads
    assert [line[3] for line in lines] == ["unannotated_symbol", "two_concepts_on_symbol"]
    assert lines[0][4:8] == ["m has no concept", "mass (Q11)", 'Q5|P527|Q11|P7235|"m"', "0.800"]
    assert lines[0][8] == "" and lines[1][5:7] == ["", ""]
    assert [line[0] for line in tsv_rows(stored, 2)] == ["Q5", "Q5", "Q6"]


def test_a_finding_spells_out_the_two_strongest_leads_and_counts_the_rest() -> None:
    leads = [lead("unannotated_symbol", f"lead {n}", 1.0 - n / 10) for n in range(4)]
    assert finding(row(leads=leads), LABELS) == "lead 0; lead 1 (and 2 more leads)"
    assert finding(row(leads=leads[:3]), LABELS) == "lead 0; lead 1 (and 1 more lead)"
    assert finding(row(leads=leads[:1], scored=False, remark="no fold"), LABELS) == "lead 0"


def test_the_review_queue_has_a_finding_per_lead_then_the_doubted_items() -> None:
    leads = [
        lead("doubted_concept", "a is doubted", 0.5, symbol="a", items=["Q7"]),
        lead("unannotated_symbol", "m has no concept", 0.4, quickstatements="Q5\tP527\tQ11"),
    ]
    stored = table(
        row(qid="Q5", leads=leads, priority=0.5),
        row(qid="Q6", suspicion=0.7, finding="doubted", preferred_annotations=["Q9"]),
        row(qid="Q8", scored=False, suspicion=None, remark="no fold"),
    )
    queue = review_queue(stored)
    assert [(f["qid"], f["kind"]) for f in queue] == [
        ("Q5", "doubted_concept"), ("Q5", "unannotated_symbol"), ("Q6", None),
    ]  # fmt: skip
    assert queue[0]["symbol"] == "a" and queue[0]["evidence"] == ["Q7"]
    assert queue[0]["quickstatements"] == [] and queue[1]["quickstatements"] == ["Q5\tP527\tQ11"]
    assert queue[2]["finding"] == "doubted" and queue[2]["evidence"] == ["Q9"]


# ---------------------------------------------------------------- checks


def test_one_row_per_item_passes_and_counts() -> None:
    outcome = one_row_per_item(table(row(qid="Q1"), row(qid="Q2", scored=False)), ["Q1", "Q2"])
    assert outcome.passed
    assert outcome.description == "one row per item (2)"
    assert outcome.metadata == {"rows": 2, "scored": 1}


def test_one_row_per_item_names_duplicated_missing_and_extra() -> None:
    outcome = one_row_per_item(table(row(qid="Q1"), row(qid="Q1"), row(qid="Q9")), ["Q1", "Q2"])
    assert not outcome.passed
    assert outcome.description == "duplicated: Q1; missing: Q2; extra: Q9"


def test_ranks_in_range_passes_at_the_bounds() -> None:
    rows = [
        row(rank_formula_to_annotation=1, rank_annotation_to_formula=20, suspicion=0.0),
        row(qid="Q2", suspicion=1.0),
        row(qid="Q3", suspicion=None, concept_fit=[], num_concepts=0),
        row(qid="Q4", scored=False, remark="no formula", rank_formula_to_annotation=None),
    ]
    outcome = ranks_in_range(table(*rows))
    assert outcome.passed, outcome.description
    assert outcome.description == "ranks within the candidate pool, suspicion within 0 … 1"
    assert outcome.metadata == {"problems": []}


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"rank_formula_to_annotation": 0}, "Q1: rank_formula_to_annotation 0 of 20"),
        ({"rank_annotation_to_formula": 21}, "Q1: rank_annotation_to_formula 21 of 20"),
        ({"rank_formula_to_annotation": None}, "Q1: rank_formula_to_annotation None of 20"),
        ({"pool": None}, "Q1: rank_formula_to_annotation 1 of None"),
        ({"suspicion": 1.5}, "Q1: suspicion 1.5 for 2"),
        ({"suspicion": -0.5}, "Q1: suspicion -0.5 for 2"),
        ({"suspicion": None}, "Q1: suspicion None for 2"),
        ({"concept_fit": [], "suspicion": 0.3}, "Q1: suspicion 0.3 for 2"),
        ({"scored": False, "remark": None}, "Q1: not scored, no reason"),
    ],
)
def test_ranks_in_range_names_each_problem(changes: dict[str, Any], problem: str) -> None:
    outcome = ranks_in_range(table(row(), row(qid="Q2"), row(**changes)))
    assert not outcome.passed
    assert outcome.description.endswith(f": {problem}")
    assert outcome.metadata["problems"][0] == problem


def test_ranks_in_range_lists_twenty_problems_at_most() -> None:
    rows = [row(qid=f"Q{i}", rank_formula_to_annotation=0) for i in range(25)]
    outcome = ranks_in_range(table(*rows))
    assert outcome.description.startswith("25 problem(s): Q0:")
    assert len(outcome.metadata["problems"]) == 20
