"""The code location: every asset, check and resource of the project."""

import dagster as dg

from formula_assets.defs.analysis import (
    correspondence_inputs_complete,
    correspondence_metrics,
    correspondence_metrics_in_range,
)
from formula_assets.defs.automation import automation_sensor, weekly_probe_schedule
from formula_assets.defs.evaluation import (
    retrieval_scores,
    retrieval_scores_beat_chance,
    retrieval_scores_complete,
    retrieval_scores_consistent,
)
from formula_assets.defs.ingest import ingest_checks, wikidata_formulae, wikidata_probe
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.report import report_document
from formula_assets.defs.resources import (
    DataLakeResource,
    SentenceEmbedderResource,
    WikidataResource,
)
from formula_assets.defs.semantics import semantics_assets, semantics_checks
from formula_assets.defs.structure import structural_embeddings, structural_embeddings_valid
from formula_assets.defs.syntax import parse_formulae, syntax_checks
from formula_assets.defs.training import cv_folds, cv_folds_cover_every_formula, fold_models

defs = dg.Definitions(
    assets=[
        wikidata_probe,
        wikidata_formulae,
        parse_formulae,
        structural_embeddings,
        *semantics_assets,
        correspondence_metrics,
        cv_folds,
        fold_models,
        retrieval_scores,
        report_document,
    ],
    asset_checks=[
        *ingest_checks,
        *syntax_checks,
        structural_embeddings_valid,
        *semantics_checks,
        correspondence_metrics_in_range,
        correspondence_inputs_complete,
        cv_folds_cover_every_formula,
        retrieval_scores_complete,
        retrieval_scores_consistent,
        retrieval_scores_beat_chance,
    ],
    sensors=[automation_sensor()],
    schedules=[weekly_probe_schedule(wikidata_probe)],
    resources={
        "io_manager": DataLakeIOManager(),
        "model_io_manager": ModelIOManager(),
        "wikidata": WikidataResource(),
        "data_lake": DataLakeResource(),
        "sentence_embedder": SentenceEmbedderResource(),
    },
)
