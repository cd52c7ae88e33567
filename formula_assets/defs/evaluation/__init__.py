"""Group `evaluation`: retrieval scores (Table 2), the ensemble, the significance tests and
the report."""
