"""`fold_models`: one trained aligner per fold × method, early-stopped on validation."""

import json

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core import profiles
from formula_assets.core.arrow import recorded_model
from formula_assets.core.hashing import bytes_hash, table_content_hash
from formula_assets.core.protocol import FOLDS, TRAINED
from formula_assets.core.versioning import code_version
from formula_assets.defs import metadata

FOLD_MODEL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "fold": dg.StaticPartitionsDefinition([str(f) for f in FOLDS]),
        "method": dg.StaticPartitionsDefinition(list(TRAINED)),
    }
)


class TrainingConfig(dg.Config):
    profile: str | None = Field(
        default=None,
        description="smoke | default | large | paper; unset: FORMULA_ASSETS_PROFILE, else default",
    )


@dg.asset(
    group_name="training",
    partitions_def=FOLD_MODEL_PARTITIONS,
    io_manager_key="model_io_manager",
    kinds={"pytorch", "safetensors"},
    pool="training",
    metadata=metadata.step_cost(1.0, partitions={"graph_text_cl": 3.0}),
)
def fold_models(
    context: dg.AssetExecutionContext,
    config: TrainingConfig,
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
    opt_token_embeddings: pa.Table,
):
    """A contrastive aligner per fold × method, early-stopped on validation, never on test."""
    from formula_assets.training import artifacts, methods

    keys = context.partition_key.keys_by_dimension
    fold, method = int(keys["fold"]), keys["method"]
    profile = profiles.get_profile(config.profile)
    for table in (semantic_embeddings, opt_text_embeddings):
        problem = profiles.embedding_mismatch(profile, recorded_model(table))
        if problem:
            raise dg.Failure(problem)
    data = methods.alignment_data(
        cv_folds, opt_graphs, semantic_embeddings, opt_text_embeddings, opt_token_embeddings
    )
    trained = methods.train_fold(method, fold, data, profile, log=context.log.info)
    if trained.config["deterministic"]:
        version = artifacts.content_hash(trained)
    else:  # the same recipe gives other bits here: name the recipe (see training/determinism)
        version = bytes_hash(
            "recipe",
            code_version(__name__),
            *(table_content_hash(t) for t in (cv_folds, opt_graphs, semantic_embeddings)),
            table_content_hash(opt_text_embeddings),
            table_content_hash(opt_token_embeddings),
            json.dumps(profile.as_dict(), sort_keys=True),
            method,
            str(fold),
        )
    return dg.Output(
        trained,
        data_version=dg.DataVersion(version),
        metadata={
            "method": method,
            "fold": fold,
            "profile": profile.name,
            "seed": trained.config["seed"],
            "device": trained.config["device"],
            "deterministic": trained.config["deterministic"],
            "best_epoch": trained.config["best_epoch"],
            "epochs_run": trained.config["epochs_run"],
            "best_validation_mrr": trained.config["best_validation_mrr"],
            "validation_recall_at_10": trained.config["validation"][
                "recall_at_10_syntactic_to_semantic"
            ],
            "runs": dg.MetadataValue.json(trained.config["runs"]),
            "train_seconds": trained.config["train_seconds"],
            "split_sizes": dg.MetadataValue.json(trained.config["split_sizes"]),
            "training_curve": metadata.training_curve(trained.history),
        },
    )
