"""Contrastive syntax–semantics alignment (paper §4.3): losses, models, the training loop."""
