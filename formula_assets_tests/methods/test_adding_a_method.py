"""Adding a method is a module and its registration: the method defined here, named in
FORMULA_ASSETS_EXTRA_METHODS, is trained per fold (smoke profile), scored in Table 2 and
answers `formula-assets search`, with no file of the package touched (see
docs/adding-a-method.md). The registry reads that variable once, when it is first imported,
so the pipeline runs in processes of their own."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch
from torch import nn
from upath import UPath

from formula_assets.core.profiles import PROFILES
from formula_assets.core.protocol import ENSEMBLE
from formula_assets.core.settings import EXTRA_METHODS_ENV
from formula_assets.methods import registry
from formula_assets.methods.base import FormulaQuery, Method, TrainedMethod
from formula_assets.training.artifacts import ModelDescription, model_directory, stored_description
from formula_assets.training.data import AlignmentData
from formula_assets.training.inputs import MatrixInputs
from formula_assets.training.models import Temperature
from formula_assets.training.settings import MethodSettings
from formula_assets_tests.support.pipeline import ROOT, copy_pipeline, ran

NAME = "toy_linear_cl"
ENTRY = f"{__name__}:TOY"


class LinearAligner(nn.Module):
    """One linear map per side over the frozen sentence vectors, and a learnt temperature."""

    def __init__(self, structural_dim: int, semantic_dim: int, out_dim: int) -> None:
        super().__init__()
        self.structural = nn.Linear(structural_dim, out_dim)
        self.semantic = nn.Linear(semantic_dim, out_dim)
        self.temperature = Temperature()

    def encode_structural(self, x: torch.Tensor) -> torch.Tensor:
        return self.structural(x)

    def encode_semantic(self, x: torch.Tensor) -> torch.Tensor:
        return self.semantic(x)


SETTINGS = MethodSettings(
    out_dim=64, epochs=5, batch_size=64, learning_rate=3e-3, weight_decay=1e-4,
    intra_weight=0.0, patience=5,
)  # fmt: skip
# one value per profile (here the same in each)
PROFILE_SETTINGS = {name: SETTINGS for name in PROFILES}


class LinearSentenceAligner(TrainedMethod):
    """A toy method: linear maps of both sides' sentence vectors, trained contrastively."""

    name = NAME
    profile_settings = PROFILE_SETTINGS

    def inputs(self, description: ModelDescription, data: AlignmentData, device: str):
        return MatrixInputs(torch.from_numpy(data.opt_text.copy()).to(device))

    def network(self, description: ModelDescription) -> nn.Module:
        return LinearAligner(
            description.structural_dim, description.semantic_dim, description.settings.out_dim
        )

    def query_input(self, description: ModelDescription, query: FormulaQuery) -> torch.Tensor:
        return torch.from_numpy(query.linearised_vector()[None, :])


TOY = LinearSentenceAligner()


def test_a_name_the_registry_cannot_take_is_refused() -> None:
    """A name is a partition key, a folder and a command-line choice; a trained method is
    trained by the shared loop. Refused registrations leave the registry as it was."""
    before = registry.methods()

    class Named(Method):
        name = "Bad Name"

    with pytest.raises(ValueError, match="lower-case letters"):
        registry.register(Named())
    for taken in ("bm25", ENSEMBLE):
        Named.name = taken
        with pytest.raises(ValueError, match="is taken"):
            registry.register(Named())

    class Untrainable(Method):
        name = "untrainable"
        trained = True

    with pytest.raises(TypeError, match="TrainedMethod"):
        registry.register(Untrainable())
    assert registry.methods() == before
    assert NAME not in registry.trained()  # this process never registered the toy


def test_extra_methods_are_module_attribute_pairs() -> None:
    from formula_assets.core.settings import EXTRA_METHODS_ENV, Settings

    given = Settings.from_environment({EXTRA_METHODS_ENV: f" {ENTRY} , other.module:THING "})
    assert given.extra_methods == (ENTRY, "other.module:THING")
    assert Settings.from_environment({}).extra_methods == ()
    with pytest.raises(ValueError, match="module:attribute"):
        _ = Settings.from_environment({EXTRA_METHODS_ENV: "no_attribute"}).extra_methods


def with_toy(env: dict[str, str]) -> dict[str, str]:
    """The environment of a process whose registry adds the toy (this module importable)."""
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return {**env, EXTRA_METHODS_ENV: ENTRY, "PYTHONPATH": path}


@pytest.mark.slow
def test_a_method_defined_here_is_trained_scored_and_searched(materialized, tmp_path: Path) -> None:
    baseline = materialized[0]
    run = copy_pipeline(baseline, tmp_path)
    run.env = with_toy(run.env)
    refresh = run.run("refresh")
    assert refresh.returncode == 0, refresh.stderr[-3000:]
    # its source is in fold_models' code version: every partition runs, its five are new
    assert f"fold_models×{5 * (len(registry.trained()) + 1)}" in ran(refresh.stdout)
    for fold in range(1, 6):
        assert (run.lake / "fold_models" / str(fold) / NAME / "CURRENT").exists()
        # the other methods' recipes are unchanged: their stored models are reused, not
        # trained again (a training would record another duration)
        for method in registry.trained():
            kind = registry.trained_method(method).settings_type
            reused = stored_description(model_directory(UPath(run.lake), fold, method), kind)
            before = stored_description(model_directory(UPath(baseline.lake), fold, method), kind)
            assert reused.recipe and reused == before

    scores = pq.read_table(run.lake / "retrieval_scores.parquet")
    methods = list(dict.fromkeys(scores["method"].to_pylist()))
    assert methods == [*(m.name for m in registry.table_2()), NAME, ENSEMBLE]
    toy = scores.filter(pc.equal(scores["method"], NAME)).to_pylist()
    assert len(toy) == 5 * 2
    assert all(r["recall_at_10"] > 3 * 10 / r["candidates"] for r in toy)  # it learnt
    # the other methods, and the ensemble (the toy is not a member), score as before
    before = pq.read_table(baseline.lake / "retrieval_scores.parquet")
    others = scores.filter(pc.invert(pc.equal(scores["method"], NAME)))
    assert others.equals(before)

    found = run.run("search", "--method", NAME, "--text", "kinetic energy", "--top", "3")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith(f"text query, channels: names, meaning (meaning: {NAME}, ")
    hits = [line for line in found.stdout.splitlines() if line.lstrip()[:2] in ("1.", "2.", "3.")]
    assert len(hits) == 3 and all("Q" in line for line in hits)
    formula = run.run("search", "--method", NAME, "--latex", "E = m c^2", "--top", "2")
    assert formula.returncode == 0, formula.stderr
    said = f"latex query, channels: structure, meaning (meaning: {NAME}, "
    assert formula.stdout.startswith(said)
    # without the registration, the command does not offer it
    run.env = {**run.env, "FORMULA_ASSETS_EXTRA_METHODS": ""}
    refused = run.run("search", "--method", NAME, "--text", "mass")
    assert refused.returncode == 2 and "invalid choice" in refused.stderr
