"""`bm25`: lexical scores between each formula's linearised OPT and annotation texts, both
ways; no vectors, so neither in the search index nor offered by `search --method`."""

import numpy as np

from formula_assets.evaluation.lineup import FoldData
from formula_assets.methods import registry
from formula_assets.methods.bm25 import METHOD

# each formula shares words with its own annotation text only
DATA = FoldData(
    models={},
    opt_vectors={},
    semantic_vectors={},
    opt_text={"Q1": "mass times acceleration", "Q2": "pi r squared", "Q3": "voltage current"},
    semantic_text={"Q1": "force equals mass", "Q2": "circle area squared radius", "Q3": "ohm"},
)


def test_bm25_scores_the_matching_text_above_all_others_in_both_directions() -> None:
    forward, backward = METHOD.scorers(DATA, "test", ["Q1", "Q2", "Q3"])
    rows = np.arange(3)
    f, b = np.asarray(forward.block(rows)), np.asarray(backward.block(rows))
    # Q1 and Q2 share words with their own texts only; Q3 shares none with any
    assert f[0, 0] > 0 and f[1, 1] > 0 and f[0, 1:].max() == 0 and f[1, [0, 2]].max() == 0
    assert not f[2].any()
    # the second scorer ranks OPT texts for an annotation text
    assert b[0, 0] > 0 and b[1, 1] > 0 and b[0, 1:].max() == 0 and b[1, [0, 2]].max() == 0
    assert not b[2].any()
    # in the scorer's qid order
    f_reordered = np.asarray(METHOD.scorers(DATA, "test", ["Q2", "Q1", "Q3"])[0].block(rows))
    assert f_reordered[0, 0] == f[1, 1] and f_reordered[1, 1] == f[0, 0]


def test_bm25_has_no_vectors_so_it_is_not_searched() -> None:
    assert METHOD.space(DATA, "test", ["Q1"]) is None
    assert "bm25" not in registry.indexed()
    assert "bm25" not in registry.search_methods()
    assert "bm25" in [m.name for m in registry.table_2()]
