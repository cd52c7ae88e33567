"""What each identifier of a query formula most likely denotes, with the evidence.

Three kinds of evidence, each a share in [0, 1] of the concepts it names, summed by weight:

* **aligned**: items whose formula has the query's pattern (the same formula up to renaming,
  order and sides). Their identifiers line up with the query's one to one (`v1` with `v1`),
  so the concept an item annotates on its identifier is a reading of the query's: for
  `E = m c^2`, mass–energy equivalence says E is energy, m mass, c the speed of light, and a
  query written `K = q w^2` is read the same way. Each item votes with its weight: more when
  it uses the query's very names, and the more alike the two formulae are;
* **found**: the items the search found (its first `FOUND`), where an item annotates the same
  identifier by name, weighted by rank;
* **corpus**: how the whole corpus annotates that identifier (`m` is mass in most items).

The corpus alone is the baseline ("the identifier's most frequent concept") the
leave-one-out benchmark compares with (docs/search.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from formula_assets.search.catalogue import Catalogue
from formula_assets.search.structure import SAME_PATTERN, StructureScores

ALIGNED, FOUND, CORPUS = "aligned", "found", "corpus"
WEIGHTS: Mapping[str, float] = {ALIGNED: 0.5, FOUND: 0.3, CORPUS: 0.2}
FOUND_DEPTH = 10
ALIGNED_DEPTH = 25
TOP = 3
ALIGNED_FLOOR = 0.25  # the vote of an aligned item with other names and nothing else alike


@dataclass(frozen=True)
class Reading:
    """One concept an identifier may denote."""

    concept: str
    label: str | None
    score: float
    evidence: dict[str, float] = field(default_factory=dict)  # kind → share
    # the items whose annotation says so (aligned and found), best first
    items: tuple[str, ...] = ()


@dataclass(frozen=True)
class SymbolExplanation:
    identifier: str
    readings: tuple[Reading, ...]
    corpus_count: int  # items that annotate this identifier at all


def aligned_items(
    found: StructureScores, rows: np.ndarray, identifiers: Sequence[Sequence[str]]
) -> list[tuple[int, Sequence[str], float]]:
    """The items with the query's pattern (`found`: the structure channel's scores; `rows`:
    each structure row's catalogue row, -1 for none; `identifiers`: each structure row's),
    best first, each with its vote: an item with the query's very names votes most, then the
    more alike the better."""
    same = np.flatnonzero(found.exact)
    same = same[np.argsort(-found.scores[same], kind="stable")]
    weights = found.scores[same] - SAME_PATTERN + ALIGNED_FLOOR
    return [
        (int(rows[i]), identifiers[i], float(w))
        for i, w in zip(same, weights, strict=True)
        if rows[i] >= 0
    ]


def _shares(votes: Counter[str]) -> dict[str, float]:
    total = sum(votes.values())
    return {c: v / total for c, v in votes.items()} if total else {}


def explain_symbols(
    identifiers: Sequence[str],
    aligned: Sequence[tuple[int, Sequence[str], float]],
    found: Sequence[int],
    catalogue: Catalogue,
    use: Mapping[str, Counter[str]],
    labels: Mapping[str, str],
    exclude: int | None = None,
    top: int = TOP,
) -> list[SymbolExplanation]:
    """Readings of each query identifier (`identifiers`: its v1, v2, … names).

    `aligned`: catalogue rows of items with the query's pattern, each with its own
    identifiers in the same order and its vote's weight; `found`: catalogue rows the search
    found, best first; `use`: `Catalogue.symbol_use` (identifier → concept counts);
    `exclude`: a row whose own annotations must not count (leave-one-out)."""
    out = []
    for k, name in enumerate(identifiers):
        votes: dict[str, Counter[str]] = {ALIGNED: Counter(), FOUND: Counter()}
        sources: dict[str, list[str]] = {}
        for row, theirs, weight in aligned[:ALIGNED_DEPTH]:
            if row == exclude or k >= len(theirs):
                continue
            concepts = {a.concept for a in catalogue.concepts_of(theirs[k], row)}
            for concept in concepts:
                votes[ALIGNED][concept] += weight
                sources.setdefault(concept, []).append(catalogue.qids[row])
        for rank, row in enumerate([r for r in found if r != exclude][:FOUND_DEPTH], start=1):
            for concept in {a.concept for a in catalogue.concepts_of(name, row)}:
                votes[FOUND][concept] += 1.0 / rank
                sources.setdefault(concept, []).append(catalogue.qids[row])
        shares = {kind: _shares(v) for kind, v in votes.items()}
        shares[CORPUS] = _shares(use.get(name, Counter()))
        scores: Counter[str] = Counter()
        for kind, weight in WEIGHTS.items():
            for concept, share in shares[kind].items():
                scores[concept] += weight * share
        readings = tuple(
            Reading(
                concept,
                labels.get(concept),
                round(score, 4),
                {
                    kind: round(shares[kind][concept], 4)
                    for kind in WEIGHTS
                    if concept in shares[kind]
                },
                tuple(dict.fromkeys(sources.get(concept, ()))),
            )
            for concept, score in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        )
        out.append(SymbolExplanation(name, readings, sum(use.get(name, Counter()).values())))
    return out
