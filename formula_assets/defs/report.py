"""Group `evaluation`: one self-contained report of Tables 1 and 2, in HTML and Markdown."""

import json
from collections import Counter
from datetime import UTC, datetime

import dagster as dg
import pyarrow as pa

from formula_assets import figures, report
from formula_assets.correspondence import PAPER_TABLE_1
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.evaluation import SIGNIFICANCE_COLUMNS, table_2_rows
from formula_assets.defs.resources import DataLakeResource
from formula_assets.evaluation import DIRECTIONS, table_2
from formula_assets.hashing import bytes_hash
from formula_assets.report import Figure, Heading, Paragraph, Table
from formula_assets.versioning import code_version

REPORT_VERSION = code_version(report, figures)
REPORT_DIR = ("report",)
INPUTS = (
    "wikidata_formulae",
    "opt_graphs",
    "rejected_formulae",
    "structural_embeddings",
    "concept_annotations",
    "semantic_embeddings",
    "opt_text_embeddings",
    "correspondence_metrics",
    "cv_folds",
    "fold_models",
    "retrieval_scores",
)


def _latest(context: dg.AssetExecutionContext, key: str) -> dg.AssetMaterialization | None:
    event = context.instance.get_latest_materialization_event(dg.AssetKey(key))
    return event.asset_materialization if event else None


def _meta(materialization: dg.AssetMaterialization | None, name: str, default: object = "—"):
    if materialization is None or name not in materialization.metadata:
        return default
    return materialization.metadata[name].value


def _versions(context: dg.AssetExecutionContext, key: str) -> list[str]:
    """The code and data version each input had when it was last materialized."""
    tags = (_latest(context, key) or dg.AssetMaterialization(key)).tags or {}
    return [key, tags.get("dagster/code_version", "—"), tags.get("dagster/data_version", "—")]


def _table_1(metrics: pa.Table) -> Table:
    rows = []
    for name, value, detail in zip(
        metrics["metric"].to_pylist(),
        metrics["value"].to_pylist(),
        metrics["detail"].to_pylist(),
        strict=True,
    ):
        paper = PAPER_TABLE_1.get(name, "—")
        rows.append(
            [
                name,
                f"{value:.4f}",
                paper if isinstance(paper, str) else f"{paper:.4f}",
                detail or "",
            ]
        )
    return Table(["metric", "ours", "paper", "detail"], rows)


def _training_curves(models: dict) -> bytes:
    series = {
        f"{m.method} fold {m.fold}": [h["validation_mrr"] for h in m.history]
        for m in sorted(models.values(), key=lambda m: (m.method, m.fold))
    }
    return figures.line_figure(series, "epoch", "validation MRR", "validation MRR per epoch")


