"""What Table 2 needs per formula besides the trained models, gathered from the asset tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import embedding_matrix


@dataclass
class EvaluationInputs:
    """Per formula: fold, linearised OPT, annotation text, frozen sentence vectors."""

    folds: Mapping[str, int]
    opt_text: Mapping[str, str]
    semantic_text: Mapping[str, str]
    opt_vectors: Mapping[str, np.ndarray]
    semantic_vectors: Mapping[str, np.ndarray]


def evaluation_inputs(
    cv_folds: pa.Table,
    opt_graphs: pa.Table,
    concept_annotations: pa.Table,
    semantic_embeddings: pa.Table,
    opt_text_embeddings: pa.Table,
) -> EvaluationInputs:
    """BM25 documents (the linearised OPT; the annotation texts joined) and frozen vectors."""
    sem_qids, sem = embedding_matrix(semantic_embeddings)
    opt_qids, opt = embedding_matrix(opt_text_embeddings)
    texts = concept_annotations.column("texts").to_pylist()
    return EvaluationInputs(
        folds=dict(zip(cv_folds["qid"].to_pylist(), cv_folds["fold"].to_pylist(), strict=True)),
        opt_text=dict(
            zip(
                opt_graphs["qid"].to_pylist(), opt_graphs["linearised_opt"].to_pylist(), strict=True
            )
        ),
        semantic_text=dict(
            zip(concept_annotations["qid"].to_pylist(), (" ".join(t) for t in texts), strict=True)
        ),
        opt_vectors=dict(zip(opt_qids, opt, strict=True)),
        semantic_vectors=dict(zip(sem_qids, sem, strict=True)),
    )
