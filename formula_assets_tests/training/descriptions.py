"""A model description for tests of the model store, which need no trained model."""

from __future__ import annotations

from typing import Any

from formula_assets.methods import sbert_dual_cl
from formula_assets.training.artifacts import ModelDescription, SplitSizes


def described(method: str = "sbert_dual_cl", fold: int = 1, **extra: Any) -> ModelDescription:
    """A small description; `extra` entries are stored in config.json beside its fields."""
    return ModelDescription(
        method=method,
        fold=fold,
        profile="smoke",
        settings=sbert_dual_cl.PROFILE_SETTINGS["smoke"],
        seed=0,
        semantic_dim=4,
        structural_dim=4,
        split_sizes=SplitSizes(train=2, validation=2, selection=0, test=2),
        validation_fraction=0.1,
        extra=extra,
    )
