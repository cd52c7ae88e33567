"""Rules behind the checks of `cv_folds`."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from formula_assets.core.checks import SAMPLE, Outcome
from formula_assets.core.protocol import FOLDS


def folds_valid(folds: pa.Table, formulae: pa.Table, valid_folds=FOLDS) -> Outcome:
    """Each formula in exactly one fold; folds within range; none empty."""
    qids = folds.column("qid").to_pylist()
    assigned = folds.column("fold").to_pylist()
    counts = Counter(qids)
    duplicated = sorted(q for q, n in counts.items() if n > 1)
    missing = sorted(set(formulae.column("qid").to_pylist()) - set(counts))
    out_of_range = sorted({f for f in assigned if f not in valid_folds}, key=str)
    sizes = Counter(assigned)
    empty = [f for f in valid_folds if sizes.get(f, 0) == 0]
    problems = []
    if duplicated:
        problems.append(f"{len(duplicated)} formulae in more than one fold")
    if missing:
        problems.append(f"{len(missing)} formulae without a fold")
    if out_of_range:
        problems.append(f"folds outside {valid_folds}: {out_of_range}")
    if empty:
        problems.append(f"empty folds: {empty}")
    return Outcome(
        not problems,
        "; ".join(problems) or f"{len(counts):,} formulae in {len(sizes)} disjoint folds",
        {
            "fold_sizes": {str(k): v for k, v in sorted(sizes.items(), key=str)},
            "sample": (duplicated + missing)[:SAMPLE],
        },
    )
