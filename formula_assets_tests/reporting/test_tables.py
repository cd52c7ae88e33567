"""Tables 1 and 2, the significance tests and the annotation audit as rows of text."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from formula_assets.analysis.correspondence import METRICS_SCHEMA
from formula_assets.evaluation.retrieval import SCORE_SCHEMA
from formula_assets.evaluation.significance import Comparison
from formula_assets.reporting.tables import (
    AUDIT_COLUMNS,
    SIGNIFICANCE_COLUMNS,
    TABLE_1_COLUMNS,
    TABLE_2_COLUMNS,
    audit_rows,
    audit_summary,
    detail_note,
    significance_rows,
    table_1_rows,
    table_2_rows,
)

# --------------------------------------------------------------------------- detail notes


@pytest.mark.parametrize(
    ("detail", "note"),
    [
        ({"chance": 0.000123456}, "chance 0.0001"),
        ({"semantic_to_structural": 0.12346}, "reverse 0.1235"),
        ({"standard_error": 0.00456, "queries": 12345}, "SE 0.0046 over 12,345 queries"),
        ({"null_mean": 0.01234, "null_std": 0.5}, "null 0.0123 ± 0.5000"),
        ({"permutations": 10000}, "10,000 permutations"),
        ({"mantel_permutations": 999}, "Mantel test, 999 permutations"),
        ({"parametric_p_value": 0.000123}, "parametric p 1.2e-04"),
        ({"minimum": 0.851, "maximum": 0.9149}, "range 0.85–0.91"),
        ({"fit_fraction": 0.5}, "fit on 50%, correlated on the rest"),
        ({"meaning": "lower is closer"}, "lower is closer"),
        ({"pca_dimensions": 64}, "PCA to 64 dimensions"),
        ({"components": 10}, "10 components"),
        ({"formulae": 2500}, "2,500 formulae"),
        ({"formulae": 1200, "pairs": 719400}, "1,200 formulae (719,400 pairs)"),
    ],
)
def test_each_detail_a_reader_needs_is_one_note(detail: dict, note: str) -> None:
    assert detail_note("m", detail) == note


def test_a_detail_with_none_of_the_known_entries_says_nothing() -> None:
    assert detail_note("m", {}) == ""
    assert detail_note("m", {"seed": 3, "null_std": 0.1, "maximum": 1.0, "pairs": 4}) == ""


def test_a_standard_error_without_queries_is_left_out() -> None:
    """The error of a mean is meaningless without the number it is over."""
    assert detail_note("m", {"standard_error": 0.01}) == ""
    assert detail_note("m", {"standard_error": 0.01, "queries": 0}) == ""


def test_components_are_named_only_when_no_range_is_given() -> None:
    """CCA's range already says over how many components; a bare count would repeat it."""
    assert detail_note("cca", {"components": 10, "minimum": 0.8, "maximum": 0.9}) == (
        "range 0.80–0.90"
    )


def test_notes_are_joined_in_a_fixed_order() -> None:
    detail = {"formulae": 3, "chance": 0.5, "permutations": 2, "meaning": "x"}
    assert detail_note("m", detail) == "chance 0.5000; 2 permutations; x; 3 formulae"


# -------------------------------------------------------------------------------- Table 1


def _metrics(rows: list[tuple[str, float, str | None]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"metric": m, "value": v, "detail": d} for m, v, d in rows], schema=METRICS_SCHEMA
    )


def test_table_1_puts_ours_beside_the_paper() -> None:
    metrics = _metrics(
        [
            ("mean_cosine", 0.033149, json.dumps({"formulae": 1234})),
            ("cca_top10", 0.5, None),
            ("something_new", 1.0, ""),
        ]
    )
    rows = table_1_rows(metrics)
    assert all(len(r) == len(TABLE_1_COLUMNS) for r in rows)
    assert rows == [
        ["mean_cosine", "0.0331", "0.0847", "1,234 formulae"],
        ["cca_top10", "0.5000", ".85–.91", ""],  # the paper gives a range as text
        ["something_new", "1.0000", "—", ""],  # the paper has no such metric
    ]


def test_table_1_of_no_metrics_is_empty() -> None:
    assert table_1_rows(_metrics([])) == []


# -------------------------------------------------------------------------------- Table 2


def _score(fold: int, method: str, direction: str, r1: float, r5: float, r10: float, mrr: float):
    return {
        "fold": fold,
        "method": method,
        "direction": direction,
        "recall_at_1": r1,
        "recall_at_5": r5,
        "recall_at_10": r10,
        "mrr": mrr,
        "candidates": 100,
    }


