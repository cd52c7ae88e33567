"""The BM25 baseline of Table 2: linearised OPT tokens against the formula's annotation text.

Both sides go through one tokenizer (lower-cased words and single symbols), so a shared
token such as a variable name can match; the paper's point is that there are few.

Okapi BM25 (k1 = 1.5, b = 0.75) with Lucene's IDF, log(1 + (N − n + ½) / (n + ½)): always
positive, so a term found in half of a small candidate pool still counts (rank-bm25's classic
IDF is zero or negative there).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi

_TOKEN = re.compile(r"\w+|[^\w\s]")


class LuceneBM25(BM25Okapi):
    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            word: math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
            for word, freq in nd.items()
        }


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_scores(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
    """scores[i, j]: BM25 of document j for query i; IDF from `documents` only."""
    corpus = [tokenize(d) or ["∅"] for d in documents]
    index = LuceneBM25(corpus)
    return (
        np.vstack([index.get_scores(tokenize(q)) for q in queries])
        if queries
        else np.zeros((0, len(documents)))
    )
