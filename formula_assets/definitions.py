"""The code location: every asset and check under `defs/` (found by `dg`), plus the resources,
the automation sensor and the weekly probe schedule."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.resources.data_lake import DataLakeResource
from formula_assets.defs.resources.sentence_embedder import SentenceEmbedderResource
from formula_assets.defs.resources.wikidata import WikidataResource

defs = dg.Definitions.merge(
    dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
    dg.Definitions(
        sensors=[automation_sensor()],
        schedules=[weekly_probe_schedule("wikidata_probe")],
        resources={
            "io_manager": DataLakeIOManager(),
            "model_io_manager": ModelIOManager(),
            "wikidata": WikidataResource(),
            "data_lake": DataLakeResource(),
            "sentence_embedder": SentenceEmbedderResource(),
        },
    ),
)
