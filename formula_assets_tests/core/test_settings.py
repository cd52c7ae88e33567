"""Settings from the environment, and the shared Dagster instance folder."""

from pathlib import Path

import pytest

from formula_assets.cli import main
from formula_assets.cli.home import ensure_dagster_home
from formula_assets.core import settings


def test_source_defaults_and_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.SOURCE_ENV, raising=False)
    assert settings.source() == "snapshot"
    monkeypatch.setenv(settings.SOURCE_ENV, "SPARQL")
    assert settings.source() == "sparql"
    assert settings.source("dump") == "dump"
    with pytest.raises(ValueError, match="choose one of snapshot, sparql, dump"):
        settings.source("wikipedia")


def test_dump_path_is_required_for_the_dump_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.DUMP_PATH_ENV, raising=False)
    with pytest.raises(ValueError, match="FORMULA_ASSETS_DUMP_PATH"):
        settings.dump_path()


def test_accept_partial_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.ACCEPT_PARTIAL_DUMP_ENV, raising=False)
    assert settings.accept_partial_dump() is False
    assert settings.accept_partial_dump(True) is True
    monkeypatch.setenv(settings.ACCEPT_PARTIAL_DUMP_ENV, "Yes")
    assert settings.accept_partial_dump() is True
    assert settings.accept_partial_dump(False) is False
    monkeypatch.setenv(settings.ACCEPT_PARTIAL_DUMP_ENV, "maybe")
    with pytest.raises(ValueError, match="must be true or false"):
        settings.accept_partial_dump()


def test_min_formulae(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.MIN_FORMULAE_ENV, "12")
    assert settings.min_formulae() == 12
    monkeypatch.setenv(settings.MIN_FORMULAE_ENV, "many")
    with pytest.raises(ValueError, match="must be an integer"):
        settings.min_formulae()


def test_data_lake_defaults_to_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.DATA_LAKE_ENV, raising=False)
    root = settings.project_root()
    assert root is not None
    assert settings.data_lake_url() == str(root / "data_lake")
    monkeypatch.setenv(settings.DATA_LAKE_ENV, "memory://lake")
    assert settings.data_lake_url() == "memory://lake"


def test_dagster_home_default_is_in_the_checkout_and_git_ignored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    root = settings.project_root()
    assert root is not None
    assert settings.dagster_home() == root / ".dagster_home"
    assert ".dagster_home/" in (root / ".gitignore").read_text().splitlines()


def test_instance_folder_has_telemetry_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "instance"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert main(["home"]) == 0
    assert capsys.readouterr().out.strip() == str(home)
    assert "enabled: false" in (home / "dagster.yaml").read_text()
    assert (home / ".nux" / "nux.yaml").exists()  # no onboarding modal over the UI
    (home / "dagster.yaml").write_text("# user's own settings\n")
    ensure_dagster_home(home)
    assert (home / "dagster.yaml").read_text() == "# user's own settings\n"  # never overwritten


def test_model_dir_is_a_user_cache_unless_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(settings.MODEL_DIR_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert settings.model_dir() == tmp_path / ".cache/formula_assets/models"
    monkeypatch.setenv(settings.MODEL_DIR_ENV, "~/models")
    assert settings.model_dir() == tmp_path / "models"
