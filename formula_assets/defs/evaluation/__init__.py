"""Group `evaluation`: retrieval scores (Table 2), the search index, the annotation audit and
the report."""
