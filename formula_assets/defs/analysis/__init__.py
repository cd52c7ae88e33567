"""Group `analysis`: the raw syntax–semantics correspondence (Table 1)."""
