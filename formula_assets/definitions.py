"""The code location: every asset and check under `defs/` (found by `dg`), with the settings
every asset shares (`defs.conventions`), plus the resources, the automation sensors and the
weekly probe schedule.

FORMULA_ASSETS_EXECUTOR=in_process runs each run's steps one after another in the run's own
process, instead of one process per step (Dagster's default): on a small machine that saves
loading the definitions again for every step and check, and the memory of a second process
per run. Pools hold either way.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg

from formula_assets import defs as defs_package
from formula_assets.core.settings import Settings
from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.conventions import with_conventions
from formula_assets.defs.ingest.freshness import CURRENT_CHECK
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.resources.data_lake import DataLakeResource
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.resources.wikidata import WikidataResource
from formula_assets.methods import registry

PROJECT = Path(__file__).resolve().parent


def _executor(settings: Settings | None = None) -> dg.ExecutorDefinition | None:
    """None keeps Dagster's default (a process per step; deployments set their own)."""
    name = (settings or Settings.from_environment()).executor
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


SETTINGS = Settings.from_environment()  # read once, when the definitions load
registry.check_loaded_under(SETTINGS)  # the method partitions follow these settings
defs = dg.Definitions.merge(
    with_conventions(_defs_folder()),
    dg.Definitions(
        executor=_executor(SETTINGS),
        sensors=[automation_sensor(SETTINGS)],
        schedules=[weekly_probe_schedule("wikidata_probe", [CURRENT_CHECK], SETTINGS)],
        resources={
            "io_manager": DataLakeIOManager(),
            "model_io_manager": ModelIOManager(),
            "wikidata": WikidataResource(),
            "data_lake": DataLakeResource(),
            "sentence_embedder": SentenceEmbedderResource(),
        },
    ),
)
