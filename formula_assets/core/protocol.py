"""The names of the cross-validation protocol (paper §4.3), shared by training, evaluation,
checks, search and the report: one name for one thing."""

from __future__ import annotations

FOLDS = (1, 2, 3, 4, 5)
# Retrieval directions: a formula's structure retrieves its semantics, and the reverse.
DIRECTIONS = ("syntactic_to_semantic", "semantic_to_syntactic")
# Trained aligners: the `method` dimension of `fold_models`.
TRAINED = ("graph_text_cl", "sbert_dual_cl")
BASELINES = ("bm25", "sbert_no_cl")
ENSEMBLE = "score_ensemble"
ENSEMBLE_MEMBERS = ("graph_text_cl", "sbert_dual_cl", "sbert_no_cl")
ALL_METHODS = (*BASELINES, *TRAINED, ENSEMBLE)
TRAINED_AND_ENSEMBLE = (*TRAINED, ENSEMBLE)
