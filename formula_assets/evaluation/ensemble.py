"""The score ensemble: its members' weights and their hubness correction chosen on held-back
training data (the selection split), never on test.

A weighted sum of the members' scores, weights on a grid (step 0.1, summing to 1), the best
mean MRR over both directions on the given (validation) scorers; ties keep the first weighting.
Each member's scores are first corrected for hubness (`evaluation.hubness`) with one
neighbourhood size k from `HUBNESS_KS`, chosen with the weights (ties keep the smaller k).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from formula_assets.evaluation.hubness import (
    HUBNESS_KS,
    Space,
    SpaceHubness,
    corrected_scorers,
    space_hubness,
)
from formula_assets.evaluation.ranking import (
    CHUNK,
    GoldRanks,
    MatrixScorer,
    Scorer,
    WeightedScorer,
    block_ranks,
    weighted_sum,
)

WEIGHT_STEP = 0.1

# Weight selection ranks at most this many validation queries per combination (all
# validation formulae stay candidates): enough to choose among 66 weightings, bounded at scale.
MAX_SELECTION_QUERIES = 3000


def _weighting_mrrs(
    members: Sequence[Scorer],
    weightings: Sequence[tuple[float, ...]],
    rows: np.ndarray,
    chunk: int = CHUNK,
) -> np.ndarray:
    """MRR of the given query rows under each weighting of the members: what `gold_ranks` of
    each weighting's `WeightedScorer` gives, summed in the same order, but with every member's
    scores computed once per chunk of rows instead of once per weighting (a grid of 1,001
    weightings would otherwise recompute each member's cosines 1,001 times)."""
    higher = np.empty((len(weightings), len(rows)), dtype=np.int64)
    ties = np.empty_like(higher)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        blocks = [np.asarray(member.block(part), dtype=np.float64) for member in members]
        shape = (len(part), members[0].size)
        for index, weights in enumerate(weightings):
            terms = ((w, lambda b=block: b) for w, block in zip(weights, blocks, strict=True))
            ranks = block_ranks(weighted_sum(terms, shape), part)
            higher[index, start : start + chunk], ties[index, start : start + chunk] = ranks
    return np.array(
        [float(GoldRanks(h, t).reciprocal_rank().mean()) for h, t in zip(higher, ties, strict=True)]
    )


def _weight_grid(members: int, step: float = WEIGHT_STEP) -> list[tuple[float, ...]]:
    ticks = round(1 / step)
    return [
        tuple(c / ticks for c in combo)
        for combo in itertools.product(range(ticks + 1), repeat=members)
        if sum(combo) == ticks
    ]


def choose_weights(
    validation: Sequence[Scorer | np.ndarray],
    reverse: Sequence[Scorer | np.ndarray] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[float, ...]:
    """Weights (summing to 1, step 0.1) maximising validation MRR; ties keep the first.

    Members are scorers (or plain score matrices); `reverse` scores the other direction
    (default: the transposed matrices).
    """
    return best_weights(validation, reverse, rng)[0]


def best_weights(
    validation: Sequence[Scorer | np.ndarray],
    reverse: Sequence[Scorer | np.ndarray] | None = None,
    rng: np.random.Generator | None = None,
) -> tuple[tuple[float, ...], float]:
    """`choose_weights`'s weights and the mean MRR over both directions they reach."""
    forward = [_as_scorer(m) for m in validation]
    backward = (
        [_as_scorer(m) for m in reverse]
        if reverse is not None
        else [_as_scorer(np.asarray(m).T) for m in validation]
    )
    n = forward[0].size
    rows = np.arange(n)
    if n > MAX_SELECTION_QUERIES:
        rng = rng or np.random.default_rng(0)
        rows = np.sort(rng.choice(n, MAX_SELECTION_QUERIES, replace=False))
    grid = _weight_grid(len(forward))
    qualities = (_weighting_mrrs(forward, grid, rows) + _weighting_mrrs(backward, grid, rows)) / 2
    best, best_quality = None, -1.0
    for weights, quality in zip(grid, qualities, strict=True):
        if quality > best_quality + 1e-12:
            best, best_quality = weights, float(quality)
    if best is None:
        raise ValueError("no member to weight: the ensemble needs at least one scorer")
    return best, best_quality


def _as_scorer(member: Scorer | np.ndarray) -> Scorer:
    return MatrixScorer(member) if isinstance(member, np.ndarray) else member


def ensemble_scorer(weights: Mapping[str, float], members: Mapping[str, Scorer]) -> Scorer:
    """Σ weight × member score, summed in the weights' (the members') order."""
    return WeightedScorer([(weight, members[m]) for m, weight in weights.items()])


@dataclass(frozen=True)
class EnsembleChoice:
    """What the selection split chose for one fold: member weights and the hubness k."""

    weights: dict[str, float]  # member → weight, in the members' order
    hubness_k: int

    @property
    def members(self) -> tuple[str, ...]:
        return tuple(self.weights)


def choose_ensemble(
    selection: Mapping[str, Space],
    reference: Mapping[str, Space],
    ks: Sequence[int] = HUBNESS_KS,
) -> EnsembleChoice:
    """The weights and hubness k with the best selection MRR. `selection`: the members'
    spaces of the selection split, in the members' order (the weight grid's); `reference`:
    theirs of the training split (a k larger than it is skipped)."""
    members = tuple(selection)
    fewest = min(len(reference[m][0]) for m in members)
    best: tuple[float, EnsembleChoice] | None = None
    for k in ks:
        if k > fewest:
            continue
        forward, backward = corrected_members(selection, member_hubness(selection, reference, k))
        weights, quality = best_weights(
            [forward[m] for m in members], [backward[m] for m in members]
        )
        if best is None or quality > best[0] + 1e-12:
            best = quality, EnsembleChoice(dict(zip(members, weights, strict=True)), k)
    if best is None:
        raise ValueError(f"no hubness k in {tuple(ks)} fits {fewest} training formulae")
    return best[1]


def member_hubness(
    spaces: Mapping[str, Space], reference: Mapping[str, Space], k: int
) -> dict[str, SpaceHubness]:
    """Per member (the keys of `spaces`): each formula's hubness as a candidate, against the
    reference split."""
    return {m: space_hubness(spaces[m], reference[m], k) for m in spaces}


def corrected_members(
    spaces: Mapping[str, Space], hubs: Mapping[str, SpaceHubness]
) -> tuple[dict[str, Scorer], dict[str, Scorer]]:
    """Per member (the keys of `hubs`): its hubness-corrected scorers of both directions."""
    forward, backward = {}, {}
    for member in hubs:
        forward[member], backward[member] = corrected_scorers(spaces[member], hubs[member])
    return forward, backward


def ensemble_scorers(
    choice: EnsembleChoice, spaces: Mapping[str, Space], hubs: Mapping[str, SpaceHubness]
) -> tuple[Scorer, Scorer]:
    """The ensemble's (syntactic → semantic, semantic → syntactic) scorers over `spaces`,
    `hubs` being the members' hubness there with the chosen k (`member_hubness`)."""
    forward, backward = corrected_members(spaces, hubs)
    return ensemble_scorer(choice.weights, forward), ensemble_scorer(choice.weights, backward)
