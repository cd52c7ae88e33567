"""Group `evaluation`: retrieval scores (Table 2), the search index and the report."""
