"""Channels' rankings fused into one list: weighted reciprocal-rank fusion, exact matches first.

Each channel scores every item it knows; only its first `depth` items vote, each with
`weight / (k + rank)`, so one channel's long tail never outweighs another's top. An item a
channel calls an exact match (the query is one of its names, or its very formula) gains that
channel's `exact` bonus: what a person typed precisely comes first, in the order of the
channel that matched it (two items with the very same formula keep the structure channel's
order, not the trained models', which favour the items they were trained on). The weights
were chosen on the tuning part of the hand-written queries (docs/search.md), never on its
test part.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

NAMES, STRUCTURE, MEANING = "names", "structure", "meaning"
CHANNELS = (NAMES, STRUCTURE, MEANING)


@dataclass(frozen=True)
class ChannelScores:
    """One channel's scores over the items it knows (`rows`: their places in the catalogue);
    `exact`: how exactly each matches the query (0: not; 1: the very name or formula; a
    channel may say less, such as a formula equal up to renaming)."""

    rows: np.ndarray
    scores: np.ndarray
    exact: np.ndarray | None = None


@dataclass(frozen=True)
class ChannelRank:
    rank: int
    score: float
    exact: bool


@dataclass(frozen=True)
class Fused:
    row: int
    score: float
    channels: dict[str, ChannelRank] = field(default_factory=dict)


@dataclass(frozen=True)
class FusionWeights:
    k: float = 10.0
    depth: int = 100
    weights: Mapping[str, float] = field(
        default_factory=lambda: {NAMES: 1.0, STRUCTURE: 1.0, MEANING: 0.1}
    )
    exact: Mapping[str, float] = field(default_factory=lambda: {NAMES: 1.0, STRUCTURE: 1.0})


SAMPLE_STRIDE = 16


def top_rows(scores: np.ndarray, depth: int) -> np.ndarray:
    """The positions of the `depth` highest scores, best first (ties: lower position first):
    a partial sort, so a channel over many items costs little more than one pass. Over many
    items the partial sort first reads every `SAMPLE_STRIDE`th score: its `depth`th highest is
    a floor at least `depth` scores reach, so only the scores above it are sorted (exact)."""
    candidates = np.arange(len(scores))
    if len(scores) > SAMPLE_STRIDE * depth:
        sample = scores[::SAMPLE_STRIDE]
        floor = np.partition(sample, len(sample) - depth)[len(sample) - depth]
        candidates = np.flatnonzero(scores >= floor)
    if len(candidates) > depth:  # the cut's ties all taken, so the order below decides them
        kept = scores[candidates]
        best = np.argpartition(kept, len(kept) - depth)[len(kept) - depth :]
        candidates = candidates[kept >= kept[best].min()]
    order = candidates[np.lexsort((candidates, -scores[candidates]))]
    return order[:depth]


def fuse(
    channels: Mapping[str, ChannelScores], weights: FusionWeights = FusionWeights()
) -> list[Fused]:
    """Every item some channel ranks within its `depth`, best first: exact matches before the
    rest (the more exact bonus, the earlier), among them in the order of the channel that
    matched them exactly, then by the votes (ties: catalogue order)."""
    # per row some channel ranks (a few hundred: no array of every item)
    votes: dict[int, float] = defaultdict(float)
    bonuses: dict[int, float] = defaultdict(float)
    exact_rank: dict[int, float] = defaultdict(lambda: np.inf)
    found: dict[int, dict[str, ChannelRank]] = {}
    for name, channel in channels.items():
        if not len(channel.scores):
            continue
        order = top_rows(channel.scores, weights.depth)
        weight = weights.weights.get(name, 0.0)
        bonus = weights.exact.get(name, 0.0)
        exacts = channel.exact[order].tolist() if channel.exact is not None else [0.0] * len(order)
        listed = zip(
            channel.rows[order].tolist(), channel.scores[order].tolist(), exacts, strict=True
        )
        for rank, (row, score, exact) in enumerate(listed, start=1):
            votes[row] += weight / (weights.k + rank)
            if bonus and exact:
                bonuses[row] += bonus * exact
                exact_rank[row] = min(exact_rank[row], rank)
            found.setdefault(row, {})[name] = ChannelRank(rank, float(score), exact >= 1.0)
    rows = sorted(found, key=lambda r: (-bonuses[r], exact_rank[r], -votes[r], r))
    return [Fused(r, float(bonuses[r] + votes[r]), found[r]) for r in rows]
