"""A fold model's recipe: everything that decides what training one fold × method gives.

`fold_models` has one code version for all its partitions, so an edit to one method (or a
method added) makes every partition stale. A partition whose stored model was made by the
same recipe is not trained again: it returns that model, whose data version is unchanged, so
only the edited method's models retrain. The recipe also names a model whose bits a rerun
would not reproduce (`training.determinism`): its data version.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, replace

import pyarrow as pa
from safetensors import SafetensorError
from upath import UPath

from formula_assets.core.hashing import bytes_hash, table_content_hash
from formula_assets.core.profiles import Profile
from formula_assets.training.artifacts import (
    ModelLoadError,
    TrainedModel,
    load_model,
    stored_description,
)
from formula_assets.training.settings import MethodSettings


def recipe(
    code: str,
    tables: Sequence[pa.Table],
    profile: Profile,
    settings: MethodSettings,
    method: str,
    fold: int,
    device: str,
    base_models: Sequence[str] = (),
) -> str:
    """The hash of what training reads: the code the method runs (`code`), the input tables'
    content, the profile's shared settings and the method's own (not other methods'), the
    fold, the device, and the identities of the pretrained models it starts from."""
    shared = {
        "profile": profile.name,
        "seed": profile.seed,
        "validation_fraction": profile.validation_fraction,
        "selection_fraction": profile.selection_fraction,
        "torch_threads": profile.torch_threads,
        "embedding_model": profile.embedding_model,
    }
    return bytes_hash(
        "recipe",
        code,
        *(table_content_hash(t) for t in tables),
        # keys in the order written here and in the method's settings class (an edit to
        # either is a code change, in the recipe already)
        json.dumps({**shared, "settings": asdict(settings)}, default=str),
        method,
        str(fold),
        device,
        *base_models,
    )


def with_recipe(model: TrainedModel, made_by: str) -> TrainedModel:
    """The model with its recipe recorded in its description (`config.json`)."""
    return replace(model, description=replace(model.description, recipe=made_by))


def stored_model(
    directory: UPath, made_by: str, settings_type: type[MethodSettings] = MethodSettings
) -> TrainedModel | None:
    """The current model stored in `directory` if the recipe `made_by` made it; None when
    there is none, another recipe made it, or it cannot be read (then it is trained again)."""
    try:
        if (
            stored_description(directory, settings_type).recipe != made_by
        ):  # read before the weights
            return None
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
    try:
        model = load_model(directory, settings_type)
    except (FileNotFoundError, ModelLoadError, SafetensorError, ValueError):
        return None
    # a save between the two reads: the model loaded is the judge
    return model if model.description.recipe == made_by else None
