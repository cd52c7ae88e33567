"""Group `evaluation`: retrieval scores (Table 2) and the report."""
