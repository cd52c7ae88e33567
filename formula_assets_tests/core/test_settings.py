"""Settings: read once from the environment, overlaid by config, each value with its origin;
nothing else in the package reads the environment."""

import ast
from pathlib import Path

import pytest

from formula_assets.cli import main
from formula_assets.cli.home import ensure_dagster_home
from formula_assets.core import settings
from formula_assets.core.settings import SETTINGS, Settings

PACKAGE = Path(settings.__file__).resolve().parents[1]
ROOT = PACKAGE.parent


def env(**variables: str) -> Settings:
    return Settings.from_environment(variables)


def test_source_defaults_and_validation() -> None:
    assert env().source == "snapshot"
    assert env(FORMULA_ASSETS_SOURCE=" SPARQL ").source == "sparql"
    assert env(FORMULA_ASSETS_SOURCE="sparql").with_config(source="dump").source == "dump"
    with pytest.raises(ValueError, match="choose one of snapshot, sparql, dump"):
        env().with_config(source="wikipedia").source  # noqa: B018


def test_precedence_is_default_environment_config_and_each_value_knows_its_origin() -> None:
    base = env(FORMULA_ASSETS_SAMPLE="40")
    assert (env().sample, env().origin("sample")) == (None, "default")
    assert (env(FORMULA_ASSETS_SAMPLE=" ").sample, env().origin("sample")) == (None, "default")
    assert (base.sample, base.origin("sample")) == (40, "environment")
    resource = base.with_config(source="sparql", sample=None)  # None: not set there
    assert (resource.sample, resource.origin("sample")) == (40, "environment")
    run = resource.with_config(source="dump", sample=7)
    assert (run.source, run.origin("source"), run.sample, run.origin("sample")) == (
        "dump",
        "config",
        7,
        "config",
    )
    assert resource.source == "sparql"  # overlays make new settings; the old stay as they were
    with pytest.raises(TypeError, match="no such setting: colour"):
        base.with_config(colour="blue")


def test_the_environment_is_read_once_into_an_immutable_snapshot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(settings.PROFILE_ENV, "smoke")
    snapshot = Settings.from_environment()
    monkeypatch.setenv(settings.PROFILE_ENV, "paper")
    assert snapshot.profile == "smoke"
    assert Settings.from_environment().profile == "paper"
    with pytest.raises(AttributeError):
        snapshot.environment = {}  # type: ignore[misc]
    with pytest.raises(TypeError):
        snapshot.environment[settings.PROFILE_ENV] = "default"  # type: ignore[index]


def test_a_bad_value_fails_where_it_is_read_and_names_the_variable() -> None:
    broken = env(FORMULA_ASSETS_SAMPLE="many", FORMULA_ASSETS_SOURCE="sparql")
    assert broken.source == "sparql"  # the other settings are unaffected
    with pytest.raises(ValueError, match="FORMULA_ASSETS_SAMPLE must be an integer, got 'many'"):
        broken.sample  # noqa: B018
    with pytest.raises(ValueError, match="the sample size must be at least 1, got 0"):
        env(FORMULA_ASSETS_SAMPLE="0").sample  # noqa: B018
    with pytest.raises(ValueError, match=r"between 0 and 1, got 1\.5"):
        env().with_config(min_fraction=1.5).min_fraction  # noqa: B018
    with pytest.raises(ValueError, match="must be a whole number of seconds"):
        env(FORMULA_ASSETS_AUTOMATION_INTERVAL="soon").automation_interval  # noqa: B018
    with pytest.raises(ValueError, match="must be at least 1 second, got 0"):
        env(FORMULA_ASSETS_AUTOMATION_INTERVAL="0").automation_interval  # noqa: B018


def test_accept_partial_dump() -> None:
    assert env().accept_partial_dump is False
    assert env().with_config(accept_partial_dump=True).accept_partial_dump is True
    assert env(FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP="Yes").accept_partial_dump is True
    overridden = env(FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP="yes").with_config(
        accept_partial_dump=False
    )
    assert overridden.accept_partial_dump is False  # False is a value, not "unset"
    with pytest.raises(ValueError, match="must be true or false"):
        env(FORMULA_ASSETS_ACCEPT_PARTIAL_DUMP="maybe").accept_partial_dump  # noqa: B018


def test_min_formulae() -> None:
    assert env().min_formulae == 1000
    assert env(FORMULA_ASSETS_MIN_FORMULAE="12").min_formulae == 12
    with pytest.raises(ValueError, match="must be an integer"):
        env(FORMULA_ASSETS_MIN_FORMULAE="many").min_formulae  # noqa: B018


def test_the_embedding_model_follows_the_profile_unless_set() -> None:
    assert env().embedding_model == "all-MiniLM-L6-v2"
    paper = env(FORMULA_ASSETS_PROFILE="paper")
    assert paper.embedding_model == "sentence-transformers/all-mpnet-base-v2"
    assert settings.embedding_model_origin(paper) == "the 'paper' profile (FORMULA_ASSETS_PROFILE)"
    # the profile of a run config moves the model with it: the two are resolved together
    assert env().with_config(profile="paper").embedding_model == paper.embedding_model
    mine = env(FORMULA_ASSETS_PROFILE="paper", FORMULA_ASSETS_EMBEDDING_MODEL="/models/mine")
    assert mine.embedding_model == "/models/mine"
    assert "FORMULA_ASSETS_EMBEDDING_MODEL environment variable" in (
        settings.embedding_model_origin(mine)
    )
    assert settings.embedding_model_origin(mine.with_config(embedding_model="x")) == (
        "the `model` config of the embedding assets"
    )


