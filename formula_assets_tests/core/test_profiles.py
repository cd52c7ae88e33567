"""Profiles, and the one embedding model a profile's settings name."""

import dataclasses
from dataclasses import replace
from pathlib import Path

import pytest

from formula_assets.core import profiles
from formula_assets.core.profiles import (
    DEFAULT_EMBEDDING_MODEL,
    PROFILES,
    MethodSettings,
    Profile,
    get_profile,
)
from formula_assets.core.settings import Settings, vectors_problem

ROOT = Path(__file__).resolve().parents[2]


def under(profile: str, **variables: str) -> Settings:
    """The settings of a run with `profile` as run config (as fold_models takes it)."""
    return Settings.from_environment(variables).with_config(profile=profile)


def test_each_profile_names_the_model_it_trains_on() -> None:
    assert vectors_problem(under("smoke"), DEFAULT_EMBEDDING_MODEL) is None
    assert vectors_problem(under("default"), "all-MiniLM-L6-v2") is None
    assert vectors_problem(under("paper"), "sentence-transformers/all-mpnet-base-v2") is None
    assert (
        vectors_problem(under("paper"), "all-mpnet-base-v2") is None
    )  # the hub prefix is optional
    problem = vectors_problem(under("paper"), DEFAULT_EMBEDDING_MODEL)
    assert problem is not None and "FORMULA_ASSETS_PROFILE=paper" in problem
    assert "'paper' profile trains on sentence-transformers/all-mpnet-base-v2 vectors" in problem
    assert vectors_problem(under("default"), "all-mpnet-base-v2") is not None


def test_a_joined_model_matches_part_by_part() -> None:
    large = under("large")
    assert large.embedding_model == "all-MiniLM-L6-v2+all-mpnet-base-v2"
    assert (
        vectors_problem(large, "all-MiniLM-L6-v2+sentence-transformers/all-mpnet-base-v2") is None
    )
    assert vectors_problem(large, "all-MiniLM-L6-v2 + all-mpnet-base-v2") is None
    assert vectors_problem(large, DEFAULT_EMBEDDING_MODEL) is not None
    assert vectors_problem(large, "all-mpnet-base-v2+all-MiniLM-L6-v2") is not None  # order


def test_the_environment_model_overrides_the_profiles() -> None:
    mine = under("paper", FORMULA_ASSETS_EMBEDDING_MODEL="/models/mine")
    assert vectors_problem(mine, "/models/mine") is None
    assert vectors_problem(mine, DEFAULT_EMBEDDING_MODEL) is not None


def test_tables_without_a_recorded_model_are_not_judged() -> None:
    assert vectors_problem(under("paper"), None) is None


def test_the_embedding_assets_follow_the_profile() -> None:
    assert Settings.from_environment({}).embedding_model == DEFAULT_EMBEDDING_MODEL
    paper = Settings.from_environment({"FORMULA_ASSETS_PROFILE": "paper"})
    assert paper.embedding_model == "sentence-transformers/all-mpnet-base-v2"


def test_an_unknown_profile_names_the_setting() -> None:
    with pytest.raises(ValueError, match=r"unknown profile 'huge' \(from config or FORMULA_ASSETS"):
        under("huge").profile  # noqa: B018
    with pytest.raises(ValueError, match="choose one of smoke, default, medium, large, paper"):
        get_profile("huge")
    assert get_profile(" Paper ") is PROFILES["paper"]


