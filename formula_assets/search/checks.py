"""Rules behind the checks of `search_index`."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formula_assets.core.checks import SAMPLE, Outcome
from formula_assets.methods import registry
from formula_assets.search.layout import index_summary


def index_complete(table: pa.Table) -> Outcome:
    """Every fold holds every method over the same formulae, with finite vectors."""
    problems: list[str] = []
    summary = index_summary(table)
    folds = sorted(set(table.column("fold").to_pylist()))
    if not folds:
        problems.append("the index is empty")
    if folds and summary.get("serving_fold") not in folds:
        problems.append(f"serving fold {summary.get('serving_fold')} is not indexed")
    indexed = registry.indexed()
    for fold in folds:
        rows = table.filter(pc.equal(table.column("fold"), fold))
        qid_sets = {}
        for method in indexed:
            part = rows.filter(pc.equal(rows.column("method"), method))
            qid_sets[method] = part.column("qid").to_pylist()
            for side in ("structural", "semantic"):
                flat = pc.list_flatten(part.column(side)).to_numpy(zero_copy_only=False)
                if not np.isfinite(flat).all():
                    problems.append(f"fold {fold} {method}: non-finite {side} vectors")
        if any(q != qid_sets[indexed[0]] or not q for q in qid_sets.values()):
            problems.append(f"fold {fold}: the methods index different or no formulae")
    return Outcome(
        not problems,
        "every fold indexes every method over the same formulae, vectors finite"
        if not problems
        else f"{len(problems)} problem(s): {problems[0]}",
        {"problems": problems[:SAMPLE], "folds": folds},
    )
