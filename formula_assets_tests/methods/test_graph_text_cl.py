"""Inputs of the graph method that need no training: token texts and the unseen-token
report."""

import numpy as np
import pyarrow as pa

from formula_assets.core.arrow import vector_column
from formula_assets.graphs.inputs import TokenTexts
from formula_assets.graphs.vocabulary import TokenVocabulary
from formula_assets.methods import graph_text_cl
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


# ------------------------------------------------------------------ inputs, prepare, network

import dataclasses  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from formula_assets.methods import registry  # noqa: E402
from formula_assets.methods.graph_text_cl import METHOD, graph_inputs  # noqa: E402
from formula_assets.training.data import AlignmentData  # noqa: E402
from formula_assets.training.inputs import FoldRows  # noqa: E402
from formula_assets_tests.training.descriptions import described  # noqa: E402

FOUR = build_opt_graphs(
    {
        "Q1": "<math><msup><mi>x</mi><mn>2</mn></msup></math>",
        "Q2": "<math><mi>x</mi><mo>+</mo><mi>z</mi></math>",
        "Q3": "<math><mi>w</mi></math>",
        "Q4": "<math><mfrac><mi>a</mi><mi>x</mi></mfrac></math>",
    }.items()
).graphs
TEXTS = TokenTexts(["x", "w", "+"], np.arange(6, dtype=np.float32).reshape(3, 2) + 1)
DATA = AlignmentData(
    qids=["Q1", "Q2", "Q3", "Q4"],
    graphs=FOUR,
    semantic=np.eye(4, 5, dtype=np.float32),
    opt_text=np.arange(12, dtype=np.float32).reshape(4, 3),
    folds={"Q1": 2, "Q2": 2, "Q3": 1, "Q4": 1},
    token_texts=TEXTS,
)
ROWS = FoldRows(train=np.array([0, 1]), test=np.array([2, 3]))


def graph_description(**settings):
    base = dataclasses.replace(
        graph_text_cl.PROFILE_SETTINGS["smoke"], hidden=8, out_dim=3, runs=1, **settings
    )
    return dataclasses.replace(
        described("graph_text_cl"), settings=base, semantic_dim=5, structural_dim=3
    )


def test_prepare_fits_the_vocabulary_on_training_rows_and_records_input_widths() -> None:
    untrained = graph_description(token_text=True, formula_text=True, readout="mean")
    prepared = METHOD.prepare(DATA, ROWS, untrained, "cpu")
    description = prepared.description
    vocabulary = TokenVocabulary.build(FOUR["node_tokens"].to_pylist()[:2])
    assert description.vocabulary == vocabulary.tokens
    assert description.unseen_test_tokens == unseen_tokens(FOUR, ROWS.test, vocabulary)
    assert (description.token_text_dim, description.formula_text_dim) == (2, 3)
    batch = prepared.structural.batch(np.array([2]))
    assert batch["text"].tolist() == [[3, 4]]  # w's text vector (its row after PAD and UNK)
    assert batch["formula"].tolist() == [[6, 7, 8]]
    plain = graph_description(token_text=False, formula_text=False)
    plain = METHOD.prepare(DATA, ROWS, plain, "cpu").description
    assert (plain.token_text_dim, plain.formula_text_dim) == (0, 0)
    without = dataclasses.replace(DATA, token_texts=None)
    assert (
        METHOD.prepare(
            without, ROWS, graph_description(token_text=False), "cpu"
        ).description.token_text_dim
        == 0
    )
    with pytest.raises(ValueError, match="the profile uses token texts"):
        METHOD.prepare(without, ROWS, graph_description(token_text=True), "cpu")


def test_graph_inputs_read_what_the_model_was_built_for() -> None:
    prepared = METHOD.prepare(DATA, ROWS, graph_description(token_text=True), "cpu").description
    reads_texts = dataclasses.replace(prepared, formula_text_dim=0)
    batch = graph_inputs(reads_texts, FOUR, "cpu", TEXTS, DATA.opt_text).batch(np.array([0]))
    assert "text" in batch and "formula" not in batch
    plain = dataclasses.replace(prepared, token_text_dim=0, formula_text_dim=0)
    batch = graph_inputs(plain, FOUR, "cpu", TEXTS, DATA.opt_text).batch(np.array([0]))
    assert "text" not in batch and "formula" not in batch
    assert "text" not in graph_inputs(plain, FOUR, "cpu").batch(np.array([0]))
    with pytest.raises(ValueError, match="the model reads token texts"):
        graph_inputs(reads_texts, FOUR, "cpu", None)
    vocabulary = TokenVocabulary.from_tokens(prepared.vocabulary)
    tokens = FOUR["node_tokens"].to_pylist()[3]
    assert batch["tokens"].tolist() != vocabulary.ids(tokens)  # row 0, not row 3
    assert graph_inputs(plain, FOUR, "cpu").batch(np.array([3]))["tokens"].tolist() == (
        vocabulary.ids(tokens)
    )


def test_the_network_and_a_query_follow_the_description() -> None:
    untrained = graph_description(token_text=True, formula_text=True, readout="mean")
    prepared = METHOD.prepare(DATA, ROWS, untrained, "cpu")
    description = prepared.description
    torch.manual_seed(0)
    network = METHOD.network(description).eval()
    assert network.graph.token.num_embeddings == len(description.vocabulary)
    assert network.graph.text.in_features == 2 and network.graph.formula.in_features == 3
    assert network.semantic.net[0].in_features == 5

    class Query:
        def graphs(self):
            return FOUR.slice(2, 1)

        def token_texts(self, graphs):
            return TEXTS

        def linearised_vector(self):
            return DATA.opt_text[2]

    query = METHOD.query_input(description, Query())
    expected = METHOD.inputs(description, DATA, "cpu").batch(np.array([2]))
    assert set(query) == set(expected)
    assert all(torch.equal(query[k], expected[k]) for k in expected)
    with torch.no_grad():
        assert torch.allclose(network.encode_structural(query), network.encode_structural(expected))


def test_the_graph_method_is_an_ensemble_member_costing_between_the_others() -> None:
    """Schedulers start long partitions first: the fine-tuned encoder trains longest, then
    the graph encoder, then the dual encoder (docs/adding-a-method.md gives 3.0)."""
    assert METHOD in registry.ensemble_members()
    dual, finetuned = registry.get("sbert_dual_cl"), registry.get("sbert_finetuned_cl")
    assert dual.training_cost < METHOD.training_cost < finetuned.training_cost
