"""Hubness correction for the ensemble's members: CSLS (Conneau et al., 2018, "Word
translation without parallel data"), with the fold's training split as the reference set.

In a shared space some candidates ("hubs") lie close to many queries and crowd the top of
every ranking. CSLS scores a pair 2·cos(x, y) − r(x) − r(y), where r(v) is the mean cosine of
v to its k nearest neighbours of the other modality. r(x) is the same for every candidate of a
query and drops out of its ranking, so a member's corrected score is cos(x, y) − ½ r(y): the
candidate's hubness alone, measured against the training split's formulae (never the test
fold, so each query is ranked on its own). k = 0 means no correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from formula_assets.evaluation.ranking import CHUNK, CosineScorer, Scorer, normalise_rows

# The neighbourhood sizes the ensemble chooses from (with its weights, on the selection split)
HUBNESS_KS = (0, 5, 10)
# Hubness is rounded to this many decimals: the last bits of a matrix product depend on the
# BLAS's thread count and CPU, and the search index that stores it must have one data version
# wherever it is built (a local refresh, a Celery worker).
HUBNESS_DECIMALS = 6


def hubness(vectors: np.ndarray, references: np.ndarray, k: int) -> np.ndarray:
    """Per row of `vectors`: the mean cosine to its k nearest `references` (0 when k = 0),
    rounded to `HUBNESS_DECIMALS`."""
    if k == 0:
        return np.zeros(len(vectors))
    if k > len(references):
        raise ValueError(f"hubness over {k} neighbours needs as many references: {len(references)}")
    refs = normalise_rows(np.asarray(references, dtype=np.float64))
    vecs = normalise_rows(np.asarray(vectors, dtype=np.float64))
    out = np.empty(len(vecs))
    for start in range(0, len(vecs), CHUNK):
        cosines = vecs[start : start + CHUNK] @ refs.T
        out[start : start + CHUNK] = np.partition(cosines, -k, axis=1)[:, -k:].mean(axis=1)
    return np.round(out, HUBNESS_DECIMALS)


@dataclass
class HubnessScorer:
    """A member's scores less half of each candidate's hubness (CSLS up to a per-query
    constant)."""

    base: Scorer
    candidate_hubness: np.ndarray

    def __post_init__(self) -> None:
        self.size = self.base.size
        self.candidate_hubness = np.asarray(self.candidate_hubness, dtype=np.float64)

    def block(self, rows: np.ndarray) -> np.ndarray:
        return self.base.block(rows) - 0.5 * self.candidate_hubness[None, :]


# (structural, semantic) vectors of the same formulae, row-aligned, in one member's space
Space = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class SpaceHubness:
    """Each formula's hubness as a candidate: its structural vector among the reference
    semantic vectors (semantic → syntactic queries), and the reverse."""

    structural: np.ndarray
    semantic: np.ndarray


def space_hubness(space: Space, reference: Space, k: int) -> SpaceHubness:
    return SpaceHubness(
        structural=hubness(space[0], reference[1], k),
        semantic=hubness(space[1], reference[0], k),
    )


def corrected_scorers(space: Space, hub: SpaceHubness) -> tuple[Scorer, Scorer]:
    """(syntactic → semantic, semantic → syntactic) scorers of a space, hubness-corrected."""
    forward = CosineScorer(space[0], space[1])
    return HubnessScorer(forward, hub.semantic), HubnessScorer(forward.reverse(), hub.structural)
