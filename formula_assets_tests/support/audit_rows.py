"""A lead as the `annotation_audit` table stores it, for tests that write audit tables."""

from __future__ import annotations

from typing import Any

FIELDS = ("symbol", "concept", "suggestion", "suggestion_label", "quickstatements")


def lead(kind: str, text: str, score: float, **more: Any) -> dict[str, Any]:
    """A stored lead: the fields not given are empty."""
    return {
        "kind": kind,
        "text": text,
        "score": score,
        "items": [],
        **dict.fromkeys(FIELDS),
        **more,
    }
