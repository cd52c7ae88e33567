"""The graph encoder's inputs: token-text rows by token, and graph batches for row indices
that carry each node's token text and each graph's formula context when given."""

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import vector_column
from formula_assets.graphs.inputs import GraphInputs, TokenTexts
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.syntax.opt import build_opt_graphs

GRAPHS = build_opt_graphs(
    {
        "Q1": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",  # power x 2
        "Q2": "<math><mi>w</mi></math>",  # w
        "Q3": "<math><mi>x</mi><mo>+</mo><mi>z</mi></math>",  # group x + z
    }.items()
).graphs
TOKEN_TEXTS = TokenTexts(["x", "w"], np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float64))
VOCABULARY = TokenVocabulary.build(GRAPHS["node_tokens"].to_pylist())


def test_token_texts_are_read_from_their_table() -> None:
    table = pa.table({"token": ["x", "w"], "embedding": vector_column(TOKEN_TEXTS.vectors)})
    texts = TokenTexts.from_table(table)
    assert texts.tokens == ["x", "w"]
    assert texts.vectors.tolist() == TOKEN_TEXTS.vectors.tolist()


def test_token_text_lookup_puts_each_token_on_its_row_after_padding_and_unknown() -> None:
    vocabulary, table = TOKEN_TEXTS.lookup()
    assert vocabulary.ids(["x", "w", "unseen"]) == [2, 3, 1]
    assert table.shape == (4, 3) and table.dtype == np.float32
    assert table.tolist() == [[0, 0, 0], [0, 0, 0], [1, 2, 3], [4, 5, 6]]


def test_a_batch_holds_the_graphs_of_the_rows_asked_for() -> None:
    inputs = GraphInputs(GRAPHS, VOCABULARY, "cpu")
    batch = inputs.batch(np.array([2, 1]))
    tokens = GRAPHS["node_tokens"].to_pylist()
    assert batch["tokens"].tolist() == VOCABULARY.ids(tokens[2] + tokens[1])
    assert int(batch["num_graphs"]) == 2
    assert batch["batch"].tolist() == [0] * len(tokens[2]) + [1] * len(tokens[1])
    assert "text" not in batch and "formula" not in batch


def test_a_batch_carries_token_texts_and_formula_context_when_given() -> None:
    context = np.array([[0.1], [0.2], [0.3]])
    inputs = GraphInputs(GRAPHS, VOCABULARY, "cpu", TOKEN_TEXTS, context)
    batch = inputs.batch(np.array([2, 0]))
    tokens = GRAPHS["node_tokens"].to_pylist()
    rows = {"x": [1, 2, 3], "w": [4, 5, 6]}
    per_node = batch["text"][batch["text_index"]]
    assert per_node.tolist() == [rows.get(t, [0, 0, 0]) for t in tokens[2] + tokens[0]]
    assert batch["formula"].tolist() == [[np.float32(0.3)], [np.float32(0.1)]]
    one = GraphInputs(GRAPHS, VOCABULARY, "cpu", TOKEN_TEXTS).batch(np.array([0]))
    assert one["text_index"].shape == (len(tokens[0]),)
    # one row per distinct text (tokens without one share the unknown's row)
    distinct = {tuple(rows.get(t, [0, 0, 0])) for t in tokens[0]}
    assert one["text"].shape == (len(distinct), 3) and len(distinct) < len(tokens[0])
