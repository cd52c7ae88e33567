"""One-off experiments and tools, run by hand (`python -m experiments.<name>`); `make bench`
runs what `benchmarks/` holds. Each module's docstring says what it measures."""
