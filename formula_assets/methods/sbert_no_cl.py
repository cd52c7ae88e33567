"""`sbert_no_cl`: the frozen sentence-transformer, no training. A formula is the sentence
vector of its linearised OPT, its semantics the (summed) vectors of its annotation texts;
cosine compares them directly (both come from the same model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from formula_assets.methods.base import FormulaQuery, LoadedModel, Method, TextQuery

if TYPE_CHECKING:
    from formula_assets.evaluation.hubness import Space
    from formula_assets.evaluation.lineup import FoldData


class FrozenSentenceVectors(Method):
    name = "sbert_no_cl"
    ensemble_member = True

    def space(self, data: FoldData, split: str | None, qids: Sequence[str]) -> Space:
        return (
            np.stack([data.opt_vectors[q] for q in qids]),
            np.stack([data.semantic_vectors[q] for q in qids]),
        )

    def formula_vector(self, query: FormulaQuery, model: LoadedModel | None) -> np.ndarray:
        return query.linearised_vector()

    def text_vector(self, query: TextQuery, model: LoadedModel | None) -> np.ndarray:
        return query.vector()


METHOD = FrozenSentenceVectors()
