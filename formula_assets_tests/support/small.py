"""The small corpus's training data and profile (the `small_corpus` and `small_fold_models`
fixtures of conftest.py): the smoke profile with a fifth of each fold for validation."""

from __future__ import annotations

import dataclasses
from typing import Any

from formula_assets.core.profiles import get_profile
from formula_assets.training.data import AlignmentData, alignment_data

SMALL_PROFILE = dataclasses.replace(get_profile("smoke"), validation_fraction=0.2)


def small_data(corpus: Any) -> AlignmentData:
    c = corpus
    return alignment_data(
        c.folds, c.graphs, c.semantic, c.opt_text, c.tokens, c.annotations, c.symbols
    )
