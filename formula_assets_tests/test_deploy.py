"""The scale-out examples load: the Celery code location and the shared-instance settings."""

import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import dagster as dg

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


def test_instance_settings_load_with_one_model_per_gpu(tmp_path: Path) -> None:
    source = resources.files("formula_assets") / "deploy" / "dagster.yaml"
    shutil.copy(str(source), tmp_path / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 10
