"""Stage `evaluation`: ranking (one gold-rank implementation, scorers), BM25, the ensemble,
Table 2 and its significance tests."""
