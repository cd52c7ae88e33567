"""`report`: one self-contained report of Tables 1 and 2 and the annotation audit, in HTML and
Markdown."""

from datetime import UTC, datetime

import dagster as dg
import pyarrow as pa

from formula_assets.analysis.figures import FIGURE_DIR
from formula_assets.core.hashing import bytes_hash
from formula_assets.defs.history import versions
from formula_assets.defs.metadata import covers_of_definition
from formula_assets.defs.resources.data_lake import DataLakeResource

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
    "ensemble_choices",
    "significance_tests",
    "annotation_audit",
)


@dg.asset(
    name="report",
    group_name="evaluation",
    kinds={"html", "markdown"},
)
def report_document(
    context: dg.AssetExecutionContext,
    data_lake: DataLakeResource,
    wikidata_formulae: pa.Table,
    opt_graphs: pa.Table,
    rejected_formulae: pa.Table,
    cv_folds: pa.Table,
    correspondence_metrics: pa.Table,
    semantic_embeddings: pa.Table,
    retrieval_scores: pa.Table,
    ensemble_choices: pa.Table,
    significance_tests: pa.Table,
    annotation_audit: pa.Table,
    fold_models: dict,
) -> dg.MaterializeResult:
    """Tables 1 and 2 beside the paper, figures, data sizes, folds, settings, the annotation
    audit and versions."""
    from formula_assets.core.arrow import recorded_aggregation, recorded_identity, recorded_model
    from formula_assets.evaluation.retrieval import ensemble_choices as choices
    from formula_assets.evaluation.significance import comparisons
    from formula_assets.reporting import content, document

    instance = context.instance
    weights, hubness_k = choices(ensemble_choices)
    recorded = {
        "model": recorded_model(semantic_embeddings),
        "model_identity": recorded_identity(semantic_embeddings),
        "aggregation": recorded_aggregation(semantic_embeddings),
    }
    figure_dir = data_lake.path(*FIGURE_DIR)
    # a partitioned input's row covers every partition read (keys of the loaded dict)
    partitions = {"fold_models": sorted(fold_models)}
    built = content.build_report(
        content.ReportInputs(
            formulae=wikidata_formulae,
            graphs=opt_graphs,
            rejected=rejected_formulae,
            folds=cv_folds,
            metrics=correspondence_metrics,
            scores=retrieval_scores,
            models=[content.TrainedSummary(m.description, m.history) for m in fold_models.values()],
            embedding={name: value or "—" for name, value in recorded.items()},
            ensemble_weights={str(fold): w for fold, w in weights.items()},
            ensemble_hubness_k={str(fold): k for fold, k in hubness_k.items()},
            significance=comparisons(significance_tests),
            versions=[versions(instance, key, partitions.get(key, ())) for key in INPUTS],
            correspondence_figures={
                name: (figure_dir / name).read_bytes()
                for name in content.CORRESPONDENCE_FIGURES
                if (figure_dir / name).exists()
            },
            packages=document.package_versions(),
            audit=annotation_audit,
        )
    )
    for name, png in built.figures.items():
        data_lake.write_bytes(png, *REPORT_DIR, name)
    content_hash = bytes_hash(document.to_markdown(content.TITLE, built.blocks))
    generated = document.Paragraph(f"Generated {datetime.now(UTC).isoformat(timespec='seconds')}.")
    html_text = document.to_html(content.TITLE, [generated, *built.blocks])
    markdown_text = document.to_markdown(content.TITLE, [generated, *built.blocks])
    html_path = data_lake.write_bytes(html_text.encode(), *REPORT_DIR, "report.html")
    md_path = data_lake.write_bytes(markdown_text.encode(), *REPORT_DIR, "report.md")
    return dg.MaterializeResult(
        data_version=dg.DataVersion(content_hash),
        metadata={
            "html": dg.MetadataValue.path(str(html_path)),
            "markdown": dg.MetadataValue.path(str(md_path)),
            "html_bytes": len(html_text),
            "sections": sum(1 for b in built.blocks if isinstance(b, document.Heading)),
            **covers_of_definition(context.assets_def.metadata_by_key[context.asset_key]),
        },
    )
