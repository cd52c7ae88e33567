"""The methods Table 2 compares, as evaluation sees them.

Evaluation does not know the methods: the caller (the method registry, through the assets)
passes a `Lineup` — which methods, in which row order, which are trained and which the
score ensemble weighs — and each method scores a fold's formulae itself, from `FoldData`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from formula_assets.core.protocol import ENSEMBLE
from formula_assets.evaluation.hubness import Space
from formula_assets.evaluation.ranking import Scorer


class SplitVectors(Protocol):
    """A trained model's vectors of one split's formulae (None: of all) in the shared space."""

    def split_vectors(self, split: str | None) -> tuple[list[str], np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class FoldData:
    """What a method may score one fold's formulae from: the fold's trained models (by
    method) and, per formula, the frozen sentence vectors and the BM25 documents."""

    models: Mapping[str, SplitVectors]
    opt_vectors: Mapping[str, np.ndarray]
    semantic_vectors: Mapping[str, np.ndarray]
    opt_text: Mapping[str, str] = field(default_factory=dict)
    semantic_text: Mapping[str, str] = field(default_factory=dict)


class Scored(Protocol):
    """A method as Table 2 sees it."""

    name: str

    def space(self, data: FoldData, split: str | None, qids: Sequence[str]) -> Space | None:
        """The (structural, semantic) vectors of the given formulae of `split` (None: every
        formula the fold's models hold), one shared space that cosine scores; None for a
        method without vectors, which scores with `scorers`."""
        ...

    def scorers(self, data: FoldData, split: str, qids: Sequence[str]) -> tuple[Scorer, Scorer]:
        """(syntactic → semantic, semantic → syntactic) scorers over the given formulae."""
        ...


@dataclass(frozen=True)
class Lineup:
    """Table 2's methods in row order (the ensemble's row comes last), the ones trained per
    fold, and the ensemble's members in the order their weights are chosen."""

    methods: tuple[Scored, ...]
    trained: tuple[str, ...]
    members: tuple[Scored, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every row's method, the ensemble last."""
        return (*(m.name for m in self.methods), ENSEMBLE)

    @property
    def baselines(self) -> tuple[str, ...]:
        """The methods that learn nothing."""
        return tuple(m.name for m in self.methods if m.name not in self.trained)

    @property
    def judged(self) -> tuple[str, ...]:
        """The methods that must beat chance: the trained ones and the ensemble."""
        return (*self.trained, ENSEMBLE)
