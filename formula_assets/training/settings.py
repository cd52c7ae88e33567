"""What the shared training loop reads of every method's settings.

A method's settings are its own class, declared in its module (`methods/`), with one value
per profile: this base holds only what every method shares — the sizes of the two towers
into the shared space and the schedule of the loop. A method adds its own fields by
subclassing it, keyword-only, so no other method's settings change when it does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True, kw_only=True)
class MethodSettings:
    epochs: int  # 0: a method fitted in closed form, not trained by gradient
    batch_size: int
    learning_rate: float
    weight_decay: float
    intra_weight: float  # λ of the intra-modal InfoNCE terms
    patience: int  # epochs without validation gain before stopping
    # the towers: the shared space's width, the hidden width and dropout of a two-layer tower
    # (a method whose towers are not MLPs leaves `hidden` and `dropout` at 0)
    out_dim: int = 0
    hidden: int = 0
    dropout: float = 0.0
    # independently seeded trainings, each early-stopped on its own, whose cosines are
    # averaged (a seed ensemble: training time × runs)
    runs: int = 1

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs cannot be negative ({self.epochs})")
        if self.runs < 1:
            raise ValueError(f"a model needs at least one run, not {self.runs}")


S = TypeVar("S", bound=MethodSettings)


def settings_as(settings: MethodSettings, kind: type[S], method: str) -> S:
    """`settings` as the method's own class: a model described with another class was loaded
    without its method's settings type (`load_model(..., settings_type=...)`)."""
    if not isinstance(settings, kind):
        raise TypeError(
            f"{method}: its settings are {kind.__name__}, the description holds "
            f"{type(settings).__name__}; load the model with its method's settings_type"
        )
    return settings
