"""The scale-out examples load: the Celery code location and the shared-instance settings,
whose event log holds a pool's limit when steps contend for its slots."""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import dagster as dg
import pytest

from formula_assets.deploy.local import DeploymentError, Postgres, postgres_bin
from formula_assets.deploy.postgres import PostgresEventLogStorage

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
        assert type(instance.event_log_storage) is PostgresEventLogStorage
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
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


def most_holders_at_once(storage, pool: str, runs: int = 8, steps: int = 6) -> int:
    """`runs` threads, each claiming `steps` steps of `pool` in turn (retrying while blocked),
    holding each a moment and freeing it: the most that held a slot at the same time."""
    lock = threading.Lock()
    holding, most = [0], [0]
    errors: list[BaseException] = []

    deadline = time.monotonic() + 60

    def run(i: int) -> None:
        try:
            for j in range(steps):
                while not storage.claim_concurrency_slot(pool, f"run{i}", f"step{j}").is_claimed:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"run{i} step{j} never claimed a slot of {pool}")
                    time.sleep(0.01)
                with lock:
                    holding[0] += 1
                    most[0] = max(most[0], holding[0])
                time.sleep(0.02)
                with lock:
                    holding[0] -= 1
                storage.free_concurrency_slot_for_step(f"run{i}", f"step{j}")
        except Exception as exc:  # failed in the test, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(runs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return most[0]


def test_a_pool_of_one_is_held_by_one_step_at_a_time(postgres: Postgres) -> None:
    """Steps of many runs contend for one slot through the PostgreSQL event log: with
    dagster-postgres' own claim up to five held it at once."""
    storage = PostgresEventLogStorage(postgres_url=postgres.url())
    storage.set_concurrency_slots("contended", 1)
    assert most_holders_at_once(storage, "contended") == 1
    storage.set_concurrency_slots("contended-2", 2)
    assert most_holders_at_once(storage, "contended-2") == 2  # a larger pool is used in full
    assert storage.get_concurrency_info("contended").claimed_slots == []
