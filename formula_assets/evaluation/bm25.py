"""The BM25 baseline of Table 2: linearised OPT tokens against the formula's annotation text.

Both sides go through one tokenizer (lower-cased words and single symbols), so a shared
token such as a variable name can match; the paper's point is that there are few.

Okapi BM25 (k1 = 1.5, b = 0.75) with Lucene's IDF, log(1 + (N − n + ½) / (n + ½)): always
positive, so a term found in half of a small candidate pool still counts (rank-bm25's classic
IDF is zero or negative there). rank-bm25 indexes the corpus; scoring all queries at once is
one sparse matrix product instead of a Python loop per query, so a pool of 35,000 candidates
scores in seconds. `reference_scores` keeps rank-bm25's own per-query loop for comparison.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
from rank_bm25 import BM25Okapi
from scipy import sparse

from formula_assets.core.postings import posting_sum
from formula_assets.evaluation.ranking import SparseScorer

_TOKEN = re.compile(r"\w+|[^\w\s]")


class LuceneBM25(BM25Okapi):
    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            word: math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
            for word, freq in nd.items()
        }


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _corpus(documents: Sequence[str]) -> list[list[str]]:
    return [tokenize(d) or ["∅"] for d in documents]


def reference_scores(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
    """rank-bm25's own scoring, one query at a time (slow; for checking `bm25_scores`)."""
    index = LuceneBM25(_corpus(documents))
    if not queries:
        return np.zeros((0, len(documents)))
    return np.vstack([index.get_scores(tokenize(q)) for q in queries])


class Bm25Index:
    """Documents already split into terms, as a sparse term × document matrix of BM25 weights:
    a query's scores are the sum of its terms' rows (a repeated term counts again, as in
    rank-bm25). The names channel of search and Table 2's baseline both score through it."""

    def __init__(self, corpus: Sequence[Sequence[str]]) -> None:
        index = LuceneBM25([list(d) or ["∅"] for d in corpus] or [["∅"]])
        self.size = len(corpus)
        self.vocabulary = {term: i for i, term in enumerate(index.idf)}
        idf = np.array(list(index.idf.values()))
        rows, cols, values = [], [], []
        for d, frequencies in enumerate(index.doc_freqs[: self.size]):
            norm = index.k1 * (1 - index.b + index.b * index.doc_len[d] / index.avgdl)
            for term, f in frequencies.items():
                t = self.vocabulary[term]
                rows.append(t)
                cols.append(d)
                values.append(idf[t] * f * (index.k1 + 1) / (f + norm))
        self.weights = sparse.csr_matrix(
            (values, (rows, cols)), shape=(len(self.vocabulary), self.size)
        )
        self._best: np.ndarray | None = None  # each term's highest weight (`ceiling`)

    def query_matrix(self, queries: Sequence[Sequence[str]]) -> sparse.csr_matrix:
        """Each query's term counts over the vocabulary (unknown terms dropped)."""
        q_rows, q_cols = [], []
        for i, query in enumerate(queries):
            for term in query:
                if term in self.vocabulary:
                    q_rows.append(i)
                    q_cols.append(self.vocabulary[term])
        return sparse.csr_matrix(
            (np.ones(len(q_rows)), (q_rows, q_cols)), shape=(len(queries), len(self.vocabulary))
        )

    def scores(self, query: Sequence[str]) -> np.ndarray:
        """Every document's BM25 score for one query: its terms' posting lists added up (one
        query over many documents; `query_matrix` scores many at once)."""
        vocabulary = self.vocabulary
        return posting_sum(self.weights, [vocabulary[t] for t in query if t in vocabulary])

    def ceiling(self, query: Sequence[str]) -> float:
        """The most a document could score for `query`: each term's highest weight in any
        document, summed; a term no document holds counts as the rarest term there is. A
        score over it is the share of the query a document covers, whatever the corpus
        holds (a best hit matching one word of a long query stays weak)."""
        rarest = self.rarest()
        return float(sum(rarest if b is None else b for b in self.best(query)))

    def best(self, query: Sequence[str]) -> list[float | None]:
        """Each term's highest weight in any document (None: no document holds it)."""
        best, vocabulary = self._term_bests(), self.vocabulary
        return [float(best[vocabulary[t]]) if t in vocabulary else None for t in query]

    def rarest(self) -> float:
        """The weight of the rarest term there is: what a term no document holds counts."""
        return float(self._term_bests().max(initial=0.0))

    def _term_bests(self) -> np.ndarray:
        if self._best is None:  # without documents none (scipy's max of no columns raises)
            self._best = (
                self.weights.max(axis=1).toarray().ravel()
                if self.size
                else np.zeros(len(self.vocabulary))
            )
        return self._best


def bm25_scorer(queries: Sequence[str], documents: Sequence[str]) -> SparseScorer:
    """BM25 of every document for every query, as a chunked scorer; IDF from `documents`."""
    index = Bm25Index(_corpus(documents))
    return SparseScorer(index.query_matrix([tokenize(q) for q in queries]), index.weights)


def bm25_scores(queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
    """The whole score matrix (small pools and tests; the evaluation scores in chunks)."""
    scorer = bm25_scorer(queries, documents)
    return scorer.block(np.arange(len(queries)))
