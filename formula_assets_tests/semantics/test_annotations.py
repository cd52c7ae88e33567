"""Annotation texts: distinct, stripped, deterministic (paper §3.2's D_i)."""

from formula_assets.semantics.annotations import annotation_texts, build_annotations

ROW = {
    "qid": "Q1",
    "label": "  pH ",
    "description": "measure of acidity",
    "concepts": [
        {"qid": "Q2", "label": "hydronium ion", "description": "H3O+ ion"},
        {"qid": "Q3", "label": "common logarithm", "description": None},
        {"qid": "Q2", "label": "hydronium  ion", "description": "H3O+ ion"},  # again: same texts
        {"qid": "Q4", "label": "PH", "description": ""},  # case-insensitive duplicate of pH
    ],
    "unassigned_descriptions": ["logarithm with base 10"],
}


def test_distinct_stripped_texts_in_a_fixed_order() -> None:
    assert annotation_texts(ROW) == [
        "pH",
        "measure of acidity",
        "hydronium ion",
        "H3O+ ion",
        "common logarithm",
        "logarithm with base 10",
    ]


def test_same_row_same_texts_and_missing_fields() -> None:
    assert annotation_texts(dict(ROW)) == annotation_texts(ROW)
    assert annotation_texts({"qid": "Q9", "label": None, "description": None}) == []


def test_table() -> None:
    table = build_annotations([ROW, {"qid": "Q9", "label": "x", "concepts": []}])
    assert table.column("qid").to_pylist() == ["Q1", "Q9"]
    assert table.column("num_texts").to_pylist() == [6, 1]
