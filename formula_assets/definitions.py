"""The code location: every asset and check under `defs/` (found by `dg`), with the settings
every asset shares (`defs.conventions`), plus the resources, the automation sensors and the
weekly probe schedule.

FORMULA_ASSETS_EXECUTOR=in_process runs each run's steps one after another in the run's own
process, instead of one process per step (Dagster's default): on a small machine that saves
loading the definitions again for every step and check, and the memory of a second process
per run. Pools hold either way.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import dagster as dg

from formula_assets import defs as defs_package
from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.conventions import with_conventions
from formula_assets.defs.ingest.freshness import CURRENT_CHECK
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.resources.data_lake import DataLakeResource
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.resources.wikidata import WikidataResource

PROJECT = Path(__file__).resolve().parent
EXECUTOR_ENV = "FORMULA_ASSETS_EXECUTOR"
EXECUTORS = ("multiprocess", "in_process")


def _executor() -> dg.ExecutorDefinition | None:
    """None keeps Dagster's default (a process per step; deployments set their own)."""
    name = os.environ.get(EXECUTOR_ENV, "").strip().lower() or "multiprocess"
    if name not in EXECUTORS:
        raise ValueError(f"{EXECUTOR_ENV} must be one of {', '.join(EXECUTORS)}, got {name!r}")
    return dg.in_process_executor if name == "in_process" else None


def _defs_folder() -> dg.Definitions:
    """`dg`'s loader in a checkout (it reads `[tool.dg]` in pyproject.toml); an installed
    package without the project file loads the same modules of `defs/` directly."""
    if any((folder / "pyproject.toml").is_file() for folder in PROJECT.parents):
        try:
            return dg.load_from_defs_folder(path_within_project=PROJECT)
        except dg.DagsterError as exc:
            if "Could not find config file" not in str(exc):
                raise
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.load_definitions_from_package_module(defs_package)


defs = dg.Definitions.merge(
    with_conventions(_defs_folder()),
    dg.Definitions(
        executor=_executor(),
        sensors=[automation_sensor()],
        schedules=[weekly_probe_schedule("wikidata_probe", checks=[CURRENT_CHECK])],
        resources={
            "io_manager": DataLakeIOManager(),
            "model_io_manager": ModelIOManager(),
            "wikidata": WikidataResource(),
            "data_lake": DataLakeResource(),
            "sentence_embedder": SentenceEmbedderResource(),
        },
    ),
)
