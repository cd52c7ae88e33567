"""The code location: every asset, check and resource of the project."""

import warnings

import dagster as dg

from formula_assets.defs.analysis import (
    correspondence_inputs_complete,
    correspondence_metrics,
    correspondence_metrics_in_range,
)
from formula_assets.defs.evaluation import (
    retrieval_scores,
    retrieval_scores_beat_chance,
    retrieval_scores_complete,
    retrieval_scores_consistent,
)
from formula_assets.defs.ingest import ingest_checks, wikidata_formulae
from formula_assets.defs.io_managers import DataLakeIOManager, ModelIOManager
from formula_assets.defs.resources import (
    DataLakeResource,
    SentenceEmbedderResource,
    WikidataResource,
)
from formula_assets.defs.semantics import semantics_assets, semantics_checks
from formula_assets.defs.structure import structural_embeddings, structural_embeddings_valid
from formula_assets.defs.syntax import parse_formulae, syntax_checks
from formula_assets.defs.training import cv_folds, cv_folds_cover_every_formula, fold_models

# Content-hash data versions are the point of this project; the beta notice is noise in run logs.
warnings.filterwarnings("ignore", category=dg.BetaWarning)

defs = dg.Definitions(
    assets=[
        wikidata_formulae,
        parse_formulae,
        structural_embeddings,
        *semantics_assets,
        correspondence_metrics,
        cv_folds,
        fold_models,
        retrieval_scores,
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
    resources={
        "io_manager": DataLakeIOManager(),
        "model_io_manager": ModelIOManager(),
        "wikidata": WikidataResource(),
        "data_lake": DataLakeResource(),
        "sentence_embedder": SentenceEmbedderResource(),
    },
)