@dg.asset(
    name="report",
    group_name="evaluation",
    code_version=REPORT_VERSION,
    automation_condition=AUTOMATION,
    kinds={"html", "markdown"},
    owners=["team:formula-assets"],
)
def report_document(
    context: dg.AssetExecutionContext,
    data_lake: DataLakeResource,
    wikidata_formulae: pa.Table,
    opt_graphs: pa.Table,
    rejected_formulae: pa.Table,
    cv_folds: pa.Table,
    correspondence_metrics: pa.Table,
    retrieval_scores: pa.Table,
    fold_models: dict,
) -> dg.MaterializeResult:
    """Tables 1 and 2 beside the paper, figures, data sizes, folds, settings and versions."""
    semantic = _latest(context, "semantic_embeddings")
    scores = _latest(context, "retrieval_scores")
    configs = sorted(
        (m.config for m in fold_models.values()), key=lambda c: (c["method"], c["fold"])
    )
    fold_sizes = Counter(cv_folds["fold"].to_pylist())
    sources = Counter(wikidata_formulae["source"].to_pylist())
    blocks: list = [
        Paragraph(
            "Syntax–semantics correspondence of Wikidata formulae and learned cross-modal "
            "alignment, reproducing the method of 'Syntax Meets Semantics: Understanding "
            "Scientific Formulae'."
        ),
        Heading("Data"),
        Table(
            ["what", "value"],
            [
                ["formula items", f"{wikidata_formulae.num_rows:,}"],
                ["source", ", ".join(f"{k} ({v:,})" for k, v in sources.items())],
                ["parsed into operator trees", f"{opt_graphs.num_rows:,}"],
                ["rejected by the parser", f"{rejected_formulae.num_rows:,}"],
                ["fold sizes", ", ".join(f"{f}: {fold_sizes[f]:,}" for f in sorted(fold_sizes))],
                [
                    "folds from the paper's split",
                    f"{cv_folds['fold_source'].to_pylist().count('paper'):,}",
                ],
            ],
        ),
        Heading("Settings"),
        Table(
            ["setting", "value"],
            [
                ["sentence-transformer", _meta(semantic, "model")],
                ["model identity", _meta(semantic, "model_identity")],
                ["semantic aggregation", _meta(semantic, "aggregation")],
                ["training profile(s)", ", ".join(sorted({c["profile"] for c in configs}))],
                ["devices", ", ".join(sorted({c["device"] for c in configs}))],
                [
                    "seeds (method fold: seed)",
                    ", ".join(f"{c['method']} {c['fold']}: {c['seed']}" for c in configs),
                ],
                [
                    "ensemble weights per fold (chosen on validation)",
                    json.dumps(_meta(scores, "ensemble_weights", {})),
                ],
            ],
        ),
        Heading("Table 1 — raw correspondence"),
        _table_1(correspondence_metrics),
    ]
    figure_dir = data_lake.path("figures", "correspondence_metrics")
    for name, caption in (
        (
            "cca_components.png",
            "Canonical correlation per component: in-sample, shuffled pairs, held-out",
        ),
        (
            "cosine_null.png",
            "Per-formula cosine of true vs shuffled pairs; permutation null of the mean",
        ),
    ):
        path = figure_dir / name
        if path.exists():
            blocks.append(
                Figure(path.read_bytes(), caption, f"../figures/correspondence_metrics/{name}")
            )
    columns, rows = table_2_rows(retrieval_scores)
    blocks += [
        Heading("Table 2 — cross-modal retrieval (mean ± std over 5 folds)"),
        Table(columns, rows),
        Heading("Significance against the baselines"),
        Paragraph(
            "Wilcoxon signed-rank test on per-query reciprocal ranks over all test queries, "
            "and a paired t-test over the five fold MRRs."
        ),
        Table(SIGNIFICANCE_COLUMNS, _meta(scores, "significance_rows", [])),
    ]
    curves = _training_curves(fold_models)
    recall = figures.recall_bars_figure(table_2(retrieval_scores), DIRECTIONS)
    data_lake.write_bytes(curves, *REPORT_DIR, "training_curves.png")
    data_lake.write_bytes(recall, *REPORT_DIR, "recall_by_method.png")
    blocks += [
        Figure(recall, "Recall@k per method and direction", "recall_by_method.png"),
        Figure(
            curves, "Validation MRR per training epoch, every fold × method", "training_curves.png"
        ),
        Heading("Versions"),
        Table(["input", "code version", "data version"], [_versions(context, k) for k in INPUTS]),
        Table(["package", "version"], report.package_versions()),
    ]
    title = "formula_assets report"
    content_hash = bytes_hash(report.to_markdown(title, blocks))
    generated = f"Generated {datetime.now(UTC).isoformat(timespec='seconds')}."
    html_text = report.to_html(title, [Paragraph(generated), *blocks])
    markdown_text = report.to_markdown(title, [Paragraph(generated), *blocks])
    html_path = data_lake.write_bytes(html_text.encode(), *REPORT_DIR, "report.html")
    md_path = data_lake.write_bytes(markdown_text.encode(), *REPORT_DIR, "report.md")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash),
        metadata={
            "html": dg.MetadataValue.path(str(html_path)),
            "markdown": dg.MetadataValue.path(str(md_path)),
            "html_bytes": len(html_text),
            "sections": sum(1 for b in blocks if isinstance(b, Heading)),
        },
    )
