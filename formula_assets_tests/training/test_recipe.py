"""A fold model's recipe names everything training reads, and a stored model is reused only
when the same recipe made it."""

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
import torch
from upath import UPath

from formula_assets.core.profiles import get_profile
from formula_assets.methods import graph_text_cl, sbert_dual_cl
from formula_assets.training.artifacts import (
    CONFIG,
    WEIGHTS,
    TrainedModel,
    current_version,
    save_model,
)
from formula_assets.training.recipe import recipe, stored_model, with_recipe
from formula_assets_tests.training.descriptions import described

PROFILE = get_profile("smoke")
TABLES = (pa.table({"qid": ["Q1", "Q2"]}), pa.table({"x": [1.0, 2.0]}))


def made(**changes) -> str:
    """The recipe of sbert_dual_cl's fold 2 on TABLES, one ingredient changed."""
    given = {
        "code": "code",
        "tables": TABLES,
        "profile": PROFILE,
        "settings": sbert_dual_cl.PROFILE_SETTINGS["smoke"],
        "method": "sbert_dual_cl",
        "fold": 2,
        "device": "cpu",
        "base_models": (),
        **changes,
    }
    return recipe(**given)


@pytest.mark.parametrize(
    "change",
    [
        {"code": "edited"},
        {"tables": (TABLES[0], pa.table({"x": [1.0, 2.5]}))},
        {"profile": replace(PROFILE, seed=1)},
        {"profile": replace(PROFILE, name="other")},
        {"profile": replace(PROFILE, validation_fraction=0.2)},
        {"profile": replace(PROFILE, selection_fraction=0.2)},
        {"profile": replace(PROFILE, torch_threads=2)},
        {"profile": replace(PROFILE, embedding_model="/models/other")},
        {"settings": replace(sbert_dual_cl.PROFILE_SETTINGS["smoke"], epochs=3)},
        {"method": "graph_text_cl"},
        {"fold": 3},
        {"device": "cuda"},
        {"base_models": ("a-content-hash",)},
    ],
    ids=lambda change: next(iter(change)),
)
def test_every_ingredient_changes_the_recipe(change: dict) -> None:
    assert made(**change) != made()


def test_another_methods_settings_leave_it_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit to the graph encoder's settings does not make sbert_dual_cl's models retrain:
    each method's settings are its own."""
    before = made(settings=sbert_dual_cl.METHOD.settings(PROFILE))
    graph = graph_text_cl.PROFILE_SETTINGS
    monkeypatch.setitem(graph, "smoke", replace(graph["smoke"], epochs=99))
    assert made(settings=sbert_dual_cl.METHOD.settings(PROFILE)) == before == made()


def model(value: float = 1.0, made_by: str = "") -> TrainedModel:
    return with_recipe(TrainedModel(described(), {"w": torch.full((3,), value)}), made_by)


def test_the_stored_model_of_the_same_recipe_is_returned(tmp_path: Path) -> None:
    directory = UPath(tmp_path)
    save_model(model(2.0, "r1"), directory)
    found = stored_model(directory, "r1")
    assert found is not None
    assert found.description.recipe == "r1" and torch.equal(found.state["w"], torch.full((3,), 2.0))
    assert stored_model(directory, "r2") is None
    save_model(model(3.0, "r2"), directory)  # the current version is judged, not an older one
    assert stored_model(directory, "r1") is None
    assert torch.equal(stored_model(directory, "r2").state["w"], torch.full((3,), 3.0))


def test_no_model_or_one_without_a_recipe_is_trained_again(tmp_path: Path) -> None:
    assert stored_model(UPath(tmp_path / "none"), "r1") is None
    save_model(model(made_by=""), UPath(tmp_path))  # a model stored before recipes
    assert stored_model(UPath(tmp_path), "r1") is None


@pytest.mark.parametrize(("name", "content"), [(WEIGHTS, b"not safetensors"), (CONFIG, b"{")])
def test_a_damaged_stored_model_is_trained_again(tmp_path: Path, name: str, content: bytes):
    directory = UPath(tmp_path)
    save_model(model(made_by="r1"), directory)
    (current_version(directory) / name).write_bytes(content)
    assert stored_model(directory, "r1") is None
