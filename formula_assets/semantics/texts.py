"""Annotation texts as one text, for a model that reads them as one input (the fine-tuned
encoder; the audit's concepts for it).

Apart from `semantics.annotations` so that the methods, which every result asset imports,
do not take that module's code version: an edit to how annotations are collected rebuilds
`concept_annotations` and what reads it, not every fold model."""

from __future__ import annotations

from collections.abc import Sequence

# how annotation texts (item first, then its concepts) become one text
TEXT_SEPARATOR = "; "


def annotation_text(texts: Sequence[str]) -> str:
    """Annotation texts as one text, in stored order."""
    return TEXT_SEPARATOR.join(texts)
