"""Group `evaluation`: retrieval scores (Table 2), the annotation audit and the report."""
