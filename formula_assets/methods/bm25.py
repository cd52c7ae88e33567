"""`bm25`: Okapi BM25 between a formula's linearised OPT and its annotation texts joined
(the paper's lexical baseline). It has no vectors, so it is neither an ensemble member nor
in the search index."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from formula_assets.methods.base import Method

if TYPE_CHECKING:
    from formula_assets.evaluation.hubness import Space
    from formula_assets.evaluation.lineup import FoldData
    from formula_assets.evaluation.ranking import Scorer


class Bm25(Method):
    name = "bm25"
    indexed = False

    def space(self, data: FoldData, split: str | None, qids: Sequence[str]) -> Space | None:
        return None

    def scorers(self, data: FoldData, split: str, qids: Sequence[str]) -> tuple[Scorer, Scorer]:
        from formula_assets.evaluation.bm25 import bm25_scorer

        opt_docs = [data.opt_text[q] for q in qids]
        sem_docs = [data.semantic_text[q] for q in qids]
        return bm25_scorer(opt_docs, sem_docs), bm25_scorer(sem_docs, opt_docs)


METHOD = Bm25()
