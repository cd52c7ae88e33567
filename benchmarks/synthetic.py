"""Synthetic corpora 10× and 100× the snapshot, built by recombining snapshot formulae.

Each synthetic item joins two random snapshot formulae into one (`a , b` in one row), with a
label and concepts drawn from both, so its structure and its texts are new but realistic.
"""

from __future__ import annotations

import random
import re

import numpy as np

from formula_assets.ingest.records import FormulaRecord
from formula_assets.ingest.snapshot import snapshot_records

_INNER = re.compile(r"^\s*<math[^>]*>(.*)</math>\s*$", re.S)


def _inner(mathml: str) -> str:
    match = _INNER.match(mathml)
    return match.group(1) if match else mathml


def combine(a: str, b: str) -> str:
    return f"<math><mrow>{_inner(a)}<mo>,</mo>{_inner(b)}</mrow></math>"


def synthetic_records(scale: int, seed: int = 0) -> tuple[list[FormulaRecord], np.ndarray]:
    """`scale` × the snapshot; also, per record, the two snapshot rows it was built from."""
    base = list(snapshot_records())
    rng = random.Random(seed)
    records = list(base)
    parents = [(i, i) for i in range(len(base))]
    for n in range((scale - 1) * len(base)):
        i, j = rng.sample(range(len(base)), 2)
        a, b = base[i], base[j]
        records.append(
            FormulaRecord(
                qid=f"Q{900_000_000 + n}",
                label=f"{a.label} with {b.label}",
                description=a.description,
                mathml=combine(a.mathml or "", b.mathml or ""),
                concepts=a.concepts[:3] + b.concepts[:3],
                source="synthetic",
            )
        )
        parents.append((i, j))
    return records, np.array(parents)
