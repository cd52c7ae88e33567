"""What a method and the loop exchange: rows of a matrix or of bags by index, and frozen
records."""

import dataclasses

import numpy as np
import pytest
import torch

from formula_assets.training.inputs import (
    BagInputs,
    FoldRows,
    MatrixInputs,
    PartBatch,
    PartInputs,
    Prepared,
    run_inputs,
)


def test_matrix_inputs_give_the_rows_asked_for_in_that_order() -> None:
    matrix = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    batch = MatrixInputs(matrix).batch(np.array([2, 0, 2]))
    assert batch.tolist() == [[6, 7, 8], [0, 1, 2], [6, 7, 8]]
    assert MatrixInputs(matrix).batch([3]).tolist() == [[9, 10, 11]]  # any sequence of ints


def test_a_bag_batch_is_the_rows_ids_in_turn_and_where_each_starts() -> None:
    """`torch.nn.EmbeddingBag`'s input and offsets: row i's ids start at offsets[i]."""
    bags = BagInputs([[2, 3], [], [4], [5, 6, 7]])
    ids, starts = bags.batch(np.array([3, 1, 0, 2]))
    assert ids.tolist() == [5, 6, 7, 2, 3, 4]
    assert starts.tolist() == [0, 3, 3, 5]
    assert ids.dtype == starts.dtype == torch.long
    ids, starts = bags.batch(np.array([[2], [0]]))  # a column of rows reads as a list
    assert ids.tolist() == [4, 2, 3] and starts.tolist() == [0, 1]
    ids, starts = bags.batch(np.array([1]))  # one empty bag: no ids, one offset
    assert ids.tolist() == [] and starts.tolist() == [0]


def test_bags_of_features_keep_the_ids_the_vocabulary_holds_in_the_rows_order() -> None:
    """Features the vocabulary lacks, and its padding and unknown entries, are left out: a
    row of only those is an empty bag."""
    vocabulary = ["[PAD]", "[UNK]", "x", "y", "z"]
    bags = BagInputs.known(vocabulary, [["z", "x", "w"], ["w"], ["[PAD]", "[UNK]", "y"], []])
    assert bags.ids == [[4, 2], [], [3], []]
    assert bags.device == "cpu"
    assert BagInputs.known(vocabulary, iter([["y", "y"]]), "meta").ids == [[3, 3]]
    assert BagInputs.known(vocabulary, [["y"]], "meta").device == "meta"


def test_fold_rows_and_prepared_inputs_cannot_be_reassigned() -> None:
    """The loop hands them to a method and keeps using them: nobody may swap their rows."""
    rows = FoldRows(train=np.array([0, 1]), test=np.array([2]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        rows.train = np.array([2])  # type: ignore[misc]
    prepared = Prepared(structural=MatrixInputs(torch.zeros(1, 1)), description=None)  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.description = None  # type: ignore[misc]


def test_part_inputs_batch_each_part_and_each_run_reads_its_own() -> None:
    """Runs that read different inputs (a fine-tuning of each of several base models): one
    batch holds each part's rows, in run order; a run's inputs are its part, or, when the
    runs share their inputs, all of them."""
    first = MatrixInputs(torch.arange(6, dtype=torch.float32).reshape(3, 2))
    second = BagInputs([[7], [8, 9], []])
    parts = PartInputs([first, second])
    batch = parts.batch(np.array([1, 0]))
    assert isinstance(batch, PartBatch) and len(batch) == 2
    assert batch[0].tolist() == [[2, 3], [0, 1]]
    assert [t.tolist() for t in batch[1]] == [[8, 9, 7], [0, 2]]
    assert run_inputs(parts, 0) is first and run_inputs(parts, 1) is second
    assert run_inputs(first, 1) is first
