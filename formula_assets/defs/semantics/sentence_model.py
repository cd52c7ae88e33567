"""`sentence_model`: the configured sentence models' identity, a hash of their files' content.

The three embedding assets and `fold_models` depend on it, so a model saved over the same
files (a fine-tune written in place, a new version of a model package) makes them stale once
observed. The model's name is part of their code version already (`semantics.models` declares
it), so the observation records only the content: a folder moved elsewhere stays the same
model.

Besides the embedding model, a trained method may start from pretrained models of its own
(`TrainedMethod.base_models`: the fine-tuned encoder's base models). Where one is not a part of
the embedding model — a local folder, or the packaged MiniLM fine-tuned beside other vectors —
its identity joins the observed version, so `fold_models` sees it changed in place too (the
embedding assets then re-run from their cache: their vectors' content, and so their data
version, stay the same). The shipped profiles fine-tune parts of their embedding model, and
observe its identity alone.
"""

import time

import dagster as dg

from formula_assets.core.profiles import get_profile
from formula_assets.core.settings import Settings, embedding_model_origin
from formula_assets.defs.automation import MODEL_OBSERVATION
from formula_assets.methods import registry
from formula_assets.semantics.identity import joined_identity
from formula_assets.semantics.models import ModelSpec, resolve_model

KEY = dg.AssetKey("sentence_model")
OBSERVE_JOB = "observe_sentence_model"


def configured_model() -> ModelSpec:
    """The model the settings name, resolved and hashed: what an observation records."""
    settings = Settings.from_environment()
    return resolve_model(
        settings.embedding_model, embedding_model_origin(settings), settings.model_dir
    )


def base_models(spec: ModelSpec) -> list[ModelSpec]:
    """The base models of the methods the profile trains that are not a part of the embedding
    model `spec` (by content), resolved and hashed."""
    settings = Settings.from_environment()
    profile = get_profile(settings.profile)
    own = {part.identity for part in spec.parts or (spec,)}
    found: list[ModelSpec] = []
    for name in registry.trained():
        for base in registry.trained_method(name).base_models(profile):
            origin = f"the {profile.name!r} profile's {name} base model"
            model = resolve_model(base, origin, settings.model_dir)
            if model.identity not in own | {m.identity for m in found}:
                found.append(model)
    return found


def current_version() -> str:
    """What an observation would record now."""
    spec = configured_model()
    return observed_version(spec, base_models(spec))


def observed_version(spec: ModelSpec, bases: list[ModelSpec]) -> str:
    """The embedding model's identity, joined with the base models' where there are any."""
    if not bases:
        return spec.identity
    return joined_identity([spec.identity, *(b.identity for b in bases)])


@dg.observable_source_asset(
    group_name="semantics",
    automation_condition=MODEL_OBSERVATION,
    description="The sentence-transformer the embedding assets use, and any other pretrained "
    "model a trained method starts from, identified by a hash of their files' content "
    "(weights, configuration, tokenizer): a model changed in place is a new version, a moved "
    "folder is not.",
    tags={"source": "sentence_model"},
)
def sentence_model(context) -> dg.ObserveResult:
    started = time.perf_counter()
    spec = configured_model()
    bases = base_models(spec)
    seconds = time.perf_counter() - started
    parts = [*(spec.parts or (spec,)), *bases]
    metadata: dict[str, object] = {
        "model": spec.name,
        "origin": spec.origin,
        "location": spec.location,
        "files": sum(p.content.files for p in parts if p.content),
        "bytes": sum(p.content.size for p in parts if p.content),
        "hash_seconds": round(seconds, 3),
    }
    if bases:
        metadata["base_models"] = dg.MetadataValue.json(
            [{"model": b.name, "location": b.location, "identity": b.identity} for b in bases]
        )
    if not spec.local:
        metadata["note"] = (
            "a hub model not in the local Hugging Face cache: identified by its name until the "
            "first embedding run downloads it"
        )
    version = observed_version(spec, bases)
    context.log.info(f"sentence_model {spec.name}: {version}")
    return dg.ObserveResult(data_version=dg.DataVersion(version), metadata=metadata)


observe_sentence_model = dg.define_asset_job(
    OBSERVE_JOB,
    selection=dg.AssetSelection.assets(KEY),
    description="Hash the sentence model's files now (as `formula-assets refresh` does first).",
)
