"""The graph encoder's inputs: batches of `opt_graphs` rows for row indices, and the sentence
vectors of the OPT tokens' texts that nodes may read. Shared by training and search, so a
query is encoded from the very inputs its model was trained on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import torch

from formula_assets.core.arrow import vectors
from formula_assets.graphs.batch import graph_arrays
from formula_assets.graphs.encoder import to_tensors
from formula_assets.graphs.vocabulary import TokenVocabulary


@dataclass
class TokenTexts:
    """The sentence vector of every OPT token's text (a training-free, frozen input)."""

    tokens: list[str]
    vectors: np.ndarray

    @classmethod
    def from_table(cls, table: pa.Table) -> TokenTexts:
        column = table.column("embedding")
        return cls(table.column("token").to_pylist(), vectors(column, column.type.list_size))

    def lookup(self) -> tuple[TokenVocabulary, np.ndarray]:
        """Token → row, and the table (rows 0 and 1, padding and unknown, are zeros)."""
        vocabulary = TokenVocabulary.from_tokens(
            [TokenVocabulary.PAD, TokenVocabulary.UNK, *self.tokens]
        )
        zeros = np.zeros((2, self.vectors.shape[1]), dtype=np.float32)
        return vocabulary, np.vstack([zeros, self.vectors.astype(np.float32)])


class GraphInputs:
    """Graph batches for row indices, built from one precomputed set of arrays."""

    def __init__(
        self,
        graphs: pa.Table,
        vocabulary: TokenVocabulary,
        device: str,
        token_texts: TokenTexts | None = None,
        formula_vectors: np.ndarray | None = None,
    ) -> None:
        """`formula_vectors`: row-aligned with `graphs`, the formula context of each."""
        text_vocabulary, self.text_table = (
            token_texts.lookup() if token_texts is not None else (None, None)
        )
        self.arrays = graph_arrays(graphs, vocabulary, text_vocabulary)
        self.formula_vectors = formula_vectors
        self.device = device

    def batch(self, rows: np.ndarray) -> dict[str, torch.Tensor]:
        formula = None if self.formula_vectors is None else self.formula_vectors[rows]
        return to_tensors(self.arrays.select(rows), self.device, self.text_table, formula)
