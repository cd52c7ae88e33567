"""Training profiles: how much compute the alignment models get, with fixed, recorded seeds.

* `smoke`: seconds; for tests and demos. Proves the wiring, not the science.
* `default`: the symbol lexicon beside the trained members over frozen vectors, no fine-tuned
  encoder: half `medium`'s time on the slowest 2-core CPU measured (docs/performance.md).
* `medium`: the default and the fine-tuned encoder (one epoch); beside the symbol lexicon,
  every trained member is trained for less than `large` trains it.
* `large`: the strongest this CPU trains within 45 minutes cold: both packaged sentence
  models side by side, a wider graph encoder, both fine-tuned and averaged.
* `paper`: the paper's settings — 200 epochs, hidden 768, all-mpnet-base-v2 — for a GPU.

A profile here is what every method shares (the embedding model, seeds, splits, threads, the
methods left out). Each method declares its own settings for each profile in its own module
(`PROFILE_SETTINGS`), so a method is added without touching this file;
`methods.profiles.method_settings` reads a profile as a map from method to settings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
MODEL_SEPARATOR = "+"  # models joined by it embed as one: their vectors side by side
DEFAULT_PROFILE = "default"


def joined_models(name: str) -> list[str]:
    """The model names a setting joins with `+` (one name: itself)."""
    return [part.strip() for part in name.split(MODEL_SEPARATOR)]


@dataclass(frozen=True)
class Profile:
    name: str
    embedding_model: str | None = None  # None: the packaged all-MiniLM-L6-v2
    seed: int = 0
    validation_fraction: float = 0.1
    # a third share of the training folds, never trained or early-stopped on: it chooses the
    # ensemble's weights (0: none; the ensemble then cannot be built)
    selection_fraction: float = 0.1
    torch_threads: int = 1  # per process; fold partitions run as parallel processes
    # methods (registry names) this profile does not train or score: they have no fold
    # partitions, no row of Table 2 and no place in the ensemble, the search or the audit
    leaves_out: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Each method's settings in each profile are in its own module (`PROFILE_SETTINGS`); why each
# value is what it is: docs/research-record.md and docs/training.md.
PROFILES: dict[str, Profile] = {
    "smoke": Profile(name="smoke"),
    "default": Profile(name="default", leaves_out=("sbert_finetuned_cl",)),
    "medium": Profile(name="medium"),
    # both packaged sentence models side by side (`pip install 'formula_assets[mpnet]'`)
    "large": Profile(
        name="large",
        embedding_model=f"{DEFAULT_EMBEDDING_MODEL}{MODEL_SEPARATOR}all-mpnet-base-v2",
    ),
    "paper": Profile(
        name="paper",
        embedding_model="sentence-transformers/all-mpnet-base-v2",
        torch_threads=0,  # 0: leave torch's default (all cores / the GPU)
    ),
}


def get_profile(name: str = DEFAULT_PROFILE) -> Profile:
    """A profile by name (the `profile` setting chooses the pipeline's: core.settings)."""
    try:
        return PROFILES[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None
