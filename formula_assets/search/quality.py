"""How well a channel finds an item from queries made of the item itself, measured where its
index is built (the figures land in the index asset's metadata; `benchmarks.search_variants`
measures the fused search the same way).

A query may match several items equally well: a renamed `v = λf` is every formula of that
shape, a label may be two items'. So each query reports two ranks: of the item itself
(`strict`), and of the first item the query cannot tell from it (`same_formula`: an item whose
formula has the same canonical pattern, or the same name, the item included).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

SUCCESS_AT = (1, 10)


@dataclass(frozen=True)
class Ranked:
    kind: str
    strict: int
    same_formula: int


def ranks(order: np.ndarray, row: int, alike: np.ndarray) -> tuple[int, int]:
    """(rank of `row`, rank of the first row in `alike`) in `order` (best first, 1-based)."""
    where = np.flatnonzero(order == row)
    strict = int(where[0]) + 1 if len(where) else len(order) + 1
    first = np.flatnonzero(np.isin(order, alike))
    return strict, (int(first[0]) + 1 if len(first) else strict)


def summary(results: Iterable[Ranked]) -> dict[str, dict[str, float]]:
    """Per kind and over all: queries, success@1 and @10 and MRR, strict and same-formula."""
    by_kind: dict[str, list[Ranked]] = {}
    for result in results:
        by_kind.setdefault(result.kind, []).append(result)
        by_kind.setdefault("all", []).append(result)
    out: dict[str, dict[str, float]] = {}
    for kind, rows in by_kind.items():
        figures: dict[str, float] = {"queries": len(rows)}
        for field in ("strict", "same_formula"):
            values = np.array([getattr(r, field) for r in rows], dtype=np.float64)
            for k in SUCCESS_AT:
                figures[f"{field}_success_at_{k}"] = round(float(np.mean(values <= k)), 4)
            figures[f"{field}_mrr"] = round(float(np.mean(1.0 / values)), 4)
        out[kind] = figures
    return out


def evaluate(
    queries: Iterable[tuple[str, int, np.ndarray, Callable[[], np.ndarray]]],
) -> list[Ranked]:
    """(kind, the item's row, rows alike, the query's scores) → each query's ranks."""
    out = []
    for kind, row, alike, scores in queries:
        order = np.argsort(-scores(), kind="stable")
        strict, same = ranks(order, row, alike)
        out.append(Ranked(kind, strict, same))
    return out
