"""Cross-validation folds that survive Wikidata refreshes.

Items of the paper's dataset keep their published fold, so our numbers compare with the
paper's on identical test sets; any other item gets a fold from a hash of its QID, so a refresh
never moves an existing item. The validation split inside the training folds is hashed the
same way: early stopping and every choice of epoch or weight look at it, never at the test fold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from formula_assets.core.protocol import FOLDS

DEFAULT_VALIDATION_FRACTION = 0.1

FOLD_SCHEMA = pa.schema([("qid", pa.string()), ("fold", pa.int8()), ("fold_source", pa.string())])


def _unit_hash(text: str) -> float:
    """A stable number in [0, 1) from text (not Python's salted hash)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def hash_fold(qid: str, folds: Sequence[int] = FOLDS) -> int:
    return folds[int(_unit_hash(f"fold:{qid}") * len(folds))]


def assign_folds(rows: Iterable[tuple[str, int | None]]) -> pa.Table:
    """(qid, published fold or None) → qid, fold, fold_source ('paper' or 'hash')."""
    qids, folds, sources = [], [], []
    for qid, paper_fold in rows:
        qids.append(qid)
        if paper_fold in FOLDS:
            folds.append(int(paper_fold))
            sources.append("paper")
        else:
            folds.append(hash_fold(qid))
            sources.append("hash")
    return pa.Table.from_pydict(
        {"qid": qids, "fold": folds, "fold_source": sources}, schema=FOLD_SCHEMA
    )


@dataclass(frozen=True)
class Split:
    """The formulae of one cross-validation round, disjoint by construction."""

    test_fold: int
    train: tuple[str, ...]
    validation: tuple[str, ...]
    test: tuple[str, ...]
    # chooses the ensemble's weights: never trained on, never early-stopped on
    selection: tuple[str, ...] = ()

    def roles(self) -> dict[str, str]:
        """qid → 'train' | 'validation' | 'selection' | 'test'."""
        return (
            dict.fromkeys(self.train, "train")
            | dict.fromkeys(self.validation, "validation")
            | dict.fromkeys(self.selection, "selection")
            | dict.fromkeys(self.test, "test")
        )


def split_for(
    folds: Mapping[str, int],
    test_fold: int,
    usable: Iterable[str] | None = None,
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
    selection_fraction: float = 0.0,
) -> Split:
    """Test = the fold; validation and selection = stable hashed shares of the other folds
    (validation stops training early; selection, outside training and early stopping alike,
    chooses what is chosen after training); train = the rest."""
    allowed = set(folds) if usable is None else set(usable) & set(folds)
    ordered = sorted(allowed, key=lambda q: (len(q), q))
    test = tuple(q for q in ordered if folds[q] == test_fold)
    pool = [q for q in ordered if folds[q] != test_fold]
    validation = tuple(q for q in pool if _unit_hash(f"validation:{q}") < validation_fraction)
    chosen = set(validation)
    selection = tuple(
        q for q in pool if q not in chosen and _unit_hash(f"selection:{q}") < selection_fraction
    )
    chosen |= set(selection)
    train = tuple(q for q in pool if q not in chosen)
    return Split(test_fold, train, validation, test, selection)


def split_rows(
    qids: Sequence[str],
    folds: Mapping[str, int],
    test_fold: int,
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
    selection_fraction: float = 0.0,
) -> tuple[Split, np.ndarray, np.ndarray]:
    """The split of `qids` for one test fold, and the row indices (into `qids`) of its training
    and validation formulae: the only rows the training loop is ever given. Selection and
    test rows are not returned at all."""
    split = split_for(folds, test_fold, qids, validation_fraction, selection_fraction)
    index = {q: i for i, q in enumerate(qids)}
    train = np.array([index[q] for q in split.train], dtype=np.int64)
    validation = np.array([index[q] for q in split.validation], dtype=np.int64)
    if len(train) < 2 or len(validation) < 2:
        raise ValueError(
            f"fold {test_fold}: {len(train)} training and {len(validation)} validation "
            "formulae; need at least 2 of each"
        )
    return split, train, validation
