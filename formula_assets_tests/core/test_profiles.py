"""Profiles: one source of truth for the embedding model a profile trains on."""

import pytest

from formula_assets.core.profiles import (
    DEFAULT_EMBEDDING_MODEL,
    embedding_mismatch,
    embedding_model,
    get_profile,
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORMULA_ASSETS_EMBEDDING_MODEL", raising=False)
    monkeypatch.delenv("FORMULA_ASSETS_PROFILE", raising=False)


def test_each_profile_names_the_model_it_trains_on() -> None:
    assert embedding_mismatch(get_profile("smoke"), DEFAULT_EMBEDDING_MODEL) is None
    assert embedding_mismatch(get_profile("default"), "all-MiniLM-L6-v2") is None
    paper = get_profile("paper")
    assert embedding_mismatch(paper, "sentence-transformers/all-mpnet-base-v2") is None
    assert embedding_mismatch(paper, "all-mpnet-base-v2") is None  # the hub prefix is optional
    problem = embedding_mismatch(paper, DEFAULT_EMBEDDING_MODEL)
    assert problem is not None and "FORMULA_ASSETS_PROFILE=paper" in problem
    assert embedding_mismatch(get_profile("default"), "all-mpnet-base-v2") is not None


def test_a_joined_model_matches_part_by_part() -> None:
    large = get_profile("large")
    assert large.embedding_model == "all-MiniLM-L6-v2+all-mpnet-base-v2"
    assert (
        embedding_mismatch(large, "all-MiniLM-L6-v2+sentence-transformers/all-mpnet-base-v2")
        is None
    )
    assert embedding_mismatch(large, "all-MiniLM-L6-v2 + all-mpnet-base-v2") is None
    assert embedding_mismatch(large, DEFAULT_EMBEDDING_MODEL) is not None
    assert embedding_mismatch(large, "all-mpnet-base-v2+all-MiniLM-L6-v2") is not None  # order


def test_the_environment_model_overrides_the_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_EMBEDDING_MODEL", "/models/mine")
    assert embedding_mismatch(get_profile("paper"), "/models/mine") is None
    assert embedding_mismatch(get_profile("paper"), DEFAULT_EMBEDDING_MODEL) is not None


def test_tables_without_a_recorded_model_are_not_judged() -> None:
    assert embedding_mismatch(get_profile("paper"), None) is None


def test_the_embedding_assets_follow_the_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    assert embedding_model()[0] is None  # the packaged default
    monkeypatch.setenv("FORMULA_ASSETS_PROFILE", "paper")
    name, origin = embedding_model()
    assert name == "sentence-transformers/all-mpnet-base-v2" and "'paper' profile" in origin
