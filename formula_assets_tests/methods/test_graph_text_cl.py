"""Inputs of the graph method that need no training: token texts and the unseen-token
report."""

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import vector_column
from formula_assets.graphs.inputs import TokenTexts
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods.graph_text_cl import unseen_tokens
from formula_assets.syntax.opt import build_opt_graphs

GRAPHS = build_opt_graphs(
    {
        "Q1": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",  # power x 2
        "Q2": "<math><mi>x</mi><mo>+</mo><mi>z</mi></math>",  # group x + z
        "Q3": "<math><mi>w</mi></math>",  # w
    }.items()
).graphs


def test_unseen_tokens_counts_what_the_training_vocabulary_lacks() -> None:
    vocabulary = TokenVocabulary.build(GRAPHS["node_tokens"].to_pylist()[:1])  # power, x, 2
    report = unseen_tokens(GRAPHS, np.array([1, 2]), vocabulary)
    # Q2: group x + z → group, +, z unseen; Q3: w unseen
    assert report == {
        "occurrences": 4,
        "distinct": 4,
        "share_of_occurrences": 4 / 5,
        "formulae_with_any": 2,
    }
    assert unseen_tokens(GRAPHS, np.array([0]), vocabulary)["occurrences"] == 0
    assert (
        unseen_tokens(GRAPHS, np.array([], dtype=np.int64), vocabulary)["share_of_occurrences"]
        == 0.0
    )


def test_token_texts_rows_leave_padding_and_unknown_empty() -> None:
    table = pa.table(
        {
            "token": ["b", "a"],
            "embedding": vector_column(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)),
        }
    )
    texts = TokenTexts.from_table(table)
    vocabulary, matrix = texts.lookup()
    assert vocabulary.ids(["a", "b", "nope"]) == [3, 2, 1]
    assert matrix.tolist() == [[0, 0], [0, 0], [1, 2], [3, 4]]
    assert matrix.dtype == np.float32
