"""What a method and the training loop exchange: model inputs by row index, the rows a
method may fit its inputs on, and the prepared inputs with the model's description.

Kept apart from the loop (`training.fold`, `training.trainer`) so that code which only reads
a method's vectors or encodes queries (Table 2, the search index) does not import the loop:
its code version then does not follow the loop's source.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

from formula_assets.graphs.vocabulary import TokenVocabulary

if TYPE_CHECKING:
    from formula_assets.training.artifacts import ModelDescription


class Inputs(Protocol):
    """Model inputs for a set of formulae, by row index."""

    def batch(self, rows: np.ndarray) -> Any: ...


@dataclass
class MatrixInputs:
    matrix: torch.Tensor

    def batch(self, rows: np.ndarray) -> torch.Tensor:
        return self.matrix[torch.from_numpy(np.asarray(rows, dtype=np.int64))]


@dataclass
class BagInputs:
    """Each row's feature ids, a bag (order and repeats do not matter); a batch is the ids of
    its rows one after another and where each row starts, as `torch.nn.EmbeddingBag` reads
    them (a row without ids is an empty bag)."""

    ids: list[list[int]]
    device: str = "cpu"

    @classmethod
    def known(
        cls, vocabulary: Sequence[str], features: Iterable[Sequence[str]], device: str = "cpu"
    ) -> BagInputs:
        """Each row's ids of the features `vocabulary` holds; the others are left out, as ids
        0 and 1 (padding, unknown) are, which no network learns. A row may be an empty bag:
        its vector is zero and scores 0 against everything."""
        index = _token_index(vocabulary)
        return cls([[i for i in index.ids(row) if i > 1] for row in features], device)

    def batch(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        bags = [self.ids[int(r)] for r in np.asarray(rows).reshape(-1)]
        starts = np.cumsum([0, *(len(b) for b in bags[:-1])])
        flat = [i for b in bags for i in b]
        return (
            torch.tensor(flat, dtype=torch.long, device=self.device),
            torch.tensor(starts, dtype=torch.long, device=self.device),
        )


_INDEXES: dict[int, tuple[Sequence[str], TokenVocabulary]] = {}


def _token_index(vocabulary: Sequence[str]) -> TokenVocabulary:
    """The index of a model's vocabulary, made once per vocabulary object: a query encodes
    one row, and indexing tens of thousands of tokens for it cost more than the row."""
    known = _INDEXES.get(id(vocabulary))
    if known is not None and known[0] is vocabulary:  # the object held, so its id is its own
        return known[1]
    if len(_INDEXES) >= 16:
        _INDEXES.clear()
    index = TokenVocabulary.from_tokens(vocabulary)
    _INDEXES[id(vocabulary)] = (vocabulary, index)
    return index


class PartBatch(list):
    """A batch of `PartInputs`: one batch per run of a model whose runs read different
    inputs (`models.RunAverage` hands each run its own)."""


@dataclass
class PartInputs:
    """Inputs of a model whose runs each read their own (a fine-tuning of each of several
    base models: each run its own tokenizer and frozen layers), in run order."""

    parts: list[Any]

    def batch(self, rows: np.ndarray) -> PartBatch:
        return PartBatch(part.batch(rows) for part in self.parts)


def run_inputs(inputs: Any, run: int) -> Any:
    """The inputs run `run` of a model trains on: its own part, or the inputs every run
    shares."""
    return inputs.parts[run] if isinstance(inputs, PartInputs) else inputs


@dataclass(frozen=True)
class FoldRows:
    """Row indices (into `AlignmentData.qids`) of one fold's splits that a method may use to
    prepare its inputs: the training rows (e.g. for a vocabulary) and the test rows (only to
    report on them, never to fit anything)."""

    train: np.ndarray
    test: np.ndarray


@dataclass(frozen=True)
class Prepared:
    """A method's structural inputs of every formula, and the description of the untrained
    model with what the method recorded to rebuild its network (e.g. a vocabulary). A method
    fitted in closed form (counts, not gradients) gives its network's fitted `state` too: the
    loop loads it into each run's network before training (a schedule of 0 epochs: none)."""

    structural: Inputs
    description: ModelDescription
    state: dict[str, torch.Tensor] | None = None
