"""Rules behind the checks of `retrieval_scores`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

import pyarrow as pa

from formula_assets.core.checks import SAMPLE, Outcome
from formula_assets.core.protocol import DIRECTIONS, FOLDS

CHANCE_MARGIN = 3.0


def scores_complete(scores: pa.Table, methods: Collection[str], folds=FOLDS) -> Outcome:
    """Every fold × method × direction scored once; `methods`: every row's method (the
    lineup's names, the ensemble included)."""
    keys = Counter(
        zip(
            scores["fold"].to_pylist(),
            scores["method"].to_pylist(),
            scores["direction"].to_pylist(),
            strict=True,
        )
    )
    expected = {(f, m, d) for f in folds for m in methods for d in DIRECTIONS}
    missing = sorted(expected - set(keys))
    doubled = sorted(k for k, n in keys.items() if n > 1)
    passed = not missing and not doubled
    return Outcome(
        passed,
        f"{len(expected)} fold × method × direction rows"
        if passed
        else f"{len(missing)} rows missing, {len(doubled)} doubled",
        {"missing": [str(k) for k in missing[:SAMPLE]], "doubled": [str(k) for k in doubled]},
    )


def scores_consistent(scores: pa.Table) -> Outcome:
    bad = [
        f"fold {r['fold']} {r['method']} {r['direction']}"
        for r in scores.to_pylist()
        if not (
            0 <= r["recall_at_1"] <= r["recall_at_5"] <= r["recall_at_10"] <= 1
            and 0 <= r["mrr"] <= 1
        )
    ]
    return Outcome(
        not bad,
        "R@1 ≤ R@5 ≤ R@10 ≤ 1 everywhere" if not bad else f"{len(bad)} inconsistent rows",
        {"sample": bad[:SAMPLE]},
    )


def required_recall_at_10(candidates: int, margin: float = CHANCE_MARGIN) -> float:
    """`margin` × chance (10 / candidates), capped halfway between chance and 1 for small pools."""
    chance = min(1.0, 10 / max(candidates, 1))
    return min(margin * chance, chance + (1 - chance) / 2)


def scores_beat_chance(
    scores: pa.Table, judged: Collection[str], margin: float = CHANCE_MARGIN
) -> Outcome:
    """The `judged` methods' (the trained ones and the ensemble) R@10 ≥ margin × chance."""
    weak = [
        f"fold {r['fold']} {r['method']} {r['direction']}: R@10 {r['recall_at_10']:.3f}"
        f" < {required_recall_at_10(r['candidates'], margin):.3f}"
        f" (chance {min(1.0, 10 / r['candidates']):.3f})"
        for r in scores.to_pylist()
        if r["method"] in judged
        and r["recall_at_10"] < required_recall_at_10(r["candidates"], margin)
    ]
    return Outcome(
        not weak,
        f"every trained method ≥ {margin:g}× chance R@10"
        if not weak
        else f"{len(weak)} rows within {margin:g}× of chance",
        {"weak": weak[:SAMPLE]},
    )
