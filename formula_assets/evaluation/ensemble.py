"""The score ensemble: its members' weights and their hubness correction chosen on held-back
training data (the selection split), never on test.

A weighted sum of the members' scores, weights on a grid (step 0.1, summing to 1), the best
mean MRR over both directions on the given (validation) scorers; ties keep the first weighting.
Each member's scores are first corrected for hubness (`evaluation.hubness`) with one
neighbourhood size k from `HUBNESS_KS`, chosen with the weights (ties keep the smaller k).
"""

from __future__ import annotations

import functools
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
    normalise_rows,
    require_finite,
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
    """MRR of the given query rows under each weighting of the members: bit for bit what
    `gold_ranks` of each weighting's `WeightedScorer` gives, but with every member's scores
    computed once per chunk of rows, and each partial sum once for all the weightings that
    share it: the grid is lexicographic, so consecutive weightings share their first
    members' terms (3,003 weightings of six members need 4,367 sums of a block, not 18,018).
    Terms are summed in the members' order and a weight of 0 adds nothing, as in
    `ranking.weighted_sum`."""
    if any(len(w) != len(members) for w in weightings):
        raise ValueError(f"each weighting needs one weight per member ({len(members)})")
    used = [m for m in range(len(members)) if any(w[m] for w in weightings)]
    higher = np.empty((len(weightings), len(rows)), dtype=np.int64)
    ties = np.empty_like(higher)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        blocks = [np.asarray(members[m].block(part), dtype=np.float64) for m in used]
        for block in blocks:
            require_finite(block, part)
        gold_cells = (np.arange(len(part)), part)
        zeros = np.zeros((len(part), members[0].size))
        # sums[d]: the weighted sum of the first d + 1 used members (None: all weights 0)
        sums: list[np.ndarray | None] = []
        previous: tuple[float, ...] = ()
        for index, weighting in enumerate(weightings):
            weights = tuple(weighting[m] for m in used)
            shared = next(
                (d for d, (a, b) in enumerate(zip(weights, previous, strict=False)) if a != b),
                min(len(weights), len(previous)),
            )
            del sums[shared:]
            for depth in range(shared, len(weights)):
                below = sums[-1] if sums else None
                if weights[depth] == 0:
                    sums.append(below)
                    continue
                term = weights[depth] * blocks[depth]
                sums.append(term if below is None else below + term)
            previous = weights
            total = sums[-1] if sums and sums[-1] is not None else zeros
            gold = total[gold_cells][:, None]
            higher[index, start : start + chunk] = (total > gold).sum(axis=1)
            ties[index, start : start + chunk] = (total == gold).sum(axis=1) - 1
    return GoldRanks(higher, ties).reciprocal_rank().mean(axis=1)


@functools.cache
def _compositions(total: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """Every tuple of `parts` non-negative integers summing to `total`, in lexicographic
    order (what filtering `itertools.product` gives, without walking (total + 1) ** parts
    tuples: 1.8 M for six members, of which 3,003 are kept)."""
    if parts == 1:
        return ((total,),)
    return tuple(
        (first, *rest)
        for first in range(total + 1)
        for rest in _compositions(total - first, parts - 1)
    )


def _weight_grid(members: int, step: float = WEIGHT_STEP) -> list[tuple[float, ...]]:
    ticks = round(1 / step)
    return [tuple(c / ticks for c in combo) for combo in _compositions(ticks, members)]


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


def ensemble_inner_product(
    weights: Mapping[str, float],
    candidates: Mapping[str, np.ndarray],
    candidate_hubness: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The ensemble's candidate side as (matrix, bias), for one query at a time: with each
    member's query vector L2-normalised and set side by side in the weights' order,
    `matrix @ query + bias` is Σ weight × (cosine − ½ hubness), the score of
    `ensemble_scorer` over `HubnessScorer` members (`candidate_hubness` None: plain
    cosines); a member weighed 0 is left out. One product instead of one per member."""
    members = [(m, w) for m, w in weights.items() if w]
    widths = [np.shape(candidates[m])[1] for m, _ in members]
    # filled block by block: over many items only one member's copy exists besides the result
    matrix = np.empty((len(candidates[members[0][0]]), sum(widths)), dtype=np.float32)
    for (m, w), start, width in zip(members, np.cumsum([0, *widths]), widths, strict=False):
        matrix[:, start : start + width] = w * normalise_rows(np.asarray(candidates[m]))
    if candidate_hubness is None:
        return matrix, None
    bias = -0.5 * sum(w * np.asarray(candidate_hubness[m], np.float64) for m, w in members)
    return matrix, np.asarray(bias, np.float32)


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
