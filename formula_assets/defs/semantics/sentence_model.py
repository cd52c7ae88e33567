"""`sentence_model`: the configured sentence model's identity, a hash of its files' content.

The three embedding assets depend on it, so a model saved over the same files (a fine-tune
written in place, a new version of a model package) makes exactly them stale once observed.
The model's name is part of their code version already (`semantics.models` declares it), so
the observation records only the content: a folder moved elsewhere stays the same model.
"""

import time

import dagster as dg

from formula_assets.core.settings import Settings, embedding_model_origin
from formula_assets.defs.automation import MODEL_OBSERVATION
from formula_assets.semantics.models import ModelSpec, resolve_model

KEY = dg.AssetKey("sentence_model")
OBSERVE_JOB = "observe_sentence_model"


def configured_model() -> ModelSpec:
    """The model the settings name, resolved and hashed: what an observation records."""
    settings = Settings.from_environment()
    return resolve_model(
        settings.embedding_model, embedding_model_origin(settings), settings.model_dir
    )


@dg.observable_source_asset(
    group_name="semantics",
    automation_condition=MODEL_OBSERVATION,
    description="The sentence-transformer the embedding assets use, identified by a hash of "
    "its files' content (weights, configuration, tokenizer): a model changed in place is a "
    "new version, a moved folder is not.",
    tags={"source": "sentence_model"},
)
def sentence_model(context) -> dg.ObserveResult:
    started = time.perf_counter()
    spec = configured_model()
    seconds = time.perf_counter() - started
    parts = spec.parts or (spec,)
    metadata: dict[str, object] = {
        "model": spec.name,
        "origin": spec.origin,
        "location": spec.location,
        "files": sum(p.content.files for p in parts if p.content),
        "bytes": sum(p.content.size for p in parts if p.content),
        "hash_seconds": round(seconds, 3),
    }
    if not spec.local:
        metadata["note"] = (
            "a hub model not in the local Hugging Face cache: identified by its name until the "
            "first embedding run downloads it"
        )
    context.log.info(f"sentence_model {spec.name}: {spec.identity}")
    return dg.ObserveResult(data_version=dg.DataVersion(spec.identity), metadata=metadata)


observe_sentence_model = dg.define_asset_job(
    OBSERVE_JOB,
    selection=dg.AssetSelection.assets(KEY),
    description="Hash the sentence model's files now (as `formula-assets refresh` does first).",
)
