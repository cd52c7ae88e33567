"""The embedding tables: X_sem as the sum (or mean) of each formula's text vectors, one row per
formula with text, the linearised OPT's vector, one vector per distinct token.

The embedder here maps a text to a vector fixed by hand (a letter count), so every expected
row is computed independently of the code under test."""

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pytest

from formula_assets.core.arrow import embedding_matrix, recorded_aggregation
from formula_assets.semantics.cache import EmbeddingCache
from formula_assets.semantics.tables import opt_text_vectors, semantic_vectors, token_vectors

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class LetterCounts:
    """Text → counts of a, b, c … (26 dimensions); records what it was asked to encode."""

    dimension = len(LETTERS)

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def encode(self, texts: Sequence[str], progress: object = None) -> np.ndarray:
        self.asked.append(list(texts))
        return np.array([[t.count(c) for c in LETTERS] for t in texts], dtype=np.float32)


def counts(text: str) -> np.ndarray:
    return np.array([text.count(c) for c in LETTERS], dtype=np.float64)


def annotations(rows: dict[str, list[str]]) -> pa.Table:
    return pa.table(
        {
            "qid": list(rows),
            "texts": pa.array(list(rows.values()), pa.list_(pa.string())),
            "num_texts": [len(t) for t in rows.values()],
        }
    )


ROWS = {"Q1": ["mass", "energy"], "Q2": [], "Q3": ["speed of light"], "Q4": ["ab", "ab", "c"]}


@pytest.mark.parametrize("aggregation", ["sum", "mean"])
def test_a_formula_vector_aggregates_its_texts(aggregation: str) -> None:
    table, stats, skipped = semantic_vectors(annotations(ROWS), LetterCounts(), None, aggregation)
    qids, matrix = embedding_matrix(table)
    assert qids == ["Q1", "Q3", "Q4"]  # Q2 has no text: skipped, and said so
    assert skipped == ["Q2"]
    assert table.column("num_texts").to_pylist() == [2, 1, 3]
    for qid, row in zip(qids, matrix, strict=True):
        expected = sum(counts(t) for t in ROWS[qid])
        if aggregation == "mean":
            expected = expected / len(ROWS[qid])
        np.testing.assert_allclose(row, expected, rtol=1e-6)
    assert recorded_aggregation(table) == aggregation
    assert table.schema.field("embedding").type.list_size == len(LETTERS)
    # a text repeated in the corpus counts once per formula text, and is embedded once
    assert (stats.texts, stats.distinct, stats.embedded) == (6, 5, 5)


def test_an_unknown_aggregation_is_refused() -> None:
    with pytest.raises(ValueError, match="aggregation must be one of"):
        semantic_vectors(annotations(ROWS), LetterCounts(), None, "max")


def test_without_any_text_the_table_is_empty_and_typed() -> None:
    table, stats, skipped = semantic_vectors(
        annotations({"Q1": [], "Q2": []}), LetterCounts(), None
    )
    assert table.num_rows == 0 and skipped == ["Q1", "Q2"]
    assert table.schema.field("embedding").type.list_size == len(LETTERS)
    assert stats.texts == 0


def test_texts_already_cached_are_not_embedded_again(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path, "letters", "semantic")
    first = LetterCounts()
    table, _, _ = semantic_vectors(annotations(ROWS), first, cache)
    again = LetterCounts()
    cached, stats, _ = semantic_vectors(annotations(ROWS), again, cache)
    assert again.asked == [] and stats.cached == 5 and stats.embedded == 0
    assert cached.equals(table)


def graphs(rows: dict[str, tuple[str, list[str]]]) -> pa.Table:
    return pa.table(
        {
            "qid": list(rows),
            "linearised_opt": [r[0] for r in rows.values()],
            "node_tokens": pa.array([r[1] for r in rows.values()], pa.list_(pa.string())),
        }
    )


GRAPHS = {
    "Q1": ("equals e times m c", ["=", "e", "m", "c"]),
    "Q2": ("equals f times m a", ["=", "f", "m", "a"]),
}


def test_each_formula_has_its_linearised_opt_vector() -> None:
    table, stats = opt_text_vectors(graphs(GRAPHS), LetterCounts(), None)
    qids, matrix = embedding_matrix(table)
    assert qids == ["Q1", "Q2"]
    for qid, row in zip(qids, matrix, strict=True):
        np.testing.assert_allclose(row, counts(GRAPHS[qid][0]))
    assert stats.embedded == 2


def test_every_distinct_token_has_one_vector_in_sorted_order() -> None:
    embedder = LetterCounts()
    table, stats = token_vectors(graphs(GRAPHS), embedder, None)
    tokens = table.column("token").to_pylist()
    assert tokens == ["=", "a", "c", "e", "f", "m"]
    matrix = np.stack(table.column("embedding").to_numpy(zero_copy_only=False))
    for token, row in zip(tokens, matrix, strict=True):
        np.testing.assert_allclose(row, counts(token))
    assert embedder.asked == [tokens] and stats.embedded == 6
