"""Profiles, and the one embedding model a profile's settings name."""

import pytest

from formula_assets.core.profiles import DEFAULT_EMBEDDING_MODEL, PROFILES, get_profile
from formula_assets.core.settings import Settings, vectors_problem


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


def test_the_profiles_share_what_docs_training_md_says() -> None:
    """The shared settings; each method's are its own (tests/methods/test_profiles.py)."""
    assert [p.name for p in PROFILES.values() if p.leaves_out] == ["default"]
    assert PROFILES["default"].leaves_out == ("sbert_finetuned_cl",)
    assert PROFILES["large"].embedding_model == "all-MiniLM-L6-v2+all-mpnet-base-v2"
    # one torch thread per worker process here; the paper profile (a GPU's) leaves torch its own
    assert PROFILES["paper"].torch_threads == 0 and PROFILES["default"].torch_threads == 1
    assert {(p.seed, p.validation_fraction, p.selection_fraction) for p in PROFILES.values()} == {
        (0, 0.1, 0.1)
    }