def test_the_profiles_are_what_docs_training_md_says() -> None:
    """The profile table of docs/training.md, field by field."""
    smoke, default, medium, large, paper = (
        PROFILES[n] for n in ("smoke", "default", "medium", "large", "paper")
    )
    # the default is `medium` without the fine-tuned encoder, the graph encoder 192 wide,
    # sbert_dual_cl ≤ 20 epochs
    assert default.leaves_out == ("sbert_finetuned_cl",)
    assert [p.name for p in PROFILES.values() if p.leaves_out] == ["default"]
    assert replace(default, name="medium", leaves_out=()) == replace(
        medium,
        graph_text_cl=replace(medium.graph_text_cl, hidden=192),
        sbert_dual_cl=replace(medium.sbert_dual_cl, epochs=20),
    )
    default = medium
    graph, dual = default.graph_text_cl, default.sbert_dual_cl
    assert (graph.hidden, graph.epochs, graph.patience, graph.runs) == (256, 15, 8, 1)
    assert graph.token_text and graph.formula_text and graph.token_dropout == 0.1
    assert (graph.readout, graph.head_hidden, graph.head_dropout) == ("mean+formula", 1024, 0.3)
    assert (graph.semantic_hidden, graph.semantic_dropout) == (1024, 0.3)
    assert (dual.hidden, dual.out_dim, dual.epochs, dual.patience, dual.runs) == (
        1024,
        512,
        30,
        20,
        1,
    )
    assert (smoke.graph_text_cl.hidden, smoke.graph_text_cl.epochs) == (64, 10)
    assert smoke.graph_text_cl.token_text and smoke.graph_text_cl.formula_text
    assert smoke.graph_text_cl.readout == "mean+formula"
    assert (smoke.sbert_dual_cl.hidden, smoke.sbert_dual_cl.epochs) == (256, 20)
    assert smoke.sbert_dual_cl.runs == 2
    assert large.graph_text_cl == replace(graph, hidden=512, runs=1, patience=15, epochs=60)
    assert large.sbert_dual_cl == replace(dual, runs=2, epochs=60)
    assert default.bag_dual_cl.runs == 1 and large.bag_dual_cl == replace(
        default.bag_dual_cl, runs=2
    )
    finetuned = default.sbert_finetuned_cl
    assert (finetuned.epochs, finetuned.frozen_layers, finetuned.max_seq_len) == (1, 4, 64)
    assert finetuned.learning_rate == 2e-4
    assert large.sbert_finetuned_cl == replace(
        finetuned,
        epochs=5,
        learning_rate=1e-4,
        base_model="all-MiniLM-L6-v2+all-mpnet-base-v2",
        frozen_layers=(4, 11),
    )
    for settings in (paper.graph_text_cl, paper.sbert_dual_cl):
        assert (settings.hidden, settings.epochs) == (768, 200)
    # the paper's node inputs only: no token text, no formula context, one run
    assert not paper.graph_text_cl.token_text and not paper.graph_text_cl.formula_text
    assert paper.graph_text_cl.readout == "mean" and paper.graph_text_cl.runs == 1
    # one torch thread per worker process here; the paper profile (a GPU's) leaves torch its own
    assert paper.torch_threads == 0 and default.torch_threads == 1


def test_docs_profiles_md_lists_every_value_of_every_profile() -> None:
    """The reader's table is the profiles' own values, every field (the ones above too)."""
    table = profiles.markdown_table()
    assert table in (ROOT / "docs" / "profiles.md").read_text()
    rows = table.splitlines()[2:]
    fields = len(dataclasses.fields(MethodSettings))
    assert len(rows) == 4 * fields + len(dataclasses.fields(Profile)) - 5  # less name + 4 methods
    assert (
        "| `sbert_dual_cl.learning_rate` | `0.003` | `0.001` | `0.001` | `0.001` | `0.0005` |"
        in rows
    )
    assert "| `leaves_out` | — | `('sbert_finetuned_cl',)` | — | — | — |" in rows


def test_a_profile_gives_each_methods_settings_and_refuses_others() -> None:
    profile = PROFILES["smoke"]
    assert profile.settings("graph_text_cl") is profile.graph_text_cl
    assert profile.settings("sbert_dual_cl") is profile.sbert_dual_cl
    with pytest.raises(ValueError, match="no training settings for method 'bm25'"):
        profile.settings("bm25")
    assert profile.as_dict()["sbert_dual_cl"]["runs"] == 2
    assert profile.as_dict()["name"] == "smoke"


def test_epochs_may_be_zero_but_not_negative() -> None:
    """0 epochs: a method fitted in closed form (training.fold loads what it fitted)."""
    assert replace(PROFILES["smoke"].sbert_dual_cl, epochs=0).epochs == 0
    with pytest.raises(ValueError, match="epochs cannot be negative"):
        replace(PROFILES["smoke"].sbert_dual_cl, epochs=-1)


def test_a_model_needs_at_least_one_run() -> None:
    one = replace(PROFILES["smoke"].sbert_dual_cl, runs=1)
    assert one.runs == 1
    with pytest.raises(ValueError, match="at least one run, not 0"):
        replace(one, runs=0)


def test_several_base_models_train_one_run_each_with_their_own_frozen_layers() -> None:
    finetuned = PROFILES["default"].sbert_finetuned_cl
    assert finetuned.base_models() == [(None, 4)]
    assert replace(finetuned, base_model="/m").base_models() == [("/m", 4)]
    both = replace(finetuned, base_model="all-MiniLM-L6-v2 + /m", frozen_layers=(4, 11))
    assert both.base_models() == [("all-MiniLM-L6-v2", 4), ("/m", 11)]
    assert replace(both, frozen_layers=2).base_models() == [("all-MiniLM-L6-v2", 2), ("/m", 2)]
    with pytest.raises(ValueError, match=r"names 3 base models' layers, base_model .* has 2"):
        replace(both, frozen_layers=(1, 2, 3))
    with pytest.raises(ValueError, match="one run each"):
        replace(both, runs=2)
    with pytest.raises(ValueError, match="one run each"):
        replace(both, base_model="/m+")
