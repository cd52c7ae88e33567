"""Group `training`: cross-validation folds and one trained aligner per fold × method."""

import base64

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets import folds, graph_batch, graph_encoder, profiles
from formula_assets.defs.automation import AUTOMATION
from formula_assets.defs.outcomes import check_result
from formula_assets.figures import line_figure
from formula_assets.hashing import bytes_hash, table_content_hash
from formula_assets.quality import folds_valid
from formula_assets.training import artifacts, losses, methods, models, trainer
from formula_assets.versioning import code_version

OWNERS = ["team:formula-assets"]
FOLD_KEYS = [str(f) for f in folds.FOLDS]
FOLD_MODEL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "fold": dg.StaticPartitionsDefinition(FOLD_KEYS),
        "method": dg.StaticPartitionsDefinition(list(methods.METHODS)),
    }
)
FOLDS_VERSION = code_version(folds)
# The profile named by the environment at load time is part of the version.
TRAINING_VERSION = code_version(
    folds,
    profiles,
    graph_batch,
    graph_encoder,
    losses,
    models,
    trainer,
    methods,
    artifacts,
    profiles.profile_name(),
)


class TrainingConfig(dg.Config):
    profile: str | None = Field(
        default=None,
        description="smoke | default | paper. Default: FORMULA_ASSETS_PROFILE, else default.",
    )


@dg.asset(
    group_name="training",
    code_version=FOLDS_VERSION,
    automation_condition=AUTOMATION,
    kinds={"python", "parquet"},
    owners=OWNERS,
)
def cv_folds(wikidata_formulae: pa.Table):
    """Fold 1–5 per formula: the paper's published fold where known, else a hash of the QID."""
    table = folds.assign_folds(
        zip(
            wikidata_formulae.column("qid").to_pylist(),
            wikidata_formulae.column("paper_fold").to_pylist(),
            strict=True,
        )
    )
    sizes = {f: 0 for f in folds.FOLDS}
    for f in table.column("fold").to_pylist():
        sizes[f] += 1
    sources = table.column("fold_source").to_pylist()
    return dg.Output(
        table,
        data_version=dg.DataVersion(table_content_hash(table)),
        metadata={
            "formulae": table.num_rows,
            "fold_sizes": dg.MetadataValue.json({str(k): v for k, v in sizes.items()}),
            "from_paper": sources.count("paper"),
            "from_hash": sources.count("hash"),
        },
    )


@dg.asset_check(asset=cv_folds, blocking=True, additional_ins={"wikidata_formulae": dg.AssetIn()})
def cv_folds_cover_every_formula(
    cv_folds: pa.Table, wikidata_formulae: pa.Table
) -> dg.AssetCheckResult:
    """Each formula in exactly one fold of 1–5, no fold empty."""
    return check_result(folds_valid(cv_folds, wikidata_formulae))


def _curve(history: list[dict[str, float]]) -> str:
    png = line_figure(
        {
            "training loss": [h["loss"] for h in history],
            "validation MRR": [h["validation_mrr"] for h in history],
        },
        "epoch",
        "value",
        "training curve",
    )
    return f"![training curve](data:image/png;base64,{base64.b64encode(png).decode()})"


@dg.asset(
    group_name="training",
    partitions_def=FOLD_MODEL_PARTITIONS,
    io_manager_key="model_io_manager",
    code_version=TRAINING_VERSION,
    automation_condition=AUTOMATION,
    kinds={"pytorch", "safetensors"},
    owners=OWNERS,
    pool="training",
)
def fold_models(
    context: dg.AssetExecutionContext,
    config: TrainingConfig,
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
):
    """A contrastive aligner per fold × method, early-stopped on validation, never on test."""
    keys = context.partition_key.keys_by_dimension
    fold, method = int(keys["fold"]), keys["method"]
    profile = profiles.get_profile(config.profile)
    data = methods.alignment_data(cv_folds, opt_graphs, semantic_embeddings, opt_text_embeddings)
    trained = methods.train_fold(method, fold, data, profile, log=context.log.info)
    weights_hash = bytes_hash(artifacts.weights_bytes(trained))
    best = trained.history[trained.config["best_epoch"] - 1] if trained.history else {}
    return dg.Output(
        trained,
        data_version=dg.DataVersion(
            bytes_hash(weights_hash, table_content_hash(trained.embeddings))
        ),
        metadata={
            "method": method,
            "fold": fold,
            "profile": profile.name,
            "seed": trained.config["seed"],
            "device": trained.config["device"],
            "best_epoch": trained.config["best_epoch"],
            "epochs_run": trained.config["epochs_run"],
            "best_validation_mrr": trained.config["best_validation_mrr"],
            "validation_recall_at_10": best.get(
                "validation_recall_at_10_syntactic_to_semantic", 0.0
            ),
            "train_seconds": trained.config["train_seconds"],
            "split_sizes": dg.MetadataValue.json(trained.config["split_sizes"]),
            "training_curve": dg.MetadataValue.md(_curve(trained.history)),
        },
    )
