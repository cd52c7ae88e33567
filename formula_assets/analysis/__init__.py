"""Stage `analysis`: the raw syntax–semantics correspondence (the paper's Table 1)."""
