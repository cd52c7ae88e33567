"""A formula's semantic annotations: the distinct texts its embedding is built from (paper §3.2).

D_i = the distinct, stripped texts among the item's label and description, its concepts'
labels and descriptions, and descriptions the snapshot could not attribute to one concept.
Duplicates are removed ignoring case and spacing, keeping the first spelling; the order is
item first, then concepts in their stored order, so the same row always gives the same list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

ANNOTATION_SCHEMA = pa.schema(
    [
        ("qid", pa.string()),
        ("texts", pa.list_(pa.string())),
        ("num_texts", pa.int32()),
    ]
)


def _clean(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    text = " ".join(text.split())
    return text or None


def annotation_texts(row: Mapping[str, Any]) -> list[str]:
    """The distinct annotation texts of one `wikidata_formulae` row."""
    candidates: list[object] = [row.get("label"), row.get("description")]
    for concept in row.get("concepts") or []:
        candidates += [concept.get("label"), concept.get("description")]
    candidates += list(row.get("unassigned_descriptions") or [])
    seen: set[str] = set()
    texts: list[str] = []
    for candidate in candidates:
        text = _clean(candidate)
        if text is None:
            continue
        key = text.casefold()
        if key not in seen:
            seen.add(key)
            texts.append(text)
    return texts


def build_annotations(rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    qids: list[str] = []
    texts: list[list[str]] = []
    for row in rows:
        qids.append(row["qid"])
        texts.append(annotation_texts(row))
    return pa.Table.from_pydict(
        {"qid": qids, "texts": texts, "num_texts": [len(t) for t in texts]},
        schema=ANNOTATION_SCHEMA,
    )
