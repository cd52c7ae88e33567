"""The search index's table: its columns, its metadata and how one fold is read back.

Shared by the builder (`search.index`, run by the `search_index` asset) and the searcher, which
imports only this from the index side, so a query from a cold process loads no Table 2 code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from formula_assets.core.arrow import vectors
from formula_assets.methods import registry

HELD_OUT = "test"
STRUCTURAL, SEMANTIC = 0, 1  # the sides of a method's (structural, semantic) space
METADATA_KEY = b"formula_assets.search_index"

INDEX_SCHEMA = pa.schema(
    [
        ("fold", pa.int8()),
        ("method", pa.string()),
        ("qid", pa.string()),
        ("split", pa.string()),
        ("structural", pa.list_(pa.float32())),
        ("semantic", pa.list_(pa.float32())),
        # each vector's hubness as a candidate for the ensemble (see evaluation.hubness)
        ("structural_hubness", pa.float64()),
        ("semantic_hubness", pa.float64()),
    ]
)


@dataclass
class ServingVectors:
    """One fold's candidates: per method the (structural, semantic) matrices, in `qids` order."""

    fold: int
    qids: list[str]
    splits: list[str]
    spaces: dict[str, tuple[np.ndarray, np.ndarray]]
    # per method: the (structural, semantic) vectors' hubness as candidates
    hubness: dict[str, tuple[np.ndarray, np.ndarray]]
    summary: dict

    @classmethod
    def merged(cls, parts: list[ServingVectors], fold: int) -> ServingVectors:
        """The methods of several reads of one fold as one (their rows must agree)."""
        if not parts:
            raise ValueError(f"the search index has no fold {fold}")
        first = parts[0]
        for part in parts[1:]:
            if part.fold != first.fold or part.qids != first.qids:
                raise ValueError("the methods' rows differ within one fold")
        spaces = {m: v for part in parts for m, v in part.spaces.items()}
        hubness = {m: v for part in parts for m, v in part.hubness.items()}
        return cls(first.fold, first.qids, first.splits, spaces, hubness, first.summary)

    @property
    def weights(self) -> dict[str, float]:
        return self.summary["ensemble_weights"][str(self.fold)]

    @property
    def hubness_k(self) -> int:
        return int(self.summary["ensemble_hubness_k"][str(self.fold)])


def index_summary(table_or_schema: pa.Table | pa.Schema) -> dict:
    schema = table_or_schema.schema if isinstance(table_or_schema, pa.Table) else table_or_schema
    metadata = schema.metadata
    return json.loads((metadata or {}).get(METADATA_KEY, b"{}"))


def serving_vectors(table: pa.Table, fold: int) -> ServingVectors:
    """The rows of one fold, as matrices per method it holds (all methods share one qid
    order); the table may hold only some methods (a reader that needs no others)."""
    summary = index_summary(table)
    rows = _where(table, "fold", fold)
    if not rows.num_rows:
        raise ValueError(f"the search index has no fold {fold}")
    spaces: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    hubness: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    qids: list[str] | None = None
    splits: list[str] = []
    for method in registry.indexed():
        part = _where(rows, "method", method)
        if not part.num_rows:
            continue
        structural = part.column("structural")
        spaces[method] = (
            vectors(structural, len(structural[0])),
            vectors(part.column("semantic"), len(part.column("semantic")[0])),
        )
        hubness[method] = (
            part.column("structural_hubness").to_numpy(),
            part.column("semantic_hubness").to_numpy(),
        )
        if qids is None:
            qids, splits = part.column("qid").to_pylist(), part.column("split").to_pylist()
    return ServingVectors(fold, qids or [], splits, spaces, hubness, summary)


def _where(table: pa.Table, column: str, value: object) -> pa.Table:
    """The rows whose `column` is `value`: a zero-copy slice when they are contiguous, as the
    index writes them (a filtered copy of a 100× index would double its memory at start)."""
    found = np.flatnonzero(pc.equal(table.column(column), value).to_numpy(zero_copy_only=False))
    if len(found) and found[-1] - found[0] + 1 == len(found):
        return table.slice(int(found[0]), len(found))
    return table.take(found)
