"""`fold_models`: one trained aligner per fold × method, early-stopped on validation. The
method partitions are the registry's trained methods (`formula_assets.methods.registry`)."""

import json
from dataclasses import asdict

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core.arrow import recorded_model
from formula_assets.core.hashing import bytes_hash, table_content_hash
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import FOLDS
from formula_assets.core.settings import (
    PROFILE_ENV,
    Settings,
    frozen_layers_store,
    vectors_problem,
)
from formula_assets.core.versioning import code_version
from formula_assets.defs import metadata
from formula_assets.methods import registry

# the observable source of the sentence models' identity (by name: importing its module would
# put the embedding code into this asset's code version)
SENTENCE_MODEL = "sentence_model"
FOLD_MODEL_PARTITIONS = dg.MultiPartitionsDefinition(
    {
        "fold": dg.StaticPartitionsDefinition([str(f) for f in FOLDS]),
        "method": dg.StaticPartitionsDefinition(list(registry.trained())),
    }
)


class TrainingConfig(dg.Config):
    profile: str | None = Field(
        default=None,
        description="smoke | default | medium | large | paper; unset: FORMULA_ASSETS_PROFILE, else "
        "default",
    )


@dg.asset(
    group_name="training",
    partitions_def=FOLD_MODEL_PARTITIONS,
    io_manager_key="model_io_manager",
    kinds={"pytorch", "safetensors"},
    pool="training",
    # the pretrained models a method starts from (the fine-tuned encoder's base models) are
    # read here, not only through the embeddings: their observed files are an input
    deps=[SENTENCE_MODEL],
    # a partition costs what its method says one fold's training costs (the registry's)
    metadata=metadata.step_cost(
        1.0, partitions={m.name: m.training_cost for m in registry.methods() if m.trained}
    ),
)
def fold_models(
    context: dg.AssetExecutionContext,
    config: TrainingConfig,
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
    opt_token_embeddings: pa.Table,
    concept_annotations: pa.Table,
    concept_symbols: pa.Table,
):
    """A contrastive aligner per fold × method, early-stopped on validation, never on test."""
    from formula_assets.training import artifacts
    from formula_assets.training.data import alignment_data
    from formula_assets.training.fold import train_fold
    from formula_assets.training.sentence_encoder import frozen_store

    keys = context.partition_key.keys_by_dimension
    fold, method = int(keys["fold"]), keys["method"]
    # the profile of the run config, and the embedding model it implies, resolved once
    settings = Settings.from_environment().with_config(profile=config.profile)
    profile = get_profile(settings.profile)
    if method in profile.leaves_out:
        raise dg.Failure(
            f"the {profile.name!r} profile leaves out {method}: the methods trained are those "
            f"of the profile the definitions were loaded with, so set {PROFILE_ENV}={profile.name} "
            "instead of only the `profile` run config of fold_models"
        )
    for table in (semantic_embeddings, opt_text_embeddings):
        problem = vectors_problem(settings, recorded_model(table))
        if problem:
            raise dg.Failure(problem)
    data = alignment_data(
        cv_folds,
        opt_graphs,
        semantic_embeddings,
        opt_text_embeddings,
        opt_token_embeddings,
        concept_annotations,
        concept_symbols,
    )
    # folds trained side by side split the fine-tuned encoder's frozen-layer pass, beside the
    # embedding cache, and find its packaged base models in the model directory (the
    # settings, not the sentence_embedder resource: its settings are not this asset's, and
    # its code version would follow them)
    store = frozen_layers_store(settings.embedding_cache)
    with frozen_store(store, context.log.warning, settings.model_dir):
        trained = train_fold(
            registry.trained_method(method), fold, data, profile, log=context.log.info
        )
    described = trained.description
    if described.deterministic:
        version = artifacts.content_hash(trained)
    else:  # the same recipe gives other bits here: name the recipe (see training/determinism)
        version = bytes_hash(
            "recipe",
            code_version(__name__),
            *(table_content_hash(t) for t in (cv_folds, opt_graphs, semantic_embeddings)),
            table_content_hash(opt_text_embeddings),
            table_content_hash(opt_token_embeddings),
            table_content_hash(concept_annotations),
            table_content_hash(concept_symbols),
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
            "seed": described.seed,
            "device": described.device,
            "deterministic": described.deterministic,
            "best_epoch": described.best_epoch,
            "epochs_run": described.epochs_run,
            "best_validation_mrr": described.best_validation_mrr,
            "validation_recall_at_10": described.validation["recall_at_10_syntactic_to_semantic"],
            "runs": dg.MetadataValue.json([asdict(run) for run in described.runs]),
            "train_seconds": described.train_seconds,
            "split_sizes": dg.MetadataValue.json(asdict(described.split_sizes)),
            "training_curve": metadata.training_curve(trained.history),
        },
    )
