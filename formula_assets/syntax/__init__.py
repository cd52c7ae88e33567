"""Stage `syntax`: MathML → operator trees (OPT), their arrays and linearisation, and
training-free structural vectors."""
