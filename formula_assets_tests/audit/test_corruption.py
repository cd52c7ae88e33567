"""The corruption benchmark at smoke size on the real pipeline: annotations swapped on
purpose rank above clean ones in the audit of the fold models that never saw them."""

from __future__ import annotations

import numpy as np
import pytest
from upath import UPath

from formula_assets.core.protocol import ENSEMBLE


@pytest.mark.slow
def test_swapped_annotations_rank_above_clean_ones(materialized, monkeypatch) -> None:
    from benchmarks.audit import load

    run, _ = materialized
    for name, value in run.env.items():
        if name.startswith("FORMULA_ASSETS_") or name.startswith("HF_"):
            monkeypatch.setenv(name, value)
    root = UPath(str(run.lake))
    inputs = load(root)
    aucs = []
    for fold in range(1, 6):
        vectors, models = inputs.fold(root, fold)
        got = inputs.run(vectors, models, "swap", rate=0.2, seed=0)
        aucs.append(got[f"{ENSEMBLE} auc"])
    # a swapped item outranks a clean one far more often than chance
    assert np.mean(aucs) > 0.75, aucs