def test_data_lake_defaults_to_the_checkout() -> None:
    root = settings.project_root()
    assert root is not None
    assert env().data_lake == str(root / "data_lake")
    assert env().embedding_cache == str(root / "data_lake" / "_cache" / "embeddings")
    moved = env(FORMULA_ASSETS_DATA_LAKE="memory://lake")
    assert moved.data_lake == "memory://lake"
    assert moved.embedding_cache == "memory://lake/_cache/embeddings"  # the cache travels


def test_dagster_home_default_is_in_the_checkout_and_git_ignored() -> None:
    root = settings.project_root()
    assert root is not None
    assert env().dagster_home == root / ".dagster_home"
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
    monkeypatch.setenv("HOME", str(tmp_path))
    assert env().model_dir == tmp_path / ".cache/formula_assets/models"
    assert env(FORMULA_ASSETS_MODEL_DIR="~/models").model_dir == tmp_path / "models"


def test_the_settings_command_prints_every_setting_with_its_origin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)
    monkeypatch.setenv("FORMULA_ASSETS_PROFILE", "paper")
    monkeypatch.setenv("FORMULA_ASSETS_POSTGRES_URL", "postgresql+psycopg2://me:s3cret@db:5432/d")
    assert main(["settings"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert set(lines) == {"setting", *(s.name for s in SETTINGS)}
    assert lines["profile"].split()[1:] == [
        "FORMULA_ASSETS_PROFILE",
        "paper",
        "environment",
        "FORMULA_ASSETS_PROFILE",
    ]
    assert lines["source"].split()[1:] == ["FORMULA_ASSETS_SOURCE", "snapshot", "default"]
    assert lines["embedding_model"].split()[2:] == [
        "sentence-transformers/all-mpnet-base-v2",
        "default",
        "(follows",
        "profile)",
    ]
    assert "me:***@db" in lines["postgres_url"] and "s3cret" not in lines["postgres_url"]


def test_the_settings_command_fails_on_a_bad_value(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("FORMULA_ASSETS_SAMPLE", "many")
    assert main(["settings"]) == 1
    captured = capsys.readouterr()
    assert "invalid: FORMULA_ASSETS_SAMPLE must be an integer, got 'many'" in captured.out
    assert "invalid setting(s): sample" in captured.err


def test_the_documentation_lists_every_setting() -> None:
    """docs/configuration.md holds the table `markdown_table` makes from the settings."""
    assert settings.markdown_table() in (ROOT / "docs" / "configuration.md").read_text()


# ---- nothing else reads the environment -----------------------------------------------------

# Modules that hand the environment to other processes or libraries; none of them reads a
# setting from it.
ENVIRONMENT_WRITERS = {
    "cli/__init__.py": "passes the environment on to `distributed`'s processes",
    "cli/distributed.py": "the environment of the PostgreSQL and Celery processes it starts",
    "cli/home.py": "exports DAGSTER_HOME for Dagster and the processes it starts",
    "cli/worker.py": "pins BLAS/OpenMP threads in a worker before torch loads",
    "training/determinism.py": "cuBLAS reads CUBLAS_WORKSPACE_CONFIG when CUDA starts",
}
ENVIRONMENT_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def environment_uses(source: str) -> list[int]:
    """Lines that touch the process environment through `os` (however `os` was imported)."""
    tree = ast.parse(source)
    aliases = {"os"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "os"}
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [node.lineno for a in node.names if a.name in ENVIRONMENT_NAMES]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRONMENT_NAMES
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            found.append(node.lineno)
    return found


def test_the_environment_finder_finds_every_spelling() -> None:
    assert environment_uses("import os\nos.environ.get('X')") == [2]
    assert environment_uses("import os as o\nx = o.getenv('X')") == [2]
    assert environment_uses("from os import environ") == [1]
    assert environment_uses("import os\nos.path.join('a')\nenviron = {}") == []


def test_only_the_settings_module_reads_the_environment() -> None:
    touching = {
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if environment_uses(path.read_text(encoding="utf-8"))
    }
    assert touching - set(ENVIRONMENT_WRITERS) == {"core/settings.py"}
    assert set(ENVIRONMENT_WRITERS) <= touching  # a stale entry would hide a new reader


def test_every_variable_the_package_names_is_a_setting() -> None:
    """A FORMULA_ASSETS_* name in the code that no setting declares is read nowhere (a typo,
    or a reader that bypasses the settings)."""
    import re

    known = {s.env for s in SETTINGS}
    named = {
        name
        for path in PACKAGE.rglob("*.py")
        for name in re.findall(r"FORMULA_ASSETS_[A-Z_]+[A-Z]", path.read_text(encoding="utf-8"))
    }
    assert named - known == set()
