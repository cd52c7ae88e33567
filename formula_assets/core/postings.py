"""Posting lists added up: the score of every document for a few terms of a sparse index."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse


def posting_sum(
    postings: sparse.csr_matrix, terms: Sequence[int], weights: Sequence[float] | None = None
) -> np.ndarray:
    """Σ over `terms` (repeats count again) of weight × the term's row of `postings`
    (terms × documents), as a dense float64 vector over the documents. Short lists are added
    in place; long ones (a common trigram or tree feature: a million entries over a large
    lake) by one sparse product over the distinct terms, several times faster per entry."""
    size = postings.shape[1]
    factors = np.ones(len(terms)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(factors) != len(terms):
        raise ValueError(f"{len(terms)} terms but {len(factors)} weights")
    if not len(terms):
        return np.zeros(size)
    indptr, indices, data = postings.indptr, postings.indices, postings.data
    terms = np.asarray(terms, dtype=np.int64)
    if int((indptr[terms + 1] - indptr[terms]).sum()) * 8 < size:
        out = np.zeros(size)
        for term, factor in zip(terms.tolist(), factors.tolist(), strict=True):
            span = slice(indptr[term], indptr[term + 1])
            out[indices[span]] += factor * data[span]
        return out
    distinct, where = np.unique(terms, return_inverse=True)
    summed = np.bincount(where, weights=factors, minlength=len(distinct))
    return np.asarray(postings[distinct].T @ summed).ravel()
