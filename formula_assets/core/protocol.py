"""The names of the cross-validation protocol (paper §4.3), shared by training, evaluation,
checks, search and the report: one name for one thing. The methods themselves are listed by
the method registry (`formula_assets.methods.registry`)."""

from __future__ import annotations

FOLDS = (1, 2, 3, 4, 5)
# Retrieval directions: a formula's structure retrieves its semantics, and the reverse.
DIRECTIONS = ("syntactic_to_semantic", "semantic_to_syntactic")
# The score ensemble: a weighted sum of the registry's ensemble members' scores.
ENSEMBLE = "score_ensemble"
