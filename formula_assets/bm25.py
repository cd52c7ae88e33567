"""The BM25 baseline of Table 2: linearised OPT tokens against the formula's annotation text.

Both sides go through one tokenizer (lower-cased words and single symbols), so a shared
token such as a variable name can match; the paper's point is that there are few.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

_TOKEN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_scores(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
    """scores[i, j]: BM25 of document j for query i; IDF from `documents` only."""
    corpus = [tokenize(d) or ["∅"] for d in documents]
    index = BM25Okapi(corpus)
    return (
        np.vstack([index.get_scores(tokenize(q)) for q in queries])
        if queries
        else np.zeros((0, len(documents)))
    )
