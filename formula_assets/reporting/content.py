"""What the report says: Tables 1 and 2 beside the paper, figures, data sizes, folds,
settings and the version of every input. Built from plain values, rendered by `document`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from formula_assets.analysis.figures import CCA_FIGURE, COSINE_FIGURE, FIGURE_DIR
from formula_assets.core.protocol import DIRECTIONS
from formula_assets.evaluation.retrieval import table_2
from formula_assets.evaluation.significance import Comparison
from formula_assets.reporting import figures
from formula_assets.reporting.document import Block, Figure, Heading, Paragraph, Table
from formula_assets.reporting.tables import (
    SIGNIFICANCE_COLUMNS,
    TABLE_1_COLUMNS,
    TABLE_2_COLUMNS,
    significance_rows,
    table_1_rows,
    table_2_rows,
)

if TYPE_CHECKING:
    from formula_assets.training.artifacts import ModelDescription

TITLE = "formula_assets report"
# Figures of Table 1 written by `correspondence_metrics`: file name → caption.
CORRESPONDENCE_FIGURES = {
    CCA_FIGURE: "Canonical correlation per component: in-sample, shuffled pairs, held-out",
    COSINE_FIGURE: "Per-formula cosine of true vs shuffled pairs; permutation null of the mean",
}
# The report lives in <lake>/report/: the figures are one level up.
CORRESPONDENCE_FIGURE_DIR = "/".join(("..", *FIGURE_DIR))
TRAINING_CURVES = "training_curves.png"
RECALL_BARS = "recall_by_method.png"


@dataclass
class TrainedSummary:
    """What the report needs of one fold model: its description and its training history."""

    description: ModelDescription
    history: Sequence[Mapping[str, float]]


@dataclass
class ReportInputs:
    formulae: pa.Table
    graphs: pa.Table
    rejected: pa.Table
    folds: pa.Table
    metrics: pa.Table
    scores: pa.Table
    models: Sequence[TrainedSummary]
    # from the input tables: sentence-transformer and aggregation, ensemble weights,
    # significance tests; from the instance: (input, code version, data version) per input
    embedding: Mapping[str, Any] = field(default_factory=dict)
    ensemble_weights: Mapping[str, Any] = field(default_factory=dict)
    ensemble_hubness_k: Mapping[str, Any] = field(default_factory=dict)
    significance: Sequence[Comparison] = ()
    versions: Sequence[Sequence[str]] = ()
    correspondence_figures: Mapping[str, bytes] = field(default_factory=dict)
    packages: Sequence[tuple[str, str]] = ()


@dataclass
class Report:
    blocks: list[Block]
    figures: dict[str, bytes]  # files written beside the report: name → PNG


def training_curves(models: Sequence[TrainedSummary]) -> bytes:
    """Validation MRR per epoch of every model (of each run, for a model of several)."""
    series: dict[str, list[float]] = {}
    for m in sorted(models, key=lambda m: (m.description.method, m.description.fold)):
        described = m.description
        runs = sorted({int(h.get("run", 0)) for h in m.history})
        for run in runs:
            label = f"{described.method} fold {described.fold}" + (
                f" run {run + 1}" if len(runs) > 1 else ""
            )
            series[label] = [h["validation_mrr"] for h in m.history if int(h.get("run", 0)) == run]
    return figures.line_figure(series, "epoch", "validation MRR", "validation MRR per epoch")


def build_report(inputs: ReportInputs) -> Report:
    configs = sorted((m.description for m in inputs.models), key=lambda d: (d.method, d.fold))
    fold_sizes = Counter(inputs.folds["fold"].to_pylist())
    sources = Counter(inputs.formulae["source"].to_pylist())
    blocks: list[Block] = [
        Paragraph(
            "Syntax–semantics correspondence of Wikidata formulae and learned cross-modal "
            "alignment, reproducing the method of 'Syntax Meets Semantics: Understanding "
            "Scientific Formulae'."
        ),
        Heading("Data"),
        Table(
            ["what", "value"],
            [
                ["formula items", f"{inputs.formulae.num_rows:,}"],
                ["source", ", ".join(f"{k} ({v:,})" for k, v in sources.items())],
                ["parsed into operator trees", f"{inputs.graphs.num_rows:,}"],
                ["rejected by the parser", f"{inputs.rejected.num_rows:,}"],
                ["fold sizes", ", ".join(f"{f}: {fold_sizes[f]:,}" for f in sorted(fold_sizes))],
                [
                    "folds from the paper's split",
                    f"{inputs.folds['fold_source'].to_pylist().count('paper'):,}",
                ],
            ],
        ),
        Heading("Settings"),
        Table(
            ["setting", "value"],
            [
                ["sentence-transformer", inputs.embedding.get("model", "—")],
                ["model identity (hash of its files)", inputs.embedding.get("model_identity", "—")],
                ["semantic aggregation", inputs.embedding.get("aggregation", "—")],
                ["training profile(s)", ", ".join(sorted({c.profile for c in configs}))],
                ["devices", ", ".join(sorted({c.device for c in configs}))],
                [
                    "seeds (method fold: seed)",
                    ", ".join(f"{c.method} {c.fold}: {c.seed}" for c in configs),
                ],
                [
                    "ensemble weights per fold (chosen on the selection split)",
                    json.dumps(dict(inputs.ensemble_weights)),
                ],
                [
                    "ensemble hubness k per fold (chosen with the weights)",
                    json.dumps(dict(inputs.ensemble_hubness_k)),
                ],
            ],
        ),
        Heading("Table 1 — raw correspondence"),
        Table(TABLE_1_COLUMNS, table_1_rows(inputs.metrics)),
    ]
    for name, caption in CORRESPONDENCE_FIGURES.items():
        if name in inputs.correspondence_figures:
            blocks.append(
                Figure(
                    inputs.correspondence_figures[name],
                    caption,
                    f"{CORRESPONDENCE_FIGURE_DIR}/{name}",
                )
            )
    blocks += [
        Heading("Table 2 — cross-modal retrieval (mean ± std over 5 folds)"),
        Table(TABLE_2_COLUMNS, table_2_rows(inputs.scores)),
        Heading("Significance"),
        Paragraph(
            "Each trained method and the ensemble against each baseline, the best method "
            "against each method it is claimed to beat, and graph_text_cl against "
            "sbert_dual_cl: a Wilcoxon signed-rank test on per-query reciprocal ranks over all "
            "test queries (its p adjusted for the whole family with Holm's method) and a paired "
            "t-test over the five fold MRRs."
        ),
        Table(SIGNIFICANCE_COLUMNS, significance_rows(inputs.significance)),
    ]
    curves = training_curves(inputs.models)
    recall = figures.recall_bars_figure(table_2(inputs.scores), DIRECTIONS)
    blocks += [
        Figure(recall, "Recall@k per method and direction", RECALL_BARS),
        Figure(curves, "Validation MRR per training epoch, every fold × method", TRAINING_CURVES),
        Heading("Versions"),
        Table(["input", "code version", "data version"], inputs.versions),
        Table(["package", "version"], inputs.packages),
    ]
    return Report(blocks, {TRAINING_CURVES: curves, RECALL_BARS: recall})
