"""What the report says, built from small hand-made tables: its sections, figures and the
training curves of every fold model."""

from __future__ import annotations

import json

import pyarrow as pa

from formula_assets.evaluation.retrieval import SCORE_SCHEMA
from formula_assets.reporting import figures
from formula_assets.reporting.content import (
    CORRESPONDENCE_FIGURES,
    RECALL_BARS,
    TRAINING_CURVES,
    ReportInputs,
    TrainedSummary,
    build_report,
    training_curves,
)
from formula_assets.reporting.document import Figure, Heading, Paragraph, Table
from formula_assets_tests.training.descriptions import described

CCA, COSINE = CORRESPONDENCE_FIGURES  # the two figures of Table 1, in report order
CCA_PNG = b"\x89PNG\r\n\x1a\ncca"


def _history(*runs: list[float], with_run: bool = True) -> list[dict[str, float]]:
    return [
        {"epoch": epoch, "validation_mrr": mrr, **({"run": run} if with_run else {})}
        for run, values in enumerate(runs)
        for epoch, mrr in enumerate(values, 1)
    ]


def _inputs(audit: pa.Table | None = None, **changes: object) -> ReportInputs:
    scores = pa.Table.from_pylist(
        [
            {
                "fold": fold,
                "method": "bm25",
                "direction": direction,
                "recall_at_1": 0.1,
                "recall_at_5": 0.2,
                "recall_at_10": 0.3,
                "mrr": 0.15,
                "candidates": 10,
            }
            for fold in (1, 2)
            for direction in ("syntactic_to_semantic", "semantic_to_syntactic")
        ],
        schema=SCORE_SCHEMA,
    )
    inputs = ReportInputs(
        formulae=pa.table({"source": ["sparql", "sparql", "dump"]}),
        graphs=pa.table({"qid": ["Q1", "Q2"]}),
        rejected=pa.table({"qid": ["Q3"]}),
        folds=pa.table({"fold": [2, 1, 2], "fold_source": ["paper", "hash", "paper"]}),
        metrics=pa.table(
            {"metric": ["mean_cosine"], "value": [0.05], "detail": [json.dumps({"chance": 0.5})]}
        ),
        scores=scores,
        models=[TrainedSummary(described("bm25", 1), _history([0.1, 0.2]))],
        audit=audit,
        correspondence_figures={CCA: CCA_PNG},
    )
    for name, value in changes.items():
        setattr(inputs, name, value)
    return inputs


def _headings(blocks: list) -> list[str]:
    return [b.text for b in blocks if isinstance(b, Heading)]


def test_training_curves_draw_one_line_per_model_and_run_named_by_method_and_fold() -> None:
    """Models in (method, fold) order; a run is named only for a model of several, from 1."""
    models = [
        TrainedSummary(described("sbert_dual_cl", 2), _history([0.1, 0.2], with_run=False)),
        TrainedSummary(described("graph_text_cl", 1), _history([0.3, 0.4], [0.5])),
        TrainedSummary(described("sbert_dual_cl", 1), _history([0.6])),
    ]
    expected = {
        "graph_text_cl fold 1 run 1": [0.3, 0.4],
        "graph_text_cl fold 1 run 2": [0.5],
        "sbert_dual_cl fold 1": [0.6],
        "sbert_dual_cl fold 2": [0.1, 0.2],  # a history without runs is one run
    }
    drawn = training_curves(models)
    assert drawn.startswith(b"\x89PNG")
    assert drawn == figures.line_figure(
        expected, "epoch", "validation MRR", "validation MRR per epoch"
    )


def test_the_report_has_every_section_in_order() -> None:
    report = build_report(_inputs())
    assert _headings(report.blocks) == [
        "Data",
        "Settings",
        "Table 1 — raw correspondence",
        "Table 2 — cross-modal retrieval (mean ± std over 5 folds)",
        "Significance",
        "Versions",
    ]
    assert isinstance(report.blocks[0], Paragraph)


def test_the_data_table_counts_items_sources_and_folds() -> None:
    data = build_report(_inputs()).blocks[2]
    assert isinstance(data, Table)
    assert [list(r) for r in data.rows] == [
        ["formula items", "3"],
        ["source", "sparql (2), dump (1)"],
        ["parsed into operator trees", "2"],
        ["rejected by the parser", "1"],
        ["fold sizes", "1: 1, 2: 2"],
        ["folds from the paper's split", "2"],
    ]


def test_only_the_correspondence_figures_that_exist_are_shown_from_the_lake() -> None:
    report = build_report(_inputs())
    shown = [b for b in report.blocks if isinstance(b, Figure)]
    assert [(f.png, f.filename) for f in shown[:1]] == [
        (CCA_PNG, f"../figures/correspondence_metrics/{CCA}")
    ]
    assert all(COSINE not in f.filename for f in shown)
    assert [f.filename for f in shown[1:]] == [RECALL_BARS, TRAINING_CURVES]


def test_the_report_draws_its_own_figures_and_writes_them_beside_it() -> None:
    report = build_report(_inputs(correspondence_figures={}))
    shown = {b.filename: b.png for b in report.blocks if isinstance(b, Figure)}
    assert shown == report.figures
    assert set(report.figures) == {RECALL_BARS, TRAINING_CURVES}
    assert report.figures[TRAINING_CURVES] == training_curves(_inputs().models)


def test_the_annotation_audit_is_a_section_only_when_there_is_an_audit() -> None:
    audit = pa.Table.from_pylist(
        [
            {
                "url": "http://www.wikidata.org/entity/Q1",
                "label": "Ohm's law",
                "scored": True,
                "suspicion": 0.75,
                "rank_formula_to_annotation": 1,
                "rank_annotation_to_formula": 2,
                "finding": "V has no concept",
                "kind": "unannotated_symbol",
                "leads": [{"kind": "unannotated_symbol"}],
            }
        ]
    )
    blocks = build_report(_inputs(audit=audit)).blocks
    assert "Annotation audit" in _headings(blocks)
    at = _headings(blocks).index("Annotation audit")
    headings = [i for i, b in enumerate(blocks) if isinstance(b, Heading)]
    section = blocks[headings[at] + 1 : headings[at + 1]]
    assert isinstance(section[0], Paragraph) and section[0].text.startswith(
        "1 of 1 formula items have a lead"
    )
    assert isinstance(section[1], Table) and section[1].rows[0][1:3] == [
        "http://www.wikidata.org/entity/Q1",
        "Ohm's law",
    ]
    assert "Annotation audit" not in _headings(build_report(_inputs()).blocks)
