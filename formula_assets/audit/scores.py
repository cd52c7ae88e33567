"""How plausible each item's own formula–annotation pair is, against every other item's.

An item of fold k is a test item of fold k: its query runs on the fold-k models, which never
trained on it, over the search index's vectors of every item of that fold (so the candidate
pool is all items' annotations, and all items' formulae). The ensemble is Table 2's: the
fold's members, weights and hubness k that the selection split chose, as the search index
recorded them, scored by `evaluation.ensemble`; ranks come from `evaluation.ranking`.

Per item and direction: the rank of its own pair (1 = best; a tie counts against it), the
margin by which the best other pair beats it (max_{j≠i} s(fᵢ, aⱼ) − s(fᵢ, aᵢ), positive when
another item's annotation fits its formula better), and the items the models prefer. The
item's suspicion is computed per concept (`audit.concepts`): the pair margin measured on the
validation splits separated corrupted annotations less well (docs/audit.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from formula_assets.evaluation.ensemble import EnsembleChoice, ensemble_scorers
from formula_assets.evaluation.hubness import SpaceHubness, hubness
from formula_assets.evaluation.ranking import CHUNK, CosineScorer, Scorer, gold_ranks
from formula_assets.evaluation.retrieval import REFERENCE_SPLIT
from formula_assets.search.layout import ServingVectors

TOP = 3  # preferred items listed per direction


@dataclass(frozen=True)
class PairScores:
    """Per query row (a held-out item): its own pair's ranks, margins and the preferred items
    (as candidate rows, best first), in both directions."""

    rows: np.ndarray
    forward_rank: np.ndarray  # its annotation among all annotations, for its formula
    backward_rank: np.ndarray  # its formula among all formulae, for its annotation
    forward_margin: np.ndarray
    backward_margin: np.ndarray
    preferred_annotations: np.ndarray  # rows × TOP
    preferred_formulae: np.ndarray

    @property
    def margin(self) -> np.ndarray:
        """How far the own pair falls below the best other one, both directions averaged."""
        return (self.forward_margin + self.backward_margin) / 2


def ensemble_pair_scorers(vectors: ServingVectors) -> tuple[Scorer, Scorer]:
    """(formula → annotation, annotation → formula) scorers of Table 2's ensemble on one fold."""
    weights = vectors.weights
    missing = [m for m in weights if m not in vectors.spaces]
    if missing:
        raise ValueError(f"fold {vectors.fold}: the index lacks ensemble members {missing}")
    choice = EnsembleChoice(dict(weights), vectors.hubness_k)
    spaces = {m: vectors.spaces[m] for m in weights}
    hubs = {m: SpaceHubness(*vectors.hubness[m]) for m in weights}
    return ensemble_scorers(choice, spaces, hubs)


def method_pair_scorers(vectors: ServingVectors, method: str) -> tuple[Scorer, Scorer]:
    """One method's scorers by plain cosine, as Table 2 scores a single method."""
    forward = CosineScorer(*vectors.spaces[method])
    return forward, forward.reverse()


def pair_scores(forward: Scorer, backward: Scorer, rows: np.ndarray, top: int = TOP) -> PairScores:
    """Ranks (1 = best; a tie counts against the own pair), margins and preferred items of
    the query `rows`; the gold of row i is candidate i."""
    rows = np.asarray(rows, dtype=np.int64)
    if forward.size < 2:
        raise ValueError("an audit needs at least two items to compare")
    ranks = [gold_ranks(s, rows) for s in (forward, backward)]
    (f_margin, f_top), (b_margin, b_top) = (_margins(s, rows, top) for s in (forward, backward))
    return PairScores(
        rows,
        1 + ranks[0].higher + ranks[0].ties,
        1 + ranks[1].higher + ranks[1].ties,
        f_margin,
        b_margin,
        f_top,
        b_top,
    )


def _margins(scorer: Scorer, rows: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Best other candidate's score minus the own one's, and the best `top` other candidates."""
    top = min(top, scorer.size - 1)
    margins = np.empty(len(rows))
    best = np.empty((len(rows), top), dtype=np.int64)
    for start in range(0, len(rows), CHUNK):
        part = rows[start : start + CHUNK]
        block = np.array(scorer.block(part), dtype=np.float64)
        at = np.arange(len(part))
        own = block[at, part].copy()
        block[at, part] = -np.inf
        order = np.argsort(-block, axis=1, kind="stable")[:, :top]
        best[start : start + len(part)] = order
        margins[start : start + len(part)] = block[at, order[:, 0]] - own
    return margins, best


def with_semantic(
    vectors: ServingVectors, rows: np.ndarray, semantic: Mapping[str, np.ndarray]
) -> ServingVectors:
    """A copy of a fold whose `rows` have other annotation vectors (per method, in `rows`
    order), their hubness as candidates recomputed as the index computes it (against the
    fold's training split, with the fold's k). No rows: the fold as it is (the vectors of no
    annotations have no width to check against)."""
    if not len(rows):
        return vectors
    spaces = dict(vectors.spaces)
    hubs = dict(vectors.hubness)
    for method, new in semantic.items():
        structural, old = spaces[method]
        changed = old.copy()
        changed[rows] = new
        spaces[method] = (structural, changed)
        if method in vectors.weights:
            structural_hub, semantic_hub = hubs[method]
            semantic_hub = semantic_hub.copy()
            semantic_hub[rows] = candidate_hubness(
                new, training_structural(vectors, method), vectors.hubness_k
            )
            hubs[method] = (structural_hub, semantic_hub)
    return replace(vectors, spaces=spaces, hubness=hubs)


def candidate_hubness(semantic: np.ndarray, train_structural: np.ndarray, k: int) -> np.ndarray:
    """Annotation vectors' hubness as candidates, as `search.index` stores it."""
    return hubness(semantic, train_structural, k)


def training_structural(vectors: ServingVectors, method: str) -> np.ndarray:
    """The structural vectors of the fold's training split: the hubness reference."""
    return vectors.spaces[method][0][np.asarray(vectors.splits) == REFERENCE_SPLIT]