def test_table_2_gives_mean_and_std_over_folds_and_the_papers_values() -> None:
    s2m, m2s = "syntactic_to_semantic", "semantic_to_syntactic"
    scores = pa.Table.from_pylist(
        [
            # two folds: means 0.2, 0.4, 0.6, 0.3; sample stds √0.02 ≈ 0.141, 0, 0.1·√2, 0
            _score(1, "bm25", s2m, 0.1, 0.4, 0.5, 0.3),
            _score(2, "bm25", s2m, 0.3, 0.4, 0.7, 0.3),
            _score(1, "new_method", m2s, 0.25, 0.5, 0.75, 0.125),
        ],
        schema=SCORE_SCHEMA,
    )
    rows = table_2_rows(scores)
    assert all(len(r) == len(TABLE_2_COLUMNS) for r in rows)
    assert rows == [
        [
            "syntactic to semantic",
            "bm25",
            "0.200 ± 0.141",
            "0.400 ± 0.000",
            "0.600 ± 0.141",
            "0.300 ± 0.000",
            "0.011 / 0.030 / 0.052 / 0.033",
        ],
        [
            "semantic to syntactic",
            "new_method",
            "0.250 ± 0.000",  # one fold: no spread
            "0.500 ± 0.000",
            "0.750 ± 0.000",
            "0.125 ± 0.000",
            "—",
        ],
    ]


# ---------------------------------------------------------------------------- significance


def test_significance_rows_sign_the_difference_and_round_p_values() -> None:
    comparisons = [
        Comparison(
            "graph_text_cl",
            "bm25",
            "syntactic_to_semantic",
            mean_rr_difference=0.25,
            wilcoxon_p=1.234e-5,
            fold_t_p=0.0321,
            holm_p=4e-6,
        ),
        Comparison(
            "bm25",
            "sbert_no_cl",
            "semantic_to_syntactic",
            mean_rr_difference=-0.1234,
            wilcoxon_p=0.5,
            fold_t_p=0.75,
            holm_p=1.0,
        ),
    ]
    rows = significance_rows(comparisons)
    assert all(len(r) == len(SIGNIFICANCE_COLUMNS) for r in rows)
    assert rows == [
        [
            "graph_text_cl",
            "bm25",
            "syntactic to semantic",
            "+0.250",
            "1.2e-05",
            "4.0e-06",
            "3.2e-02",
        ],
        ["bm25", "sbert_no_cl", "semantic to syntactic", "-0.123", "5.0e-01", "1.0e+00", "7.5e-01"],
    ]


# ------------------------------------------------------------------------- annotation audit


def _item(
    n: int, suspicion: float | None, rank: int | None, label: str | None = "x", kind: str = ""
) -> dict:
    return {
        "url": f"http://www.wikidata.org/entity/Q{n}",
        "label": label,
        "scored": suspicion is not None,
        "suspicion": suspicion,
        "rank_formula_to_annotation": rank,
        "rank_annotation_to_formula": None if rank is None else rank + 1,
        "finding": f"finding {n}",
        "kind": kind or None,
        "leads": [{"kind": kind}] if kind else [],
    }


def test_the_audit_summary_counts_items_with_leads_and_scored_items() -> None:
    audit = pa.Table.from_pylist(
        [_item(1, 0.9, 1, kind="swapped_symbols"), _item(2, 0.8, 3), _item(3, 0.7, 1),
         _item(4, None, None, kind="unannotated_symbol")]
    )  # fmt: skip
    summary = audit_summary(audit)
    assert summary.startswith("2 of 4 formula items have a lead for editors")
    assert "; 3 are scored by the fold models" in summary


def test_audit_rows_number_the_queue_in_stored_order() -> None:
    audit = pa.Table.from_pylist(
        [_item(5, None, None, kind="unannotated_symbol"), _item(1, 0.98765, 4, label=None),
         _item(2, None, None), _item(3, 0.5, 1, label="E=mc²")]
    )  # fmt: skip
    rows = audit_rows(audit)
    assert all(len(r) == len(AUDIT_COLUMNS) for r in rows)
    assert rows == [
        ["1", "http://www.wikidata.org/entity/Q5", "x", "unannotated_symbol", "finding 5", ""],
        ["2", "http://www.wikidata.org/entity/Q1", "", "", "finding 1", "0.988"],
        ["3", "http://www.wikidata.org/entity/Q3", "E=mc²", "", "finding 3", "0.500"],
    ]


def test_audit_rows_show_the_ten_most_suspicious_unless_told() -> None:
    audit = pa.Table.from_pylist([_item(n, 1 - n / 100, n) for n in range(1, 13)])
    assert [r[0] for r in audit_rows(audit)] == [str(n) for n in range(1, 11)]
    assert [r[1][-2:] for r in audit_rows(audit, top=3)] == ["Q1", "Q2", "Q3"]
