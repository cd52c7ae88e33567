"""The training inputs: only formulae with a graph, both sentence vectors and a fold, each
input row-aligned with `qids` (in the graphs' order), and annotation texts for each."""

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.arrow import embedding_table, vector_column
from formula_assets.graphs.inputs import TokenTexts
from formula_assets.training.data import alignment_data

# Q1 and Q5 have everything; Q2 lacks a semantic vector, Q3 an OPT-text vector, Q4 a fold.
GRAPHS = pa.table({"qid": ["Q1", "Q2", "Q3", "Q4", "Q5"], "linearised_opt": list("abcde")})
FOLDS = pa.table({"qid": ["Q5", "Q3", "Q2", "Q1"], "fold": [2, 1, 1, 3]})
SEMANTIC = embedding_table(["Q5", "Q4", "Q3", "Q1"], np.array([[5, 5], [4, 4], [3, 3], [1, 1.0]]))
OPT_TEXT = embedding_table(["Q1", "Q2", "Q4", "Q5"], np.array([[10.0], [20], [40], [50]]))
TOKENS = pa.table({"token": ["x"], "embedding": vector_column(np.array([[0.5, 0.25]]))})
ANNOTATIONS = pa.table({"qid": ["Q5", "Q1", "Q2"], "texts": [["five"], ["one", "uno"], ["two"]]})


def test_only_formulae_with_every_input_are_kept_row_aligned() -> None:
    data = alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT)
    assert data.qids == ["Q1", "Q5"]
    assert data.graphs["linearised_opt"].to_pylist() == ["a", "e"]
    assert data.semantic.tolist() == [[1, 1], [5, 5]]
    assert data.opt_text.tolist() == [[10], [50]]
    assert data.folds == {"Q1": 3, "Q5": 2}
    assert data.token_texts is None and data.annotation_texts is None


def test_token_and_annotation_texts_when_given() -> None:
    data = alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT, TOKENS, ANNOTATIONS)
    assert isinstance(data.token_texts, TokenTexts)
    assert data.token_texts.tokens == ["x"]
    assert data.token_texts.vectors.tolist() == [[0.5, 0.25]]
    assert data.annotation_texts == [["one", "uno"], ["five"]]  # in `qids`' order


@pytest.mark.parametrize("texts", [None, []])
def test_a_kept_formula_without_annotation_texts_is_an_error(texts) -> None:
    annotations = pa.table(
        {"qid": ["Q1", "Q5"], "texts": pa.array([["one"], texts], pa.list_(pa.string()))}
    )
    with pytest.raises(ValueError, match=r"1 formulae have no annotation texts, e.g. \['Q5'\]"):
        alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT, None, annotations)
    missing = pa.table({"qid": ["Q1"], "texts": [["one"]]})
    with pytest.raises(ValueError, match="no annotation texts"):
        alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT, None, missing)


def test_declared_symbols_when_given_row_aligned_unparsed_ones_left_out() -> None:
    symbols = pa.table(
        {
            "qid": ["Q5", "Q1", "Q5", "Q2", "Q5"],
            "concept": ["C1", "C2", "C3", "C4", "C5"],
            "label": ["speed of light", "mass", "broken", "energy", "time"],
            "symbols": [["c"], ["m"], [], ["E"], ["t"]],
            "error": [None, None, "not MathML", None, None],
        }
    )
    data = alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT, None, ANNOTATIONS, symbols)
    assert data.declared_symbols == [
        [("mass", ["m"])],
        [("speed of light", ["c"]), ("time", ["t"])],
    ]
    none = alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT, None, ANNOTATIONS, symbols.slice(3, 1))
    assert none.declared_symbols == [[], []]  # Q2 is not kept; nothing declared for Q1 and Q5
    assert alignment_data(FOLDS, GRAPHS, SEMANTIC, OPT_TEXT).declared_symbols is None
