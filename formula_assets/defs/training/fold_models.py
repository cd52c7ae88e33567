"""`fold_models`: one trained aligner per fold × method, early-stopped on validation. The
method partitions are the registry's trained methods (`formula_assets.methods.registry`)."""

from dataclasses import asdict

import dagster as dg
import pyarrow as pa
from pydantic import Field

from formula_assets.core.arrow import recorded_model
from formula_assets.core.hashing import bytes_hash
from formula_assets.core.profiles import get_profile
from formula_assets.core.protocol import FOLDS
from formula_assets.core.settings import (
    PROFILE_ENV,
    Settings,
    frozen_layers_store,
    vectors_problem,
)
from formula_assets.core.versioning import code_version, is_package_module
from formula_assets.defs import metadata
from formula_assets.methods import registry
from formula_assets.methods.base import TrainedMethod

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
    retrain: bool = Field(
        default=False,
        description="train even where the stored model was made by the same recipe (code, "
        "inputs, settings), which is otherwise reused",
    )


def method_code_version(method: TrainedMethod) -> str:
    """The code one method's partitions run: this module's closure short of the registry
    (the shared training code, not the other methods) and the method's own module's. A
    method from outside the package: the asset's whole code version, which holds its source
    (the `extra_methods` setting)."""
    module = type(method).__module__
    if not is_package_module(module):
        return code_version(__name__)
    shared = code_version(__name__, without=frozenset({registry.__name__}))
    return bytes_hash(shared, code_version(module))


@dg.asset(
    group_name="training",
    partitions_def=FOLD_MODEL_PARTITIONS,
    io_manager_key="model_io_manager",
    kinds={"pytorch", "safetensors"},
    pool="training",
    # the model store: a partition whose stored model the same recipe made reuses it
    required_resource_keys={"model_io_manager"},
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
    from formula_assets.training.fold import default_device, train_fold
    from formula_assets.training.recipe import recipe, stored_model, with_recipe
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
    tables = (
        cv_folds,
        opt_graphs,
        semantic_embeddings,
        opt_text_embeddings,
        opt_token_embeddings,
        concept_annotations,
        concept_symbols,
    )
    trainable = registry.trained_method(method)
    device = default_device()
    # folds trained side by side split the fine-tuned encoder's frozen-layer pass, beside the
    # embedding cache, and find its packaged base models in the model directory (the
    # settings, not the sentence_embedder resource: its settings are not this asset's, and
    # its code version would follow them)
    store = frozen_layers_store(settings.embedding_cache)
    with frozen_store(store, context.log.warning, settings.model_dir):
        made_by = recipe(
            method_code_version(trainable),
            tables,
            profile,
            trainable.settings(profile),
            method,
            fold,
            device,
            trainable.base_identities(profile),
        )
        directory = context.resources.model_io_manager.model_directory(fold, method)
        trained = (
            None if config.retrain else stored_model(directory, made_by, trainable.settings_type)
        )
        reused = trained is not None
        if trained is not None:
            context.log.info(
                f"fold {fold} × {method}: the stored model was made by this recipe (code, "
                "inputs, settings); reused, not trained again"
            )
        else:
            trained = with_recipe(
                train_fold(
                    trainable, fold, alignment_data(*tables), profile, device, context.log.info
                ),
                made_by,
            )
    described = trained.description
    # the same recipe gives other bits where training is not deterministic: name the recipe
    # (see training/determinism)
    version = artifacts.content_hash(trained) if described.deterministic else made_by
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
            "reused": reused,
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
