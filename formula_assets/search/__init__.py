"""Formula search over the trained models: the index (an asset) and the searcher (the CLI)."""
