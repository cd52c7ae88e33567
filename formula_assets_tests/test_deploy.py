"""The scale-out examples load: the Celery code location and the shared-instance settings."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.deploy.local import DeploymentError, Postgres, postgres_bin

ROOT = Path(__file__).resolve().parent.parent


def test_celery_code_location_validates(tmp_path: Path) -> None:
    completed = subprocess.run(
        [
            Path(sys.executable).parent / "dagster",
            "definitions",
            "validate",
            "-m",
            "formula_assets.deploy.celery",
        ],
        cwd=ROOT,
        env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_training_runs_in_a_limited_pool_with_the_celery_executor() -> None:
    from formula_assets.deploy.celery import defs

    graph = defs.resolve_asset_graph()
    assert graph.get(dg.AssetKey("fold_models")).pools == {"training"}
    assert defs.executor is not None and defs.executor.name == "celery"


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    try:
        postgres_bin("initdb")
    except DeploymentError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    server = Postgres(Path(tempfile.mkdtemp(prefix="formula-assets-test-postgres-")))
    server.start()
    yield server
    server.stop()
    shutil.rmtree(server.root, ignore_errors=True)


def test_shipped_instance_settings_work_on_postgres(
    tmp_path: Path, postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings a deployment copies to every host: PostgreSQL storage through psycopg2,
    queued runs, one training step at a time."""
    source = resources.files("formula_assets") / "deploy" / "dagster.yaml"
    shutil.copy(str(source), tmp_path / "dagster.yaml")
    monkeypatch.setenv("FORMULA_ASSETS_POSTGRES_URL", postgres.url())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 10
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        instance.event_log_storage.set_concurrency_slots("training", 2)
        assert instance.event_log_storage.get_concurrency_info("training").slot_count == 2
        assert instance.get_runs() == []


def test_a_plain_postgresql_url_is_the_known_pitfall(
    tmp_path: Path, postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLAlchemy 2 reads `postgresql://` as psycopg 3, which is not installed: the reason the
    shipped settings and docs/deployment.md insist on `postgresql+psycopg2://`."""
    source = resources.files("formula_assets") / "deploy" / "dagster.yaml"
    shutil.copy(str(source), tmp_path / "dagster.yaml")
    monkeypatch.setenv("FORMULA_ASSETS_POSTGRES_URL", postgres.url(driver="postgresql"))
    with pytest.raises(ModuleNotFoundError, match="psycopg"):
        dg.DagsterInstance.from_config(str(tmp_path)).get_runs()
